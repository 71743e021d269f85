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
//! `KEYDIR/state/<zone>.state`, written atomically (a temporary file, synced, renamed),
//! with the timings rollovers wait for (so `shardns key rollover` knows them).
//!
//! Rollovers (`shardns_dnssec::roll`) are times in the key files: at every signing the
//! times of a rollover under way are brought into line and a ZSK whose `zsk_lifetime` is
//! up gets its successor; the zone is signed again at the next key event as well as
//! before its signatures expire.
//!
//! Signatures survive a restart: the signed zone is kept in `KEYDIR/state/<zone>.signed`
//! (a zone file, written atomically after each signing) under a fingerprint of what it
//! was signed from (the records read, the keys and their times, the signing settings).
//! When a zone is read again with the same fingerprint and its signatures and keys are not
//! due, that version is served as it is: same serial, same signatures.
//!
//! A zone that may be updated (`update_policy`) keeps what updates changed, unsigned, in
//! `KEYDIR/state/<zone>.updates` ([`updates`]), applied over the records read before they
//! are signed: the updated records are what a restart or a re-signing signs.

use shardns_dnssec::digest::Fingerprint;
use shardns_dnssec::roll::{self, RollTimings};
use shardns_dnssec::{
    keys::zone_keys, sign_list, Algorithm, CdsParams, Denial, KeyStore, Nsec3Params, Policy,
    Previous, RecordList, Role, Rr, SignParams, StoredKey, BLOCK,
};
use shardns_wire::{Name, RType};
use shardns_zone::scan::{Diag, Records, Scanned};
use shardns_zone::ScanOptions;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tracing::info;

pub mod incremental;
mod state;
mod timer;
pub mod updates;

pub use state::StateFile;
use state::{state_path, write_atomic};
pub use timer::Resigner;
pub use updates::Updates;

/// How one zone is signed: from its `[[zone]]` table and `server.key_directory`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignSpec {
    /// The key directory.
    pub key_dir: PathBuf,
    /// The algorithm of a first key, made when the directory has none for the zone.
    pub algorithm: Algorithm,
    /// NSEC or NSEC3 (with its parameters).
    pub denial: Denial,
    /// Signature validity and refresh.
    pub policy: Policy,
    /// Key lifetimes and the waits of a rollover.
    pub roll: RollSpec,
    /// Which CDS and CDNSKEY records, and the CDS digest.
    pub cds: CdsParams,
}

/// The rollover settings of a zone (`RollTimings` less the zone's own TTLs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollSpec {
    /// A ZSK's lifetime (absent: rolled only by hand).
    pub zsk_lifetime: Option<u32>,
    /// How long a change takes to reach every secondary, in seconds.
    pub propagation: u32,
    /// The TTL of the DS records at the parent.
    pub parent_ds_ttl: u32,
    /// How long a change at the parent takes to reach its secondaries.
    pub parent_propagation: u32,
}

impl Default for RollSpec {
    fn default() -> Self {
        Self {
            zsk_lifetime: None,
            propagation: 3600,
            parent_ds_ttl: 86_400,
            parent_propagation: 3600,
        }
    }
}

impl RollSpec {
    fn timings(&self, dnskey_ttl: u32, max_ttl: u32) -> RollTimings {
        RollTimings {
            dnskey_ttl: u64::from(dnskey_ttl),
            max_ttl: u64::from(max_ttl),
            propagation: u64::from(self.propagation),
            parent_ds_ttl: u64::from(self.parent_ds_ttl),
            parent_propagation: u64::from(self.parent_propagation),
            zsk_lifetime: self.zsk_lifetime.map(u64::from),
        }
    }
}

impl SignSpec {
    /// The signing of `zone`, if it has `dnssec = true` (the config's check made sure a
    /// key directory is set then).
    pub fn of(zone: &shardns_config::ZoneConfig, key_dir: Option<&Path>) -> Option<Self> {
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
            roll: RollSpec {
                zsk_lifetime: zone.zsk_lifetime,
                propagation: zone.propagation_delay,
                parent_ds_ttl: zone.parent_ds_ttl,
                parent_propagation: zone.parent_propagation_delay,
            },
            cds: CdsParams {
                publish: zone.cds_cdnskey_publish,
                digest: zone.cds_digest_type,
            },
        })
    }
}

/// A zone's records after signing.
pub struct Signed {
    /// The signed records in canonical order, for `Zone::build_sorted`.
    pub records: RecordList,
    /// The files read (the zone file first) and the scanner's warnings.
    pub files: Vec<PathBuf>,
    /// What the scan warned about.
    pub warnings: Vec<Diag>,
    /// When the zone must be signed again (seconds since 1970): `signature_refresh` before
    /// its signatures expire, or its next key event if sooner.
    pub refresh_at: u64,
}

pub use shardns_sys::unix_now;

/// Signs the records of the zone at `apex` read from `file` (named in errors) at time `now`
/// with `threads` threads (0: every core). The error is one diagnostic that says why.
pub fn sign_scanned(
    apex: &Name,
    scanned: Scanned,
    spec: &SignSpec,
    now: u64,
    threads: usize,
) -> Result<Signed, shardns_zone::Error> {
    sign_scanned_with(apex, scanned, spec, now, threads, None)
}

/// [`sign_scanned`] for a zone that may be updated (`updated` is `Some`): the changes
/// updates made ([`updates`]) applied over the records read first; `Some(Some(served))`:
/// its file changed since it was read, and `served` is the serial served now.
pub fn sign_scanned_with(
    apex: &Name,
    scanned: Scanned,
    spec: &SignSpec,
    now: u64,
    threads: usize,
    updated: Option<Option<u32>>,
) -> Result<Signed, shardns_zone::Error> {
    let file = scanned.files.first().cloned().unwrap_or_default();
    let fail = |message: String| shardns_zone::Error::Invalid {
        errors: vec![Diag {
            file: file.clone(),
            line: 0,
            message: format!("cannot sign the zone: {message}"),
        }],
    };
    let Scanned {
        chunks,
        files,
        warnings,
        text,
    } = scanned;
    drop(text);
    let records = to_list(chunks);
    let kept = Updates::new(&spec.key_dir, apex);
    let (records, pending) = match updated {
        Some(changed) => {
            let (records, pending) = kept.replay(records, changed).map_err(fail)?;
            (records, Some(pending))
        }
        None => (records, None),
    };
    let (records, _serial, refresh_at) =
        sign_records(apex, records, spec, now, threads).map_err(fail)?;
    if let Some(pending) = pending {
        kept.finish(pending).map_err(fail)?;
    }
    Ok(Signed {
        records,
        files,
        warnings,
        refresh_at,
    })
}

/// Signs `records` (the zone's, DNSSEC records among them are dropped and made anew):
/// loads or makes the keys, moves rollovers on, picks the serial, signs, records the
/// serial and keeps the signed zone. Returns the signed records, the serial and when to
/// sign again. When the inputs are those of the signed zone kept and nothing is due, that
/// zone is returned as it is; otherwise the signatures of the kept zone are reused for the
/// RRsets that did not change (incremental re-signing), and only the rest is signed.
pub fn sign_records(
    apex: &Name,
    records: RecordList,
    spec: &SignSpec,
    now: u64,
    threads: usize,
) -> Result<(RecordList, u32, u64), String> {
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
    let soa = records
        .items
        .iter()
        .find(|r| r.rtype == RType::SOA && records.owner(r).eq_ci(&apex.as_ref()))
        .ok_or("the zone needs exactly one SOA record at its apex")?;
    let file_serial = soa_serial(records.rdata(soa)).ok_or("a SOA record with bad rdata")?;
    // The DNSKEY TTL is the SOA's (SignParams::dnskey_ttl None).
    let dnskey_ttl = soa.ttl;
    let max_ttl = records
        .items
        .iter()
        .map(|r| r.ttl)
        .max()
        .unwrap_or(0)
        .max(dnskey_ttl);
    let timings = spec.roll.timings(dnskey_ttl, max_ttl);
    step_rollovers(apex, &store, &mut keys, &timings, now)?;
    let state = StateFile::new(&spec.key_dir, apex);
    let last = state.read()?;

    let fingerprint = fingerprint(&records, &keys, spec);
    let kept = SignedFile::new(&spec.key_dir, apex);
    if let Some(found) = kept.read_if(&fingerprint, last, now) {
        info!(
            "zone {apex}: serving the signed zone kept in {} (serial {}, signed from the same \
             records and keys; signed again in {} s)",
            kept.path.display(),
            found.1,
            found.2.saturating_sub(now)
        );
        return Ok(found);
    }

    let serial = match last {
        Some(last) if !serial_gt(file_serial, last) => last.wrapping_add(1),
        _ => file_serial,
    };
    let mut params = SignParams::new(now, &spec.policy);
    params.denial = spec.denial.clone();
    params.serial = Some(serial);
    params.threads = threads;
    params.cds = spec.cds;
    let zk = zone_keys(&keys, now);
    let started = std::time::Instant::now();
    // The last signed version, whose signatures of unchanged RRsets are kept.
    let previous = kept
        .read_any()
        .map(|list| Previous::new(list, now, spec.policy.refresh));
    let read = started.elapsed().as_secs_f64();
    let signed = sign_list(apex, records, &zk, &params, previous).map_err(|e| e.to_string())?;
    state.write(serial, &timings)?;
    let metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let key_event = roll::next_event(&metas, &timings, now);
    let refresh_at = spec
        .policy
        .refresh_at(signed.expires(now))
        .min(key_event.unwrap_or(u64::MAX));
    kept.write(&fingerprint, serial, refresh_at, &signed.list)?;
    info!(
        "zone {apex}: signed with serial {serial} in {:.3} s ({read:.3} s reading the last signed version): {} RRsets, {} new signatures, {} kept, {} keys; signed again in {} s{}",
        started.elapsed().as_secs_f64(),
        signed.rrsets_signed,
        signed.signatures,
        signed.kept,
        zk.len(),
        refresh_at.saturating_sub(now),
        if key_event == Some(refresh_at) { " (a key event)" } else { "" }
    );
    Ok((signed.list, serial, refresh_at))
}

/// Moves the rollovers under way on at `now` ([`roll::tick`]): the old key's end set from
/// its successor's start, a new ZSK made when the lifetime of the active one is up. Changed
/// keys are written (a new key first).
fn step_rollovers(
    apex: &Name,
    store: &KeyStore,
    keys: &mut Vec<StoredKey>,
    timings: &RollTimings,
    now: u64,
) -> Result<(), String> {
    let mut metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let mut tick = roll::tick(&mut metas, timings, now);
    if let Some(new) = tick.new_key.take() {
        let mut key = store
            .make(apex, new.algorithm, new.role, now)
            .map_err(|e| store_error(&e))?;
        roll::schedule_new(&mut key.meta, new.kind, timings, now);
        store.save_new(&key).map_err(|e| store_error(&e))?;
        info!(
            "zone {apex}: the lifetime of ZSK {} is up: made ZSK {} ({}), published now, signing from {}",
            metas[new.old].tag,
            key.meta.tag,
            key.stem,
            shardns_dnssec::keys::format_time(key.meta.activate.unwrap_or(now))
        );
        metas.push(key.meta.clone());
        keys.push(key);
        tick = roll::tick(&mut metas, timings, now);
    }
    for i in tick.changed {
        keys[i].meta = metas[i].clone();
        store.save(&keys[i]).map_err(|e| store_error(&e))?;
        let m = &keys[i].meta;
        let time = |t: Option<u64>| t.map_or("-".into(), shardns_dnssec::keys::format_time);
        info!(
            "zone {apex}: {} {} rolled over: signs until {}, withdrawn at {}",
            m.role,
            m.tag,
            time(m.inactive),
            time(m.delete)
        );
    }
    Ok(())
}

/// What a signed zone was made from: its records, its keys with their times, the signing
/// settings.
fn fingerprint(records: &RecordList, keys: &[StoredKey], spec: &SignSpec) -> String {
    let mut f = Fingerprint::default();
    let settings = (&spec.denial, spec.policy, spec.roll, spec.cds);
    f.part(format!("{settings:?}").as_bytes());
    for k in keys {
        f.part(k.key.dnskey_rdata());
        f.part(format!("{:?}", k.meta.times()).as_bytes());
    }
    for r in &records.items {
        f.part(records.owner(r).as_wire());
        f.part(&[r.rtype.0.to_be_bytes(), r.class.0.to_be_bytes()].concat());
        f.part(&r.ttl.to_be_bytes());
        f.part(records.rdata(r));
    }
    f.hex()
}

/// A key directory error as one line; a missing directory says how to make one.
fn store_error(e: &shardns_dnssec::Error) -> String {
    match e {
        shardns_dnssec::Error::Missing(p) => format!(
            "key directory {} does not exist (create it, mode 0700, or fix key_directory / --key-dir)",
            p.display()
        ),
        e => e.to_string(),
    }
}

/// Serial number arithmetic (RFC 1982 §3.2): `a` is greater than `b`.
pub fn serial_gt(a: u32, b: u32) -> bool {
    a != b && (a.wrapping_sub(b) as i32) > 0
}

/// The serial field of SOA rdata (after the two names).
pub fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let (_, a) = shardns_wire::NameRef::from_wire_prefix(rdata).ok()?;
    let (_, b) = shardns_wire::NameRef::from_wire_prefix(rdata.get(a..)?).ok()?;
    let at = a + b;
    (rdata.len() == at + 20).then(|| u32::from_be_bytes(rdata[at..at + 4].try_into().unwrap()))
}

/// The scanner's chunks as one compact list for the signer, each chunk freed once copied.
/// Records that share an owner in a chunk share it in the list.
pub fn to_list(chunks: Vec<Records>) -> RecordList {
    let items = chunks.iter().map(|c| c.items.len()).sum();
    let bytes = chunks.iter().map(|c| c.bytes.len()).sum();
    let mut out = RecordList::with_capacity(items, bytes);
    append(&mut out, chunks);
    out
}

/// Appends the scanner's chunks to a list, each freed once copied.
fn append(out: &mut RecordList, chunks: Vec<Records>) {
    for chunk in chunks {
        push_chunk(&mut out.bytes, &mut out.items, &chunk);
    }
}

/// Appends one scanner chunk's records to `bytes` and `items`, their offsets moved to where
/// its bytes land.
fn push_chunk(bytes: &mut Vec<u8>, items: &mut Vec<Rr>, chunk: &Records) {
    let base = bytes.len() as u32;
    bytes.extend_from_slice(&chunk.bytes);
    items.extend(chunk.items.iter().map(|i| Rr {
        owner: base + i.owner,
        rdata: base + i.rdata,
        rdlen: i.rdlen,
        rtype: i.rtype,
        class: i.class,
        ttl: i.ttl,
    }));
}

/// How much of the kept signed zone's text is read and scanned at a time.
const PIECE: usize = 16 << 20;

/// The last signed version of a zone: `state/<zone>.signed`, a zone file whose first line
/// says what it was signed from and when it is due: `; shardns-signed fingerprint HEX
/// serial N due T`.
pub struct SignedFile {
    path: PathBuf,
    apex: Name,
}

impl SignedFile {
    /// The signed copy of the zone at `apex` in `key_dir`.
    pub fn new(key_dir: &Path, apex: &Name) -> Self {
        Self {
            path: state_path(key_dir, apex, "signed"),
            apex: apex.clone(),
        }
    }

    /// The kept zone, its serial and when it is due, if it was signed from `fingerprint`,
    /// with the last serial recorded, and is not due at `now`. Anything else (no file, a
    /// file that does not read): `None`, and the zone is signed anew.
    fn read_if(
        &self,
        fingerprint: &str,
        last: Option<u32>,
        now: u64,
    ) -> Option<(RecordList, u32, u64)> {
        use std::io::BufRead;
        let f = fs::File::open(&self.path).ok()?;
        let mut first = String::new();
        io::BufReader::new(f).read_line(&mut first).ok()?;
        let mut words = first.split_ascii_whitespace();
        let mut field = |name: &str| {
            words.find(|w| *w == name)?;
            words.next()
        };
        let (fp, serial, due) = (field("fingerprint")?, field("serial")?, field("due")?);
        let (serial, due): (u32, u64) = (serial.parse().ok()?, due.parse().ok()?);
        if fp != fingerprint || Some(serial) != last || now >= due {
            return None;
        }
        // Served as it is, built in the order it is read: only a file in canonical order
        // (as written) is taken.
        let list = self.read_any()?;
        let sorted = list
            .items
            .windows(2)
            .all(|w| list.order(&w[0], &w[1]).is_le());
        if !sorted {
            tracing::warn!(
                "{}: not in canonical order; signing the zone anew",
                self.path.display()
            );
            return None;
        }
        Some((list, serial, due))
    }

    /// The kept zone whatever it was signed from: the previous version whose signatures
    /// an incremental signing keeps. `None` if there is none or it does not read.
    fn read_any(&self) -> Option<RecordList> {
        match self.read_pieces(PIECE) {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!("{}: {e}; signing the zone anew", self.path.display());
                None
            }
        }
    }

    /// Reads the kept zone `piece` octets of text at a time, cut after a line (the file
    /// has one record a line, names absolute, TTLs given), each piece scanned and appended
    /// to the list: the text, as large as the signed zone, and its scan are never held
    /// whole beside the list.
    fn read_pieces(&self, piece: usize) -> Result<Option<RecordList>, String> {
        use std::io::Read;
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let mut file = match fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(err(&e)),
        };
        let opts = ScanOptions {
            threads: 2,
            ..ScanOptions::new(self.apex.clone())
        };
        let mut list = RecordList::default();
        // The records go into blocks of BLOCK octets (each its own mapping, freed whole),
        // which a signed version made from this one takes over for the signatures it keeps.
        let (mut block, mut items) = (Vec::with_capacity(BLOCK), Vec::new());
        let mut text: Vec<u8> = Vec::with_capacity(piece + (64 << 10));
        loop {
            let want = piece.saturating_sub(text.len()).max(64 << 10);
            let read = (&mut file)
                .take(want as u64)
                .read_to_end(&mut text)
                .map_err(|e| err(&e))?;
            let end = read < want;
            let cut = match text.iter().rposition(|&b| b == b'\n') {
                _ if end => text.len(),
                Some(at) => at + 1,
                // A line longer than a piece: read on.
                None => continue,
            };
            let scanned = shardns_zone::scan::scan_text(&text[..cut], &self.path, &opts)
                .map_err(|e| err(&e))?;
            for chunk in scanned.chunks {
                if !block.is_empty() && block.len() + chunk.bytes.len() > BLOCK {
                    list.append_block(
                        std::mem::replace(&mut block, Vec::with_capacity(BLOCK)),
                        std::mem::take(&mut items),
                    );
                }
                push_chunk(&mut block, &mut items, &chunk);
            }
            text.drain(..cut);
            if end {
                list.append_block(block, items);
                return Ok(Some(list));
            }
        }
    }

    /// Keeps `records`, signed from `fingerprint` with `serial`, due at `due`.
    fn write(
        &self,
        fingerprint: &str,
        serial: u32,
        due: u64,
        records: &RecordList,
    ) -> Result<(), String> {
        write_atomic(&self.path, |w| {
            writeln!(
                w,
                "; shardns-signed fingerprint {fingerprint} serial {serial} due {due}"
            )?;
            for r in &records.items {
                writeln!(w, "{}", records.display(r))?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests;
