//! tools -- the operator's commands on a key directory and a zone file, with no
//! server running: `shardns key list`, `shardns key ds` (the DS records to hand to the
//! parent), `shardns key rollover` and `shardns key submitted` (rollovers, written as key
//! times the server carries out) and `shardns sign` (a zone file signed once, to a file).

use shardns_control::signing::{
    open_keys, save_changed, sign_records, to_list, Kept, RollSpec, SignSpec, StateFile, Updates,
};
use shardns_dnssec::keys::{format_time, KeyMeta};
use shardns_dnssec::roll::{self, KeyState, RollKind};
use shardns_dnssec::{
    ds_rdata, Algorithm, CdsParams, DigestType, KeyStore, Nsec3Params, Policy, RecordList, Role,
};
use shardns_dnssec::{Denial, StoredKey};
use shardns_sys::unix_now;
use shardns_wire::{rdata, Name, RType};
use shardns_zone::ScanOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

fn load_keys(zone: &Name, key_dir: &Path) -> Result<Vec<StoredKey>, String> {
    let store = KeyStore::open(key_dir).map_err(|e| e.to_string())?;
    store.load(zone).map_err(|e| e.to_string())
}

fn time(t: Option<u64>) -> String {
    t.map_or_else(|| "-".to_string(), format_time)
}

/// `shardns key list ZONE --key-dir DIR`: one line per key of the zone, oldest first: tag,
/// role, algorithm, state now, its next event, its times and its file; then the zone's
/// next key event.
pub(crate) fn key_list(zone: &Name, key_dir: &Path) -> Result<String, String> {
    let keys = load_keys(zone, key_dir)?;
    if keys.is_empty() {
        return Ok(format!(
            "no key for {zone} in {} (the server makes one when it first signs the zone)\n",
            key_dir.display()
        ));
    }
    let now = unix_now();
    let mut out = format!(
        "{:<5}  {:<4}  {:<15}  {:<10}  {:<14}  {:<14}  {:<14}  {:<14}  {:<14}  {:<14}  FILE\n",
        "TAG",
        "ROLE",
        "ALGORITHM",
        "STATE",
        "NEXT EVENT",
        "CREATED",
        "PUBLISH",
        "ACTIVATE",
        "INACTIVE",
        "DELETE"
    );
    for k in &keys {
        let m = &k.meta;
        out.push_str(&format!(
            "{:<5}  {:<4}  {:<15}  {:<10}  {:<14}  {:<14}  {:<14}  {:<14}  {:<14}  {:<14}  {}\n",
            m.tag,
            m.role.to_string(),
            m.algorithm.mnemonic(),
            roll::key_state(m, now).to_string(),
            time(roll::key_next_event(m, now)),
            format_time(m.created),
            time(m.publish),
            time(m.activate),
            time(m.inactive),
            time(m.delete),
            k.stem
        ));
    }
    let metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    for m in metas
        .iter()
        .filter(|m| roll::key_state(m, now) == KeyState::DsPending)
    {
        out.push_str(&format!(
            "key {}: waiting for its DS at the parent: hand it the DS `shardns key ds` prints, \
             then run `shardns key submitted {zone} {}`\n",
            m.tag, m.tag
        ));
    }
    if let Some(t) = StateFile::new(key_dir, zone).timings()? {
        match roll::next_event(&metas, &t, now) {
            Some(at) => out.push_str(&format!(
                "next key event: {} (in {} s)\n",
                format_time(at),
                at - now
            )),
            None => out.push_str("next key event: none\n"),
        }
    }
    out.push_str(&shardns_control::signing::offline::skr_summary(
        zone, key_dir, now,
    ));
    Ok(out)
}

/// `shardns key ds ZONE --key-dir DIR`: the DS records (SHA-256, RFC 4509) the parent is
/// to have now, in zone-file format: those of the key-signing keys (KSK or CSK) in their
/// CDS window, whatever `cds_cdnskey_publish` shows, and of a new key waiting for its DS or
/// just confirmed (both keys during a double-DS rollover). A comment says which is new
/// (to hand the parent, then confirm) and which DS the parent may remove.
pub(crate) fn key_ds(zone: &Name, key_dir: &Path) -> Result<String, String> {
    let keys = load_keys(zone, key_dir)?;
    let now = unix_now();
    let mut out = String::new();
    // The keys with a CDS, the new key waiting for its DS, and one whose DS was confirmed
    // but whose CDS comes later (DNSKEY TTL + propagation after its publication).
    // Not past its CDS window: an algorithm rollover's old key stays published after it.
    let wanted = |m: &KeyMeta| {
        m.has_cds(now)
            || roll::key_state(m, now) == KeyState::DsPending
            || (m.is_published(now)
                && m.ds_publish.is_some_and(|t| t <= now)
                && m.sync_delete.is_none_or(|t| t > now))
    };
    for k in keys.iter().filter(|k| wanted(&k.meta)) {
        let ds = ds_rdata(zone.as_ref(), k.key.dnskey_rdata(), DigestType::Sha256)
            .ok_or("a DNSKEY shorter than its fixed fields")?;
        let mut text = String::new();
        rdata::fmt_text(RType::DS, &ds, &mut text).map_err(|e| e.to_string())?;
        let m = &k.meta;
        // An algorithm rollover's new key: by hand, its DS replaces the old algorithm's.
        let other_alg = keys
            .iter()
            .any(|o| o.meta.role != Role::Zsk && o.meta.algorithm != m.algorithm);
        let note = match roll::key_state(m, now) {
            KeyState::DsPending if other_alg => format!(
                ": NEW (algorithm rollover): replace the DS set at the parent with it alone, \
                 then `shardns key submitted {zone} {}`",
                m.tag
            ),
            KeyState::DsPending => format!(
                ": NEW, add it at the parent, then `shardns key submitted {zone} {}`",
                m.tag
            ),
            _ if m.inactive.is_some() => format!(
                ": being replaced, keep it at the parent until {}",
                time(m.sync_delete)
            ),
            _ => String::new(),
        };
        out.push_str(&format!(
            "; {} {}, tag {}{note}\n{} IN DS {text}\n",
            m.role,
            m.algorithm,
            m.tag,
            zone.to_string().to_ascii_lowercase()
        ));
    }
    for k in keys
        .iter()
        .filter(|k| roll::algorithm::waits_for_old_ds(&k.meta, now))
    {
        out.push_str(&format!(
            "; {} tag {} ({}): remove its DS from the parent (algorithm rollover); its DNSKEY \
             stays until the DS check sees no DS of its algorithm there, or `shardns key \
             submitted {zone}` says so\n",
            k.meta.role, k.meta.tag, k.meta.algorithm
        ));
    }
    for k in keys.iter().filter(|k| {
        k.meta.role != Role::Zsk
            && k.meta.sync_delete.is_some_and(|t| t <= now)
            && !roll::algorithm::waits_for_old_ds(&k.meta, now)
    }) {
        out.push_str(&format!(
            "; {} tag {} was withdrawn at {}: remove its DS from the parent if it is still there\n",
            k.meta.role,
            k.meta.tag,
            time(k.meta.sync_delete)
        ));
    }
    if !keys.iter().any(|k| wanted(&k.meta)) {
        return Err(format!(
            "no published KSK or CSK for {zone} in {} (the server makes one when it first \
             signs the zone; `shardns sign` too)",
            key_dir.display()
        ));
    }
    Ok(out)
}

/// What `shardns key rollover` rolls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rollover {
    /// The ZSK, by pre-publication.
    Zsk,
    /// The KSK or CSK, by double-DS.
    Ksk,
}

/// The timings of the zone's last signing, which the server recorded.
/// `shardns key rollover ZONE --zsk|--ksk --key-dir DIR`: starts a rollover, written as
/// the keys' times: a new key made, the old key's end set. Says what happens next.
pub(crate) fn key_rollover(zone: &Name, key_dir: &Path, what: Rollover) -> Result<String, String> {
    let (store, mut keys, t) = open_keys(zone, key_dir)?;
    let now = unix_now();
    let kind = match what {
        Rollover::Zsk => RollKind::Zsk,
        Rollover::Ksk => RollKind::Ksk,
    };
    let mut metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let new = roll::start(&metas, kind, now).map_err(|e| format!("{zone}: {e}"))?;
    let mut key = store
        .make(zone, new.algorithm, new.role, now)
        .map_err(|e| e.to_string())?;
    roll::schedule_new(&mut key.meta, kind, &t, now);
    store.save_new(&key).map_err(|e| e.to_string())?;
    metas.push(key.meta.clone());
    let old_tag = metas[new.old].tag;
    let (tag, role) = (key.meta.tag, key.meta.role);
    keys.push(key);
    let tick = roll::tick(&mut metas, &t, now);
    save_changed(&store, &mut keys, &metas, &tick.changed)?;
    let old = &metas[new.old];
    Ok(match kind {
        RollKind::Zsk => format!(
            "{zone}: ZSK rollover started: new ZSK {tag} published now, signs from {}; ZSK \
             {old_tag} stops signing then and is withdrawn at {}.\n\
             Run `shardns reload {zone}` now so the new key is published at once.\n",
            time(metas.last().and_then(|m| m.activate)),
            time(old.delete)
        ),
        RollKind::Ksk => format!(
            "{zone}: {role} rollover (double-DS) started: new {role} {tag}, CDS and CDNSKEY \
             published for it and for {old_tag}.\n\
             1. Run `shardns reload {zone}` now.\n\
             2. Add the new DS at the parent (`shardns key ds {zone} --key-dir ...` prints it), \
             keeping the old one.\n\
             3. Once the parent serves it, run `shardns key submitted {zone} {tag}`.\n"
        ),
    })
}

/// `shardns key submitted ZONE [TAG] --key-dir DIR`: the operator confirms the parent
/// serves the DS of the new KSK or CSK: it is published now and signs once every cache
/// holds the new DS; the old key's end is set.
pub(crate) fn key_submitted(
    zone: &Name,
    key_dir: &Path,
    tag: Option<u16>,
) -> Result<String, String> {
    let done = shardns_control::signing::confirm_submitted(zone, key_dir, tag, unix_now())?;
    let (n, old) = (&done.new, done.old.as_ref());
    if let Some(o) = old.filter(|o| o.algorithm != n.algorithm) {
        // An algorithm rollover: the DS set replaced at the parent, as the docs ask.
        return Ok(format!(
            "{zone}: DS of {} {} ({}) confirmed at the parent, the old algorithm's DS taken as \
             removed: the old keys' DNSKEYs are withdrawn at {}, their signatures end at {}.\n\
             Run `shardns reload {zone}` now.\n",
            n.role,
            n.tag,
            n.algorithm,
            time(o.delete),
            time(o.inactive)
        ));
    }
    Ok(format!(
        "{zone}: DS of {} {} confirmed at the parent: it is published now and signs from {}; \
         {} stops signing then and is withdrawn at {}; remove its DS from the parent from then on.\n\
         Run `shardns reload {zone}` now.\n",
        n.role,
        n.tag,
        time(n.activate),
        old.map_or("the old key".to_string(), |o| format!("{} {}", o.role, o.tag)),
        time(old.and_then(|o| o.delete))
    ))
}

/// How `shardns sign` signs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub(crate) struct SignOptions {
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
    /// Sign the file alone: the changes dynamic updates made (`KEYDIR/state/ZONE.updates`)
    /// are left out (`--ignore-updates`).
    pub ignore_updates: bool,
}

impl SignOptions {
    /// ECDSA P-256, NSEC, 14 days, every core.
    pub(crate) fn new(key_dir: PathBuf) -> Self {
        Self {
            key_dir,
            algorithm: Algorithm::EcdsaP256Sha256,
            nsec3: false,
            opt_out: false,
            validity: Policy::default().validity,
            threads: 0,
            ignore_updates: false,
        }
    }
}

/// What `shardns sign` did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub(crate) struct SignSummary {
    /// Records written.
    pub records: usize,
    /// The serial signed with.
    pub serial: u32,
    /// Seconds reading the file, signing, writing the output.
    pub seconds: [f64; 3],
    /// What became of the changes dynamic updates made, in a line (`None`: there were none).
    pub updates: Option<String>,
}

/// `shardns sign ZONE FILE --key-dir DIR -o OUT`: reads the zone file, signs it as the
/// server would (same keys, same serial rule and state file, the changes dynamic updates
/// made applied over it as at a start), writes the signed zone one record a line.
pub(crate) fn sign_file(
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
    let (records, updates) = with_updates(zone, file, to_list(scanned.chunks), opts)?;
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
        roll: RollSpec::default(),
        cds: CdsParams::default(),
        keys: Default::default(),
        dnskey_ttl: None,
        keystore: None,
        offline_ksk: false,
        dnskey_management: Default::default(),
    };
    let (signed, serial, _) = sign_records(zone, records, &spec, unix_now(), opts.threads)
        .map_err(|e| format!("{}: cannot sign the zone: {e}", file.display()))?;
    let t2 = std::time::Instant::now();
    let write_err = |e: std::io::Error| format!("{}: {e}", out.display());
    let f = std::fs::File::create(out).map_err(write_err)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    for r in &signed.items {
        writeln!(w, "{}", signed.display(r)).map_err(write_err)?;
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
        updates,
    })
}

/// `records` with the changes dynamic updates made to the signed zone applied, as the
/// server's load applies them (`shardns_control::signing::updates`), and what was done, in
/// a line. Changes kept over another serial of the file are refused unless
/// `--ignore-updates`: signing the file alone would serve a serial above theirs without
/// them (the server drops them only when it reads that file). The updates file is only
/// read: a server running beside owns it.
fn with_updates(
    zone: &Name,
    file: &Path,
    records: RecordList,
    opts: &SignOptions,
) -> Result<(RecordList, Option<String>), String> {
    let kept = Updates::new(&opts.key_dir, zone);
    let path = kept.path().display().to_string();
    if opts.ignore_updates {
        let line = kept.read()?.and_then(|(_, changes)| {
            let last = changes.last()?.serial();
            Some(format!(
                "{} changes made by dynamic update ({path}, up to serial {last}) left out (--ignore-updates)",
                changes.len()
            ))
        });
        return Ok((records, line));
    }
    match kept.apply_read_only(records)? {
        (records, Kept::None) => Ok((records, None)),
        (records, Kept::Applied { count, last }) => Ok((
            records,
            Some(format!(
                "{count} changes made by dynamic update ({path}) applied, up to serial {last}"
            )),
        )),
        (_, Kept::OtherFile { base, count, last }) => Err(format!(
            "{path} holds {count} changes made by dynamic update (up to serial {last}) over the zone file at serial {base}, and {} has another serial: sign the file they apply over, or give --ignore-updates to sign {} alone (a server reading it drops them too)",
            file.display(),
            file.display()
        )),
    }
}
