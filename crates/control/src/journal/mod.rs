//! journal -- every version change of a zone kept as a diff, so that an IXFR is answered
//! with the changes since the client's serial (RFC 1995), not the whole zone.
//!
//! Each zone that some client may transfer (`allow_transfer` not empty) and whose
//! `journal_max_depth` is not 0, and each zone that may be changed by dynamic update (its
//! `update_policy` not empty: its journal is then also the record of the changes that are
//! not in its zone file, replayed over the file when it is read, [`replay`]), has a
//! [`History`] in memory (the latest diffs, within
//! `journal_max_depth` versions and `journal_max_size` octets) and, when it has a file or
//! `server.journal_directory` is set, the same diffs on disk, so they survive a restart.
//! A new version (a reload of the zone file, a transfer in) is compared with the one it
//! replaces on the main thread, after the swap and before the NOTIFY to secondaries
//! ([`shardns_zone::xfr::diff::Diff::compute`]; after dynamic updates only at the names
//! they changed, [`Diff::compute_at`], so the cost follows the change, not the zone);
//! workers read the histories
//! ([`Journals::history`]) when an IXFR comes.
//!
//! File format (one file per zone, `FILE.journal` or `DIR/NAME.journal`):
//!
//! ```text
//! header:  "SHARDNSJ" | version u32 (1) | apex length u16 | apex (wire form, lowercase)
//! record:  "SJR1" | payload length u32 | CRC-32 of length and payload u32 | payload (a Diff)
//! ```
//!
//! The file is named by the apex's file stem in `journal_directory` (one per zone), and
//! its header names the zone: a file that holds another zone's journal, or none, is never
//! appended to, rewritten or removed for this zone (logged; the zone's history stays in
//! memory). A record is appended with one `write` and then `fdatasync`ed (one per batch of
//! updates: a batch is one version); the versions a trim drops from the history stay in the
//! file until it holds twice the limits (depth or size), and only then is it written anew
//! (a temporary file, synced and renamed over the old one), so that a zone updated over and
//! over appends, and its file stays bounded. At
//! start a journal is read back and every record checked (checksum, a diff that parses, each
//! starting where the one before ended): the first bad record and all after it are dropped
//! with a log line and the file cut there (a crash in the middle of an append leaves
//! exactly that), and a journal that does not end at the zone's serial (the zone file was
//! edited while the server was down) is started anew. A serial that goes backwards, or a
//! diff bigger than the journal may hold, starts it anew too: clients then get AXFR form.

use shardns_config::{Config, ZoneConfig};
use shardns_wire::{Name, NameRef};
use shardns_zone::xfr::diff::{Diff, History};
use shardns_zone::xfr::is_newer;
use shardns_zone::{Zone, ZoneSet};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tracing::{info, warn};

mod disk;
mod replay;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_replay;

use disk::{append, open, reset, rewrite};
pub use disk::{encode, parse, Parsed};
pub use replay::{apply, replay, Read};

/// `journal_max_size` when neither the zone nor the server sets one (as Knot DNS).
pub const DEFAULT_MAX_SIZE: u64 = 20 << 20;
/// `journal_max_depth` when neither sets one (as Knot DNS).
pub const DEFAULT_MAX_DEPTH: u32 = 20;

/// The histories of every journaled zone. Locked by the main thread when a version
/// changes and by a worker when an IXFR asks (for a clone of an `Arc`): never on the
/// answer path.
#[derive(Debug, Default)]
pub struct Journals {
    zones: Mutex<HashMap<Name, Arc<History>>>,
    /// What each journal file holds (records, octets) when this process wrote it last
    /// (none known: the next trim rewrites it). A file may hold up to twice its limits:
    /// versions the history dropped stay in the file until then, so that a zone updated
    /// over and over appends one record per batch instead of writing its journal anew.
    files: Mutex<HashMap<Name, (usize, usize)>>,
    /// Updatable zones whose journal went past its limits: it drops nothing until their
    /// zone file holds the served version ([`Journals::take_full`], [`trim`]).
    full: Mutex<HashSet<Name>>,
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
    pub fn history(&self, apex: NameRef<'_>) -> Option<Arc<History>> {
        let zones = self.zones.lock().unwrap_or_else(|e| e.into_inner());
        zones.get(&apex.to_name()).cloned()
    }

    /// Drops the history of a zone no longer served (a member removed from its catalog),
    /// so that member churn does not grow this table.
    pub fn forget(&self, apex: &Name) {
        let mut zones = self.zones.lock().unwrap_or_else(|e| e.into_inner());
        zones.remove(apex);
        self.file_is(apex, None);
    }

    /// Notes what the journal file of `apex` holds now (`None`: not known).
    fn file_is(&self, apex: &Name, held: Option<(usize, usize)>) {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        match held {
            Some(h) => files.insert(apex.clone(), h),
            None => files.remove(apex),
        };
    }

    /// What the journal file of `apex` holds, as this process last wrote it.
    fn file_holds(&self, apex: &Name) -> Option<(usize, usize)> {
        let files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.get(apex).copied()
    }

    /// The updatable zones whose journal went past its limits since the last call: each
    /// wants its zone file written, then [`trim`].
    pub fn take_full(&self) -> Vec<Name> {
        let mut full = self.full.lock().unwrap_or_else(|e| e.into_inner());
        full.drain().collect()
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
pub struct Settings {
    /// The journal file (`None`: in memory only).
    pub path: Option<PathBuf>,
    /// The name an older version gave it in `journal_directory`, when that differs: read
    /// (and renamed) if its header says it is this zone's.
    pub legacy: Option<PathBuf>,
    /// Largest journal file, in octets; older changes are dropped past it.
    pub max_size: usize,
    /// Most versions kept.
    pub max_depth: usize,
    /// The zone may be updated: its journal holds changes its file may not have, and a
    /// version dropped from it is warned about.
    pub updatable: bool,
}

/// How the zone at `apex`, read from `file` (or keeping its copy there), is journaled
/// under `config`; `None`: it is not (nobody may transfer it, or its depth is 0, and it
/// may not be updated).
pub fn settings(config: &Config, apex: &Name, file: Option<&Path>) -> Option<Settings> {
    // A later table for the same apex wins, as for the transfer ACL.
    let zone = config.zone_table(apex);
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
    // An updatable zone always has a journal: it holds what is not in the zone file (the
    // config refuses a depth of 0 for it).
    let updatable = zone.is_some_and(ZoneConfig::updatable);
    if acl.is_empty() && !updatable {
        return None;
    }
    let s = &config.server;
    // An updatable zone's journal is bounded by its size alone unless a depth is set (as
    // Knot's): each time it fills, the zone file is written.
    let depth = zone
        .and_then(|z| z.journal_max_depth)
        .or(s.journal_max_depth)
        .unwrap_or(if updatable {
            u32::MAX
        } else {
            DEFAULT_MAX_DEPTH
        });
    if depth == 0 && !updatable {
        return None;
    }
    let depth = depth.max(1);
    let size = zone
        .and_then(|z| z.journal_max_size)
        .or(s.journal_max_size)
        .unwrap_or(DEFAULT_MAX_SIZE);
    let (path, legacy) = match &s.journal_directory {
        Some(dir) => {
            let (name, old) = (file_name(apex), legacy_file_name(apex));
            (Some(dir.join(&name)), (old != name).then(|| dir.join(old)))
        }
        None => (
            file.filter(|f| !f.as_os_str().is_empty()).map(|f| {
                let mut p = f.as_os_str().to_owned();
                p.push(".journal");
                PathBuf::from(p)
            }),
            None,
        ),
    };
    Some(Settings {
        path,
        legacy,
        max_size: usize::try_from(size).unwrap_or(usize::MAX),
        max_depth: depth as usize,
        updatable,
    })
}

/// `NAME.journal` for a zone in `journal_directory`: the apex's file stem (one per zone,
/// [`shardns_wire::NameRef::file_stem`]).
fn file_name(apex: &Name) -> String {
    format!("{}.journal", apex.as_ref().file_stem())
}

/// The name earlier versions gave the journal: the apex's text in lowercase, `/` and
/// NUL replaced, which two zones could share (`a/b.` and `a_b.`); only read, and only if
/// its header names the zone.
fn legacy_file_name(apex: &Name) -> String {
    let text = apex.to_string().to_lowercase();
    let text = text.trim_end_matches('.');
    let text = if text.is_empty() { "root" } else { text };
    format!("{}.journal", text.replace(['/', '\0'], "_"))
}

/// Drops the oldest versions of an updatable zone's journal past its limits, once its zone
/// file holds the served version (so that every version dropped is in the file), and
/// writes the journal file anew.
pub fn trim(journals: &Journals, apex: &Name, settings: &Settings) {
    let Some(history) = journals.history(apex.as_ref()) else {
        return;
    };
    let mut history = (*history).clone();
    let dropped = history.trim(settings.max_depth, settings.max_size);
    if dropped == 0 {
        return;
    }
    if let Some(p) = settings.path.as_deref() {
        let r = rewrite(p, apex, &history);
        let held = history.diffs().map(|d| d.len() + 16).sum();
        journals.file_is(apex, r.is_ok().then_some((history.depth(), held)));
        if let Err(e) = r {
            warn!("zone {apex}: cannot write its journal {}: {e}", p.display());
        }
    }
    info!(
        "zone {apex}: journal past its limits (journal_max_depth {}, journal_max_size {}) and the zone file written: its {dropped} oldest versions dropped, back to serial {}",
        settings.max_depth,
        settings.max_size,
        history.first_serial().unwrap_or_default()
    );
    journals.set(apex.clone(), Some(history));
}

/// The owner names a batch of dynamic updates changed, by apex: a zone named here is
/// diffed at those names alone ([`Diff::compute_at`]), not compared whole.
pub type Touched = HashMap<Name, Vec<Name>>;

/// Records the versions in `zones` (just served) against those they replaced in `old`
/// (`None`: at start). `file_of` says where a zone is read from or keeps its copy.
pub fn record_all<'f>(
    journals: &Journals,
    config: &Config,
    file_of: impl Fn(&Name) -> Option<&'f Path>,
    old: Option<&ZoneSet>,
    zones: &[Arc<Zone>],
) {
    record_all_touched(journals, config, file_of, old, zones, None);
}

/// [`record_all`], a zone in `touched` diffed at the names it lists alone.
pub fn record_all_touched<'f>(
    journals: &Journals,
    config: &Config,
    file_of: impl Fn(&Name) -> Option<&'f Path>,
    old: Option<&ZoneSet>,
    zones: &[Arc<Zone>],
    touched: Option<&Touched>,
) {
    // Nobody may transfer anything and nothing may be updated: no journal, nothing to
    // look up per zone.
    let anyone = !config.server.allow_transfer.is_empty()
        || config
            .zones
            .iter()
            .any(|z| z.updatable() || z.allow_transfer.as_ref().is_some_and(|a| !a.is_empty()));
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
            None => config.zone_table(&apex),
        };
        let settings = settings_of(config, table, &apex, file_of(&apex));
        let was = old.and_then(|o| o.get(zone.apex()));
        let owners = touched.and_then(|t| t.get(&apex)).map(Vec::as_slice);
        record_at(journals, settings.as_ref(), was.map(|z| &**z), zone, owners);
    }
}

/// The file a zone of `config` is read from or keeps its copy in: its `[[zone]]` table's.
pub fn config_file<'c>(config: &'c Config, apex: &Name) -> Option<&'c Path> {
    config.zone_table(apex).map(|z| z.file.as_path())
}

/// Records that `new` replaces `old` (`None`: no version before, as at start).
pub fn record(journals: &Journals, settings: Option<&Settings>, old: Option<&Zone>, new: &Zone) {
    record_at(journals, settings, old, new, None);
}

/// [`record`] when only the names `owners` differ between `old` and `new` (`None`: any may).
pub fn record_at(
    journals: &Journals,
    settings: Option<&Settings>,
    old: Option<&Zone>,
    new: &Zone,
    owners: Option<&[Name]>,
) {
    let diff_of = |old: &Zone, new: &Zone| match owners {
        Some(names) => Diff::compute_at(old, new, names.iter().map(Name::as_ref)),
        None => Diff::compute(old, new),
    };
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
            journals.file_is(&apex, None);
            history = History::new();
        }
        journals.set(apex, Some(history));
        return;
    };
    let started = Instant::now();
    if old.serial() == new.serial() {
        if !diff_of(old, new).is_empty() {
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
        journals.file_is(&apex, None);
        journals.set(apex, Some(History::new()));
        return;
    }
    let diff = diff_of(old, new);
    if diff.len() > settings.max_size {
        info!(
            "zone {apex}: journal: the changes from serial {} to {} ({} octets) exceed journal_max_size ({}); journal started anew",
            old.serial(),
            new.serial(),
            diff.len(),
            settings.max_size
        );
        reset(path, &apex);
        journals.file_is(&apex, None);
        journals.set(apex, Some(History::new()));
        return;
    }
    let follows = history.last_serial().is_none_or(|s| s == old.serial());
    let (deleted, added, octets) = (diff.deleted(), diff.added(), diff.len());
    // An updatable zone's journal holds changes its file may not have: it drops none until
    // the file is written (`trim`, after the version is served).
    let dropped = if settings.updatable {
        let dropped = history.push(Arc::new(diff), usize::MAX, usize::MAX);
        if history.depth() > settings.max_depth || history.bytes() > settings.max_size {
            let mut full = journals.full.lock().unwrap_or_else(|e| e.into_inner());
            full.insert(apex.clone());
        }
        dropped
    } else {
        history.push(Arc::new(diff), settings.max_depth, settings.max_size)
    };
    if let Some(p) = path {
        // Versions the history dropped may stay in the file up to twice its limits (one
        // rewrite per so many appends, not one per change); past that, or when the file
        // is not known to hold the chain, it is written anew with the history.
        let last = history.diffs().last().map(|d| d.len() + 16);
        let appended = journals
            .file_holds(&apex)
            .filter(|_| dropped == 0 || follows)
            .and_then(|(records, octets)| Some((records + 1, octets + last?)))
            .filter(|&(records, octets)| {
                records <= 2 * settings.max_depth && octets <= settings.max_size.saturating_mul(2)
            });
        let written = if (dropped > 0 && appended.is_none()) || !follows {
            let r = rewrite(p, &apex, &history);
            let held = history.diffs().map(|d| d.len() + 16).sum();
            journals.file_is(&apex, r.is_ok().then_some((history.depth(), held)));
            r
        } else {
            let r = history
                .diffs()
                .last()
                .map_or(Ok(()), |d| append(p, &apex, d));
            journals.file_is(&apex, appended.filter(|_| r.is_ok()));
            r
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
