//! journal -- every version change of a zone kept as a diff, so that an IXFR is answered
//! with the changes since the client's serial (RFC 1995), not the whole zone.
//!
//! Each zone that some client may transfer (`allow_transfer` not empty) and whose
//! `journal_max_depth` is not 0 has a [`History`] in memory (the latest diffs, within
//! `journal_max_depth` versions and `journal_max_size` octets) and, when it has a file or
//! `server.journal_directory` is set, the same diffs on disk, so they survive a restart.
//! A new version (a reload of the zone file, a transfer in) is compared with the one it
//! replaces on the main thread, after the swap and before the NOTIFY to secondaries
//! ([`shardns_zone::xfr::diff::Diff::compute`]); workers read the histories
//! ([`Journals::history`]) when an IXFR comes.
//!
//! File format (one file per zone, `FILE.journal` or `DIR/NAME.journal`):
//!
//! ```text
//! header:  "SHARDNSJ" | version u32 (1) | apex length u16 | apex (wire form, lowercase)
//! record:  "SJR1" | payload length u32 | CRC-32 of length and payload u32 | payload (a Diff)
//! ```
//!
//! A record is appended with one `write` and then `fdatasync`ed; a journal trimmed to its
//! limits is written anew to a temporary file, synced and renamed over the old one. At
//! start a journal is read back and every record checked (checksum, a diff that parses, each
//! starting where the one before ended): the first bad record and all after it are dropped
//! with a log line and the file cut there (a crash in the middle of an append leaves
//! exactly that), and a journal that does not end at the zone's serial (the zone file was
//! edited while the server was down) is started anew. A serial that goes backwards, or a
//! diff bigger than the journal may hold, starts it anew too: clients then get AXFR form.

use crate::config::{Config, ZoneConfig};
use shardns_wire::{Name, NameRef};
use shardns_zone::xfr::diff::{Diff, History};
use shardns_zone::xfr::is_newer;
use shardns_zone::{Zone, ZoneSet};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tracing::{info, warn};

/// `journal_max_size` when neither the zone nor the server sets one (as Knot DNS).
pub(crate) const DEFAULT_MAX_SIZE: u64 = 20 << 20;
/// `journal_max_depth` when neither sets one (as Knot DNS).
pub(crate) const DEFAULT_MAX_DEPTH: u32 = 20;

const MAGIC: &[u8; 8] = b"SHARDNSJ";
const VERSION: u32 = 1;
const RECORD: &[u8; 4] = b"SJR1";
/// Record magic, length, checksum.
const FRAME: usize = 12;

/// The histories of every journaled zone. Locked by the main thread when a version
/// changes and by a worker when an IXFR asks (for a clone of an `Arc`): never on the
/// answer path.
#[derive(Debug, Default)]
pub(crate) struct Journals {
    zones: Mutex<HashMap<Name, Arc<History>>>,
}

impl Journals {
    /// True if no zone has a history.
    fn is_empty(&self) -> bool {
        self.zones
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// The history of the zone at `apex`, if it is journaled and has one.
    pub(crate) fn history(&self, apex: NameRef<'_>) -> Option<Arc<History>> {
        let zones = self.zones.lock().unwrap_or_else(|e| e.into_inner());
        zones.get(&apex.to_name()).cloned()
    }

    /// Drops the history of a zone no longer served (a member removed from its catalog),
    /// so that member churn does not grow this table.
    pub(crate) fn forget(&self, apex: &Name) {
        let mut zones = self.zones.lock().unwrap_or_else(|e| e.into_inner());
        zones.remove(apex);
    }

    /// Keeps `history` for `apex`; an empty one is not kept (a zone that has never
    /// changed costs nothing here: its journal is looked for on disk at its first change).
    fn set(&self, apex: Name, history: Option<History>) {
        let mut zones = self.zones.lock().unwrap_or_else(|e| e.into_inner());
        match history.filter(|h| h.depth() > 0) {
            Some(h) => zones.insert(apex, Arc::new(h)),
            None => zones.remove(&apex),
        };
    }
}

/// How one zone is journaled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// The journal file (`None`: in memory only).
    pub(crate) path: Option<PathBuf>,
    pub(crate) max_size: usize,
    pub(crate) max_depth: usize,
}

/// How the zone at `apex`, read from `file` (or keeping its copy there), is journaled
/// under `config`; `None`: it is not (nobody may transfer it, or its depth is 0).
pub(crate) fn settings(config: &Config, apex: &Name, file: Option<&Path>) -> Option<Settings> {
    // A later table for the same apex wins, as for the transfer ACL.
    let zone = config.zones.iter().rev().find(|z| &z.name == apex);
    settings_of(config, zone, apex, file)
}

/// [`settings`] with the zone's `[[zone]]` table (if any) already found.
fn settings_of(
    config: &Config,
    zone: Option<&ZoneConfig>,
    apex: &Name,
    file: Option<&Path>,
) -> Option<Settings> {
    let acl = zone
        .and_then(|z| z.allow_transfer.as_ref())
        .unwrap_or(&config.server.allow_transfer);
    if acl.is_empty() {
        return None;
    }
    let s = &config.server;
    let depth = zone
        .and_then(|z| z.journal_max_depth)
        .or(s.journal_max_depth)
        .unwrap_or(DEFAULT_MAX_DEPTH);
    if depth == 0 {
        return None;
    }
    let size = zone
        .and_then(|z| z.journal_max_size)
        .or(s.journal_max_size)
        .unwrap_or(DEFAULT_MAX_SIZE);
    let path = match &s.journal_directory {
        Some(dir) => Some(dir.join(file_name(apex))),
        None => file.filter(|f| !f.as_os_str().is_empty()).map(|f| {
            let mut p = f.as_os_str().to_owned();
            p.push(".journal");
            PathBuf::from(p)
        }),
    };
    Some(Settings {
        path,
        max_size: usize::try_from(size).unwrap_or(usize::MAX),
        max_depth: depth as usize,
    })
}

/// `NAME.journal` for a zone in `journal_directory`: the apex in lowercase without its
/// final dot (`root` for the root), `/` and NUL replaced.
fn file_name(apex: &Name) -> String {
    let text = apex.to_string().to_lowercase();
    let text = text.trim_end_matches('.');
    let text = if text.is_empty() { "root" } else { text };
    format!("{}.journal", text.replace(['/', '\0'], "_"))
}

/// Records the versions in `zones` (just served) against those they replaced in `old`
/// (`None`: at start). `file_of` says where a zone is read from or keeps its copy.
pub(crate) fn record_all<'f>(
    journals: &Journals,
    config: &Config,
    file_of: impl Fn(&Name) -> Option<&'f Path>,
    old: Option<&ZoneSet>,
    zones: &[Arc<Zone>],
) {
    // Nobody may transfer anything: no journal, nothing to look up per zone.
    let anyone = !config.server.allow_transfer.is_empty()
        || config
            .zones
            .iter()
            .any(|z| z.allow_transfer.as_ref().is_some_and(|a| !a.is_empty()));
    if !anyone && journals.is_empty() {
        return;
    }
    // The `[[zone]]` tables by name, once, when looking each up in turn would cost more
    // (a later table for the same apex wins).
    let tables: Option<HashMap<&Name, &ZoneConfig>> =
        (zones.len() > 16).then(|| config.zones.iter().map(|z| (&z.name, z)).collect());
    for zone in zones {
        let apex = zone.apex().to_name();
        let table = match &tables {
            Some(t) => t.get(&apex).copied(),
            None => config.zones.iter().rev().find(|z| z.name == apex),
        };
        let settings = settings_of(config, table, &apex, file_of(&apex));
        let was = old.and_then(|o| o.get(zone.apex()));
        record(journals, settings.as_ref(), was.map(|z| &**z), zone);
    }
}

/// The file a zone of `config` is read from or keeps its copy in: its `[[zone]]` table's.
pub(crate) fn config_file<'c>(config: &'c Config, apex: &Name) -> Option<&'c Path> {
    config
        .zones
        .iter()
        .rev()
        .find(|z| &z.name == apex)
        .map(|z| z.file.as_path())
}

/// Records that `new` replaces `old` (`None`: no version before, as at start).
pub(crate) fn record(
    journals: &Journals,
    settings: Option<&Settings>,
    old: Option<&Zone>,
    new: &Zone,
) {
    if new.is_unavailable() {
        return;
    }
    let apex = new.apex().to_name();
    let Some(settings) = settings else {
        journals.set(apex, None);
        return;
    };
    let old = old.filter(|o| !o.is_unavailable());
    let path = settings.path.as_deref();
    let mut history = match journals.history(apex.as_ref()) {
        Some(h) => (*h).clone(),
        None => {
            // The first version since start: what the journal on disk holds, if it ends
            // where this zone's history goes on.
            let base = old.map_or(new.serial(), Zone::serial);
            let h = match path {
                Some(p) => open(p, &apex, base, settings),
                None => History::new(),
            };
            if old.is_none() {
                journals.set(apex, Some(h));
                return;
            }
            h
        }
    };
    let Some(old) = old else {
        // A version with nothing known before it (served again after expiring).
        if history.last_serial().is_some_and(|s| s != new.serial()) {
            info!(
                "zone {apex}: journal: serial {} follows no version we kept; journal started anew",
                new.serial()
            );
            reset(path, &apex);
            history = History::new();
        }
        journals.set(apex, Some(history));
        return;
    };
    let started = Instant::now();
    if old.serial() == new.serial() {
        if !Diff::compute(old, new).is_empty() {
            warn!(
                "zone {apex}: changed without a new serial (still {}): secondaries will not see the change, and the journal keeps no diff for it",
                new.serial()
            );
        }
        return;
    }
    if !is_newer(new.serial(), old.serial()) {
        warn!(
            "zone {apex}: serial went from {} to {}, not forward (RFC 1982): journal started anew; secondaries get the zone in AXFR form",
            old.serial(),
            new.serial()
        );
        reset(path, &apex);
        journals.set(apex, Some(History::new()));
        return;
    }
    let diff = Diff::compute(old, new);
    if diff.len() > settings.max_size {
        info!(
            "zone {apex}: journal: the changes from serial {} to {} ({} octets) exceed journal_max_size ({}); journal started anew",
            old.serial(),
            new.serial(),
            diff.len(),
            settings.max_size
        );
        reset(path, &apex);
        journals.set(apex, Some(History::new()));
        return;
    }
    let follows = history.last_serial().is_none_or(|s| s == old.serial());
    let (deleted, added, octets) = (diff.deleted(), diff.added(), diff.len());
    let dropped = history.push(Arc::new(diff), settings.max_depth, settings.max_size);
    if let Some(p) = path {
        let written = if dropped > 0 || !follows {
            rewrite(p, &apex, &history)
        } else {
            history
                .diffs()
                .last()
                .map_or(Ok(()), |d| append(p, &apex, d))
        };
        if let Err(e) = written {
            warn!(
                "zone {apex}: cannot write its journal {}: {e}; the changes are kept in memory only",
                p.display()
            );
        }
    }
    info!(
        "zone {apex}: journal: serial {} -> {}: {deleted} records deleted, {added} added ({octets} octets); {} versions back to serial {} in {:.3} s",
        old.serial(),
        new.serial(),
        history.depth(),
        history.first_serial().unwrap_or(new.serial()),
        started.elapsed().as_secs_f64()
    );
    journals.set(apex, Some(history));
}

/// The journal file's header for `apex`.
fn header(apex: &Name) -> Vec<u8> {
    let wire = apex.as_wire().to_ascii_lowercase();
    let mut h = Vec::with_capacity(14 + wire.len());
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&VERSION.to_be_bytes());
    h.extend_from_slice(&(wire.len() as u16).to_be_bytes());
    h.extend_from_slice(&wire);
    h
}

fn checksum(len: &[u8], payload: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(len);
    c.update(payload);
    c.finalize()
}

/// One record: a diff framed and checksummed.
fn frame(diff: &Diff) -> Vec<u8> {
    let payload = diff.bytes();
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = Vec::with_capacity(FRAME + payload.len());
    out.extend_from_slice(RECORD);
    out.extend_from_slice(&len);
    out.extend_from_slice(&checksum(&len, payload).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The whole diffs of a journal, and where the damage starts and what it is, if any.
pub type Parsed = (Vec<Diff>, Option<(usize, String)>);

/// Reads the records of a journal file's bytes: the diffs that are whole, and, if some
/// are not, where the damage starts and what it is.
pub fn parse(bytes: &[u8], apex: &Name) -> Result<Parsed, String> {
    let head = header(apex);
    if bytes.len() < head.len() || bytes[..8] != MAGIC[..] {
        return Err("not a shardns journal".into());
    }
    if bytes[..head.len()] != head[..] {
        return Err(format!("not a version-{VERSION} journal of zone {apex}"));
    }
    let mut at = head.len();
    let mut diffs = Vec::new();
    while at < bytes.len() {
        let Some(f) = bytes.get(at..at + FRAME) else {
            let what = format!("{} octets, less than a record's head", bytes.len() - at);
            return Ok((diffs, Some((at, what))));
        };
        let len = u32::from_be_bytes([f[4], f[5], f[6], f[7]]) as usize;
        let sum = u32::from_be_bytes([f[8], f[9], f[10], f[11]]);
        let problem = if f[..4] != RECORD[..] {
            Some("no record mark".to_string())
        } else if let Some(payload) = bytes.get(at + FRAME..at + FRAME + len) {
            if checksum(&f[4..8], payload) != sum {
                Some("checksum mismatch".into())
            } else {
                match Diff::from_bytes(payload.to_vec()) {
                    Ok(d) => {
                        if diffs.last().is_some_and(|p: &Diff| p.to() != d.from()) {
                            Some(format!("a diff from serial {} does not follow", d.from()))
                        } else {
                            diffs.push(d);
                            None
                        }
                    }
                    Err(e) => Some(e),
                }
            }
        } else {
            Some(format!(
                "a record of {len} octets cut short at {}",
                bytes.len() - at - FRAME
            ))
        };
        if let Some(what) = problem {
            return Ok((diffs, Some((at, what))));
        }
        at += FRAME + len;
    }
    Ok((diffs, None))
}

/// A whole journal file of `apex` holding `diffs`, as `rewrite` writes it (public for the fuzz target
/// `journal`: what it writes, [`parse`] reads back).
pub fn encode<'d>(apex: &Name, diffs: impl IntoIterator<Item = &'d Diff>) -> Vec<u8> {
    let mut bytes = header(apex);
    for d in diffs {
        bytes.extend_from_slice(&frame(d));
    }
    bytes
}

/// Reads the journal at `path` for the version `serial` of `apex`: its diffs if they end
/// there, cut at the first damaged record; else an empty history (and the file goes).
fn open(path: &Path, apex: &Name, serial: u32, settings: &Settings) -> History {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return History::new(),
        Err(e) => {
            warn!(
                "zone {apex}: cannot read its journal {}: {e}; starting it anew",
                path.display()
            );
            reset(Some(path), apex);
            return History::new();
        }
    };
    let (diffs, damage) = match parse(&bytes, apex) {
        Ok(r) => r,
        Err(e) => {
            warn!(
                "zone {apex}: {} is {e}; starting the journal anew",
                path.display()
            );
            reset(Some(path), apex);
            return History::new();
        }
    };
    if let Some((at, what)) = &damage {
        warn!(
            "zone {apex}: journal {} is damaged at octet {at} ({what}; cut short by a crash?): {} records kept, the rest dropped",
            path.display(),
            diffs.len()
        );
        if let Err(e) = cut(path, *at as u64) {
            warn!(
                "zone {apex}: cannot cut the journal {}: {e}",
                path.display()
            );
        }
    }
    let mut history = History::new();
    for d in diffs {
        history.push(Arc::new(d), usize::MAX, usize::MAX);
    }
    if history.depth() == 0 {
        return history;
    }
    if history.last_serial() != Some(serial) {
        warn!(
            "zone {apex}: journal {} ends at serial {}, the zone is at {serial} (changed while the server was down?): journal started anew",
            path.display(),
            history.last_serial().unwrap_or_default()
        );
        reset(Some(path), apex);
        return History::new();
    }
    if history.trim(settings.max_depth, settings.max_size) > 0 {
        if let Err(e) = rewrite(path, apex, &history) {
            warn!(
                "zone {apex}: cannot write its journal {}: {e}",
                path.display()
            );
        }
    }
    info!(
        "zone {apex}: journal {}: {} versions, serial {} to {serial}",
        path.display(),
        history.depth(),
        history.first_serial().unwrap_or(serial)
    );
    history
}

/// Cuts a damaged journal after its last whole record.
fn cut(path: &Path, len: u64) -> io::Result<()> {
    let f = OpenOptions::new().write(true).open(path)?;
    f.set_len(len)?;
    f.sync_all()
}

/// Removes a journal (it starts anew with the next change).
fn reset(path: Option<&Path>, apex: &Name) {
    if let Some(p) = path {
        match fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => warn!(
                "zone {apex}: cannot remove its journal {}: {e}",
                p.display()
            ),
        }
    }
}

/// Appends one diff: one `write`, then `fdatasync`. A failed write is undone (the file cut
/// back), so the next append does not follow garbage.
fn append(path: &Path, apex: &Name, diff: &Diff) -> io::Result<()> {
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    let before = f.metadata()?.len();
    let mut bytes = if before == 0 {
        header(apex)
    } else {
        Vec::new()
    };
    bytes.extend_from_slice(&frame(diff));
    if let Err(e) = f.write_all(&bytes).and_then(|()| f.sync_data()) {
        let _ = f.set_len(before);
        return Err(e);
    }
    if before == 0 {
        sync_dir(path)?;
    }
    Ok(())
}

/// Writes the whole journal anew: a temporary file, synced, renamed over the old one.
fn rewrite(path: &Path, apex: &Name, history: &History) -> io::Result<()> {
    if history.depth() == 0 {
        reset(Some(path), apex);
        return Ok(());
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(&encode(apex, history.diffs().map(|d| &**d)))?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        sync_dir(path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_zone::{load_zone_text, ScanOptions};

    fn zone(serial: u32, extra: &str) -> Zone {
        let text = format!(
            "$ORIGIN j.test.\n$TTL 60\n@ SOA ns h {serial} 60 60 600 60\n@ NS ns\nns A 192.0.2.1\n{extra}"
        );
        let opts = ScanOptions::new("j.test.".parse().unwrap());
        load_zone_text(text.as_bytes(), Path::new("t"), &opts)
            .unwrap()
            .0
    }

    fn on_disk(path: &Path) -> Settings {
        Settings {
            path: Some(path.to_path_buf()),
            max_size: 1 << 20,
            max_depth: 3,
        }
    }

    #[test]
    fn appended_read_back_trimmed_and_a_cut_tail_dropped() {
        let dir = std::env::temp_dir().join(format!("shardns-journal-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("j.test.zone.journal");
        let s = on_disk(&path);
        let apex: Name = "j.test.".parse().unwrap();
        let j = Journals::default();
        let versions: Vec<Zone> = (1..=5)
            .map(|i| zone(i, &format!("h{i} A 192.0.2.{i}\n")))
            .collect();
        record(&j, Some(&s), None, &versions[0]);
        for w in versions.windows(2) {
            record(&j, Some(&s), Some(&w[0]), &w[1]);
        }
        let h = j.history(apex.as_ref()).unwrap();
        assert_eq!(
            (h.depth(), h.first_serial(), h.last_serial()),
            (3, Some(2), Some(5))
        );
        // Read back at start: the same three.
        let again = Journals::default();
        record(&again, Some(&s), None, &versions[4]);
        let h2 = again.history(apex.as_ref()).unwrap();
        assert_eq!((h2.depth(), h2.first_serial()), (3, Some(2)));
        // A crash in the middle of the last append: the record is dropped, the file cut.
        let len = fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 5).unwrap();
        drop(f);
        let (diffs, damage) = parse(&fs::read(&path).unwrap(), &apex).unwrap();
        assert_eq!(diffs.len(), 2);
        assert!(damage.is_some());
        // It now ends at 4, the zone is at 5: started anew.
        let cut_short = Journals::default();
        record(&cut_short, Some(&s), None, &versions[4]);
        assert_eq!(cut_short.history(apex.as_ref()).map_or(0, |h| h.depth()), 0);
        assert!(!path.exists());
        // A flipped octet is found by the checksum.
        record(&cut_short, Some(&s), Some(&versions[3]), &versions[4]);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 3;
        bytes[last] ^= 1;
        let (diffs, damage) = parse(&bytes, &apex).unwrap();
        assert!(diffs.is_empty());
        assert!(damage.unwrap().1.contains("checksum"));
        // A serial going backwards starts the journal anew.
        record(&cut_short, Some(&s), Some(&versions[4]), &versions[2]);
        assert_eq!(cut_short.history(apex.as_ref()).map_or(0, |h| h.depth()), 0);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn settings_follow_the_acl_and_the_limits() {
        let mut c = Config::default();
        let apex: Name = "j.test.".parse().unwrap();
        assert_eq!(settings(&c, &apex, Some(Path::new("z"))), None);
        c.server.allow_transfer = vec!["127.0.0.1".parse().unwrap()];
        let s = settings(&c, &apex, Some(Path::new("d/z"))).unwrap();
        assert_eq!(s.path.as_deref(), Some(Path::new("d/z.journal")));
        assert_eq!(s.max_depth, DEFAULT_MAX_DEPTH as usize);
        c.server.journal_directory = Some("/var/j".into());
        let s = settings(&c, &apex, None).unwrap();
        assert_eq!(s.path.as_deref(), Some(Path::new("/var/j/j.test.journal")));
        c.server.journal_max_depth = Some(0);
        assert_eq!(settings(&c, &apex, None), None);
    }
}
