//! Dynamic update (RFC 2136), the library half: an UPDATE message read against the current
//! version of a zone gives either the rcode to answer (and why, for the log) or the change
//! to apply (that part comes in a later commit: [`check`] does the checks). No I/O, no
//! TSIG check (the caller verifies the signature and decides who may update before calling
//! [`check`]).
//!
//! The steps are the RFC's, in its order: the message is read (§2, §3.1: `parse` here,
//! with the record reader of [`crate::xfr::incoming`] and its rdata checks), the
//! prerequisites are checked against the zone (§2.4, §3.2: `prereq`), and the update section is
//! prescanned (§3.4.1: `prescan`).
//! Not yet: applying the update section (§3.4.2).
//!
//! Not yet (the next step): the server's wiring (opcode UPDATE dispatch, TSIG and an
//! update ACL, forwarding from a secondary, the journal, re-signing a signed zone).

mod prereq;
mod prescan;

use crate::db::Zone;
use crate::xfr::incoming::read_raw;
use shardns_wire::message::{read_question, Header, Reader, HEADER_LEN};
use shardns_wire::{rdata, Class, Name, NameBuf, NameRef, Opcode, RType, Rcode};
use std::fmt;

/// Why an update is refused: the rcode to answer and a sentence for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The response code (FORMERR, NOTAUTH, NOTZONE, YXDOMAIN, YXRRSET, NXDOMAIN,
    /// NXRRSET, REFUSED).
    pub rcode: Rcode,
    /// Why, for the log.
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rcode, self.why)
    }
}

fn refuse(rcode: Rcode, why: impl Into<String>) -> Refusal {
    Refusal {
        rcode,
        why: why.into(),
    }
}

/// One record of an update message: the owner as received, rdata uncompressed (empty
/// when its RDLENGTH is 0, as the delete and prerequisite forms have it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rr {
    pub(crate) owner: Name,
    pub(crate) rtype: RType,
    pub(crate) class: Class,
    pub(crate) ttl: u32,
    pub(crate) rdata: Vec<u8>,
}

/// Reads the UPDATE message `msg` (already known to have opcode UPDATE) against `zone`,
/// the zone its zone section must name, and checks its prerequisites and prescans its updates: the rcode
/// to answer if one fails.
pub fn check(msg: &[u8], zone: &Zone) -> Result<(), Refusal> {
    let (prereqs, updates) = parse(msg, zone)?;
    prereq::check(zone, &prereqs)?;
    prescan::check(zone, &updates)
}

/// Reads the message (RFC 2136 §2, §3.1): the zone section, then the prerequisite and
/// update sections; the additional section may hold OPT and a last TSIG only.
pub(crate) fn parse(msg: &[u8], zone: &Zone) -> Result<(Vec<Rr>, Vec<Rr>), Refusal> {
    let formerr = |why: &str| refuse(Rcode::FORMERR, why);
    let h = Header::parse(msg).map_err(|_| formerr("shorter than a header"))?;
    if h.opcode() != Opcode::UPDATE || h.qr() {
        return Err(formerr("not an UPDATE request"));
    }
    // §3.1.1: exactly one zone, of type SOA.
    if h.qdcount != 1 {
        return Err(formerr("the zone section does not hold one zone"));
    }
    let mut name = NameBuf::new();
    let (ztype, zclass, pos) = read_question(msg, HEADER_LEN, &mut name)
        .map_err(|e| refuse(Rcode::FORMERR, format!("zone section: {e}")))?;
    if ztype != RType::SOA {
        return Err(refuse(
            Rcode::FORMERR,
            format!("the zone section's type is {ztype}, not SOA"),
        ));
    }
    // §3.1.1: a zone we are not authoritative for is NOTAUTH (this server does not
    // forward). The caller picked `zone` by this name; another name or class is a mismatch.
    if zclass != Class::IN || !name.as_ref().eq_ci(&zone.apex()) {
        return Err(refuse(
            Rcode::NOTAUTH,
            format!("not authoritative for {} {zclass}", name.as_ref()),
        ));
    }
    let mut r = Reader::new(msg, pos);
    let mut read = |count: u16, section: &str| -> Result<Vec<Rr>, Refusal> {
        let mut out = Vec::with_capacity(usize::from(count).min(256));
        for _ in 0..count {
            let raw = read_raw(&mut r, &mut name)
                .map_err(|e| refuse(Rcode::FORMERR, format!("{section} section: {e}")))?;
            let mut data = Vec::new();
            if raw.rdlen > 0 {
                rdata::decompress(raw.rtype, msg, raw.rdata, raw.rdlen, &mut data).map_err(
                    |e| {
                        refuse(
                            Rcode::FORMERR,
                            format!("{section} section: {} {}: {e}", name.as_ref(), raw.rtype),
                        )
                    },
                )?;
            }
            out.push(Rr {
                owner: name.as_ref().to_name(),
                rtype: raw.rtype,
                class: raw.class,
                ttl: raw.ttl,
                rdata: data,
            });
        }
        Ok(out)
    };
    let prereqs = read(h.ancount, "prerequisite")?;
    let updates = read(h.nscount, "update")?;
    let additional = read(h.arcount, "additional")?;
    let last = additional.len().saturating_sub(1);
    for (i, rr) in additional.iter().enumerate() {
        let fits = match rr.rtype {
            RType::OPT => rr.owner.as_ref().is_root(),
            RType::TSIG => i == last,
            _ => false,
        };
        if !fits {
            return Err(refuse(
                Rcode::FORMERR,
                format!(
                    "additional section: {} {} (only OPT and a last TSIG)",
                    rr.owner, rr.rtype
                ),
            ));
        }
    }
    if additional.iter().filter(|r| r.rtype == RType::OPT).count() > 1 {
        return Err(formerr("more than one OPT record"));
    }
    if r.remaining() != 0 {
        return Err(formerr("trailing octets after the records"));
    }
    Ok((prereqs, updates))
}

/// Whether `owner` is at or below the zone's apex (the RFC's `zone_of(name) == ZNAME`: a
/// name below a delegation counts as ours, as BIND and Knot count it).
fn in_zone(zone: &Zone, owner: NameRef<'_>) -> bool {
    owner.ends_with(&zone.apex())
}

/// `rdata` in canonical form (RFC 4034 §6.2: names in the rdata of the listed types
/// lower-cased), the form RFC 2136 compares records in (§1.1.1: names compare without
/// regard to case; the zone keeps rdata as it was received).
pub(crate) fn canonical(rtype: RType, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    shardns_dnssec::sign::canonical_rdata(rtype, data, &mut out);
    out
}

#[cfg(test)]
mod tests;
