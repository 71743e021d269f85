//! The cache-hit path: a cached answer written straight into the client's response.
//!
//! Owns: [`Cache::answer`] and [`CacheAnswer`], and the stale answer written the same way
//! (serve-stale, RFC 8767) for a question in its failure-recheck window. It follows cached CNAMEs (and renders a
//! CNAME synthesised from a DNAME with its DNAME first), writes the SOA of a negative answer
//! in the authority section, and for a client that set DO the DNSSEC records kept with each
//! set (RRSIGs; the NSEC/NSEC3 proof of a denial or wildcard answer), counts TTLs down to
//! `now`, takes one shard lock per name and never allocates.

use shardns_wire::{Class, MessageWriter, NameBuf, NameRef, RType, Rcode, Section};

use super::lookup::{classify_within, SetMatch};
use super::set::{split_owned, DnssecRrs, Kind, Rdatas};
use super::{Cache, HashedName, Rank};
use crate::reply::Ede;
use crate::validate::Security;

/// Longest CNAME chain [`Cache::answer`] follows before giving up (and letting the
/// resolver decide).
const MAX_CACHED_CHAIN: usize = 8;

/// The outcome of [`Cache::answer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheAnswer {
    /// The answer was written; the caller sets `rcode` in the header.
    Hit {
        /// NOERROR (answer or NODATA) or NXDOMAIN; SERVFAIL when DNSSEC validation found
        /// the cached answer bogus (nothing written, `ede` says why).
        rcode: Rcode,
        /// The writer filled up; the records that fit are kept and the caller sets TC.
        truncated: bool,
        /// Shard locks taken (one per name in the chain).
        locks: u32,
        /// Every set of the answer was validated secure: the caller may set AD (RFC 4035
        /// §3.2.3, RFC 6840 §5.8: when the client set DO or AD).
        secure: bool,
        /// Why a bogus answer is SERVFAIL (RFC 8914); EDE 3 or 19 for a stale answer
        /// ([`crate::Resolver::answer_stale`]).
        ede: Option<Ede>,
        /// Prefetch is on and a set of the answer is in the last tenth of its TTL: the
        /// caller should refresh the question in the background ([`crate::Engine::prefetch`]).
        /// Reported once per set.
        prefetch: bool,
    },
    /// Nothing usable cached (or only part of a CNAME chain); nothing was written.
    Miss {
        /// Shard locks taken.
        locks: u32,
    },
}

impl CacheAnswer {
    /// The same outcome with `locks` more shard locks counted (taken by an earlier look).
    pub fn plus_locks(self, more: u32) -> Self {
        match self {
            Self::Hit {
                rcode,
                truncated,
                locks,
                secure,
                ede,
                prefetch,
            } => Self::Hit {
                rcode,
                truncated,
                locks: locks + more,
                secure,
                ede,
                prefetch,
            },
            Self::Miss { locks } => Self::Miss {
                locks: locks + more,
            },
        }
    }
}

impl Cache {
    /// The cache-hit fast path: writes the answer to (`qname`, `qtype`) after the caller's
    /// question, following cached CNAMEs, with TTLs counted down to `now`. Writes the SOA of
    /// a cached negative answer in the authority section. Takes one shard lock per name in
    /// the chain and never allocates. On a miss (or a chain whose end is not cached) the
    /// writer is left as it was.
    pub fn answer(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        w: &mut MessageWriter<'_>,
    ) -> CacheAnswer {
        self.answer_cd(qname, qtype, now, false, w)
    }

    /// [`Cache::answer`] for a query whose CD bit is `cd`. With validation on, a set not
    /// checked yet is a miss and a bogus one a SERVFAIL, unless CD is set (RFC 4035
    /// §3.2.2: the client checks for itself, so it gets the data as it is).
    pub fn answer_cd(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        cd: bool,
        w: &mut MessageWriter<'_>,
    ) -> CacheAnswer {
        self.answer_query(qname, qtype, now, cd, false, w)
    }

    /// [`Cache::answer_cd`] for a query whose DO bit is `dnssec_ok`: a DO client also gets
    /// the DNSSEC records kept with each set, as the authoritative servers gave them (the
    /// RRSIGs after each RRset; the NSEC/NSEC3 records of a denial or of a wildcard
    /// expansion, with their RRSIGs and the SOA's, in the authority section). Nothing is
    /// verified again and nothing is allocated.
    pub fn answer_query(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        cd: bool,
        dnssec_ok: bool,
        w: &mut MessageWriter<'_>,
    ) -> CacheAnswer {
        self.render(qname, qtype, now, (cd, dnssec_ok), None, w)
    }

    /// Serve-stale on the hit path (RFC 8767): [`Cache::answer_query`] with the sets that
    /// expired less than `stale_keep_ms` ago used too, each written with TTL `reply_ttl`,
    /// and EDE 3 (Stale Answer; 19 for an NXDOMAIN). A miss unless a set of the answer has
    /// expired (a live answer is the plain hit's), a set is missing, or, checking, a set
    /// is not secure or insecure. No prefetch is reported: the resolver decides when the
    /// question is asked again. Nothing is allocated.
    pub(crate) fn answer_stale(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        (cd, dnssec_ok): (bool, bool),
        reply_ttl: u32,
        w: &mut MessageWriter<'_>,
    ) -> CacheAnswer {
        if self.stale_keep_ms == 0 {
            return CacheAnswer::Miss { locks: 0 };
        }
        self.render(qname, qtype, now, (cd, dnssec_ok), Some(reply_ttl), w)
    }

    /// The hit path itself; `stale` is the TTL of expired sets when they may be used.
    fn render(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        (cd, dnssec_ok): (bool, bool),
        stale: Option<u32>,
        w: &mut MessageWriter<'_>,
    ) -> CacheAnswer {
        let start = w.checkpoint();
        let grace = if stale.is_some() {
            self.stale_keep_ms
        } else {
            0
        };
        let mut expired = false;
        let mut locks = 0u32;
        let checking = self.validating && !cd;
        let mut secure = self.validating;
        let mut prefetch = false;
        // The current CNAME target, once the chain has moved (the question's name is used
        // as it is, so the first owner is written as the question spelled it).
        let mut target = NameBuf::new();
        let mut next = NameBuf::new();
        for hop in 0..=MAX_CACHED_CHAIN {
            let owner = if hop == 0 { qname } else { target.as_ref() };
            next.set(NameRef::ROOT);
            let key = HashedName::new(owner);
            let mut g = self.lock(&key);
            locks += 1;
            let Some(slot) = g.find_mut(&key) else { break };
            slot.referenced = true;
            let truncated;
            let outcome = match classify_within(slot, qtype, Rank::Answer, now, grace) {
                None => break,
                Some((set, found)) => {
                    secure &= set.sec == Security::Secure;
                    if checking && set.sec != Security::Secure && set.sec != Security::Insecure {
                        w.rollback(start);
                        // A stale answer is never bogus data: the engine decides.
                        if set.sec == Security::Bogus && stale.is_none() {
                            return CacheAnswer::Hit {
                                rcode: Rcode::SERVFAIL,
                                truncated: false,
                                locks,
                                secure: false,
                                ede: Some(Ede::bogus(u16::from(set.ede))),
                                prefetch: false,
                            };
                        }
                        return CacheAnswer::Miss { locks };
                    }
                    let ttl = match stale {
                        Some(reply_ttl) if set.expires() <= now => {
                            expired = true;
                            reply_ttl
                        }
                        _ => set.remaining_ttl(now),
                    };
                    let data = set.rdata();
                    let r = match found {
                        SetMatch::Positive => {
                            put_rdatas(w, Section::Answer, owner, set.rtype, ttl, data)
                        }
                        SetMatch::Cname => {
                            put_cname(w, owner, ttl, data, set.kind == Kind::Synth, &mut next)
                        }
                        SetMatch::NxDomain | SetMatch::NoData => put_soa(w, ttl, data),
                    };
                    // The authority section follows the answer section: a set's proof is
                    // written only when the set ends the answer (not for a CNAME that the
                    // chain goes on from).
                    let last = found != SetMatch::Cname || qtype == RType::CNAME;
                    let r = match r {
                        Ok(()) if dnssec_ok => put_dnssec(w, owner, ttl, set.dnssec(), last),
                        r => r,
                    };
                    truncated = r.is_err();
                    let due = stale.is_none() && self.prefetch && set.prefetch_due(now);
                    (found, due, set.rtype)
                }
            };
            let (outcome, due, rtype) = outcome;
            if due {
                // Asked for once: the refresh replaces the set.
                if let Some(s) = slot.sets.iter_mut().find(|s| s.rtype == rtype) {
                    s.clear_prefetch();
                }
                prefetch = true;
            }
            drop(g);
            // A CNAME query stops at the (synthesised) CNAME (RFC 1034 §3.6.2).
            if outcome == SetMatch::Cname && !truncated && qtype != RType::CNAME {
                target.set(next.as_ref());
                continue;
            }
            let nx = outcome == SetMatch::NxDomain;
            let ede = match stale {
                None => None,
                // Nothing expired: not stale (the plain hit path answers such).
                Some(_) if !expired => break,
                Some(_) if nx => Some(Ede::new(Ede::STALE_NXDOMAIN, "stale NXDOMAIN answer")),
                Some(_) => Some(Ede::new(Ede::STALE_ANSWER, "stale answer")),
            };
            return CacheAnswer::Hit {
                rcode: if nx { Rcode::NXDOMAIN } else { Rcode::NOERROR },
                truncated,
                locks,
                secure,
                ede,
                prefetch,
            };
        }
        w.rollback(start);
        CacheAnswer::Miss { locks }
    }
}

type Put = Result<(), shardns_wire::writer::Full>;

fn put_rdatas(
    w: &mut MessageWriter<'_>,
    section: Section,
    owner: NameRef<'_>,
    rtype: RType,
    ttl: u32,
    data: &[u8],
) -> Put {
    for rd in Rdatas(data) {
        w.put_record(section, owner, rtype, Class::IN, ttl, rd)?;
    }
    Ok(())
}

/// Writes a cached CNAME (with its DNAME first, if synthesised) and copies its target.
fn put_cname(
    w: &mut MessageWriter<'_>,
    owner: NameRef<'_>,
    ttl: u32,
    data: &[u8],
    synth: bool,
    next: &mut NameBuf,
) -> Put {
    let mut data = data;
    if synth {
        let Some((downer, drd, rest)) = split_owned(data) else {
            return Ok(());
        };
        w.put_record(Section::Answer, downer, RType::DNAME, Class::IN, ttl, drd)?;
        data = rest;
    }
    let Some(rd) = Rdatas(data).next() else {
        return Ok(());
    };
    if let Ok(target) = NameRef::from_wire(rd) {
        next.set(target);
    }
    w.put_record(Section::Answer, owner, RType::CNAME, Class::IN, ttl, rd)
}

/// Writes a set's DNSSEC records: those of the answer section, and if `authority` those
/// of the authority section after them.
fn put_dnssec(
    w: &mut MessageWriter<'_>,
    owner: NameRef<'_>,
    ttl: u32,
    rrs: DnssecRrs<'_>,
    authority: bool,
) -> Put {
    for (section, pass) in [(Section::Answer, false), (Section::Authority, true)] {
        if pass && !authority {
            break;
        }
        for rr in rrs.clone().filter(|rr| rr.authority == pass) {
            let owner = rr.owner.unwrap_or(owner);
            w.put_record(section, owner, rr.rtype, Class::IN, ttl, rr.rdata)?;
        }
    }
    Ok(())
}

fn put_soa(w: &mut MessageWriter<'_>, ttl: u32, data: &[u8]) -> Put {
    match split_owned(data) {
        Some((owner, rd, _)) => {
            w.put_record(Section::Authority, owner, RType::SOA, Class::IN, ttl, rd)
        }
        None => Ok(()),
    }
}
