//! The queries a secondary sends (SOA, AXFR, IXFR from our version, each signed when a
//! TSIG key is given), reading the answer to an SOA query, and the checks every answer
//! must pass against the query it answers (ID, question).

use super::{malformed, read_raw, soa_serial};
use crate::db::Zone;
use crate::error::Error;
use shardns_wire::message::{Reader, HEADER_LEN};
use shardns_wire::tsig::{self, Key, ResponseVerifier};
use shardns_wire::{Class, Header, MessageWriter, Name, NameBuf, Opcode, RType, Rcode, Section};

/// A query we sent, and what checks its answers.
#[derive(Debug)]
pub struct Request {
    /// The query in wire form (signed if a key was given).
    pub bytes: Vec<u8>,
    pub(super) apex: Name,
    pub(super) qtype: RType,
    pub(super) id: u16,
    pub(super) verifier: Option<ResponseVerifier>,
}

impl Request {
    /// The query's type (SOA, AXFR or IXFR).
    pub fn qtype(&self) -> RType {
        self.qtype
    }
}

/// Writes a query for `apex`: `SOA`, `AXFR`, or `IXFR` from the version `current` (its SOA
/// in the authority section, RFC 1995 §3), signed with `key` at `now` if given.
pub fn request(
    apex: &Name,
    qtype: RType,
    id: u16,
    current: Option<&Zone>,
    key: Option<&Key>,
    now: u64,
) -> Request {
    let mut bytes = vec![0u8; 1024];
    let mut w = MessageWriter::new(&mut bytes, 512);
    let _ = w.put_question(apex.as_ref(), qtype, Class::IN);
    if let (RType::IXFR, Some(zone)) = (qtype, current) {
        let apex_node = zone.apex_node();
        if let Some(soa) = apex_node.rrset(RType::SOA) {
            if let Some(rdata) = soa.rdatas().next() {
                let _ = w.put_record(
                    Section::Authority,
                    apex_node.name(),
                    RType::SOA,
                    Class::IN,
                    soa.ttl,
                    rdata,
                );
            }
        }
    }
    let h = Header {
        id,
        ..Header::default()
    };
    let mut len = w.finish(&h).len();
    let mut verifier = None;
    if let Some(key) = key {
        len = tsig::sign_request(&mut bytes, len, key, now);
        if let Ok(Some(sig)) = tsig::read(&bytes[..len]) {
            verifier = Some(ResponseVerifier::new(key, &sig.mac));
        }
    }
    bytes.truncate(len);
    Request {
        bytes,
        apex: apex.clone(),
        qtype,
        id,
        verifier,
    }
}

/// What the answer to an SOA query says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoaAnswer {
    /// The primary's serial.
    Serial(u32),
    /// TC: ask again over TCP.
    Truncated,
}

/// Reads the answer `msg` to the SOA query `req` (at `now`, for its TSIG). A message that
/// is not an answer to it (another ID, a query) is [`Error::Malformed`]: over UDP, keep
/// waiting for the real one.
pub fn read_soa(req: &mut Request, msg: &[u8], now: u64) -> Result<SoaAnswer, Error> {
    let (h, mut r) = check_header(req, msg, true)?;
    if h.tc() {
        return Ok(SoaAnswer::Truncated);
    }
    if let Some(v) = req.verifier.as_mut() {
        v.verify(msg, now)?;
    }
    let rcode = Rcode(h.rcode_bits().into());
    if rcode != Rcode::NOERROR {
        return Err(Error::Rcode(rcode));
    }
    if !h.aa() {
        return Err(Error::WrongZone(format!(
            "the primary is not authoritative for {}",
            req.apex
        )));
    }
    let mut name = NameBuf::new();
    for _ in 0..h.ancount {
        let rec = read_raw(&mut r, &mut name)?;
        if rec.rtype == RType::SOA && name.as_ref().eq_ci(&req.apex.as_ref()) {
            return soa_serial(msg, rec.rdata, rec.rdlen).map(SoaAnswer::Serial);
        }
    }
    Err(Error::WrongZone(format!(
        "no SOA for {} in the answer",
        req.apex
    )))
}

/// Checks that `msg` answers `req`; returns its header and a reader after the question.
pub(super) fn check_header<'m>(
    req: &Request,
    msg: &'m [u8],
    question_required: bool,
) -> Result<(Header, Reader<'m>), Error> {
    let h = Header::parse(msg).map_err(|e| Error::Malformed(e.to_string()))?;
    if h.id != req.id || !h.qr() || h.opcode() != Opcode::QUERY {
        return Err(Error::Malformed(format!(
            "not an answer to our query (ID {}, QR {}, opcode {})",
            h.id,
            h.qr(),
            h.opcode().0
        )));
    }
    let mut r = Reader::new(msg, HEADER_LEN);
    if h.qdcount > 1 || (question_required && h.qdcount == 0 && h.rcode_bits() == 0) {
        return Err(Error::Malformed(format!("{} questions", h.qdcount)));
    }
    if h.qdcount == 1 {
        let mut name = NameBuf::new();
        r.name(&mut name)
            .map_err(|e| Error::Malformed(e.to_string()))?;
        let qtype = RType(r.u16().map_err(malformed)?);
        let qclass = Class(r.u16().map_err(malformed)?);
        if !name.as_ref().eq_ci(&req.apex.as_ref()) || qtype != req.qtype || qclass != Class::IN {
            return Err(Error::Malformed(format!(
                "the question is {} {qtype}, not {} {}",
                name.as_ref(),
                req.apex,
                req.qtype
            )));
        }
    }
    Ok((h, r))
}
