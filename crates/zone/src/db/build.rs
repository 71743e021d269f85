//! Building a [`Zone`] from scanned records: one node per owner (and per missing ancestor),
//! records grouped by node and merged into RRsets, derived node flags, then the checks of
//! [`super::check`]. A zone of 50,000 records or more has its RRsets merged on two scoped
//! threads, each on half of the nodes and writing its rdata straight into its own slice of
//! the zone's; then what the scan left is freed on a third while the zone is finished.
//! Interning owners reads the table slots of a block of new names together, so that a big
//! zone's cache and TLB misses overlap.

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
        let (zone, warnings) = Builder::new(apex, &scanned).run(scanned)?;
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

/// Records from which a zone's RRsets are merged on two threads.
const PARALLEL_MIN: usize = 50_000;

/// Records whose new owners' table slots are read ahead together while interning.
const LOOKAHEAD: usize = 64;

/// What a big zone's build frees on another thread (see [`Builder::run`]).
type Garbage = Box<dyn Send>;

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
        self.intern_hashed(name, name.hash_ci())
    }

    /// [`Builder::intern`] with the name's [`NameRef::hash_ci`] already computed.
    fn intern_hashed(&mut self, name: NameRef<'_>, h: u64) -> NodeId {
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

    /// A big zone is built with a thread beside it that frees what the build no longer
    /// needs (the file's text at once, the scanner's records after the RRsets are merged),
    /// a few milliseconds of unmapping each that this thread then does not wait for.
    fn run(self, scanned: Scanned) -> Result<(Zone, Vec<Diag>), LoadError> {
        let records: usize = scanned.chunks.iter().map(|c| c.items.len()).sum();
        if records < PARALLEL_MIN {
            return self.run_with(scanned, None);
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::channel::<Garbage>();
            // Without that thread (none could be started: `rx` is dropped with the
            // closure), what is sent comes back in the error and is freed here.
            let _ = std::thread::Builder::new()
                .name("free".into())
                .spawn_scoped(scope, move || rx.into_iter().for_each(drop));
            self.run_with(scanned, Some(&tx))
        })
    }

    fn run_with(
        mut self,
        mut scanned: Scanned,
        free: Option<&std::sync::mpsc::Sender<Garbage>>,
    ) -> Result<(Zone, Vec<Diag>), LoadError> {
        let discard = |g: Garbage| {
            if let Some(tx) = free {
                let _ = tx.send(g);
            }
        };
        discard(Box::new(std::mem::take(&mut scanned.text)));
        let chunks = &scanned.chunks;
        let apex = self.zone.apex.clone();
        self.intern(apex.as_ref());

        // 1. One node per owner; remember each record's node.
        let total: usize = chunks.iter().map(|c| c.items.len()).sum();
        let mut node_of: Vec<u32> = Vec::with_capacity(total);
        let mut srcs: Vec<Src> = Vec::with_capacity(total);
        // Per node: its records' rdata and lengths, the most its RRsets can take.
        let mut rdata_bytes: Vec<u64> = Vec::new();
        let mut hashes = [0u64; LOOKAHEAD];
        let mut slots = [0usize; LOOKAHEAD];
        // Whether each node's records come together, nodes in the order they were made
        // (as in most zone files): then the records are already grouped by node.
        let mut grouped = true;
        for (ci, chunk) in chunks.iter().enumerate() {
            let mut last: Option<(u32, u32)> = None;
            let mut prev_owner = u32::MAX;
            for (bi, block) in chunk.items.chunks(LOOKAHEAD).enumerate() {
                // The block's new owners are hashed and their table slots read first, all
                // before any is interned: the reads do not depend on one another, so their
                // cache and TLB misses overlap instead of coming one name at a time (in a
                // big zone nearly every new name's slot is a miss).
                let mask = self.arrays.table.len() - 1;
                let mut n = 0;
                for (k, item) in block.iter().enumerate() {
                    if item.owner != prev_owner {
                        prev_owner = item.owner;
                        let h = chunk.owner(item).hash_ci();
                        hashes[k] = h;
                        slots[n] = h as usize & mask;
                        n += 1;
                    }
                }
                let mut touched = 0u32;
                for &i in &slots[..n] {
                    touched |= self.arrays.table[i];
                }
                std::hint::black_box(touched);
                for (k, item) in block.iter().enumerate() {
                    let id = match last {
                        Some((off, id)) if off == item.owner => id,
                        _ => {
                            let owner = chunk.owner(item);
                            if !owner.ends_with(&apex.as_ref()) {
                                // The scanner skips these with a warning; stay safe regardless.
                                continue;
                            }
                            // Hashed above unless the item before had the same owner.
                            let h = if k > 0 && block[k - 1].owner == item.owner
                                || k == 0
                                    && bi > 0
                                    && chunk.items[bi * LOOKAHEAD - 1].owner == item.owner
                            {
                                owner.hash_ci()
                            } else {
                                hashes[k]
                            };
                            self.intern_hashed(owner, h)
                        }
                    };
                    last = Some((item.owner, id));
                    if id as usize >= rdata_bytes.len() {
                        rdata_bytes.resize(self.arrays.nodes.len(), 0);
                    }
                    rdata_bytes[id as usize] += 2 + u64::from(item.rdlen);
                    grouped &= node_of.last().is_none_or(|&before| before <= id);
                    node_of.push(id);
                    srcs.push(Src {
                        chunk: ci as u32,
                        item: (bi * LOOKAHEAD + k) as u32,
                    });
                }
            }
        }

        rdata_bytes.resize(self.arrays.nodes.len(), 0);
        // 2. Group records by node (counting sort keeps file order inside a node); records
        //    that come grouped already are left where they are (`order` stays empty).
        let n = self.arrays.nodes.len();
        let kept = node_of.len();
        let mut start = vec![0u32; n + 1];
        for &id in &node_of {
            start[id as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut order = Vec::new();
        if !grouped {
            order = vec![0u32; kept];
            let mut fill = start.clone();
            for (r, &id) in node_of.iter().enumerate() {
                order[fill[id as usize] as usize] = r as u32;
                fill[id as usize] += 1;
            }
        }
        drop(node_of);

        // A big zone's RRsets are merged on two threads, and what is left freed on another.
        let big = kept >= PARALLEL_MIN;
        // 3. Per node: sort by type, merge into RRsets, drop duplicates, check TTLs; two
        //    threads on halves of the nodes, each into its own buffers, then appended.
        let mut rdata: Vec<u8>;
        let parts = {
            let inputs = SetInputs {
                chunks,
                srcs: &srcs,
                order: &order,
                start: &start,
                files: &self.files,
                arrays: &self.arrays,
            };
            let half = start.partition_point(|&s| (s as usize) < kept / 2).min(n);
            // Each part writes its rdata straight into its own slice of the zone's (zeroed
            // memory: pages the records do not fill are never touched); a part's slice is
            // as long as its records' rdata and lengths, so the part after it can start
            // writing at once, and in a zone without duplicates the slices meet exactly.
            let bound = |ids: std::ops::Range<usize>| -> usize {
                rdata_bytes[ids].iter().map(|&b| b as usize).sum()
            };
            if !big {
                rdata = vec![0u8; bound(0..n)];
                vec![inputs.build(0..n, &mut rdata, 0, total)]
            } else {
                let first_len = bound(0..half);
                rdata = vec![0u8; first_len + bound(half..n)];
                let (first_out, second_out) = rdata.split_at_mut(first_len);
                let second_records = (start[n] - start[half]) as usize;
                std::thread::scope(|scope| {
                    let inputs = &inputs;
                    let second = scope.spawn(move || {
                        inputs.build(half..n, second_out, first_len, second_records)
                    });
                    // The first part's RRsets are the zone's: room for the second's too.
                    let first = inputs.build(0..half, first_out, 0, total);
                    vec![first, second.join().expect("RRset builder thread")]
                })
            }
        };
        drop(rdata_bytes);
        // What the scan left and the indexes above are not read again.
        discard(Box::new((scanned, order, srcs)));
        self.assemble(parts, rdata)
    }

    /// Step 4: the parts' RRsets appended in node order, then [`Builder::finish`].
    fn assemble(
        mut self,
        parts: Vec<Part>,
        rdata: Vec<u8>,
    ) -> Result<(Zone, Vec<Diag>), LoadError> {
        self.arrays.rdata = rdata;
        let mut next_node = 0usize;
        // Where the next part's rdata goes: where the one before ended.
        let mut rdata_end = 0usize;
        for (i, part) in parts.into_iter().enumerate() {
            let a = &mut self.arrays;
            let sets_base = a.rrsets.len() as u32;
            // A part that wrote less than its slice's length (duplicates, records in
            // error) leaves a gap that the next part's rdata is moved down over.
            let shift = (part.rdata_at - rdata_end) as u32;
            if shift > 0 {
                a.rdata
                    .copy_within(part.rdata_at..part.rdata_at + part.rdata_len, rdata_end);
            }
            rdata_end += part.rdata_len;
            if i == 0 {
                // The first part's RRsets are the zone's as they are (with room for the
                // rest): taken, not copied.
                a.rrsets = part.rrsets;
            } else {
                a.rrsets.extend(part.rrsets.iter().map(|e| RRsetEntry {
                    rdata: e.rdata - shift,
                    ..*e
                }));
            }
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
        self.arrays.rdata.truncate(rdata_end);
        self.finish()
    }

    /// [`Builder::run`] for records grouped by owner ([`Zone::build_sorted`]): each name's
    /// RRsets are merged as its records are read, and `src` is told what was read.
    fn run_sorted<S: SortedRecords>(mut self, src: &mut S) -> Result<(Zone, Vec<Diag>), LoadError> {
        let apex = self.zone.apex.clone();
        self.intern(apex.as_ref());
        let n = src.len();
        let rdata_len: usize = (0..n).map(|i| 2 + src.rdata(i).len()).sum();
        // Room for every record; what is dropped (duplicates, errors) is cut at the end.
        let mut rdata = vec![0u8; rdata_len];
        let mut out = RdataOut::new(&mut rdata, 0);
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
                    &mut out,
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
        let len = out.len;
        rdata.truncate(len);
        self.arrays.rdata = rdata;
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
    /// Record indices grouped by node: node `i`'s are `order[start[i]..start[i + 1]]`;
    /// empty when the records came grouped (then node `i`'s are `start[i]..start[i + 1]`).
    order: &'a [u32],
    start: &'a [u32],
    files: &'a [PathBuf],
    arrays: &'a Arrays,
}

/// The RRsets of a range of nodes, with offsets local to this part.
#[derive(Default)]
struct Part {
    rrsets: Vec<RRsetEntry>,
    /// Where this part's slice of the zone's rdata starts, and how much of it was written.
    rdata_at: usize,
    rdata_len: usize,
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

    /// Merges the RRsets of nodes `ids`, writing their rdata into `out`, the slice of the
    /// zone's rdata that starts at `out_at` (as long as the records' rdata and lengths, so
    /// it has room whatever is dropped). `sets_room`: the room to reserve for RRsets.
    fn build(
        &self,
        ids: std::ops::Range<usize>,
        out: &mut [u8],
        out_at: usize,
        sets_room: usize,
    ) -> Part {
        let mut part = Part {
            rrsets: Vec::with_capacity(sets_room),
            nodes: Vec::with_capacity(ids.len()),
            rdata_at: out_at,
            ..Part::default()
        };
        let mut out = RdataOut::new(out, out_at);
        let mut recs: Vec<(u32, Src)> = Vec::new();
        let mut seen = Vec::new();
        for id in ids {
            let (a, b) = (self.start[id] as usize, self.start[id + 1] as usize);
            recs.clear();
            recs.extend((a..b).map(|x| {
                let r = if self.order.is_empty() {
                    x as u32
                } else {
                    self.order[x]
                };
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
                &mut out,
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
        part.rdata_len = out.len;
        part
    }
}

/// Where a build writes RRsets' rdata: a slice of the zone's rdata with room for every
/// record, starting at offset `base` of it; `len` octets written so far.
struct RdataOut<'a> {
    buf: &'a mut [u8],
    base: usize,
    len: usize,
}

impl<'a> RdataOut<'a> {
    fn new(buf: &'a mut [u8], base: usize) -> Self {
        Self { buf, base, len: 0 }
    }
}

/// Merges one node's records, sorted by [`set_key`], into RRsets appended to `rrsets`, their
/// rdata written on in `out` (each record a 2-octet length and the data). Bad rdata is an
/// error; identical records collapse (RFC 2181 §5); a TTL other than the set's first
/// record's is a warning and the first is kept (§5.2). `rec` gives a record's TTL and rdata, `report` takes a
/// record's error (`true`) or warning; `seen` is scratch.
fn merge_sets<'d, R: Copy>(
    recs: &[(u32, R)],
    rec: impl Fn(R) -> (u32, &'d [u8]),
    mut report: impl FnMut(R, String, bool),
    rrsets: &mut Vec<RRsetEntry>,
    out: &mut RdataOut<'_>,
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
        let entry_at = (out.base + out.len) as u32;
        let mut count = 0u16;
        seen.clear();
        for &(_, s) in &recs[i..j] {
            let (item_ttl, data) = rec(s);
            if let Err(e) = rdata::validate(rtype, data) {
                report(s, format!("{rtype}: {e}"), true);
                continue;
            }
            // RFC 2181 §5: an RRset is a set; identical records collapse.
            if seen.iter().any(|&(at, len)| &out.buf[at..at + len] == data) {
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
            let at = out.len;
            out.buf[at..at + 2].copy_from_slice(&(data.len() as u16).to_be_bytes());
            out.buf[at + 2..at + 2 + data.len()].copy_from_slice(data);
            seen.push((at + 2, data.len()));
            out.len = at + 2 + data.len();
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
