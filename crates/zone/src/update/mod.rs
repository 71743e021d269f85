//! Dynamic update (RFC 2136), the library half: an UPDATE message read against the current
//! version of a zone gives either the rcode to answer (and why, for the log) or the change
//! to apply. No I/O, no clock (the caller passes "now"), no TSIG check (the caller verifies
//! the signature and decides who may update before calling [`update`]).
//!
//! The steps are the RFC's, in its order: the message is read (§2, §3.1: `parse` here,
//! with the record reader of [`crate::xfr::incoming`] and its rdata checks), the
//! prerequisites are checked against the zone (§2.4, §3.2: `prereq`), the update section is
//! prescanned (§3.4.1: `prescan`), and only then applied (§3.4.2: `apply`) to a copy of
//! the names it touches, so that a message that fails anywhere changes nothing.
//!
//! The result, a [`Change`], is what an IXFR's difference sequence holds: the records
//! deleted (as the zone stores them), the records added, the old SOA and the new one. It
//! goes through the same machinery as an incoming IXFR: [`Change::apply`] makes the new
//! version with `Zone::patch` (a full [`Zone::build`] when the patch cannot be done), and
//! [`crate::xfr::diff::Diff::compute`] of the two versions is the journal's record of it.
//!
//! Who may update what is the zone's [`Policy`] (`policy`): [`update_as`] is [`update`]
//! with its checks, the one a server calls; [`update`] itself trusts its caller. A signed
//! zone's change is signed by [`sign::sign_change`] (new RRSIGs for what changed, the NSEC
//! or NSEC3 chain patched) before it is applied.
//!
//! The server's side (the queue from the workers, TSIG, the policy from the config, the
//! journal, NOTIFY) is `shardns_control::update`.

mod apply;
mod policy;
mod prereq;
mod prescan;
pub mod sign;

use crate::db::Zone;
use crate::error::Error;
use crate::scan::{Diag, Records, Scanned};
use crate::xfr::incoming::{keep, read_raw};
pub use apply::SerialPolicy;
pub use policy::{Grant, Limits, Names, Policy, Requester, Types, Who};
use shardns_wire::message::{read_question, Header, Reader, HEADER_LEN};
use shardns_wire::{rdata, Class, Name, NameBuf, NameRef, Opcode, RType, Rcode};
pub use sign::{sign_change, ResignKind};
use std::fmt;
use std::path::PathBuf;

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

/// A record of a [`Change`]: owner, type, TTL, rdata.
pub type ChangeRecord = (Name, RType, u32, Vec<u8>);

/// What an accepted update changes, in the form of one IXFR difference sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Records deleted, their rdata and TTL as the zone holds them (the apex SOA not
    /// included: it is `old_soa`).
    pub deleted: Vec<ChangeRecord>,
    /// Records added (the apex SOA not included: it is `soa`).
    pub added: Vec<ChangeRecord>,
    /// The zone's SOA before (TTL, rdata).
    pub old_soa: (u32, Vec<u8>),
    /// The new SOA (TTL, rdata), its serial moved.
    pub soa: (u32, Vec<u8>),
}

/// The result of an update that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every change was one the RFC ignores (a duplicate, an SOA with a lower serial, the
    /// last apex NS, ...): NOERROR, and no new version (the serial does not move).
    Unchanged,
    /// The change to make into a new version.
    Change(Change),
}

/// Reads the UPDATE message `msg` (already known to have opcode UPDATE) against `zone`,
/// the zone its zone section must name, and returns the change to make (the serial moved
/// by `policy` at `now`, seconds since 1970) or the rcode to answer.
pub fn update(msg: &[u8], zone: &Zone, policy: SerialPolicy, now: u64) -> Result<Outcome, Refusal> {
    let (prereqs, updates) = parse(msg, zone)?;
    prereq::check(zone, &prereqs)?;
    prescan::check(zone, &updates)?;
    Ok(apply::apply(zone, &updates, policy, now))
}

/// [`update`] for `who` under the zone's `access` policy. In order: the [`Limits`] (before
/// the message is read); whether any grant is for `who` at all (if not, REFUSED before the
/// prerequisites, so that they tell a stranger nothing); the message, the prerequisites
/// and the prescan as in [`update`]; then each update record against the grants (RFC 2136
/// §3.3 puts the permission check after the prerequisites, as BIND does it; it comes after
/// the prescan here, so that the grants judge records known to be in the zone and of a
/// data type: the rcode differs from BIND's record-by-record loop only for a message both
/// malformed and unpermitted); and only then the change.
pub fn update_as(
    msg: &[u8],
    zone: &Zone,
    access: &Policy,
    who: &Requester<'_>,
    serial: SerialPolicy,
    now: u64,
) -> Result<Outcome, Refusal> {
    access.check_size(msg)?;
    if !access.admits(who) {
        return Err(refuse(
            Rcode::REFUSED,
            format!("no grant in {} for {who}", zone.apex()),
        ));
    }
    let (prereqs, updates) = parse(msg, zone)?;
    prereq::check(zone, &prereqs)?;
    prescan::check(zone, &updates)?;
    permitted(zone, access, who, &updates)?;
    Ok(apply::apply(zone, &updates, serial, now))
}

/// Checks each update record against the grants. A delete of every RRset of a name (class
/// and type ANY) is checked for each type it would delete: those the zone holds there but
/// the DNSSEC types, and at the apex but SOA and NS (see `apply`; BIND's `ssu_checkall`).
fn permitted(
    zone: &Zone,
    access: &Policy,
    who: &Requester<'_>,
    updates: &[Rr],
) -> Result<(), Refusal> {
    for rr in updates {
        let owner = rr.owner.as_ref();
        if rr.class != Class::ANY || rr.rtype != RType::ANY {
            access.check_record(who, owner, rr.rtype)?;
            continue;
        }
        let apex = owner.eq_ci(&zone.apex());
        let held = zone.find(owner).into_iter().flat_map(|n| n.rrsets());
        for set in held {
            let kept = prescan::dnssec_kept(set.rtype)
                || (apex && matches!(set.rtype, RType::SOA | RType::NS));
            if !kept {
                access.check_record(who, owner, set.rtype)?;
            }
        }
    }
    Ok(())
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

impl Change {
    /// The owner names of the records deleted and added (the apex's SOA, kept apart, is
    /// not among them): where the zone's versions before and after it differ.
    pub fn owners(&self) -> impl Iterator<Item = &Name> {
        self.deleted.iter().chain(&self.added).map(|r| &r.0)
    }

    /// The new SOA serial.
    pub fn serial(&self) -> u32 {
        apply::serial_of(&self.soa.1).unwrap_or(0)
    }

    /// The new version of `base` (the version the update was read against), as an IXFR
    /// makes it: `Zone::patch`, or a full build when the patch cannot be done. The
    /// errors are those of a build (a change the zone's checks refuse; the caller answers
    /// SERVFAIL and keeps the version it has).
    pub fn apply(&self, base: &Zone) -> Result<(Zone, Vec<Diag>), Error> {
        self.apply_with(base, true)
    }

    /// [`Change::apply`], a small zone's new version left split, not packed: for a version
    /// patched again soon, as dynamic updates do ([`Zone::pack_small`] packs it).
    pub fn apply_split(&self, base: &Zone) -> Result<(Zone, Vec<Diag>), Error> {
        self.apply_with(base, false)
    }

    fn apply_with(&self, base: &Zone, pack: bool) -> Result<(Zone, Vec<Diag>), Error> {
        let deleted = self
            .deleted
            .iter()
            .map(|(o, t, _, d)| (o.as_ref(), *t, d.as_slice()));
        let added = self
            .added
            .iter()
            .map(|(o, t, ttl, d)| (o.as_ref(), *t, *ttl, d.as_slice()));
        if let Some((zone, warnings, _)) =
            base.patch_with(deleted, added, (self.soa.0, self.soa.1.as_slice()), pack)?
        {
            return Ok((zone, warnings));
        }
        let scanned = Scanned {
            chunks: vec![self.records(base)],
            files: vec![PathBuf::from(format!("<UPDATE of {}>", base.apex()))],
            warnings: Vec::new(),
            text: Vec::new(),
        };
        Zone::build(base.apex().to_name(), scanned)
    }

    /// The records of the new version: `base`'s without those deleted, with those added.
    pub(crate) fn records(&self, base: &Zone) -> Records {
        let mut out = Records::default();
        let mut last = None;
        keep(
            &mut out,
            &mut last,
            base.apex(),
            RType::SOA,
            self.soa.0,
            &self.soa.1,
        );
        let key = |o: NameRef<'_>, t: RType, d: &[u8]| {
            let mut lower = [0u8; shardns_wire::name::MAX_NAME_LEN];
            let n = o.lowercase_into(&mut lower);
            (lower[..n].to_vec(), t, d.to_vec())
        };
        let gone: std::collections::HashSet<_> = self
            .deleted
            .iter()
            .map(|(o, t, _, d)| key(o.as_ref(), *t, d))
            .collect();
        for id in 0..base.node_count() as u32 {
            let node = base.node(id);
            for set in node.rrsets() {
                if id == 0 && set.rtype == RType::SOA {
                    continue;
                }
                for data in set.rdatas() {
                    if !gone.contains(&key(node.name(), set.rtype, data)) {
                        keep(&mut out, &mut last, node.name(), set.rtype, set.ttl, data);
                    }
                }
            }
        }
        for (o, t, ttl, d) in &self.added {
            keep(&mut out, &mut last, o.as_ref(), *t, *ttl, d);
        }
        out
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_client;
