//! journal::replay -- a zone that may be updated (its `update_policy` is not empty) keeps in
//! its journal the changes that are not in its zone file; when the zone is read from the
//! file, they are applied again, as BIND rolls a zone's `.jnl` forward and as Knot applies
//! its journal's changesets over the zone file (`journal-content: changes`).
//!
//! - **When**: the first time a zone is read (at start, or when it is newly configured),
//!   and when its file is read again unchanged (`shardns reload ZONE`): the served version
//!   then stays the latest. A zone file that changed since it was read wins, as Knot's
//!   default `zonefile-load: whole` has it (the journal applied only at a cold start or
//!   when the file is unchanged): the change from the served version to the file's is
//!   recorded in the journal as any reload's. But not a changed file whose serial is not
//!   above the served version's (updates moved the serial on while the operator edited):
//!   it is refused, the served version kept, as Knot refuses it ("zone file changed, but
//!   SOA serial decreased", "... without SOA serial update"), so updates are never lost
//!   to an edit silently.
//! - **Which changes**: those after the file's serial, if the journal's chain of versions
//!   holds it (not only ends at it): file at S1 with a journal S1->S2->S3 serves S3, and
//!   so does a file at S2. A damaged record ends the chain (the records before it are
//!   applied; the file is cut at start, [`super::disk`]).
//! - **A file serial the chain does not hold** (the file was edited, or replaced, while the
//!   server was down): the file wins, the journal starts anew, and a warning names the
//!   zone, both serials, and says the journal's changes were dropped. This is Knot's
//!   behaviour (its journal read finds no changeset from the file's serial and the zone
//!   file is loaded as it is); BIND refuses to load the zone instead ("journal rollforward
//!   failed: journal out of sync with zone") until the `.jnl` is removed by hand.
//! - **A file read again unchanged whose serial the chain no longer holds** (the journal
//!   was trimmed to its limits since), or a change that does not apply: refused, the
//!   served version kept (reading the file would take the zone back and drop the changes).
//! - **A signed zone** (`dnssec = true`) is not replayed from this journal: it holds the
//!   differences between signed versions (RRSIGs, the chain), while the zone is signed
//!   anew from its file at load. The changes updates made are kept unsigned apart
//!   (`crate::signing::updates`) and applied over the file's records before the signing,
//!   so the version signed at load has them; this journal goes on serving IXFR (started
//!   anew when the version signed at load has a serial it does not end at).

use super::disk::{parse, reset};
use shardns_zone::update::Change;
use shardns_zone::xfr::diff::Diff;
use shardns_zone::xfr::is_newer;
use shardns_zone::Zone;
use std::fs;
use std::io;
use std::path::Path;
use tracing::{error, info, warn};

/// Why a zone is being read, which decides whether its journal is replayed over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Read for the first time (at start, or newly configured): replayed.
    First,
    /// Read again, its file unchanged since it was last read: replayed.
    Unchanged,
    /// Read again, its file changed: the file wins, nothing replayed, if its serial is
    /// above `served`, the serial of the version served now.
    Changed {
        /// The serial served now.
        served: u32,
    },
}

/// `zone` (just read from its file) with the changes its journal at `path` holds after
/// the file's serial applied; `signed`: the zone was signed at load (not replayed: its
/// updates were signed with its file's records, see the module documentation). `Err`: a changed file that does not move the serial on, refused
/// (the message says why).
pub fn replay(zone: Zone, path: &Path, signed: bool, read: Read) -> Result<Zone, String> {
    // A signed zone's updates were applied before it was signed (the file's serial checked
    // there too: `crate::signing::updates`).
    if zone.is_unavailable() || signed {
        return Ok(zone);
    }
    if let Read::Changed { served } = read {
        if !is_newer(zone.serial(), served) {
            return Err(format!(
                "the zone file changed, but its serial {} is not above the served version's {served} (the zone may be updated: its journal holds changes the file may not have); not loaded, serial {served} still served: give the file a serial above {served}",
                zone.serial()
            ));
        }
        return Ok(zone);
    }
    replay_journal(zone, path, read)
}

/// [`replay`] for a zone read first or unchanged.
fn replay_journal(zone: Zone, path: &Path, read: Read) -> Result<Zone, String> {
    let apex = zone.apex().to_name();
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(zone),
        Err(e) => {
            warn!(
                "zone {apex}: cannot read its journal {}: {e}; serving the zone file as it is",
                path.display()
            );
            return Ok(zone);
        }
    };
    // Not this zone's journal (or not one): said when the journal is opened at start.
    let Ok((diffs, damage)) = parse(&bytes, &apex) else {
        return Ok(zone);
    };
    let (Some(first), Some(last)) = (diffs.first(), diffs.last()) else {
        return Ok(zone);
    };
    let (first, last, serial) = (first.from(), last.to(), zone.serial());
    if let Some((at, what)) = &damage {
        warn!(
            "zone {apex}: journal {} is damaged at octet {at} ({what}): replaying its {} whole records, up to serial {last}",
            path.display(),
            diffs.len()
        );
    }
    let Some(start) = diffs.iter().position(|d| d.from() == serial) else {
        if last != serial && read == Read::Unchanged {
            // The served version came from this file and the journal, which no longer
            // reaches back to the file (trimmed): reading it would lose the changes.
            return Err(format!(
                "the zone file's serial {serial} is no longer in the chain of its journal {} (serial {first} to {last}: trimmed to its limits); not read again, serial {last} still served",
                path.display()
            ));
        }
        if last != serial {
            warn!(
                "zone {apex}: the zone file is at serial {serial}, which the chain of its journal {} (serial {first} to {last}) does not hold (the file was edited or replaced while the server was down?): the file wins; the journal's changes up to serial {last} are dropped and the journal starts anew",
                path.display()
            );
            if read == Read::First {
                reset(Some(path), &apex);
            }
        }
        return Ok(zone);
    };
    let mut zone = zone;
    let mut applied = 0;
    for d in &diffs[start..] {
        match apply(d, &zone) {
            Ok(z) => {
                zone = z;
                applied += 1;
            }
            Err(e) if read == Read::Unchanged => {
                return Err(format!(
                    "its journal {}: the change from serial {} to {} cannot be applied ({e}); not read again, the version served kept",
                    path.display(),
                    d.from(),
                    d.to()
                ));
            }
            Err(e) => {
                error!(
                    "zone {apex}: journal {}: the change from serial {} to {} cannot be applied ({e}): serving serial {}, the journal's later changes are dropped",
                    path.display(),
                    d.from(),
                    d.to(),
                    zone.serial()
                );
                return Ok(zone);
            }
        }
    }
    info!(
        "zone {apex}: journal {} replayed over the zone file: serial {serial} -> {} ({applied} changes)",
        path.display(),
        zone.serial()
    );
    Ok(zone)
}

/// The version `diff` makes of `zone` (which must be at its starting serial): patched as
/// an IXFR patches it, or built in full when the patch cannot be done.
pub fn apply(diff: &Diff, zone: &Zone) -> Result<Zone, String> {
    if diff.from() != zone.serial() {
        return Err(format!(
            "it starts at serial {}, the zone is at {}",
            diff.from(),
            zone.serial()
        ));
    }
    let ndel = diff.deleted() as usize;
    let mut change = Change {
        deleted: Vec::with_capacity(ndel),
        added: Vec::with_capacity(diff.added() as usize),
        old_soa: (0, Vec::new()),
        soa: (0, Vec::new()),
    };
    for (k, r) in diff.records().enumerate() {
        let record = (r.owner.to_name(), r.rtype, r.ttl, r.rdata.to_vec());
        match k {
            0 => change.old_soa = (r.ttl, r.rdata.to_vec()),
            k if k <= ndel => change.deleted.push(record),
            k if k == ndel + 1 => change.soa = (r.ttl, r.rdata.to_vec()),
            _ => change.added.push(record),
        }
    }
    let (new, _warnings) = change.apply(zone).map_err(|e| e.to_string())?;
    if new.serial() != diff.to() {
        return Err(format!(
            "it made serial {}, not {}",
            new.serial(),
            diff.to()
        ));
    }
    Ok(new)
}
