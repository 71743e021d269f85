//! A frame's state machine: cache first, then the closest zone cut, then queries until the
//! frame has an outcome.
//!
//! Owns: [`Frame::advance`] (the states Start, Select and Waiting, and giving up a cached
//! cut for the one above when its servers proved useless), answers from the cache with
//! their CNAME chains, the chain limit and loop check on every hop, and the bottom frame's
//! client answer.

use shardns_wire::{NameBuf, NameRef, RType, Rcode, Record};

use super::{name_buf, Abandoned, Frame, FrameOutcome, FrameState, Sent, UpstreamQuery};
use crate::cache::{negative_ttl, DnssecRecords, DnssecRr, Lookup, Rank, Soa};
use crate::reply::{Ede, Resolution};
use crate::validate::{Security, Stamp};
use crate::Resolver;

/// What a frame needs next.
// Large for the same reason as `Step`.
#[allow(clippy::large_enum_variant)]
pub(super) enum Advance {
    Send(UpstreamQuery),
    /// Resolve an address of this frame's name server `servers[i]`, of this type.
    Need(usize, RType),
    Done(FrameOutcome),
}

impl Frame {
    pub(super) fn new(qname: NameRef<'_>, qtype: RType, parent_ns: usize) -> Self {
        Self {
            validating: false,
            key_frame: false,
            ev: super::Evidence::default(),
            shown: DnssecRecords::default(),
            origin: name_buf(qname),
            qname: name_buf(qname),
            qtype,
            parent_ns,
            chain: Vec::new(),
            hops: 0,
            state: FrameState::Start,
            outcome: None,
            zone: NameBuf::new(),
            forward: false,
            servers: Vec::new(),
            addrs: Vec::new(),
            tried: Vec::new(),
            qmin_labels: 0,
            qmin_suspect: None,
            qmin_steps: 0,
            timeouts: 0,
            network_errors: 0,
            lame: 0,
            held: false,
            abandoned: None,
            sent: None,
            from_cached_cut: false,
            ceiling: usize::MAX,
            refresh: false,
        }
    }

    /// Makes this (spare) frame a new one, keeping its buffers.
    pub(super) fn reset(&mut self, qname: NameRef<'_>, qtype: RType, parent_ns: usize) {
        self.validating = false;
        self.key_frame = false;
        self.ev.clear();
        self.shown.clear();
        self.origin.set(qname);
        self.qname.set(qname);
        self.qtype = qtype;
        self.parent_ns = parent_ns;
        self.chain.clear();
        self.hops = 0;
        self.state = FrameState::Start;
        self.outcome = None;
        self.zone = NameBuf::new();
        self.forward = false;
        self.servers.clear();
        self.addrs.clear();
        self.tried.clear();
        self.qmin_labels = 0;
        self.qmin_steps = 0;
        self.qmin_suspect = None;
        self.timeouts = 0;
        self.network_errors = 0;
        self.lame = 0;
        self.held = false;
        self.abandoned = None;
        self.sent = None;
        self.from_cached_cut = false;
        self.ceiling = usize::MAX;
        self.refresh = false;
    }

    pub(super) fn advance(&mut self, res: &Resolver, salt: u64, now: u64) -> Advance {
        loop {
            // The frame is done with once its outcome is taken.
            if let Some(o) = self.outcome.take() {
                return Advance::Done(o);
            }
            match self.state {
                FrameState::Start => {
                    let refresh = core::mem::take(&mut self.refresh);
                    if refresh {
                        // Straight to iteration (a prefetch).
                    } else if let Err(ede) = self.try_cache(res, now) {
                        self.outcome = Some(FrameOutcome::Fail(ede));
                        continue;
                    }
                    if self.outcome.is_none() && self.state == FrameState::Start {
                        if !refresh && self.try_aggressive(res, now) {
                            continue;
                        }
                        self.find_cut(res, now);
                        self.state = FrameState::Select;
                    }
                }
                FrameState::Select => {
                    self.skip_cached_qmin_steps(res, now);
                    if let Some(server) = self.pick(res, salt, now) {
                        self.qmin_for_server(res, server, now);
                        let (qname, qtype) = self.next_question();
                        self.sent = Some(Sent {
                            server,
                            qname: qname.clone(),
                            qtype,
                        });
                        self.state = FrameState::Waiting;
                        return Advance::Send(UpstreamQuery {
                            server,
                            qname,
                            qtype,
                            rd: self.forward,
                            zone: self.zone.clone(),
                        });
                    }
                    if let Some((i, t)) = self.unresolved_ns() {
                        self.servers[i].resolving = true;
                        return Advance::Need(i, t);
                    }
                    if self.from_cached_cut && !self.only_unreachable() {
                        // A cached cut whose servers were lame or had no address: the
                        // delegation may have changed, so try from the cut above. Servers
                        // that merely do not answer would not answer after the parent's
                        // referral either (and the hold-down already knows them).
                        self.abandoned = Some(Box::new(Abandoned {
                            zone: self.zone.clone(),
                            dead: self.addrs.iter().map(|a| a.addr).collect(),
                            timeouts: self.timeouts,
                            network_errors: self.network_errors,
                            lame: self.lame,
                            held: self.held,
                        }));
                        self.ceiling = self.zone.as_ref().len();
                        self.state = FrameState::Start;
                        continue;
                    }
                    self.outcome = Some(FrameOutcome::Fail(self.failure_ede()));
                }
                FrameState::Waiting => {
                    // Not reached: the engine does not step a waiting task. Treat as lost.
                    self.state = FrameState::Select;
                    self.sent = None;
                }
            }
        }
    }

    /// Answers from the cache where it can, following cached CNAMEs. Leaves `state` at
    /// `Start` (and no outcome) when iteration is needed for `qname`.
    fn try_cache(&mut self, res: &Resolver, now: u64) -> Result<(), Ede> {
        loop {
            let shown = (self.shown.answer.len(), self.shown.authority.len());
            let (found, sec, ede) = res.cache.lookup_dnssec(
                self.qname.as_ref(),
                self.qtype,
                Rank::Answer,
                now,
                Some(&mut self.shown),
            );
            if self.validating && !matches!(found, Lookup::Miss) {
                let unused = match sec {
                    // Not checked yet: fetched again and validated.
                    Security::Indeterminate => true,
                    Security::Bogus => return Err(Ede::bogus(ede)),
                    // Validation asks again for a DS absence: the proof (delegation or
                    // not) is not judged again from the cache, only that it was secure.
                    _ => self.key_frame && matches!(found, Lookup::NxDomain(_) | Lookup::NoData(_)),
                };
                if unused {
                    self.shown.answer.truncate(shown.0);
                    self.shown.authority.truncate(shown.1);
                    return Ok(());
                }
            }
            let cached = Some((sec, ede));
            match found {
                Lookup::Miss => return Ok(()),
                Lookup::Positive(rrset) => {
                    self.note_cached(rrset.len(), cached);
                    self.chain.extend(rrset);
                    self.outcome = Some(FrameOutcome::Answer);
                    return Ok(());
                }
                Lookup::NxDomain(soa) => {
                    self.ev.cached_negative = cached;
                    self.outcome = Some(FrameOutcome::NxDomain(soa));
                    return Ok(());
                }
                Lookup::NoData(soa) => {
                    self.ev.cached_negative = cached;
                    self.outcome = Some(FrameOutcome::NoData(soa));
                    return Ok(());
                }
                Lookup::Cname(recs) => {
                    let Some(target) = recs.last().and_then(|r| NameRef::from_wire(&r.rdata).ok())
                    else {
                        return Ok(());
                    };
                    self.hop(res, target)?;
                    self.note_cached(recs.len(), cached);
                    self.chain.extend(recs);
                }
            }
        }
    }

    /// Aggressive use of validated NSEC ranges (RFC 8198): on a cache miss of a validating
    /// frame, a denial made from kept ranges is the outcome (secure, judged when the ranges
    /// were kept), and is cached like a fetched one. True if there was one.
    fn try_aggressive(&mut self, res: &Resolver, now: u64) -> bool {
        let cfg = &res.config;
        if !(cfg.aggressive_nsec && cfg.validation && self.validating) || self.key_frame {
            return false;
        }
        // NSEC proofs hash nothing and check no signature: the limits are not used.
        let limits = crate::validate::Limits {
            unix_now: 0,
            skew_min: cfg.signature_skew_min,
            skew_max: cfg.signature_skew_max,
            max_validations: 0,
            max_key_collisions: 0,
            max_nsec3_hashes: 0,
            max_nsec3_iterations: cfg.max_nsec3_iterations,
        };
        let Some(s) = res
            .nsec
            .synthesize(self.qname.as_ref(), self.qtype, now, &limits)
        else {
            return false;
        };
        let rtype = (!s.nxdomain).then_some(self.qtype);
        let proof: Vec<DnssecRr<'_>> = s
            .proof
            .iter()
            .map(|r| DnssecRr {
                authority: true,
                owner: Some(r.owner.as_ref()),
                rtype: r.rtype,
                ttl: r.ttl,
                rdata: &r.rdata,
            })
            .collect();
        let stamp = Stamp {
            sec: Security::Secure,
            ede: 0,
            ttl_cap: u32::MAX,
        };
        res.cache.insert_negative(
            self.qname.as_ref(),
            rtype,
            Some(Soa::from(&s.soa)),
            &proof,
            Rank::Answer,
            stamp,
            now,
        );
        drop(proof);
        self.shown.authority.extend(s.proof);
        self.ev.cached_negative = Some((Security::Secure, 0));
        self.outcome = Some(if s.nxdomain {
            FrameOutcome::NxDomain(Some(s.soa))
        } else {
            FrameOutcome::NoData(Some(s.soa))
        });
        true
    }

    /// Notes the `n` records about to be added to the chain from the cache, judged already.
    fn note_cached(&mut self, n: usize, cached: Option<(Security, u16)>) {
        if self.validating {
            let start = self.chain.len();
            self.ev.notes.push(super::Note {
                start,
                end: start + n,
                zone: NameBuf::new(),
                rank: Rank::Answer,
                cached,
                synth: false,
            });
        }
    }

    /// Moves along a CNAME/DNAME to `target`, enforcing the chain limit and loop check.
    pub(super) fn hop(&mut self, res: &Resolver, target: NameRef<'_>) -> Result<(), Ede> {
        if self.hops >= res.config.max_chain {
            return Err(Ede::new(Ede::OTHER, "CNAME chain too long"));
        }
        let seen = target == self.origin.as_ref()
            || self
                .chain
                .iter()
                .any(|r| matches!(r.rtype, RType::CNAME) && r.owner.as_ref() == target);
        if seen || target == self.qname.as_ref() {
            return Err(Ede::new(Ede::OTHER, "CNAME loop"));
        }
        self.hops += 1;
        self.qname.set(target);
        Ok(())
    }

    /// Starts over at the (new) `qname`: cache first, then the closest cut.
    pub(super) fn restart(&mut self) {
        self.state = FrameState::Start;
        self.ceiling = usize::MAX;
        self.refresh = false;
    }

    /// The client answer for this (bottom) frame.
    pub(super) fn answer(&mut self, outcome: FrameOutcome) -> Resolution {
        let answers = core::mem::take(&mut self.chain);
        let dnssec = core::mem::take(&mut self.shown);
        let (rcode, authority, ede) = match outcome {
            FrameOutcome::Answer => (Rcode::NOERROR, Vec::new(), None),
            FrameOutcome::NxDomain(soa) => (
                Rcode::NXDOMAIN,
                soa.into_iter().map(negative_soa).collect(),
                None,
            ),
            FrameOutcome::NoData(soa) => (
                Rcode::NOERROR,
                soa.into_iter().map(negative_soa).collect(),
                None,
            ),
            FrameOutcome::Fail(ede) => return Resolution::servfail(ede),
        };
        Resolution {
            rcode,
            answers,
            authority,
            dnssec_answer: dnssec.answer,
            dnssec_authority: dnssec.authority,
            ede,
            secure: false,
        }
    }
}

/// The SOA of a negative answer, with the TTL the answer may be cached for (RFC 2308 §3).
fn negative_soa(mut soa: Record) -> Record {
    soa.ttl = negative_ttl(&soa);
    soa
}
