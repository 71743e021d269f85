//! The update section applied (RFC 2136 §3.4.2) to a copy of the names it touches, then
//! turned into the records deleted and added, and the serial moved once.
//!
//! Choices where the RFC leaves room (Knot's where Knot and BIND differ):
//!
//! - TTL: an RRset has one TTL (RFC 2181 §5.2). A record added to an RRset gives the whole
//!   RRset its TTL (as Knot's `node_add_rrset` does); a duplicate (the same record, names
//!   in rdata compared without regard to case) is ignored, its TTL too, as Knot's
//!   `process_add_normal` ignores it (the RFC's pseudo-code replaces the record).
//! - The apex SOA: replaced only by a higher serial (RFC 1982), ignored otherwise: a
//!   lower serial as §3.4.2.2 says, and the same serial as Knot does (the RFC would
//!   replace it). A serial exactly 2^31 away, whose order is undefined, is not higher.
//!   The serial then moves once by the policy unless the update set a higher one (Knot).
//! - CNAME beside other data (§3.4.2.2, RFC 2181 §10.1): an added CNAME at a name with
//!   other data is ignored, and other data at a CNAME is ignored; the DNSSEC types are not
//!   "other data". A CNAME added at a CNAME replaces it, and so does a DNAME at a DNAME
//!   (one record at most). As Knot: a DNAME added at a name with names below it that hold
//!   records is ignored, and so is any record but a DNAME added below a DNAME (RFC 6672
//!   §2.4: it would never be seen).
//! - The DNSSEC types (RRSIG, NSEC, NSEC3) are never touched: the prescan refuses them,
//!   and deleting all RRsets of a name leaves them (the signer's; see `prescan`).
//! - Deleting the last apex NS one record at a time: the delete that would leave none is
//!   ignored (§3.4.2.4), at the apex only (Knot's reading; the pseudo-code has no name
//!   test).

use super::prescan::dnssec_kept;
use super::{canonical, Change, Outcome, Rr};
use crate::db::Zone;
use crate::xfr::is_newer;
use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::{Class, Name, NameRef, RType};
use std::collections::{BTreeMap, HashMap};

/// How the serial moves when an update changes the zone (Knot's `serial-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SerialPolicy {
    /// Plus one (RFC 1982 arithmetic: 4294967295 is followed by 0).
    #[default]
    Increment,
    /// The time, seconds since 1970 (plus one when that is not higher).
    UnixTime,
    /// `YYYYMMDDnn` of the day (UTC; plus one when that is not higher).
    DateSerial,
}

impl SerialPolicy {
    /// The serial after `old` at `now` (seconds since 1970).
    pub fn next(self, old: u32, now: u64) -> u32 {
        let want = match self {
            Self::Increment => return old.wrapping_add(1),
            Self::UnixTime => now as u32,
            Self::DateSerial => date_serial(now),
        };
        if is_newer(want, old) {
            want
        } else {
            old.wrapping_add(1)
        }
    }
}

/// `YYYYMMDD00` of the UTC day of `now` (days to a civil date: H. Hinnant's algorithm).
fn date_serial(now: u64) -> u32 {
    let z = (now / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year * 1_000_000 + month * 10_000 + day * 100) as u32
}

/// The serial of an uncompressed SOA rdata (the third field, after two names).
pub(super) fn serial_of(soa: &[u8]) -> Option<u32> {
    let at = soa.len().checked_sub(20)?;
    Some(u32::from_be_bytes(soa[at..at + 4].try_into().ok()?))
}

fn set_serial(soa: &mut [u8], serial: u32) {
    let at = soa.len() - 20;
    soa[at..at + 4].copy_from_slice(&serial.to_be_bytes());
}

/// An RRset: TTL, and its records as the zone stores them (or as received when new).
#[derive(Clone, PartialEq, Eq)]
struct Set {
    ttl: u32,
    rdatas: Vec<Vec<u8>>,
}

/// A name the update touches: its RRsets before and after (the DNSSEC types and the apex
/// SOA left out: the update never changes them here).
struct Node {
    name: Name,
    old: BTreeMap<RType, Set>,
    new: BTreeMap<RType, Set>,
}

struct Work<'z> {
    zone: &'z Zone,
    nodes: HashMap<Vec<u8>, Node>,
    /// The names in the order first touched (the change's order).
    order: Vec<Vec<u8>>,
    /// The apex SOA (TTL, rdata) as the update leaves it.
    soa: (u32, Vec<u8>),
}

/// A name lower-cased, the key of [`Work::nodes`].
fn key(name: NameRef<'_>) -> Vec<u8> {
    let mut lower = [0u8; MAX_NAME_LEN];
    let n = name.lowercase_into(&mut lower);
    lower[..n].to_vec()
}

impl<'z> Work<'z> {
    fn node(&mut self, name: NameRef<'_>) -> &mut Node {
        let key = key(name);
        if !self.nodes.contains_key(&key) {
            let mut old = BTreeMap::new();
            if let Some(node) = self.zone.find(name) {
                for set in node.rrsets() {
                    if dnssec_kept(set.rtype) || set.rtype == RType::SOA {
                        continue;
                    }
                    let rdatas = set.rdatas().map(<[u8]>::to_vec).collect();
                    old.insert(
                        set.rtype,
                        Set {
                            ttl: set.ttl,
                            rdatas,
                        },
                    );
                }
            }
            let node = Node {
                name: name.to_name(),
                new: old.clone(),
                old,
            };
            self.order.push(key.clone());
            self.nodes.insert(key.clone(), node);
        }
        self.nodes.get_mut(&key).expect("inserted above")
    }

    fn is_apex(&self, name: NameRef<'_>) -> bool {
        name.eq_ci(&self.zone.apex())
    }

    /// Whether `name` holds records after the changes so far (its DNSSEC records, which
    /// an update never touches, count).
    fn has_data(&self, name: NameRef<'_>) -> bool {
        let node = self.zone.find(name);
        match self.nodes.get(&key(name)) {
            Some(n) => {
                !n.new.is_empty() || node.is_some_and(|z| z.rrsets().any(|s| dnssec_kept(s.rtype)))
            }
            None => node.is_some_and(|z| !z.is_empty()),
        }
    }

    /// Whether `name` holds an RRset of `rtype` after the changes so far.
    fn has_type(&self, name: NameRef<'_>, rtype: RType) -> bool {
        match self.nodes.get(&key(name)) {
            Some(n) => n.new.contains_key(&rtype),
            None => self
                .zone
                .find(name)
                .is_some_and(|z| z.rrset(rtype).is_some()),
        }
    }

    /// Whether a name above `name` (inside the zone) holds a DNAME.
    fn under_dname(&self, name: NameRef<'_>) -> bool {
        let apex = self.zone.apex();
        let mut up = name.parent();
        while let Some(p) = up.filter(|p| p.ends_with(&apex)) {
            if self.has_type(p, RType::DNAME) {
                return true;
            }
            up = p.parent();
        }
        false
    }

    /// Whether a name below `name` holds records after the changes so far (one pass over
    /// the zone's names: only for a DNAME added).
    fn subtree_has_data(&self, name: NameRef<'_>) -> bool {
        let below = |n: NameRef<'_>| n.len() > name.len() && n.ends_with(&name);
        (0..self.zone.node_count() as u32)
            .map(|id| self.zone.node(id).name())
            .any(|n| below(n) && self.has_data(n))
            || self
                .nodes
                .values()
                .any(|n| below(n.name.as_ref()) && !n.new.is_empty())
    }

    /// §3.4.2.2: add to an RRset.
    fn add(&mut self, rr: &Rr) {
        let name = rr.owner.as_ref();
        // A TTL with the top bit set is read as 0 (RFC 2181 §8), as a transfer reads it.
        let ttl = if rr.ttl > i32::MAX as u32 { 0 } else { rr.ttl };
        if rr.rtype == RType::SOA {
            // Only the apex has an SOA; a serial not higher than the zone's is ignored.
            if self.is_apex(name)
                && serial_of(&rr.rdata).is_some_and(|s| is_newer(s, self.zone.serial()))
            {
                self.soa = (ttl, rr.rdata.clone());
            }
            return;
        }
        // Data below a DNAME is never seen (RFC 6672 §2.4): ignored, as Knot does.
        if rr.rtype != RType::DNAME && self.under_dname(name) {
            return;
        }
        if rr.rtype == RType::DNAME && self.subtree_has_data(name) {
            return;
        }
        let node = self.node(name);
        let cname = node.new.contains_key(&RType::CNAME);
        if rr.rtype == RType::CNAME && node.new.keys().any(|&t| t != RType::CNAME) {
            return;
        }
        if rr.rtype != RType::CNAME && cname {
            return;
        }
        if matches!(rr.rtype, RType::CNAME | RType::DNAME) {
            // One record at most (RFC 1034 §3.6.2, RFC 6672 §2.4): a new one replaces it.
            node.new.insert(
                rr.rtype,
                Set {
                    ttl,
                    rdatas: vec![rr.rdata.clone()],
                },
            );
            return;
        }
        let set = node.new.entry(rr.rtype).or_insert(Set {
            ttl,
            rdatas: Vec::new(),
        });
        let data = canonical(rr.rtype, &rr.rdata);
        if let Some(i) = set.rdatas.iter().position(|d| {
            (rr.rtype == RType::WKS && d.get(..5).is_some() && d.get(..5) == rr.rdata.get(..5))
                || canonical(rr.rtype, d) == data
        }) {
            // A duplicate is ignored, its TTL too (Knot); a WKS of the same address and
            // protocol replaces the one there (§3.4.2.2).
            if rr.rtype == RType::WKS {
                set.rdatas[i] = rr.rdata.clone();
                set.ttl = ttl;
            }
            return;
        }
        // The new record's TTL becomes the RRset's (RFC 2181 §5.2; Knot so).
        set.ttl = ttl;
        set.rdatas.push(rr.rdata.clone());
    }

    /// §3.4.2.3: delete an RRset, or every RRset of a name.
    fn delete_set(&mut self, rr: &Rr) {
        let name = rr.owner.as_ref();
        let apex = self.is_apex(name);
        if apex && matches!(rr.rtype, RType::SOA | RType::NS) {
            return;
        }
        let node = self.node(name);
        if rr.rtype == RType::ANY {
            node.new.retain(|&t, _| apex && t == RType::NS);
        } else {
            node.new.remove(&rr.rtype);
        }
    }

    /// §3.4.2.4: delete one record.
    fn delete_rr(&mut self, rr: &Rr) {
        let name = rr.owner.as_ref();
        if rr.rtype == RType::SOA {
            return;
        }
        let apex = self.is_apex(name);
        let node = self.node(name);
        let Some(set) = node.new.get_mut(&rr.rtype) else {
            return;
        };
        let data = canonical(rr.rtype, &rr.rdata);
        let Some(i) = set
            .rdatas
            .iter()
            .position(|d| canonical(rr.rtype, d) == data)
        else {
            return;
        };
        if apex && rr.rtype == RType::NS && set.rdatas.len() == 1 {
            return;
        }
        set.rdatas.remove(i);
        if set.rdatas.is_empty() {
            node.new.remove(&rr.rtype);
        }
    }

    /// The records deleted and added, name by name, type by type.
    fn into_change(self, old_soa: (u32, Vec<u8>), soa: (u32, Vec<u8>)) -> Change {
        let mut deleted = Vec::new();
        let mut added = Vec::new();
        let mut nodes = self.nodes;
        for key in &self.order {
            let node = nodes.remove(key).expect("every touched name has a node");
            let types: std::collections::BTreeSet<RType> =
                node.old.keys().chain(node.new.keys()).copied().collect();
            for t in types {
                let (o, n) = (node.old.get(&t), node.new.get(&t));
                let same_ttl = matches!((o, n), (Some(o), Some(n)) if o.ttl == n.ttl);
                if let Some(o) = o {
                    for d in &o.rdatas {
                        if !(same_ttl && n.is_some_and(|n| n.rdatas.contains(d))) {
                            deleted.push((node.name.clone(), t, o.ttl, d.clone()));
                        }
                    }
                }
                if let Some(n) = n {
                    for d in &n.rdatas {
                        if !(same_ttl && o.is_some_and(|o| o.rdatas.contains(d))) {
                            added.push((node.name.clone(), t, n.ttl, d.clone()));
                        }
                    }
                }
            }
        }
        Change {
            deleted,
            added,
            old_soa,
            soa,
        }
    }
}

/// Applies the update section (prescanned) to `zone`; the serial moves by `policy` if
/// anything changed, unless the update set a higher one itself.
pub(super) fn apply(zone: &Zone, updates: &[Rr], policy: SerialPolicy, now: u64) -> Outcome {
    let soa_set = zone
        .apex_node()
        .rrset(RType::SOA)
        .expect("a built zone has an SOA");
    let old_soa = (
        soa_set.ttl,
        soa_set.rdatas().next().expect("one SOA record").to_vec(),
    );
    let mut work = Work {
        zone,
        nodes: HashMap::new(),
        order: Vec::new(),
        soa: old_soa.clone(),
    };
    for rr in updates {
        match rr.class {
            Class::ANY => work.delete_set(rr),
            Class::NONE => work.delete_rr(rr),
            _ => work.add(rr),
        }
    }
    let mut soa = work.soa.clone();
    let mut change = work.into_change(old_soa.clone(), soa.clone());
    if change.deleted.is_empty() && change.added.is_empty() && soa == old_soa {
        return Outcome::Unchanged;
    }
    let old = zone.serial();
    let set = serial_of(&soa.1).unwrap_or(old);
    if !is_newer(set, old) {
        set_serial(&mut soa.1, policy.next(old, now));
    }
    change.soa = soa;
    Outcome::Change(change)
}
