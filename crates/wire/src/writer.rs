//! Message composition into a caller-owned buffer, with name compression and a size limit.
//!
//! The writer never allocates: the buffer belongs to the worker, and the compression table is
//! a fixed array of offsets (RFC 1035 §4.1.4). A record that would pass the limit is rolled
//! back whole, so the caller can set TC (or drop optional records) and stop.

use crate::message::{Header, HEADER_LEN};
use crate::name::{lower, NameRef};
use crate::rdata;
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
    /// Question, answer, authority, additional counts.
    counts: [u16; 4],
    /// A zone transfer (see [`MessageWriter::set_transfer`]).
    transfer: bool,
    /// Where the last record's owner name starts (0: none yet, or past pointer range).
    prev_owner: u16,
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
            counts: [0; 4],
            transfer: false,
            prev_owner: 0,
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
    /// Either way its labels become targets for later names.
    pub fn put_name(&mut self, name: NameRef<'_>, compress: bool) -> Result<(), Full> {
        let wire = name.as_wire();
        let mut start = 0usize;
        let mut pointer = None;
        if compress
            && self.ncomp > 0
            && self.comp[0] == 12
            && wire.len() > 1
            && self.buf.get(12..12 + wire.len()) == Some(wire)
        {
            // Most owners repeat the question name as asked: one memcmp instead of a walk of
            // the table. The name at 12 is the question, written uncompressed, and its root
            // label ends both, so equal bytes mean the same whole name.
            pointer = Some(12);
        }
        if compress && pointer.is_none() {
            while wire[start] != 0 {
                if let Some(off) = self.find(&wire[start..]) {
                    pointer = Some(off);
                    break;
                }
                start += 1 + wire[start] as usize;
            }
        }
        let (labels, tail) = match pointer {
            Some(_) => (&wire[..start], 2),
            None => (&wire[..wire.len() - 1], 1),
        };
        if self.len + labels.len() + tail > self.limit {
            return Err(Full);
        }
        // Remember where each newly written label starts (pointers reach 14 bits).
        let mut i = 0;
        while i < labels.len() {
            let off = self.len + i;
            if off < 0x4000 && self.ncomp < MAX_COMP {
                self.comp[self.ncomp] = off as u16;
                self.ncomp += 1;
            }
            i += 1 + labels[i] as usize;
        }
        self.buf[self.len..self.len + labels.len()].copy_from_slice(labels);
        self.len += labels.len();
        match pointer {
            Some(off) => {
                let p = 0xc000 | off;
                self.buf[self.len..self.len + 2].copy_from_slice(&p.to_be_bytes());
                self.len += 2;
            }
            None => {
                self.buf[self.len] = 0;
                self.len += 1;
            }
        }
        Ok(())
    }

    /// Appends a record's owner. In a zone transfer, consecutive records mostly share their
    /// owner (a node's RRsets) or its parent (siblings): when the previous owner gives the
    /// whole name, or all of it but the first label, that is the pointer, found in
    /// O(labels) however full the compression table is (in a 16 KiB message of a big zone
    /// it is full after a few dozen names). Normal answers have few records and use the
    /// table alone ([`MessageWriter::put_name`]), which costs them nothing more.
    #[inline]
    fn put_owner(&mut self, owner: NameRef<'_>) -> Result<(), Full> {
        if !self.transfer {
            return self.put_name(owner, true);
        }
        let wire = owner.as_wire();
        let start = self.len;
        let hit = if self.prev_owner != 0 && wire.len() > 1 {
            self.suffix_of_prev_owner(wire)
        } else {
            None
        };
        match hit {
            Some((prefix, target)) => {
                let labels = &wire[..prefix];
                if self.len + labels.len() + 2 > self.limit {
                    return Err(Full);
                }
                if !labels.is_empty() && self.len < 0x4000 && self.ncomp < MAX_COMP {
                    self.comp[self.ncomp] = self.len as u16;
                    self.ncomp += 1;
                }
                self.buf[self.len..self.len + labels.len()].copy_from_slice(labels);
                self.len += labels.len();
                let p = 0xc000 | target;
                self.buf[self.len..self.len + 2].copy_from_slice(&p.to_be_bytes());
                self.len += 2;
            }
            None => self.put_name(owner, true)?,
        }
        if start < 0x4000 {
            self.prev_owner = start as u16;
        }
        Ok(())
    }

    /// If the previous owner ends with all of `wire` or all of it but the first label:
    /// (octets of `wire` to write before the pointer, where the pointer goes).
    fn suffix_of_prev_owner(&self, wire: &[u8]) -> Option<(usize, u16)> {
        let prev = self.prev_owner as usize;
        let have = self.labels_at(prev);
        let labels = wire_labels(wire);
        let first = 1 + wire[0] as usize;
        // The previous owner's suffix of as many labels as `wire`, then as `wire` without
        // its first label.
        for (skip, want) in [(0, labels), (first, labels - 1)] {
            if want == 0 || want > have {
                continue;
            }
            let off = self.skip_labels(prev, have - want);
            // A pointer reaches 14 bits; a name that starts just below that may run past it.
            if off < 0x4000 && self.name_at_eq::<true>(off, &wire[skip..]) {
                return Some((skip, off as u16));
            }
        }
        None
    }

    /// Labels (the root not counted) of the name written at `off`, following pointers.
    fn labels_at(&self, mut off: usize) -> usize {
        let mut n = 0;
        for _ in 0..256 {
            let len = self.buf[off] as usize;
            if len & 0xc0 == 0xc0 {
                off = ((len & 0x3f) << 8) | self.buf[off + 1] as usize;
                continue;
            }
            if len == 0 {
                break;
            }
            n += 1;
            off += 1 + len;
        }
        n
    }

    /// Where the name at `off` continues after `n` labels (following pointers).
    fn skip_labels(&self, mut off: usize, mut n: usize) -> usize {
        for _ in 0..256 {
            let len = self.buf[off] as usize;
            if len & 0xc0 == 0xc0 {
                off = ((len & 0x3f) << 8) | self.buf[off + 1] as usize;
                continue;
            }
            if n == 0 || len == 0 {
                break;
            }
            n -= 1;
            off += 1 + len;
        }
        off
    }

    /// Finds a remembered offset whose name equals `suffix` (uncompressed wire form).
    fn find(&self, suffix: &[u8]) -> Option<u16> {
        let mut table = self.comp[..self.ncomp].iter().copied();
        // One branch per search, none per label.
        if self.transfer {
            table.find(|&off| self.name_at_eq::<true>(off as usize, suffix))
        } else {
            table.find(|&off| self.name_at_eq::<false>(off as usize, suffix))
        }
    }

    /// Compares the (possibly compressed) name at `off` with `suffix`, ignoring case unless
    /// `EXACT` (a transfer).
    #[inline]
    fn name_at_eq<const EXACT: bool>(&self, mut off: usize, suffix: &[u8]) -> bool {
        let mut i = 0;
        // Offsets in the table were written by us, so pointers go backwards; bound anyway.
        for _ in 0..256 {
            let len = self.buf[off] as usize;
            if len & 0xc0 == 0xc0 {
                off = ((len & 0x3f) << 8) | self.buf[off + 1] as usize;
                continue;
            }
            if suffix[i] as usize != len {
                return false;
            }
            if len == 0 {
                return true;
            }
            let a = &self.buf[off + 1..off + 1 + len];
            let b = &suffix[i + 1..i + 1 + len];
            if if EXACT {
                // Labels are short: a byte loop beats a call to memcmp.
                !a.iter().zip(b).all(|(x, y)| x == y)
            } else {
                !a.iter().zip(b).all(|(&x, &y)| lower(x) == lower(y))
            } {
                return false;
            }
            off += 1 + len;
            i += 1 + len;
        }
        false
    }

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

    fn put_record_inner(
        &mut self,
        owner: NameRef<'_>,
        rtype: RType,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), Full> {
        self.put_owner(owner)?;
        self.put_u16(rtype.0)?;
        self.put_u16(class.0)?;
        self.put_u32(ttl)?;
        let len_at = self.len;
        self.put_u16(0)?;
        rdata::compose(rtype, rdata, self)?;
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

/// Labels of a name in uncompressed wire form, the root not counted.
fn wire_labels(wire: &[u8]) -> usize {
    let (mut n, mut at) = (0, 0);
    while wire[at] != 0 {
        n += 1;
        at += 1 + wire[at] as usize;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::Name;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn owner_equal_to_the_question_is_a_pointer_to_it() {
        for (q, owner) in [("a.example.", "a.example."), ("a.example.", "A.EXAMPLE.")] {
            let mut buf = [0u8; 512];
            let mut w = MessageWriter::new(&mut buf, 512);
            w.put_question(n(q).as_ref(), RType::A, Class::IN).unwrap();
            let at = w.len();
            w.put_name(n(owner).as_ref(), true).unwrap();
            assert_eq!(&w.buf[at..w.len()], &[0xc0, 12], "{owner} after {q}");
        }
        // The root name is one octet: never replaced by a two-octet pointer.
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(n(".").as_ref(), RType::NS, Class::IN)
            .unwrap();
        let at = w.len();
        w.put_name(n(".").as_ref(), true).unwrap();
        assert_eq!(&w.buf[at..w.len()], &[0]);
        // A longer name that starts like the question is not mistaken for it.
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(n("a.example.").as_ref(), RType::A, Class::IN)
            .unwrap();
        let at = w.len();
        w.put_name(n("x.a.example.").as_ref(), true).unwrap();
        assert_eq!(&w.buf[at..w.len()], &[1, b'x', 0xc0, 12]);
    }

    #[test]
    fn transfer_compression_keeps_each_names_case() {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.set_transfer(true);
        w.put_question(n("A.Example.").as_ref(), RType::AXFR, Class::IN)
            .unwrap();
        let at = w.len();
        // Same letters, other case: written out (only the shared root is common).
        w.put_name(n("a.example.").as_ref(), true).unwrap();
        assert_eq!(&w.buf[at..w.len()], b"\x01a\x07example\x00");
        // Same case as the second: a pointer to it.
        let at2 = w.len();
        w.put_name(n("x.a.example.").as_ref(), true).unwrap();
        assert_eq!(&w.buf[at2..w.len()], &[1, b'x', 0xc0, at as u8]);
    }

    #[test]
    fn transfer_owners_compress_against_the_previous_owner_even_with_a_full_table() {
        let mut buf = [0u8; 16384];
        let mut w = MessageWriter::new(&mut buf, 16384);
        w.set_transfer(true);
        w.put_question(n("z.").as_ref(), RType::AXFR, Class::IN)
            .unwrap();
        // Fill the compression table with names that share nothing with what follows.
        for i in 0..MAX_COMP {
            let name = n(&format!("f{i}.filler{i}."));
            w.put_record(
                Section::Answer,
                name.as_ref(),
                RType::A,
                Class::IN,
                0,
                &[0; 4],
            )
            .unwrap();
        }
        assert_eq!(w.ncomp, MAX_COMP);
        let rec = |w: &mut MessageWriter<'_>, owner: &str| {
            let at = w.len();
            let owner = n(owner);
            w.put_record(
                Section::Answer,
                owner.as_ref(),
                RType::A,
                Class::IN,
                0,
                &[0; 4],
            )
            .unwrap();
            at
        };
        let first = rec(&mut w, "h1.zone.example.");
        // Same owner: a pointer to the previous one.
        let at = rec(&mut w, "h1.zone.example.");
        assert_eq!(&w.buf[at..at + 2], &(0xc000 | first as u16).to_be_bytes());
        // A sibling: its first label, then a pointer into the previous owner.
        let at = rec(&mut w, "h2.zone.example.");
        assert_eq!(
            &w.buf[at..at + 5],
            &[2, b'h', b'2', 0xc0 | (first >> 8) as u8, (first + 3) as u8]
        );
        // A sibling of that sibling: the pointer follows the chain to the same suffix.
        let at = rec(&mut w, "h3.zone.example.");
        assert_eq!(
            &w.buf[at + 3..at + 5],
            &(0xc000 | (first + 3) as u16).to_be_bytes()
        );
        // In a normal answer the table decides: a sibling whose whole name was written
        // before is a pointer to that.
        let mut buf2 = [0u8; 512];
        let mut w2 = MessageWriter::new(&mut buf2, 512);
        w2.put_question(n("z.").as_ref(), RType::NS, Class::IN)
            .unwrap();
        let ns2 = w2.len();
        w2.put_name(n("ns2.z.").as_ref(), true).unwrap();
        rec(&mut w2, "ns1.z.");
        let at = rec(&mut w2, "ns2.z.");
        assert_eq!(&w2.buf[at..at + 2], &(0xc000 | ns2 as u16).to_be_bytes());
        // Unrelated: written out (the table is full), then the next one points at it.
        let other = rec(&mut w, "a.other.");
        assert_eq!(w.buf[other], 1);
        let at = rec(&mut w, "a.other.");
        assert_eq!(&w.buf[at..at + 2], &(0xc000 | other as u16).to_be_bytes());
        // Another case is another name in a transfer: written out in its own case.
        let at = rec(&mut w, "A.OTHER.");
        assert_eq!(&w.buf[at..at + 3], &[1, b'A', 5]);
        // Everything reads back as written.
        let msg = w.finish(&Header::default()).to_vec();
        let m = Message::parse(&msg).unwrap();
        let owners: Vec<String> = m
            .answers
            .iter()
            .skip(MAX_COMP)
            .map(|r| r.owner.to_string())
            .collect();
        let want = ["h1.zone.example.", "h1.zone.example.", "h2.zone.example."];
        assert_eq!(owners[..3], want);
        assert_eq!(
            owners[3..],
            ["h3.zone.example.", "a.other.", "a.other.", "A.OTHER."]
        );
    }

    #[test]
    fn no_pointer_past_fourteen_bits() {
        for pad in 0..16 {
            let mut buf = vec![0u8; 20000];
            let mut w = MessageWriter::new(&mut buf, 20000);
            w.set_transfer(true);
            w.put_question(n("q.").as_ref(), RType::AXFR, Class::IN)
                .unwrap();
            // Padding so that the next owner starts a few octets below 0x4000.
            let fill = 0x4000 - 8 - w.len() - pad - 2 - 10;
            w.put_record(
                Section::Answer,
                n("q.").as_ref(),
                RType::NULL,
                Class::IN,
                0,
                &vec![0; fill],
            )
            .unwrap();
            for owner in ["abcdefghij.zone.", "abcdefghik.zone.", "abcdefghik.zone."] {
                let o = n(owner);
                w.put_record(Section::Answer, o.as_ref(), RType::A, Class::IN, 0, &[0; 4])
                    .unwrap();
            }
            let msg = w.finish(&Header::default()).to_vec();
            let m = Message::parse(&msg).unwrap_or_else(|e| panic!("pad {pad}: {e:?}"));
            let owners: Vec<String> = m.answers[1..].iter().map(|r| r.owner.to_string()).collect();
            assert_eq!(
                owners,
                ["abcdefghij.zone.", "abcdefghik.zone.", "abcdefghik.zone."],
                "pad {pad}"
            );
        }
    }

    #[test]
    fn compression_points_at_question_and_suffixes() {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(n("www.Example.com.").as_ref(), RType::A, Class::IN)
            .unwrap();
        let after_q = w.len();
        w.put_record(
            Section::Answer,
            n("www.example.COM.").as_ref(),
            RType::A,
            Class::IN,
            60,
            &[1, 2, 3, 4],
        )
        .unwrap();
        // Owner is a pointer to offset 12.
        assert_eq!(w.len() - after_q, 2 + 10 + 4);
        let before = w.len();
        w.put_record(
            Section::Authority,
            n("example.com.").as_ref(),
            RType::NS,
            Class::IN,
            60,
            n("ns1.example.com.").as_wire(),
        )
        .unwrap();
        // Owner: pointer (2); rdata: "ns1" label (4) + pointer (2).
        assert_eq!(w.len() - before, 2 + 10 + 6);
        let msg = w.finish(&Header::default()).to_vec();
        let m = Message::parse(&msg).unwrap();
        assert_eq!(m.answers[0].owner, n("www.example.com."));
        assert_eq!(
            Name::from_wire(&m.authority[0].rdata).unwrap(),
            n("ns1.example.com.")
        );
        // Question case is kept; answer owner reads back with the question's case.
        assert_eq!(m.questions[0].qname.to_string(), "www.Example.com.");
        assert_eq!(m.answers[0].owner.to_string(), "www.Example.com.");
    }

    #[test]
    fn full_rolls_back_whole_record() {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 40);
        w.put_question(n("a.example.").as_ref(), RType::TXT, Class::IN)
            .unwrap();
        let len = w.len();
        let big = [5u8; 30];
        assert_eq!(
            w.put_record(
                Section::Answer,
                n("a.example.").as_ref(),
                RType(65280),
                Class::IN,
                1,
                &big
            ),
            Err(Full)
        );
        assert_eq!(w.len(), len);
        assert_eq!(w.count(Section::Answer), 0);
        let msg = w.finish(&Header::default());
        assert_eq!(Message::parse(msg).unwrap().answers.len(), 0);
    }

    #[test]
    fn opt_record() {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_opt(1232, 1, 0, true, &[]).unwrap();
        let msg = w.finish(&Header::default()).to_vec();
        let m = Message::parse(&msg).unwrap();
        let opt = m.opt().unwrap();
        assert_eq!(opt.class.0, 1232);
        assert_eq!(opt.ttl, 0x0100_8000);
        assert_eq!(m.rcode().0, 16);
    }
}
