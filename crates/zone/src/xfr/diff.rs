//! The differences between two versions of a zone, the unit of a journal and of an
//! incremental zone transfer (RFC 1995): the records deleted and the records added between
//! two serials, with the SOA of each end.
//!
//! [`Diff::compute`] compares two versions node by node and RRset by RRset: each node of the
//! new version is looked up in the old one by name (a hash lookup) and the nodes of the old
//! version missing from the new one are found the same way, so the cost is one pass over
//! each version; RRsets are merged in their stored order (type, RRSIGs after the type they
//! cover), and only RRsets that differ have their records sorted and merged. Nothing is
//! compared record against record across the zone.
//!
//! A diff is one buffer, in the order an IXFR sends it (RFC 1995 §4): the old SOA, the
//! deletions, the new SOA, the additions; each record uncompressed (owner, type, TTL,
//! rdata length, rdata). The same bytes are what a journal keeps on disk
//! ([`Diff::bytes`], [`Diff::from_bytes`]). [`Diff::condense`] joins consecutive diffs
//! into one (the condensed form of RFC 1995 §5), and [`History`] keeps the latest diffs of
//! a zone within a depth and a size.
//!
//! Sans-I/O.

use super::super::db::{set_key, Zone};
use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::{rdata, NameRef, RType};
use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

/// Octets before the records: from, to, deletions, additions.
const HEAD: usize = 16;

/// The records deleted and added between two versions of a zone.
#[derive(Clone, PartialEq, Eq)]
pub struct Diff {
    bytes: Vec<u8>,
}

impl fmt::Debug for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Diff({} -> {}, -{} +{}, {} octets)",
            self.from(),
            self.to(),
            self.deleted(),
            self.added(),
            self.bytes.len()
        )
    }
}

/// One record of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffRecord<'a> {
    /// The owner, in the case the zone holds it.
    pub owner: NameRef<'a>,
    /// Type.
    pub rtype: RType,
    /// TTL.
    pub ttl: u32,
    /// Uncompressed rdata.
    pub rdata: &'a [u8],
}

/// Appends one record in a diff's form.
fn put(out: &mut Vec<u8>, owner: NameRef<'_>, rtype: RType, ttl: u32, data: &[u8]) {
    out.extend_from_slice(owner.as_wire());
    out.extend_from_slice(&rtype.0.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    out.extend_from_slice(&(data.len() as u16).to_be_bytes());
    out.extend_from_slice(data);
}

/// Reads the record at `at`; `None` if the bytes do not hold one.
fn get(bytes: &[u8], at: usize) -> Option<(DiffRecord<'_>, usize)> {
    let (owner, len) = NameRef::from_wire_prefix(bytes.get(at..)?).ok()?;
    let p = at + len;
    let fixed = bytes.get(p..p + 8)?;
    let rtype = RType(u16::from_be_bytes([fixed[0], fixed[1]]));
    let ttl = u32::from_be_bytes([fixed[2], fixed[3], fixed[4], fixed[5]]);
    let rdlen = u16::from_be_bytes([fixed[6], fixed[7]]) as usize;
    let rdata = bytes.get(p + 8..p + 8 + rdlen)?;
    Some((
        DiffRecord {
            owner,
            rtype,
            ttl,
            rdata,
        },
        p + 8 + rdlen,
    ))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The SOA serial of an uncompressed SOA rdata.
fn soa_serial(soa: &[u8]) -> Option<u32> {
    let mut at = 0;
    for _ in 0..2 {
        let (_, len) = NameRef::from_wire_prefix(soa.get(at..)?).ok()?;
        at += len;
    }
    Some(u32::from_be_bytes(soa.get(at..at + 4)?.try_into().ok()?))
}

/// Builds a diff: the old SOA, deletions, the new SOA, additions, each counted.
struct Builder {
    deleted: Vec<u8>,
    added: Vec<u8>,
    ndel: u32,
    nadd: u32,
}

impl Builder {
    fn new() -> Self {
        Self {
            deleted: Vec::new(),
            added: Vec::new(),
            ndel: 0,
            nadd: 0,
        }
    }

    fn delete(&mut self, owner: NameRef<'_>, rtype: RType, ttl: u32, data: &[u8]) {
        put(&mut self.deleted, owner, rtype, ttl, data);
        self.ndel += 1;
    }

    fn add(&mut self, owner: NameRef<'_>, rtype: RType, ttl: u32, data: &[u8]) {
        put(&mut self.added, owner, rtype, ttl, data);
        self.nadd += 1;
    }

    fn finish(self, old_soa: DiffRecord<'_>, new_soa: DiffRecord<'_>) -> Diff {
        let from = soa_serial(old_soa.rdata).unwrap_or(0);
        let to = soa_serial(new_soa.rdata).unwrap_or(0);
        let mut bytes = Vec::with_capacity(
            HEAD + self.deleted.len() + self.added.len() + 2 * (old_soa.rdata.len() + 64),
        );
        for n in [from, to, self.ndel, self.nadd] {
            bytes.extend_from_slice(&n.to_be_bytes());
        }
        put(
            &mut bytes,
            old_soa.owner,
            RType::SOA,
            old_soa.ttl,
            old_soa.rdata,
        );
        bytes.extend_from_slice(&self.deleted);
        put(
            &mut bytes,
            new_soa.owner,
            RType::SOA,
            new_soa.ttl,
            new_soa.rdata,
        );
        bytes.extend_from_slice(&self.added);
        Diff { bytes }
    }
}

/// The apex SOA of a built zone, as a diff record.
fn zone_soa(zone: &Zone) -> DiffRecord<'_> {
    let apex = zone.apex_node();
    let soa = apex.rrset(RType::SOA).expect("a built zone has an SOA");
    DiffRecord {
        owner: apex.name(),
        rtype: RType::SOA,
        ttl: soa.ttl,
        rdata: soa.rdatas().next().expect("an SOA RRset has one record"),
    }
}

/// The per-owner step of [`Diff::compute`], its buffers kept from one name to the next.
#[derive(Default)]
struct Scratch<'z> {
    old_sets: Vec<(u32, crate::db::RRset<'z>)>,
    new_sets: Vec<(u32, crate::db::RRset<'z>)>,
    old_data: Vec<&'z [u8]>,
    new_data: Vec<&'z [u8]>,
}

impl<'z> Scratch<'z> {
    /// The records deleted and added at `owner`, which the old version holds as `was` and
    /// the new one as `now` (the apex SOA left out: it is the diff's two ends).
    fn owner(
        &mut self,
        b: &mut Builder,
        owner: NameRef<'_>,
        was: Option<crate::db::NodeRef<'z>>,
        now: Option<crate::db::NodeRef<'z>>,
    ) {
        let keyed = |set: &crate::db::RRset<'_>| {
            set_key(set.rtype, set.rdatas().next().unwrap_or_default())
        };
        let (old_sets, new_sets) = (&mut self.old_sets, &mut self.new_sets);
        new_sets.clear();
        if let Some(node) = now {
            let apex = node.id() == 0;
            new_sets.extend(
                node.rrsets()
                    .filter(|s| !(apex && s.rtype == RType::SOA))
                    .map(|s| (keyed(&s), s)),
            );
        }
        old_sets.clear();
        if let Some(was) = was {
            let apex = was.id() == 0;
            old_sets.extend(
                was.rrsets()
                    .filter(|s| !(apex && s.rtype == RType::SOA))
                    .map(|s| (keyed(&s), s)),
            );
        }
        let (old_data, new_data) = (&mut self.old_data, &mut self.new_data);
        let (mut i, mut j) = (0, 0);
        while i < old_sets.len() || j < new_sets.len() {
            let order = match (old_sets.get(i), new_sets.get(j)) {
                (Some(a), Some(n)) => a.0.cmp(&n.0),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            match order {
                Ordering::Less => {
                    let s = old_sets[i].1;
                    for d in s.rdatas() {
                        b.delete(owner, s.rtype, s.ttl, d);
                    }
                    i += 1;
                }
                Ordering::Greater => {
                    let s = new_sets[j].1;
                    for d in s.rdatas() {
                        b.add(owner, s.rtype, s.ttl, d);
                    }
                    j += 1;
                }
                Ordering::Equal => {
                    let (a, n) = (old_sets[i].1, new_sets[j].1);
                    i += 1;
                    j += 1;
                    if a.ttl == n.ttl && a.len() == n.len() && a.rdatas().eq(n.rdatas()) {
                        continue;
                    }
                    if a.ttl != n.ttl {
                        // A new TTL: the whole RRset goes and comes back.
                        for d in a.rdatas() {
                            b.delete(owner, a.rtype, a.ttl, d);
                        }
                        for d in n.rdatas() {
                            b.add(owner, n.rtype, n.ttl, d);
                        }
                        continue;
                    }
                    old_data.clear();
                    old_data.extend(a.rdatas());
                    old_data.sort_unstable();
                    new_data.clear();
                    new_data.extend(n.rdatas());
                    new_data.sort_unstable();
                    let (mut x, mut y) = (0, 0);
                    while x < old_data.len() || y < new_data.len() {
                        let o = match (old_data.get(x), new_data.get(y)) {
                            (Some(p), Some(q)) => p.cmp(q),
                            (Some(_), None) => Ordering::Less,
                            _ => Ordering::Greater,
                        };
                        match o {
                            Ordering::Less => {
                                b.delete(owner, a.rtype, a.ttl, old_data[x]);
                                x += 1;
                            }
                            Ordering::Greater => {
                                b.add(owner, n.rtype, n.ttl, new_data[y]);
                                y += 1;
                            }
                            Ordering::Equal => {
                                x += 1;
                                y += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}

impl Diff {
    /// The differences from `old` to `new` (two versions of the same zone). The apex SOA
    /// is not among the records deleted and added: it is the diff's two ends.
    pub fn compute(old: &Zone, new: &Zone) -> Diff {
        let mut b = Builder::new();
        let mut scratch = Scratch::default();
        for id in 0..new.node_count() as u32 {
            let node = new.node(id);
            scratch.owner(&mut b, node.name(), old.find(node.name()), Some(node));
        }
        // Names the new version no longer has.
        for id in 0..old.node_count() as u32 {
            let node = old.node(id);
            if node.is_empty() || new.find(node.name()).is_some() {
                continue;
            }
            scratch.owner(&mut b, node.name(), Some(node), None);
        }
        b.finish(zone_soa(old), zone_soa(new))
    }

    /// [`Diff::compute`] when only the names `owners` (in either version) may differ, as
    /// after a dynamic update: the work follows the change, not the zone. The same records
    /// as `compute` (a name given twice, in any case, is compared once).
    pub fn compute_at<'n>(
        old: &Zone,
        new: &Zone,
        owners: impl IntoIterator<Item = NameRef<'n>>,
    ) -> Diff {
        let mut b = Builder::new();
        let mut scratch = Scratch::default();
        let mut seen = std::collections::HashSet::new();
        for owner in owners {
            if !seen.insert(owner.to_name().as_wire().to_ascii_lowercase()) {
                continue;
            }
            let (was, now) = (old.find(owner), new.find(owner));
            // The owner as the version that has it spells it.
            let name = match (&now, &was) {
                (Some(n), _) => n.name(),
                (None, Some(w)) => w.name(),
                (None, None) => continue,
            };
            scratch.owner(&mut b, name, was, now);
        }
        b.finish(zone_soa(old), zone_soa(new))
    }

    /// A diff read back from [`Diff::bytes`] (a journal): every record is checked to be
    /// whole, the two SOAs to be SOAs with the serials the head names.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Diff, String> {
        if bytes.len() < HEAD {
            return Err("shorter than a diff's head".into());
        }
        let (from, to) = (u32_at(&bytes, 0), u32_at(&bytes, 4));
        let (ndel, nadd) = (u32_at(&bytes, 8) as u64, u32_at(&bytes, 12) as u64);
        let mut at = HEAD;
        let total = ndel + nadd + 2;
        for k in 0..total {
            let (r, next) = get(&bytes, at).ok_or_else(|| format!("record {k} is cut short"))?;
            let soa_at = if k == 0 {
                Some(from)
            } else if k == ndel + 1 {
                Some(to)
            } else {
                None
            };
            if let Some(serial) = soa_at {
                if r.rtype != RType::SOA || soa_serial(r.rdata) != Some(serial) {
                    return Err(format!("record {k} is not the SOA of serial {serial}"));
                }
            }
            at = next;
        }
        if at != bytes.len() {
            return Err(format!("{} octets after the last record", bytes.len() - at));
        }
        Ok(Diff { bytes })
    }

    /// The diff's bytes (what [`Diff::from_bytes`] reads).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The serial it starts from.
    pub fn from(&self) -> u32 {
        u32_at(&self.bytes, 0)
    }

    /// The serial it ends at.
    pub fn to(&self) -> u32 {
        u32_at(&self.bytes, 4)
    }

    /// Records deleted.
    pub fn deleted(&self) -> u32 {
        u32_at(&self.bytes, 8)
    }

    /// Records added.
    pub fn added(&self) -> u32 {
        u32_at(&self.bytes, 12)
    }

    /// Octets it holds.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True if no record but the SOA changed.
    pub fn is_empty(&self) -> bool {
        self.deleted() == 0 && self.added() == 0
    }

    /// Every record in IXFR order: the old SOA, the deletions, the new SOA, the additions.
    pub fn records(&self) -> impl Iterator<Item = DiffRecord<'_>> + '_ {
        let mut at = HEAD;
        let total = 2 + self.deleted() as u64 + self.added() as u64;
        (0..total).map(move |_| {
            let (r, next) = get(&self.bytes, at).expect("a diff holds whole records");
            at = next;
            r
        })
    }

    /// The record at offset `at` of the records (0 is the first), and the offset of the
    /// next; `None` past the last. For writers that resume where a message ended.
    pub fn record_at(&self, at: usize) -> Option<(DiffRecord<'_>, usize)> {
        let (r, next) = get(&self.bytes, HEAD + at)?;
        Some((r, next - HEAD))
    }

    /// One diff from the first's start to the last's end (`diffs` consecutive: each
    /// starts at the serial the one before ends at), in the condensed form (RFC 1995 §5):
    /// a record added then deleted is in neither list, one deleted then added back (same
    /// TTL) likewise. Records are sorted by owner (lowercase wire form), type and rdata.
    pub fn condense(diffs: &[Arc<Diff>]) -> Option<Diff> {
        let (first, last) = (diffs.first()?, diffs.last()?);
        if diffs.len() == 1 {
            return Some((**first).clone());
        }
        type Key = (Vec<u8>, RType, Vec<u8>);
        let key = |r: &DiffRecord<'_>| -> Key {
            let mut lower = [0u8; MAX_NAME_LEN];
            let n = r.owner.lowercase_into(&mut lower);
            (lower[..n].to_vec(), r.rtype, r.rdata.to_vec())
        };
        // Per record: owner as written, TTL.
        let mut deleted: HashMap<Key, (Vec<u8>, u32)> = HashMap::new();
        let mut added: HashMap<Key, (Vec<u8>, u32)> = HashMap::new();
        for d in diffs {
            let (ndel, mut k) = (d.deleted() as u64, 0u64);
            for r in d.records() {
                k += 1;
                if k == 1 || k == ndel + 2 {
                    continue; // the SOAs
                }
                let key = key(&r);
                if k <= ndel + 1 {
                    if added.remove(&key).is_none() {
                        deleted.insert(key, (r.owner.as_wire().to_vec(), r.ttl));
                    }
                } else {
                    match deleted.get(&key) {
                        Some((_, ttl)) if *ttl == r.ttl => {
                            deleted.remove(&key);
                        }
                        _ => {
                            added.insert(key, (r.owner.as_wire().to_vec(), r.ttl));
                        }
                    }
                }
            }
        }
        let mut b = Builder::new();
        let mut deleted: Vec<_> = deleted.into_iter().collect();
        deleted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for ((_, rtype, data), (owner, ttl)) in &deleted {
            let (owner, _) = NameRef::from_wire_prefix(owner).ok()?;
            b.delete(owner, *rtype, *ttl, data);
        }
        let mut added: Vec<_> = added.into_iter().collect();
        added.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for ((_, rtype, data), (owner, ttl)) in &added {
            let (owner, _) = NameRef::from_wire_prefix(owner).ok()?;
            b.add(owner, *rtype, *ttl, data);
        }
        let old_soa = first.records().next()?;
        let new_soa = last.records().nth(last.deleted() as usize + 1)?;
        Some(b.finish(old_soa, new_soa))
    }

    /// The records as zone-file text, one a line: `-` before a deletion, `+` before an
    /// addition (the SOAs included). For logs and tests.
    pub fn to_text(&self) -> String {
        let ndel = self.deleted() as usize;
        let mut out = String::new();
        for (k, r) in self.records().enumerate() {
            let sign = if k <= ndel { '-' } else { '+' };
            let mut text = String::new();
            let _ = rdata::fmt_text(r.rtype, r.rdata, &mut text);
            out.push_str(&format!("{sign}{} {} {} {text}\n", r.owner, r.ttl, r.rtype));
        }
        out
    }
}

/// The latest diffs of one zone, oldest first, each starting where the one before ends,
/// within a depth (number of diffs) and a size (octets): the oldest go first.
#[derive(Debug, Clone, Default)]
pub struct History {
    diffs: VecDeque<Arc<Diff>>,
    bytes: usize,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `diff` after the last one (a diff that does not start where the last ends
    /// starts the history anew), then drops the oldest until at most `max_depth` diffs of
    /// `max_bytes` octets in all are left. Returns how many were dropped.
    pub fn push(&mut self, diff: Arc<Diff>, max_depth: usize, max_bytes: usize) -> usize {
        let mut dropped = 0;
        if self.last_serial().is_some_and(|s| s != diff.from()) {
            dropped += self.diffs.len();
            self.diffs.clear();
            self.bytes = 0;
        }
        self.bytes += diff.len();
        self.diffs.push_back(diff);
        dropped + self.trim(max_depth, max_bytes)
    }

    /// Drops the oldest diffs until at most `max_depth` of `max_bytes` octets are left.
    pub fn trim(&mut self, max_depth: usize, max_bytes: usize) -> usize {
        let mut dropped = 0;
        while !self.diffs.is_empty() && (self.diffs.len() > max_depth || self.bytes > max_bytes) {
            if let Some(d) = self.diffs.pop_front() {
                self.bytes -= d.len();
                dropped += 1;
            }
        }
        dropped
    }

    /// The diffs, oldest first.
    pub fn diffs(&self) -> impl Iterator<Item = &Arc<Diff>> + '_ {
        self.diffs.iter()
    }

    /// Number of diffs.
    pub fn depth(&self) -> usize {
        self.diffs.len()
    }

    /// Octets the diffs hold.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The oldest serial it reaches back to.
    pub fn first_serial(&self) -> Option<u32> {
        self.diffs.front().map(|d| d.from())
    }

    /// The serial of the latest version.
    pub fn last_serial(&self) -> Option<u32> {
        self.diffs.back().map(|d| d.to())
    }

    /// The changes from `client` to `current`, condensed into one diff, if the history
    /// reaches back to `client` and ends at `current`.
    pub fn since(&self, client: u32, current: u32) -> Option<Arc<Diff>> {
        if self.last_serial() != Some(current) {
            return None;
        }
        let start = self.diffs.iter().rposition(|d| d.from() == client)?;
        let steps: Vec<Arc<Diff>> = self.diffs.iter().skip(start).cloned().collect();
        if steps.len() == 1 {
            return steps.into_iter().next();
        }
        Diff::condense(&steps).map(Arc::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load_zone_text, ScanOptions};
    use std::path::Path;

    fn zone(text: &str) -> Zone {
        let opts = ScanOptions::new("example.test.".parse().unwrap());
        load_zone_text(text.as_bytes(), Path::new("t"), &opts)
            .unwrap()
            .0
    }

    const BASE: &str = "$ORIGIN example.test.\n$TTL 300\n\
        @ SOA ns hostmaster 1 3600 600 86400 300\n\
        @ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\nwww A 192.0.2.3\nmail MX 10 mx\nold TXT gone\n";

    fn with_serial(text: &str, serial: u32) -> String {
        text.replace(" 1 3600 ", &format!(" {serial} 3600 "))
    }

    #[test]
    fn compute_finds_only_what_changed() {
        let old = zone(BASE);
        let new_text = with_serial(BASE, 2)
            .replace("www A 192.0.2.3\n", "www A 192.0.2.4\n")
            .replace("old TXT gone\n", "new TXT here\n")
            .replace("mail MX 10 mx\n", "mail 600 MX 10 mx\n");
        let new = zone(&new_text);
        let d = Diff::compute(&old, &new);
        assert_eq!((d.from(), d.to()), (1, 2));
        let text = d.to_text();
        assert_eq!(d.deleted(), 3, "{text}");
        assert_eq!(d.added(), 3, "{text}");
        for line in [
            "-www.example.test. 300 A 192.0.2.3",
            "-old.example.test. 300 TXT \"gone\"",
            "-mail.example.test. 300 MX 10 mx.example.test.",
            "+www.example.test. 300 A 192.0.2.4",
            "+new.example.test. 300 TXT \"here\"",
            "+mail.example.test. 600 MX 10 mx.example.test.",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        assert!(text.starts_with("-example.test. 300 SOA"), "{text}");
        // Read back.
        let back = Diff::from_bytes(d.bytes().to_vec()).unwrap();
        assert_eq!(back, d);
        assert!(Diff::from_bytes(d.bytes()[..d.len() - 1].to_vec()).is_err());
        // Nothing changed but the serial.
        let same = Diff::compute(&old, &zone(&with_serial(BASE, 3)));
        assert!(same.is_empty());
    }

    #[test]
    fn compute_at_the_changed_names_equals_compute() {
        let old = zone(BASE);
        let new = zone(
            &with_serial(BASE, 2)
                .replace("www A 192.0.2.3\n", "www A 192.0.2.4\n")
                .replace("old TXT gone\n", "new TXT here\na.b.c TXT deep\n")
                .replace("mail MX 10 mx\n", "mail 600 MX 10 mx\n"),
        );
        let names: Vec<shardns_wire::Name> = ["WWW", "old", "new", "mail", "www", "a.b.c"]
            .iter()
            .map(|n| format!("{n}.example.test.").parse().unwrap())
            .collect();
        let at = Diff::compute_at(&old, &new, names.iter().map(|n| n.as_ref()));
        let whole = Diff::compute(&old, &new);
        let sorted = |d: &Diff| {
            let mut lines: Vec<String> = d.to_text().lines().map(str::to_string).collect();
            lines.sort();
            lines
        };
        assert_eq!(sorted(&at), sorted(&whole));
        assert_eq!((at.deleted(), at.added(), at.len()), (3, 4, whole.len()));
        // Names that did not change, or that neither version has, add nothing.
        let none: Vec<shardns_wire::Name> = ["ns.example.test.", "nowhere.example.test."]
            .iter()
            .map(|n| n.parse().unwrap())
            .collect();
        assert!(Diff::compute_at(&old, &new, none.iter().map(|n| n.as_ref())).is_empty());
    }

    #[test]
    fn condense_cancels_and_history_reaches_back() {
        let v1 = zone(BASE);
        let v2 = zone(&with_serial(BASE, 2).replace("old TXT gone\n", "tmp TXT t\n"));
        let v3 =
            zone(&with_serial(BASE, 3).replace("old TXT gone\n", "old TXT gone\nx A 192.0.2.9\n"));
        let d1 = Arc::new(Diff::compute(&v1, &v2));
        let d2 = Arc::new(Diff::compute(&v2, &v3));
        let c = Diff::condense(&[d1.clone(), d2.clone()]).unwrap();
        assert_eq!((c.from(), c.to()), (1, 3));
        // tmp came and went, old went and came back: only x is new.
        assert_eq!((c.deleted(), c.added()), (0, 1), "{}", c.to_text());
        assert_eq!(c, Diff::compute(&v1, &v3));
        let mut h = History::new();
        assert_eq!(h.push(d1.clone(), 10, 1 << 20), 0);
        assert_eq!(h.push(d2.clone(), 10, 1 << 20), 0);
        assert_eq!(h.since(1, 3).unwrap().to(), 3);
        assert_eq!(h.since(2, 3).unwrap(), d2);
        assert!(h.since(0, 3).is_none());
        assert!(h.since(1, 4).is_none());
        assert_eq!(
            h.push(d1.clone(), 10, 1 << 20),
            2,
            "a diff that does not follow"
        );
        assert_eq!(h.depth(), 1);
        h.push(d2, 1, 1 << 20);
        assert_eq!((h.depth(), h.first_serial()), (1, Some(2)));
        assert_eq!(h.trim(1, 10), 1);
    }
}
