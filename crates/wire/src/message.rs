//! Message parsing: the header, a bounds-checked reader, questions and whole messages.
//!
//! [`Header`] and [`read_question`] serve the allocation-free query path; [`Message`] is the
//! general, owning parse (tests, the bench, the resolver), with rdata decompressed.

use crate::error::Error;
use crate::name::{NameBuf, NameKind};
use crate::rdata;
use crate::types::{Class, RType, Rcode};
use crate::Name;
use core::fmt;

pub use crate::header::{Header, HEADER_LEN};

/// A bounds-checked cursor over bytes.
#[derive(Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at `pos` in `buf`.
    pub fn new(buf: &'a [u8], pos: usize) -> Self {
        Self { buf, pos }
    }
    /// Current position.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// The whole underlying buffer.
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }
    /// Reads one octet.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, Error> {
        let v = *self.buf.get(self.pos).ok_or(Error::ShortInput)?;
        self.pos += 1;
        Ok(v)
    }
    /// Reads a big-endian u16.
    #[inline]
    pub fn u16(&mut self) -> Result<u16, Error> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    /// Reads a big-endian u32.
    #[inline]
    pub fn u32(&mut self) -> Result<u32, Error> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// Reads `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).ok_or(Error::ShortInput)?;
        let b = self.buf.get(self.pos..end).ok_or(Error::ShortInput)?;
        self.pos = end;
        Ok(b)
    }
    /// Reads a possibly compressed name into `out`.
    #[inline]
    pub fn name(&mut self, out: &mut NameBuf) -> Result<(), Error> {
        self.pos = out.read(self.buf, self.pos).map_err(Error::BadName)?;
        Ok(())
    }
    /// Skips a possibly compressed name without following pointers.
    pub fn skip_name(&mut self) -> Result<(), Error> {
        loop {
            let len = self.u8()?;
            match len & 0xc0 {
                0 if len == 0 => return Ok(()),
                0 => {
                    self.bytes(len as usize)?;
                }
                0xc0 => {
                    self.u8()?;
                    return Ok(());
                }
                _ => return Err(Error::BadName(NameKind::BadLabelType)),
            }
        }
    }
}

impl Header {
    /// Parses the first 12 octets.
    #[inline]
    pub fn parse(buf: &[u8]) -> Result<Self, Error> {
        let b: &[u8; HEADER_LEN] = buf
            .get(..HEADER_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(Error::ShortInput)?;
        let w = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        Ok(Self {
            id: w(0),
            flags: w(2),
            qdcount: w(4),
            ancount: w(6),
            nscount: w(8),
            arcount: w(10),
        })
    }
}

/// One question (RFC 1035 §4.1.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// QNAME.
    pub qname: Name,
    /// QTYPE.
    pub qtype: RType,
    /// QCLASS.
    pub qclass: Class,
}

/// Reads one question at `pos` into `qname`; returns (qtype, qclass, position after it).
#[inline]
pub fn read_question(
    msg: &[u8],
    pos: usize,
    qname: &mut NameBuf,
) -> Result<(RType, Class, usize), Error> {
    let mut r = Reader::new(msg, pos);
    r.name(qname)?;
    let t = r.u16()?;
    let c = r.u16()?;
    Ok((RType(t), Class(c), r.pos()))
}

/// A resource record with uncompressed rdata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Owner name.
    pub owner: Name,
    /// Type.
    pub rtype: RType,
    /// Class (for OPT, the UDP payload size).
    pub class: Class,
    /// TTL (for OPT, the extended RCODE, version and flags).
    pub ttl: u32,
    /// Rdata in uncompressed wire form.
    pub rdata: Vec<u8>,
}

impl fmt::Display for Record {
    /// One line of presentation format: `owner TTL CLASS TYPE rdata`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} ",
            self.owner, self.ttl, self.class, self.rtype
        )?;
        rdata::fmt_text(self.rtype, &self.rdata, f)
    }
}

/// A whole parsed message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// The header as received (counts included).
    pub header: Header,
    /// Question section.
    pub questions: Vec<Question>,
    /// Answer section.
    pub answers: Vec<Record>,
    /// Authority section.
    pub authority: Vec<Record>,
    /// Additional section, OPT included.
    pub additional: Vec<Record>,
}

impl Message {
    /// Parses a whole message; rejects trailing bytes.
    pub fn parse(buf: &[u8]) -> Result<Self, Error> {
        let header = Header::parse(buf)?;
        let mut r = Reader::new(buf, HEADER_LEN);
        let mut name = NameBuf::new();
        let mut m = Message {
            header,
            ..Default::default()
        };
        for _ in 0..header.qdcount {
            r.name(&mut name)?;
            let qtype = RType(r.u16()?);
            let qclass = Class(r.u16()?);
            m.questions.push(Question {
                qname: name.as_ref().to_name(),
                qtype,
                qclass,
            });
        }
        for (count, section) in [
            (header.ancount, &mut m.answers),
            (header.nscount, &mut m.authority),
            (header.arcount, &mut m.additional),
        ] {
            for _ in 0..count {
                section.push(read_record(&mut r, &mut name)?);
            }
        }
        if r.remaining() != 0 {
            return Err(Error::TrailingData);
        }
        Ok(m)
    }

    /// The response code, with the EDNS extension bits if an OPT record is present.
    pub fn rcode(&self) -> Rcode {
        let ext = self
            .additional
            .iter()
            .find(|r| r.rtype == RType::OPT)
            .map_or(0, |opt| (opt.ttl >> 24) as u16);
        Rcode((ext << 4) | self.header.rcode_bits() as u16)
    }

    /// The OPT record, if any.
    pub fn opt(&self) -> Option<&Record> {
        self.additional.iter().find(|r| r.rtype == RType::OPT)
    }
}

/// Reads one resource record, decompressing names inside its rdata.
pub fn read_record(r: &mut Reader<'_>, name: &mut NameBuf) -> Result<Record, Error> {
    r.name(name)?;
    let rtype = RType(r.u16()?);
    let class = Class(r.u16()?);
    let ttl = r.u32()?;
    let rdlen = r.u16()? as usize;
    let start = r.pos();
    r.bytes(rdlen)?;
    let mut rdata = Vec::with_capacity(rdlen);
    rdata::decompress(rtype, r.buf(), start, rdlen, &mut rdata)?;
    Ok(Record {
        owner: name.as_ref().to_name(),
        rtype,
        class,
        ttl,
        rdata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Opcode;

    #[test]
    fn header_flags() {
        let mut h = Header::default();
        h.set_qr(true);
        h.set_aa(true);
        h.set_opcode(Opcode::NOTIFY);
        h.set_rcode(Rcode::NXDOMAIN);
        assert_eq!(h.flags, 0x8000 | 0x0400 | (4 << 11) | 3);
        assert!(h.qr() && h.aa() && !h.tc());
        assert_eq!(Header::parse(&h.to_bytes()).unwrap(), h);
        assert_eq!(Header::parse(&[0; 11]), Err(Error::ShortInput));
    }

    #[test]
    fn reader_bounds() {
        let mut r = Reader::new(&[1, 2, 3], 0);
        assert_eq!(r.u16().unwrap(), 0x0102);
        assert_eq!(r.u16(), Err(Error::ShortInput));
        assert_eq!(r.bytes(usize::MAX), Err(Error::ShortInput));
        assert_eq!(r.u8().unwrap(), 3);
    }
}
