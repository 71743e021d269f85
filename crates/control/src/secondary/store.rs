//! secondary::store -- the copy a secondary keeps of each zone in its `file`: written after
//! every transfer as a zone file (a temporary file beside it, synced, then renamed over
//! it, so a crash leaves the old copy or the new one, never half of one), and read at start.
//!
//! The time of the last successful refresh is the file's modification time: a transfer
//! writes the file, a refresh that finds the serial unchanged sets its mtime to now. At
//! start a copy is served only if that time plus the SOA's EXPIRE is still ahead.
//!
//! The first line names the zone: a file that is another zone's copy (two zones given one
//! `file`, a catalog template's name meeting a configured one) is neither read, written
//! over nor deleted for this zone.

use super::{signer, Slot, MAX_INTERVAL, MIN_EXPIRE, MIN_REFRESH, MIN_RETRY};
use shardns_wire::{Name, RType};
use shardns_zone::scan::{scan_file, Diag};
use shardns_zone::{ScanOptions, Zone, ZoneChange};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tracing::{error, info, warn};

/// What the first line of a copy says after the zone's name.
const KEPT_BY: &str = ", kept by shardns as a secondary";

/// The zone the copy at `path` is of, by its first line; `None` if there is no file or
/// we did not write it.
fn owner(path: &Path) -> Option<Name> {
    let mut line = String::new();
    BufReader::new(File::open(path).ok()?.take(1024))
        .read_line(&mut line)
        .ok()?;
    if !line.contains(KEPT_BY) {
        return None;
    }
    line.strip_prefix("; ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `Err` if the file at `path` is the copy of a zone other than `apex`: it is left alone.
pub(super) fn check_owner(path: &Path, apex: &Name) -> io::Result<()> {
    match owner(path) {
        Some(other) if other != *apex => Err(io::Error::other(format!(
            "{} is the copy of zone {other}, not of {apex}: left as it is (two zones given one file?)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes `zone` to `path` atomically, unless it holds another zone's copy; `about` goes
/// in the header comment (where it came from).
pub(super) fn write_copy(path: &Path, zone: &Zone, about: &str) -> io::Result<()> {
    check_owner(path, &zone.apex().to_name())?;
    let header = format!("{} serial {}{KEPT_BY}: {about}", zone.apex(), zone.serial());
    crate::zonefile::write_atomic(path, zone, &header)
}

/// Records that the copy at `path` was found current now (its mtime is the time of the
/// last successful refresh).
pub(super) fn touch(path: &Path) -> io::Result<()> {
    File::options()
        .append(true)
        .open(path)?
        .set_modified(SystemTime::now())
}

/// A copy read back: the zone and its warnings, or why it cannot be read.
pub(super) type Copy = Result<(Zone, Vec<Diag>), String>;

/// The copy kept at `path`: `None` if there is none; else the zone (or why it cannot be
/// read) and when it was last refreshed.
pub(super) fn read_copy(path: &Path, apex: &Name) -> Option<(Copy, SystemTime)> {
    // A temporary file left by a crash mid-write is of no use.
    let _ = fs::remove_file(crate::zonefile::temp_beside(path));
    let modified = fs::metadata(path).ok()?.modified().ok()?;
    if let Err(e) = check_owner(path, apex) {
        return Some((Err(e.to_string()), modified));
    }
    let opts = ScanOptions {
        threads: 2,
        ..ScanOptions::new(apex.clone())
    };
    let zone = scan_file(path, &opts)
        .and_then(|scanned| Zone::build(apex.clone(), scanned))
        .map_err(|e| e.to_string());
    Some((zone, modified))
}

/// The SOA's REFRESH, RETRY and EXPIRE of `zone`, in seconds.
pub(super) fn soa_timers(zone: &Zone) -> (u32, u32, u32) {
    let apex = zone.apex_node();
    let Some(rdata) = apex.rrset(RType::SOA).and_then(|s| s.rdatas().next()) else {
        return (0, 0, 0);
    };
    let mut at = 0;
    for _ in 0..2 {
        match shardns_wire::NameRef::from_wire_prefix(&rdata[at..]) {
            Ok((_, len)) => at += len,
            Err(_) => return (0, 0, 0),
        }
    }
    let field = |i: usize| {
        rdata
            .get(at + 4 * i..at + 4 * i + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    (field(1), field(2), field(3))
}

/// The copy kept on disk for `slot`, served at once if it has not expired (else only the
/// base of the next IXFR). A zone signed as it arrives is signed now (its last signed
/// version served as it is when nothing is due); if that fails, the copy is not taken at
/// all and the zone is transferred anew.
pub(super) fn load_kept_copy(slot: &mut Slot) -> Option<ZoneChange> {
    let wall = SystemTime::now();
    let path = slot.zone.file.as_ref()?;
    let name = &slot.zone.name;
    let Some((zone, refreshed)) = read_copy(path, name) else {
        info!("zone {name}: no copy in {} yet", path.display());
        return None;
    };
    let zone = match zone {
        Ok((zone, _)) => zone,
        Err(e) => {
            warn!(
                "zone {name}: the copy in {} cannot be read, transferring anew:\n{e}",
                path.display()
            );
            return None;
        }
    };
    if let Some(spec) = &slot.zone.sign {
        let clock = signer::signer_time(name, spec);
        match signer::sign_whole(&zone, spec, clock.1) {
            Ok(signed) => slot.signed = Some(signer::due_on_wall(signed, clock)),
            Err(e) => {
                error!(
                    "zone {name}: the copy in {} (serial {}) cannot be signed, transferring anew: {e}",
                    path.display(),
                    zone.serial()
                );
                return None;
            }
        }
    }
    let (_, _, expire) = timers(&zone);
    let age = wall.duration_since(refreshed).unwrap_or_default();
    let zone = Arc::new(zone);
    // Still the base of an IXFR, served or not.
    slot.current = Some(Arc::clone(&zone));
    if age >= Duration::from_secs(expire.into()) {
        warn!(
            "zone {name}: the copy in {} (serial {}) expired {} s ago; not served until a transfer succeeds",
            path.display(),
            zone.serial(),
            (age - Duration::from_secs(expire.into())).as_secs()
        );
        return None;
    }
    let served = slot.served()?;
    info!(
        "zone {name}: serving the copy in {} (serial {}{}, refreshed {} s ago)",
        path.display(),
        zone.serial(),
        if served.serial() != zone.serial() {
            format!(", signed as serial {}", served.serial())
        } else {
            String::new()
        },
        age.as_secs()
    );
    slot.expire_at = Some(Instant::now() + (Duration::from_secs(expire.into()) - age));
    slot.serving = true;
    Some(ZoneChange::Put(served))
}

/// REFRESH, RETRY and EXPIRE of a version, within our bounds (seconds).
pub(super) fn timers(zone: &Zone) -> (u32, u32, u32) {
    let (refresh, retry, expire) = soa_timers(zone);
    (
        refresh.clamp(MIN_REFRESH, MAX_INTERVAL),
        retry.clamp(MIN_RETRY, MAX_INTERVAL),
        expire.max(MIN_EXPIRE),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_zone::load_zone_text;

    #[test]
    fn a_copy_reads_back_as_the_same_zone() {
        let text = "$TTL 300\n@ SOA ns hostmaster 42 7200 3600 1209600 60\n@ NS ns\n\
                    ns A 192.0.2.1\nns AAAA 2001:db8::1\n@ MX 10 Mail\n*.wild TXT \"a b\" \"c\\\"d\"\n\
                    odd\\.label TXT \"x\"\nsub NS ns.sub\nns.sub A 192.0.2.53\n\
                    x TYPE65280 \\# 3 010203\n_sip._tcp SRV 0 5 5060 sip\nc CNAME ns\n";
        let apex: Name = "copy.test.".parse().unwrap();
        let (zone, _) = load_zone_text(
            text.as_bytes(),
            Path::new("t"),
            &ScanOptions::new(apex.clone()),
        )
        .unwrap();
        let dir = std::env::temp_dir().join(format!("shardns-store-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("copy.test.zone");
        write_copy(&path, &zone, "from a test").unwrap();
        assert!(!crate::zonefile::temp_beside(&path).exists());
        let (back, _) = read_copy(&path, &apex).unwrap();
        let (back, _) = back.unwrap();
        let lines = |z: &Zone| {
            let mut v: Vec<String> = z.records().map(|r| r.to_string()).collect();
            v.sort();
            v
        };
        assert_eq!(lines(&back), lines(&zone));
        assert_eq!(soa_timers(&back), (7200, 3600, 1_209_600));
        touch(&path).unwrap();
        assert!(read_copy(&dir.join("none"), &apex).is_none());
        // Another zone given the same file: neither reads nor writes it.
        let other: Name = "other.test.".parse().unwrap();
        let before = fs::read(&path).unwrap();
        let (theirs, _) = load_zone_text(
            "@ 60 SOA ns h 1 60 60 600 60\n@ 60 NS ns\n".as_bytes(),
            Path::new("t"),
            &ScanOptions::new(other.clone()),
        )
        .unwrap();
        let e = write_copy(&path, &theirs, "from a test").unwrap_err();
        assert!(e.to_string().contains("copy of zone copy.test."), "{e}");
        assert_eq!(fs::read(&path).unwrap(), before);
        let (refused, _) = read_copy(&path, &other).unwrap();
        assert!(refused.unwrap_err().contains("not of other.test."));
        assert!(check_owner(&path, &apex).is_ok());
        let _ = fs::remove_dir_all(&dir);
    }
}
