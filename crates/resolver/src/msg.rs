//! An upstream response parsed into buffers the engine reuses.
//!
//! Owns: [`Response`] (owner names and decompressed RDATA in two byte arenas, records as
//! offsets into them) and [`Rr`], the borrowed view of one record. Parsing allocates nothing
//! once the buffers have grown to the responses seen; the owning
//! [`shardns_wire::Message`] allocates a name and an RDATA vector per record, which was
//! the larger part of the allocations on the cache-miss path.
//! The checks are wire's: names and RDATA go through [`NameBuf::read_compressed`] and
//! [`rdata::decompress`], exactly as [`shardns_wire::Message::parse`] does.
//! Never: I/O, or keeping anything from one response to the next.

use shardns_wire::message::{Reader, HEADER_LEN};
use shardns_wire::{rdata, Class, Header, NameBuf, NameRef, RType, Rcode, Record};

/// One record of a [`Response`], borrowed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rr<'a> {
    pub(crate) owner: NameRef<'a>,
    pub(crate) rtype: RType,
    pub(crate) class: Class,
    pub(crate) ttl: u32,
    /// Uncompressed RDATA.
    pub(crate) rdata: &'a [u8],
}

impl<'a> From<Rr<'a>> for crate::cache::Soa<'a> {
    fn from(r: Rr<'a>) -> Self {
        Self {
            owner: r.owner,
            ttl: r.ttl,
            rdata: r.rdata,
        }
    }
}

impl Rr<'_> {
    /// An owned copy (for answers handed to the client).
    pub(crate) fn to_record(self) -> Record {
        Record {
            owner: self.owner.to_name(),
            rtype: self.rtype,
            class: self.class,
            ttl: self.ttl,
            rdata: self.rdata.to_vec(),
        }
    }

    /// True if `r` is this record (same owner, type, class, TTL and RDATA).
    pub(crate) fn is(self, r: &Record) -> bool {
        self.rtype == r.rtype
            && self.class == r.class
            && self.ttl == r.ttl
            && self.rdata == &r.rdata[..]
            && self.owner == r.owner.as_ref()
    }
}

#[derive(Clone, Copy)]
struct Entry {
    /// Owner name: `names[owner..owner + owner_len]`.
    owner: u32,
    owner_len: u8,
    rtype: RType,
    class: Class,
    ttl: u32,
    /// RDATA: `rdata[rdata_at..rdata_at + rdata_len]`.
    rdata_at: u32,
    rdata_len: u16,
}

/// A parsed response. Reuse one with [`Response::parse`]; the previous content is dropped.
#[derive(Default)]
pub(crate) struct Response {
    pub(crate) header: Header,
    /// The questions, as entries without RDATA.
    questions: Vec<Entry>,
    /// Answer, authority and additional records, in that order.
    records: Vec<Entry>,
    /// Where the authority and the additional sections start in `records`.
    authority_at: usize,
    additional_at: usize,
    names: Vec<u8>,
    rdata: Vec<u8>,
}

impl Response {
    /// Parses a whole message into this buffer; rejects trailing bytes (as
    /// [`shardns_wire::Message::parse`]). On error the content is unspecified.
    pub(crate) fn parse(&mut self, buf: &[u8]) -> Result<(), shardns_wire::Error> {
        self.header = Header::parse(buf)?;
        self.questions.clear();
        self.records.clear();
        self.names.clear();
        self.rdata.clear();
        let mut r = Reader::new(buf, HEADER_LEN);
        let mut name = NameBuf::new();
        for _ in 0..self.header.qdcount {
            r.name(&mut name)?;
            let rtype = RType(r.u16()?);
            let class = Class(r.u16()?);
            let owner = self.push_name(&name);
            self.questions.push(Entry {
                owner,
                owner_len: name.as_ref().len() as u8,
                rtype,
                class,
                ttl: 0,
                rdata_at: 0,
                rdata_len: 0,
            });
        }
        let h = self.header;
        self.authority_at = usize::from(h.ancount);
        self.additional_at = self.authority_at + usize::from(h.nscount);
        for _ in 0..usize::from(h.ancount) + usize::from(h.nscount) + usize::from(h.arcount) {
            r.name(&mut name)?;
            let rtype = RType(r.u16()?);
            let class = Class(r.u16()?);
            let ttl = r.u32()?;
            let rdlen = r.u16()? as usize;
            let start = r.pos();
            r.bytes(rdlen)?;
            let rdata_at = self.rdata.len();
            rdata::decompress(rtype, r.buf(), start, rdlen, &mut self.rdata)?;
            let rdata_len = self.rdata.len() - rdata_at;
            // Uncompressed RDATA can be longer than the 16-bit length it came with.
            let rdata_len = u16::try_from(rdata_len).map_err(|_| shardns_wire::Error::BadRdata)?;
            let owner = self.push_name(&name);
            self.records.push(Entry {
                owner,
                owner_len: name.as_ref().len() as u8,
                rtype,
                class,
                ttl,
                rdata_at: rdata_at as u32,
                rdata_len,
            });
        }
        if r.remaining() != 0 {
            return Err(shardns_wire::Error::TrailingData);
        }
        Ok(())
    }

    fn push_name(&mut self, name: &NameBuf) -> u32 {
        let at = self.names.len() as u32;
        self.names.extend_from_slice(name.as_ref().as_wire());
        at
    }

    fn rr(&self, e: &Entry) -> Rr<'_> {
        let wire = &self.names[e.owner as usize..e.owner as usize + usize::from(e.owner_len)];
        let rdata =
            &self.rdata[e.rdata_at as usize..e.rdata_at as usize + usize::from(e.rdata_len)];
        Rr {
            // Written from a checked `NameBuf` above, so this cannot fail.
            owner: NameRef::from_wire(wire).unwrap_or(NameRef::ROOT),
            rtype: e.rtype,
            class: e.class,
            ttl: e.ttl,
            rdata,
        }
    }

    /// The questions (owner, type and class; no RDATA).
    pub(crate) fn questions(&self) -> impl Iterator<Item = Rr<'_>> + Clone {
        self.questions.iter().map(|e| self.rr(e))
    }

    pub(crate) fn answers(&self) -> impl Iterator<Item = Rr<'_>> + Clone {
        self.section(0, self.authority_at)
    }

    pub(crate) fn authority(&self) -> impl Iterator<Item = Rr<'_>> + Clone {
        self.section(self.authority_at, self.additional_at)
    }

    /// The additional section, OPT included.
    pub(crate) fn additional(&self) -> impl Iterator<Item = Rr<'_>> + Clone {
        self.section(self.additional_at, self.records.len())
    }

    fn section(&self, from: usize, to: usize) -> impl Iterator<Item = Rr<'_>> + Clone {
        self.records[from..to].iter().map(|e| self.rr(e))
    }

    /// The response code, with the EDNS extension bits if an OPT record is present.
    pub(crate) fn rcode(&self) -> Rcode {
        let ext = self.opt().map_or(0, |opt| (opt.ttl >> 24) as u16);
        Rcode((ext << 4) | self.header.rcode_bits() as u16)
    }

    /// The OPT record, if any.
    pub(crate) fn opt(&self) -> Option<Rr<'_>> {
        self.additional().find(|r| r.rtype == RType::OPT)
    }

    pub(crate) fn answers_empty(&self) -> bool {
        self.authority_at == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::{Message, MessageWriter, Name, Section};

    /// Whatever wire's owning parser reads, this reads the same, section by section.
    #[test]
    fn agrees_with_the_owning_parser() {
        let n = |s: &str| s.parse::<Name>().unwrap();
        let mut buf = vec![0u8; 4096];
        let mut w = MessageWriter::new(&mut buf, 4096);
        w.put_question(n("www.Example.test.").as_ref(), RType::A, Class::IN)
            .unwrap();
        w.put_record(
            Section::Answer,
            n("www.example.test.").as_ref(),
            RType::CNAME,
            Class::IN,
            300,
            n("host.example.test.").as_wire(),
        )
        .unwrap();
        w.put_record(
            Section::Authority,
            n("example.test.").as_ref(),
            RType::NS,
            Class::IN,
            3600,
            n("ns.example.test.").as_wire(),
        )
        .unwrap();
        w.put_record(
            Section::Additional,
            n("ns.example.test.").as_ref(),
            RType::A,
            Class::IN,
            3600,
            &[192, 0, 2, 1],
        )
        .unwrap();
        w.put_opt(1232, 1, 0, false, &[]).unwrap();
        let mut h = Header::default();
        h.set_rcode(Rcode::BADVERS);
        let bytes = w.finish(&h).to_vec();
        let owned = Message::parse(&bytes).unwrap();
        let mut r = Response::default();
        // Parse something else first: nothing of it may remain.
        let mut other = vec![0u8; 512];
        let mut w = MessageWriter::new(&mut other, 512);
        w.put_question(n("other.test.").as_ref(), RType::MX, Class::IN)
            .unwrap();
        w.put_record(
            Section::Additional,
            n("other.test.").as_ref(),
            RType::A,
            Class::IN,
            1,
            &[10, 0, 0, 1],
        )
        .unwrap();
        let other = w.finish(&Header::default()).to_vec();
        r.parse(&other).unwrap();
        assert_eq!(r.additional().count(), 1);
        r.parse(&bytes).unwrap();
        let q: Vec<_> = r
            .questions()
            .map(|q| (q.owner.to_name(), q.rtype))
            .collect();
        assert_eq!(q, [(owned.questions[0].qname.clone(), RType::A)]);
        for (ours, theirs) in [
            (r.answers().collect::<Vec<_>>(), &owned.answers),
            (r.authority().collect(), &owned.authority),
            (r.additional().collect(), &owned.additional),
        ] {
            assert_eq!(ours.len(), theirs.len());
            for (a, b) in ours.iter().zip(theirs) {
                assert!(a.is(b), "{a:?} {b:?}");
                assert_eq!(a.to_record(), *b);
            }
        }
        assert_eq!(r.rcode(), owned.rcode());
        assert_eq!(r.rcode(), Rcode::BADVERS);
        assert!(r.opt().is_some() && !r.answers_empty());
        // Truncated or padded input is refused, as by the owning parser.
        assert!(r.parse(&bytes[..bytes.len() - 1]).is_err());
        let mut padded = bytes.clone();
        padded.push(0);
        assert_eq!(r.parse(&padded), Err(shardns_wire::Error::TrailingData));
    }
}
