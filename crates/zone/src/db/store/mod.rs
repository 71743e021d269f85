//! The zone's storage and the lookups on it: [`Zone`] (names, nodes, a hash table over the
//! nodes, RRsets and rdata: five arrays while it is built, the same five in copy-on-write
//! pages for a big zone, one allocation for a small one, see [`Store`]), [`NodeRef`] and
//! [`RRset`], borrowed views of a node and of one of its RRsets. Read-only once built:
//! [`super::build`] fills five arrays of its own ([`Arrays`]) and packs them at the end if
//! small, pages them ([`Split`], `paged`) if not; [`super::patch`] works on a paged copy of
//! either form (sharing the pages it does not change) and packs its result the same way;
//! `pack` moves a zone between the two forms. Also the searches that read the zone's names for its denial index
//! ([`Zone::is_signed`], [`Denial::nsec_covering`]).

mod pack;
mod paged;

pub(in crate::db) use paged::{Paged, Split};

use super::denial::Denial;
use super::{NodeId, NONE};
use shardns_wire::{Class, Name, NameRef, RType, Record};
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy)]
pub(super) struct Node {
    /// Offset of the name (wire form, as first written in the zone file) in `names`.
    pub(super) name: u32,
    /// First RRset in `rrsets`.
    pub(super) rrsets: u32,
    /// The parent node, `NONE` for the apex.
    pub(super) parent: u32,
    /// High 32 bits of the name's hash, checked before comparing names.
    pub(super) hash: u32,
    /// Number of RRsets (0 for an empty non-terminal).
    pub(super) nrrsets: u16,
    pub(super) name_len: u8,
    pub(super) flags: u8,
}

/// One RRset: same owner, type and class.
#[derive(Debug, Clone, Copy)]
pub(super) struct RRsetEntry {
    pub(super) rtype: RType,
    pub(super) count: u16,
    pub(super) ttl: u32,
    /// Offset in `rdata` of the first record; each record is a 2-octet length and the data.
    pub(super) rdata: u32,
}

/// A borrowed RRset.
#[derive(Clone, Copy, Debug)]
pub struct RRset<'a> {
    /// Type.
    pub rtype: RType,
    /// TTL (one per RRset, RFC 2181 §5.2).
    pub ttl: u32,
    count: u16,
    /// Index in the zone's RRsets: the signatures covering this set, if any, come next.
    index: u32,
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
    /// The same records with another TTL (a negative answer's SOA, RFC 2308 §3).
    pub fn with_ttl(self, ttl: u32) -> Self {
        Self { ttl, ..self }
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

/// Bytes of a [`Node`] in a packed zone.
const NODE_SIZE: usize = 20;
/// Bytes of an [`RRsetEntry`] in a packed zone.
pub(in crate::db) const SET_SIZE: usize = 12;
/// A packed zone of at most this many bytes is read whole ([`Zone::warm`]) once its apex
/// hash matches a query's: 16 cache lines, a zone of a dozen records or two.
const WARM_MAX: usize = 1024;

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Node {
    #[inline]
    fn decode(b: &[u8]) -> Node {
        let b = &b[..NODE_SIZE];
        Node {
            name: u32_at(b, 0),
            rrsets: u32_at(b, 4),
            parent: u32_at(b, 8),
            hash: u32_at(b, 12),
            nrrsets: u16::from_le_bytes([b[16], b[17]]),
            name_len: b[18],
            flags: b[19],
        }
    }
}

impl RRsetEntry {
    #[inline]
    fn decode(b: &[u8]) -> RRsetEntry {
        let b = &b[..SET_SIZE];
        RRsetEntry {
            rtype: RType(u16::from_le_bytes([b[0], b[1]])),
            count: u16::from_le_bytes([b[2], b[3]]),
            ttl: u32_at(b, 4),
            rdata: u32_at(b, 8),
        }
    }
}

/// A zone's five arrays, each its own allocation: the form a zone is built in (a big zone is
/// then served from them paged, [`Split`]: a lookup in it misses the caches anyway, and
/// packing it would copy tens of megabytes at load time).
#[derive(Debug, Default)]
pub(super) struct Arrays {
    pub(super) names: Vec<u8>,
    pub(super) nodes: Vec<Node>,
    /// Open-addressing table: node index + 1, 0 = empty. Size is a power of two.
    pub(super) table: Vec<u32>,
    pub(super) rrsets: Vec<RRsetEntry>,
    pub(super) rdata: Vec<u8>,
}

impl Arrays {
    /// Node `id`'s name as stored.
    #[inline]
    pub(super) fn name_wire(&self, id: NodeId) -> &[u8] {
        let n = &self.nodes[id as usize];
        &self.names[n.name as usize..n.name as usize + n.name_len as usize]
    }

    /// The node named `name` (whose [`NameRef::hash_ci`] is `h`), read straight from the
    /// arrays: the builder and the patch look up every owner this way, not through the
    /// match of [`Store`].
    #[inline]
    pub(super) fn find_hashed(&self, name: NameRef<'_>, h: u64) -> Option<NodeId> {
        let mask = self.table.len() - 1;
        let mut i = h as usize & mask;
        let tag = (h >> 32) as u32;
        loop {
            let slot = self.table[i];
            if slot == 0 {
                return None;
            }
            let n = &self.nodes[slot as usize - 1];
            if n.hash == tag
                && n.name_len as usize == name.len()
                && shardns_wire::name::eq_ci(self.name_wire(slot - 1), name.as_wire())
            {
                return Some(slot - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Puts node `id`, whose name hashes to `h`, in the hash table (which has room).
    #[inline]
    pub(super) fn insert_slot(&mut self, h: u64, id: NodeId) {
        let mask = self.table.len() - 1;
        let mut i = h as usize & mask;
        while self.table[i] != 0 {
            i = (i + 1) & mask;
        }
        self.table[i] = id + 1;
    }
}

/// A small zone's arrays in one allocation, in lookup order: the hash table (`u32` slots),
/// the nodes, the RRsets, the names, the rdata (integers little-endian). A lookup in a zone
/// whose data is out of the CPU caches then waits on one or two misses of adjacent lines
/// instead of one per array (BENCHMARKS, "Many zones").
#[derive(Debug)]
pub(super) struct Packed {
    mem: Box<[u8]>,
    table_len: u32,
    nodes_at: u32,
    node_count: u32,
    sets_at: u32,
    set_count: u32,
    names_at: u32,
    rdata_at: u32,
}

/// Where a zone's data lives.
#[derive(Debug)]
pub(super) enum Store {
    Split(Box<Split>),
    Packed(Packed),
}

/// One zone, built once per load and then only read.
#[derive(Debug)]
pub struct Zone {
    pub(super) apex: Name,
    pub(super) store: Store,
    /// The SOA's TTL and MINIMUM, for negative answers (RFC 2308 §3).
    pub(super) soa_ttl: u32,
    pub(super) soa_minimum: u32,
    /// What a signed zone needs for denial proofs; `None` for an unsigned zone.
    pub(crate) denial: Option<Box<Denial>>,
    /// A stand-in for a zone that cannot be answered (a secondary's zone that expired or
    /// was never transferred): every query for it gets SERVFAIL.
    pub(super) unavailable: bool,
}

impl Zone {
    /// Reads a small packed zone whole, one byte per cache line: the loads do not depend on
    /// each other, so their misses overlap, where a lookup's own loads (table, node, name,
    /// RRsets, rdata) each wait for the one before. Does nothing for a bigger zone.
    #[inline]
    pub(crate) fn warm(&self) {
        if let Store::Packed(p) = &self.store {
            if p.mem.len() <= WARM_MAX {
                let mut x = 0u8;
                for b in p.mem.iter().step_by(64) {
                    x ^= *b;
                }
                std::hint::black_box(x);
            }
        }
    }

    /// Passes to `hint` the address of each cache line a lookup in this zone reads first:
    /// for a small packed zone every line [`Zone::warm`] reads, for a bigger packed one the
    /// apex's node and name (the apex comparison), for a split (big) zone nothing. Reads
    /// only the zone's header, never its data: the third stage of [`ZoneSet::prefetch`].
    ///
    /// [`ZoneSet::prefetch`]: super::ZoneSet::prefetch
    #[inline]
    pub(crate) fn prefetch_data(&self, hint: &impl Fn(*const u8)) {
        if let Store::Packed(p) = &self.store {
            let base = p.mem.as_ptr();
            let len = p.mem.len();
            if len <= WARM_MAX {
                for off in (0..len).step_by(64) {
                    hint(base.wrapping_add(off));
                }
                // The allocation need not start on a line, so its last line may be one more.
                hint(base.wrapping_add(len.saturating_sub(1)));
            } else {
                hint(base.wrapping_add(p.nodes_at as usize));
                hint(base.wrapping_add(p.names_at as usize));
            }
        }
    }

    /// The apex name's wire form as stored (node 0's name), read from the zone's own data
    /// rather than from [`Zone::apex`]'s separate allocation.
    #[inline]
    pub(crate) fn apex_wire(&self) -> &[u8] {
        let n = self.node_at(0);
        self.name_wire(&n)
    }

    #[inline]
    pub(super) fn node_at(&self, id: NodeId) -> Node {
        match &self.store {
            Store::Split(a) => a.nodes.get(id as usize),
            Store::Packed(p) => {
                assert!(id < p.node_count, "node index out of range");
                Node::decode(&p.mem[p.nodes_at as usize + id as usize * NODE_SIZE..])
            }
        }
    }

    #[inline]
    fn name_wire(&self, n: &Node) -> &[u8] {
        let (names, at) = match &self.store {
            Store::Split(a) => return a.names.slice(n.name as usize, n.name_len as usize),
            Store::Packed(p) => (&p.mem[..p.rdata_at as usize], p.names_at as usize),
        };
        &names[at + n.name as usize..at + n.name as usize + n.name_len as usize]
    }

    #[inline]
    pub(super) fn set_at(&self, i: u32) -> RRsetEntry {
        match &self.store {
            Store::Split(a) => a.rrsets.get(i as usize),
            Store::Packed(p) => {
                assert!(i < p.set_count, "RRset index out of range");
                RRsetEntry::decode(&p.mem[p.sets_at as usize + i as usize * SET_SIZE..])
            }
        }
    }

    #[inline]
    fn set_type(&self, i: u32) -> RType {
        match &self.store {
            Store::Split(a) => a.rrsets.get(i as usize).rtype,
            Store::Packed(p) => {
                assert!(i < p.set_count, "RRset index out of range");
                let at = p.sets_at as usize + i as usize * SET_SIZE;
                RType(u16::from_le_bytes([p.mem[at], p.mem[at + 1]]))
            }
        }
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
    #[inline]
    fn node(&self) -> Node {
        self.zone.node_at(self.id)
    }
    /// The owner name, in the case first written in the zone file.
    pub fn name(&self) -> NameRef<'a> {
        let n = self.node();
        // Every stored name was parsed (zone file, transfer, patch) before it was stored.
        NameRef::from_validated(self.zone.name_wire(&n))
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
        let n = self.node();
        let zone = self.zone;
        (n.rrsets..n.rrsets + n.nrrsets as u32).map(move |i| zone.rrset(i))
    }
    /// The RRSIGs covering `set` (one of this node's RRsets), if the zone holds any: they
    /// are stored right after the set they cover.
    #[inline]
    pub fn signatures(&self, set: &RRset<'_>) -> Option<RRset<'a>> {
        let n = self.node();
        let next = set.index + 1;
        if set.rtype == RType::RRSIG || next >= n.rrsets + u32::from(n.nrrsets) {
            return None;
        }
        let sigs = self.zone.rrset(next);
        let covered = sigs
            .data
            .get(2..4)
            .map(|c| u16::from_be_bytes([c[0], c[1]]));
        (sigs.rtype == RType::RRSIG && covered == Some(set.rtype.0)).then_some(sigs)
    }

    /// The RRset of one type. For RRSIG, the signatures of the node's first signed RRset
    /// in type order (each covered type's signatures are a set of their own).
    #[inline]
    pub fn rrset(&self, rtype: RType) -> Option<RRset<'a>> {
        let n = self.node();
        // Few RRsets per node: a short scan over a sorted run beats a search.
        (n.rrsets..n.rrsets + u32::from(n.nrrsets))
            .find(|&i| self.zone.set_type(i) == rtype)
            .map(|i| self.zone.rrset(i))
    }
}

impl Zone {
    /// The apex name.
    pub fn apex(&self) -> NameRef<'_> {
        self.apex.as_ref()
    }

    /// Number of names (nodes), empty non-terminals included.
    pub fn node_count(&self) -> usize {
        match &self.store {
            Store::Split(a) => a.nodes.len(),
            Store::Packed(p) => p.node_count as usize,
        }
    }

    /// Number of records.
    pub fn record_count(&self) -> usize {
        // Through the nodes: a patched zone ([`Zone::patch`]) keeps the RRsets it replaced,
        // unused.
        (0..self.node_count() as NodeId)
            .map(|id| {
                let n = self.node_at(id);
                (n.rrsets..n.rrsets + u32::from(n.nrrsets))
                    .map(|i| self.set_at(i).count as usize)
                    .sum::<usize>()
            })
            .sum()
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
        let s = self.set_at(i);
        // The records run from the set's offset; the count says where they end.
        let data = match &self.store {
            Store::Split(a) => a.rdata.tail(s.rdata as usize),
            Store::Packed(p) => &p.mem[p.rdata_at as usize + s.rdata as usize..],
        };
        RRset {
            rtype: s.rtype,
            ttl: s.ttl,
            count: s.count,
            index: i,
            data,
        }
    }

    /// Finds the node of exactly `name` (case-insensitive).
    #[inline]
    pub fn find(&self, name: NameRef<'_>) -> Option<NodeRef<'_>> {
        let h = name.hash_ci();
        self.find_hashed(name, h)
    }

    pub(super) fn find_hashed(&self, name: NameRef<'_>, h: u64) -> Option<NodeRef<'_>> {
        let p = match &self.store {
            Store::Split(a) => {
                return a.find_hashed(name, h).map(|id| NodeRef { zone: self, id });
            }
            Store::Packed(p) => p,
        };
        let mask = p.table_len as usize - 1;
        let mut i = h as usize & mask;
        let tag = (h >> 32) as u32;
        loop {
            let slot = u32_at(&p.mem, i * 4);
            if slot == 0 {
                return None;
            }
            let n = self.node_at(slot - 1);
            if n.hash == tag && n.name_len as usize == name.len() {
                let wire = self.name_wire(&n);
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

    /// True if the zone is signed: its apex SOA has a signature (as Knot decides).
    pub fn is_signed(&self) -> bool {
        self.denial.is_some()
    }
}

impl Denial {
    /// The node whose NSEC covers or matches `name`: the greatest NSEC owner at or before
    /// it in canonical order (the last one covers what sorts after it, RFC 4034 §4.1.1).
    pub(crate) fn nsec_covering(&self, zone: &Zone, name: NameRef<'_>) -> Option<NodeId> {
        let i = self
            .nsec
            .partition_point(|&id| zone.node(id).name().canonical_cmp(&name) != Ordering::Greater);
        match i {
            0 => self.nsec.last().copied(),
            i => Some(self.nsec[i - 1]),
        }
    }
}
