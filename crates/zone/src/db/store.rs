//! The zone's storage and the lookups on it: [`Zone`] (names, nodes, a hash table over the
//! nodes, RRsets and rdata, each one array), [`NodeRef`] and [`RRset`], borrowed views of a
//! node and of one of its RRsets. Read-only once built: [`super::build`] fills the arrays.

use super::{NodeId, NONE};
use shardns_wire::{Class, Name, NameRef, RType, Record};

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

/// One zone, built once per load and then only read.
#[derive(Debug)]
pub struct Zone {
    pub(super) apex: Name,
    pub(super) names: Vec<u8>,
    pub(super) nodes: Vec<Node>,
    /// Open-addressing table: node index + 1, 0 = empty. Size is a power of two.
    pub(super) table: Vec<u32>,
    pub(super) rrsets: Vec<RRsetEntry>,
    pub(super) rdata: Vec<u8>,
    /// The SOA's TTL and MINIMUM, for negative answers (RFC 2308 §3).
    pub(super) soa_ttl: u32,
    pub(super) soa_minimum: u32,
    /// What a signed zone needs for denial proofs; `None` for an unsigned zone.
    pub(crate) denial: Option<Box<super::denial::Denial>>,
    /// A stand-in for a zone that cannot be answered (a secondary's zone that expired or
    /// was never transferred): every query for it gets SERVFAIL.
    pub(super) unavailable: bool,
}

impl Zone {
    /// The zone's five arrays as (start address, length in bytes), for a server that wants
    /// to ask the kernel to back big zones with huge pages: a lookup touches a few cache lines
    /// in each, spread over the whole array, so with 4 KiB pages a big zone misses the TLB on
    /// nearly every one. The address is a plain number for such memory hints, not a pointer:
    /// the zone's data is read through [`Zone::find`] and [`NodeRef`], never through it.
    pub fn arrays(&self) -> [(usize, usize); 5] {
        fn span<T>(v: &[T]) -> (usize, usize) {
            (v.as_ptr() as usize, size_of_val(v))
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
        // Through the nodes: a patched zone ([`Zone::patch`]) keeps the RRsets it replaced
        // in `rrsets`, unused.
        self.nodes
            .iter()
            .map(|n| {
                self.rrsets[n.rrsets as usize..n.rrsets as usize + n.nrrsets as usize]
                    .iter()
                    .map(|s| s.count as usize)
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
        let s = self.rrsets[i as usize];
        let end = self
            .rrsets
            .get(i as usize + 1)
            .map_or(self.rdata.len(), |n| n.rdata as usize);
        RRset {
            rtype: s.rtype,
            ttl: s.ttl,
            count: s.count,
            index: i,
            data: &self.rdata[s.rdata as usize..end],
        }
    }

    /// Finds the node of exactly `name` (case-insensitive).
    #[inline]
    pub fn find(&self, name: NameRef<'_>) -> Option<NodeRef<'_>> {
        let h = name.hash_ci();
        self.find_hashed(name, h)
    }

    pub(super) fn find_hashed(&self, name: NameRef<'_>, h: u64) -> Option<NodeRef<'_>> {
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
}
