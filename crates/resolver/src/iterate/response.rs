//! Reading a response to a frame's question (one to a minimised question goes on to `qmin`).
//!
//! Owns: what a response means for the frame that asked (answer, CNAME and DNAME chains,
//! referral, NXDOMAIN, NODATA, lame, referrals upwards or sideways being lame too), what of
//! it is cached and at which rank (only records inside the queried zone's bailiwick; a
//! forwarder's answers whole), and following a referral with in-bailiwick glue only (glue
//! outside the zone could be a poisoning attempt).

use std::net::SocketAddr;

use shardns_wire::{rdata, NameBuf, NameRef, RType, Rcode, Record};

use super::{ip_of, name_buf, push_ns, Budget, Frame, FrameOutcome, FrameState, Note, Ns};
use crate::cache::{DnssecRr, Rank, Soa};
use crate::msg::{Response, Rr};
use crate::reply::Ede;
use crate::validate::Stamp;
use crate::Resolver;

impl Frame {
    /// A validated response from `server` to the frame's outstanding query.
    pub(super) fn on_response(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        server: SocketAddr,
        msg: &Response,
        now: u64,
    ) -> Result<(), Ede> {
        if self.state != FrameState::Waiting {
            return Ok(());
        }
        let Some(sent) = self.sent.take() else {
            return Ok(());
        };
        self.state = FrameState::Select;
        let minimised = !self.forward
            && (sent.qname.as_ref() != self.qname.as_ref() || sent.qtype != self.qtype);
        let rcode = msg.rcode();
        if !minimised {
            self.full_name_answered(res, rcode, now);
        }
        if rcode != Rcode::NOERROR && rcode != Rcode::NXDOMAIN {
            if minimised {
                // Relaxed, the fallback to the full name is not held against the server.
                self.answered(server);
                self.minimised_unusable(res, server, msg, now);
            } else {
                self.lame += 1;
                self.mark_dead(server);
            }
            return Ok(());
        }
        // The server answered: that try is not held against it. Without this, QNAME
        // minimisation (several questions to one zone's servers) used up a zone with a
        // single server address after `tries_per_server` answers.
        self.answered(server);
        if self.forward {
            return self.forward_response(res, msg, now);
        }
        if minimised {
            return self.minimised_response(res, budget, server, &sent, msg, now);
        }
        self.full_response(res, budget, server, msg, now)
    }

    fn full_response(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        server: SocketAddr,
        msg: &Response,
        now: u64,
    ) -> Result<(), Ede> {
        let aa = msg.header.aa();
        let rank = if aa { Rank::AuthAnswer } else { Rank::Answer };
        let zone = self.zone.clone();
        let moved = self.follow_chain(res, msg, Some(zone.as_ref()), rank, now)?;
        if aa {
            // The zone's own NS RRset replaces the parent's referral copy.
            let apex_ns = msg
                .authority()
                .filter(|r| r.rtype == RType::NS && r.owner == zone.as_ref());
            cache_rrset(res, apex_ns, Rank::AuthAuthority, now);
        }
        if self.outcome.is_some() {
            return Ok(());
        }
        if !self.qname.as_ref().ends_with(&zone.as_ref()) {
            // The chain left this zone: resolve the target from its own closest cut.
            self.restart();
            return Ok(());
        }
        let soa = find_soa(msg, zone.as_ref(), self.qname.as_ref());
        if msg.rcode() == Rcode::NXDOMAIN {
            self.take_negative(res, msg, zone.as_ref(), soa, true, rank, now);
            return Ok(());
        }
        if let Some(cut) = find_referral(msg, zone.as_ref(), self.qname.as_ref()) {
            return self.take_referral(res, budget, msg, cut, now);
        }
        if soa.is_none() && !moved && stray_referral(msg, zone.as_ref()) {
            // A referral up, or beside the way down (RFC 1034 §5.3.3, Unbound's "lame"
            // response type): AA or not, the server does not serve the name.
            self.lame += 1;
            self.mark_dead(server);
            return Ok(());
        }
        if soa.is_some() || (aa && !moved) {
            self.take_negative(res, msg, zone.as_ref(), soa, false, rank, now);
            return Ok(());
        }
        if moved {
            // The server gave the chain but not its end: ask for the target.
            self.restart();
            return Ok(());
        }
        self.lame += 1;
        self.mark_dead(server);
        Ok(())
    }

    /// A forwarder's answer: trusted for the whole chain, not only for its zone.
    fn forward_response(&mut self, res: &Resolver, msg: &Response, now: u64) -> Result<(), Ede> {
        let rank = if msg.header.aa() {
            Rank::AuthAnswer
        } else {
            Rank::Answer
        };
        let moved = self.follow_chain(res, msg, None, rank, now)?;
        if self.outcome.is_some() {
            return Ok(());
        }
        let soa = find_soa(msg, NameRef::ROOT, self.qname.as_ref());
        let zone = self.zone.clone();
        if msg.rcode() == Rcode::NXDOMAIN {
            self.take_negative(res, msg, zone.as_ref(), soa, true, rank, now);
        } else if moved && soa.is_none() && !self.qname.as_ref().ends_with(&self.zone.as_ref()) {
            self.restart();
        } else {
            self.take_negative(res, msg, zone.as_ref(), soa, false, rank, now);
        }
        Ok(())
    }

    /// Follows the answer section from `qname` through CNAMEs and DNAMEs to the RRset asked
    /// for, accepting only records inside `bailiwick` (all records when `None`). Caches what
    /// it accepts. Sets the outcome when the chain ends in the answer; returns whether the
    /// name moved.
    fn follow_chain(
        &mut self,
        res: &Resolver,
        msg: &Response,
        bailiwick: Option<NameRef<'_>>,
        rank: Rank,
        now: u64,
    ) -> Result<bool, Ede> {
        let inside = |n: NameRef<'_>| bailiwick.is_none_or(|z| n.ends_with(&z));
        let zone = self.zone.clone();
        let zone = zone.as_ref();
        let mut moved = false;
        loop {
            let name = self.qname.clone();
            if !inside(name.as_ref()) {
                return Ok(moved);
            }
            let name_ref = name.as_ref();
            // A DNAME above the name rewrites it (RFC 6672 §3). Nothing exists below a DNAME
            // (§2.4), so a CNAME at the name in the same answer is the synthesised one: the
            // DNAME is taken first, also for CNAME queries, so it is never lost.
            let dname = msg.answers().find(|r| {
                r.rtype == RType::DNAME
                    && self.qtype != RType::DNAME
                    && r.owner != name_ref
                    && name_ref.ends_with(&r.owner)
                    && inside(r.owner)
            });
            if let Some(d) = dname {
                let target = substitute(name_ref, &d)
                    .ok_or(Ede::new(Ede::OTHER, "DNAME substitution failed"))?;
                let ttl = d.ttl;
                self.hop(res, target.as_ref())?;
                let sigs = sig_rrs(msg, d.owner, RType::DNAME, false);
                res.cache.insert_rrset(
                    d.owner,
                    RType::DNAME,
                    rank,
                    d.ttl,
                    [d.rdata],
                    &sigs,
                    Stamp::UNCHECKED,
                    now,
                );
                let sigs = sig_rrs(msg, d.owner, RType::DNAME, true);
                res.cache.insert_synth(
                    name_ref,
                    (d.owner, d.rdata, d.ttl),
                    target.as_ref(),
                    &sigs,
                    rank,
                    Stamp::UNCHECKED,
                    now,
                );
                if !self.chain.iter().any(|r| d.is(r)) {
                    let start = self.chain.len();
                    self.chain.push(d.to_record());
                    self.show_sigs(msg, d.owner, RType::DNAME);
                    self.note(msg, start, zone, rank, false);
                }
                let start = self.chain.len();
                self.chain.push(Record {
                    owner: name_ref.to_name(),
                    rtype: RType::CNAME,
                    class: d.class,
                    ttl,
                    rdata: target.as_ref().as_wire().to_vec(),
                });
                self.note(msg, start, zone, rank, true);
                moved = true;
                if self.qtype == RType::CNAME {
                    // The CNAME at the name is what was asked for: no restart at its target
                    // (RFC 1034 §3.6.2), as for a CNAME that is not synthesised.
                    self.outcome = Some(FrameOutcome::Answer);
                    return Ok(moved);
                }
                continue;
            }
            let qtype = self.qtype;
            let rrset = msg.answers().filter(|r| {
                r.owner == name_ref
                    && (r.rtype == qtype || (qtype == RType::ANY && r.rtype != RType::CNAME))
            });
            if rrset.clone().next().is_some() {
                // One RRset after the other (ANY), each noted for validation.
                let types = if qtype == RType::ANY {
                    distinct_types(rrset.clone())
                } else {
                    // No allocation for the one type of an ordinary question.
                    Vec::new()
                };
                let one = [qtype];
                let types = if qtype == RType::ANY {
                    &types[..]
                } else {
                    &one[..]
                };
                for &t in types {
                    let set = rrset.clone().filter(|r| r.rtype == t);
                    let mut dnssec = sig_rrs(msg, name_ref, t, false);
                    let wildcard = msg.answers().any(|r| {
                        r.rtype == RType::RRSIG
                            && r.owner == name_ref
                            && covered(r.rdata) == Some(t)
                            && r.rdata
                                .get(3)
                                .is_some_and(|&l| usize::from(l) < name_ref.label_count())
                    });
                    if wildcard {
                        // The proof that the name itself does not exist goes with it.
                        dnssec.extend(proof_rrs(msg));
                        self.show_proof(msg);
                    }
                    cache_rrset_dnssec(res, set.clone(), &dnssec, rank, now);
                    let start = self.chain.len();
                    self.chain.extend(set.map(Rr::to_record));
                    self.show_sigs(msg, name_ref, t);
                    self.note(msg, start, zone, rank, false);
                }
                self.keep_proof(msg, zone, None);
                self.outcome = Some(FrameOutcome::Answer);
                return Ok(moved);
            }
            if self.qtype == RType::CNAME {
                return Ok(moved);
            }
            let Some(c) = msg
                .answers()
                .find(|r| r.rtype == RType::CNAME && r.owner == name_ref)
            else {
                return Ok(moved);
            };
            let Ok(target) = NameRef::from_wire(c.rdata) else {
                return Ok(moved);
            };
            self.hop(res, target)?;
            let sigs = sig_rrs(msg, name_ref, RType::CNAME, false);
            cache_rrset_dnssec(res, std::iter::once(c), &sigs, rank, now);
            let start = self.chain.len();
            self.chain.push(c.to_record());
            self.show_sigs(msg, name_ref, RType::CNAME);
            self.note(msg, start, zone, rank, false);
            moved = true;
        }
    }

    /// Follows a referral to `cut`: caches the NS RRset and the glue that lies inside the
    /// queried zone (glue outside it could be a poisoning attempt and is dropped), and moves
    /// this frame to the child zone.
    pub(super) fn take_referral(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        msg: &Response,
        cut: NameRef<'_>,
        now: u64,
    ) -> Result<(), Ede> {
        budget.referrals += 1;
        if budget.referrals > res.config.max_referrals {
            budget.exhausted = Some(Ede::new(Ede::OTHER, "too many referrals"));
            return Ok(());
        }
        let ns = msg
            .authority()
            .filter(|r| r.rtype == RType::NS && r.owner == cut);
        cache_rrset(res, ns.clone(), Rank::Referral, now);
        self.servers.clear();
        for r in ns {
            if let Ok(n) = NameRef::from_wire(r.rdata) {
                push_ns(&mut self.servers, n);
            }
        }
        let zone = self.zone.clone();
        let in_zone = |ns: &Ns| ns.name.as_ref().ends_with(&zone.as_ref());
        for t in [RType::A, RType::AAAA] {
            for ns in self.servers.iter().filter(|ns| in_zone(ns)) {
                let glue = msg
                    .additional()
                    .filter(|r| r.rtype == t && r.owner == ns.name.as_ref());
                cache_rrset(res, glue, Rank::Additional, now);
            }
        }
        self.enter_cut(cut, res, now);
        // Addresses come from the cache, where better data (an authoritative answer) wins
        // over this glue; the glue itself is used only if the cache kept nothing.
        for i in 0..self.servers.len() {
            if self.servers[i].addrs > 0 || !in_zone(&self.servers[i]) {
                continue;
            }
            for g in msg.additional() {
                if g.owner != self.servers[i].name.as_ref() {
                    continue;
                }
                if let Some(ip) = ip_of(g.rtype, g.rdata) {
                    let a = SocketAddr::new(ip, res.config.upstream_port);
                    if res.config.learned_ok(&a) {
                        self.add_addr(i, a);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A referral to a zone strictly below `zone` that contains `name`: the deepest NS owner.
pub(super) fn find_referral<'m>(
    msg: &'m Response,
    zone: NameRef<'_>,
    name: NameRef<'_>,
) -> Option<NameRef<'m>> {
    msg.authority()
        .filter(|r| {
            r.rtype == RType::NS
                && r.owner.len() > zone.len()
                && r.owner.ends_with(&zone)
                && name.ends_with(&r.owner)
        })
        .max_by_key(|r| r.owner.len())
        .map(|r| r.owner)
}

/// True if the authority section has an NS RRset other than `zone`'s own: after
/// [`find_referral`] found no way down, a referral upwards or sideways.
pub(super) fn stray_referral(msg: &Response, zone: NameRef<'_>) -> bool {
    msg.authority()
        .any(|r| r.rtype == RType::NS && r.owner != zone)
}

/// The SOA in the authority section of a negative answer, if it belongs: its owner lies
/// inside `zone` and above (or at) `name`.
pub(super) fn find_soa<'m>(
    msg: &'m Response,
    zone: NameRef<'_>,
    name: NameRef<'_>,
) -> Option<Rr<'m>> {
    msg.authority()
        .find(|r| r.rtype == RType::SOA && r.owner.ends_with(&zone) && name.ends_with(&r.owner))
}

/// RFC 6672 §2.2: replaces the DNAME owner suffix of `name` with the DNAME target.
fn substitute(name: NameRef<'_>, dname: &Rr<'_>) -> Option<NameBuf> {
    let target = rdata::target_name(RType::DNAME, dname.rdata)?;
    let prefix_len = name.len() - dname.owner.len();
    let mut buf = NameBuf::new();
    buf.set_concat(&name.as_wire()[..prefix_len], target).ok()?;
    Some(buf)
}

/// Caches the records of one RRset (same owner and type), with their lowest TTL.
pub(super) fn cache_rrset<'m>(
    res: &Resolver,
    rrset: impl Iterator<Item = Rr<'m>> + Clone,
    rank: Rank,
    now: u64,
) {
    cache_rrset_dnssec(res, rrset, &[], rank, now);
}

/// [`cache_rrset`] with the DNSSEC records shown with it to DO clients.
pub(super) fn cache_rrset_dnssec<'m>(
    res: &Resolver,
    rrset: impl Iterator<Item = Rr<'m>> + Clone,
    dnssec: &[DnssecRr<'_>],
    rank: Rank,
    now: u64,
) {
    let Some(first) = rrset.clone().next() else {
        return;
    };
    let ttl = rrset.clone().map(|r| r.ttl).min().unwrap_or(0);
    res.cache.insert_rrset(
        first.owner,
        first.rtype,
        rank,
        ttl,
        rrset.map(|r| r.rdata),
        dnssec,
        Stamp::UNCHECKED,
        now,
    );
}

/// The RRSIGs of the answer section at `owner` covering `rtype`, as DNSSEC records of
/// the answer section (with their owner if `owned`, else the set's).
pub(super) fn sig_rrs<'m>(
    msg: &'m Response,
    owner: NameRef<'_>,
    rtype: RType,
    owned: bool,
) -> Vec<DnssecRr<'m>> {
    msg.answers()
        .filter(|r| r.rtype == RType::RRSIG && r.owner == owner && covered(r.rdata) == Some(rtype))
        .map(|r| DnssecRr {
            authority: false,
            owner: owned.then_some(r.owner),
            rtype: r.rtype,
            ttl: r.ttl,
            rdata: r.rdata,
        })
        .collect()
}

/// The authority section's records that prove a denial or a wildcard expansion: NSEC,
/// NSEC3, their RRSIGs and the SOA's.
fn is_proof(r: &Rr<'_>) -> bool {
    matches!(r.rtype, RType::NSEC | RType::NSEC3)
        || (r.rtype == RType::RRSIG
            && matches!(
                covered(r.rdata),
                Some(RType::NSEC | RType::NSEC3 | RType::SOA)
            ))
}

/// [`is_proof`]'s records of `msg`, as DNSSEC records of the authority section.
pub(super) fn proof_rrs(msg: &Response) -> Vec<DnssecRr<'_>> {
    msg.authority()
        .filter(is_proof)
        .map(|r| DnssecRr {
            authority: true,
            owner: Some(r.owner),
            rtype: r.rtype,
            ttl: r.ttl,
            rdata: r.rdata,
        })
        .collect()
}

/// The type an RRSIG's rdata covers.
pub(super) fn covered(rrsig_rdata: &[u8]) -> Option<RType> {
    let b = rrsig_rdata.get(..2)?;
    Some(RType(u16::from_be_bytes([b[0], b[1]])))
}

impl Frame {
    /// Notes `chain[start..]`, just taken from `msg`, as one RRset for validation, with
    /// the RRSIGs at its owner that cover its type.
    fn note(&mut self, msg: &Response, start: usize, zone: NameRef<'_>, rank: Rank, synth: bool) {
        if !self.validating || start >= self.chain.len() {
            return;
        }
        let (owner, rtype) = (self.chain[start].owner.clone(), self.chain[start].rtype);
        if !synth {
            let sigs = msg.answers().filter(|r| {
                r.rtype == RType::RRSIG
                    && r.owner == owner.as_ref()
                    && covered(r.rdata) == Some(rtype)
            });
            self.ev.sigs.extend(sigs.map(Rr::to_record));
        }
        self.ev.notes.push(Note {
            start,
            end: self.chain.len(),
            zone: name_buf(zone),
            rank,
            cached: None,
            synth,
        });
    }

    /// A name error (`nxdomain`) or no data for the frame's name: cached with its SOA and
    /// proof, the proof kept to show a DO client and to validate, and the frame's outcome.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn take_negative(
        &mut self,
        res: &Resolver,
        msg: &Response,
        zone: NameRef<'_>,
        soa: Option<Rr<'_>>,
        nxdomain: bool,
        rank: Rank,
        now: u64,
    ) {
        let proof = proof_rrs(msg);
        let qtype = (!nxdomain).then_some(self.qtype);
        res.cache.insert_negative(
            self.qname.as_ref(),
            qtype,
            soa.map(Soa::from),
            &proof,
            rank,
            Stamp::UNCHECKED,
            now,
        );
        self.show_proof(msg);
        self.keep_proof(msg, zone, Some(rank));
        let soa = soa.map(Rr::to_record);
        self.outcome = Some(if nxdomain {
            FrameOutcome::NxDomain(soa)
        } else {
            FrameOutcome::NoData(soa)
        });
    }

    /// Keeps the denial records of the final response (NSEC, NSEC3, their RRSIGs and the
    /// SOA's) for validation.
    fn keep_proof(&mut self, msg: &Response, zone: NameRef<'_>, negative: Option<Rank>) {
        if !self.validating {
            return;
        }
        self.ev.proof_zone.set(zone);
        self.ev.negative_rank = negative;
        let proof = msg.authority().filter(is_proof);
        self.ev.proof.extend(proof.map(Rr::to_record));
    }

    /// Keeps, for a client that set DO, the RRSIGs of the RRset (`owner`, `rtype`) just
    /// added to the chain.
    fn show_sigs(&mut self, msg: &Response, owner: NameRef<'_>, rtype: RType) {
        let sigs = msg.answers().filter(|r| {
            r.rtype == RType::RRSIG && r.owner == owner && covered(r.rdata) == Some(rtype)
        });
        self.shown.answer.extend(sigs.map(Rr::to_record));
    }

    /// Keeps, for a client that set DO, the proof of a denial or a wildcard expansion.
    fn show_proof(&mut self, msg: &Response) {
        let proof = msg.authority().filter(is_proof);
        self.shown.authority.extend(proof.map(Rr::to_record));
    }
}

fn distinct_types<'m>(rrs: impl Iterator<Item = Rr<'m>>) -> Vec<RType> {
    let mut v: Vec<RType> = rrs.map(|r| r.rtype).collect();
    v.sort();
    v.dedup();
    v
}
