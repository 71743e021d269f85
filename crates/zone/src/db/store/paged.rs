//! A big zone's arrays in copy-on-write pages, so that a new version made by a patch (a
//! dynamic update, an IXFR) shares every page it does not change with the version being
//! served, instead of copying the whole zone (BENCHMARKS, "Dynamic update").
//!
//! Each array is a list of fixed-size virtual pages; a virtual page is a window on a shared
//! allocation (`Arc`), at an offset of its own. A built zone's array is one allocation, every
//! page a window on it, so lookups and huge-page advice see the same memory as before; a patch
//! that writes into a page first gives that page an allocation of its own (one page copied).
//! Byte arrays (names, rdata) are only appended to, each item (a name, an RRset's records)
//! kept inside one allocation: an item that does not fit in what is left of the last page
//! starts the next one, one longer than a page gets an allocation of several pages.

use super::{Arrays, Node, RRsetEntry, RdataIter};
use crate::db::NodeId;
use std::sync::Arc;

/// One virtual page: `mem[base..]` holds its elements (at most a page of them belong to it).
#[derive(Debug)]
struct Page<T> {
    mem: Arc<[T]>,
    base: u32,
}

impl<T> Clone for Page<T> {
    fn clone(&self) -> Self {
        Page {
            mem: Arc::clone(&self.mem),
            base: self.base,
        }
    }
}

/// An array of `len` elements in pages of `1 << BITS`.
#[derive(Debug, Clone)]
pub(in crate::db) struct Paged<T, const BITS: u32> {
    pages: Vec<Page<T>>,
    len: usize,
    /// Written anywhere (nodes, the hash table), not only at its end: its first write gives
    /// every page an allocation of its own (see [`Paged::page_mut`]).
    scattered: bool,
}

impl<T, const BITS: u32> Default for Paged<T, BITS> {
    fn default() -> Self {
        Paged {
            pages: Vec::new(),
            len: 0,
            scattered: false,
        }
    }
}

/// How much of a byte array [`Paged::from_bytes`] moves at a time.
const PIECE: usize = 16 << 20;

impl<const BITS: u32> Paged<u8, BITS> {
    /// [`Paged::from_vec`] for a byte array, without the array and its copy ever held
    /// whole together (`shardns_sys::arc_from_bytes`). The rdata of a signed zone of a
    /// million names is some 190 MiB: held twice, it was the peak of its signing.
    pub(in crate::db) fn from_bytes(v: Vec<u8>, scattered: bool) -> Self {
        let mem = shardns_sys::arc_from_bytes(v, PIECE);
        Self::on(mem, scattered)
    }
}

impl<T: Copy, const BITS: u32> Paged<T, BITS> {
    const SIZE: usize = 1 << BITS;
    const MASK: usize = Self::SIZE - 1;

    /// The elements of `v` in one allocation, every page a window on it; `scattered` for
    /// an array written anywhere, not only at its end.
    pub(in crate::db) fn from_vec(v: Vec<T>, scattered: bool) -> Self {
        Self::on(Arc::from(v), scattered)
    }

    /// Every page a window on `mem`.
    fn on(mem: Arc<[T]>, scattered: bool) -> Self {
        let len = mem.len();
        let pages = (0..len.div_ceil(Self::SIZE))
            .map(|j| Page {
                mem: Arc::clone(&mem),
                base: (j * Self::SIZE) as u32,
            })
            .collect();
        Paged {
            pages,
            len,
            scattered,
        }
    }

    #[inline]
    pub(in crate::db) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(in crate::db) fn get(&self, i: usize) -> T {
        debug_assert!(i < self.len, "index {i} out of {}", self.len);
        let p = &self.pages[i >> BITS];
        p.mem[p.base as usize + (i & Self::MASK)]
    }

    /// `n` elements from `at`, which lie in one allocation (an item of a byte array).
    #[inline]
    pub(in crate::db) fn slice(&self, at: usize, n: usize) -> &[T] {
        let p = &self.pages[at >> BITS];
        let from = p.base as usize + (at & Self::MASK);
        &p.mem[from..from + n]
    }

    /// The elements from `at` to the end of its allocation (an RRset's records, whose count
    /// says where they end).
    #[inline]
    pub(in crate::db) fn tail(&self, at: usize) -> &[T] {
        let p = &self.pages[at >> BITS];
        &p.mem[p.base as usize + (at & Self::MASK)..]
    }

    pub(in crate::db) fn set(&mut self, i: usize, v: T) {
        assert!(i < self.len, "index {i} out of {}", self.len);
        self.page_mut(i >> BITS, v)[i & Self::MASK] = v;
    }

    pub(in crate::db) fn push(&mut self, v: T) {
        if self.len == self.pages.len() * Self::SIZE {
            self.pages.push(Page {
                mem: vec![v; Self::SIZE].into(),
                base: 0,
            });
        }
        self.len += 1;
        self.set(self.len - 1, v);
    }

    /// Drops the last element.
    pub(in crate::db) fn pop(&mut self) {
        self.len -= 1;
        self.pages.truncate(self.len.div_ceil(Self::SIZE));
    }

    /// Page `j` as an allocation of its own, a full page long (copied first if shared or a
    /// window on a bigger one; `fill` pads a copy past the old page's end).
    ///
    /// A scattered array's first write copies every window page: a window copied alone
    /// leaves its whole allocation alive for the others, so that after writes all over the
    /// array (updates to names everywhere) it would be held twice. An array written only at
    /// its end copies its last page alone.
    fn page_mut(&mut self, j: usize, fill: T) -> &mut [T] {
        if self.scattered && !Self::own(&self.pages[j]) {
            for k in 0..self.pages.len() {
                if !Self::own(&self.pages[k]) {
                    Self::copy_page(&mut self.pages[k], fill);
                }
            }
        }
        let p = &mut self.pages[j];
        if !Self::own(p) || Arc::get_mut(&mut p.mem).is_none() {
            Self::copy_page(p, fill);
        }
        Arc::get_mut(&mut p.mem).expect("the page was just made")
    }

    /// True if the page is an allocation of its own (maybe shared with another version).
    fn own(p: &Page<T>) -> bool {
        p.base == 0 && p.mem.len() == Self::SIZE
    }

    fn copy_page(p: &mut Page<T>, fill: T) {
        let from = p.base as usize;
        let old = &p.mem[from..(from + Self::SIZE).min(p.mem.len())];
        let mut v = Vec::with_capacity(Self::SIZE);
        v.extend_from_slice(old);
        v.resize(Self::SIZE, fill);
        *p = Page {
            mem: v.into(),
            base: 0,
        };
    }

    /// Every element in order, in a vector of its own.
    pub(in crate::db) fn to_vec(&self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        for (j, p) in self.pages.iter().enumerate() {
            let n = (self.len - j * Self::SIZE).min(Self::SIZE);
            let from = p.base as usize;
            v.extend_from_slice(&p.mem[from..from + n]);
        }
        v
    }

    /// The first page's allocation (a built zone's whole array) as (address, bytes), for
    /// memory advice.
    pub(in crate::db) fn span(&self) -> (usize, usize) {
        self.pages.first().map_or((0, 0), |p| {
            (p.mem.as_ptr() as usize, size_of_val::<[T]>(&p.mem))
        })
    }
}

impl<const BITS: u32> Paged<u8, BITS> {
    /// Appends `item` inside one allocation and returns where it starts.
    pub(in crate::db) fn push_item(&mut self, item: &[u8]) -> u32 {
        let used = self.len & Self::MASK;
        if used != 0 && used + item.len() > Self::SIZE {
            // Not in what is left of the last page: the next one.
            self.len += Self::SIZE - used;
        }
        let at = self.len;
        if item.len() > Self::SIZE {
            // Several pages of one allocation of its own.
            let pages = item.len().div_ceil(Self::SIZE);
            let mut v = Vec::with_capacity(pages * Self::SIZE);
            v.extend_from_slice(item);
            v.resize(pages * Self::SIZE, 0);
            let mem: Arc<[u8]> = v.into();
            self.pages.extend((0..pages).map(|j| Page {
                mem: Arc::clone(&mem),
                base: (j * Self::SIZE) as u32,
            }));
        } else if !item.is_empty() {
            let j = at >> BITS;
            if j == self.pages.len() {
                self.pages.push(Page {
                    mem: vec![0; Self::SIZE].into(),
                    base: 0,
                });
            }
            let off = at & Self::MASK;
            self.page_mut(j, 0)[off..off + item.len()].copy_from_slice(item);
        }
        self.len += item.len();
        u32::try_from(at).expect("a zone's arrays stay under 4 GiB")
    }
}

/// A big zone's five arrays, paged (see the module documentation), and what its patches left
/// unused.
#[derive(Debug, Clone, Default)]
pub(in crate::db) struct Split {
    pub(in crate::db) names: Paged<u8, 14>,
    pub(in crate::db) nodes: Paged<Node, 10>,
    /// Open-addressing table: node index + 1, 0 = empty. Size is a power of two.
    pub(in crate::db) table: Paged<u32, 12>,
    pub(in crate::db) rrsets: Paged<RRsetEntry, 10>,
    pub(in crate::db) rdata: Paged<u8, 14>,
    /// Octets no node reads any more (RRsets and rdata a patch replaced, names it removed):
    /// past a sixteenth of the whole, a patch compacts the zone ([`Split::compacted`]).
    pub(in crate::db) dead: usize,
}

impl Split {
    /// A built zone's arrays, each moved into one allocation.
    pub(in crate::db) fn from_arrays(a: Arrays, dead: usize) -> Split {
        Split {
            names: Paged::from_bytes(a.names, false),
            nodes: Paged::from_vec(a.nodes, true),
            table: Paged::from_vec(a.table, true),
            rrsets: Paged::from_vec(a.rrsets, false),
            rdata: Paged::from_bytes(a.rdata, false),
            dead,
        }
    }

    /// Octets the arrays take (pages' padding aside).
    pub(in crate::db) fn size(&self) -> usize {
        self.names.len()
            + self.nodes.len() * size_of::<Node>()
            + self.table.len() * 4
            + self.rrsets.len() * size_of::<RRsetEntry>()
            + self.rdata.len()
    }

    /// Node `id`'s name as stored.
    #[inline]
    pub(in crate::db) fn name_wire(&self, id: NodeId) -> &[u8] {
        let n = self.nodes.get(id as usize);
        self.names.slice(n.name as usize, n.name_len as usize)
    }

    /// RRset `i`'s records: its rdata from the start to the end of their allocation (the
    /// set's count says where its records end).
    #[inline]
    pub(in crate::db) fn set_data(&self, i: u32) -> &[u8] {
        self.rdata.tail(self.rrsets.get(i as usize).rdata as usize)
    }

    /// Octets RRset `i`'s records take (each a 2-octet length and the data).
    pub(in crate::db) fn set_len(&self, i: u32) -> usize {
        let records = RdataIter {
            data: self.set_data(i),
            left: self.rrsets.get(i as usize).count,
        };
        records.map(|d| 2 + d.len()).sum()
    }

    /// The node named `name` (whose [`NameRef::hash_ci`] is `h`).
    ///
    /// [`NameRef::hash_ci`]: shardns_wire::NameRef::hash_ci
    #[inline]
    pub(in crate::db) fn find_hashed(
        &self,
        name: shardns_wire::NameRef<'_>,
        h: u64,
    ) -> Option<NodeId> {
        let mask = self.table.len() - 1;
        let mut i = h as usize & mask;
        let tag = (h >> 32) as u32;
        loop {
            let slot = self.table.get(i);
            if slot == 0 {
                return None;
            }
            let n = self.nodes.get(slot as usize - 1);
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
    pub(in crate::db) fn insert_slot(&mut self, h: u64, id: NodeId) {
        let mask = self.table.len() - 1;
        let mut i = h as usize & mask;
        while self.table.get(i) != 0 {
            i = (i + 1) & mask;
        }
        self.table.set(i, id + 1);
    }

    /// The same zone without what patches left unused: every node keeps its index (so the
    /// hash table and a denial index stay as they are), its name and RRsets copied back to
    /// back. O(zone) in copies, no merging or sorting: what a build would do is already done.
    pub(in crate::db) fn compacted(&self) -> Split {
        let mut a = Arrays {
            names: Vec::with_capacity(self.names.len()),
            nodes: Vec::with_capacity(self.nodes.len()),
            table: Vec::new(),
            rrsets: Vec::with_capacity(self.rrsets.len()),
            rdata: Vec::with_capacity(self.rdata.len().saturating_sub(self.dead)),
        };
        for id in 0..self.nodes.len() {
            let mut n = self.nodes.get(id);
            let name = self.names.slice(n.name as usize, n.name_len as usize);
            n.name = a.names.len() as u32;
            a.names.extend_from_slice(name);
            let first = n.rrsets;
            n.rrsets = a.rrsets.len() as u32;
            for i in first..first + u32::from(n.nrrsets) {
                let mut s = self.rrsets.get(i as usize);
                let len = self.set_len(i);
                let data = &self.set_data(i)[..len];
                s.rdata = a.rdata.len() as u32;
                a.rdata.extend_from_slice(data);
                a.rrsets.push(s);
            }
            a.nodes.push(n);
        }
        Split {
            table: self.table.clone(),
            ..Split::from_arrays(a, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write after a clone changes the writer's copy only, and copies one page.
    #[test]
    fn a_clone_shares_pages_until_written() {
        let mut a: Paged<u32, 4> = Paged::from_vec((0..100).collect(), false);
        let b = a.clone();
        a.set(37, 1000);
        a.push(100);
        assert_eq!(b.to_vec(), (0..100).collect::<Vec<_>>());
        let mut want: Vec<u32> = (0..101).collect();
        want[37] = 1000;
        assert_eq!(a.to_vec(), want);
        // Page 2 (elements 32..48) and the last one were copied; the rest are b's.
        let shared = (0..a.pages.len())
            .filter(|&j| Arc::ptr_eq(&a.pages[j].mem, &b.pages[j.min(b.pages.len() - 1)].mem))
            .count();
        assert_eq!(shared, a.pages.len() - 2);
        a.pop();
        a.pop();
        assert_eq!(a.len(), 99);
        assert_eq!(a.to_vec()[..37], want[..37]);
    }

    /// A scattered array's first write gives every page its own allocation, so that the
    /// one they were windows on is freed with the version that still reads it.
    #[test]
    fn a_scattered_array_leaves_its_allocation_at_the_first_write() {
        let mut a: Paged<u32, 4> = Paged::from_vec((0..100).collect(), true);
        let b = a.clone();
        let whole = Arc::clone(&b.pages[0].mem);
        a.set(37, 1000);
        assert!(a.pages.iter().all(|p| !Arc::ptr_eq(&p.mem, &whole)));
        drop(b);
        assert_eq!(Arc::strong_count(&whole), 1);
        a.set(90, 7);
        let mut want: Vec<u32> = (0..100).collect();
        want[37] = 1000;
        want[90] = 7;
        assert_eq!(a.to_vec(), want);
    }

    /// Items stay whole: one that does not fit in the last page starts the next, one longer
    /// than a page gets pages of its own; each reads back from where it was put.
    #[test]
    fn byte_items_are_never_split() {
        let mut a: Paged<u8, 4> = Paged::from_vec(vec![7; 13], false);
        let items: Vec<Vec<u8>> = [3usize, 5, 16, 40, 1, 0, 15]
            .iter()
            .enumerate()
            .map(|(i, &n)| vec![i as u8 + 1; n])
            .collect();
        let mut at = Vec::new();
        for item in &items {
            let before = a.clone();
            at.push(a.push_item(item));
            assert_eq!(before.to_vec(), a.to_vec()[..before.len()]);
        }
        for (item, &at) in items.iter().zip(&at) {
            assert_eq!(a.slice(at as usize, item.len()), &item[..]);
            assert!(a.tail(at as usize).len() >= item.len());
        }
        // 13 + 3 fills page 0; 5 starts page 1; 16 starts page 2 (5 + 16 > 16).
        assert_eq!(at[..3], [13, 16, 32]);
    }
}
