//! EDNS(0) (RFC 6891): the OPT record of a query, read without allocation.

use crate::error::Error;
use crate::message::{Header, Reader, HEADER_LEN};
use crate::types::RType;

/// What a query's OPT record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// Requestor's UDP payload size (values under 512 are treated as 512).
    pub udp_size: u16,
    /// Upper eight bits of the extended RCODE.
    pub ext_rcode: u8,
    /// EDNS version.
    pub version: u8,
    /// The DO bit (RFC 3225).
    pub dnssec_ok: bool,
    /// Where the options start and end in the message.
    pub options: (usize, usize),
}

/// The end of the question section and the query's OPT record, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// The OPT record.
    pub edns: Option<Edns>,
    /// The last record is a TSIG (RFC 8945): the query is signed.
    pub tsig: bool,
}

/// Walks the answer, authority and additional sections after `pos` (just past the question)
/// and picks out the OPT record. More than one OPT, an OPT outside the additional section or
/// not owned by the root, or any byte after the last record is a format error (RFC 6891 §6.1.1);
/// so is a TSIG anywhere but last in the additional section, which also rules out two of
/// them (RFC 8945 §5.1).
pub fn read_trailer(msg: &[u8], header: &Header, pos: usize) -> Result<Trailer, Error> {
    walk(msg, header, pos)
}

/// [`read_trailer`] for [`crate::Query::parse`], which answers every failure the same
/// (FORMERR): returning the 24-byte [`Error`] it would drop cost every query 17
/// instructions (callgrind), `None` costs none.
pub(crate) fn trailer(msg: &[u8], header: &Header, pos: usize) -> Option<Trailer> {
    walk(msg, header, pos).ok()
}

#[inline(always)]
fn walk(msg: &[u8], header: &Header, pos: usize) -> Result<Trailer, Error> {
    debug_assert!(pos >= HEADER_LEN);
    let mut r = Reader::new(msg, pos);
    let mut edns = None;
    let mut tsig = false;
    let total = header.ancount as usize + header.nscount as usize + header.arcount as usize;
    let first_additional = header.ancount as usize + header.nscount as usize;
    for i in 0..total {
        let owner_at = r.pos();
        r.skip_name()?;
        let rtype = RType(r.u16()?);
        let class = r.u16()?;
        let ttl = r.u32()?;
        let rdlen = r.u16()? as usize;
        let start = r.pos();
        r.bytes(rdlen)?;
        // The common query (no TSIG) pays one comparison per record, as before.
        tsig = rtype == RType::TSIG;
        if tsig && (i + 1 != total || i < first_additional) {
            return Err(Error::BadOpt);
        }
        if rtype == RType::OPT {
            if i < first_additional || edns.is_some() || msg[owner_at] != 0 {
                return Err(Error::BadOpt);
            }
            edns = Some(Edns {
                udp_size: class,
                ext_rcode: (ttl >> 24) as u8,
                version: (ttl >> 16) as u8,
                dnssec_ok: ttl & 0x8000 != 0,
                options: (start, start + rdlen),
            });
        }
    }
    if r.remaining() != 0 {
        return Err(Error::TrailingData);
    }
    Ok(Trailer { edns, tsig })
}

/// EDNS option code of NSID, the name server identifier (RFC 5001).
pub const OPTION_NSID: u16 = 3;
/// EDNS option code of COOKIE (RFC 7873).
pub const OPTION_COOKIE: u16 = 10;
/// EDNS option code of PADDING (RFC 7830).
pub const OPTION_PADDING: u16 = 12;

/// Where the OPT record starts in `msg` when it is the message's last record, as in every
/// response a server writes without TSIG: the sections are walked (names may be
/// compressed). `None` if there is no OPT, another record follows it, or `msg` is not
/// readable.
pub fn opt_at_end(msg: &[u8]) -> Option<usize> {
    let header = Header::parse(msg).ok()?;
    let mut r = Reader::new(msg, HEADER_LEN);
    for _ in 0..header.qdcount {
        r.skip_name().ok()?;
        r.u16().ok()?;
        r.u16().ok()?;
    }
    let total = header.ancount as usize + header.nscount as usize + header.arcount as usize;
    let mut last = None;
    for _ in 0..total {
        let at = r.pos();
        r.skip_name().ok()?;
        let rtype = RType(r.u16().ok()?);
        r.u16().ok()?;
        r.u32().ok()?;
        let rdlen = r.u16().ok()? as usize;
        r.bytes(rdlen).ok()?;
        last = (rtype == RType::OPT && msg[at] == 0).then_some(at);
    }
    last.filter(|_| r.remaining() == 0)
}

/// Iterates over (code, data) of the EDNS options in `data`; stops at a malformed option.
pub fn options(data: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut r = Reader::new(data, 0);
    core::iter::from_fn(move || {
        let code = r.u16().ok()?;
        let len = r.u16().ok()? as usize;
        Some((code, r.bytes(len).ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::MessageWriter;
    use crate::{Class, Name};

    #[test]
    fn finds_opt_and_rejects_two() {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        let q: Name = "example.".parse().unwrap();
        w.put_question(q.as_ref(), RType::A, Class::IN).unwrap();
        let qend = w.len();
        w.put_opt(4096, 0, 0, true, &[0, 10, 0, 2, 1, 2]).unwrap();
        let msg = w.finish(&Header::default()).to_vec();
        let h = Header::parse(&msg).unwrap();
        let e = read_trailer(&msg, &h, qend).unwrap().edns.unwrap();
        assert_eq!((e.udp_size, e.version, e.dnssec_ok), (4096, 0, true));
        let opts: Vec<_> = options(&msg[e.options.0..e.options.1]).collect();
        assert_eq!(opts, vec![(10u16, &[1u8, 2][..])]);

        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(q.as_ref(), RType::A, Class::IN).unwrap();
        w.put_opt(4096, 0, 0, false, &[]).unwrap();
        w.put_opt(4096, 0, 0, false, &[]).unwrap();
        let msg = w.finish(&Header::default()).to_vec();
        let h = Header::parse(&msg).unwrap();
        assert_eq!(read_trailer(&msg, &h, qend), Err(Error::BadOpt));
        let mut long = msg.clone();
        long.push(0);
        assert!(read_trailer(&long, &h, qend).is_err());
    }

    #[test]
    fn tsig_only_last_and_only_once() {
        let mut buf = [0u8; 512];
        let q: Name = "example.".parse().unwrap();
        // A minimal TSIG record (what its RDATA holds does not matter here).
        let tsig = [0u8, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0];
        let build = |buf: &mut [u8], opt_first: bool, tsigs: usize, opt_after: bool| {
            let mut w = MessageWriter::new(buf, 512);
            w.put_question(q.as_ref(), RType::A, Class::IN).unwrap();
            let qend = w.len();
            if opt_first {
                w.put_opt(1232, 0, 0, false, &[]).unwrap();
            }
            let mut msg = w.finish(&Header::default()).to_vec();
            for _ in 0..tsigs {
                msg.extend_from_slice(&tsig);
            }
            if opt_after {
                msg.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
            }
            let ar = u16::from(opt_first) + tsigs as u16 + u16::from(opt_after);
            msg[10..12].copy_from_slice(&ar.to_be_bytes());
            (msg, qend)
        };
        let (msg, qend) = build(&mut buf, true, 1, false);
        let h = Header::parse(&msg).unwrap();
        assert!(read_trailer(&msg, &h, qend).unwrap().tsig);
        for (opt_first, tsigs, opt_after) in [(false, 1, true), (false, 2, false), (true, 2, false)]
        {
            let (msg, qend) = build(&mut buf, opt_first, tsigs, opt_after);
            let h = Header::parse(&msg).unwrap();
            assert_eq!(
                read_trailer(&msg, &h, qend),
                Err(Error::BadOpt),
                "{opt_first} {tsigs} {opt_after}"
            );
        }
        // A TSIG as the last record but in the answer section.
        let (mut msg, qend) = build(&mut buf, false, 1, false);
        msg[7] = 1;
        msg[11] = 0;
        let h = Header::parse(&msg).unwrap();
        assert_eq!(read_trailer(&msg, &h, qend), Err(Error::BadOpt));
    }

    #[test]
    fn opt_at_end_finds_only_a_last_opt() {
        let mut buf = [0u8; 512];
        let q: Name = "example.".parse().unwrap();
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(q.as_ref(), RType::A, Class::IN).unwrap();
        let qend = w.len();
        w.put_opt(1232, 0, 0, false, &[0, 3, 0, 0]).unwrap();
        let msg = w.finish(&Header::default()).to_vec();
        assert_eq!(opt_at_end(&msg), Some(qend));
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(q.as_ref(), RType::A, Class::IN).unwrap();
        let msg = w.finish(&Header::default()).to_vec();
        assert_eq!(opt_at_end(&msg), None);
        assert_eq!(opt_at_end(&msg[..5]), None);
    }
}
