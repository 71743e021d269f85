//! The immutable zone snapshot and the set of zones a server answers for.
//!
//! A [`Zone`] is built once per load and then only read, by every worker, without a lock;
//! a reload builds a new one and the server swaps a pointer. Names are found through an
//! open-addressing hash table keyed by the case-insensitive hash of the name, so a lookup
//! costs O(1) per label whatever the zone's size; each node knows its parent, whether it is
//! a delegation point, lies below a zone cut, or has a wildcard child. Every ancestor of
//! every owner down to the apex exists as a node (empty non-terminals included), which is
//! what makes closest-encloser search and RFC 4592 wildcard matching exact.
//!
//! Never: sockets, clocks, locks, or allocation on the lookup path.

use crate::scan::{Diag, LoadError, Records, Scanned};
use shardns_wire::name::hash_ci;
use shardns_wire::{rdata, Class, Name, NameRef, RType, Record};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Index of a node in a zone.
pub type NodeId = u32;
const NONE: u32 = u32::MAX;

/// Node flags.
pub(crate) mod flags {
    /// Holds NS records and is not the apex: a zone cut.
    pub(crate) const DELEGATION: u8 = 1;
    /// Some proper ancestor (below the apex) is a zone cut: the data here is glue or occluded.
    pub(crate) const BELOW_CUT: u8 = 2;
    /// `*.<this node>` exists.
    pub(crate) const WILDCARD_CHILD: u8 = 4;
    /// Holds a DNAME record.
    pub(crate) const DNAME: u8 = 8;
    /// Some proper ancestor holds a DNAME: the name is occluded (RFC 6672 §2.4).
    pub(crate) const BELOW_DNAME: u8 = 16;
    /// Holds a CNAME record.
    pub(crate) const CNAME: u8 = 32;
    /// Holds only NSEC3 records (and RRSIGs) and has no descendants: the name does not exist
    /// for lookups (RFC 5155 §7.2.8, erratum 4622).
    pub(crate) const NSEC3_ONLY: u8 = 64;
}

#[derive(Debug, Clone, Copy)]
struct Node {
    /// Offset of the name (wire form, as first written in the zone file) in `names`.
    name: u32,
    /// First RRset in `rrsets`.
    rrsets: u32,
    /// The parent node, `NONE` for the apex.
    parent: u32,
    /// High 32 bits of the name's hash, checked before comparing names.
    hash: u32,
    /// Number of RRsets (0 for an empty non-terminal).
    nrrsets: u16,
    name_len: u8,
    flags: u8,
}

/// One RRset: same owner, type and class.
#[derive(Debug, Clone, Copy)]
struct RRsetEntry {
    rtype: RType,
    count: u16,
    ttl: u32,
    /// Offset in `rdata` of the first record; each record is a 2-octet length and the data.
    rdata: u32,
}

/// A borrowed RRset.
#[derive(Clone, Copy, Debug)]
pub struct RRset<'a> {
    /// Type.
    pub rtype: RType,
    /// TTL (one per RRset, RFC 2181 §5.2).
    pub ttl: u32,
    count: u16,
    data: &'a [u8],
}

impl<'a> RRset<'a> {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    /// True if the set has no records (never, for a stored set).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Each record's rdata, uncompressed wire form.
    pub fn rdatas(&self) -> RdataIter<'a> {
        RdataIter {
            data: self.data,
            left: self.count,
        }
    }
}

/// Iterator over the rdata of an RRset.
#[derive(Clone)]
pub struct RdataIter<'a> {
    data: &'a [u8],
    left: u16,
}

impl<'a> Iterator for RdataIter<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let len = u16::from_be_bytes([self.data[0], self.data[1]]) as usize;
        let r = &self.data[2..2 + len];
        self.data = &self.data[2 + len..];
        Some(r)
    }
}

/// One zone, built once per load and then only read.
#[derive(Debug)]
pub struct Zone {
    apex: Name,
    names: Vec<u8>,
    nodes: Vec<Node>,
    /// Open-addressing table: node index + 1, 0 = empty. Size is a power of two.
    table: Vec<u32>,
    rrsets: Vec<RRsetEntry>,
    rdata: Vec<u8>,
    /// The SOA's TTL and MINIMUM, for negative answers (RFC 2308 §3).
    soa_ttl: u32,
    soa_minimum: u32,
}

impl Zone {
    /// The zone's five arrays as (address, length in bytes), for a server that wants to ask
    /// the kernel to back big zones with huge pages: a lookup touches a few cache lines in
    /// each, spread over the whole array, so with 4 KiB pages a big zone misses the TLB on
    /// nearly every one.
    pub fn arrays(&self) -> [(*const u8, usize); 5] {
        fn span<T>(v: &[T]) -> (*const u8, usize) {
            (v.as_ptr().cast(), size_of_val(v))
        }
        [
            span(&self.names),
            span(&self.nodes),
            span(&self.table),
            span(&self.rrsets),
            span(&self.rdata),
        ]
    }
}

/// A handle to a node of a zone.
#[derive(Clone, Copy, Debug)]
pub struct NodeRef<'a> {
    zone: &'a Zone,
    id: NodeId,
}

impl<'a> NodeRef<'a> {
    /// The node's index.
    pub fn id(&self) -> NodeId {
        self.id
    }
    fn node(&self) -> &'a Node {
        &self.zone.nodes[self.id as usize]
    }
    /// The owner name, in the case first written in the zone file.
    pub fn name(&self) -> NameRef<'a> {
        let n = self.node();
        let wire = &self.zone.names[n.name as usize..n.name as usize + n.name_len as usize];
        NameRef::from_wire_prefix(wire)
            .expect("zone stores valid names")
            .0
    }
    pub(crate) fn flags(&self) -> u8 {
        self.node().flags
    }
    /// The parent node (`None` at the apex).
    pub fn parent(&self) -> Option<NodeRef<'a>> {
        let p = self.node().parent;
        (p != NONE).then_some(NodeRef {
            zone: self.zone,
            id: p,
        })
    }
    /// True for an empty non-terminal.
    pub fn is_empty(&self) -> bool {
        self.node().nrrsets == 0
    }
    /// All RRsets, in type order.
    pub fn rrsets(&self) -> impl Iterator<Item = RRset<'a>> + 'a {
        let n = *self.node();
        let zone = self.zone;
        (n.rrsets..n.rrsets + n.nrrsets as u32).map(move |i| zone.rrset(i))
    }
    /// The RRset of one type.
    #[inline]
    pub fn rrset(&self, rtype: RType) -> Option<RRset<'a>> {
        let n = self.node();
        let sets = &self.zone.rrsets[n.rrsets as usize..n.rrsets as usize + n.nrrsets as usize];
        // Few RRsets per node: a short scan over a sorted run beats a search.
        sets.iter()
            .position(|s| s.rtype == rtype)
            .map(|i| self.zone.rrset(n.rrsets + i as u32))
    }
}

impl Zone {
    /// The apex name.
    pub fn apex(&self) -> NameRef<'_> {
        self.apex.as_ref()
    }

    /// Number of names (nodes), empty non-terminals included.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of records.
    pub fn record_count(&self) -> usize {
        self.rrsets.iter().map(|s| s.count as usize).sum()
    }

    /// TTL for negative answers: min(SOA TTL, SOA MINIMUM) (RFC 2308 §3).
    pub fn negative_ttl(&self) -> u32 {
        self.soa_ttl.min(self.soa_minimum)
    }

    /// Every record, node by node, as owned [`Record`]s (for tests and tools; it
    /// allocates, never on a query's path).
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        (0..self.node_count() as NodeId).flat_map(move |id| {
            let node = self.node(id);
            node.rrsets().flat_map(move |set| {
                set.rdatas().map(move |rdata| Record {
                    owner: node.name().to_name(),
                    rtype: set.rtype,
                    class: Class::IN,
                    ttl: set.ttl,
                    rdata: rdata.to_vec(),
                })
            })
        })
    }

    /// The SOA serial (RFC 1035 §3.3.13), for IXFR and logs.
    pub fn serial(&self) -> u32 {
        // Every built zone has exactly one apex SOA; its rdata is two uncompressed names
        // and five 32-bit fields.
        let soa = self
            .apex_node()
            .rrset(RType::SOA)
            .expect("a built zone has an SOA");
        let rdata = soa.rdatas().next().expect("an SOA RRset has one record");
        let mut at = 0;
        for _ in 0..2 {
            while rdata[at] != 0 {
                at += 1 + rdata[at] as usize;
            }
            at += 1;
        }
        u32::from_be_bytes([rdata[at], rdata[at + 1], rdata[at + 2], rdata[at + 3]])
    }

    /// The apex node.
    pub fn apex_node(&self) -> NodeRef<'_> {
        NodeRef { zone: self, id: 0 }
    }

    fn rrset(&self, i: u32) -> RRset<'_> {
        let s = self.rrsets[i as usize];
        let end = self
            .rrsets
            .get(i as usize + 1)
            .map_or(self.rdata.len(), |n| n.rdata as usize);
        RRset {
            rtype: s.rtype,
            ttl: s.ttl,
            count: s.count,
            data: &self.rdata[s.rdata as usize..end],
        }
    }

    /// Finds the node of exactly `name` (case-insensitive).
    #[inline]
    pub fn find(&self, name: NameRef<'_>) -> Option<NodeRef<'_>> {
        let h = name.hash_ci();
        self.find_hashed(name, h)
    }

    fn find_hashed(&self, name: NameRef<'_>, h: u64) -> Option<NodeRef<'_>> {
        let mask = self.table.len() - 1;
        let mut i = h as usize & mask;
        let tag = (h >> 32) as u32;
        loop {
            let slot = self.table[i];
            if slot == 0 {
                return None;
            }
            let n = &self.nodes[slot as usize - 1];
            if n.hash == tag && n.name_len as usize == name.len() {
                let wire = &self.names[n.name as usize..n.name as usize + n.name_len as usize];
                if shardns_wire::name::eq_ci(wire, name.as_wire()) {
                    return Some(NodeRef {
                        zone: self,
                        id: slot - 1,
                    });
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// A node by index.
    pub fn node(&self, id: NodeId) -> NodeRef<'_> {
        NodeRef { zone: self, id }
    }

    /// Builds a zone from scanned records, running the checks named-checkzone and kzonecheck
    /// make. Any error rejects the zone; warnings are returned with it.
    pub fn build(apex: Name, scanned: Scanned) -> Result<(Zone, Vec<Diag>), LoadError> {
        Builder::new(apex, &scanned).run(&scanned)
    }
}

struct Builder {
    zone: Zone,
    /// Per node: the records (chunk, item) owned, in file order.
    diags: Vec<Diag>,
    warnings: Vec<Diag>,
    files: Vec<PathBuf>,
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
        // Nodes are at most the records plus their empty ancestors; start near the records.
        let cap = (total / 2).max(16).next_power_of_two() * 2;
        Self {
            zone: Zone {
                apex,
                names: Vec::new(),
                nodes: Vec::new(),
                table: vec![0; cap],
                rrsets: Vec::new(),
                rdata: Vec::new(),
                soa_ttl: 0,
                soa_minimum: 0,
            },
            diags: Vec::new(),
            warnings: scanned.warnings.clone(),
            files: scanned.files.clone(),
            last_parent: (0, NONE),
        }
    }

    fn zone_diag(&self, msg: String) -> Diag {
        Diag {
            file: self.files.first().cloned().unwrap_or_default(),
            line: 0,
            message: msg,
        }
    }

    /// Finds or inserts the node for `name` (and its missing ancestors down to the apex).
    fn intern(&mut self, name: NameRef<'_>) -> NodeId {
        let h = name.hash_ci();
        if let Some(n) = self.zone.find_hashed(name, h) {
            return n.id;
        }
        let parent = match name.parent() {
            Some(p) if name.len() > self.zone.apex.as_wire().len() => {
                // Owners come grouped: most share the previous new name's parent.
                let (cached, id) = self.last_parent;
                if id != NONE
                    && self.zone.node(id).name().as_wire() == p.as_wire()
                    && cached == p.len()
                {
                    id
                } else {
                    let id = self.intern(p);
                    self.last_parent = (p.len(), id);
                    id
                }
            }
            _ => NONE,
        };
        if (self.zone.nodes.len() + 1) * 2 > self.zone.table.len() {
            self.grow();
        }
        let id = self.zone.nodes.len() as u32;
        self.zone.nodes.push(Node {
            name: self.zone.names.len() as u32,
            rrsets: 0,
            parent,
            hash: (h >> 32) as u32,
            nrrsets: 0,
            name_len: name.len() as u8,
            flags: 0,
        });
        self.zone.names.extend_from_slice(name.as_wire());
        self.insert_slot(h, id);
        id
    }

    fn insert_slot(&mut self, h: u64, id: u32) {
        let mask = self.zone.table.len() - 1;
        let mut i = h as usize & mask;
        while self.zone.table[i] != 0 {
            i = (i + 1) & mask;
        }
        self.zone.table[i] = id + 1;
    }

    fn grow(&mut self) {
        let size = self.zone.table.len() * 2;
        self.zone.table = vec![0; size];
        for id in 0..self.zone.nodes.len() {
            let n = self.zone.nodes[id];
            let h =
                hash_ci(&self.zone.names[n.name as usize..n.name as usize + n.name_len as usize]);
            self.insert_slot(h, id as u32);
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
        let n = self.zone.nodes.len();
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
                zone: &self.zone,
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
            let sets_base = self.zone.rrsets.len() as u32;
            let rdata_base = self.zone.rdata.len() as u32;
            if self.zone.rdata.is_empty() {
                self.zone.rdata = part.rdata;
            } else {
                self.zone.rdata.extend_from_slice(&part.rdata);
            }
            self.zone
                .rrsets
                .extend(part.rrsets.iter().map(|e| RRsetEntry {
                    rdata: e.rdata + rdata_base,
                    ..*e
                }));
            for (local, count, f) in part.nodes {
                let node = &mut self.zone.nodes[next_node];
                node.rrsets = sets_base + local;
                node.nrrsets = count;
                node.flags |= f;
                next_node += 1;
            }
            self.diags.extend(part.diags);
            self.warnings.extend(part.warnings);
        }

        self.set_flags();
        self.check_zone(chunks);
        self.zone.names.shrink_to_fit();
        self.zone.nodes.shrink_to_fit();
        self.zone.rrsets.shrink_to_fit();
        self.zone.rdata.shrink_to_fit();
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
        for id in 0..self.zone.nodes.len() {
            let node = self.zone.nodes[id];
            if node.parent == NONE {
                continue;
            }
            let p = self.zone.nodes[node.parent as usize];
            let mut f = 0;
            if p.flags & (flags::DELEGATION | flags::BELOW_CUT) != 0 {
                f |= flags::BELOW_CUT;
            }
            if p.flags & (flags::DNAME | flags::BELOW_DNAME) != 0 {
                f |= flags::BELOW_DNAME;
            }
            self.zone.nodes[id].flags |= f;
            // A name with descendants exists, whatever it holds.
            self.zone.nodes[node.parent as usize].flags &= !flags::NSEC3_ONLY;
            if self.zone.node(id as u32).name().is_wildcard() {
                self.zone.nodes[node.parent as usize].flags |= flags::WILDCARD_CHILD;
            }
        }
    }

    /// Whole-zone checks: one SOA at the apex, apex NS, glue for in-zone name servers.
    fn check_zone(&mut self, _chunks: &[Records]) {
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
        // Name servers inside the zone need addresses; below a cut, those are glue.
        let mut missing = Vec::new();
        for id in 0..self.zone.nodes.len() as u32 {
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
                if !has_addr {
                    missing.push(format!(
                        "{}: NS {target} has no address records (A or AAAA)",
                        node.name()
                    ));
                }
            }
        }
        for m in missing {
            let d = self.zone_diag(m);
            self.diags.push(d);
        }
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
    zone: &'a Zone,
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
        let mut recs: Vec<(RType, Src)> = Vec::new();
        let mut seen: Vec<&[u8]> = Vec::new();
        for id in ids {
            let (a, b) = (self.start[id] as usize, self.start[id + 1] as usize);
            recs.clear();
            recs.extend(self.order[a..b].iter().map(|&r| {
                let s = self.srcs[r as usize];
                (
                    self.chunks[s.chunk as usize].items[s.item as usize].rtype,
                    s,
                )
            }));
            let first_in_file = recs.first().map(|r| r.1);
            recs.sort_by_key(|(t, _)| t.0);
            let node_start = part.rrsets.len();
            let mut i = 0;
            while i < recs.len() {
                let rtype = recs[i].0;
                let mut j = i;
                while j < recs.len() && recs[j].0 == rtype {
                    j += 1;
                }
                let first = recs[i].1;
                let ttl = self.chunks[first.chunk as usize].items[first.item as usize].ttl;
                let entry_at = part.rdata.len() as u32;
                let mut count = 0u16;
                seen.clear();
                for &(_, s) in &recs[i..j] {
                    let chunk = &self.chunks[s.chunk as usize];
                    let item = &chunk.items[s.item as usize];
                    let data = chunk.rdata(item);
                    if let Err(e) = rdata::validate(rtype, data) {
                        part.diags.push(self.diag(s, format!("{rtype}: {e}")));
                        continue;
                    }
                    // RFC 2181 §5: an RRset is a set; identical records collapse.
                    if seen.contains(&data) {
                        continue;
                    }
                    if item.ttl != ttl {
                        part.warnings.push(self.diag(
                            s,
                            format!("{rtype} TTL {} differs from the RRset's TTL {ttl}; using {ttl} (RFC 2181 §5.2)", item.ttl),
                        ));
                    }
                    if count == u16::MAX {
                        part.diags
                            .push(self.diag(s, format!("too many {rtype} records at one name")));
                        break;
                    }
                    seen.push(data);
                    part.rdata
                        .extend_from_slice(&(data.len() as u16).to_be_bytes());
                    part.rdata.extend_from_slice(data);
                    count += 1;
                }
                if count > 0 {
                    part.rrsets.push(RRsetEntry {
                        rtype,
                        count,
                        ttl,
                        rdata: entry_at,
                    });
                }
                i = j;
            }
            let sets = &part.rrsets[node_start..];
            let (f, problems) = node_checks(sets, id == 0);
            if problems.iter().any(Option::is_some) {
                let name = self.zone.node(id as u32).name().to_string();
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

/// Per-node checks on a node's RRsets: its flags, and CNAME beside other data or an SOA away
/// from the apex.
fn node_checks(sets: &[RRsetEntry], apex: bool) -> (u8, [Option<&'static str>; 4]) {
    let find = |t: RType| sets.iter().find(|s| s.rtype == t);
    let mut f = 0;
    let mut problems = [None; 4];
    if let Some(cname) = find(RType::CNAME) {
        f |= flags::CNAME;
        if sets.iter().any(|s| {
            !matches!(
                s.rtype,
                RType::CNAME | RType::RRSIG | RType::NSEC | RType::NSEC3
            )
        }) {
            problems[0] = Some("CNAME and other data at the same name (RFC 1034 §3.6.2)");
        }
        if cname.count > 1 {
            problems[1] = Some("more than one CNAME record");
        }
        if apex {
            problems[2] = Some("CNAME at the zone apex");
        }
    }
    if find(RType::NSEC3).is_some()
        && sets
            .iter()
            .all(|s| matches!(s.rtype, RType::NSEC3 | RType::RRSIG))
    {
        f |= flags::NSEC3_ONLY;
    }
    if let Some(dname) = find(RType::DNAME) {
        f |= flags::DNAME;
        if dname.count > 1 {
            problems[3] = Some("more than one DNAME record");
        }
    }
    if !apex {
        if find(RType::NS).is_some() {
            f |= flags::DELEGATION;
        }
        if find(RType::SOA).is_some() {
            problems[2] = Some("SOA record away from the zone apex");
        }
    }
    (f, problems)
}

/// The zones a server answers for. Zones are shared, so a reload can keep an unchanged or
/// failed zone's previous version without copying it.
#[derive(Debug, Default, Clone)]
pub struct ZoneSet {
    zones: Vec<Arc<Zone>>,
    /// Apex hash -> zone indices.
    by_apex: HashMap<u64, Vec<u32>>,
    /// Label counts that some apex has, so lookups only hash suffixes that can match.
    apex_labels: Vec<usize>,
}

impl ZoneSet {
    /// A set of zones; a later zone with the same apex replaces an earlier one.
    pub fn new(zones: Vec<Zone>) -> Self {
        Self::from_shared(zones.into_iter().map(Arc::new).collect())
    }

    /// A set of shared zones; a later zone with the same apex replaces an earlier one.
    pub fn from_shared(zones: Vec<Arc<Zone>>) -> Self {
        let mut kept: Vec<Arc<Zone>> = Vec::with_capacity(zones.len());
        for z in zones {
            if let Some(i) = kept.iter().position(|k| k.apex == z.apex) {
                kept[i] = z;
            } else {
                kept.push(z);
            }
        }
        let mut by_apex: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut apex_labels = Vec::new();
        for (i, z) in kept.iter().enumerate() {
            by_apex
                .entry(z.apex().hash_ci())
                .or_default()
                .push(i as u32);
            apex_labels.push(z.apex().label_count());
        }
        apex_labels.sort_unstable();
        apex_labels.dedup();
        Self {
            zones: kept,
            by_apex,
            apex_labels,
        }
    }

    /// The zone with the longest apex that `qname` is at or below: one hash lookup per
    /// distinct apex depth, never a scan over the zones.
    pub fn find(&self, qname: NameRef<'_>) -> Option<&Zone> {
        let labels = qname.label_count();
        for &depth in self.apex_labels.iter().rev() {
            if depth > labels {
                continue;
            }
            let suffix = qname.suffix(depth);
            if let Some(ids) = self.by_apex.get(&suffix.hash_ci()) {
                for &i in ids {
                    let z = &self.zones[i as usize];
                    if z.apex().eq_ci(&suffix) {
                        return Some(z);
                    }
                }
            }
        }
        None
    }

    /// The zones.
    pub fn zones(&self) -> &[Arc<Zone>] {
        &self.zones
    }

    /// The zone with exactly this apex.
    pub fn get(&self, apex: NameRef<'_>) -> Option<&Arc<Zone>> {
        self.by_apex
            .get(&apex.hash_ci())?
            .iter()
            .map(|&i| &self.zones[i as usize])
            .find(|z| z.apex().eq_ci(&apex))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{scan_text, ScanOptions};
    use std::path::Path;

    fn build(text: &str) -> Result<(Zone, Vec<Diag>), LoadError> {
        let origin: Name = "example.test.".parse().unwrap();
        let scanned = scan_text(
            text.as_bytes(),
            Path::new("db.example"),
            &ScanOptions::new(origin.clone()),
        )
        .unwrap();
        Zone::build(origin, scanned)
    }

    const HEAD: &str =
        "$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n";

    #[test]
    fn empty_non_terminals_and_flags() {
        let (z, w) = build(&format!(
            "{HEAD}a.b.c A 192.0.2.2\n*.w TXT x\nsub NS ns.sub\nns.sub A 192.0.2.3\n"
        ))
        .unwrap();
        assert!(w.is_empty());
        let n = |s: &str| -> Name { s.parse().unwrap() };
        let ent = z
            .find(n("b.c.example.test.").as_ref())
            .expect("empty non-terminal exists");
        assert!(ent.is_empty());
        assert_eq!(ent.parent().unwrap().name().to_string(), "c.example.test.");
        assert!(
            z.find(n("w.example.test.").as_ref()).unwrap().flags() & flags::WILDCARD_CHILD != 0
        );
        assert!(z.find(n("SUB.example.test.").as_ref()).unwrap().flags() & flags::DELEGATION != 0);
        assert!(
            z.find(n("ns.sub.example.test.").as_ref()).unwrap().flags() & flags::BELOW_CUT != 0
        );
        assert!(z.find(n("x.example.test.").as_ref()).is_none());
        assert_eq!(z.negative_ttl(), 60);
        assert_eq!(z.record_count(), 7);
    }

    #[test]
    fn rrsets_are_sets_with_one_ttl() {
        let (z, w) = build(&format!(
            "{HEAD}a 10 A 192.0.2.9\na 20 A 192.0.2.8\na A 192.0.2.9\n"
        ))
        .unwrap();
        let a = z
            .find("a.example.test.".parse::<Name>().unwrap().as_ref())
            .unwrap();
        let set = a.rrset(RType::A).unwrap();
        assert_eq!(
            (set.len(), set.ttl),
            (2, 10),
            "duplicate dropped, first TTL kept"
        );
        assert_eq!(w.len(), 1);
        assert!(
            w[0].to_string()
                .starts_with("db.example:6: A TTL 20 differs"),
            "{}",
            w[0]
        );
    }

    #[test]
    fn all_semantic_errors_reported_with_lines() {
        let text = "$TTL 300\n@ NS ns\nns A 192.0.2.1\nc CNAME x\nc A 192.0.2.2\nd CNAME x\nd CNAME y\nsub SOA a b 1 2 3 4 5\n";
        let e = build(text).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("db.example:4: c.example.test.: CNAME and other data"),
            "{s}"
        );
        assert!(
            s.contains("db.example:6: d.example.test.: more than one CNAME"),
            "{s}"
        );
        assert!(
            s.contains("db.example:8: sub.example.test.: SOA record away from the zone apex"),
            "{s}"
        );
        assert!(
            s.contains("db.example: example.test.: no SOA record at the zone apex"),
            "{s}"
        );
    }

    #[test]
    fn ns_needs_addresses_in_zone() {
        let e = build("$TTL 300\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\n@ NS ns.elsewhere.net.\nsub NS ns.sub\n").unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("example.test.: NS ns.example.test. has no address records"),
            "{s}"
        );
        assert!(
            s.contains("sub.example.test.: NS ns.sub.example.test. has no address records"),
            "{s}"
        );
        assert!(!s.contains("elsewhere"), "{s}");
        assert!(build("$TTL 300\n@ SOA ns hostmaster 1 2 3 4 5\n")
            .unwrap_err()
            .to_string()
            .contains("no NS records"));
    }

    #[test]
    fn two_thread_build_matches_the_data_and_reports_lines() {
        // Enough records for the two-thread RRset build; problems in both halves.
        let mut text = String::from(HEAD);
        for i in 0..30_000 {
            text.push_str(&format!(
                "h{i} A 10.0.{}.{}\nh{i} TXT \"n{i}\"\n",
                i / 256 % 256,
                i % 256
            ));
        }
        text.push_str("c1 CNAME h1\nc1 A 192.0.2.1\n");
        let e = build(&text).unwrap_err();
        assert_eq!(e.errors.len(), 1, "{e}");
        assert_eq!(e.errors[0].line, 60_005, "{e}");
        text.truncate(text.len() - "c1 A 192.0.2.1\n".len());
        text.push_str("h29999 20 A 10.9.9.9\n");
        let (z, w) = build(&text).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, 60_006);
        assert_eq!(z.record_count(), 3 + 60_000 + 1 + 1);
        for i in [0usize, 14_999, 15_000, 29_999] {
            let node = z
                .find(
                    format!("H{i}.example.test.")
                        .parse::<Name>()
                        .unwrap()
                        .as_ref(),
                )
                .unwrap();
            let a = node.rrset(RType::A).unwrap();
            assert_eq!(
                a.rdatas().next().unwrap(),
                &[10, 0, (i / 256 % 256) as u8, (i % 256) as u8]
            );
            let txt = node.rrset(RType::TXT).unwrap();
            assert_eq!(
                &txt.rdatas().next().unwrap()[1..],
                format!("n{i}").as_bytes()
            );
        }
        let h = z
            .find("h29999.example.test.".parse::<Name>().unwrap().as_ref())
            .unwrap();
        assert_eq!(h.rrset(RType::A).unwrap().len(), 2);
        let c = z
            .find("c1.example.test.".parse::<Name>().unwrap().as_ref())
            .unwrap();
        assert!(c.flags() & flags::CNAME != 0);
    }

    #[test]
    fn zone_set_picks_the_longest_apex() {
        let mk = |apex: &str| {
            let origin: Name = apex.parse().unwrap();
            let text = "$TTL 300\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns.example.net.\n";
            let scanned = scan_text(
                text.as_bytes(),
                Path::new("z"),
                &ScanOptions::new(origin.clone()),
            )
            .unwrap();
            Zone::build(origin, scanned).unwrap().0
        };
        let set = ZoneSet::new(vec![
            mk("test."),
            mk("example.test."),
            mk("b.a.example.test."),
        ]);
        let find = |q: &str| {
            set.find(q.parse::<Name>().unwrap().as_ref())
                .map(|z| z.apex().to_string())
        };
        assert_eq!(find("x.a.example.test.").as_deref(), Some("example.test."));
        assert_eq!(
            find("x.B.A.example.test.").as_deref(),
            Some("b.a.example.test.")
        );
        assert_eq!(find("other.test.").as_deref(), Some("test."));
        assert_eq!(find("test.").as_deref(), Some("test."));
        assert_eq!(find("example.org."), None);
        assert_eq!(find("."), None);
        assert!(set
            .get("EXAMPLE.test.".parse::<Name>().unwrap().as_ref())
            .is_some());
    }
}
