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
//! The zone's policy (key shape, sizes, lifetimes, DNSKEY TTL, signature jitter: [`SignSpec`])
//! and the keys it makes are in `policy`. Rollovers (`shardns_dnssec::roll`) are times in
//! the key files: at every signing the times of a rollover under way are brought into line
//! and a key whose `zsk_lifetime` or `ksk_lifetime` is up gets its successor; the zone is
//! signed again at the next key event as well as before its signatures expire.
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
//!
//! A multi-signer zone (`dnskey_management = "incremental"`) keeps the other providers'
//! DNSKEY, CDS and CDNSKEY records of its data beside ours ([`multi`]).

use shardns_dnssec::digest::Fingerprint;
use shardns_dnssec::roll;
use shardns_dnssec::{keys::zone_keys, sign_list, Previous, RecordList, Rr, StoredKey, BLOCK};
use shardns_wire::{Name, RType};
use shardns_zone::scan::{Diag, Records, Scanned};
use shardns_zone::{ScanOptions, Zone};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tracing::info;

mod clock;
mod confirm;
pub mod incremental;
mod kept;
mod keystore;
pub mod multi;
pub mod offline;
mod policy;
mod state;
mod timer;
pub mod updates;

pub use clock::signer_now;
pub(crate) use confirm::{confirm_checked, confirm_old_ds_gone};
pub use confirm::{confirm_submitted, open_keys, save_changed, Confirmed, Opened};
pub use keystore::{load_keys, Keystore};
pub use policy::{KeyPolicy, RollSpec, SignSpec};
pub use state::StateFile;
pub(crate) use state::{state_path, write_atomic};
pub use timer::Resigner;
pub use updates::{Kept, Updates};

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

/// The last serial the zone at `apex` was signed with: its state file's, or the last
/// change kept for it (`state/<zone>.updates`) if that is above. An update batch moves the
/// serial on without writing the state file (its kept changes, synced before the answers,
/// name the serials they signed), so every reader of the last serial looks at both.
pub(crate) fn last_signed(key_dir: &Path, apex: &Name) -> Result<Option<u32>, String> {
    let state = StateFile::new(key_dir, apex).read()?;
    let kept = Updates::new(key_dir, apex).last_serial()?;
    Ok(match (state, kept) {
        (Some(s), Some(k)) if serial_gt(k, s) => Some(k),
        (None, k) => k,
        (s, _) => s,
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
    sign_records_keeping(apex, records, spec, now, threads, true).map(|(l, s, r, _)| (l, s, r))
}

/// [`sign_records`], the signed zone kept only if `keep_now`; else the fingerprint of what
/// it was signed from is returned (`None` when the zone returned is the kept one, or made
/// by the offline-KSK signer, which keeps its own), for the caller to keep the zone once it
/// is served ([`SignedFile::write_zone`]): a transferred zone is served without waiting
/// for its copy to be written.
pub fn sign_records_keeping(
    apex: &Name,
    mut records: RecordList,
    spec: &SignSpec,
    now: u64,
    threads: usize,
    keep_now: bool,
) -> Result<(RecordList, u32, u64, Option<String>), String> {
    let unkept = |(l, s, r)| (l, s, r, None);
    // A lost private key file fails the signing before the loader, which would skip it.
    if let Some(lost) = keystore::lost_private(&spec.key_dir, apex) {
        return keystore::kept_while_lost(apex, spec, now, &lost)
            .map(unkept)
            .ok_or(lost);
    }
    if spec.offline_ksk {
        return offline::sign::sign_records(apex, records, spec, now, threads).map(unkept);
    }
    let (store, mut keys) = match keystore::load(apex, spec) {
        Ok(loaded) => loaded,
        Err((e, detached)) => {
            let keys = detached.unwrap_or_default();
            return keystore::kept_without_token(apex, &records, &keys, spec, now, &e)
                .map(unkept)
                .ok_or(e);
        }
    };
    if keys.is_empty() {
        keys = policy::first_keys(apex, &store, spec, now)?;
    }
    let soa = records
        .items
        .iter()
        .find(|r| r.rtype == RType::SOA && records.owner(r).eq_ci(&apex.as_ref()))
        .ok_or("the zone needs exactly one SOA record at its apex")?;
    let file_serial = soa_serial(records.rdata(soa)).ok_or("a SOA record with bad rdata")?;
    // The DNSKEY TTL: configured, else the SOA's (as SignParams::dnskey_ttl None gives).
    let dnskey_ttl = spec.dnskey_ttl.unwrap_or(soa.ttl);
    let max_ttl = records
        .items
        .iter()
        .map(|r| r.ttl)
        .max()
        .unwrap_or(0)
        .max(dnskey_ttl);
    let timings = spec.roll.timings(dnskey_ttl, max_ttl);
    let state = StateFile::new(&spec.key_dir, apex);
    let served = state.signed_at()?;
    policy::step_rollovers(apex, &store, &mut keys, spec, &timings, (served, now))?;
    let last = last_signed(&spec.key_dir, apex)?;

    let fingerprint = fingerprint(&records, &keys, spec);
    let kept = SignedFile::new(&spec.key_dir, apex);
    if let Some(found) = kept.read_if(Some(&fingerprint), last, now) {
        info!(
            "zone {apex}: serving the signed zone kept in {} (serial {}, signed from the same \
             records and keys; signed again in {} s)",
            kept.path.display(),
            found.1,
            found.2.saturating_sub(now)
        );
        return Ok(unkept(found));
    }

    let serial = match last {
        Some(last) if !serial_gt(file_serial, last) => last.wrapping_add(1),
        _ => file_serial,
    };
    let mut params = spec.sign_params(now);
    policy::cds_at_ds_change(&mut params, &keys, now);
    params.serial = Some(serial);
    params.threads = threads;
    params.foreign = multi::take_foreign(spec, apex, &mut records, &keys);
    let zk = zone_keys(&keys, now);
    multi::check_algorithms(&params.foreign, &zk)?;
    let started = std::time::Instant::now();
    // The last signed version, whose signatures of unchanged RRsets are kept.
    let previous = kept
        .read_any()
        .map(|list| Previous::new(list, now, spec.policy.refresh));
    let read = started.elapsed().as_secs_f64();
    let signed = sign_list(apex, records, &zk, &params, previous).map_err(|e| e.to_string())?;
    let signing = started.elapsed();
    state.write(serial, &timings, now)?;
    let metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let key_event = roll::next_event(&metas, &timings, now);
    let refresh_at = spec
        .policy
        .refresh_at(signed.expires(now))
        .min(key_event.unwrap_or(u64::MAX));
    let keeping = if keep_now {
        kept.write(&fingerprint, serial, refresh_at, &signed.list)?;
        format!(
            ", {:.3} s keeping this one",
            (started.elapsed() - signing).as_secs_f64()
        )
    } else {
        ", kept once served".to_string()
    };
    info!(
        "zone {apex}: signed with serial {serial} in {:.3} s ({read:.3} s reading the last signed version{keeping}): {} RRsets, {} new signatures, {} kept, {} keys; signed again in {} s{}",
        started.elapsed().as_secs_f64(),
        signed.rrsets_signed,
        signed.signatures,
        signed.kept,
        zk.len(),
        refresh_at.saturating_sub(now),
        if key_event == Some(refresh_at) { " (a key event)" } else { "" }
    );
    Ok((
        signed.list,
        serial,
        refresh_at,
        (!keep_now).then_some(fingerprint),
    ))
}

/// How long after the `failures`+1th failure in a row a signing of a zone still served is
/// tried again: a minute, doubled with each failure, up to a `signature_refresh`/8 (from
/// 1 s to an hour): a token or key file back is found soon, a lasting fault not retried
/// more than the refresh allows.
pub fn retry_after(spec: &SignSpec, failures: u32) -> u64 {
    let most = u64::from(spec.policy.refresh / 8).clamp(1, 3600);
    (60u64 << failures.min(6)).min(most)
}

/// What a signed zone was made from: its records, its keys with their times, the signing
/// settings.
fn fingerprint(records: &RecordList, keys: &[StoredKey], spec: &SignSpec) -> String {
    let mut f = Fingerprint::default();
    let settings = (
        &spec.denial,
        spec.policy,
        spec.roll,
        spec.cds,
        spec.dnskey_ttl,
    );
    f.part(format!("{settings:?}").as_bytes());
    multi::fingerprint(spec, &mut f);
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
    /// with the last serial recorded, and is not due at `now`; with `fingerprint` `None`,
    /// the last signed version whatever it was signed from and whether due or not (the
    /// caller checks its signatures). Anything else (no file, a file that does not read):
    /// `None`, and the zone is signed anew.
    fn read_if(
        &self,
        fingerprint: Option<&str>,
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
        let fresh = fingerprint.is_none_or(|f| f == fp && now < due);
        if !fresh || Some(serial) != last {
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
        self.write_with(fingerprint, serial, due, |w| {
            for r in &records.items {
                writeln!(w, "{}", records.display(r))?;
            }
            Ok(())
        })
    }

    /// Keeps the served `zone`, signed from `fingerprint`, due at `due`: written from the
    /// zone as it is when its names are in canonical order, else through a sorted list.
    pub fn write_zone(&self, fingerprint: &str, due: u64, zone: &Zone) -> Result<(), String> {
        if !kept::in_canonical_order(zone) {
            return self.write(fingerprint, zone.serial(), due, &kept::sorted_list(zone));
        }
        self.write_with(fingerprint, zone.serial(), due, |w| {
            kept::write_records(w, zone)
        })
    }

    /// Writes the file: its first line, then the records `body` writes, one a line.
    fn write_with(
        &self,
        fingerprint: &str,
        serial: u32,
        due: u64,
        body: impl FnOnce(&mut io::BufWriter<&fs::File>) -> io::Result<()>,
    ) -> Result<(), String> {
        let _one = KEEPING.lock().unwrap_or_else(|e| e.into_inner());
        write_atomic(&self.path, |w| {
            writeln!(
                w,
                "; shardns-signed fingerprint {fingerprint} serial {serial} due {due}"
            )?;
            body(w)
        })
    }
}

/// Held while a kept copy is written: its temporary file has one name, and a copy may be
/// written from a thread of its own (`secondary::keeper`) while the zone is signed again.
static KEEPING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests;
