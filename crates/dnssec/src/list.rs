//! Records in compact form for the signer: owner names and rdata back to back in one
//! buffer, each record a few offsets into it, so a zone of millions of records (and its
//! signatures) costs a few allocations, not two per record. Records of one owner may share
//! its name in the buffer.
//!
//! A signed list keeps its signatures' rdata where the signing threads wrote it: in blocks
//! of up to 32 MiB outside the buffer ([`RecordList::attach`]), not copied into
//! it, so that a reader going through the records in order can free each block once it has
//! read the last record that uses it ([`RecordList::release_before`]). A list read back
//! from a file may hold all its records in such blocks ([`RecordList::append_block`]), and
//! a signed list may take over another's blocks ([`RecordList::adopt`]): how the signatures
//! kept from a previous version stay where they were read.

use core::cmp::Ordering;
use core::fmt;
use shardns_wire::{Class, NameRef, RType, Record};

/// One record of a [`RecordList`]: owner and rdata are offsets into its `bytes` (or its
/// blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rr {
    /// Offset of the owner's wire form.
    pub owner: u32,
    /// Offset of the rdata.
    pub rdata: u32,
    /// Rdata length.
    pub rdlen: u16,
    /// Type.
    pub rtype: RType,
    /// Class.
    pub class: Class,
    /// TTL.
    pub ttl: u32,
}

/// Records in compact form. Offsets are 32-bit, the top bit saying which store: a list
/// holds at most 2 GiB of names and rdata in its buffer and 2 GiB in its blocks.
#[derive(Clone, Debug, Default)]
pub struct RecordList {
    /// Owner names (wire form) and rdata.
    pub bytes: Vec<u8>,
    /// The records.
    pub items: Vec<Rr>,
    /// Names and rdata outside `bytes`: those at offsets with [`IN_BLOCKS`] set.
    blocks: Blocks,
}

/// The size a signing thread's block of signatures is closed at: 32 MiB, glibc's largest
/// threshold for giving an allocation a mapping of its own, so that each full block is one
/// and freeing it returns its memory to the system at once.
#[cfg(not(test))]
pub const BLOCK: usize = 32 << 20;
/// Small blocks in unit tests, so that a test zone has several.
#[cfg(test)]
pub const BLOCK: usize = 128 << 10;

/// Set in an [`Rr`]'s `owner` or `rdata` offset when it is into the list's blocks, not
/// `bytes`.
const IN_BLOCKS: u32 = 1 << 31;

/// Blocks attached to a list: block `i` starts at offset `starts[i]` (of all the blocks
/// back to back) and holds `len[i]` octets, or nothing once freed.
#[derive(Clone, Debug, Default)]
struct Blocks {
    data: Vec<Vec<u8>>,
    starts: Vec<u32>,
    len: Vec<u32>,
    freed: Vec<bool>,
    /// Per MiB of the blocks' offsets, the block that holds its first octet: where
    /// [`find`](Self::find) starts, so that it takes a step or two, not a search.
    index: Vec<u32>,
    /// Per block, the index of the last record that uses it (filled when first needed).
    last_use: Vec<usize>,
}

impl Blocks {
    fn end(&self) -> u32 {
        self.starts
            .last()
            .map_or(0, |s| s + self.len[self.len.len() - 1])
    }

    /// The block that holds offset `at` (of all the blocks back to back).
    #[inline]
    fn find(&self, at: u32) -> usize {
        let mut b = self.index[(at >> 20) as usize] as usize;
        while b + 1 < self.starts.len() && self.starts[b + 1] <= at {
            b += 1;
        }
        b
    }

    /// The octets from offset `at` to the end of its block.
    fn tail(&self, at: u32) -> &[u8] {
        let b = self.find(at);
        assert!(
            !self.freed[b],
            "a record read from a block already released"
        );
        &self.data[b][(at - self.starts[b]) as usize..]
    }

    /// Adds a block; returns its start.
    fn push(&mut self, block: Vec<u8>) -> u32 {
        let base = self.end();
        let len = u32::try_from(block.len())
            .ok()
            .filter(|l| base.checked_add(*l).is_some_and(|e| e < IN_BLOCKS))
            .expect("a record list holds under 2 GiB in its blocks");
        self.starts.push(base);
        self.len.push(len);
        self.data.push(block);
        self.freed.push(false);
        self.last_use.clear();
        self.reindex();
        base
    }

    /// Extends [`index`](Self::index) to the end of the blocks.
    fn reindex(&mut self) {
        let end = self.end();
        while (self.index.len() as u64) << 20 <= u64::from(end) {
            let at = (self.index.len() as u32) << 20;
            let b = self.starts.partition_point(|&s| s <= at).max(1) - 1;
            self.index.push(b as u32);
        }
    }
}

/// An offset `at` of a block that starts at `base`, as a record's offset.
fn in_blocks(base: u32, at: u32) -> u32 {
    (base + at) | IN_BLOCKS
}

/// Where the blocks of a list taken over by [`RecordList::adopt`] start.
#[derive(Clone, Copy, Debug)]
pub struct Adopted(u32);

fn offset(len: usize) -> u32 {
    match u32::try_from(len) {
        Ok(at) if at < IN_BLOCKS => at,
        _ => panic!("a record list holds under 2 GiB in its buffer"),
    }
}

impl RecordList {
    /// An empty list with room for `records` records of `bytes` bytes in all.
    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            items: Vec::with_capacity(records),
            blocks: Blocks::default(),
        }
    }

    /// The octets from offset `at` (of `bytes` or the blocks) on.
    fn tail(&self, at: u32) -> &[u8] {
        if at & IN_BLOCKS != 0 {
            self.blocks.tail(at & !IN_BLOCKS)
        } else {
            &self.bytes[at as usize..]
        }
    }

    /// The owner of `rr`.
    pub fn owner(&self, rr: &Rr) -> NameRef<'_> {
        NameRef::from_wire_prefix(self.tail(rr.owner))
            .expect("a record list holds valid names")
            .0
    }

    /// The rdata of `rr`.
    pub fn rdata(&self, rr: &Rr) -> &[u8] {
        &self.tail(rr.rdata)[..usize::from(rr.rdlen)]
    }

    /// Attaches a block of rdata and appends `items`, whose `rdata` offsets are into
    /// `block` (their owners are in the list already); the block is not copied. (How the
    /// signer adds its signatures.)
    pub fn attach(&mut self, block: Vec<u8>, items: impl IntoIterator<Item = Rr>) {
        let base = self.blocks.push(block);
        self.items.extend(items.into_iter().map(|mut rr| {
            rr.rdata = in_blocks(base, rr.rdata);
            rr
        }));
    }

    /// Attaches a block of names and rdata and appends `items`, whose `owner` and `rdata`
    /// offsets are into `block`; the block is not copied.
    pub fn append_block(&mut self, block: Vec<u8>, items: impl IntoIterator<Item = Rr>) {
        let base = self.blocks.push(block);
        self.items.extend(items.into_iter().map(|mut rr| {
            rr.owner = in_blocks(base, rr.owner);
            rr.rdata = in_blocks(base, rr.rdata);
            rr
        }));
    }

    /// Moves `bytes` into a block of its own, after the others: every name and rdata is
    /// then in the blocks (for [`adopt`](Self::adopt)).
    pub fn into_blocks(&mut self) {
        if self.bytes.is_empty() {
            return;
        }
        let base = self.blocks.push(std::mem::take(&mut self.bytes));
        for rr in &mut self.items {
            for at in [&mut rr.owner, &mut rr.rdata] {
                if *at & IN_BLOCKS == 0 {
                    *at = in_blocks(base, *at);
                }
            }
        }
    }

    /// Takes over the blocks of `other` (whose buffer must be empty: see
    /// [`into_blocks`](Self::into_blocks)), after this list's own; its records are dropped.
    /// Returns what [`push_adopted`](Self::push_adopted) needs to append records that point
    /// into them.
    pub fn adopt(&mut self, other: RecordList) -> Adopted {
        assert!(
            other.bytes.is_empty(),
            "adopt: the other list's buffer is not empty"
        );
        let base = self.blocks.end();
        let Blocks {
            data, len, freed, ..
        } = other.blocks;
        for ((block, len), freed) in data.into_iter().zip(len).zip(freed) {
            let at = self.blocks.push(block);
            // Keep the other list's offsets: a block's length, not its data's, counts.
            let last = self.blocks.len.len() - 1;
            self.blocks.len[last] = len;
            self.blocks.freed[last] = freed;
            self.blocks.reindex();
            debug_assert!(at >= base);
        }
        Adopted(base)
    }

    /// Appends records of a list whose blocks were adopted (`adopted`), their `rdata`
    /// offsets as they were in that list (their owners are this list's).
    pub fn push_adopted(&mut self, adopted: Adopted, items: impl IntoIterator<Item = Rr>) {
        self.items.extend(items.into_iter().map(|mut rr| {
            debug_assert!(rr.rdata & IN_BLOCKS != 0);
            rr.rdata = in_blocks(adopted.0, rr.rdata & !IN_BLOCKS);
            rr
        }));
    }

    /// Frees the blocks of rdata that no record from index `i` on uses: for a reader that
    /// is done with the records before `i` (and reads none of them again: their rdata may
    /// be gone). Returns the octets freed.
    pub fn release_before(&mut self, i: usize) -> usize {
        let b = &mut self.blocks;
        if b.data.is_empty() {
            return 0;
        }
        if b.last_use.is_empty() {
            b.last_use = vec![0; b.data.len()];
            for (k, rr) in self.items.iter().enumerate() {
                for at in [rr.owner, rr.rdata] {
                    if at & IN_BLOCKS != 0 {
                        let at = b.find(at & !IN_BLOCKS);
                        b.last_use[at] = k;
                    }
                }
            }
        }
        let mut freed = 0;
        for ((data, &last), gone) in b.data.iter_mut().zip(&b.last_use).zip(&mut b.freed) {
            if last < i && !*gone {
                freed += data.len();
                *data = Vec::new();
                *gone = true;
            }
        }
        freed
    }

    /// Octets of rdata held in blocks (not yet released).
    pub fn block_bytes(&self) -> usize {
        self.blocks.data.iter().map(Vec::len).sum()
    }

    /// Appends a name and returns its offset, for records to share.
    pub fn push_name(&mut self, name: NameRef<'_>) -> u32 {
        let at = offset(self.bytes.len());
        self.bytes.extend_from_slice(name.as_wire());
        at
    }

    /// Appends a record whose owner is at `owner` (from [`push_name`](Self::push_name)).
    /// Rdata longer than 65,535 octets is cut (no record of a zone has such).
    pub fn push(&mut self, owner: u32, rtype: RType, class: Class, ttl: u32, rdata: &[u8]) {
        let rdata = &rdata[..rdata.len().min(usize::from(u16::MAX))];
        let at = offset(self.bytes.len());
        self.bytes.extend_from_slice(rdata);
        self.items.push(Rr {
            owner,
            rdata: at,
            rdlen: rdata.len() as u16,
            rtype,
            class,
            ttl,
        });
    }

    /// Appends an owned record; its owner is shared with the last record's if they are the
    /// same octets.
    pub fn push_record(&mut self, r: &Record) {
        let owner = match self.items.last() {
            Some(last) if self.owner(last).as_wire() == r.owner.as_wire() => last.owner,
            _ => self.push_name(r.owner.as_ref()),
        };
        self.push(owner, r.rtype, r.class, r.ttl, &r.rdata);
    }

    /// The list of `records`.
    pub fn from_records(records: &[Record]) -> Self {
        let bytes = records
            .iter()
            .map(|r| r.owner.as_wire().len() + r.rdata.len())
            .sum();
        let mut out = Self::with_capacity(records.len(), bytes);
        for r in records {
            out.push_record(r);
        }
        out
    }

    /// One record, owned.
    pub fn record(&self, rr: &Rr) -> Record {
        Record {
            owner: self.owner(rr).to_name(),
            rtype: rr.rtype,
            class: rr.class,
            ttl: rr.ttl,
            rdata: self.rdata(rr).to_vec(),
        }
    }

    /// Every record, owned.
    pub fn to_records(&self) -> Vec<Record> {
        self.items.iter().map(|rr| self.record(rr)).collect()
    }

    /// One record as a line of presentation format (`owner TTL CLASS TYPE rdata`).
    pub fn display<'a>(&'a self, rr: &'a Rr) -> impl fmt::Display + 'a {
        Line { list: self, rr }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Canonical order of two records: owner (RFC 4034 §6.1), type, rdata.
    pub fn order(&self, a: &Rr, b: &Rr) -> Ordering {
        self.owner(a)
            .canonical_cmp(&self.owner(b))
            .then(a.rtype.cmp(&b.rtype))
            .then_with(|| self.rdata(a).cmp(self.rdata(b)))
    }

    /// Sorts the records in canonical order. A stable sort, for it finds the runs already
    /// in order and merges them: a signed zone is a few sorted runs (the zone's records,
    /// the chain, each thread's signatures), which it orders in a few comparisons per
    /// record, where an unstable sort takes some twenty (4.3 s of a 1.7M-RRset signing).
    pub fn sort(&mut self) {
        let mut items = std::mem::take(&mut self.items);
        items.sort_by(|a, b| self.order(a, b));
        self.items = items;
    }
}

struct Line<'a> {
    list: &'a RecordList,
    rr: &'a Rr,
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rr = self.rr;
        write!(
            f,
            "{} {} {} {} ",
            self.list.owner(rr),
            rr.ttl,
            rr.class,
            rr.rtype
        )?;
        shardns_wire::rdata::fmt_text(rr.rtype, self.list.rdata(rr), f)
    }
}
