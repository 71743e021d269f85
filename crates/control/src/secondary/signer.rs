//! secondary::signer -- a secondary zone with `dnssec = true` signed as it arrives ("bump
//! in the wire": Knot's `dnssec-signing: on` on a zone it transfers, BIND's
//! `inline-signing yes`). Two versions of the zone are kept: the one transferred, unsigned
//! (the base of the next IXFR from the primary, compared with its serial, kept in `file`),
//! and the one signed from it, which is served, journaled and transferred onward.
//!
//! - AXFR (or IXFR in AXFR form, or a retransfer): the zone signed whole by the signer of
//!   the primary zones (`signing::sign_records`, which keeps the signatures of the RRsets
//!   that did not change from the last signed version).
//! - IXFR: the difference between the two unsigned versions made into a change of the
//!   signed version and signed by itself (`signing::incremental`, the signer of dynamic
//!   updates): only the changed RRsets get new RRSIGs, the NSEC or NSEC3 chain is patched.
//!   When that cannot be done (a key event, a new SOA TTL or MINIMUM) the zone is signed
//!   whole.
//! - Signature refresh: the secondary thread asks for the zone to be signed again at the
//!   time the signer gave (`signature_refresh` before the first signature expires, or the
//!   next key event), whatever the primary does.
//!
//! The serial of the signed version (its own, as with Knot's and BIND's inline signing):
//! the primary's if it is greater (RFC 1982) than the last serial signed, else that serial
//! plus one. So every signed version has a new serial, a signature refresh moves it
//! though the primary's does not, and a downstream IXFR is always consistent with the
//! journal of signed versions. The last serial signed is in `KEYDIR/state/<zone>.state`;
//! the primary's is in the copy kept in `file`.
//!
//! Across a restart: the unsigned copy is read from `file` and signed; the last signed
//! version is kept in `KEYDIR/state/<zone>.signed` under a fingerprint of the unsigned
//! records and the keys (written after every signing, incremental ones too), so the same
//! signed version (same serial, same signatures) is served again when nothing is due.
//!
//! A version that fails to sign (a key directory missing or unreadable, a signer error)
//! is not taken at all: the refresh fails (logged, retried after RETRY), the signed
//! version served stays, and the unsigned base stays the one it was signed from. Nothing
//! half-signed is ever served.

use super::SecondaryZone;
use crate::signing::incremental::{sign_incrementally, Incremental};
use crate::signing::{self, serial_gt, SignSpec, StateFile};
use shardns_dnssec::RecordList;
use shardns_wire::{Class, Name, RType};
use shardns_zone::update::Change;
use shardns_zone::xfr::diff::Diff;
use shardns_zone::Zone;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tracing::info;

/// A signed version of a secondary zone, served.
#[derive(Clone)]
pub(crate) struct SignedVersion {
    /// The signed zone.
    pub(crate) zone: Arc<Zone>,
    /// When it must be signed again (seconds since 1970).
    pub(crate) due: u64,
    /// Signings of it again that failed in a row (the retry backs off with them).
    pub(crate) failures: u32,
}

/// What an IXFR was applied to: the unsigned version, the one signed from it, and the
/// names the IXFR changed (if known: the difference is made at them alone).
pub(super) struct Base<'a> {
    pub(super) unsigned: &'a Zone,
    pub(super) signed: &'a SignedVersion,
    pub(super) changed: Option<&'a [Name]>,
}

/// How a version was signed.
pub(super) enum How {
    /// Signed whole: the fingerprint to keep it under once served (`None`: already kept).
    Whole(Option<String>),
    /// Signed incrementally: its kept copy (`.signed`) is to be written after it is served;
    /// the names at which it differs from the signed version before (the owners of the
    /// signed change: the journal's diff is made at them alone).
    Incremental(Vec<Name>),
}

/// The unsigned records of `zone` (the signer's own left out: they are made anew), in
/// canonical order, so that the same records give the same list (and fingerprint)
/// however the version was made (AXFR, IXFR patch, the copy read at start). A multi-signer
/// zone keeps the apex key records of the primary's data (`signing::multi`).
pub(super) fn unsigned_list(zone: &Zone, spec: &SignSpec) -> RecordList {
    let apex = zone.apex().to_name();
    let mut list = RecordList::with_capacity(zone.record_count(), 0);
    for id in 0..zone.node_count() as u32 {
        let node = zone.node(id);
        let owner = node.name().to_name();
        for set in node.rrsets() {
            if signing::multi::signer_owned(spec, &apex, &owner, set.rtype) {
                continue;
            }
            let at = list.push_name(node.name());
            for data in set.rdatas() {
                list.push(at, set.rtype, Class::IN, set.ttl, data);
            }
        }
    }
    list.sort();
    list
}

/// `unsigned` signed whole at `now`, on every core, and kept in the key directory.
pub(super) fn sign_whole(
    unsigned: &Zone,
    spec: &SignSpec,
    now: u64,
) -> Result<SignedVersion, String> {
    sign(unsigned, spec, now, true).map(|(version, _)| version)
}

/// [`sign_whole`], the version not kept: with the fingerprint to keep it under once it is
/// served (`keeper`), if it is to be kept (not if it is the kept one).
pub(super) fn sign_whole_unkept(
    unsigned: &Zone,
    spec: &SignSpec,
    now: u64,
) -> Result<(SignedVersion, Option<String>), String> {
    sign(unsigned, spec, now, false)
}

fn sign(
    unsigned: &Zone,
    spec: &SignSpec,
    now: u64,
    keep_now: bool,
) -> Result<(SignedVersion, Option<String>), String> {
    let apex = unsigned.apex().to_name();
    let records = unsigned_list(unsigned, spec);
    let (list, _, due, fingerprint) =
        signing::sign_records_keeping(&apex, records, spec, now, 0, keep_now)?;
    let files = vec![PathBuf::from(format!("<{apex} signed as transferred>"))];
    let (zone, _) = Zone::build_sorted(apex, list, files, Vec::new())
        .map_err(|e| format!("the signed version does not build: {e}"))?;
    let version = SignedVersion {
        zone: Arc::new(zone),
        due,
        failures: 0,
    };
    Ok((version, fingerprint))
}

/// The wall clock and the signer's time for a signing of the zone at `apex` now
/// (`signing::clock`, as for a zone loaded from its file: never before the last signing,
/// not following a leap of the wall clock).
pub(super) fn signer_time(apex: &Name, spec: &SignSpec) -> (u64, u64) {
    let wall = signing::unix_now();
    (wall, signing::signer_now(apex, spec, wall))
}

/// `version`, signed whole at `now` of [`signer_time`], due on the wall clock.
pub(super) fn due_on_wall(mut version: SignedVersion, (wall, now): (u64, u64)) -> SignedVersion {
    version.due = (version.due + wall).saturating_sub(now);
    version
}

/// The serial of a new signed version: the primary's if it is above the last signed
/// (`last`), else the last plus one.
pub(super) fn next_serial(primary: u32, last: Option<u32>) -> u32 {
    match last {
        Some(last) if !serial_gt(primary, last) => last.wrapping_add(1),
        _ => primary,
    }
}

/// SOA rdata with its serial set to `serial`.
fn with_serial(soa: &[u8], serial: u32) -> Option<Vec<u8>> {
    let mut at = 0;
    for _ in 0..2 {
        let (_, len) = shardns_wire::NameRef::from_wire_prefix(soa.get(at..)?).ok()?;
        at += len;
    }
    let mut out = soa.to_vec();
    out.get_mut(at..at + 4)?
        .copy_from_slice(&serial.to_be_bytes());
    Some(out)
}

/// The apex SOA of `zone`: TTL, rdata.
fn soa_of(zone: &Zone) -> Option<(u32, Vec<u8>)> {
    let set = zone.apex_node().rrset(RType::SOA)?;
    Some((set.ttl, set.rdatas().next()?.to_vec()))
}

/// The change from `old` to `new` (two unsigned versions; `changed`, if known, the names
/// at which they differ) as a change of `signed` (the version signed from `old`), its new
/// SOA `new`'s with the serial `serial`.
pub(super) fn change_of(
    old: &Zone,
    new: &Zone,
    changed: Option<&[Name]>,
    signed: &Zone,
    serial: u32,
) -> Option<Change> {
    let diff = match changed {
        Some(names) => Diff::compute_at(old, new, names.iter().map(Name::as_ref)),
        None => Diff::compute(old, new),
    };
    let (ttl, soa) = soa_of(new)?;
    let ndel = diff.deleted() as usize;
    let (mut deleted, mut added) = (Vec::with_capacity(ndel), Vec::new());
    // In IXFR order: the old SOA, the deletions, the new SOA, the additions.
    for (i, r) in diff.records().enumerate() {
        if i == 0 || i == ndel + 1 {
            continue;
        }
        let record = (r.owner.to_name(), r.rtype, r.ttl, r.rdata.to_vec());
        if i <= ndel {
            deleted.push(record);
        } else {
            added.push(record);
        }
    }
    Some(Change {
        deleted,
        added,
        old_soa: soa_of(signed)?,
        soa: (ttl, with_serial(&soa, serial)?),
    })
}

/// `new`, transferred by IXFR onto `base`, signed at `now`: the change alone if it can
/// be, else the zone whole.
pub(super) fn sign_ixfr(
    base: Base<'_>,
    new: &Zone,
    spec: &SignSpec,
    now: u64,
) -> Result<(SignedVersion, How), String> {
    let Base {
        unsigned: old,
        signed,
        changed,
    } = base;
    let started = Instant::now();
    let apex = new.apex().to_name();
    let state = StateFile::new(&spec.key_dir, &apex);
    // The last signed serial is the served version's (the state file's if it is ahead).
    let last = state.read()?.map_or(signed.zone.serial(), |s| {
        if serial_gt(s, signed.zone.serial()) {
            s
        } else {
            signed.zone.serial()
        }
    });
    let serial = next_serial(new.serial(), Some(last));
    let change =
        change_of(old, new, changed, &signed.zone, serial).ok_or("a version without an SOA")?;
    // A multi-signer zone's key records changed: the full signer merges them with ours.
    let attempt = match signing::multi::needs_whole(spec, &apex, &change) {
        Some(why) => Incremental::Whole(why),
        None => sign_incrementally(&signed.zone, &change, spec, now)?,
    };
    match attempt {
        Incremental::Signed(mut zone, signed_change) => {
            zone.pack_small();
            state.set_serial(serial)?;
            info!(
                "zone {apex}: serial {} from the primary signed incrementally as serial {serial} in {:.3} s: {} records deleted, {} added with their signatures and chain",
                new.serial(),
                started.elapsed().as_secs_f64(),
                signed_change.deleted.len(),
                signed_change.added.len()
            );
            // The new signatures expire after the old ones: the refresh stays when it was.
            let version = SignedVersion {
                zone: Arc::new(zone),
                due: signed.due,
                failures: 0,
            };
            // The apex too: its SOA changed (not among the records).
            let touched = std::iter::once(apex)
                .chain(signed_change.owners().cloned())
                .collect();
            Ok((version, How::Incremental(touched)))
        }
        Incremental::Whole(why) => {
            info!("zone {apex}: the IXFR cannot be signed incrementally ({why}): signing the zone whole");
            let (version, fingerprint) = sign_whole_unkept(new, spec, now)?;
            Ok((version, How::Whole(fingerprint)))
        }
    }
}

/// Signs the version `new` a transfer brought for `zone` (`base`: what an IXFR was
/// applied to: then the change alone is signed; else the whole).
pub(super) fn sign_arrival(
    zone: &SecondaryZone,
    spec: &SignSpec,
    new: &Zone,
    base: Option<Base<'_>>,
) -> Result<(SignedVersion, How), String> {
    let clock = signer_time(&zone.name, spec);
    let now = clock.1;
    match base {
        Some(base) => match sign_ixfr(base, new, spec, now)? {
            (version, How::Whole(f)) => Ok((due_on_wall(version, clock), How::Whole(f))),
            incremental => Ok(incremental),
        },
        None => {
            let started = Instant::now();
            let (version, fingerprint) = sign_whole_unkept(new, spec, now)?;
            let version = due_on_wall(version, clock);
            info!(
                "zone {}: serial {} from the primary signed whole as serial {} in {:.3} s",
                zone.name,
                new.serial(),
                version.zone.serial(),
                started.elapsed().as_secs_f64()
            );
            Ok((version, How::Whole(fingerprint)))
        }
    }
}

/// [`sign_arrival`] for a zone signed as it arrives (`None` for the others), its error
/// made the transfer's.
pub(super) fn sign_transferred(
    zone: &SecondaryZone,
    new: &Zone,
    base: Option<Base<'_>>,
) -> Result<Option<(SignedVersion, How)>, String> {
    let Some(spec) = &zone.sign else {
        return Ok(None);
    };
    sign_arrival(zone, spec, new, base).map(Some).map_err(|e| {
        format!(
            "serial {} cannot be signed ({e}); the signed version served stays",
            new.serial()
        )
    })
}

#[cfg(test)]
#[path = "tests_signer.rs"]
mod tests;
