//! QNAME minimisation (RFC 9156, relaxed): which name a frame asks its zone's servers,
//! and what the answers to minimised questions mean.
//!
//! Owns: the minimisation state of a frame (labels asked so far, steps taken), steps the
//! cache already answers, and reading a response to a minimised question (a referral moves
//! down, NXDOMAIN sends the full name, an authoritative NOERROR adds a label).

use std::net::SocketAddr;

use shardns_wire::{NameBuf, RType, Rcode};

use super::response::{cache_rrset_dnssec, find_referral, find_soa, proof_rrs, sig_rrs};
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

    /// A response to a minimised query (RFC 9156): a referral moves down; NXDOMAIN makes us
    /// ask the full name (relaxed mode, for servers that deny empty non-terminals); any
    /// other authoritative NOERROR means no cut here, so one more label is added.
    pub(super) fn minimised_response(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        server: SocketAddr,
        sent: &Sent,
        msg: &Response,
        now: u64,
    ) -> Result<(), Ede> {
        if let Some(cut) = find_referral(msg, self.zone.as_ref(), sent.qname.as_ref()) {
            return self.take_referral(res, budget, msg, cut, now);
        }
        if msg.rcode() == Rcode::NXDOMAIN {
            self.qmin_labels = 0;
            return Ok(());
        }
        if !msg.header.aa() {
            self.lame += 1;
            self.mark_dead(server);
            return Ok(());
        }
        // The name exists in this zone: cache what answers the minimised question (the
        // RRset, or NODATA), so other resolutions skip this step.
        let rrset = msg
            .answers()
            .filter(|r| r.owner == sent.qname.as_ref() && r.rtype == sent.qtype);
        if rrset.clone().next().is_none() {
            if msg.answers_empty() {
                let soa = find_soa(msg, self.zone.as_ref(), sent.qname.as_ref());
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
}
