//! signing::state -- a signed zone's files in `KEYDIR/state/`: their names (the zone's
//! file stem), the atomic writing of them, and `<zone>.state` (the last serial and
//! timings).

use shardns_dnssec::roll::RollTimings;
use shardns_wire::Name;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use tracing::info;

/// The path of `apex`'s file `ext` in `KEYDIR/state`: its file stem (one per zone,
/// [`shardns_wire::NameRef::file_stem`]). A file an earlier version named by the zone's
/// text (lowercase, no final dot) is renamed to it; not for `root.`, whose old name was
/// the root's.
pub(crate) fn state_path(key_dir: &Path, apex: &Name, ext: &str) -> PathBuf {
    let dir = key_dir.join("state");
    let path = dir.join(format!("{}.{ext}", apex.as_ref().file_stem()));
    let text = apex.to_string().to_ascii_lowercase();
    let old = text.strip_suffix('.').unwrap_or(&text);
    if !apex.as_ref().is_root() && old != "root" && !path.exists() {
        let old = dir.join(format!("{old}.{ext}"));
        if old != path && old.is_file() && fs::rename(&old, &path).is_ok() {
            info!(
                "zone {apex}: {} renamed {} (file names are one per zone now)",
                old.display(),
                path.display()
            );
        }
    }
    path
}

/// Writes `data` to `path` atomically: the directory made (mode 0700) if need be, a
/// temporary file (mode 0600) written by `fill`, synced, renamed over the path.
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut io::BufWriter<&fs::File>) -> io::Result<()>,
) -> Result<(), String> {
    let err = |e: io::Error| format!("{}: {e}", path.display());
    let dir = path.parent().expect("a state file is in a directory");
    fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
        .map_err(err)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(err)?;
    let mut w = io::BufWriter::with_capacity(1 << 20, &f);
    let written = fill(&mut w).and_then(|()| w.flush());
    drop(w);
    if let Err(e) = written.and_then(|()| f.sync_all()) {
        let _ = fs::remove_file(&tmp);
        return Err(err(e));
    }
    fs::rename(&tmp, path).map_err(err)
}

/// A signed zone's state in the key directory: `state/<zone>.state`, a line `serial N`,
/// then the timings of its last signing (`dnskey_ttl N`, `max_ttl N`, `propagation N`,
/// `parent_ds_ttl N`, `parent_propagation N`, `zsk_lifetime N`, `ksk_lifetime N`),
/// seconds, and when it was (`signed_at N`, seconds since 1970: the rollover steps served
/// so far, `shardns_dnssec::roll::hold`).
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    /// The signing state of the zone at `apex` in `key_dir`.
    pub fn new(key_dir: &Path, apex: &Name) -> Self {
        Self {
            path: state_path(key_dir, apex, "state"),
        }
    }

    fn text(&self) -> Result<Option<String>, String> {
        match fs::read_to_string(&self.path) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", self.path.display())),
        }
    }

    /// The last serial signed with; `None` if the zone was never signed here.
    pub fn read(&self) -> Result<Option<u32>, String> {
        let Some(text) = self.text()? else {
            return Ok(None);
        };
        text.lines()
            .find_map(|l| l.strip_prefix("serial "))
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{}: no `serial N` line", self.path.display()))
    }

    /// The timings of the last signing; `None` if the zone was never signed by this
    /// version.
    pub fn timings(&self) -> Result<Option<RollTimings>, String> {
        let Some(text) = self.text()? else {
            return Ok(None);
        };
        let get = |k: &str| {
            text.lines()
                .filter_map(|l| l.split_once(' '))
                .find(|(f, _)| *f == k)
                .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        };
        Ok((|| {
            Some(RollTimings {
                dnskey_ttl: get("dnskey_ttl")?,
                max_ttl: get("max_ttl")?,
                propagation: get("propagation")?,
                parent_ds_ttl: get("parent_ds_ttl")?,
                parent_propagation: get("parent_propagation")?,
                zsk_lifetime: get("zsk_lifetime"),
                ksk_lifetime: get("ksk_lifetime"),
            })
        })())
    }

    /// Records `serial` as the last serial signed with, the timings kept (a dynamic
    /// update signed incrementally: `crate::update`), atomically.
    pub fn set_serial(&self, serial: u32) -> Result<(), String> {
        let mut text = format!("serial {serial}\n");
        for line in self.text()?.unwrap_or_default().lines() {
            if !line.starts_with("serial ") {
                text.push_str(line);
                text.push('\n');
            }
        }
        write_atomic(&self.path, |w| w.write_all(text.as_bytes()))
    }

    /// When the zone was last signed (and that version served); `None` if never, or by
    /// a version that did not record it.
    pub fn signed_at(&self) -> Result<Option<u64>, String> {
        Ok(self.text()?.and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("signed_at "))
                .and_then(|v| v.trim().parse().ok())
        }))
    }

    /// Records `serial`, the timings and the time signed (`now`), atomically.
    pub fn write(&self, serial: u32, t: &RollTimings, now: u64) -> Result<(), String> {
        let mut text = format!(
            "serial {serial}\ndnskey_ttl {}\nmax_ttl {}\npropagation {}\nparent_ds_ttl {}\n\
             parent_propagation {}\nsigned_at {now}\n",
            t.dnskey_ttl, t.max_ttl, t.propagation, t.parent_ds_ttl, t.parent_propagation
        );
        if let Some(life) = t.zsk_lifetime {
            text.push_str(&format!("zsk_lifetime {life}\n"));
        }
        if let Some(life) = t.ksk_lifetime {
            text.push_str(&format!("ksk_lifetime {life}\n"));
        }
        write_atomic(&self.path, |w| w.write_all(text.as_bytes()))
    }
}
