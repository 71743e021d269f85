//! zones::load -- reading one zone (scan, sign if asked, build), and the map over every
//! core that reads many.

use super::{ZoneSource, ZoneSpec};
use crate::journal::{self, Read};
use crate::signing;
use shardns_zone::scan::{scan_file, scan_text, Diag};
use shardns_zone::{ScanOptions, Zone};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// `f` over `items` on every core (in order), for work that is independent per item:
/// statting and reading zone files.
pub(super) fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    // Items are handed out one at a time, so a big zone does not hold up a chunk of small
    // ones behind it.
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Relaxed);
                        let Some(item) = items.get(i) else { break };
                        out.push((i, f(item)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a zone loading thread panicked"))
            .collect()
    });
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for part in &mut parts {
        for (i, r) in part.drain(..) {
            slots[i] = Some(r);
        }
    }
    slots
        .into_iter()
        .map(|r| r.expect("every item was mapped"))
        .collect()
}

/// What [`load_one`] returns: the zone, the warnings, the files it `$INCLUDE`d (and the key
/// directory of a signed zone), and when a signed zone is to be signed again.
pub(super) type Loaded = (Zone, Vec<Diag>, Vec<PathBuf>, Option<u64>);

/// Scans, signs if it is to be signed, and builds one zone; a zone that may be updated
/// then has its journal replayed over it (`read` says whether,
/// [`crate::journal::replay`]).
pub(super) fn load_one(
    spec: &ZoneSpec,
    threads: usize,
    read: Read,
) -> Result<Loaded, shardns_zone::Error> {
    let opts = ScanOptions {
        threads,
        ..ScanOptions::new(spec.name.clone())
    };
    let scanned = match &spec.source {
        // `scan_file` reads only regular files (a FIFO would block the reload in open(), a
        // device like /dev/zero never end), and says so as `file:0: cannot read: ...`.
        ZoneSource::File(path) => scan_file(path, &opts)?,
        ZoneSource::Embedded(e) => scan_text(e.text.as_bytes(), Path::new(e.label), &opts)?,
    };
    let mut included: Vec<PathBuf> = scanned.files.iter().skip(1).cloned().collect();
    let file = scanned.files.first().cloned().unwrap_or_default();
    let mut refresh_at = None;
    let (zone, mut warnings) = match &spec.signing {
        None => Zone::build(spec.name.clone(), scanned)?,
        Some(s) => {
            // Every core for one zone, one each for many (as the scan).
            let sign_threads = if threads > 1 { 0 } else { 1 };
            // A zone that may be updated: its updates' changes signed with the file's
            // records (`signing::updates`).
            let updated = spec.journal.as_ref().map(|_| match read {
                Read::Changed { served } => Some(served),
                Read::First | Read::Unchanged => None,
            });
            // The signer's time: never before the last signing, not following a leap of
            // the wall clock (`signing::clock`); the time to sign again on the wall clock.
            let wall = signing::unix_now();
            let now = signing::signer_now(&spec.name, s, wall);
            let signed =
                signing::sign_scanned_with(&spec.name, scanned, s, now, sign_threads, updated)?;
            // New keys in the directory make a reload sign again.
            included.push(s.key_dir.clone());
            refresh_at = Some((signed.refresh_at + wall).saturating_sub(now));
            // Built as the signer's canonical order gives the records, without a second
            // index of them.
            Zone::build_sorted(
                spec.name.clone(),
                signed.records,
                signed.files,
                signed.warnings,
            )?
        }
    };
    let zone = match &spec.journal {
        Some(path) => {
            journal::replay(zone, path, spec.signing.is_some(), read).map_err(|message| {
                shardns_zone::Error::Invalid {
                    errors: vec![Diag {
                        file: file.clone(),
                        line: 0,
                        message,
                    }],
                }
            })?
        }
        None => zone,
    };
    // Signatures past their time are served as they are (an authoritative server does not
    // validate), with a warning: the operator's signer has stopped.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    warnings.extend(
        zone.signature_warnings(now)
            .into_iter()
            .map(|message| Diag {
                file: file.clone(),
                line: 0,
                message,
            }),
    );
    Ok((zone, warnings, included, refresh_at))
}
