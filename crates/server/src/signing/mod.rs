//! signing -- automatic DNSSEC signing of the zones with `dnssec = true`: when such a zone
//! is read (start, reload, `shardns reload ZONE`, or the re-signing timer), its keys come
//! from the key directory (a first key is made when it has none), the records read are
//! signed by `shardns_dnssec::sign_zone` on every core, and the zone is built from the
//! signed records.
//!
//! Runs where zones are loaded (the control plane's loading threads), never on a worker.
//! Any failure (a key directory that is missing or unreadable, a key for another zone, a
//! corrupt key, no active key) fails the load of that zone with one message, so its
//! previous version keeps serving (`zones::ZoneLibrary`).
//!
//! The SOA serial: the zone file's if it is greater (RFC 1982) than the last serial this
//! zone was signed with, else that serial plus one, so every newly signed version has a
//! new serial and secondaries take it. The last serial is kept in
//! `KEYDIR/state/<zone>.state`, written atomically (a temporary file, synced, renamed).

use shardns_dnssec::{
    keys::zone_keys, sign_zone, Algorithm, Denial, KeyStore, Nsec3Params, Policy, Role, SignParams,
    StoreError,
};
use shardns_wire::{Name, RType, Record};
use shardns_zone::scan::{Diag, Item, LoadError, Records, Scanned};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use tracing::info;

mod timer;
pub(crate) mod tools;

pub(crate) use timer::Resigner;

/// How one zone is signed: from its `[[zone]]` table and `server.key_directory`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignSpec {
    pub(crate) key_dir: PathBuf,
    /// The algorithm of a first key, made when the directory has none for the zone.
    pub(crate) algorithm: Algorithm,
    pub(crate) denial: Denial,
    pub(crate) policy: Policy,
}

impl SignSpec {
    /// The signing of `zone`, if it has `dnssec = true` (the config's check made sure a
    /// key directory is set then).
    pub(crate) fn of(zone: &crate::ZoneConfig, key_dir: Option<&Path>) -> Option<Self> {
        if !zone.dnssec {
            return None;
        }
        let key_dir = key_dir?.to_path_buf();
        let denial = if zone.nsec3 || zone.nsec3_opt_out {
            Denial::Nsec3 {
                params: Nsec3Params::default(),
                opt_out: zone.nsec3_opt_out,
            }
        } else {
            Denial::Nsec
        };
        Some(Self {
            key_dir,
            algorithm: zone.algorithm,
            denial,
            policy: Policy {
                validity: zone.signature_validity,
                refresh: zone.signature_refresh,
                ..Policy::default()
            },
        })
    }
}

/// A zone's records after signing.
pub(crate) struct Signed {
    /// The signed records, ready for `Zone::build`.
    pub(crate) scanned: Scanned,
    /// When the zone must be signed again (seconds since 1970): `signature_refresh` before
    /// its signatures expire.
    pub(crate) refresh_at: u64,
}

/// Seconds since 1970.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Signs the records of the zone at `apex` read from `file` (named in errors) at time `now`
/// with `threads` threads (0: every core). The error is one diagnostic that says why.
pub(crate) fn sign_scanned(
    apex: &Name,
    scanned: Scanned,
    spec: &SignSpec,
    now: u64,
    threads: usize,
) -> Result<Signed, LoadError> {
    let file = scanned.files.first().cloned().unwrap_or_default();
    let fail = |message: String| LoadError {
        errors: vec![Diag {
            file: file.clone(),
            line: 0,
            message: format!("cannot sign the zone: {message}"),
        }],
    };
    let records = to_records(&scanned);
    let (records, _serial, refresh_at) =
        sign_records(apex, records, spec, now, threads).map_err(fail)?;
    Ok(Signed {
        scanned: Scanned {
            chunks: vec![from_records(&records)],
            files: scanned.files,
            warnings: scanned.warnings,
        },
        refresh_at,
    })
}

/// Signs `records` (the zone's, DNSSEC records among them are dropped and made anew):
/// loads or makes the keys, picks the serial, signs, records the serial. Returns the
/// signed records, the serial and when to sign again.
pub(crate) fn sign_records(
    apex: &Name,
    records: Vec<Record>,
    spec: &SignSpec,
    now: u64,
    threads: usize,
) -> Result<(Vec<Record>, u32, u64), String> {
    let store = KeyStore::open(&spec.key_dir).map_err(|e| store_error(&e))?;
    let mut keys = store.load(apex).map_err(|e| store_error(&e))?;
    if keys.is_empty() {
        let key = store
            .generate(apex, spec.algorithm, Role::Csk, now)
            .map_err(|e| store_error(&e))?;
        info!(
            "zone {apex}: no key in {}, made {} ({} {}, tag {})",
            spec.key_dir.display(),
            key.stem,
            key.meta.role,
            key.meta.algorithm,
            key.meta.tag
        );
        keys.push(key);
    }
    let file_serial = records
        .iter()
        .find(|r| r.rtype == RType::SOA && r.owner.as_ref().eq_ci(&apex.as_ref()))
        .and_then(|r| soa_serial(&r.rdata))
        .ok_or("the zone needs exactly one SOA record at its apex")?;
    let state = StateFile::new(&spec.key_dir, apex);
    let serial = match state.read()? {
        Some(last) if !serial_gt(file_serial, last) => last.wrapping_add(1),
        _ => file_serial,
    };
    let mut params = SignParams::new(now, &spec.policy);
    params.denial = spec.denial.clone();
    params.serial = Some(serial);
    params.threads = threads;
    let zk = zone_keys(&keys, now);
    let started = std::time::Instant::now();
    let signed = sign_zone(apex, records, &zk, &params).map_err(|e| e.to_string())?;
    state.write(serial)?;
    let refresh_at = spec.policy.refresh_at(u64::from(params.expiration));
    info!(
        "zone {apex}: signed with serial {serial} in {:.3} s: {} RRsets, {} signatures, {} keys; signed again in {} s",
        started.elapsed().as_secs_f64(),
        signed.rrsets_signed,
        signed.signatures,
        zk.len(),
        refresh_at.saturating_sub(now)
    );
    Ok((signed.records, serial, refresh_at))
}

/// A key directory error as one line; a missing directory says how to make one.
fn store_error(e: &StoreError) -> String {
    match e {
        StoreError::Missing(p) => format!(
            "key directory {} does not exist (create it, mode 0700, or fix key_directory / --key-dir)",
            p.display()
        ),
        e => e.to_string(),
    }
}

/// Serial number arithmetic (RFC 1982 §3.2): `a` is greater than `b`.
pub(crate) fn serial_gt(a: u32, b: u32) -> bool {
    a != b && (a.wrapping_sub(b) as i32) > 0
}

/// The serial field of SOA rdata (after the two names).
pub(crate) fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let (_, a) = shardns_wire::NameRef::from_wire_prefix(rdata).ok()?;
    let (_, b) = shardns_wire::NameRef::from_wire_prefix(rdata.get(a..)?).ok()?;
    let at = a + b;
    (rdata.len() == at + 20).then(|| u32::from_be_bytes(rdata[at..at + 4].try_into().unwrap()))
}

/// Every record the scanner read, owned.
pub(crate) fn to_records(scanned: &Scanned) -> Vec<Record> {
    let total = scanned.chunks.iter().map(|c| c.items.len()).sum();
    let mut out = Vec::with_capacity(total);
    for chunk in &scanned.chunks {
        for item in &chunk.items {
            out.push(Record {
                owner: chunk.owner(item).to_name(),
                rtype: item.rtype,
                class: item.class,
                ttl: item.ttl,
                rdata: chunk.rdata(item).to_vec(),
            });
        }
    }
    out
}

/// Records in the scanner's compact form (line 0: they come from the signer, not a file).
pub(crate) fn from_records(records: &[Record]) -> Records {
    let bytes: usize = records
        .iter()
        .map(|r| r.owner.as_wire().len() + r.rdata.len())
        .sum();
    let mut out = Records {
        bytes: Vec::with_capacity(bytes),
        items: Vec::with_capacity(records.len()),
    };
    for r in records {
        let owner = out.bytes.len() as u32;
        out.bytes.extend_from_slice(r.owner.as_wire());
        let rdata = out.bytes.len() as u32;
        out.bytes.extend_from_slice(&r.rdata);
        out.items.push(Item {
            owner,
            rdata,
            rdlen: r.rdata.len() as u16,
            file: 0,
            rtype: r.rtype,
            class: r.class,
            ttl: r.ttl,
            line: 0,
        });
    }
    out
}

/// A signed zone's state in the key directory: `state/<zone>.state`, one line `serial N`.
pub(crate) struct StateFile {
    path: PathBuf,
}

impl StateFile {
    pub(crate) fn new(key_dir: &Path, apex: &Name) -> Self {
        let zone = apex.to_string().to_ascii_lowercase();
        let zone = zone.strip_suffix('.').unwrap_or(&zone);
        let zone = if zone.is_empty() { "root" } else { zone };
        Self {
            path: key_dir.join("state").join(format!("{zone}.state")),
        }
    }

    /// The last serial signed with; `None` if the zone was never signed here.
    pub(crate) fn read(&self) -> Result<Option<u32>, String> {
        let text = match fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        text.lines()
            .find_map(|l| l.strip_prefix("serial "))
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{}: no `serial N` line", self.path.display()))
    }

    /// Records `serial`: a temporary file (mode 0600), synced, renamed over the state.
    pub(crate) fn write(&self, serial: u32) -> Result<(), String> {
        let err = |e: io::Error| format!("{}: {e}", self.path.display());
        let dir = self
            .path
            .parent()
            .expect("the state file is in a directory");
        fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(dir)
            .map_err(err)?;
        let tmp = self.path.with_extension("state.tmp");
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(err)?;
        f.write_all(format!("serial {serial}\n").as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(err)?;
        fs::rename(&tmp, &self.path).map_err(err)
    }
}

#[cfg(test)]
mod tests;
