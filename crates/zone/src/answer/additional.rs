//! answer::additional -- the additional section (RFC 1034 §4.3.2 step 6): the addresses of
//! in-zone NS, MX and SRV targets, glue for referrals, each RRset whole with its signatures
//! or not at all.

use super::{Answerer, MAX_ADDITIONAL};
use crate::db::{flags, RRset};
use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::{rdata, NameRef, RType, Section};

impl Answerer<'_, '_, '_> {
    /// Remembers in-zone NS/MX/SRV targets whose addresses go in the additional section.
    /// Glue below a zone cut is used only for referrals.
    pub(super) fn queue_additional(&mut self, set: RRset<'_>, referral: bool) {
        if !matches!(
            set.rtype,
            RType::NS | RType::MX | RType::SRV | RType::SVCB | RType::HTTPS
        ) {
            return;
        }
        for d in set.rdatas() {
            let target = match set.rtype {
                // RFC 9460 §4.1: addresses of in-zone TargetNames ("." is the owner itself).
                RType::SVCB | RType::HTTPS => d
                    .get(2..)
                    .and_then(|t| NameRef::from_wire_prefix(t).ok())
                    .map(|(n, _)| n)
                    .filter(|n| !n.is_root()),
                _ => rdata::target_name(set.rtype, d),
            };
            let Some(target) = target else { continue };
            if !target.ends_with(&self.zone.apex()) || target.len() > MAX_NAME_LEN {
                continue;
            }
            let Some(node) = self.zone.find(target) else {
                continue;
            };
            if !referral && node.flags() & flags::BELOW_CUT != 0 {
                continue;
            }
            if self.additional[..self.nadditional].contains(&node.id()) {
                continue;
            }
            if self.nadditional == MAX_ADDITIONAL {
                return;
            }
            self.additional[self.nadditional] = node.id();
            self.nadditional += 1;
        }
    }

    /// Writes queued addresses, each with its signatures in a DNSSEC answer; what does not
    /// fit is left out without TC (RFC 2181 §9, RFC 4035 §3.1.1).
    pub(super) fn put_additional(&mut self) {
        for i in 0..self.nadditional {
            let node = self.zone.node(self.additional[i]);
            for t in [RType::A, RType::AAAA] {
                if let Some(set) = node.rrset(t) {
                    let cp = self.w.checkpoint();
                    if self
                        .put_signed(Section::Additional, node.name(), node, set)
                        .is_err()
                    {
                        // Never half an RRset, nor an RRset without its signatures.
                        self.w.rollback(cp);
                        return;
                    }
                }
            }
        }
    }
}
