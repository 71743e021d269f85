//! zonefile -- a zone changed by dynamic updates written back to its zone file, as Knot's
//! `zonefile-sync` does: `zonefile_sync` seconds after the first change that is not in the
//! file yet (0: after each batch of updates; `"never"`: the journal alone keeps them), by
//! the main thread (a timer thread asks for it as the re-signing timer asks for a reload:
//! a queued request and a SIGHUP). The file is written whole from the served version:
//! records only, one per line (comments, `$INCLUDE`s and the layout are not kept, as Knot and
//! BIND do not keep them), to a temporary file beside it, synced, renamed over it.
//!
//! Never over an operator's edit: a file that is not the one the zone was last read from
//! (its size, mtime or inode changed) is left as it is, with a warning; the next reload
//! reads it, and it wins if its serial is above the served one (a reload refuses a changed
//! file whose serial is not, and the served version stays: `journal::replay`).
//!
//! Also the writer of a secondary's copy (`secondary::store`).

use crate::request::{MainAction, ReloadRequest, Timer};
use shardns_wire::{rdata, Name};
use shardns_zone::Zone;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::Sender;

/// Writes `zone` to `path` through `temp_beside(path)` (written, synced, renamed over
/// `path`, the directory synced): a crash leaves the old file or the new one, never half of
/// one. `header` is the first line's comment.
pub fn write_atomic(path: &Path, zone: &Zone, header: &str) -> io::Result<()> {
    let tmp = temp_beside(path);
    let result = write_file(&tmp, zone, header).and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    // The rename reaches the disk with the directory.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    result
}

fn write_file(tmp: &Path, zone: &Zone, header: &str) -> io::Result<()> {
    let file = File::create(tmp)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    writeln!(w, "; {header}")?;
    let mut line = String::with_capacity(256);
    for id in 0..zone.node_count() as u32 {
        let node = zone.node(id);
        for set in node.rrsets() {
            for data in set.rdatas() {
                line.clear();
                let _ = write!(line, "{}\t{}\tIN\t{}\t", node.name(), set.ttl, set.rtype);
                let _ = rdata::fmt_text(set.rtype, data, &mut line);
                line.push('\n');
                w.write_all(line.as_bytes())?;
            }
        }
    }
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// The temporary file beside a zone file that a new version is written to
/// (`.NAME.shardns-tmp`); one left by a crash is of no use.
pub fn temp_beside(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.shardns-tmp"))
}

/// When the zones changed by updates are written to their files: the main thread's side
/// (which zones wait) and the timer thread that asks for them when due.
pub struct Flusher {
    timer: Timer,
    /// Zones with a write scheduled (a later update does not push it back).
    waiting: HashSet<Name>,
}

impl Flusher {
    /// Starts the timer thread; due zones are asked for on `reloads`.
    pub fn start(reloads: Sender<ReloadRequest>) -> io::Result<Self> {
        let timer = Timer::start("shardns-zonefile", MainAction::Flush, reloads, |_| {})?;
        Ok(Self {
            timer,
            waiting: HashSet::new(),
        })
    }

    /// `zone` changed at `now` (seconds since 1970): written `delay` seconds later, unless a
    /// write is already due.
    pub fn changed(&mut self, zone: &Name, now: u64, delay: u32) {
        if self.waiting.insert(zone.clone()) {
            self.timer.schedule(zone.clone(), now + u64::from(delay));
        }
    }

    /// `zone` was written (or its write given up): a later change schedules a new one.
    pub fn written(&mut self, zone: &Name) {
        self.waiting.remove(zone);
    }
}
