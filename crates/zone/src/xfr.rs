//! Outgoing zone transfers: AXFR (RFC 5936), and IXFR (RFC 1995) answered from the current
//! version of a zone.
//!
//! [`request`] reads a transfer query. [`Transfer`] writes the whole zone as a sequence of
//! messages of up to 16 KiB, one per call, so the server can send each while the client
//! reads and never holds more than a few messages of a big zone; it keeps the zone version
//! it started with (`Arc<Zone>`), so a reload during a transfer cannot mix two versions, and
//! signs each message when given a TSIG signer (verifying the request's TSIG and deciding
//! who may transfer a zone, by address or key, are the caller's). [`reply`] writes
//! the one-message answers: refusals and errors, and IXFR when the client's copy is current
//! or the query came over UDP (RFC 1995 §2: one SOA, "use TCP").
//!
//! An IXFR from an older serial is answered in incremental form (RFC 1995 §4) when the
//! caller has the changes since that serial ([`diff`]: a journal's [`diff::History`] gives
//! them condensed into one [`diff::Diff`], and [`Transfer::incremental`] sends it); otherwise
//! with the whole zone in AXFR form, which RFC 1995 §4 allows and every secondary
//! understands.
//!
//! [`notify`] and [`notify_response`] are the two ends of a NOTIFY (RFC 1996) that tells a
//! secondary a new version is here.
//!
//! [`incoming`] is the other direction: the queries a secondary sends and the reading of
//! the transfers it receives.
//!
//! Sans-I/O: never files, sockets, threads, locks or clocks, and no allocation per record.

use crate::answer::EDNS_UDP_SIZE;
use crate::db::Zone;
use shardns_wire::message::Reader;
use shardns_wire::tsig::Signer;
use shardns_wire::{Class, Header, MessageWriter, Name, Opcode, Query, RType, Rcode, Section};
use std::sync::Arc;

pub mod diff;
pub mod incoming;

use diff::Diff;

/// Size of an OPT record without options.
const OPT_LEN: usize = 11;

/// Largest transfer message: compression pointers reach 14 bits, so in a 16 KiB message
/// every name can be a target; in a 64 KiB one the last three quarters could not, and the
/// transfer grows. Knot DNS uses the same size.
pub const MESSAGE_SIZE: usize = 16 * 1024;

/// A zone transfer query (AXFR or IXFR, class IN).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The query's ID, repeated in every response message.
    pub id: u16,
    /// The zone asked for, in the query's case.
    pub qname: Name,
    /// AXFR or IXFR.
    pub qtype: RType,
    /// The query had an OPT record, so every response message gets one (RFC 6891 §6.1.1).
    pub edns: bool,
    /// IXFR: the serial of the client's copy (the SOA in the query's authority section).
    pub client_serial: Option<u32>,
}

/// What [`request`] makes of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Not a transfer query (or one the normal answer path rejects): answer it as usual.
    NotTransfer,
    /// A transfer query.
    Transfer(Request),
    /// A transfer query without what it needs (an IXFR without the client's SOA): answer
    /// [`reply`] with FORMERR.
    Malformed(Request),
}

/// Reads a parsed query as a transfer request (the queries [`crate::respond`] classifies as
/// [`crate::Reply::Transfer`]). Any other query is [`Read::NotTransfer`].
pub fn request(query: &Query<'_>) -> Read {
    let h = query.header();
    let qtype = query.qtype();
    if h.opcode() != Opcode::QUERY
        || !matches!(qtype, RType::AXFR | RType::IXFR)
        || query.qclass() != Class::IN
    {
        return Read::NotTransfer;
    }
    let mut req = Request {
        id: h.id,
        qname: query.qname().to_name(),
        qtype,
        edns: query.edns().is_some(),
        client_serial: None,
    };
    if qtype == RType::AXFR {
        return Read::Transfer(req);
    }
    // RFC 1995 §3: the authority section holds the client's SOA; its serial is all we use.
    let soa_serial = || -> Option<u32> {
        let mut r = Reader::new(query.bytes(), query.question_end());
        for _ in 0..h.ancount {
            r.skip_name().ok()?;
            r.bytes(8).ok()?;
            let len = r.u16().ok()? as usize;
            r.bytes(len).ok()?;
        }
        if h.nscount == 0 {
            return None;
        }
        r.skip_name().ok()?;
        if RType(r.u16().ok()?) != RType::SOA {
            return None;
        }
        r.bytes(6).ok()?; // class, TTL
        let len = r.u16().ok()? as usize;
        let end = r.pos() + len;
        r.skip_name().ok()?; // MNAME
        r.skip_name().ok()?; // RNAME
        let serial = r.u32().ok()?;
        (r.pos() + 16 == end).then_some(serial)
    };
    match soa_serial() {
        Some(serial) => {
            req.client_serial = Some(serial);
            Read::Transfer(req)
        }
        None => Read::Malformed(req),
    }
}

/// True if the client's serial is not older than ours (RFC 1982 serial arithmetic), so an
/// IXFR is answered with our SOA alone.
pub fn is_current(client: u32, ours: u32) -> bool {
    client == ours || (client.wrapping_sub(ours) as i32) > 0
}

/// True if `serial` is newer than `than` (RFC 1982 serial arithmetic: less than 2^31
/// ahead); a serial exactly 2^31 away is neither newer nor older.
pub fn is_newer(serial: u32, than: u32) -> bool {
    serial != than && (serial.wrapping_sub(than) as i32) > 0
}

/// Writes a one-message response to `req`: `rcode` with the question, plus the zone's SOA as
/// the answer when `soa` is given (an IXFR whose client is current, or over UDP). Returns
/// the message length and whether TC was set (the SOA did not fit in `out`, which should
/// hold 512 octets at least; over UDP, no more than the client takes).
pub fn reply(req: &Request, rcode: Rcode, soa: Option<&Zone>, out: &mut [u8]) -> (usize, bool) {
    let limit = out.len().min(u16::MAX as usize);
    let mut w = MessageWriter::new(out, limit);
    // The question is at most 259 octets, so it fits in 512.
    let _ = w.put_question(req.qname.as_ref(), req.qtype, Class::IN);
    if req.edns {
        w.set_limit(limit.saturating_sub(OPT_LEN));
    }
    let truncated = soa.is_some_and(|zone| put_soa(&mut w, zone).is_err());
    if req.edns {
        w.set_limit(limit);
        let _ = w.put_opt(EDNS_UDP_SIZE, 0, 0, false, &[]);
    }
    let mut h = header(req, rcode, soa.is_some());
    h.set_tc(truncated);
    (w.finish(&h).len(), truncated)
}

fn header(req: &Request, rcode: Rcode, aa: bool) -> Header {
    let mut h = Header {
        id: req.id,
        ..Header::default()
    };
    h.set_qr(true);
    h.set_opcode(Opcode::QUERY);
    h.set_aa(aa);
    h.set_rcode(rcode);
    h
}

fn put_soa(w: &mut MessageWriter<'_>, zone: &Zone) -> Result<(), shardns_wire::writer::Full> {
    let apex = zone.apex_node();
    let soa = apex.rrset(RType::SOA).expect("a built zone has an SOA");
    let rdata = soa.rdatas().next().expect("an SOA RRset has one record");
    w.put_record(
        Section::Answer,
        apex.name(),
        RType::SOA,
        Class::IN,
        soa.ttl,
        rdata,
    )
}

/// Writes a NOTIFY for `zone` (RFC 1996 §3.7): opcode NOTIFY, AA, the question `APEX SOA
/// IN` and, as a hint, the zone's SOA in the answer section (§3.7: the secondary may skip its
/// SOA query when the serial is not newer). Returns the message length; `out` needs 512
/// octets.
pub fn notify(zone: &Zone, id: u16, out: &mut [u8]) -> usize {
    let limit = out.len().min(512);
    let mut w = MessageWriter::new(out, limit);
    let _ = w.put_question(zone.apex(), RType::SOA, Class::IN);
    let _ = put_soa(&mut w, zone);
    let mut h = Header {
        id,
        ..Header::default()
    };
    h.set_opcode(Opcode::NOTIFY);
    h.set_aa(true);
    w.finish(&h).len()
}

/// If `msg` answers our NOTIFY `id` (QR, opcode NOTIFY, the same ID), its RCODE. Any RCODE
/// ends the retries: a secondary that answers at all has heard us (RFC 1996 §3.6).
pub fn notify_response(msg: &[u8], id: u16) -> Option<Rcode> {
    let h = Header::parse(msg).ok()?;
    (h.qr() && h.opcode() == Opcode::NOTIFY && h.id == id).then(|| Rcode(h.rcode_bits().into()))
}

/// Where a transfer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The opening SOA is still to go.
    Start,
    /// The zone's records, from the cursor on, then the closing SOA.
    Body,
    /// Everything went out.
    Done,
    /// A record did not fit in an empty message; a SERVFAIL went out instead.
    Failed,
}

/// One zone transfer in progress: the zone (SOA first and last, RFC 5936 §2.2), cut into
/// messages of up to [`MESSAGE_SIZE`] octets, each written on demand.
#[derive(Debug)]
pub struct Transfer {
    zone: Arc<Zone>,
    req: Request,
    stage: Stage,
    /// Cursor: node, RRset within the node, record within the RRset.
    node: u32,
    set: usize,
    rec: usize,
    messages: u32,
    records: u64,
    /// Signs every message when the request was signed (TSIG).
    signer: Option<Signer>,
    /// Seconds since the epoch, for the signatures.
    now: u64,
    /// IXFR in incremental form: the changes from the client's serial to the zone's, sent
    /// in place of the zone's records; `rec` is then the offset of the next of its records.
    diff: Option<Arc<Diff>>,
}

impl Transfer {
    /// A transfer of `zone` answering `req`.
    pub fn new(zone: Arc<Zone>, req: Request) -> Self {
        Self {
            zone,
            req,
            stage: Stage::Start,
            node: 0,
            set: 0,
            rec: 0,
            messages: 0,
            records: 0,
            signer: None,
            now: 0,
            diff: None,
        }
    }

    /// An IXFR answered in incremental form (RFC 1995 §4): the zone's SOA, then `diff`
    /// (the old SOA, deletions, the new SOA, additions), then the zone's SOA again. `diff`
    /// must end at the zone's serial.
    pub fn incremental(zone: Arc<Zone>, req: Request, diff: Arc<Diff>) -> Self {
        debug_assert_eq!(diff.to(), zone.serial());
        Self {
            diff: Some(diff),
            ..Self::new(zone, req)
        }
    }

    /// True if the records sent are differences (IXFR in incremental form).
    pub fn is_incremental(&self) -> bool {
        self.diff.is_some()
    }

    /// Signs every message with `signer` (the request carried a valid TSIG).
    pub fn sign_with(&mut self, signer: Signer) {
        self.signer = Some(signer);
    }

    /// The time the next messages are signed at (seconds since the epoch).
    pub fn set_time(&mut self, now: u64) {
        self.now = now;
    }

    /// The zone version being sent.
    pub fn zone(&self) -> &Arc<Zone> {
        &self.zone
    }

    /// The request being answered.
    pub fn request(&self) -> &Request {
        &self.req
    }

    /// Messages written so far.
    pub fn messages(&self) -> u32 {
        self.messages
    }

    /// Records written so far (the SOA counts twice).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// True once the last message has been written.
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done | Stage::Failed)
    }

    /// True if the transfer ended with a SERVFAIL (a record larger than a message).
    pub fn failed(&self) -> bool {
        self.stage == Stage::Failed
    }

    /// Writes the next message into `out` (at most [`MESSAGE_SIZE`] octets of it) and
    /// returns its length; `None` once the last one has been written.
    pub fn next_message(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.is_done() {
            return None;
        }
        let full = out.len().min(MESSAGE_SIZE);
        // Room for the TSIG record, which is added after the message is complete.
        let limit = self.signer.as_ref().map_or(full, |s| s.limit(full));
        let mut w = MessageWriter::new(out, limit);
        w.set_transfer(true);
        if self.messages == 0 {
            // The question goes in the first message only (RFC 5936 §2.2.1 allows either).
            let _ = w.put_question(self.req.qname.as_ref(), self.req.qtype, Class::IN);
        }
        if self.req.edns {
            w.set_limit(limit.saturating_sub(OPT_LEN));
        }
        let before = self.records;
        if self.stage == Stage::Start && put_soa(&mut w, &self.zone).is_ok() {
            self.records += 1;
            self.stage = Stage::Body;
        }
        if self.stage == Stage::Body && self.fill(&mut w) && put_soa(&mut w, &self.zone).is_ok() {
            self.records += 1;
            self.stage = Stage::Done;
        }
        self.messages += 1;
        if self.records == before {
            // Not even one record fits in an empty message: end the transfer with an error
            // instead of sending empty messages forever.
            self.stage = Stage::Failed;
            let w = MessageWriter::new(out, limit);
            let len = w.finish(&header(&self.req, Rcode::SERVFAIL, false)).len();
            return Some(self.sign(out, len));
        }
        if self.req.edns {
            w.set_limit(limit);
            let _ = w.put_opt(EDNS_UDP_SIZE, 0, 0, false, &[]);
        }
        let len = w.finish(&header(&self.req, Rcode::NOERROR, true)).len();
        Some(self.sign(out, len))
    }

    fn sign(&mut self, out: &mut [u8], len: usize) -> usize {
        match self.signer.as_mut() {
            Some(s) => s.sign(out, len, self.now),
            None => len,
        }
    }

    /// Writes records from the cursor on until the message is full (false) or every record
    /// of the zone is out (true). The apex SOA is left to the opening and closing records.
    fn fill(&mut self, w: &mut MessageWriter<'_>) -> bool {
        if let Some(diff) = &self.diff {
            while let Some((r, next)) = diff.record_at(self.rec) {
                if w.put_record(Section::Answer, r.owner, r.rtype, Class::IN, r.ttl, r.rdata)
                    .is_err()
                {
                    return false;
                }
                self.rec = next;
                self.records += 1;
            }
            return true;
        }
        let zone = &*self.zone;
        while (self.node as usize) < zone.node_count() {
            let node = zone.node(self.node);
            let owner = node.name();
            for set in node.rrsets().skip(self.set) {
                if !(self.node == 0 && set.rtype == RType::SOA) {
                    for rdata in set.rdatas().skip(self.rec) {
                        if w.put_record(
                            Section::Answer,
                            owner,
                            set.rtype,
                            Class::IN,
                            set.ttl,
                            rdata,
                        )
                        .is_err()
                        {
                            return false;
                        }
                        self.rec += 1;
                        self.records += 1;
                    }
                }
                self.set += 1;
                self.rec = 0;
            }
            self.node += 1;
            self.set = 0;
        }
        true
    }
}

#[cfg(test)]
mod tests;
