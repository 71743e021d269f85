//! The whole-zone checks run on a zone as it is built, once its RRsets are merged: one SOA
//! and some NS at the apex. The per-node checks (CNAME beside other data, more than one
//! CNAME or DNAME, CNAME at the apex, SOA away from the apex) run as each node's RRsets are
//! merged, in `build` (`build::node_checks`, which `patch` runs too). Name servers inside the zone without address records in it are
//! warnings, not errors: Knot and NSD load such zones too (RFC 1034 §6's EDU. example is one).

use super::build::Builder;
use super::flags;
use shardns_wire::{rdata, NameRef, RType};

impl Builder {
    /// Whole-zone checks: one SOA at the apex and some NS (errors); addresses for the name
    /// servers inside the zone (warnings).
    pub(super) fn check_zone(&mut self) {
        let apex = self.zone.apex_node();
        let soa = apex.rrset(RType::SOA).map(|soa| {
            let data = soa.rdatas().next().unwrap_or(&[]);
            let minimum = data.len().checked_sub(4).map_or(0, |i| {
                u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]])
            });
            (soa.len(), soa.ttl, minimum)
        });
        let has_ns = apex.rrset(RType::NS).is_some();
        match soa {
            None => {
                let d = self.zone_diag(format!(
                    "{}: no SOA record at the zone apex",
                    self.zone.apex
                ));
                self.diags.push(d);
            }
            Some((n, _, _)) if n > 1 => {
                let d = self.zone_diag(format!("{}: more than one SOA record", self.zone.apex));
                self.diags.push(d);
            }
            Some((_, ttl, minimum)) => {
                self.zone.soa_minimum = minimum;
                self.zone.soa_ttl = ttl;
            }
        }
        if !has_ns {
            let d = self.zone_diag(format!(
                "{}: no NS records at the zone apex",
                self.zone.apex
            ));
            self.diags.push(d);
        }
        // Name servers inside the zone should have addresses in it; below a cut, those are
        // glue. A zone without them still loads, as in Knot and NSD: RFC 1034 §6's own EDU.
        // example names C.ISI.EDU. as a server, below the ISI.EDU. cut, with no glue.
        let mut missing = Vec::new();
        for id in 0..self.zone.node_count() as u32 {
            let node = self.zone.node(id);
            if node.flags() & flags::BELOW_CUT != 0 {
                continue;
            }
            let Some(ns) = node.rrset(RType::NS) else {
                continue;
            };
            for data in ns.rdatas() {
                let Some(target) = rdata::target_name(RType::NS, data) else {
                    continue;
                };
                if !target.ends_with(&self.zone.apex()) {
                    continue;
                }
                let has_addr = self
                    .zone
                    .find(target)
                    .is_some_and(|t| t.rrset(RType::A).is_some() || t.rrset(RType::AAAA).is_some());
                if has_addr {
                    continue;
                }
                let owner = node.name();
                missing.push(match self.cut_at_or_above(target) {
                    Some(cut) if !cut.eq_ci(&owner) => format!(
                        "{owner}: NS {target} has no address records (A or AAAA) in the zone: \
                         it is below the delegation {cut}, which gives no glue for it"
                    ),
                    Some(_) => {
                        format!("{owner}: NS {target} has no glue (A or AAAA) below the delegation")
                    }
                    None => format!("{owner}: NS {target} has no address records (A or AAAA)"),
                });
            }
        }
        for m in missing {
            let d = self.zone_diag(m);
            self.warnings.push(d);
        }
    }

    /// The highest delegation point (a zone cut below the apex) at or above `name`, if any.
    fn cut_at_or_above<'z>(&'z self, name: NameRef<'_>) -> Option<NameRef<'z>> {
        let apex_len = self.zone.apex().len();
        let mut cut = None;
        let mut at = Some(name);
        while let Some(n) = at.filter(|n| n.len() > apex_len) {
            if let Some(node) = self.zone.find(n) {
                if node.flags() & flags::DELEGATION != 0 {
                    cut = Some(node.name());
                }
            }
            at = n.parent();
        }
        cut
    }
}
