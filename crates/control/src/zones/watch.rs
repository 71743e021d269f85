//! zones::watch -- which files (zone files, `$INCLUDE`d files, the config and the zone list)
//! may have changed since they were read, told by inotify events on the directories that
//! hold them, so that a reload looks at those files alone instead of `stat`ing every one.
//!
//! One watch per directory, whatever the number of files in it. Events name a file in the
//! directory; each file watched maps to its owners (the zones that read it, or the config).
//! What events cannot tell is found another way:
//!
//! - a file that is a symbolic link, or has other hard links (nlink > 1), can change through
//!   a name in a directory we do not watch: its zone is *polled* (`stat`ed at every reload,
//!   as every zone was before);
//! - a directory whose file system inotify does not see every change of (NFS, CIFS, FUSE,
//!   ...: other machines write there), that cannot be watched (missing, the user's
//!   `fs.inotify.max_user_watches` reached), or no inotify at all: its zones are polled;
//! - lost events (the kernel's queue overflowed), a watched directory deleted or renamed,
//!   or replaced without an event of ours (a directory above it renamed, a symbolic link
//!   on the way changed: every reload `stat`s each watched directory's path, one call per
//!   directory, and compares device and inode): the next reload `stat`s every file (a
//!   *full pass*) after watching every directory again.
//!
//! Watches are made before the files in them are read, so a change after the read is an
//! event; only a directory first seen through an `$INCLUDE` is watched after the read, and
//! its zone is read again at the next reload (once).

use super::{FileStamp, NameHash};
use shardns_sys as sys;
use shardns_sys::{self, Inotify, EVENT_BUFFER};
use shardns_wire::Name;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use tracing::{debug, warn};

/// Who reads a file, and so is told of its changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Owner {
    /// The config file or the zone list.
    Config,
    Zone(Name),
}

/// The owners of one file: nearly always one.
#[derive(Debug)]
enum Owners {
    One(Owner),
    Many(Vec<Owner>),
}

impl Owners {
    fn as_slice(&self) -> &[Owner] {
        match self {
            Owners::One(o) => std::slice::from_ref(o),
            Owners::Many(v) => v,
        }
    }
}

/// A directory holding files we read.
#[derive(Debug)]
struct Dir {
    /// As the file paths spell it (`.` for a bare file name).
    path: PathBuf,
    /// Its watch; `None`: not watched, the files in it are polled.
    wd: Option<i32>,
    /// Device and inode `path` led to just before the watch was made.
    node: Option<(u64, u64)>,
}

/// How a file is tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tracked {
    /// Its changes are events (else it must be polled).
    pub(super) by_events: bool,
    /// Its directory was first watched now: a change between the read and now is missed.
    pub(super) new_watch: bool,
}

/// The watches, the files they cover, and what changed since the last reload.
pub(super) struct Watch {
    inotify: Option<Inotify>,
    /// Why there is no inotify.
    off: Option<String>,
    dirs: Vec<Dir>,
    dir_at: HashMap<PathBuf, u32>,
    /// The directory looked up last (files come in runs from one directory: no hashing of
    /// the path for each).
    last_dir: Option<u32>,
    /// Watch descriptor -> directories (one directory reached by two spellings has one
    /// watch).
    by_wd: HashMap<i32, Vec<u32>>,
    /// Hash of (directory, file name) -> owners.
    files: HashMap<u64, Owners, NameHash>,
    /// Zones one of whose files had an event since [`Watch::zones_done`].
    dirty: HashSet<Name, NameHash>,
    /// The config or zone list had an event since [`Watch::config_done`].
    config_dirty: bool,
    /// Why the next reload must `stat` every file, if it must.
    rescan: Option<String>,
    buf: Vec<u8>,
    /// Directories watched; at most `max_watches` (tests lower it to act out the user's
    /// watch limit).
    watches: usize,
    max_watches: usize,
    warned_limit: bool,
}

/// Reads of queued events per reload, at most (64 KiB each: far beyond the kernel's
/// default queue of 16,384 events). Events left over are read at the next reload.
const MAX_READS: usize = 1024;

impl Watch {
    /// With inotify if `enabled` and the kernel gives us an instance; without, every file is
    /// polled.
    pub(super) fn new(enabled: bool) -> Self {
        let (inotify, off) = if !enabled {
            (None, Some("watching is off".to_string()))
        } else {
            match Inotify::new() {
                Ok(i) => (Some(i), None),
                Err(e) => {
                    warn!("no inotify ({e}; fs.inotify.max_user_instances?): every reload stats every zone file");
                    (None, Some(format!("no inotify: {e}")))
                }
            }
        };
        Self {
            inotify,
            off,
            dirs: Vec::new(),
            dir_at: HashMap::new(),
            last_dir: None,
            by_wd: HashMap::new(),
            files: HashMap::with_hasher(NameHash),
            dirty: HashSet::with_hasher(NameHash),
            config_dirty: false,
            rescan: None,
            buf: Vec::new(),
            watches: 0,
            max_watches: usize::MAX,
            warned_limit: false,
        }
    }

    /// Acts out the user's watch limit: at most `n` directories are watched.
    #[cfg(test)]
    pub(super) fn limit_watches(&mut self, n: usize) {
        self.max_watches = n;
    }

    /// Acts out a lost event: the next reload makes a full pass.
    #[cfg(test)]
    pub(super) fn force_rescan(&mut self) {
        self.rescan = Some("forced".into());
        self.rewatch_all();
    }

    /// Whether events are used at all (else every reload is a full pass).
    pub(super) fn watching(&self) -> bool {
        self.inotify.is_some()
    }

    /// Why the next reload must `stat` every file: no inotify, or events lost.
    pub(super) fn full_pass(&self) -> Option<&str> {
        self.off.as_deref().or(self.rescan.as_deref())
    }

    /// Whether `zone` had an event since the last reload.
    pub(super) fn is_dirty(&self, zone: &Name) -> bool {
        self.dirty.contains(zone)
    }

    /// The zones with events since the last reload.
    pub(super) fn dirty(&self) -> impl Iterator<Item = &Name> {
        self.dirty.iter()
    }

    /// Marks `zone` to be read at the next reload.
    pub(super) fn mark(&mut self, zone: &Name) {
        self.dirty.insert(zone.clone());
    }

    /// Whether the config or the zone list had an event, or events were lost (without
    /// inotify: false, their stamps tell).
    pub(super) fn config_dirty(&self) -> bool {
        self.config_dirty || self.rescan.is_some()
    }

    /// A reload read what it had to: the zone events so far are dealt with.
    pub(super) fn zones_done(&mut self) {
        self.dirty.clear();
        self.rescan = None;
    }

    /// The config and zone list were read.
    pub(super) fn config_done(&mut self) {
        self.config_dirty = false;
    }

    /// The directory of `file` watched (once per directory), before `file` is read; returns
    /// whether the watch is new.
    pub(super) fn prepare(&mut self, file: &Path) -> bool {
        self.dir_of(file).1
    }

    /// The index of `file`'s directory (added and watched if new), whether it is new, and
    /// the file's name in it.
    fn dir_of<'p>(&mut self, file: &'p Path) -> (u32, bool, &'p [u8]) {
        let (dir, name) = split(file);
        if let Some(i) = self.last_dir {
            if self.dirs[i as usize].path.as_os_str() == dir.as_os_str() {
                return (i, false, name);
            }
        }
        if let Some(&i) = self.dir_at.get(dir) {
            self.last_dir = Some(i);
            return (i, false, name);
        }
        let i = self.dirs.len() as u32;
        self.dirs.push(Dir {
            path: dir.to_path_buf(),
            wd: None,
            node: None,
        });
        self.dir_at.insert(dir.to_path_buf(), i);
        self.last_dir = Some(i);
        self.attach(i);
        (i, true, name)
    }

    /// `file` (last seen as `stamp`) is read by `owner` from now on.
    pub(super) fn track(
        &mut self,
        owner: &Owner,
        file: &Path,
        stamp: Option<&FileStamp>,
    ) -> Tracked {
        let (i, new_watch, name) = self.dir_of(file);
        let entry = self
            .files
            .entry(key(i, name))
            .or_insert(Owners::Many(Vec::new()));
        match entry {
            Owners::One(o) if o == owner => {}
            Owners::One(o) => *entry = Owners::Many(vec![o.clone(), owner.clone()]),
            Owners::Many(v) if v.is_empty() => *entry = Owners::One(owner.clone()),
            Owners::Many(v) => {
                if !v.contains(owner) {
                    v.push(owner.clone())
                }
            }
        }
        let linked = stamp.is_some_and(|s| s.linked);
        Tracked {
            by_events: self.dirs[i as usize].wd.is_some() && !linked,
            new_watch,
        }
    }

    /// `file` is no longer read by `owner`. The directory stays watched.
    pub(super) fn untrack(&mut self, owner: &Owner, file: &Path) {
        let (dir, name) = split(file);
        let Some(&i) = self.dir_at.get(dir) else {
            return;
        };
        let k = key(i, name);
        let Some(entry) = self.files.get_mut(&k) else {
            return;
        };
        match entry {
            Owners::One(o) if o == owner => {
                self.files.remove(&k);
            }
            Owners::One(_) => {}
            Owners::Many(v) => {
                v.retain(|o| o != owner);
                match v.len() {
                    0 => {
                        self.files.remove(&k);
                    }
                    1 => *entry = Owners::One(v.pop().expect("one owner")),
                    _ => {}
                }
            }
        }
    }

    /// Reads the events queued since the last call into the dirty sets. Events lost: every
    /// directory is watched again now, and the next reload makes a full pass.
    pub(super) fn drain(&mut self) {
        let Some(inotify) = self.inotify.take() else {
            return;
        };
        if self.buf.len() < EVENT_BUFFER {
            self.buf = vec![0; EVENT_BUFFER];
        }
        let mut buf = std::mem::take(&mut self.buf);
        let had_rescan = self.rescan.is_some();
        for _ in 0..MAX_READS {
            let events = match inotify.read(&mut buf) {
                Ok(events) => events,
                Err(e) => {
                    self.rescan = Some(format!("reading inotify events: {e}"));
                    break;
                }
            };
            if events.is_empty() {
                break;
            }
            for ev in events {
                self.event(ev.wd, ev.overflow(), ev.dir_gone(), ev.name);
            }
        }
        self.buf = buf;
        self.inotify = Some(inotify);
        if self.rescan.is_some() && !had_rescan {
            self.rewatch_all();
        }
    }

    /// Checks that each watched directory's path still leads to the directory watched
    /// (one `stat` each): one replaced without an event of ours (a directory above it
    /// renamed, a symbolic link on the way changed) means a full pass, after watching every
    /// directory again. Returns the directories `stat`ed.
    pub(super) fn check_dirs(&mut self) -> usize {
        if self.inotify.is_none() || self.rescan.is_some() {
            return 0;
        }
        let mut checked = 0;
        for d in &self.dirs {
            if d.wd.is_none() {
                continue;
            }
            checked += 1;
            if node(&d.path) != d.node {
                self.rescan = Some(format!(
                    "{} is not the directory watched any more",
                    d.path.display()
                ));
                break;
            }
        }
        if self.rescan.is_some() {
            checked += self.rewatch_all();
        }
        checked
    }

    fn event(&mut self, wd: i32, overflow: bool, dir_gone: bool, name: &[u8]) {
        if overflow {
            self.rescan = Some("the inotify queue overflowed".into());
            return;
        }
        let Watch {
            by_wd,
            dirs,
            files,
            dirty,
            config_dirty,
            rescan,
            ..
        } = self;
        let Some(on) = by_wd.get(&wd) else {
            // A watch we removed (its IN_IGNORED), or events it queued before.
            return;
        };
        if dir_gone {
            let path = &dirs[on[0] as usize].path;
            *rescan = Some(format!("{} was deleted or moved", path.display()));
            return;
        }
        for &i in on {
            let Some(owners) = files.get(&key(i, name)) else {
                continue;
            };
            for o in owners.as_slice() {
                match o {
                    Owner::Config => *config_dirty = true,
                    Owner::Zone(z) => {
                        if !dirty.contains(z) {
                            dirty.insert(z.clone());
                        }
                    }
                }
            }
        }
    }

    /// Watches directory `i` (if its file system lets inotify see every change and the
    /// limit allows); remembers what its path leads to first.
    fn attach(&mut self, i: u32) {
        let Some(inotify) = &self.inotify else {
            return;
        };
        let dir = &mut self.dirs[i as usize];
        dir.wd = None;
        dir.node = node(&dir.path);
        if dir.node.is_none() {
            return; // missing: its files are polled
        }
        match sys::changes_seen_by_inotify(&dir.path) {
            Ok(true) => {}
            Ok(false) => {
                debug!(
                    "{}: a file system inotify does not see every change of (e.g. a network file system); its zone files are stat'ed at every reload",
                    dir.path.display()
                );
                return;
            }
            Err(_) => return,
        }
        let result = if self.watches >= self.max_watches {
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        } else {
            inotify.watch_dir(&dir.path)
        };
        match result {
            Ok(wd) => {
                dir.wd = Some(wd);
                self.watches += 1;
                let on = self.by_wd.entry(wd).or_default();
                if !on.contains(&i) {
                    on.push(i);
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                if !self.warned_limit {
                    self.warned_limit = true;
                    warn!(
                        "cannot watch {}: the inotify watch limit (sysctl fs.inotify.max_user_watches) is reached; zone files there and in further directories are stat'ed at every reload",
                        dir.path.display()
                    );
                }
            }
            Err(e) => debug!("cannot watch {}: {e}", dir.path.display()),
        }
    }

    /// Every directory watched again (a path may lead elsewhere now); watches no directory
    /// uses any more are removed. Returns the directories looked at.
    fn rewatch_all(&mut self) -> usize {
        if self.inotify.is_none() {
            return 0;
        }
        let old = std::mem::take(&mut self.by_wd);
        self.watches = 0;
        for i in 0..self.dirs.len() as u32 {
            self.attach(i);
        }
        if let Some(inotify) = &self.inotify {
            for wd in old.keys().filter(|wd| !self.by_wd.contains_key(wd)) {
                let _ = inotify.unwatch(*wd);
            }
        }
        self.dirs.len()
    }
}

/// A file's directory (`.` for a bare name) and name in it.
fn split(file: &Path) -> (&Path, &[u8]) {
    use std::os::unix::ffi::OsStrExt;
    let name = file.file_name().map_or(&[][..], |n| n.as_bytes());
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    (dir, name)
}

/// The key of a file name in directory `dir`.
fn key(dir: u32, name: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    dir.hash(&mut h);
    h.write(name);
    h.finish()
}

/// Device and inode `path` leads to now.
fn node(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}
