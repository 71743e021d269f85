//! Dynamic update (RFC 2136), the client's side: [`Update`] builds an UPDATE message (the
//! zone, prerequisites of the five §2.4 forms, the four §2.5 changes), TSIG-signed or not
//! (RFC 8945, with [`tsig::sign_request`]); the [`Request`] it gives reads the server's
//! answer (the rcode, once the TSIG is verified with [`ResponseVerifier`]). For the DS push
//! to a parent (issue 29) and for tests. No I/O, no clock, no randomness: the caller picks
//! the ID, sends, receives and passes "now".

use crate::message::{Header, Reader, HEADER_LEN};
use crate::name::{Name, NameBuf, NameRef};
use crate::tsig::{self, Key, ResponseVerifier};
use crate::types::{Class, Opcode, RType, Rcode};
use crate::writer::{Full, MessageWriter, Section};
use crate::Error;

/// Largest message: what TCP can carry (RFC 1035 §4.2.2).
const MAX_MESSAGE: usize = 65535;

/// Octets a TSIG record takes at most beside its key name: owner's fixed fields (10), the
/// algorithm's name (13), time, fudge and lengths (16), the longest MAC (64).
const TSIG_FIXED: usize = 10 + 13 + 16 + 64;

/// One record of the message: owner, type, class, TTL, uncompressed rdata.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rr {
    owner: Name,
    rtype: RType,
    class: Class,
    ttl: u32,
    rdata: Vec<u8>,
}

impl Rr {
    fn new(owner: NameRef<'_>, rtype: RType, class: Class, ttl: u32, rdata: &[u8]) -> Self {
        Self {
            owner: owner.to_name(),
            rtype,
            class,
            ttl,
            rdata: rdata.to_vec(),
        }
    }
}

/// An UPDATE message being built for one zone (class IN). Records go in the order given;
/// names are not checked against the zone (the server answers NOTZONE), so that tests can
/// send what a server must refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    zone: Name,
    id: u16,
    prereqs: Vec<Rr>,
    updates: Vec<Rr>,
}

impl Update {
    /// An empty update of `zone`, with message ID `id` (the caller's random choice: the
    /// answer is matched by it).
    pub fn new(zone: NameRef<'_>, id: u16) -> Self {
        Self {
            zone: zone.to_name(),
            id,
            prereqs: Vec::new(),
            updates: Vec::new(),
        }
    }

    fn pre(&mut self, owner: NameRef<'_>, rtype: RType, class: Class, rdata: &[u8]) -> &mut Self {
        self.prereqs.push(Rr::new(owner, rtype, class, 0, rdata));
        self
    }

    fn upd(
        &mut self,
        owner: NameRef<'_>,
        rtype: RType,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> &mut Self {
        self.updates.push(Rr::new(owner, rtype, class, ttl, rdata));
        self
    }

    /// §2.4.1: an RRset of `rtype` exists at `owner`, whatever its records.
    pub fn require_rrset(&mut self, owner: NameRef<'_>, rtype: RType) -> &mut Self {
        self.pre(owner, rtype, Class::ANY, &[])
    }

    /// §2.4.2: the RRset `owner`/`rtype` holds exactly the records given by the calls for
    /// that owner and type, one record (uncompressed rdata) a call.
    pub fn require_rrset_with(
        &mut self,
        owner: NameRef<'_>,
        rtype: RType,
        rdata: &[u8],
    ) -> &mut Self {
        self.pre(owner, rtype, Class::IN, rdata)
    }

    /// §2.4.3: no RRset of `rtype` at `owner`.
    pub fn require_no_rrset(&mut self, owner: NameRef<'_>, rtype: RType) -> &mut Self {
        self.pre(owner, rtype, Class::NONE, &[])
    }

    /// §2.4.4: `owner` has at least one record.
    pub fn require_name(&mut self, owner: NameRef<'_>) -> &mut Self {
        self.pre(owner, RType::ANY, Class::ANY, &[])
    }

    /// §2.4.5: `owner` has no record.
    pub fn require_no_name(&mut self, owner: NameRef<'_>) -> &mut Self {
        self.pre(owner, RType::ANY, Class::NONE, &[])
    }

    /// §2.5.1: add a record (uncompressed rdata).
    pub fn add(&mut self, owner: NameRef<'_>, rtype: RType, ttl: u32, rdata: &[u8]) -> &mut Self {
        self.upd(owner, rtype, Class::IN, ttl, rdata)
    }

    /// §2.5.2: delete the RRset `owner`/`rtype`.
    pub fn delete_rrset(&mut self, owner: NameRef<'_>, rtype: RType) -> &mut Self {
        self.upd(owner, rtype, Class::ANY, 0, &[])
    }

    /// §2.5.3: delete every RRset of `owner` (at the apex, the server keeps SOA and NS).
    pub fn delete_name(&mut self, owner: NameRef<'_>) -> &mut Self {
        self.upd(owner, RType::ANY, Class::ANY, 0, &[])
    }

    /// §2.5.4: delete one record (uncompressed rdata).
    pub fn delete_record(&mut self, owner: NameRef<'_>, rtype: RType, rdata: &[u8]) -> &mut Self {
        self.upd(owner, rtype, Class::NONE, 0, rdata)
    }

    /// The message, signed with `key` at `now` (seconds since 1970) if there is one, and the
    /// request that reads its answer. [`Full`] if it would pass 65535 octets.
    pub fn finish(&self, key: Option<&Key>, now: u64) -> Result<Request, Full> {
        let room = key.map_or(0, |k| k.name.as_ref().len() + TSIG_FIXED);
        let mut buf = vec![0u8; MAX_MESSAGE];
        let mut w = MessageWriter::new(&mut buf, MAX_MESSAGE - room);
        w.put_question(self.zone.as_ref(), RType::SOA, Class::IN)?;
        for (section, rrs) in [
            (Section::Answer, &self.prereqs),
            (Section::Authority, &self.updates),
        ] {
            for rr in rrs {
                w.put_record(
                    section,
                    rr.owner.as_ref(),
                    rr.rtype,
                    rr.class,
                    rr.ttl,
                    &rr.rdata,
                )?;
            }
        }
        let mut h = Header {
            id: self.id,
            ..Header::default()
        };
        h.set_opcode(Opcode::UPDATE);
        let mut len = w.finish(&h).len();
        let verifier = match key {
            Some(k) => {
                len = tsig::sign_request(&mut buf, len, k, now);
                let mac = tsig::read(&buf[..len])
                    .ok()
                    .flatten()
                    .map(|s| s.mac)
                    .unwrap_or_default();
                Some(ResponseVerifier::new(k, &mac))
            }
            None => None,
        };
        buf.truncate(len);
        Ok(Request {
            msg: buf,
            id: self.id,
            zone: self.zone.clone(),
            verifier,
        })
    }
}

/// An UPDATE message ready to send, and what reads its answer.
#[derive(Debug, Clone)]
pub struct Request {
    msg: Vec<u8>,
    id: u16,
    zone: Name,
    verifier: Option<ResponseVerifier>,
}

impl Request {
    /// The message to send.
    pub fn message(&self) -> &[u8] {
        &self.msg
    }

    /// Reads `msg`, received at `now`, as the answer to this request.
    ///
    /// `Ok(None)`: not its answer (not a response, another ID or opcode, another zone, or
    /// unreadable): ignore it and keep waiting, as a resolver ignores a stray answer.
    /// `Ok(Some(rcode))`: the server's answer, its TSIG verified if the request was signed
    /// (NOERROR: done; the other rcodes are RFC 2136 §2.2's). `Err`: the TSIG of a signed
    /// request's answer fails: unsigned or forged (the request stays as it was, so the real
    /// answer may still come), or the server's own TSIG error (`ServerError(BADKEY)` or
    /// `BADSIG` with NOTAUTH, `SignedError` for BADTIME).
    pub fn response(&mut self, msg: &[u8], now: u64) -> Result<Option<Rcode>, Error> {
        let Ok(h) = Header::parse(msg) else {
            return Ok(None);
        };
        if !h.qr() || h.opcode() != Opcode::UPDATE || h.id != self.id {
            return Ok(None);
        }
        let Some(rcode) = self.rcode(msg, &h) else {
            return Ok(None);
        };
        if let Some(v) = &mut self.verifier {
            v.verify(msg, now)?;
        }
        Ok(Some(rcode))
    }

    /// The rcode of a response to this request (the header's, with an OPT record's upper
    /// bits), or `None` if its zone section names another zone or it does not read. Records
    /// are skipped, not parsed: a server may echo the request's sections, whose empty rdata
    /// fits no type.
    fn rcode(&self, msg: &[u8], h: &Header) -> Option<Rcode> {
        let mut r = Reader::new(msg, HEADER_LEN);
        let mut name = NameBuf::new();
        // The zone section comes back, or (FORMERR and the like) none at all.
        match h.qdcount {
            0 => {}
            1 => {
                r.name(&mut name).ok()?;
                let (qtype, qclass) = (RType(r.u16().ok()?), Class(r.u16().ok()?));
                if !name.as_ref().eq_ci(&self.zone.as_ref())
                    || qtype != RType::SOA
                    || qclass != Class::IN
                {
                    return None;
                }
            }
            _ => return None,
        }
        let mut high = 0u16;
        for _ in 0..u32::from(h.ancount) + u32::from(h.nscount) + u32::from(h.arcount) {
            r.skip_name().ok()?;
            let rtype = RType(r.u16().ok()?);
            r.u16().ok()?;
            let ttl = r.u32().ok()?;
            let len = usize::from(r.u16().ok()?);
            r.bytes(len).ok()?;
            if rtype == RType::OPT {
                high = (ttl >> 24) as u16;
            }
        }
        (r.remaining() == 0).then_some(Rcode(high << 4 | u16::from(h.rcode_bits())))
    }
}

#[cfg(test)]
mod tests;
