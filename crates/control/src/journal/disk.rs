//! journal::disk -- the journal file: its header (which names the zone), records, and the
//! reading back, appending, rewriting and removing of it. A file at a journal's path that
//! holds another zone's journal, or no journal, is never written over or removed.

use super::Settings;
use shardns_wire::Name;
use shardns_zone::xfr::diff::{Diff, History};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tracing::{error, info, warn};

const MAGIC: &[u8; 8] = b"SHARDNSJ";
const VERSION: u32 = 1;
const RECORD: &[u8; 4] = b"SJR1";
/// Record magic, length, checksum.
const FRAME: usize = 12;

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

/// What the file whose first octets are `head` is when it is not `apex`'s journal (nor the
/// start of it, as a crash while it was made leaves): `Some(what)`, and it is left alone.
fn foreign(head: &[u8], apex: &Name) -> Option<String> {
    let ours = header(apex);
    let n = head.len().min(ours.len());
    if head[..n] == ours[..n] {
        return None;
    }
    let m = head.len().min(MAGIC.len());
    if head[..m] != MAGIC[..m] {
        return Some("not a shardns journal".into());
    }
    if head.get(8..12) != Some(&VERSION.to_be_bytes()[..]) {
        return Some("a shardns journal of another version".into());
    }
    let zone = head
        .get(12..14)
        .map(|l| u16::from_be_bytes([l[0], l[1]]) as usize)
        .and_then(|len| head.get(14..14 + len))
        .and_then(|wire| Name::from_wire(wire).ok());
    Some(match zone {
        Some(z) => format!("the journal of zone {z}"),
        None => "the journal of another zone".into(),
    })
}

/// The first octets of `f`, as many as a header may hold.
fn head_of(f: &File) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; 14 + 255];
    let mut n = 0;
    while n < head.len() {
        match f.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(n);
    Ok(head)
}

/// `Err` if the file at `path` exists and is not `apex`'s journal: it is not to be
/// touched for this zone.
fn check_owner(path: &Path, apex: &Name) -> io::Result<()> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    match foreign(&head_of(&f)?, apex) {
        None => Ok(()),
        Some(what) => Err(refused(path, &what)),
    }
}

fn refused(path: &Path, what: &str) -> io::Error {
    io::Error::other(format!(
        "{} is {what}, not this zone's: left as it is (two zones configured with one journal?)",
        path.display()
    ))
}

/// Reads the journal at `path` for the version `serial` of `apex`: its diffs if they end
/// there, cut at the first damaged record; else an empty history (and the file goes,
/// unless it is another zone's: then it is left alone and the history kept in memory).
/// A journal under the name an older version gave it (`settings.legacy`) is taken over
/// if it is this zone's.
pub(super) fn open(path: &Path, apex: &Name, serial: u32, settings: &Settings) -> History {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => match take_over(path, apex, settings) {
            Some(b) => b,
            None => return History::new(),
        },
        Err(e) => {
            warn!(
                "zone {apex}: cannot read its journal {}: {e}; starting it anew",
                path.display()
            );
            reset(Some(path), apex);
            return History::new();
        }
    };
    if let Some(what) = foreign(&bytes, apex) {
        error!(
            "zone {apex}: {}; its changes are kept in memory only",
            refused(path, &what)
        );
        return History::new();
    }
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

/// The journal of `apex` under its old name (`settings.legacy`), moved to `path`; `None`
/// when there is none, or it is another zone's (which keeps it).
fn take_over(path: &Path, apex: &Name, settings: &Settings) -> Option<Vec<u8>> {
    let old = settings.legacy.as_deref()?;
    let bytes = fs::read(old).ok()?;
    if bytes.is_empty() || foreign(&bytes, apex).is_some() {
        return None;
    }
    match fs::rename(old, path).and_then(|()| sync_dir(path)) {
        Ok(()) => info!(
            "zone {apex}: journal {} renamed {} (file names are one per zone now)",
            old.display(),
            path.display()
        ),
        Err(e) => {
            warn!(
                "zone {apex}: cannot rename its journal {} to {}: {e}; starting it anew",
                old.display(),
                path.display()
            );
            return None;
        }
    }
    Some(bytes)
}

/// Cuts a damaged journal after its last whole record.
fn cut(path: &Path, len: u64) -> io::Result<()> {
    let f = OpenOptions::new().write(true).open(path)?;
    f.set_len(len)?;
    f.sync_all()
}

/// Removes a journal (it starts anew with the next change).
pub(super) fn reset(path: Option<&Path>, apex: &Name) {
    if let Some(p) = path {
        if let Err(e) = check_owner(p, apex) {
            error!("zone {apex}: not removing its journal: {e}");
            return;
        }
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
pub(super) fn append(path: &Path, apex: &Name, diff: &Diff) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let before = f.metadata()?.len();
    if before > 0 {
        if let Some(what) = foreign(&head_of(&f)?, apex) {
            return Err(refused(path, &what));
        }
    }
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
pub(super) fn rewrite(path: &Path, apex: &Name, history: &History) -> io::Result<()> {
    if history.depth() == 0 {
        reset(Some(path), apex);
        return Ok(());
    }
    check_owner(path, apex)?;
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
