//! Building a [`Zone`] from scanned records: one node per owner (and per missing ancestor),
//! records grouped by node and merged into RRsets (`sets`, with the per-node checks),
//! derived node flags, then the checks of [`super::check`] and the denial index of a signed
//! zone (`denial`). A zone of 50,000 records or more has its RRsets merged on two scoped
//! threads, each on half of the nodes and writing its rdata straight into its own slice of
//! the zone's; then what the scan left is freed on a third while the zone is finished.
//! Interning owners reads the table slots of a block of new names together, so that a big
//! zone's cache and TLB misses overlap. `sorted` builds from records grouped by owner (a
//! signer's output) instead.

mod denial;
mod sets;
mod sorted;

pub(super) use sets::node_checks;
use sets::{Part, SetInputs};
pub use sorted::SortedRecords;

use super::store::{Arrays, Node, RRsetEntry, Split, Store, Zone};
use super::{flags, NodeId, NONE};
use crate::error::Error;
use crate::scan::{Diag, Records, Scanned};
use shardns_wire::name::hash_ci;
use shardns_wire::{Name, NameRef, RType};
use std::path::PathBuf;

impl Zone {
    /// Builds a zone from scanned records and checks it (see `node_checks`: CNAME and
    /// DNAME rules; and the `check` module: one SOA and some NS at the apex, addresses for
    /// in-zone name servers).
    /// Any error rejects the zone; warnings are returned with it.
    pub fn build(apex: Name, scanned: Scanned) -> Result<(Zone, Vec<Diag>), Error> {
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
    ) -> Result<(Zone, Vec<Diag>), Error> {
        let (zone, warnings) =
            Builder::with(apex, records.len(), files, warnings).run_sorted(&mut records)?;
        drop(records);
        Ok((zone.packed(), warnings))
    }

    /// Packed if small (else paged, as [`Builder::finish`] left it).
    fn packed(mut self) -> Zone {
        self.pack();
        self
    }
}

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
    fn run(self, scanned: Scanned) -> Result<(Zone, Vec<Diag>), Error> {
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
    ) -> Result<(Zone, Vec<Diag>), Error> {
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
        let Owners {
            node_of,
            srcs,
            rdata_bytes,
            grouped,
        } = self.intern_owners(chunks, &apex, total);

        // 2. Group records by node (counting sort keeps file order inside a node); records
        //    that come grouped already are left where they are (`order` stays empty).
        let n = self.arrays.nodes.len();
        let kept = node_of.len();
        let (start, order) = group_by_node(n, &node_of, grouped);
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

    /// Step 1: one node per owner (the apex's already made); each record's node and
    /// source, and per node the most its RRsets' rdata can take.
    #[inline]
    fn intern_owners(&mut self, chunks: &[Records], apex: &Name, total: usize) -> Owners {
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
        Owners {
            node_of,
            srcs,
            rdata_bytes,
            grouped,
        }
    }

    /// Step 4: the parts' RRsets appended in node order, then [`Builder::finish`].
    fn assemble(mut self, parts: Vec<Part>, rdata: Vec<u8>) -> Result<(Zone, Vec<Diag>), Error> {
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

    /// Flags, then the zone-wide checks on the zone as it will be served.
    fn finish(mut self) -> Result<(Zone, Vec<Diag>), Error> {
        self.set_flags();
        // The checks read the zone as it will be served.
        let arrays = std::mem::take(&mut self.arrays);
        self.zone.store = Store::Split(Box::new(Split::from_arrays(arrays, 0)));
        self.check_zone();
        self.zone.denial = self.zone.denial_index().map(Box::new);
        self.check_dnssec();
        if self.diags.is_empty() {
            Ok((self.zone, self.warnings))
        } else {
            self.diags
                .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
            Err(Error::Invalid { errors: self.diags })
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

/// Step 2 of [`Builder::run_with`]: where each of the `n` nodes' records start once grouped
/// by node (one more entry than nodes), and the record indices in that order (counting sort,
/// file order kept inside a node); `order` is empty when the records are `grouped` already.
#[inline]
fn group_by_node(n: usize, node_of: &[u32], grouped: bool) -> (Vec<u32>, Vec<u32>) {
    let kept = node_of.len();
    let mut start = vec![0u32; n + 1];
    for &id in node_of {
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
    (start, order)
}

/// What step 1 of [`Builder::run_with`] found: per record its node and source, per node
/// the most its RRsets' rdata can take, and whether the records came grouped by node.
struct Owners {
    node_of: Vec<u32>,
    srcs: Vec<Src>,
    rdata_bytes: Vec<u64>,
    grouped: bool,
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
