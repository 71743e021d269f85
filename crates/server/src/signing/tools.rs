//! signing::tools -- the operator's commands on a key directory and a zone file, with no
//! server running: `shardns key list`, `shardns key ds` (the DS records to hand to the
//! parent) and `shardns sign` (a zone file signed once, to a file).

use super::{sign_records, to_records, unix_now, SignSpec};
use shardns_dnssec::keys::format_time;
use shardns_dnssec::{ds_rdata, Algorithm, DigestType, KeyStore, Nsec3Params, Policy, Role};
use shardns_dnssec::{Denial, StoredKey};
use shardns_wire::{rdata, Name, RType};
use shardns_zone::ScanOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

fn load_keys(zone: &Name, key_dir: &Path) -> Result<Vec<StoredKey>, String> {
    let store = KeyStore::open(key_dir).map_err(|e| e.to_string())?;
    store.load(zone).map_err(|e| e.to_string())
}

/// What a key is doing at `now`.
fn state(k: &StoredKey, now: u64) -> &'static str {
    let m = &k.meta;
    if m.is_active(now) {
        "active"
    } else if m.is_published(now) {
        if m.inactive.is_some_and(|t| t <= now) {
            "retired"
        } else {
            "published"
        }
    } else if m.delete.is_some_and(|t| t <= now) {
        "removed"
    } else {
        "future"
    }
}

/// `shardns key list ZONE --key-dir DIR`: one line per key of the zone, oldest first: tag,
/// role, algorithm, state now, its times and its file.
pub fn key_list(zone: &Name, key_dir: &Path) -> Result<String, String> {
    let keys = load_keys(zone, key_dir)?;
    if keys.is_empty() {
        return Ok(format!(
            "no key for {zone} in {} (the server makes one when it first signs the zone)\n",
            key_dir.display()
        ));
    }
    let now = unix_now();
    let time = |t: Option<u64>| t.map_or_else(|| "-".to_string(), format_time);
    let mut out = format!(
        "{:<5}  {:<4}  {:<15}  {:<9}  {:<14}  {:<14}  {:<14}  {:<14}  {:<14}  FILE\n",
        "TAG", "ROLE", "ALGORITHM", "STATE", "CREATED", "PUBLISH", "ACTIVATE", "INACTIVE", "DELETE"
    );
    for k in &keys {
        let m = &k.meta;
        out.push_str(&format!(
            "{:<5}  {:<4}  {:<15}  {:<9}  {:<14}  {:<14}  {:<14}  {:<14}  {:<14}  {}\n",
            m.tag,
            m.role.to_string(),
            m.algorithm.mnemonic(),
            state(k, now),
            format_time(m.created),
            time(m.publish),
            time(m.activate),
            time(m.inactive),
            time(m.delete),
            k.stem
        ));
    }
    Ok(out)
}

/// `shardns key ds ZONE --key-dir DIR`: the DS records (SHA-256, RFC 4509) of the zone's
/// published key-signing keys (KSK or CSK), in zone-file format, for the parent zone.
pub fn key_ds(zone: &Name, key_dir: &Path) -> Result<String, String> {
    let keys = load_keys(zone, key_dir)?;
    let now = unix_now();
    let mut out = String::new();
    for k in keys
        .iter()
        .filter(|k| k.meta.role != Role::Zsk && k.meta.is_published(now))
    {
        let ds = ds_rdata(zone.as_ref(), k.key.dnskey_rdata(), DigestType::Sha256)
            .ok_or("a DNSKEY shorter than its fixed fields")?;
        let mut text = String::new();
        rdata::fmt_text(RType::DS, &ds, &mut text).map_err(|e| e.to_string())?;
        out.push_str(&format!(
            "; {} {}, tag {}\n{} IN DS {text}\n",
            k.meta.role,
            k.meta.algorithm,
            k.meta.tag,
            zone.to_string().to_ascii_lowercase()
        ));
    }
    if out.is_empty() {
        return Err(format!(
            "no published KSK or CSK for {zone} in {} (the server makes one when it first \
             signs the zone; `shardns sign` too)",
            key_dir.display()
        ));
    }
    Ok(out)
}

/// How `shardns sign` signs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SignOptions {
    /// The key directory (a first key is made in it when the zone has none).
    pub key_dir: PathBuf,
    /// The first key's algorithm.
    pub algorithm: Algorithm,
    /// NSEC3 (0 extra iterations, no salt) instead of NSEC.
    pub nsec3: bool,
    /// NSEC3 opt-out.
    pub opt_out: bool,
    /// Signature validity, seconds.
    pub validity: u32,
    /// Signing threads (0: every core this process may run on).
    pub threads: usize,
}

impl SignOptions {
    /// ECDSA P-256, NSEC, 14 days, every core.
    pub fn new(key_dir: PathBuf) -> Self {
        Self {
            key_dir,
            algorithm: Algorithm::EcdsaP256Sha256,
            nsec3: false,
            opt_out: false,
            validity: Policy::default().validity,
            threads: 0,
        }
    }
}

/// What `shardns sign` did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SignSummary {
    /// Records written.
    pub records: usize,
    /// The serial signed with.
    pub serial: u32,
    /// Seconds reading the file, signing, writing the output.
    pub seconds: [f64; 3],
}

/// `shardns sign ZONE FILE --key-dir DIR -o OUT`: reads the zone file, signs it as the
/// server would (same keys, same serial rule and state file), writes the signed zone one
/// record a line.
pub fn sign_file(
    zone: &Name,
    file: &Path,
    out: &Path,
    opts: &SignOptions,
) -> Result<SignSummary, String> {
    let t0 = std::time::Instant::now();
    let scan = ScanOptions {
        threads: 2,
        ..ScanOptions::new(zone.clone())
    };
    let scanned = shardns_zone::scan::scan_file(file, &scan).map_err(|e| e.to_string())?;
    let records = to_records(&scanned);
    drop(scanned);
    let t1 = std::time::Instant::now();
    let spec = SignSpec {
        key_dir: opts.key_dir.clone(),
        algorithm: opts.algorithm,
        denial: if opts.nsec3 || opts.opt_out {
            Denial::Nsec3 {
                params: Nsec3Params::default(),
                opt_out: opts.opt_out,
            }
        } else {
            Denial::Nsec
        },
        policy: Policy {
            validity: opts.validity,
            refresh: opts.validity / 2,
            ..Policy::default()
        },
    };
    let (signed, serial, _) = sign_records(zone, records, &spec, unix_now(), opts.threads)
        .map_err(|e| format!("{}: cannot sign the zone: {e}", file.display()))?;
    let t2 = std::time::Instant::now();
    let write_err = |e: std::io::Error| format!("{}: {e}", out.display());
    let f = std::fs::File::create(out).map_err(write_err)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    for r in &signed {
        writeln!(w, "{r}").map_err(write_err)?;
    }
    w.flush().map_err(write_err)?;
    Ok(SignSummary {
        records: signed.len(),
        serial,
        seconds: [
            (t1 - t0).as_secs_f64(),
            (t2 - t1).as_secs_f64(),
            t2.elapsed().as_secs_f64(),
        ],
    })
}
