//! The two forms of a zone's storage and the moves between them: [`Zone::pack`] puts a
//! small zone's five arrays into one allocation ([`Packed`]), [`Zone::to_split`] gives
//! either form as paged arrays (what a patch starts from: a paged zone's pages shared, a
//! packed one's copied); the encoding of nodes and RRsets in the packed form. Reading
//! either form is the parent module's.

use super::{u32_at, Arrays, Node, Packed, RRsetEntry, Split, Store, Zone, NODE_SIZE, SET_SIZE};

/// A zone whose arrays take at most this many bytes is packed into one allocation when built
/// (see [`Store`]); a bigger one keeps its five arrays, so building it copies nothing more.
const PACK_MAX: usize = 4 << 20;

impl Node {
    fn encode(&self, out: &mut Vec<u8>) {
        for v in [self.name, self.rrsets, self.parent, self.hash] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.nrrsets.to_le_bytes());
        out.extend_from_slice(&[self.name_len, self.flags]);
    }
}

impl RRsetEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.rtype.0.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.ttl.to_le_bytes());
        out.extend_from_slice(&self.rdata.to_le_bytes());
    }
}

impl Zone {
    /// The zone's arrays as (start address, length in bytes), for a server that wants to ask
    /// the kernel to back big zones with huge pages: a lookup touches a few cache lines in
    /// each, spread over the whole array, so with 4 KiB pages a big zone misses the TLB on
    /// nearly every one. A packed (small) zone reports its one allocation and four empty
    /// spans. The address is a plain number for such memory hints, not a pointer: the
    /// zone's data is read through [`Zone::find`] and [`NodeRef`](super::NodeRef), never
    /// through it.
    pub fn arrays(&self) -> [(usize, usize); 5] {
        match &self.store {
            Store::Split(a) => [
                a.names.span(),
                a.nodes.span(),
                a.table.span(),
                a.rrsets.span(),
                a.rdata.span(),
            ],
            Store::Packed(p) => [
                (p.mem.as_ptr() as usize, p.mem.len()),
                (0, 0),
                (0, 0),
                (0, 0),
                (0, 0),
            ],
        }
    }

    /// Moves a built zone's arrays into one allocation if they are small (at most
    /// [`PACK_MAX`] bytes), with a hash table sized for its nodes (half full at most).
    pub(in crate::db) fn pack(&mut self) {
        let Store::Split(a) = &self.store else {
            return;
        };
        let table_len = (a.nodes.len() * 2).max(4).next_power_of_two();
        let size = table_len * 4
            + a.nodes.len() * NODE_SIZE
            + a.rrsets.len() * SET_SIZE
            + a.names.len()
            + a.rdata.len();
        if size > PACK_MAX {
            return;
        }
        let a = Arrays {
            names: a.names.to_vec(),
            nodes: a.nodes.to_vec(),
            table: Vec::new(),
            rrsets: a.rrsets.to_vec(),
            rdata: a.rdata.to_vec(),
        };
        let mut table = vec![0u32; table_len];
        let mask = table_len - 1;
        for (id, n) in a.nodes.iter().enumerate() {
            let h = shardns_wire::name::hash_ci(
                &a.names[n.name as usize..n.name as usize + n.name_len as usize],
            );
            let mut i = h as usize & mask;
            while table[i] != 0 {
                i = (i + 1) & mask;
            }
            table[i] = id as u32 + 1;
        }
        let mut mem = Vec::with_capacity(size);
        for slot in table {
            mem.extend_from_slice(&slot.to_le_bytes());
        }
        let nodes_at = mem.len();
        a.nodes.iter().for_each(|n| n.encode(&mut mem));
        let sets_at = mem.len();
        a.rrsets.iter().for_each(|s| s.encode(&mut mem));
        let names_at = mem.len();
        mem.extend_from_slice(&a.names);
        let rdata_at = mem.len();
        mem.extend_from_slice(&a.rdata);
        debug_assert_eq!(mem.len(), size);
        self.store = Store::Packed(Packed {
            mem: mem.into_boxed_slice(),
            table_len: table_len as u32,
            nodes_at: nodes_at as u32,
            node_count: a.nodes.len() as u32,
            sets_at: sets_at as u32,
            set_count: a.rrsets.len() as u32,
            names_at: names_at as u32,
            rdata_at: rdata_at as u32,
        });
    }

    /// The zone's arrays paged: a paged zone's pages shared (nothing copied until written),
    /// a packed zone's arrays copied, with the octets its patches left unused counted (a
    /// small zone: one pass over its nodes). What [`Zone::patch`] starts from.
    pub(in crate::db) fn to_split(&self) -> Split {
        match &self.store {
            Store::Split(a) => (**a).clone(),
            Store::Packed(p) => {
                let nodes: Vec<Node> = (0..p.node_count).map(|i| self.node_at(i)).collect();
                let live: usize = nodes
                    .iter()
                    .map(|n| n.name_len as usize + usize::from(n.nrrsets) * SET_SIZE)
                    .sum::<usize>()
                    + (0..p.node_count)
                        .flat_map(|id| self.node(id).rrsets())
                        .map(|s| s.rdatas().map(|d| 2 + d.len()).sum::<usize>())
                        .sum::<usize>();
                let a = Arrays {
                    names: p.mem[p.names_at as usize..p.rdata_at as usize].to_vec(),
                    nodes,
                    table: (0..p.table_len as usize)
                        .map(|i| u32_at(&p.mem, i * 4))
                        .collect(),
                    rrsets: (0..p.set_count).map(|i| self.set_at(i)).collect(),
                    rdata: p.mem[p.rdata_at as usize..].to_vec(),
                };
                let all = a.names.len() + a.rrsets.len() * SET_SIZE + a.rdata.len();
                Split::from_arrays(a, all.saturating_sub(live))
            }
        }
    }

    /// The arrays of a zone being patched. Panics if the zone is packed: only
    /// [`Zone::patch`] calls this, on the split copy it makes, before it packs the result.
    pub(in crate::db) fn split_mut(&mut self) -> &mut Split {
        match &mut self.store {
            Store::Split(a) => a,
            Store::Packed(_) => unreachable!("a packed zone is never changed"),
        }
    }

    /// The packed zone's arrays back in their own allocations, for tests that compare the
    /// two forms' answers.
    #[cfg(test)]
    pub(crate) fn unpack(&mut self) {
        if !self.is_packed() {
            return;
        }
        let a = self.to_split();
        self.store = Store::Split(Box::new(a));
    }

    /// Packs a small zone left split (by [`crate::update::Change::apply_split`]) into one
    /// allocation, as a build or a patch leaves it; a big or packed zone is left as it is.
    pub fn pack_small(&mut self) {
        self.pack();
    }

    /// The octets patches left unread in the zone's arrays, and the octets of the arrays.
    #[cfg(test)]
    pub(crate) fn unused_octets(&self) -> (usize, usize) {
        let a = self.to_split();
        (a.dead, a.size())
    }

    /// True if the zone is packed into one allocation (a small zone).
    pub fn is_packed(&self) -> bool {
        matches!(self.store, Store::Packed(_))
    }
}
