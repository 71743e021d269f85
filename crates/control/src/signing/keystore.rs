//! signing::keystore -- where a zone's keys are: key files in the key directory, or a
//! PKCS#11 token (`[[keystore]]`, `shardns_dnssec::pkcs11`) with the key directory keeping
//! their times. The token is opened (and logged in) once per process and kept.
//!
//! A token that cannot be opened (module missing, no such token, wrong PIN) or that lost a
//! key fails the signing with one message that says so; the zone keeps the version it
//! serves. At start, with no version served yet, the signed zone kept in the key
//! directory is served if it was signed from the same records and keys and is not due
//! (the DNSKEY and times of the keys are readable without the token); otherwise the zone
//! is refused until the token answers.
//!
//! A key whose `.key` file is there without its private file (`.private`, or `.pkcs11` for
//! a token's key), or with one that cannot be read, is a lost key, not a key that is gone: the loader would skip it and the
//! signer would carry a rollover on without it (an incoming key dropped from the DNSKEY
//! RRset whose signatures caches hold, or the outgoing one retired with no successor), or
//! make new keys when every private file is lost. So nothing is signed then
//! ([`lost_private`]): the version served stays, the log says which file is missing, and
//! the roll resumes from the key times once the file is back.

use super::{fingerprint, store_error, SignSpec, SignedFile};
use shardns_dnssec::keys::KeyFilesStamp;
use shardns_dnssec::pkcs11::Token;
use shardns_dnssec::{KeyStore, RecordList, StoredKey};
use shardns_wire::Name;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use tracing::warn;

/// A `[[keystore]]` a zone's keys are made on and used from.
#[derive(Clone, PartialEq, Eq)]
pub struct Keystore {
    /// Its name in the config.
    pub name: String,
    /// The PKCS#11 module.
    pub module: PathBuf,
    /// The token's PKCS#11 URI (with its PIN).
    pub uri: String,
}

/// Never prints the URI, which may hold the PIN.
impl std::fmt::Debug for Keystore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keystore({:?}, {})", self.name, self.module.display())
    }
}

impl Keystore {
    /// The keystore `name` of the config's `[[keystore]]` tables (the config's check made
    /// sure it is there; if not, opening it says so).
    pub fn of(name: &str, tables: &[shardns_config::keystore::KeystoreConfig]) -> Self {
        let found = tables.iter().find(|k| k.name == name);
        Self {
            name: name.to_string(),
            module: found.map(|k| k.module.clone()).unwrap_or_default(),
            uri: found.map(|k| k.pkcs11_uri.clone()).unwrap_or_default(),
        }
    }

    /// The token, open and logged in.
    pub fn open(&self) -> Result<Arc<Token>, String> {
        if self.module.as_os_str().is_empty() {
            return Err(format!("no [[keystore]] named {:?}", self.name));
        }
        Token::open(&self.module, &self.uri).map_err(|e| format!("keystore {:?}: {e}", self.name))
    }
}

/// Why a zone's keys cannot sign, and the keys loaded without the token if the token was
/// the trouble (to serve the kept signed zone: [`kept_without_token`]).
pub(super) type LoadError = (String, Option<Vec<StoredKey>>);

/// The zone's key store and keys: with the zone's token if it has a keystore.
pub(super) fn load(apex: &Name, spec: &SignSpec) -> Result<(KeyStore, Vec<StoredKey>), LoadError> {
    let store = KeyStore::open(&spec.key_dir).map_err(|e| (store_error(&e), None))?;
    let Some(keystore) = &spec.keystore else {
        let keys = store.load(apex).map_err(|e| (store_error(&e), None))?;
        if let Some(k) = keys.iter().find(|k| k.key.is_detached()) {
            return Err((
                format!(
                    "key {} ({}.pkcs11) is on a PKCS#11 token and the zone has no keystore",
                    k.meta.tag, k.stem
                ),
                None,
            ));
        }
        return Ok((store, keys));
    };
    let token = keystore.open().and_then(|t| {
        let store = store.clone().with_token(Some(t));
        let keys = store.load(apex).map_err(|e| store_error(&e))?;
        Ok((store, keys))
    });
    token.map_err(|e| (e, store.load(apex).ok()))
}

/// The keys of the zone at `apex`, from its key files or its token, ready to sign.
///
/// Key files are read again only when they changed (their [`KeyFilesStamp`]: a listing
/// and a `stat` each): an update to a signed zone signs with them, and parsing them for
/// each one cost a tenth of its CPU (EC private keys are checked against their public
/// half, a point multiplication). A key file gone, unreadable or rewritten changes the
/// stamp, so such a fault shows as it did. A token's keys are handles, looked up each time.
pub fn load_keys(apex: &Name, spec: &SignSpec) -> Result<Arc<Vec<StoredKey>>, String> {
    if spec.keystore.is_some() {
        return load(apex, spec)
            .map(|(_, keys)| Arc::new(keys))
            .map_err(|(e, _)| e);
    }
    let store = KeyStore::open(&spec.key_dir).map_err(|e| store_error(&e))?;
    let stamp = store.stamp(apex).map_err(|e| store_error(&e))?;
    let at = (spec.key_dir.clone(), apex.clone());
    let mut cache = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((s, keys)) = cache.get(&at) {
        if *s == stamp {
            return Ok(Arc::clone(keys));
        }
    }
    let keys = Arc::new(load(apex, spec).map(|(_, keys)| keys).map_err(|(e, _)| e)?);
    // Loading may rename legacy files (a new stamp): the one kept is what it read.
    let stamp = store.stamp(apex).map_err(|e| store_error(&e))?;
    if cache.len() >= LOADED_MAX {
        cache.clear();
    }
    cache.insert(at, (stamp, Arc::clone(&keys)));
    Ok(keys)
}

/// Zones whose loaded keys [`load_keys`] keeps at most (past it, it starts over).
const LOADED_MAX: usize = 4096;

type Loaded = HashMap<(PathBuf, Name), (KeyFilesStamp, Arc<Vec<StoredKey>>)>;

/// The keys [`load_keys`] read last, by key directory and zone, with their files' stamp.
static LOADED: LazyLock<Mutex<Loaded>> = LazyLock::new(Mutex::default);

/// The signed zone kept in the key directory, when the token cannot be used: served if it
/// was signed from these records and `keys` (loaded without the token) and is not due.
pub(super) fn kept_without_token(
    apex: &Name,
    records: &RecordList,
    keys: &[StoredKey],
    spec: &SignSpec,
    now: u64,
    error: &str,
) -> Option<(RecordList, u32, u64)> {
    if keys.is_empty() {
        return None;
    }
    let last = super::last_signed(&spec.key_dir, apex).ok()?;
    let kept = SignedFile::new(&spec.key_dir, apex);
    let found = kept.read_if(Some(&fingerprint(records, keys, spec)), last, now)?;
    warn!(
        "zone {apex}: cannot sign ({error}): serving the signed zone kept in {} (serial {}) \
         until the token answers; it is due in {} s",
        kept.path.display(),
        found.1,
        found.2.saturating_sub(now)
    );
    Some(found)
}

/// Why the zone at `apex` cannot be signed when a key of it in `dir` has its `.key` file
/// but no private file it can read: one line naming the files. `None` when every key is whole
/// (or the directory does not list: the loader says why).
pub(super) fn lost_private(dir: &Path, apex: &Name) -> Option<String> {
    // The stems `shardns_dnssec::keys` writes: `K<zone file stem>.+<alg>+<tag>`.
    let prefix = if apex.as_ref().is_root() {
        "K.+".to_string()
    } else {
        format!("K{}.+", apex.as_ref().file_stem())
    };
    let mut lost: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_suffix(".key").map(str::to_string))
        .filter(|stem| {
            stem.len() > prefix.len()
                && stem.is_char_boundary(prefix.len())
                && stem[..prefix.len()].eq_ignore_ascii_case(&prefix)
        })
        // Opened, not only looked for: an unreadable file (its mode, a dying disk) is as
        // lost, and kept apart from a corrupt one, which the loader reports.
        .filter(|stem| {
            !["private", "pkcs11"]
                .iter()
                .any(|ext| std::fs::File::open(dir.join(format!("{stem}.{ext}"))).is_ok())
        })
        .collect();
    if lost.is_empty() {
        return None;
    }
    lost.sort();
    Some(format!(
        "the private key file of {} is missing or unreadable in {} (no readable .private or \
         .pkcs11 beside the .key): not signing without it, so no rollover step is taken on part of the keys; \
         put it back (or remove the .key file to drop the key)",
        lost.join(", "),
        dir.display()
    ))
}

/// How often a zone served from its kept copy while a key is lost is tried again.
const LOST_RETRY: u64 = 60;

/// The signed zone kept in the key directory while a key's private file is lost
/// ([`lost_private`]): served as it is, whatever the records read now, if it is the last
/// one signed and every signature in it is still valid (due or not: a rollover step it
/// waited for is not taken, which is what keeps the zone whole), so a restart serves what
/// was served; tried again every minute, or before a signature expires. `None` otherwise
/// (the zone keeps its version, or is refused at start).
pub(super) fn kept_while_lost(
    apex: &Name,
    spec: &SignSpec,
    now: u64,
    error: &str,
) -> Option<(RecordList, u32, u64)> {
    let last = super::last_signed(&spec.key_dir, apex).ok()?;
    let kept = SignedFile::new(&spec.key_dir, apex);
    let (list, serial, _) = kept.read_if(None, last, now)?;
    // The earliest expiration of its signatures (RRSIG rdata: type, algorithm, labels,
    // original TTL, then the expiration).
    let expires = list
        .items
        .iter()
        .filter(|r| r.rtype == shardns_wire::RType::RRSIG)
        .filter_map(|r| list.rdata(r).get(8..12))
        .map(|b| u64::from(u32::from_be_bytes(b.try_into().unwrap())))
        .min()?;
    if expires <= now {
        return None;
    }
    let again = (now + LOST_RETRY).min(expires);
    warn!(
        "zone {apex}: cannot sign ({error}): serving the signed zone kept in {} (serial \
         {serial}, as signed before the fault; its rollover and any change to its records \
         wait), tried again in {} s",
        kept.path.display(),
        again - now
    );
    Some((list, serial, again))
}
