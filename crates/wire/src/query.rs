//! One incoming query, parsed once: the header, the question and the OPT record, read
//! without allocation into a value every later step (the zones, the transfer policy, the
//! resolver, the query log) reads instead of parsing the bytes again.
//!
//! Parsing decides only what the bytes are, not what a server does with them: an opcode the
//! server does not serve or a class it has no data for still parses. [`Error::NotAQuery`] and [`Error::Malformed`] say
//! which messages cannot be a query at all (drop them) and which are malformed queries
//! (answer FORMERR, or NOTIMP for an opcode the server does not implement).

use crate::edns::{trailer, Edns};
use crate::error::Error;
use crate::message::{read_question, Header, HEADER_LEN};
use crate::name::{NameBuf, NameRef};
use crate::types::{Class, RType};

/// How a query arrived; it decides the size limit of the response (RFC 1035 §4.2, RFC 6891).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A datagram: 512 octets without EDNS, else the client's size capped by the server's.
    Udp,
    /// A stream (TCP, and later TLS or QUIC): up to 65535 octets.
    Tcp,
}

/// A query read from `bytes`: the header, its one question and its OPT record.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    bytes: &'a [u8],
    header: Header,
    qname: NameBuf,
    qtype: RType,
    qclass: Class,
    question_end: usize,
    edns: Option<Edns>,
    /// The last record is a TSIG.
    tsig: bool,
}

impl<'a> Query<'a> {
    /// Parses `bytes` as a query with exactly one question. The sections after the
    /// question are walked only to find the OPT record and to reject trailing garbage
    /// (RFC 6891 §6.1.1).
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let header = Header::parse(bytes).map_err(|_| Error::NotAQuery)?;
        if header.qr() {
            return Err(Error::NotAQuery);
        }
        let malformed = |qtype| Error::Malformed { header, qtype };
        if header.qdcount != 1 {
            return Err(malformed(None));
        }
        let mut qname = NameBuf::new();
        let (qtype, qclass, question_end) =
            read_question(bytes, HEADER_LEN, &mut qname).map_err(|_| malformed(None))?;
        let trailer =
            trailer(bytes, &header, question_end).ok_or_else(|| malformed(Some(qtype)))?;
        Ok(Self {
            bytes,
            header,
            qname,
            qtype,
            qclass,
            question_end,
            edns: trailer.edns,
            tsig: trailer.tsig,
        })
    }

    /// The whole message as received (TSIG and the IXFR authority section are read from it).
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The header.
    #[inline]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// QNAME, in the case the client sent.
    #[inline]
    pub fn qname(&self) -> NameRef<'_> {
        self.qname.as_ref()
    }

    /// QTYPE.
    #[inline]
    pub fn qtype(&self) -> RType {
        self.qtype
    }

    /// QCLASS.
    #[inline]
    pub fn qclass(&self) -> Class {
        self.qclass
    }

    /// Where the question ends (the answer section, if any, starts here).
    #[inline]
    pub fn question_end(&self) -> usize {
        self.question_end
    }

    /// The OPT record, if the query has one.
    #[inline]
    pub fn edns(&self) -> Option<Edns> {
        self.edns
    }

    /// True if the query ends with a TSIG record (signed, RFC 8945; `tsig::read` reads it).
    #[inline]
    pub fn has_tsig(&self) -> bool {
        self.tsig
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Opcode;
    use crate::writer::MessageWriter;
    use crate::Name;

    fn query(qtype: RType, edns: bool) -> Vec<u8> {
        let mut buf = vec![0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        let name: Name = "www.Example.test.".parse().unwrap();
        w.put_question(name.as_ref(), qtype, Class::IN).unwrap();
        if edns {
            w.put_opt(1232, 0, 0, true, &[]).unwrap();
        }
        let mut h = Header {
            id: 7,
            ..Header::default()
        };
        h.set_rd(true);
        let len = w.finish(&h).len();
        buf.truncate(len);
        buf
    }

    #[test]
    fn reads_question_and_opt() {
        let bytes = query(RType::AAAA, true);
        let q = Query::parse(&bytes).unwrap();
        assert_eq!(q.header().id, 7);
        assert!(q.header().rd());
        assert_eq!(q.qname().to_string(), "www.Example.test.");
        assert_eq!(q.qtype(), RType::AAAA);
        assert_eq!(q.qclass(), Class::IN);
        let e = q.edns().unwrap();
        assert_eq!(e.udp_size, 1232);
        assert!(e.dnssec_ok);
        assert_eq!(q.bytes().len(), bytes.len());
        let plain = query(RType::A, false);
        assert!(Query::parse(&plain).unwrap().edns().is_none());
    }

    #[test]
    fn not_a_query_and_malformed() {
        assert_eq!(Query::parse(&[0; 11]).unwrap_err(), Error::NotAQuery);
        let mut response = query(RType::A, false);
        response[2] |= 0x80;
        assert_eq!(Query::parse(&response).unwrap_err(), Error::NotAQuery);

        // Two questions: the header is kept for the FORMERR.
        let mut two = query(RType::A, false);
        two[5] = 2;
        match Query::parse(&two) {
            Err(Error::Malformed { header, qtype }) => {
                assert_eq!(header.id, 7);
                assert_eq!(qtype, None);
            }
            other => panic!("{other:?}"),
        }
        // A byte after the last section: the question was readable.
        let mut trailing = query(RType::MX, false);
        trailing.push(0);
        assert_eq!(
            Query::parse(&trailing).unwrap_err(),
            Error::Malformed {
                header: Header::parse(&trailing).unwrap(),
                qtype: Some(RType::MX)
            }
        );
        // Any opcode parses: what to do with it is the server's choice.
        let mut notify = query(RType::SOA, false);
        notify[2] |= 4 << 3;
        let q = Query::parse(&notify).unwrap();
        assert!(q.header().opcode() == Opcode::NOTIFY);
    }
}
