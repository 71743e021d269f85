//! The checks of a signed zone as it is built, all warnings (an authoritative server serves
//! what it was given; a validator judges it): the NSEC or NSEC3 chain is closed and in order,
//! every authoritative name has its NSEC or NSEC3, and every authoritative RRset is signed.
//! Signature validity times need a clock, so [`Zone::signature_warnings`] takes the time.

use super::build::Builder;
use super::store::Zone;
use super::{flags, NodeId};
use shardns_wire::{text, NameRef, RType};
use std::fmt::Write as _;

/// Warnings of one kind reported by name; the rest are counted.
const MAX_NAMED: usize = 10;

/// Collects the warnings of one kind: the first few named, the rest counted.
struct Findings {
    what: &'static str,
    named: Vec<String>,
    more: usize,
}

impl Findings {
    fn new(what: &'static str) -> Self {
        Self {
            what,
            named: Vec::new(),
            more: 0,
        }
    }
    fn push(&mut self, f: impl FnOnce() -> String) {
        if self.named.len() < MAX_NAMED {
            self.named.push(f());
        } else {
            self.more += 1;
        }
    }
    fn into_messages(self) -> Vec<String> {
        let mut out = self.named;
        if self.more > 0 {
            out.push(format!("{} more {}", self.more, self.what));
        }
        out
    }
}

impl Builder {
    /// Warnings for a signed zone's chains and signatures (nothing for an unsigned zone).
    pub(super) fn check_dnssec(&mut self) {
        let zone = &self.zone;
        let Some(denial) = zone.denial.as_deref() else {
            return;
        };
        let mut unsigned = Findings::new("RRsets without signatures");
        let mut chain = Findings::new("NSEC/NSEC3 chain problems");
        for id in 0..zone.node_count() as NodeId {
            let node = zone.node(id);
            let f = node.flags();
            if f & (flags::BELOW_CUT | flags::BELOW_DNAME) != 0 {
                continue;
            }
            for set in node.rrsets() {
                // At a zone cut only the DS and the NSEC are the parent's, and signed.
                let signed_here =
                    f & flags::DELEGATION == 0 || matches!(set.rtype, RType::DS | RType::NSEC);
                if set.rtype != RType::RRSIG && signed_here && node.signatures(&set).is_none() {
                    unsigned.push(|| {
                        format!("{} {}: no RRSIG covers this RRset", node.name(), set.rtype)
                    });
                }
            }
            if denial.nsec3.is_none() && !node.is_empty() && node.rrset(RType::NSEC).is_none() {
                chain.push(|| format!("{}: no NSEC record at this name", node.name()));
            }
        }
        if let Some(nsec3) = &denial.nsec3 {
            for (i, (_, id)) in nsec3.chain.iter().enumerate() {
                let next = &nsec3.chain[(i + 1) % nsec3.chain.len()].0;
                let node = zone.node(*id);
                let Some(set) = node.rrset(RType::NSEC3) else {
                    continue;
                };
                let ok = set.rdatas().any(|d| next_hash(d) == Some(next.as_slice()));
                if !ok {
                    chain.push(|| {
                        let mut want = String::new();
                        let _ = text::write_base32hex(next, &mut want);
                        format!(
                            "{}: NSEC3 next hashed owner is not {} (the next hash of the chain): broken NSEC3 chain",
                            node.name(),
                            want.to_ascii_lowercase()
                        )
                    });
                }
            }
            for id in 0..zone.node_count() as NodeId {
                let node = zone.node(id);
                let f = node.flags();
                let insecure_cut = f & flags::DELEGATION != 0 && node.rrset(RType::DS).is_none();
                if f & (flags::BELOW_CUT | flags::BELOW_DNAME | flags::NSEC3_ONLY) != 0
                    || node.is_empty()
                    || insecure_cut
                    || nsec3.matching(id).is_some()
                {
                    continue;
                }
                chain.push(|| format!("{}: no NSEC3 matches this name", node.name()));
            }
        } else {
            let order = &denial.nsec;
            for (i, &id) in order.iter().enumerate() {
                let node = zone.node(id);
                let next = zone.node(order[(i + 1) % order.len()]).name();
                let Some(set) = node.rrset(RType::NSEC) else {
                    continue;
                };
                let ok = set
                    .rdatas()
                    .any(|d| NameRef::from_wire_prefix(d).is_ok_and(|(n, _)| n.eq_ci(&next)));
                if !ok {
                    chain.push(|| {
                        format!(
                            "{}: NSEC does not point to {next}, the next name with an NSEC in canonical order: broken NSEC chain",
                            node.name()
                        )
                    });
                }
            }
        }
        let mut messages = unsigned.into_messages();
        messages.extend(chain.into_messages());
        for m in messages {
            let d = self.zone_diag(m);
            self.warnings.push(d);
        }
    }
}

/// The next hashed owner field of NSEC3 rdata.
fn next_hash(rdata: &[u8]) -> Option<&[u8]> {
    let salt_len = *rdata.get(4)? as usize;
    let at = 5 + salt_len;
    let len = *rdata.get(at)? as usize;
    rdata.get(at + 1..at + 1 + len)
}

/// RFC 1982 serial comparison of RRSIG times (RFC 4034 §3.1.5): `a` is before `b`.
fn before(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < 1 << 31
}

impl Zone {
    /// Warnings for signatures that have expired or are not valid yet at `now` (seconds
    /// since 1970): served as they are, but a validator will reject them. The first few are
    /// named, the rest counted; nothing for an unsigned zone.
    pub fn signature_warnings(&self, now: u64) -> Vec<String> {
        if !self.is_signed() {
            return Vec::new();
        }
        let now = now as u32; // RRSIG times are 32-bit serial numbers.
        let mut expired = Findings::new("expired signatures");
        let mut early = Findings::new("signatures not valid yet");
        for id in 0..self.node_count() as NodeId {
            let node = self.node(id);
            for set in node.rrsets().filter(|s| s.rtype == RType::RRSIG) {
                for d in set.rdatas() {
                    let Some(t) = d.get(8..16) else { continue };
                    let expiration = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
                    let inception = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
                    let covered = RType(u16::from_be_bytes([d[0], d[1]]));
                    if before(expiration, now) {
                        expired.push(|| {
                            let mut s = format!("{} RRSIG {covered}: expired at ", node.name());
                            let _ = write_time(&mut s, expiration);
                            s
                        });
                    } else if before(now, inception) {
                        early.push(|| {
                            let mut s =
                                format!("{} RRSIG {covered}: not valid until ", node.name());
                            let _ = write_time(&mut s, inception);
                            s
                        });
                    }
                }
            }
        }
        let mut out = expired.into_messages();
        out.extend(early.into_messages());
        out
    }
}

fn write_time(s: &mut String, t: u32) -> std::fmt::Result {
    let mut buf = String::new();
    shardns_wire::rdata::write_rrsig_time(t, &mut buf)?;
    write!(s, "{buf} (served as it is; validators will reject it)")
}
