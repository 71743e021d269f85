//! zones -- loading the configured zones into a `ZoneSet`, and reloading them.
//!
//! Runs on the control plane only (startup, the main thread's reloads), never on a worker.
//! A reload reads only the zones whose files changed (and the zones added to the config, or
//! named in `shardns reload ZONE...`), on every core, and makes the next `ZoneSet` from the
//! current one with just those changes; a zone whose new version fails to load keeps its
//! previous version, which is shared (`Arc<Zone>`), never copied.
//!
//! How a reload finds what changed, without looking at every zone:
//!
//! - **inotify** (`watch`): one watch per directory holding a zone file, an `$INCLUDE`d
//!   file, the config or the zone list; each event marks the zones (or the config) that
//!   read the file it names. A reload `stat`s each watched directory (replaced without an
//!   event?), then the marked zones' files, and reads those zones. What events cannot vouch
//!   for is *polled*, its files `stat`ed at every reload and compared with their size,
//!   mtime, inode and device when read: symbolic links and files with other hard links,
//!   directories on network file systems, past the watch limit, or when there is no
//!   inotify. Events lost (queue overflow) or a watched directory replaced: the next
//!   reload `stat`s every file (a *full pass*, what every reload did before).
//! - **The config and the zone list** are read again only when an event names them or
//!   their stamp changed (two `stat`s); otherwise the zones read are only those above, and
//!   nothing costs one step per configured zone.
//!
//! Why, measured (2026-11-25, 2 vCPU AMD EPYC, ext4, release build; docs/BENCHMARKS.md,
//! "Many zones", "After step 2"): with a `stat` per zone file a reload finding one change
//! among 100,000 zones took 126-194 ms, 64 % of its CPU in `statx` (half of that the path
//! walk), 11 % in hash lookups, 8 % re-reading the zone list. `fstatat` relative to an open
//! directory instead of a full path saves only 17 % per file (1.00 vs 1.20 µs, C loop over
//! 100,000 files), which leaves ~0.5 s on two cores at 1,000,000 zones: any per-zone system
//! call misses the 100 ms goal there. Events make the work of a reload follow what changed
//! (a few `stat`s) instead of the number of zones.

use crate::signing::SignSpec;
use shardns_wire::Name;
use shardns_zone::scan::Diag;
use shardns_zone::{Zone, ZoneChange, ZoneSet};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tracing::debug;
use watch::{Owner, Watch};

mod apply;
mod load;
mod specs;
mod watch;

pub use specs::specs;

/// Threads one zone file is scanned with.
const SCAN_THREADS: usize = 2;

/// Zone text compiled into the binary, served when no zone is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedZone {
    /// The apex, e.g. `example.test.`.
    pub name: &'static str,
    /// What diagnostics call the text, e.g. `<embedded>/example.test.zone`.
    pub label: &'static str,
    /// The zone file text.
    pub text: &'static str,
}

/// Where a zone's text comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ZoneSource {
    /// A zone file.
    File(PathBuf),
    /// A zone compiled into the binary.
    Embedded(EmbeddedZone),
}

/// One zone to load.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneSpec {
    /// The zone's apex.
    pub name: Name,
    /// Where its records come from.
    pub source: ZoneSource,
    /// Signed on load (`dnssec = true`): how.
    pub signing: Option<Arc<SignSpec>>,
    /// The journal of a zone that may be updated (`update_policy`): replayed over the
    /// zone file when it is read ([`crate::journal::replay`]); `None` for the others.
    pub journal: Option<PathBuf>,
}

/// A zone that failed to load.
#[derive(Debug, Clone)]
pub struct ZoneFailure {
    /// The zone that failed.
    pub name: Name,
    /// Why, every diagnostic.
    pub error: shardns_zone::Error,
    /// The previous version is still served.
    pub kept_previous: bool,
}

/// What a load or reload did.
#[derive(Debug)]
pub struct LoadReport {
    /// The zone set to serve now.
    pub set: ZoneSet,
    /// Zones read and built.
    pub loaded: usize,
    /// Zones whose file had not changed (size, mtime, inode): not read again.
    pub unchanged: usize,
    /// Zones no longer configured, dropped.
    pub removed: usize,
    /// Zones whose last read failed, now or before (each on its previous version, or not
    /// served): a reload that reads nothing still says how many are broken.
    pub still_failing: usize,
    /// The versions read now, served from now on.
    pub added: Vec<Arc<Zone>>,
    /// The versions they replaced and the zones dropped: no longer served, to be freed once
    /// no worker, transfer or NOTIFY holds them.
    pub replaced: Vec<Arc<Zone>>,
    /// Zones that failed to load.
    pub failures: Vec<ZoneFailure>,
    /// What the loads warned about.
    pub warnings: Vec<Diag>,
    /// Files `stat`ed to find what changed (zone files, included files, watched
    /// directories, the config and zone list).
    pub checked: usize,
    /// Why every file was `stat`ed (no inotify, events lost), if it was.
    pub full_pass: Option<String>,
    /// Signed zones read now (or that failed to sign, still serving their previous
    /// version), and when to sign each again (seconds since 1970).
    pub resign: Vec<(Name, u64)>,
}

/// What identifies one version of a zone file without reading it: if none of these changed,
/// neither did the file (as `make` and NSD's and Knot's reloads judge it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
    ino: u64,
    dev: u64,
    /// The path is a symbolic link, or the file has other hard links: it can change through
    /// another name, in a directory not watched, so it is polled.
    linked: bool,
}

impl FileStamp {
    /// The file `path` leads to, as it is now (`None`: it cannot be `stat`ed). One system
    /// call (`lstat`), two for a symbolic link.
    pub fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let l = std::fs::symlink_metadata(path).ok()?;
        let symlink = l.file_type().is_symlink();
        let m = if symlink {
            std::fs::metadata(path).ok()?
        } else {
            l
        };
        Some(Self {
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
            ino: m.ino(),
            dev: m.dev(),
            linked: symlink || m.nlink() > 1,
        })
    }
}

/// One configured zone as last loaded.
struct Held {
    source: ZoneSource,
    signing: Option<Arc<SignSpec>>,
    journal: Option<PathBuf>,
    /// The zone file as it was when last read (`None`: embedded, or it could not be read).
    stamp: Option<FileStamp>,
    /// The files it `$INCLUDE`d, as they were when read (empty for most zones: no
    /// allocation).
    includes: Vec<(PathBuf, Option<FileStamp>)>,
    /// The version served (`None`: it has never loaded): the one read from the file, or
    /// the last one dynamic updates made of it (the one read is not kept beside it).
    zone: Option<Arc<Zone>>,
    /// `zone` has changes its file lacks (dynamic updates not written back yet).
    unwritten: bool,
    /// The last read failed.
    failed: bool,
    /// Reads failed in a row (the retry of a signed zone backs off with them).
    failures: u32,
}

impl Held {
    /// A zone not read yet, from `source`.
    fn new(source: ZoneSource) -> Self {
        Self {
            source,
            signing: None,
            journal: None,
            stamp: None,
            includes: Vec::new(),
            zone: None,
            unwritten: false,
            failed: false,
            failures: 0,
        }
    }

    /// The files it was read from: its zone file, then those it `$INCLUDE`d.
    fn files(&self) -> impl Iterator<Item = &Path> {
        let file = match &self.source {
            ZoneSource::File(path) => Some(path.as_path()),
            ZoneSource::Embedded(_) => None,
        };
        file.into_iter()
            .chain(self.includes.iter().map(|(p, _)| p.as_path()))
    }
}

/// The zones being served, each with what it was loaded from, so that a reload re-reads
/// only the files that changed and a zone that fails to reload keeps its previous version.
/// Which files may have changed comes from inotify (`watch`); files it cannot vouch for
/// are `stat`ed. Files are read on every core.
pub struct ZoneLibrary {
    held: HashMap<Name, Held, NameHash>,
    set: ZoneSet,
    /// Held zones whose `failed` is set.
    failing: usize,
    /// Zones read since the last [`ZoneLibrary::back_with_huge_pages`] with an array big
    /// enough for huge pages.
    huge_pending: Vec<Arc<Zone>>,
    /// What changed since the last reload.
    watch: Watch,
    /// Held zones a file of which inotify cannot vouch for: `stat`ed at every reload.
    polled: HashSet<Name, NameHash>,
    /// The config file and the zone list as they were when last read successfully; `None`:
    /// not read yet.
    config_files: Option<Vec<(PathBuf, Option<FileStamp>)>>,
    /// Files `stat`ed since the last report (the watched directories' checks).
    checked: usize,
}

impl Default for ZoneLibrary {
    fn default() -> Self {
        Self::new(true)
    }
}

/// A huge page (x86-64, arm64 with 4 KiB pages): arrays smaller than this gain nothing.
const HUGE_PAGE: usize = 2 << 20;

/// Hashes a [`Name`] by what it writes, its own case-insensitive hash (one well-mixed
/// `u64`), instead of hashing that again: the zone maps hold one entry per zone, and zone
/// names come from the operator's files, not from clients.
#[derive(Debug, Default, Clone, Copy)]
struct NameHash;

impl std::hash::BuildHasher for NameHash {
    type Hasher = PassThrough;
    fn build_hasher(&self) -> PassThrough {
        PassThrough(0)
    }
}

#[derive(Debug, Default)]
struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn write(&mut self, bytes: &[u8]) {
        // Not used by `Name` (it writes one u64); kept correct for anything else.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Which zones a reload is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Every configured zone: the others are dropped.
    All,
    /// The zones that may have changed (events, polling): the others are kept as they are.
    Changed,
    /// Zones named by the operator, read whether changed or not; the others are kept.
    Named,
}

impl ZoneLibrary {
    /// An empty library; with `watch`, changes are told by inotify where it can, else every
    /// reload `stat`s every file.
    pub fn new(watch: bool) -> Self {
        Self {
            held: HashMap::with_hasher(NameHash),
            set: ZoneSet::default(),
            failing: 0,
            huge_pending: Vec::new(),
            watch: Watch::new(watch),
            polled: HashSet::with_hasher(NameHash),
            config_files: None,
            checked: 0,
        }
    }

    /// Brings the served zones in line with `specs` (the config was read): reads the zones
    /// that are new or whose file changed, keeps the rest as they are, drops the zones no
    /// longer listed. Zones that fail keep their previous version if there is one, and are
    /// left out otherwise.
    pub fn load(&mut self, specs: &[ZoneSpec]) -> LoadReport {
        self.take_events();
        self.apply(specs, Scope::All)
    }

    /// Reads the inotify events queued so far, and checks the watched directories are
    /// still the ones their paths lead to, before a reload decides what to read.
    fn take_events(&mut self) {
        self.watch.drain();
        self.checked += self.watch.check_dirs();
    }

    /// Reads the zones whose files changed, the config being unchanged: those inotify told
    /// of and the polled ones whose files' stamps changed; or, after lost events or without
    /// inotify, every zone whose files' stamps changed.
    pub fn refresh(&mut self) -> LoadReport {
        self.take_events();
        let names: Vec<&Name> = if self.watch.full_pass().is_some() {
            self.held.keys().collect()
        } else {
            let mut names: HashSet<&Name, NameHash> = self.polled.iter().collect();
            names.extend(self.watch.dirty());
            names.into_iter().collect()
        };
        let specs: Vec<ZoneSpec> = names
            .into_iter()
            .filter_map(|name| {
                let held = self.held.get(name)?;
                Some(ZoneSpec {
                    name: name.clone(),
                    source: held.source.clone(),
                    signing: held.signing.clone(),
                    journal: held.journal.clone(),
                })
            })
            .collect();
        self.apply(&specs, Scope::Changed)
    }

    /// Whether the config file or the zone list may have changed since they were last read
    /// (an event, events lost, or a `stat` that differs); always after a failed read.
    pub fn config_changed(&mut self) -> bool {
        self.watch.drain();
        if self.watch.config_dirty() {
            return true;
        }
        let Some(files) = &self.config_files else {
            return true;
        };
        self.checked += files.len();
        files.iter().any(|(path, was)| FileStamp::of(path) != *was)
    }

    /// `path` (the config file or the zone list) as it is before it is read: its directory
    /// watched first, then `stat`ed.
    pub fn stamp_config_file(&mut self, path: &Path) -> (PathBuf, Option<FileStamp>) {
        if self.watch.watching() {
            self.watch.prepare(path);
        }
        (path.to_path_buf(), FileStamp::of(path))
    }

    /// The config and zone list were read from `files` (stamped before the read): a reload
    /// reads them again only when they change.
    pub fn config_read(&mut self, files: Vec<(PathBuf, Option<FileStamp>)>) {
        if let Some(old) = self.config_files.take() {
            for (path, _) in &old {
                self.watch.untrack(&Owner::Config, path);
            }
        }
        if self.watch.watching() {
            for (path, stamp) in &files {
                self.watch.track(&Owner::Config, path, stamp.as_ref());
            }
        }
        self.watch.config_done();
        self.config_files = Some(files);
    }

    /// Reads again the zones named in `names` from the files they were last read from,
    /// changed or not; leaves every other zone as it is. Also returns the names that are not
    /// zones of ours. Costs what it reads: neither the config nor the other zones are looked at.
    pub fn reload_named(&mut self, names: &[Name]) -> (LoadReport, Vec<Name>) {
        let mut specs = Vec::with_capacity(names.len());
        let mut unknown = Vec::new();
        let mut seen: HashSet<&Name, NameHash> =
            HashSet::with_capacity_and_hasher(names.len(), NameHash);
        for name in names {
            if !seen.insert(name) {
                continue;
            }
            match self.held.get(name) {
                Some(h) => specs.push(ZoneSpec {
                    name: name.clone(),
                    source: h.source.clone(),
                    signing: h.signing.clone(),
                    journal: h.journal.clone(),
                }),
                None => unknown.push(name.clone()),
            }
        }
        (self.apply(&specs, Scope::Named), unknown)
    }

    /// Asks the kernel to back the big arrays of the zones read since the last call with
    /// huge pages (fewer TLB misses on lookups; BENCHMARKS, "huge pages"). The kernel copies
    /// the data (~0.1 s for the 1.3M-record zone), so this runs after the zones are served,
    /// not before: readers see the same bytes throughout.
    pub fn back_with_huge_pages(&mut self) {
        for zone in self.huge_pending.drain(..) {
            let huge = zone
                .arrays()
                .iter()
                .filter(|&&(addr, len)| shardns_sys::back_with_huge_pages(addr, len))
                .count();
            if huge > 0 {
                debug!("zone {}: {huge} arrays on huge pages", zone.apex());
            }
        }
    }

    /// Serves `changes` to zones this library does not read from files (the secondary
    /// role's: transferred versions, stand-ins for zones with nothing to serve) beside the
    /// ones it does; returns the set to publish. A reload leaves such zones as they are.
    pub fn apply_outside(&mut self, changes: Vec<ZoneChange>) -> ZoneSet {
        // A zone read from a file and changed by updates: the new version is the one held,
        // so that the version read is freed with the last reader of it.
        for change in &changes {
            if let ZoneChange::Put(zone) = change {
                let held = self.held.get_mut(&zone.apex().to_name());
                if let Some(h) = held.filter(|h| h.zone.is_some()) {
                    if matches!(h.source, ZoneSource::File(_)) {
                        h.zone = Some(Arc::clone(zone));
                        h.unwritten = true;
                    }
                }
            }
        }
        self.set = self.set.update(changes);
        self.set.clone()
    }

    /// Writes the served version of the zone at `apex` to the file it is read from, when
    /// that version is not the one read from it (dynamic updates changed it: `zonefile`).
    /// `Ok(None)`: nothing to write (the file holds it, or the zone has no file); `Err`:
    /// the file changed on disk since it was read (an operator's edit is never written
    /// over) or cannot be written.
    pub fn write_back(&mut self, apex: &Name) -> Result<Option<PathBuf>, String> {
        let Some(served) = self.set.get(apex.as_ref()).cloned() else {
            return Ok(None);
        };
        let Some(held) = self.held.get_mut(apex) else {
            return Ok(None);
        };
        let ZoneSource::File(path) = &held.source else {
            return Ok(None);
        };
        if held.signing.is_some() {
            // The file holds the unsigned records; a signed zone's are signed from it.
            return Ok(None);
        }
        if !held.unwritten {
            return Ok(None);
        }
        if held.stamp.is_none() || FileStamp::of(path) != held.stamp {
            return Err(format!(
                "{} changed on disk since it was read: not written over (a reload reads it; it wins if its serial is above the served {})",
                path.display(),
                served.serial()
            ));
        }
        let header = format!(
            "{apex} serial {}, written by shardns with the changes made by dynamic update",
            served.serial()
        );
        crate::zonefile::write_atomic(path, &served, &header)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        held.stamp = FileStamp::of(path);
        held.zone = Some(served);
        held.unwritten = false;
        Ok(Some(path.clone()))
    }

    /// The file the zone at `apex` is read from (`None`: not ours, or embedded).
    pub fn file_of(&self, apex: &Name) -> Option<&Path> {
        match &self.held.get(apex)?.source {
            ZoneSource::File(path) => Some(path),
            ZoneSource::Embedded(_) => None,
        }
    }

    /// Zones served (loaded now or kept from before).
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether no zone is served.
    pub fn is_empty(&self) -> bool {
        self.set.len() == 0
    }
}

#[cfg(test)]
mod tests;
