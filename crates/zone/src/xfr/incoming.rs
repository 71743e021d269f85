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
//!   [`Error::Inconsistent`], and the caller falls back to AXFR);
//! - IXFR answered in AXFR form (RFC 1995 §4), and with our SOA alone (up to date).
//!
//! What a transfer may hold is bounded ([`Limits`]: messages, records, octets); only one
//! message is held at a time, plus the records read so far. Records outside the zone are
//! skipped (RFC 5936 §3.3) and counted.
//!
//! `request` writes the queries and reads an SOA answer, `record` reads one record of a
//! transfer into the records or the diff, `apply` builds or patches the zone at the end.
//!
//! Sans-I/O: the caller moves the bytes and keeps the clock.

mod apply;
mod record;
mod request;

use request::check_header;
pub use request::{read_soa, request, Request, SoaAnswer};

use crate::db::{PatchWork, Zone};
use crate::error::Error;
use crate::scan::{Diag, Item, Records};
use shardns_wire::message::Reader;
use shardns_wire::{rdata, Class, Name, NameBuf, NameRef, RType, Rcode};
use std::collections::{HashMap, HashSet};
use std::fmt;
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

fn malformed(e: shardns_wire::Error) -> Error {
    Error::Malformed(e.to_string())
}

/// A record as it sits in a message: the owner is read into the caller's buffer.
pub(crate) struct Raw {
    pub(crate) rtype: RType,
    pub(crate) class: Class,
    pub(crate) ttl: u32,
    /// Where the rdata starts in the message, and its length.
    pub(crate) rdata: usize,
    pub(crate) rdlen: usize,
}

/// Reads one record at `r` (also for [`crate::update`]'s sections).
pub(crate) fn read_raw(r: &mut Reader<'_>, name: &mut NameBuf) -> Result<Raw, Error> {
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
fn soa_serial(msg: &[u8], start: usize, len: usize) -> Result<u32, Error> {
    let mut out = Vec::with_capacity(64);
    rdata::decompress(RType::SOA, msg, start, len, &mut out).map_err(malformed)?;
    serial_of(&out).ok_or_else(|| Error::Malformed("a short SOA".into()))
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
        /// For an IXFR (incremental form), the owners of the records it deleted or added
        /// (a name may come more than once): every name at which the new version differs
        /// from ours, but the apex SOA, so that the difference can be made at them alone
        /// (`diff::Diff::compute_at`). `None` for the whole zone.
        changed: Option<Vec<Name>>,
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
    pub fn feed(&mut self, msg: &[u8], now: u64) -> Result<Progress, Error> {
        if self.state == State::Done {
            return Err(Error::AfterEnd);
        }
        self.messages += 1;
        self.bytes += msg.len() as u64;
        if self.messages > self.limits.messages {
            return Err(Error::Limit("messages", self.limits.messages.into()));
        }
        if self.bytes > self.limits.bytes {
            return Err(Error::Limit("octets", self.limits.bytes));
        }
        let first = self.messages == 1;
        let (h, mut r) = check_header(&self.req, msg, false)?;
        if h.tc() {
            return Err(Error::Truncated);
        }
        if let Some(v) = self.req.verifier.as_mut() {
            v.verify(msg, now)?;
        }
        let rcode = Rcode(h.rcode_bits().into());
        if rcode != Rcode::NOERROR {
            return Err(Error::Rcode(rcode));
        }
        if first && h.ancount == 0 {
            return Err(Error::Malformed("the first message has no records".into()));
        }
        let mut name = NameBuf::new();
        for _ in 0..h.ancount {
            if self.state == State::Done {
                return Err(Error::AfterEnd);
            }
            self.records += 1;
            if self.records > self.limits.records {
                return Err(Error::Limit("records", self.limits.records));
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
            return Err(Error::Limit("octets", self.limits.bytes));
        }
        Ok(if self.state == State::Done {
            Progress::Done
        } else {
            Progress::More
        })
    }
}

/// Appends a record to `out`, its owner shared with the record before when equal
/// (`last` says where that owner is).
pub(crate) fn keep(
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
