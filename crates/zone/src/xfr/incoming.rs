//! Incoming zone transfers, the secondary's side: the queries it sends (SOA, AXFR, IXFR,
//! each signed when a TSIG key is given) and the reading of the answers, one message at a
//! time, into a new [`Zone`].
//!
//! [`request`] writes a query. [`read_soa`] reads the answer to an SOA query. [`Incoming`]
//! reads a transfer: [`Incoming::feed`] takes each message as it arrives (checking its ID,
//! question, RCODE and TSIG, RFC 8945 §5.3.1), keeps its records in compact form and says
//! when the closing SOA has come; [`Incoming::finish`] builds the zone. Answers understood:
//!
//! - AXFR (RFC 5936): the SOA first and last (the same serial), any number of messages;
//! - IXFR (RFC 1995) in incremental form: `SOA(new)`, then per version step `SOA(from)`,
//!   the deletions, `SOA(to)`, the additions, and `SOA(new)` again; applied to the version
//!   the query named as a diff (a deletion of a record that is not there, a step that does
//!   not start where the last ended, or a first step that does not start at our serial is
//!   [`XfrError::Inconsistent`], and the caller falls back to AXFR);
//! - IXFR answered in AXFR form (RFC 1995 §4), and with our SOA alone (up to date).
//!
//! What a transfer may hold is bounded ([`Limits`]: messages, records, octets); only one
//! message is held at a time, plus the records read so far. Records outside the zone are
//! skipped (RFC 5936 §3.3) and counted.
//!
//! Sans-I/O: the caller moves the bytes and keeps the clock.

use crate::db::{PatchWork, Zone};
use crate::scan::{Diag, Item, LoadError, Records, Scanned};
use shardns_wire::message::{Reader, HEADER_LEN};
use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::tsig::{self, Key, ResponseError, ResponseVerifier};
use shardns_wire::{
    rdata, Class, Header, MessageWriter, Name, NameBuf, NameRef, Opcode, RType, Rcode, Section,
};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Bounds on one incoming transfer: a primary that sends more is cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Messages.
    pub messages: u32,
    /// Records (the SOAs included).
    pub records: u64,
    /// Octets: of the messages received, and of the records kept (names uncompressed).
    pub bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            messages: 1_000_000,
            records: 50_000_000,
            bytes: 2 << 30,
        }
    }
}

/// Why a transfer (or an SOA query) failed. The version being served is kept.
#[derive(Debug)]
pub enum XfrError {
    /// Not a DNS message, or not the answer to our query (ID, QR, opcode, question).
    Malformed(String),
    /// The primary answered with an error.
    Rcode(Rcode),
    /// The answer is not signed as it must be.
    Tsig(ResponseError),
    /// The answer is about another zone (its first record is not our apex's SOA).
    WrongZone(String),
    /// TC set on an answer over TCP.
    Truncated,
    /// The closing SOA's serial differs from the opening one's.
    SerialMismatch {
        /// The opening SOA's serial.
        first: u32,
        /// The closing one's.
        last: u32,
    },
    /// More than the [`Limits`] allow (what, and the limit).
    Limit(&'static str, u64),
    /// An IXFR that does not apply to our version (fall back to AXFR).
    Inconsistent(String),
    /// Records after the closing SOA.
    AfterEnd,
    /// The answer ended before the closing SOA (the primary stopped mid-transfer).
    Unfinished,
    /// The zone transferred fails the checks every zone must pass.
    Build(LoadError),
}

impl XfrError {
    /// True if an AXFR may succeed where this IXFR failed: the primary refused or does not
    /// implement IXFR, or its answer does not apply to our version (RFC 1995 §4 allows a
    /// client to fall back to AXFR).
    pub fn retry_with_axfr(&self) -> bool {
        matches!(
            self,
            Self::Rcode(_) | Self::Inconsistent(_) | Self::WrongZone(_) | Self::Build(_)
        )
    }
}

impl fmt::Display for XfrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(m) => write!(f, "malformed answer: {m}"),
            Self::Rcode(r) => write!(f, "the primary answered {r}"),
            Self::Tsig(e) => write!(f, "{e}"),
            Self::WrongZone(m) => write!(f, "wrong zone: {m}"),
            Self::Truncated => f.write_str("truncated answer (TC) over TCP"),
            Self::SerialMismatch { first, last } => write!(
                f,
                "the closing SOA has serial {last}, the opening one {first}"
            ),
            Self::Limit(what, n) => write!(f, "more than {n} {what} (transfer limit)"),
            Self::Inconsistent(m) => write!(f, "IXFR does not apply: {m}"),
            Self::AfterEnd => f.write_str("records after the closing SOA"),
            Self::Unfinished => f.write_str("the transfer ended before the closing SOA"),
            Self::Build(e) => write!(f, "the zone transferred is not valid:\n{e}"),
        }
    }
}

impl std::error::Error for XfrError {}

impl From<ResponseError> for XfrError {
    fn from(e: ResponseError) -> Self {
        Self::Tsig(e)
    }
}

/// A query we sent, and what checks its answers.
#[derive(Debug)]
pub struct Request {
    /// The query in wire form (signed if a key was given).
    pub bytes: Vec<u8>,
    apex: Name,
    qtype: RType,
    id: u16,
    verifier: Option<ResponseVerifier>,
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
/// is not an answer to it (another ID, a query) is [`XfrError::Malformed`]: over UDP, keep
/// waiting for the real one.
pub fn read_soa(req: &mut Request, msg: &[u8], now: u64) -> Result<SoaAnswer, XfrError> {
    let (h, mut r) = check_header(req, msg, true)?;
    if h.tc() {
        return Ok(SoaAnswer::Truncated);
    }
    if let Some(v) = req.verifier.as_mut() {
        v.verify(msg, now)?;
    }
    let rcode = Rcode(h.rcode_bits().into());
    if rcode != Rcode::NOERROR {
        return Err(XfrError::Rcode(rcode));
    }
    if !h.aa() {
        return Err(XfrError::WrongZone(format!(
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
    Err(XfrError::WrongZone(format!(
        "no SOA for {} in the answer",
        req.apex
    )))
}

/// Checks that `msg` answers `req`; returns its header and a reader after the question.
fn check_header<'m>(
    req: &Request,
    msg: &'m [u8],
    question_required: bool,
) -> Result<(Header, Reader<'m>), XfrError> {
    let h = Header::parse(msg).map_err(|e| XfrError::Malformed(e.to_string()))?;
    if h.id != req.id || !h.qr() || h.opcode() != Opcode::QUERY {
        return Err(XfrError::Malformed(format!(
            "not an answer to our query (ID {}, QR {}, opcode {})",
            h.id,
            h.qr(),
            h.opcode().0
        )));
    }
    let mut r = Reader::new(msg, HEADER_LEN);
    if h.qdcount > 1 || (question_required && h.qdcount == 0 && h.rcode_bits() == 0) {
        return Err(XfrError::Malformed(format!("{} questions", h.qdcount)));
    }
    if h.qdcount == 1 {
        let mut name = NameBuf::new();
        r.name(&mut name)
            .map_err(|e| XfrError::Malformed(e.to_string()))?;
        let qtype = RType(r.u16().map_err(malformed)?);
        let qclass = Class(r.u16().map_err(malformed)?);
        if !name.as_ref().eq_ci(&req.apex.as_ref()) || qtype != req.qtype || qclass != Class::IN {
            return Err(XfrError::Malformed(format!(
                "the question is {} {qtype}, not {} {}",
                name.as_ref(),
                req.apex,
                req.qtype
            )));
        }
    }
    Ok((h, r))
}

fn malformed(e: shardns_wire::WireError) -> XfrError {
    XfrError::Malformed(e.to_string())
}

/// A record as it sits in a message: the owner is read into the caller's buffer.
struct Raw {
    rtype: RType,
    class: Class,
    ttl: u32,
    /// Where the rdata starts in the message, and its length.
    rdata: usize,
    rdlen: usize,
}

fn read_raw(r: &mut Reader<'_>, name: &mut NameBuf) -> Result<Raw, XfrError> {
    r.name(name).map_err(malformed)?;
    let rtype = RType(r.u16().map_err(malformed)?);
    let class = Class(r.u16().map_err(malformed)?);
    let ttl = r.u32().map_err(malformed)?;
    let rdlen = r.u16().map_err(malformed)? as usize;
    let rdata = r.pos();
    r.bytes(rdlen).map_err(malformed)?;
    Ok(Raw {
        rtype,
        class,
        ttl,
        rdata,
        rdlen,
    })
}

/// The serial of an SOA's rdata at `start` in `msg` (names possibly compressed).
fn soa_serial(msg: &[u8], start: usize, len: usize) -> Result<u32, XfrError> {
    let mut out = Vec::with_capacity(64);
    rdata::decompress(RType::SOA, msg, start, len, &mut out).map_err(malformed)?;
    serial_of(&out).ok_or_else(|| XfrError::Malformed("a short SOA".into()))
}

/// The serial of an uncompressed SOA rdata.
fn serial_of(soa: &[u8]) -> Option<u32> {
    let mut at = 0;
    for _ in 0..2 {
        let (_, len) = NameRef::from_wire_prefix(soa.get(at..)?).ok()?;
        at += len;
    }
    Some(u32::from_be_bytes(soa.get(at..at + 4)?.try_into().ok()?))
}

/// Which form the answer took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The whole zone (AXFR, or IXFR answered in AXFR form).
    Whole,
    /// Differences applied to our version (IXFR).
    Incremental,
}

/// What a finished transfer gives.
#[derive(Debug)]
pub enum Outcome {
    /// An IXFR answered with the primary's SOA alone: its serial (not newer than ours, or
    /// it could not send the differences: then ask AXFR).
    SoaOnly(u32),
    /// A new version of the zone.
    Zone {
        /// The zone, built and checked.
        zone: Zone,
        /// Its build's warnings.
        warnings: Vec<Diag>,
        /// How it came.
        form: Form,
        /// For an IXFR applied to our version without building the zone again, what the
        /// patch did; `None` when the zone was built in full.
        patched: Option<Box<PatchWork>>,
    },
}

/// Where the reading of a transfer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No record yet: the opening SOA comes first.
    Start,
    /// The opening SOA (and nothing more) so far: the next record tells the form.
    Opened,
    /// The whole zone, until the closing SOA.
    Whole,
    /// IXFR: the deletions of the step from `from`.
    Deleting { from: u32 },
    /// IXFR: the additions of the step to `to`.
    Adding { to: u32 },
    /// The closing SOA has come.
    Done,
}

/// What [`Incoming::feed`] says after a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Read the next message.
    More,
    /// The transfer is complete: call [`Incoming::finish`].
    Done,
}

/// A record identified as IXFR deletions name it: owner (lowercase), type, rdata.
type RecordKey = (Vec<u8>, RType, Vec<u8>);

/// The differences read so far, against the version the IXFR started from.
#[derive(Default)]
struct Diff {
    /// Records of the base version deleted (their rdata as the base holds it).
    deleted: HashSet<RecordKey>,
    /// The owners (by case-insensitive hash) that have deletions: a rebuild looks at only
    /// their nodes' records.
    deleted_owners: HashSet<u64>,
    /// Records added that the base does not have (or has with another TTL), with their
    /// TTL; the owner as received.
    added: HashMap<RecordKey, (Name, u32)>,
}

/// One incoming transfer being read.
pub struct Incoming {
    req: Request,
    limits: Limits,
    /// The version an IXFR asked to update (and the diff's base).
    base: Option<Arc<Zone>>,
    state: State,
    messages: u32,
    records: u64,
    bytes: u64,
    /// Records outside the zone, skipped.
    skipped: u64,
    /// The opening SOA: serial, TTL and uncompressed rdata.
    soa: Option<(u32, u32, Vec<u8>)>,
    /// Whole form: the records (the opening SOA first).
    whole: Records,
    /// Whole form: where the last owner is in `whole.bytes`, to share it.
    last_owner: Option<(u32, u16)>,
    /// Incremental form: the differences, and the octets they hold (owners and rdata).
    diff: Diff,
    diff_bytes: u64,
    /// Scratch for one record's rdata.
    scratch: Vec<u8>,
}

impl fmt::Debug for Incoming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Incoming({} {}, {:?}, {} messages, {} records)",
            self.req.apex, self.req.qtype, self.state, self.messages, self.records
        )
    }
}

impl Incoming {
    /// Reads the answer to `req` (an AXFR, or an IXFR from `base`, the version whose SOA
    /// the query carried), within `limits`.
    pub fn new(req: Request, base: Option<Arc<Zone>>, limits: Limits) -> Self {
        let base = if req.qtype == RType::IXFR { base } else { None };
        Self {
            req,
            limits,
            base,
            state: State::Start,
            messages: 0,
            records: 0,
            bytes: 0,
            skipped: 0,
            soa: None,
            whole: Records::default(),
            last_owner: None,
            diff: Diff::default(),
            diff_bytes: 0,
            scratch: Vec::new(),
        }
    }

    /// The query to send.
    pub fn query(&self) -> &[u8] {
        &self.req.bytes
    }

    /// Messages read so far.
    pub fn messages(&self) -> u32 {
        self.messages
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Octets of messages read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Records outside the zone, skipped.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Reads the next message of the answer (at `now`, for its TSIG).
    pub fn feed(&mut self, msg: &[u8], now: u64) -> Result<Progress, XfrError> {
        if self.state == State::Done {
            return Err(XfrError::AfterEnd);
        }
        self.messages += 1;
        self.bytes += msg.len() as u64;
        if self.messages > self.limits.messages {
            return Err(XfrError::Limit("messages", self.limits.messages.into()));
        }
        if self.bytes > self.limits.bytes {
            return Err(XfrError::Limit("octets", self.limits.bytes));
        }
        let first = self.messages == 1;
        let (h, mut r) = check_header(&self.req, msg, false)?;
        if h.tc() {
            return Err(XfrError::Truncated);
        }
        if let Some(v) = self.req.verifier.as_mut() {
            v.verify(msg, now)?;
        }
        let rcode = Rcode(h.rcode_bits().into());
        if rcode != Rcode::NOERROR {
            return Err(XfrError::Rcode(rcode));
        }
        if first && h.ancount == 0 {
            return Err(XfrError::Malformed(
                "the first message has no records".into(),
            ));
        }
        let mut name = NameBuf::new();
        for _ in 0..h.ancount {
            if self.state == State::Done {
                return Err(XfrError::AfterEnd);
            }
            self.records += 1;
            if self.records > self.limits.records {
                return Err(XfrError::Limit("records", self.limits.records));
            }
            let rec = read_raw(&mut r, &mut name)?;
            self.record(name.as_ref(), rec, msg)?;
        }
        // An IXFR answered with an SOA alone, not newer than ours: up to date.
        if first && self.state == State::Opened {
            if let (Some(base), Some((serial, _, _))) = (&self.base, &self.soa) {
                if !super::is_newer(*serial, base.serial()) {
                    self.state = State::Done;
                }
            }
        }
        let kept = self.whole.bytes.len() as u64 + self.diff_bytes;
        if kept > self.limits.bytes {
            return Err(XfrError::Limit("octets", self.limits.bytes));
        }
        Ok(if self.state == State::Done {
            Progress::Done
        } else {
            Progress::More
        })
    }

    /// One answer record.
    fn record(&mut self, owner: NameRef<'_>, mut rec: Raw, msg: &[u8]) -> Result<(), XfrError> {
        if rec.ttl > i32::MAX as u32 {
            // A TTL with the top bit set is read as 0 (RFC 2181 §8), as a zone file could
            // not hold it.
            rec.ttl = 0;
        }
        let apex = self.req.apex.as_ref();
        let in_zone = owner.ends_with(&apex);
        if rec.class != Class::IN {
            return Err(XfrError::Malformed(format!(
                "{owner} {} has class {}",
                rec.rtype, rec.class
            )));
        }
        if rec.rtype.is_meta() {
            // OPT, TSIG and the query types are never zone data (RFC 6895 §3.1).
            return Err(XfrError::Malformed(format!(
                "{owner} has type {}, which is not zone data",
                rec.rtype
            )));
        }
        self.scratch.clear();
        rdata::decompress(rec.rtype, msg, rec.rdata, rec.rdlen, &mut self.scratch)
            .map_err(|e| XfrError::Malformed(format!("{owner} {}: {e}", rec.rtype)))?;
        let apex_soa = rec.rtype == RType::SOA && owner.eq_ci(&apex);
        let serial = if apex_soa {
            Some(
                serial_of(&self.scratch)
                    .ok_or_else(|| XfrError::Malformed("a short SOA".into()))?,
            )
        } else {
            None
        };
        match (self.state, serial) {
            (State::Start, Some(s)) => {
                self.soa = Some((s, rec.ttl, self.scratch.clone()));
                self.state = State::Opened;
                return Ok(());
            }
            (State::Start, None) => {
                return Err(XfrError::WrongZone(format!(
                    "the first record is {owner} {}, not the SOA of {}",
                    rec.rtype, self.req.apex
                )))
            }
            (State::Opened, Some(s)) if self.base.is_some() => {
                // The incremental form: the first step starts at our serial.
                let ours = self.base.as_ref().map_or(0, |z| z.serial());
                if s != ours {
                    return Err(XfrError::Inconsistent(format!(
                        "the first difference starts at serial {s}, ours is {ours}"
                    )));
                }
                self.state = State::Deleting { from: s };
                return Ok(());
            }
            (State::Opened, _) => {
                // The whole zone: the opening SOA is its first record.
                self.state = State::Whole;
                let (_, ttl, soa) = self.soa.as_ref().expect("opened with an SOA");
                keep(
                    &mut self.whole,
                    &mut self.last_owner,
                    self.req.apex.as_ref(),
                    RType::SOA,
                    *ttl,
                    soa,
                );
            }
            _ => {}
        }
        let first = self.soa.as_ref().map_or(0, |s| s.0);
        match (self.state, serial) {
            (State::Whole, Some(last)) => {
                if last != first {
                    return Err(XfrError::SerialMismatch { first, last });
                }
                self.state = State::Done;
            }
            (State::Whole, None) => {
                if in_zone {
                    keep(
                        &mut self.whole,
                        &mut self.last_owner,
                        owner,
                        rec.rtype,
                        rec.ttl,
                        &self.scratch,
                    );
                } else {
                    self.skipped += 1;
                }
            }
            (State::Deleting { .. }, Some(to)) => self.state = State::Adding { to },
            (State::Adding { to }, Some(s)) => {
                if s == first && to == first {
                    self.state = State::Done;
                } else if s == to {
                    self.state = State::Deleting { from: s };
                } else {
                    return Err(XfrError::Inconsistent(format!(
                        "a difference starts at serial {s}, the one before ended at {to}"
                    )));
                }
            }
            (State::Deleting { from }, None) => {
                self.diff_bytes += (owner.len() + self.scratch.len()) as u64;
                if in_zone {
                    self.delete(owner, rec.rtype, from)?;
                } else {
                    self.skipped += 1;
                }
            }
            (State::Adding { .. }, None) => {
                self.diff_bytes += (owner.len() + self.scratch.len()) as u64;
                if in_zone {
                    self.add(owner, rec.rtype, rec.ttl)?;
                } else {
                    self.skipped += 1;
                }
            }
            (State::Start | State::Opened | State::Done, _) => {
                unreachable!("handled above")
            }
        }
        Ok(())
    }

    /// The base version's copy of a record (its rdata as stored; names in rdata compared
    /// without regard to case), and its RRset's TTL.
    fn in_base(&self, owner: NameRef<'_>, rtype: RType, data: &[u8]) -> Option<(Vec<u8>, u32)> {
        let zone = self.base.as_deref()?;
        let node = zone.find(owner)?;
        // Every set of the type: the RRSIGs of each covered type are a set of their own.
        let sets = || node.rrsets().filter(|s| s.rtype == rtype);
        sets()
            .find_map(|set| set.rdatas().find(|r| *r == data).map(|r| (r, set.ttl)))
            .or_else(|| {
                sets().find_map(|set| {
                    set.rdatas()
                        .find(|r| r.eq_ignore_ascii_case(data))
                        .map(|r| (r, set.ttl))
                })
            })
            .map(|(r, ttl)| (r.to_vec(), ttl))
    }

    fn key(owner: NameRef<'_>, rtype: RType, data: Vec<u8>) -> RecordKey {
        let mut lower = [0u8; MAX_NAME_LEN];
        let n = owner.lowercase_into(&mut lower);
        (lower[..n].to_vec(), rtype, data)
    }

    /// IXFR: deletes a record (one added by an earlier step, else one of the base's).
    fn delete(&mut self, owner: NameRef<'_>, rtype: RType, from: u32) -> Result<(), XfrError> {
        let key = Self::key(owner, rtype, self.scratch.clone());
        if self.diff.added.remove(&key).is_some() {
            return Ok(());
        }
        let missing = || {
            let mut text = String::new();
            let _ = rdata::fmt_text(rtype, &key.2, &mut text);
            XfrError::Inconsistent(format!(
                "the step from serial {from} deletes {owner} {rtype} {text}, which is not in the zone"
            ))
        };
        let Some((stored, _)) = self.in_base(owner, rtype, &self.scratch) else {
            return Err(missing());
        };
        let key = Self::key(owner, rtype, stored);
        if !self.diff.deleted.insert(key) {
            return Err(missing());
        }
        self.diff.deleted_owners.insert(owner.hash_ci());
        Ok(())
    }

    /// IXFR: adds a record (a base record deleted before comes back; one the base has is
    /// kept once, with the new TTL).
    fn add(&mut self, owner: NameRef<'_>, rtype: RType, ttl: u32) -> Result<(), XfrError> {
        if let Some((stored, base_ttl)) = self.in_base(owner, rtype, &self.scratch) {
            let key = Self::key(owner, rtype, stored);
            let deleted = self.diff.deleted.contains(&key);
            if deleted && base_ttl == ttl {
                // Deleted by an earlier step, back as it was.
                self.diff.deleted.remove(&key);
                return Ok(());
            }
            if !deleted && base_ttl == ttl {
                // Already there: nothing changes.
                return Ok(());
            }
            // Another TTL: the base copy goes, the new one comes.
            self.diff.deleted.insert(key);
            self.diff.deleted_owners.insert(owner.hash_ci());
        }
        let key = Self::key(owner, rtype, self.scratch.clone());
        self.diff.added.insert(key, (owner.to_name(), ttl));
        Ok(())
    }

    /// Ends the transfer: builds and checks the new version (an error if the closing SOA
    /// has not come, or if TSIG requires a signed last message and it was not).
    pub fn finish(self) -> Result<Outcome, XfrError> {
        if let (State::Opened, Some(_), Some((serial, _, _))) = (self.state, &self.base, &self.soa)
        {
            // The answer to an IXFR ended after its opening SOA: the primary has nothing
            // to add, or cannot send differences (ask AXFR if its serial is newer).
            return Ok(Outcome::SoaOnly(*serial));
        }
        if self.state != State::Done {
            return Err(XfrError::Unfinished);
        }
        if let Some(v) = &self.req.verifier {
            if !v.last_was_signed() {
                return Err(XfrError::Tsig(ResponseError::Unsigned));
            }
        }
        let (serial, soa_ttl, soa) = self.soa.clone().expect("done after an SOA");
        let label = PathBuf::from(format!("<{} of {}>", self.req.qtype, self.req.apex));
        if self.records == 1 {
            return Ok(Outcome::SoaOnly(serial));
        }
        if let (Some(base), true) = (&self.base, self.whole.items.is_empty()) {
            if let Some((zone, warnings, work)) = self.patch(base, soa_ttl, &soa)? {
                return Ok(Outcome::Zone {
                    zone,
                    warnings,
                    form: Form::Incremental,
                    patched: Some(Box::new(work)),
                });
            }
        }
        let (records, form) = match (&self.base, self.whole.items.is_empty()) {
            (Some(base), true) => (self.rebuild(base, soa_ttl, &soa), Form::Incremental),
            _ => (self.whole, Form::Whole),
        };
        let scanned = Scanned {
            chunks: vec![records],
            files: vec![label],
            warnings: Vec::new(),
            text: Vec::new(),
        };
        let (zone, warnings) =
            Zone::build(self.req.apex.clone(), scanned).map_err(XfrError::Build)?;
        Ok(Outcome::Zone {
            zone,
            warnings,
            form,
            patched: None,
        })
    }

    /// IXFR: our version patched with the differences ([`Zone::patch`]), or `None` when
    /// the patch cannot be done and the zone must be built in full.
    #[allow(clippy::type_complexity)]
    fn patch(
        &self,
        base: &Zone,
        soa_ttl: u32,
        soa: &[u8],
    ) -> Result<Option<(Zone, Vec<Diag>, PatchWork)>, XfrError> {
        fn name(wire: &[u8]) -> NameRef<'_> {
            NameRef::from_wire_prefix(wire)
                .expect("diff keys hold valid names")
                .0
        }
        let deleted = self
            .diff
            .deleted
            .iter()
            .map(|(owner, rtype, data)| (name(owner), *rtype, data.as_slice()));
        let added = self
            .diff
            .added
            .iter()
            .map(|((_, rtype, data), (owner, ttl))| {
                (owner.as_ref(), *rtype, *ttl, data.as_slice())
            });
        base.patch(deleted, added, (soa_ttl, soa))
            .map_err(XfrError::Build)
    }

    /// IXFR: the records of `base` without those deleted, with those added, and the new
    /// SOA.
    fn rebuild(&self, base: &Zone, soa_ttl: u32, soa: &[u8]) -> Records {
        let mut out = Records::default();
        let mut last = None;
        keep(&mut out, &mut last, base.apex(), RType::SOA, soa_ttl, soa);
        for id in 0..base.node_count() as u32 {
            let node = base.node(id);
            let owner = node.name();
            let check = self.diff.deleted_owners.contains(&owner.hash_ci());
            for set in node.rrsets() {
                if id == 0 && set.rtype == RType::SOA {
                    continue;
                }
                for data in set.rdatas() {
                    if check
                        && self
                            .diff
                            .deleted
                            .contains(&Self::key(owner, set.rtype, data.to_vec()))
                    {
                        continue;
                    }
                    keep(&mut out, &mut last, owner, set.rtype, set.ttl, data);
                }
            }
        }
        for ((_, rtype, data), (owner, ttl)) in &self.diff.added {
            keep(&mut out, &mut last, owner.as_ref(), *rtype, *ttl, data);
        }
        out
    }
}

/// Appends a record to `out`, its owner shared with the record before when equal
/// (`last` says where that owner is).
fn keep(
    out: &mut Records,
    last: &mut Option<(u32, u16)>,
    owner: NameRef<'_>,
    rtype: RType,
    ttl: u32,
    data: &[u8],
) {
    let b = &mut out.bytes;
    let wire = owner.as_wire();
    let at = match *last {
        Some((at, len))
            if len as usize == wire.len()
                && &b[at as usize..at as usize + len as usize] == wire =>
        {
            at
        }
        _ => {
            let at = b.len() as u32;
            b.extend_from_slice(wire);
            *last = Some((at, wire.len() as u16));
            at
        }
    };
    let rdata = b.len() as u32;
    b.extend_from_slice(data);
    let line = out.items.len() as u32 + 1;
    out.items.push(Item {
        owner: at,
        rdata,
        rdlen: data.len() as u16,
        file: 0,
        rtype,
        class: Class::IN,
        ttl,
        line,
    });
}

#[cfg(test)]
mod tests;
