//! Message composition into a caller-owned buffer, with name compression and a size limit.
//!
//! The writer never allocates: the buffer belongs to the worker, and the compression table is
//! a fixed array of offsets (RFC 1035 §4.1.4). A record that would pass the limit is rolled
//! back whole, so the caller can set TC (or drop optional records) and stop.
//!
//! This file holds the buffer, counts, checkpoints and records, and [`compose`], rdata into
//! a message (names compressed only in the RFC 1035 types, RFC 3597 §4; on the per-query
//! path, never allocates); `compress` holds name compression.

mod compress;

use crate::message::{Header, HEADER_LEN};
use crate::name::NameRef;
use crate::types::{Class, RType};

/// Offsets remembered for compression; bounded so compression cost is O(1) per name.
const MAX_COMP: usize = 96;

/// The record would pass the size limit; nothing of it was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// The message sections that hold records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Answer section.
    Answer = 0,
    /// Authority section.
    Authority = 1,
    /// Additional section.
    Additional = 2,
}

/// A point to roll back to.
#[derive(Debug, Clone, Copy)]
pub struct Checkpoint {
    len: usize,
    ncomp: usize,
    counts: [u16; 4],
    prev_owner: u16,
}

/// Composes one message.
pub struct MessageWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
    limit: usize,
    comp: [u16; MAX_COMP],
    ncomp: usize,
    /// A bit for each (length, case-folded first octet) of the first label of a name in
    /// `comp` (see `compress::label_key`): a name whose bit is clear is in no entry, so
    /// the walk is skipped. Kept over a rollback (a superset is still exact).
    comp_keys: u64,
    /// Question, answer, authority, additional counts.
    counts: [u16; 4],
    /// A zone transfer (see [`MessageWriter::set_transfer`]).
    transfer: bool,
    /// Where the last record's owner name starts (0: none yet, or past pointer range).
    prev_owner: u16,
    /// A suffix of the question's name (see [`MessageWriter::set_question_suffix`]), in the
    /// caller's case, and where the table walk finds it: the question's copy, table entry
    /// `suffix_entry`. Empty: none.
    suffix: &'a [u8],
    suffix_at: u16,
    suffix_entry: usize,
}

impl<'a> MessageWriter<'a> {
    /// Starts a message after a zeroed header; `limit` caps its size (and the buffer's).
    pub fn new(buf: &'a mut [u8], limit: usize) -> Self {
        let limit = limit.min(buf.len()).min(u16::MAX as usize);
        Self {
            buf,
            len: HEADER_LEN.min(limit),
            limit,
            comp: [0; MAX_COMP],
            ncomp: 0,
            comp_keys: 0,
            counts: [0; 4],
            transfer: false,
            prev_owner: 0,
            suffix: &[],
            suffix_at: 0,
            suffix_entry: 0,
        }
    }

    /// Sets up the writer for a zone transfer: a name is compressed only against names
    /// written in the same case, so every name keeps its own case (otherwise owners would
    /// take the question's case, as in normal answers); and each owner is first compressed
    /// against the previous owner (see `put_owner`), since the compression table fills up
    /// after a few dozen of a zone's names and searching it for each was most of the cost
    /// of transferring a big zone.
    pub fn set_transfer(&mut self, on: bool) {
        self.transfer = on;
        self.suffix = &[];
    }

    /// Bytes written so far (header included).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when only the header space has been used.
    pub fn is_empty(&self) -> bool {
        self.len <= HEADER_LEN
    }

    /// The size limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Changes the size limit (never above the buffer).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(self.buf.len()).min(u16::MAX as usize);
    }

    /// Space left under the limit.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.len)
    }

    /// Records in a section so far.
    pub fn count(&self, section: Section) -> u16 {
        self.counts[section as usize + 1]
    }

    /// Saves the current position.
    #[inline]
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            len: self.len,
            ncomp: self.ncomp,
            counts: self.counts,
            prev_owner: self.prev_owner,
        }
    }

    /// Forgets everything written after `cp`.
    #[inline]
    pub fn rollback(&mut self, cp: Checkpoint) {
        if cp.ncomp <= self.suffix_entry {
            // The question's suffix is no longer in the table as it was checked.
            self.suffix = &[];
        }
        self.len = cp.len;
        self.ncomp = cp.ncomp;
        self.counts = cp.counts;
        self.prev_owner = cp.prev_owner;
    }

    /// Appends raw bytes.
    #[inline]
    pub fn put_bytes(&mut self, b: &[u8]) -> Result<(), Full> {
        let end = self.len + b.len();
        if end > self.limit {
            return Err(Full);
        }
        self.buf[self.len..end].copy_from_slice(b);
        self.len = end;
        Ok(())
    }

    /// Appends one octet.
    #[inline]
    pub fn put_u8(&mut self, v: u8) -> Result<(), Full> {
        self.put_bytes(&[v])
    }

    /// Appends a big-endian u16.
    #[inline]
    pub fn put_u16(&mut self, v: u16) -> Result<(), Full> {
        self.put_bytes(&v.to_be_bytes())
    }

    /// Appends a big-endian u32.
    #[inline]
    pub fn put_u32(&mut self, v: u32) -> Result<(), Full> {
        self.put_bytes(&v.to_be_bytes())
    }

    /// Appends a name, compressed against names already written when `compress` is set.
    /// Appends the question; it becomes the first compression target.
    pub fn put_question(
        &mut self,
        qname: NameRef<'_>,
        qtype: RType,
        qclass: Class,
    ) -> Result<(), Full> {
        self.whole(0, |w| {
            w.put_name(qname, false)?;
            w.put_u16(qtype.0)?;
            w.put_u16(qclass.0)
        })
    }

    /// Runs `write` as one unit: on success the count of `counter` (0 question, 1-3 the
    /// record sections) goes up; on [`Full`] everything it wrote is rolled back.
    #[inline]
    fn whole(
        &mut self,
        counter: usize,
        write: impl FnOnce(&mut Self) -> Result<(), Full>,
    ) -> Result<(), Full> {
        let cp = self.checkpoint();
        match write(self) {
            Ok(()) => {
                self.counts[counter] += 1;
                Ok(())
            }
            Err(e) => {
                self.rollback(cp);
                Err(e)
            }
        }
    }

    /// Appends one record; rdata (uncompressed wire form) is written with the compression
    /// its type allows. On [`Full`] nothing of the record is kept.
    pub fn put_record(
        &mut self,
        section: Section,
        owner: NameRef<'_>,
        rtype: RType,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), Full> {
        self.whole(section as usize + 1, |w| {
            w.put_record_inner(owner, rtype, class, ttl, rdata)
        })
    }

    /// Appends one record whose owner is, as the caller knows, the same name as the previous
    /// record's (the next record of an RRset, an RRset's signatures): the owner is the
    /// pointer that record's owner gave, without comparing the names (a case-insensitive
    /// comparison of a 32-octet NSEC3 hash label cost more than the rest of the record).
    /// The octets are those [`MessageWriter::put_record`] writes. On [`Full`] nothing of
    /// the record is kept.
    pub fn put_record_same_owner(
        &mut self,
        section: Section,
        owner: NameRef<'_>,
        rtype: RType,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), Full> {
        if self.transfer || self.prev_owner == 0 {
            return self.put_record(section, owner, rtype, class, ttl, rdata);
        }
        debug_assert!(self.is_previous_owner(owner.as_wire()));
        self.whole(section as usize + 1, |w| {
            w.put_previous_owner()?;
            w.put_rr_tail(rtype, class, ttl, rdata)
        })
    }

    fn put_record_inner(
        &mut self,
        owner: NameRef<'_>,
        rtype: RType,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), Full> {
        self.put_owner(owner)?;
        self.put_rr_tail(rtype, class, ttl, rdata)
    }

    /// A record after its owner: type, class, TTL, length and rdata. Rdata without names to
    /// compress (all but the RFC 1035 types: RRSIG, NSEC3, DS, ...) goes with the fixed
    /// fields in one bounds check.
    #[inline]
    fn put_rr_tail(
        &mut self,
        rtype: RType,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), Full> {
        if compressed_names(rtype).is_none() {
            let end = self.len + 10 + rdata.len();
            if end > self.limit {
                return Err(Full);
            }
            let out = &mut self.buf[self.len..end];
            let (fixed, data) = out.split_at_mut(10);
            fixed[0..2].copy_from_slice(&rtype.0.to_be_bytes());
            fixed[2..4].copy_from_slice(&class.0.to_be_bytes());
            fixed[4..8].copy_from_slice(&ttl.to_be_bytes());
            // The limit is at most 65535, so the length fits.
            fixed[8..10].copy_from_slice(&(rdata.len() as u16).to_be_bytes());
            data.copy_from_slice(rdata);
            self.len = end;
            return Ok(());
        }
        self.put_u16(rtype.0)?;
        self.put_u16(class.0)?;
        self.put_u32(ttl)?;
        let len_at = self.len;
        self.put_u16(0)?;
        compose(rtype, rdata, self)?;
        let rdlen = (self.len - len_at - 2) as u16;
        self.buf[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
        Ok(())
    }

    /// Appends an OPT pseudo-record (RFC 6891 §6.1.2) with the given options (wire form).
    pub fn put_opt(
        &mut self,
        udp_size: u16,
        ext_rcode: u8,
        version: u8,
        dnssec_ok: bool,
        options: &[u8],
    ) -> Result<(), Full> {
        let ttl =
            (ext_rcode as u32) << 24 | (version as u32) << 16 | if dnssec_ok { 0x8000 } else { 0 };
        self.whole(Section::Additional as usize + 1, |w| {
            w.put_u8(0)?;
            w.put_u16(RType::OPT.0)?;
            w.put_u16(udp_size)?;
            w.put_u32(ttl)?;
            w.put_u16(options.len() as u16)?;
            w.put_bytes(options)
        })
    }

    /// Writes the header (with this writer's section counts) and returns the message.
    pub fn finish(self, header: &Header) -> &'a [u8] {
        let mut h = *header;
        h.qdcount = self.counts[0];
        h.ancount = self.counts[1];
        h.nscount = self.counts[2];
        h.arcount = self.counts[3];
        self.buf[..HEADER_LEN].copy_from_slice(&h.to_bytes());
        &self.buf[..self.len]
    }
}

/// The types whose rdata names are compressed in a message (RFC 3597 §4): octets in front of
/// the first name, and how many names follow. `None`: the rdata is copied as it is.
#[inline]
fn compressed_names(rtype: RType) -> Option<(usize, usize)> {
    match rtype.0 {
        2..=5 | 7..=9 | 12 => Some((0, 1)),
        6 | 14 => Some((0, 2)),
        15 => Some((2, 1)),
        _ => None,
    }
}

/// Writes uncompressed rdata into a message. Names are compressed only in the RFC 1035
/// types (RFC 3597 §4); all other rdata is copied as it is. Never allocates.
pub fn compose(rtype: RType, rdata: &[u8], w: &mut MessageWriter<'_>) -> Result<(), Full> {
    let Some((skip, names)) = compressed_names(rtype) else {
        return w.put_bytes(rdata);
    };
    let Some(head) = rdata.get(..skip) else {
        return w.put_bytes(rdata);
    };
    w.put_bytes(head)?;
    let mut pos = skip;
    for _ in 0..names {
        // Zone data is validated when loaded; anything else is copied as it is.
        let Ok((name, n)) = NameRef::from_wire_prefix(&rdata[pos..]) else {
            break;
        };
        w.put_name(name, true)?;
        pos += n;
    }
    w.put_bytes(&rdata[pos..])
}

#[cfg(test)]
mod tests;
