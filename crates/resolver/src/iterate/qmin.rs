//! QNAME minimisation (RFC 9156, relaxed by default): which name a frame asks its zone's
//! servers, and what the answers to minimised questions mean.
//!
//! Owns: the minimisation state of a frame (labels asked so far, steps taken), steps the
//! cache already answers, and reading a response to a minimised question (a referral moves
//! down, an authoritative NOERROR adds a label, anything else sends the full name, or in
//! strict mode ends in NXDOMAIN or a lame server); relaxed, the servers that answered
//! badly are remembered (in the shared server table) and asked full names for a while.

use std::net::SocketAddr;

use shardns_wire::{NameBuf, RType, Rcode};

use super::response::{
    cache_rrset_dnssec, find_referral, find_soa, proof_rrs, sig_rrs, stray_referral,
};
use super::{name_buf, Budget, Frame, Sent};
use crate::cache::{Probe, Rank, Soa};
use crate::msg::Response;
use crate::reply::Ede;
use crate::validate::Stamp;
use crate::Resolver;

impl Frame {
    pub(super) fn start_qmin(&mut self, res: &Resolver) {
        self.qmin_steps = 0;
        self.qmin_labels = if res.config.qname_minimisation && !self.forward {
            self.zone.as_ref().label_count() + 1
        } else {
            0
        };
    }

    /// Takes the minimisation steps whose answers are cached already (another resolution
    /// asked them): a name that exists without a cut there needs no query to find that out
    /// again. Without this, names under a child zone served by its parent's own servers
    /// (the child's NODATA instead of a referral) cost one more query each.
    pub(super) fn skip_cached_qmin_steps(&mut self, res: &Resolver, now: u64) {
        let total = self.qname.as_ref().label_count();
        while self.qmin_labels != 0 && self.qmin_labels < total {
            let name = self.qname.as_ref().suffix(self.qmin_labels);
            match res.cache.probe(name, RType::A, Rank::AuthAnswer, now) {
                Probe::Miss => return,
                Probe::Exists => self.qmin_step_done(res),
                // As for an NXDOMAIN answer to the minimised query.
                Probe::NxDomain => self.qmin_labels = 0,
            }
        }
    }

    /// A minimised question found the name existing without a cut: one label more, or the
    /// full name once the steps are used up.
    fn qmin_step_done(&mut self, res: &Resolver) {
        self.qmin_steps += 1;
        if self.qmin_steps >= res.config.qname_minimisation_steps {
            self.qmin_labels = 0;
        } else {
            self.qmin_labels += 1;
        }
    }

    /// Asks `server` the full name if it answered a minimised question badly lately.
    pub(super) fn qmin_for_server(&mut self, res: &Resolver, server: SocketAddr, now: u64) {
        if self.qmin_labels != 0 && !res.servers.qmin_ok(&server, now) {
            self.qmin_labels = 0;
        }
    }

    /// The full name, asked after a minimised question's NXDOMAIN, got `rcode`: NOERROR
    /// means the name exists and the NXDOMAIN was the server's minimisation bug.
    pub(super) fn full_name_answered(&mut self, res: &Resolver, rcode: Rcode, now: u64) {
        if let Some(server) = self.qmin_suspect.take() {
            if rcode == Rcode::NOERROR {
                res.servers.set_no_qmin(server, now);
            }
        }
    }

    /// The question to send: the minimised name (type A) or the full one.
    pub(super) fn next_question(&self) -> (NameBuf, RType) {
        let total = self.qname.as_ref().label_count();
        if self.qmin_labels == 0 || self.qmin_labels >= total {
            return (self.qname.clone(), self.qtype);
        }
        (
            name_buf(self.qname.as_ref().suffix(self.qmin_labels)),
            RType::A,
        )
    }

    /// A response to a minimised query (RFC 9156): a referral moves down; an authoritative
    /// NOERROR (no referral up or sideways) means no cut here, so one more label is added.
    /// Anything else is [`Frame::minimised_unusable`].
    pub(super) fn minimised_response(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        server: SocketAddr,
        sent: &Sent,
        msg: &Response,
        now: u64,
    ) -> Result<(), Ede> {
        if msg.rcode() == Rcode::NOERROR {
            if let Some(cut) = find_referral(msg, self.zone.as_ref(), sent.qname.as_ref()) {
                return self.take_referral(res, budget, msg, cut, now);
            }
        }
        let zone = self.zone.clone();
        let soa = find_soa(msg, zone.as_ref(), sent.qname.as_ref());
        let stray = soa.is_none() && msg.answers_empty() && stray_referral(msg, zone.as_ref());
        if msg.rcode() != Rcode::NOERROR || !msg.header.aa() || stray {
            self.minimised_unusable(res, server, msg, now);
            return Ok(());
        }
        // The name exists in this zone: cache what answers the minimised question (the
        // RRset, or NODATA), so other resolutions skip this step.
        let rrset = msg
            .answers()
            .filter(|r| r.owner == sent.qname.as_ref() && r.rtype == sent.qtype);
        if rrset.clone().next().is_none() {
            if msg.answers_empty() {
                res.cache.insert_negative(
                    sent.qname.as_ref(),
                    Some(sent.qtype),
                    soa.map(Soa::from),
                    &proof_rrs(msg),
                    Rank::AuthAnswer,
                    Stamp::UNCHECKED,
                    now,
                );
            }
        } else {
            let sigs = sig_rrs(msg, sent.qname.as_ref(), sent.qtype, false);
            cache_rrset_dnssec(res, rrset, &sigs, Rank::AuthAnswer, now);
        }
        self.qmin_step_done(res);
        Ok(())
    }

    /// A minimised question got no usable answer: an error rcode, NXDOMAIN, NOERROR
    /// without AA (a parent answering from its own data), or a referral upwards. Relaxed
    /// (the default, as Unbound's `qname-minimisation-strict: no` and RFC 9156 §2.3): the
    /// zone's servers are asked the full name, so that servers broken only for empty
    /// non-terminals or their own cuts do not make the name unresolvable; a server that
    /// answers the full name badly too is lame then. Strict: NXDOMAIN means nothing below
    /// exists (RFC 8020), anything else makes the server lame.
    pub(super) fn minimised_unusable(
        &mut self,
        res: &Resolver,
        server: SocketAddr,
        msg: &Response,
        now: u64,
    ) {
        if !res.config.qname_minimisation_strict {
            self.qmin_labels = 0;
            // Remembered for the server's later names (RFC 9156 §2.3). An NXDOMAIN may be
            // true (the name does not exist): held against the server only once the full
            // name is answered NOERROR ([`Frame::full_name_answered`]).
            if msg.rcode() == Rcode::NXDOMAIN {
                self.qmin_suspect = Some(server);
            } else {
                res.servers.set_no_qmin(server, now);
            }
            return;
        }
        if msg.rcode() == Rcode::NXDOMAIN {
            let zone = self.zone.clone();
            let soa = find_soa(msg, zone.as_ref(), self.qname.as_ref());
            let rank = if msg.header.aa() {
                Rank::AuthAnswer
            } else {
                Rank::Answer
            };
            self.take_negative(res, msg, zone.as_ref(), soa, true, rank, now);
            return;
        }
        self.lame += 1;
        self.mark_dead(server);
    }
}
