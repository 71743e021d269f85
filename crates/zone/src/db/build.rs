//! Building a [`Zone`] from scanned records: one node per owner (and per missing ancestor),
//! records grouped by node and merged into RRsets, derived node flags, then the checks of
//! [`super::check`]. A zone of 50,000 records or more has its RRsets merged on two scoped
//! threads, each on half of the nodes.

use super::store::{Arrays, Node, RRsetEntry, Store, Zone};
use super::{flags, NodeId, NONE};
use crate::scan::{Diag, LoadError, Records, Scanned};
use shardns_wire::name::hash_ci;
use shardns_wire::{rdata, Name, NameRef, RType};
use std::path::PathBuf;

impl Zone {
    /// Builds a zone from scanned records and checks it (see the `check` module: CNAME and
    /// DNAME rules, one SOA and some NS at the apex, addresses for in-zone name servers).
    /// Any error rejects the zone; warnings are returned with it.
    pub fn build(apex: Name, scanned: Scanned) -> Result<(Zone, Vec<Diag>), LoadError> {
        let (zone, warnings) = Builder::new(apex, &scanned).run(&scanned)?;
        drop(scanned);
        Ok((zone.packed(), warnings))
    }

    /// Builds a zone, as [`Zone::build`] does, from records that come grouped by owner
    /// (every record of a name next to the others, as in canonical order: a signer's
    /// output), read once, in order, so that `records` can free what was read
    /// ([`SortedRecords::consumed`]) while the zone grows: the records and the zone built
    /// from them are not held whole together. `files` and `warnings` are the source's, as
    /// in [`Scanned`]; diagnostics name the first file, line 0. Records of a name that come
    /// apart are an error. The zone is the one [`Zone::build`] makes of the same records.
    pub fn build_sorted<S: SortedRecords>(
        apex: Name,
        mut records: S,
        files: Vec<PathBuf>,
        warnings: Vec<Diag>,
    ) -> Result<(Zone, Vec<Diag>), LoadError> {
        let (zone, warnings) =
            Builder::with(apex, records.len(), files, warnings).run_sorted(&mut records)?;
        drop(records);
        Ok((zone.packed(), warnings))
    }

    /// Packed if small, else its arrays trimmed to their length.
    fn packed(mut self) -> Zone {
        self.pack();
        if let Store::Split(a) = &mut self.store {
            a.names.shrink_to_fit();
            a.nodes.shrink_to_fit();
            a.rrsets.shrink_to_fit();
            a.rdata.shrink_to_fit();
        }
        self
    }
}

/// Records grouped by owner, for [`Zone::build_sorted`]: read by index, in order, once.
pub trait SortedRecords {
    /// Number of records.
    fn len(&self) -> usize;
    /// True if there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Record `i`'s owner.
    fn owner(&self, i: usize) -> NameRef<'_>;
    /// Record `i`'s type.
    fn rtype(&self, i: usize) -> RType;
    /// Record `i`'s TTL.
    fn ttl(&self, i: usize) -> u32;
    /// Record `i`'s rdata.
    fn rdata(&self, i: usize) -> &[u8];
    /// The records before `i` will not be read again: what holds only them may be freed.
    fn consumed(&mut self, _i: usize) {}
}

/// How many records [`Zone::build_sorted`] reads between two calls of
/// [`SortedRecords::consumed`].
const CONSUMED_STEP: usize = 1 << 16;

/// A zone being built, with what its checks found.
pub(super) struct Builder {
    /// The zone's apex and the fields its checks set; its store stays empty until the
    /// RRsets are merged, then holds `arrays` (see [`Builder::run`]).
    pub(super) zone: Zone,
    /// The five arrays being filled, read and written directly (not through the zone's
    /// [`Store`]): every owner is looked up here, and a big zone's are served as they are.
    arrays: Arrays,
    /// Errors found so far: any one rejects the zone.
    pub(super) diags: Vec<Diag>,
    /// Warnings found so far (the scanner's first), returned with the zone.
    pub(super) warnings: Vec<Diag>,
    /// The files read, for diagnostics: the zone file first.
    pub(super) files: Vec<PathBuf>,
    /// The parent of the last new node: (its wire length, its id).
    last_parent: (usize, NodeId),
}

/// Where a record came from, for diagnostics.
#[derive(Clone, Copy)]
struct Src {
    chunk: u32,
    item: u32,
}

impl Builder {
    fn new(apex: Name, scanned: &Scanned) -> Self {
        let total: usize = scanned.chunks.iter().map(|c| c.items.len()).sum();
        Self::with(apex, total, scanned.files.clone(), scanned.warnings.clone())
    }

    /// A builder for a zone of about `records` records.
    fn with(apex: Name, records: usize, files: Vec<PathBuf>, warnings: Vec<Diag>) -> Self {
        // Nodes are at most the records plus their empty ancestors; start near the records.
        let cap = (records / 2).max(16).next_power_of_two() * 2;
        Self {
            zone: Zone {
                apex,
                store: Store::Split(Box::default()),
                soa_ttl: 0,
                soa_minimum: 0,
                denial: None,
                unavailable: false,
            },
            arrays: Arrays {
                table: vec![0; cap],
                ..Arrays::default()
            },
            diags: Vec::new(),
            warnings,
            files,
            last_parent: (0, NONE),
        }
    }

    pub(super) fn zone_diag(&self, msg: String) -> Diag {
        Diag {
            file: self.files.first().cloned().unwrap_or_default(),
            line: 0,
            message: msg,
        }
    }

    /// Finds or inserts the node for `name` (and its missing ancestors down to the apex).
    fn intern(&mut self, name: NameRef<'_>) -> NodeId {
        let h = name.hash_ci();
        if let Some(id) = self.arrays.find_hashed(name, h) {
            return id;
        }
        let parent = match name.parent() {
            Some(p) if name.len() > self.zone.apex.as_wire().len() => {
                // Owners come grouped: most share the previous new name's parent.
                let (cached, id) = self.last_parent;
                if id != NONE && self.arrays.name_wire(id) == p.as_wire() && cached == p.len() {
                    id
                } else {
                    let id = self.intern(p);
                    self.last_parent = (p.len(), id);
                    id
                }
            }
            _ => NONE,
        };
        if (self.arrays.nodes.len() + 1) * 2 > self.arrays.table.len() {
            self.grow();
        }
        let a = &mut self.arrays;
        let id = a.nodes.len() as u32;
        a.nodes.push(Node {
            name: a.names.len() as u32,
            rrsets: 0,
            parent,
            hash: (h >> 32) as u32,
            nrrsets: 0,
            name_len: name.len() as u8,
            flags: 0,
        });
        a.names.extend_from_slice(name.as_wire());
        a.insert_slot(h, id);
        id
    }

    fn grow(&mut self) {
        let a = &mut self.arrays;
        a.table = vec![0; a.table.len() * 2];
        for id in 0..a.nodes.len() as NodeId {
            let h = hash_ci(a.name_wire(id));
            a.insert_slot(h, id);
        }
    }

    fn run(mut self, scanned: &Scanned) -> Result<(Zone, Vec<Diag>), LoadError> {
        let chunks = &scanned.chunks;
        let apex = self.zone.apex.clone();
        self.intern(apex.as_ref());

        // 1. One node per owner; remember each record's node.
        let total: usize = chunks.iter().map(|c| c.items.len()).sum();
        let mut node_of: Vec<u32> = Vec::with_capacity(total);
        let mut srcs: Vec<Src> = Vec::with_capacity(total);
        for (ci, chunk) in chunks.iter().enumerate() {
            let mut last: Option<(u32, u32)> = None;
            for (ii, item) in chunk.items.iter().enumerate() {
                let id = match last {
                    Some((off, id)) if off == item.owner => id,
                    _ => {
                        let owner = chunk.owner(item);
                        if !owner.ends_with(&apex.as_ref()) {
                            // The scanner skips these with a warning; stay safe regardless.
                            continue;
                        }
                        self.intern(owner)
                    }
                };
                last = Some((item.owner, id));
                node_of.push(id);
                srcs.push(Src {
                    chunk: ci as u32,
                    item: ii as u32,
                });
            }
        }

        // 2. Group records by node (counting sort keeps file order inside a node).
        let n = self.arrays.nodes.len();
        let mut start = vec![0u32; n + 1];
        for &id in &node_of {
            start[id as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut order = vec![0u32; node_of.len()];
        let mut fill = start.clone();
        for (r, &id) in node_of.iter().enumerate() {
            order[fill[id as usize] as usize] = r as u32;
            fill[id as usize] += 1;
        }
        drop(node_of);

        // 3. Per node: sort by type, merge into RRsets, drop duplicates, check TTLs; two
        //    threads on halves of the nodes, each into its own buffers, then appended.
        let parts = {
            let inputs = SetInputs {
                chunks,
                srcs: &srcs,
                order: &order,
                start: &start,
                files: &self.files,
                arrays: &self.arrays,
            };
            let half = start
                .partition_point(|&s| (s as usize) < order.len() / 2)
                .min(n);
            if order.len() < 50_000 {
                vec![inputs.build(0..n)]
            } else {
                std::thread::scope(|scope| {
                    let inputs = &inputs;
                    let second = scope.spawn(move || inputs.build(half..n));
                    let first = inputs.build(0..half);
                    vec![first, second.join().expect("RRset builder thread")]
                })
            }
        };
        drop(order);
        drop(srcs);
        let mut next_node = 0usize;
        for part in parts {
            let a = &mut self.arrays;
            let sets_base = a.rrsets.len() as u32;
            let rdata_base = a.rdata.len() as u32;
            if a.rdata.is_empty() {
                a.rdata = part.rdata;
            } else {
                a.rdata.extend_from_slice(&part.rdata);
            }
            a.rrsets.extend(part.rrsets.iter().map(|e| RRsetEntry {
                rdata: e.rdata + rdata_base,
                ..*e
            }));
            for (local, count, f) in part.nodes {
                let node = &mut a.nodes[next_node];
                node.rrsets = sets_base + local;
                node.nrrsets = count;
                node.flags |= f;
                next_node += 1;
            }
            self.diags.extend(part.diags);
            self.warnings.extend(part.warnings);
        }

        self.finish()
    }

    /// [`Builder::run`] for records grouped by owner ([`Zone::build_sorted`]): each name's
    /// RRsets are merged as its records are read, and `src` is told what was read.
    fn run_sorted<S: SortedRecords>(mut self, src: &mut S) -> Result<(Zone, Vec<Diag>), LoadError> {
        let apex = self.zone.apex.clone();
        self.intern(apex.as_ref());
        let n = src.len();
        let rdata_len: usize = (0..n).map(|i| 2 + src.rdata(i).len()).sum();
        self.arrays.rdata.reserve_exact(rdata_len);
        self.arrays.rrsets.reserve(n);
        let file = self.files.first().cloned().unwrap_or_default();
        let mut recs: Vec<(u32, usize)> = Vec::new();
        let mut seen = Vec::new();
        let mut next = CONSUMED_STEP;
        let mut i = 0;
        while i < n {
            let records = &*src;
            let owner = records.owner(i);
            let mut j = i + 1;
            while j < n && records.owner(j).eq_ci(&owner) {
                j += 1;
            }
            // The scanner and the signer keep out-of-zone names away; stay safe regardless.
            if owner.ends_with(&apex.as_ref()) {
                let id = self.intern(owner);
                if self.arrays.nodes[id as usize].nrrsets != 0 {
                    self.diags.push(Diag {
                        file: file.clone(),
                        line: 0,
                        message: format!("{owner}: its records do not come together"),
                    });
                }
                recs.clear();
                recs.extend((i..j).map(|k| (set_key(records.rtype(k), records.rdata(k)), k)));
                recs.sort_by_key(|(key, _)| *key);
                let node_start = self.arrays.rrsets.len();
                let (diags, warnings) = (&mut self.diags, &mut self.warnings);
                merge_sets(
                    &recs,
                    |k| (records.ttl(k), records.rdata(k)),
                    |_, message, error| {
                        let d = Diag {
                            file: file.clone(),
                            line: 0,
                            message,
                        };
                        if error {
                            diags.push(d);
                        } else {
                            warnings.push(d);
                        }
                    },
                    &mut self.arrays.rrsets,
                    &mut self.arrays.rdata,
                    &mut seen,
                );
                let sets = &self.arrays.rrsets[node_start..];
                let (f, problems) = super::check::node_checks(sets, id == 0);
                for p in problems.into_iter().flatten() {
                    self.diags.push(Diag {
                        file: file.clone(),
                        line: 0,
                        message: format!("{owner}: {p}"),
                    });
                }
                let count = sets.len() as u16;
                let node = &mut self.arrays.nodes[id as usize];
                node.rrsets = node_start as u32;
                node.nrrsets = count;
                node.flags |= f;
            }
            i = j;
            if i >= next {
                src.consumed(i);
                next = i + CONSUMED_STEP;
            }
        }
        src.consumed(n);
        self.finish()
    }

    /// Flags, then the zone-wide checks on the zone as it will be served.
    fn finish(mut self) -> Result<(Zone, Vec<Diag>), LoadError> {
        self.set_flags();
        // The checks read the zone as it will be served.
        self.zone.store = Store::Split(Box::new(std::mem::take(&mut self.arrays)));
        self.check_zone();
        self.zone.denial = self.zone.denial_index().map(Box::new);
        self.check_dnssec();
        if self.diags.is_empty() {
            Ok((self.zone, self.warnings))
        } else {
            self.diags
                .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
            Err(LoadError { errors: self.diags })
        }
    }

    /// Derived flags: wildcard children, data below cuts and DNAMEs. Parents are always
    /// interned before their children, so one pass in index order sees parents first.
    fn set_flags(&mut self) {
        for id in 0..self.arrays.nodes.len() {
            // The leftmost label is `*` (RFC 4592).
            let wildcard = self.arrays.name_wire(id as NodeId).starts_with(&[1, b'*']);
            let nodes = &mut self.arrays.nodes;
            let node = nodes[id];
            if node.parent == NONE {
                continue;
            }
            let p = nodes[node.parent as usize];
            let mut f = 0;
            if p.flags & (flags::DELEGATION | flags::BELOW_CUT) != 0 {
                f |= flags::BELOW_CUT;
            }
            if p.flags & (flags::DNAME | flags::BELOW_DNAME) != 0 {
                f |= flags::BELOW_DNAME;
            }
            nodes[id].flags |= f;
            // A name with descendants exists, whatever it holds.
            nodes[node.parent as usize].flags &= !flags::NSEC3_ONLY;
            if wildcard {
                nodes[node.parent as usize].flags |= flags::WILDCARD_CHILD;
            }
        }
    }
}

/// The order of a node's RRsets, and what makes records one set: by type, except that the
/// RRSIGs covering a type form a set of their own, right after the set they cover (RFC 4035
/// §3.1.1 serves them together; each has its own TTL, RFC 4034 §3).
pub(crate) fn set_key(rtype: RType, rdata: &[u8]) -> u32 {
    match rdata {
        [hi, lo, ..] if rtype == RType::RRSIG => u32::from(u16::from_be_bytes([*hi, *lo])) << 1 | 1,
        _ => u32::from(rtype.0) << 1,
    }
}

/// The record type of a [`set_key`].
fn key_type(key: u32) -> RType {
    if key & 1 == 1 {
        RType::RRSIG
    } else {
        RType((key >> 1) as u16)
    }
}

/// Step 3's read-only inputs, shared by the threads that build RRsets.
struct SetInputs<'a> {
    chunks: &'a [Records],
    srcs: &'a [Src],
    /// Record indices grouped by node: node `i`'s are `order[start[i]..start[i + 1]]`.
    order: &'a [u32],
    start: &'a [u32],
    files: &'a [PathBuf],
    arrays: &'a Arrays,
}

/// The RRsets of a range of nodes, with offsets local to this part.
#[derive(Default)]
struct Part {
    rrsets: Vec<RRsetEntry>,
    rdata: Vec<u8>,
    /// Per node of the range: first RRset (local), RRset count, flags.
    nodes: Vec<(u32, u16, u8)>,
    diags: Vec<Diag>,
    warnings: Vec<Diag>,
}

impl SetInputs<'_> {
    fn diag(&self, src: Src, message: String) -> Diag {
        let item = &self.chunks[src.chunk as usize].items[src.item as usize];
        Diag {
            file: self
                .files
                .get(item.file as usize)
                .cloned()
                .unwrap_or_default(),
            line: item.line,
            message,
        }
    }

    fn build(&self, ids: std::ops::Range<usize>) -> Part {
        let records = (self.start[ids.end] - self.start[ids.start]) as usize;
        let mut part = Part {
            rrsets: Vec::with_capacity(records),
            nodes: Vec::with_capacity(ids.len()),
            ..Part::default()
        };
        let rdata_len: usize = self.order
            [self.start[ids.start] as usize..self.start[ids.end] as usize]
            .iter()
            .map(|&r| {
                let s = self.srcs[r as usize];
                2 + self.chunks[s.chunk as usize].items[s.item as usize].rdlen as usize
            })
            .sum();
        part.rdata.reserve_exact(rdata_len);
        let mut recs: Vec<(u32, Src)> = Vec::new();
        let mut seen = Vec::new();
        for id in ids {
            let (a, b) = (self.start[id] as usize, self.start[id + 1] as usize);
            recs.clear();
            recs.extend(self.order[a..b].iter().map(|&r| {
                let s = self.srcs[r as usize];
                let chunk = &self.chunks[s.chunk as usize];
                let item = &chunk.items[s.item as usize];
                (set_key(item.rtype, chunk.rdata(item)), s)
            }));
            let first_in_file = recs.first().map(|r| r.1);
            recs.sort_by_key(|(k, _)| *k);
            let node_start = part.rrsets.len();
            merge_sets(
                &recs,
                |s: Src| {
                    let chunk = &self.chunks[s.chunk as usize];
                    let item = &chunk.items[s.item as usize];
                    (item.ttl, chunk.rdata(item))
                },
                |s, message, error| {
                    let d = self.diag(s, message);
                    if error {
                        part.diags.push(d);
                    } else {
                        part.warnings.push(d);
                    }
                },
                &mut part.rrsets,
                &mut part.rdata,
                &mut seen,
            );
            let sets = &part.rrsets[node_start..];
            let (f, problems) = super::check::node_checks(sets, id == 0);
            if problems.iter().any(Option::is_some) {
                let name = NameRef::from_wire_prefix(self.arrays.name_wire(id as NodeId))
                    .map_or_else(|_| String::new(), |(n, _)| n.to_string());
                let src = first_in_file.expect("a node with problems has records");
                for p in problems.into_iter().flatten() {
                    part.diags.push(self.diag(src, format!("{name}: {p}")));
                }
            }
            part.nodes.push((node_start as u32, sets.len() as u16, f));
        }
        part
    }
}

/// Merges one node's records, sorted by [`set_key`], into RRsets appended to `rrsets` and
/// `rdata` (each record a 2-octet length and the data). Bad rdata is an error; identical
/// records collapse (RFC 2181 §5); a TTL other than the set's first record's is a warning
/// and the first is kept (§5.2). `rec` gives a record's TTL and rdata, `report` takes a
/// record's error (`true`) or warning; `seen` is scratch.
fn merge_sets<'d, R: Copy>(
    recs: &[(u32, R)],
    rec: impl Fn(R) -> (u32, &'d [u8]),
    mut report: impl FnMut(R, String, bool),
    rrsets: &mut Vec<RRsetEntry>,
    rdata: &mut Vec<u8>,
    seen: &mut Vec<(usize, usize)>,
) {
    let mut i = 0;
    while i < recs.len() {
        let key = recs[i].0;
        let rtype = key_type(key);
        let mut j = i;
        while j < recs.len() && recs[j].0 == key {
            j += 1;
        }
        let ttl = rec(recs[i].1).0;
        let entry_at = rdata.len() as u32;
        let mut count = 0u16;
        seen.clear();
        for &(_, s) in &recs[i..j] {
            let (item_ttl, data) = rec(s);
            if let Err(e) = rdata::validate(rtype, data) {
                report(s, format!("{rtype}: {e}"), true);
                continue;
            }
            // RFC 2181 §5: an RRset is a set; identical records collapse.
            if seen.iter().any(|&(at, len)| &rdata[at..at + len] == data) {
                continue;
            }
            if item_ttl != ttl {
                report(
                    s,
                    format!("{rtype} TTL {item_ttl} differs from the RRset's TTL {ttl}; using {ttl} (RFC 2181 §5.2)"),
                    false,
                );
            }
            if count == u16::MAX {
                report(s, format!("too many {rtype} records at one name"), true);
                break;
            }
            seen.push((rdata.len() + 2, data.len()));
            rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
            rdata.extend_from_slice(data);
            count += 1;
        }
        if count > 0 {
            rrsets.push(RRsetEntry {
                rtype,
                count,
                ttl,
                rdata: entry_at,
            });
        }
        i = j;
    }
}

/// A signer's output ([`shardns_dnssec::sign_list`]: canonical order) as it is; the blocks
/// of signatures read are freed as the zone is built.
impl SortedRecords for shardns_dnssec::RecordList {
    fn len(&self) -> usize {
        self.items.len()
    }
    fn owner(&self, i: usize) -> NameRef<'_> {
        shardns_dnssec::RecordList::owner(self, &self.items[i])
    }
    fn rtype(&self, i: usize) -> RType {
        self.items[i].rtype
    }
    fn ttl(&self, i: usize) -> u32 {
        self.items[i].ttl
    }
    fn rdata(&self, i: usize) -> &[u8] {
        shardns_dnssec::RecordList::rdata(self, &self.items[i])
    }
    fn consumed(&mut self, i: usize) {
        self.release_before(i);
    }
}

impl<T: SortedRecords + ?Sized> SortedRecords for &mut T {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn owner(&self, i: usize) -> NameRef<'_> {
        (**self).owner(i)
    }
    fn rtype(&self, i: usize) -> RType {
        (**self).rtype(i)
    }
    fn ttl(&self, i: usize) -> u32 {
        (**self).ttl(i)
    }
    fn rdata(&self, i: usize) -> &[u8] {
        (**self).rdata(i)
    }
    fn consumed(&mut self, i: usize) {
        (**self).consumed(i)
    }
}
