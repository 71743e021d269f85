//! Records in compact form for the signer: owner names and rdata back to back in one
//! buffer, each record a few offsets into it, so a zone of millions of records (and its
//! signatures) costs a few allocations, not two per record. Records of one owner may share
//! its name in the buffer.

use core::cmp::Ordering;
use core::fmt;
use shardns_wire::{Class, NameRef, RType, Record};

/// One record of a [`RecordList`]: owner and rdata are offsets into its `bytes`.
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

/// Records in compact form. Offsets are 32-bit: a list holds at most 4 GiB of names and
/// rdata.
#[derive(Clone, Debug, Default)]
pub struct RecordList {
    /// Owner names (wire form) and rdata.
    pub bytes: Vec<u8>,
    /// The records.
    pub items: Vec<Rr>,
}

fn offset(len: usize) -> u32 {
    u32::try_from(len).expect("a record list holds under 4 GiB")
}

impl RecordList {
    /// An empty list with room for `records` records of `bytes` bytes in all.
    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            items: Vec::with_capacity(records),
        }
    }

    /// The owner of `rr`.
    pub fn owner(&self, rr: &Rr) -> NameRef<'_> {
        NameRef::from_wire_prefix(&self.bytes[rr.owner as usize..])
            .expect("a record list holds valid names")
            .0
    }

    /// The rdata of `rr`.
    pub fn rdata(&self, rr: &Rr) -> &[u8] {
        &self.bytes[rr.rdata as usize..rr.rdata as usize + usize::from(rr.rdlen)]
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

    /// Sorts the records in canonical order.
    pub fn sort(&mut self) {
        let mut items = std::mem::take(&mut self.items);
        items.sort_unstable_by(|a, b| self.order(a, b));
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
