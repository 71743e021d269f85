//! The key directory: one key is two files in BIND's format, so keys made by
//! `dnssec-keygen` (RSA included) load here, and ours work with BIND's and ldns's tools.
//!
//! - `K<zone>+<alg>+<tag>.key`: comments, then the DNSKEY record in presentation format.
//!   Our first comment line says the role: `; This is a key-signing key` (BIND's words),
//!   `zone-signing key`, or `combined signing key` (ours).
//! - `K<zone>+<alg>+<tag>.private`: `Private-key-format: v1.3`, `Algorithm: 13
//!   (ECDSAP256SHA256)`, the key (`PrivateKey:` for ECDSA and Ed25519; `Modulus:` ...
//!   `Coefficient:` for RSA), and the times: `Created`, `Publish`, `Activate`, `Inactive`,
//!   `Delete`, and for key-signing keys `SyncPublish`, `SyncDelete` (when CDS and CDNSKEY
//!   are published for the key) and `DSPublish` (when the operator confirmed the parent
//!   has its DS), as `YYYYMMDDHHMMSS` UTC: BIND's names, which `dnssec-settime -p all`
//!   reads. These times are the metadata that counts: rollovers ([`crate::roll`]) are
//!   written as times, so a restart resumes them.
//!
//! Both files are written with mode 0600, to a temporary name first and renamed, so a
//! reader never sees half a key. Roles: a key without the SEP flag is a ZSK; with it, a KSK,
//! or a CSK if its `.key` file says so. Loading is strict: a file of the zone that cannot
//! be read or parsed, or whose DNSKEY belongs to another zone, fails the whole load with a
//! [`Error`] naming the file, so the caller keeps its previous signed version.
//!
//! This is the crate's only module with I/O (files; no clock: times are passed in).

use crate::alg::Algorithm;
use crate::error::Error;
use crate::key::{PrivateKey, SigningKey, FLAG_SEP, FLAG_ZONE};
use crate::pkcs11::Token;
use core::fmt;
use shardns_wire::text::write_base64;
use shardns_wire::{rdata, Name, NameRef, RType};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Key-signing key: signs DNSKEY, CDS and CDNSKEY; SEP flag; its DS is at the parent.
    Ksk,
    /// Zone-signing key: signs everything else.
    Zsk,
    /// Combined signing key: both; SEP flag. Our default for new zones, as in BIND's
    /// default policy (Knot's default is KSK + ZSK): one key, one DS at the parent, and no
    /// ZSK rollovers to schedule; with ECDSA or Ed25519 its signatures are as small as a
    /// ZSK's.
    Csk,
}

impl Role {
    /// DNSKEY flags for the role: 257 with the SEP flag, else 256.
    pub fn flags(self) -> u16 {
        match self {
            Self::Zsk => FLAG_ZONE,
            Self::Ksk | Self::Csk => FLAG_ZONE | FLAG_SEP,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Self::Ksk => "key-signing key",
            Self::Zsk => "zone-signing key",
            Self::Csk => "combined signing key",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Ksk => "KSK",
            Self::Zsk => "ZSK",
            Self::Csk => "CSK",
        })
    }
}

/// A key's zone, role and times (seconds since 1970).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMeta {
    /// The zone (the DNSKEY's owner).
    pub zone: Name,
    /// KSK, ZSK or CSK.
    pub role: Role,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The key tag.
    pub tag: u16,
    /// When the key was made.
    pub created: u64,
    /// From when its DNSKEY is published; never if `None`.
    pub publish: Option<u64>,
    /// From when it signs; never if `None`.
    pub activate: Option<u64>,
    /// From when it no longer signs (retired).
    pub inactive: Option<u64>,
    /// From when its DNSKEY is no longer published.
    pub delete: Option<u64>,
    /// From when CDS and CDNSKEY are published for it (KSK, CSK). `None`: while it is
    /// active.
    pub sync_publish: Option<u64>,
    /// From when CDS and CDNSKEY are no longer published for it.
    pub sync_delete: Option<u64>,
    /// When the operator confirmed the parent publishes its DS (double-DS rollover).
    pub ds_publish: Option<u64>,
}

impl KeyMeta {
    /// True if the DNSKEY is in the zone at `now`.
    pub fn is_published(&self, now: u64) -> bool {
        self.publish.is_some_and(|t| t <= now) && self.delete.is_none_or(|t| t > now)
    }

    /// True if the key signs at `now`.
    pub fn is_active(&self, now: u64) -> bool {
        self.is_published(now)
            && self.activate.is_some_and(|t| t <= now)
            && self.inactive.is_none_or(|t| t > now)
    }

    /// True if the key signs at `now`: active, or signing while its DNSKEY is not in the
    /// zone as an algorithm rollover does (RFC 6781 §4.1.4): before its `Publish` (the new
    /// algorithm's signatures first), or after its `Delete` until its later `Inactive`
    /// (the old algorithm's signatures last). A key withdrawn without an `Inactive` after
    /// its `Delete` does not sign.
    pub fn signs(&self, now: u64) -> bool {
        let window =
            self.activate.is_some_and(|t| t <= now) && self.inactive.is_none_or(|t| t > now);
        let before = self.publish.is_some_and(|p| p > now);
        let after = matches!((self.delete, self.inactive), (Some(d), Some(i)) if d < i);
        window && (self.is_published(now) || before || after)
    }

    /// True if CDS and CDNSKEY are published for the key at `now`: a KSK or CSK whose
    /// DNSKEY is published (RFC 7344 §4.1: a CDS must match a key of the DNSKEY RRset, so a
    /// new key waiting for its DS has none), from `SyncPublish` (or, without it, while it
    /// is active) until `SyncDelete`.
    pub fn has_cds(&self, now: u64) -> bool {
        self.role != Role::Zsk
            && self.is_published(now)
            && self.sync_delete.is_none_or(|t| t > now)
            && match self.sync_publish {
                Some(t) => t <= now,
                None => self.is_active(now),
            }
    }

    /// The key's times, in file order, with BIND's field names.
    pub fn times(&self) -> [(&'static str, Option<u64>); 8] {
        [
            ("Created", Some(self.created)),
            ("Publish", self.publish),
            ("Activate", self.activate),
            ("Inactive", self.inactive),
            ("Delete", self.delete),
            ("DSPublish", self.ds_publish),
            ("SyncPublish", self.sync_publish),
            ("SyncDelete", self.sync_delete),
        ]
    }
}

/// A key of the store: its metadata and the key itself.
#[derive(Debug)]
pub struct StoredKey {
    /// Zone, role, times.
    pub meta: KeyMeta,
    /// The key pair.
    pub key: SigningKey,
    /// The file name without `.key`/`.private`: `K<zone>+<alg>+<tag>`.
    pub stem: String,
}

/// A key directory, and the PKCS#11 token its new keys are made on (if any): a key on a
/// token has a `K<zone>+<alg>+<tag>.pkcs11` file where a key file has its `.private`, the
/// same fields less the key, plus `Pkcs11Id:` (the objects' `CKA_ID`, hexadecimal).
#[derive(Debug, Clone)]
pub struct KeyStore {
    dir: PathBuf,
    token: Option<Arc<Token>>,
}

/// The file that says where a key's private half is: in the file, or on a token.
const PRIVATE_EXTS: [&str; 2] = ["private", "pkcs11"];

/// The file stem of a key: `K<zone>+<alg>+<tag>` (BIND's names).
fn stem(zone: NameRef<'_>, alg: Algorithm, tag: u16) -> String {
    format!("K{}+{:03}+{:05}", zone_part(zone), alg.number(), tag)
}

/// The zone in a key's file name: its file stem (one per zone, nothing that leaves the
/// directory: [`NameRef::file_stem`]) with its final dot, `.` for the root; the same text
/// as BIND's for names of letters, digits, `-` and `_`.
fn zone_part(zone: NameRef<'_>) -> String {
    if zone.is_root() {
        ".".into()
    } else {
        format!("{}.", zone.file_stem())
    }
}

/// The zone in the key file names of earlier versions: its text in lower case, which two
/// zones could share and which a `/` took out of the directory.
fn legacy_zone_part(zone: NameRef<'_>) -> String {
    zone.to_string().to_ascii_lowercase()
}

impl KeyStore {
    /// Opens an existing key directory (it must be a directory we can list).
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        let dir = dir.into();
        match fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Error::NotADirectory(dir)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Error::Missing(dir)),
            Err(e) => return Err(Error::Io(dir, e)),
        }
        fs::read_dir(&dir).map_err(|e| Error::Io(dir.clone(), e))?;
        Ok(Self { dir, token: None })
    }

    /// The store with `token`: new keys are made on it, and its keys load ready to sign
    /// (without a token, a `.pkcs11` file loads [`SigningKey::detached`]).
    pub fn with_token(mut self, token: Option<Arc<Token>>) -> Self {
        self.token = token;
        self
    }

    /// Creates the directory (mode 0700, parents as needed) if it does not exist, and opens
    /// it.
    pub fn create(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        let dir = dir.into();
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .create(&dir)
                .and_then(|()| fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)))
                .map_err(|e| Error::Io(dir.clone(), e))?;
        }
        Self::open(dir)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every key of `zone` in the directory, oldest first. Files of other zones are left
    /// alone; any key file of this zone that fails makes the whole load fail.
    pub fn load(&self, zone: &Name) -> Result<Vec<StoredKey>, Error> {
        self.take_over_legacy(zone)?;
        let prefix = format!("K{}+", zone_part(zone.as_ref()));
        let entries = fs::read_dir(&self.dir).map_err(|e| Error::Io(self.dir.clone(), e))?;
        let mut keys = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::Io(self.dir.clone(), e))?;
            let file = entry.file_name();
            let Some(file) = file.to_str() else { continue };
            let Some(stem) = PRIVATE_EXTS
                .iter()
                .find_map(|ext| file.strip_suffix(ext)?.strip_suffix('.'))
            else {
                continue;
            };
            if stem.len() < prefix.len()
                || !stem.is_char_boundary(prefix.len())
                || !stem[..prefix.len()].eq_ignore_ascii_case(&prefix)
            {
                continue;
            }
            keys.push(self.load_stem(zone, stem)?);
        }
        keys.sort_by_key(|k| (k.meta.created, k.meta.tag));
        Ok(keys)
    }

    /// Renames the key files an earlier version named `K<zone text>+…` (when that differs
    /// from today's name) to today's name, those whose `.key` says they are `zone`'s.
    fn take_over_legacy(&self, zone: &Name) -> Result<(), Error> {
        let (old, new) = (legacy_zone_part(zone.as_ref()), zone_part(zone.as_ref()));
        if old == new {
            return Ok(());
        }
        let prefix = format!("K{old}+");
        let entries = fs::read_dir(&self.dir).map_err(|e| Error::Io(self.dir.clone(), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::Io(self.dir.clone(), e))?;
            let file = entry.file_name();
            let Some(rest) = file
                .to_str()
                .and_then(|f| f.strip_suffix(".private"))
                .and_then(|f| f.strip_prefix(&prefix))
            else {
                continue;
            };
            let from = |ext: &str| self.dir.join(format!("K{old}+{rest}.{ext}"));
            let to = |ext: &str| self.dir.join(format!("K{new}+{rest}.{ext}"));
            let ours = fs::read_to_string(from("key"))
                .ok()
                .and_then(|t| parse_key_file(&from("key"), &t).ok())
                .is_some_and(|k| k.owner.as_ref().eq_ci(&zone.as_ref()));
            if !ours || to("private").exists() {
                continue;
            }
            // The .key first, as `save` writes them: a crash between leaves a .private
            // under the old name, taken over next time.
            for ext in ["key", "private"] {
                fs::rename(from(ext), to(ext)).map_err(|e| Error::Io(from(ext), e))?;
            }
        }
        Ok(())
    }

    /// Loads one key by its stem (`K<zone>+<alg>+<tag>`), which must be of `zone`.
    pub fn load_stem(&self, zone: &Name, stem: &str) -> Result<StoredKey, Error> {
        let key_path = self.dir.join(format!("{stem}.key"));
        let private_path = PRIVATE_EXTS
            .iter()
            .map(|ext| self.dir.join(format!("{stem}.{ext}")))
            .find(|p| p.exists())
            .unwrap_or_else(|| self.dir.join(format!("{stem}.private")));
        let read = |p: &Path| fs::read_to_string(p).map_err(|e| Error::Io(p.to_path_buf(), e));
        let public = parse_key_file(&key_path, &read(&key_path)?)?;
        if !public.owner.as_ref().eq_ci(&zone.as_ref()) {
            return Err(Error::WrongZone {
                path: key_path,
                zone: zone.clone(),
                found: public.owner,
            });
        }
        let private = parse_private_file(&private_path, &read(&private_path)?)?;
        let corrupt = |what: String| Error::Corrupt {
            path: private_path.clone(),
            what,
        };
        if private.algorithm != public.algorithm {
            return Err(corrupt(format!(
                "algorithm {} but the .key file says {}",
                private.algorithm, public.algorithm
            )));
        }
        let key = match (private.key, &self.token) {
            (PrivateKey::Token(id), Some(token)) => {
                let (alg, flags, pk) = (public.algorithm, public.flags, &public.public_key);
                SigningKey::from_token(token, alg, flags, &id, Some(pk))
            }
            // Its times can be read and written without the token (`shardns key`); the
            // signer refuses a detached key.
            (PrivateKey::Token(id), None) => Ok(SigningKey::detached(
                public.algorithm,
                public.flags,
                &id,
                &public.public_key,
            )),
            (key, _) => {
                SigningKey::from_private(public.algorithm, public.flags, key, &public.public_key)
            }
        }
        .map_err(|e| e.in_file(private_path.clone()))?;
        let want = self::stem(zone.as_ref(), public.algorithm, key.tag());
        if !want.eq_ignore_ascii_case(stem) {
            return Err(corrupt(format!(
                "the key's algorithm and tag make the file name {want}"
            )));
        }
        let role = match (public.flags & FLAG_SEP != 0, public.csk) {
            (false, _) => Role::Zsk,
            (true, false) => Role::Ksk,
            (true, true) => Role::Csk,
        };
        Ok(StoredKey {
            meta: KeyMeta {
                zone: public.owner,
                role,
                algorithm: public.algorithm,
                tag: key.tag(),
                created: private.times[0].unwrap_or(0),
                publish: private.times[1],
                activate: private.times[2],
                inactive: private.times[3],
                delete: private.times[4],
                ds_publish: private.times[5],
                sync_publish: private.times[6],
                sync_delete: private.times[7],
            },
            key,
            stem: stem.to_string(),
        })
    }

    /// Makes a new key for `zone`, published and active from `now`, and writes its files.
    pub fn generate(
        &self,
        zone: &Name,
        algorithm: Algorithm,
        role: Role,
        now: u64,
    ) -> Result<StoredKey, Error> {
        let stored = self.make(zone, algorithm, role, now)?;
        self.save_new(&stored)?;
        Ok(stored)
    }

    /// Makes a new key for `zone`, published and active from `now`, without writing it:
    /// the caller sets its times, then [`Self::save_new`].
    pub fn make(
        &self,
        zone: &Name,
        algorithm: Algorithm,
        role: Role,
        now: u64,
    ) -> Result<StoredKey, Error> {
        self.make_sized(zone, algorithm, role, None, now)
    }

    /// [`Self::make`] with an RSA key size in bits (`None`: 2048; not used for the
    /// other algorithms).
    pub fn make_sized(
        &self,
        zone: &Name,
        algorithm: Algorithm,
        role: Role,
        rsa_bits: Option<u32>,
        now: u64,
    ) -> Result<StoredKey, Error> {
        let key = match &self.token {
            // The label names the key for the token's tools (p11tool, pkcs11-tool).
            Some(token) => {
                let label = format!("{} {role} {now}", zone_part(zone.as_ref()));
                SigningKey::generate_on(token, algorithm, role.flags(), rsa_bits, &label)
            }
            None => SigningKey::generate_sized(algorithm, role.flags(), rsa_bits),
        }
        .map_err(|e| e.in_file(self.dir.clone()))?;
        Ok(StoredKey {
            meta: KeyMeta {
                zone: zone.clone(),
                role,
                algorithm,
                tag: key.tag(),
                created: now,
                publish: Some(now),
                activate: Some(now),
                inactive: None,
                delete: None,
                sync_publish: None,
                sync_delete: None,
                ds_publish: None,
            },
            stem: stem(zone.as_ref(), algorithm, key.tag()),
            key,
        })
    }

    /// Writes the files of a key made by [`Self::make`]; refuses to replace a key with the
    /// same tag.
    pub fn save_new(&self, stored: &StoredKey) -> Result<(), Error> {
        let exists = PRIVATE_EXTS
            .iter()
            .map(|ext| self.dir.join(format!("{}.{ext}", stored.stem)))
            .find(|p| p.exists());
        if let Some(private) = exists {
            // A tag collision with a key we have: refuse rather than overwrite it.
            return Err(Error::Io(
                private,
                io::Error::new(io::ErrorKind::AlreadyExists, "a key with this tag exists"),
            ));
        }
        self.save(stored)
    }

    /// Writes a key's two files (mode 0600), replacing them: to record new times.
    pub fn save(&self, key: &StoredKey) -> Result<(), Error> {
        let m = &key.meta;
        let zone = m.zone.to_string().to_ascii_lowercase();
        let mut public = format!(
            "; This is a {}, keyid {}, for {zone}\n",
            m.role.words(),
            m.tag,
        );
        let mut private = format!(
            "Private-key-format: v1.3\nAlgorithm: {} ({})\n",
            m.algorithm.number(),
            m.algorithm.mnemonic()
        );
        let b64 = |b: &[u8]| {
            let mut s = String::new();
            write_base64(b, &mut s).expect("String never fails");
            s
        };
        match key.key.private() {
            PrivateKey::Ecdsa(k) => private.push_str(&format!("PrivateKey: {}\n", b64(k))),
            PrivateKey::Ed25519(k) => private.push_str(&format!("PrivateKey: {}\n", b64(k))),
            PrivateKey::Rsa(r) => {
                for (field, v) in rsa_fields(r) {
                    private.push_str(&format!("{field}: {}\n", b64(v)));
                }
            }
            PrivateKey::Token(id) => {
                let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                private.insert_str(0, "; The private key is on a PKCS#11 token: not here\n");
                private.push_str(&format!("Pkcs11Id: {hex}\n"));
            }
        }
        let ext = match key.key.private() {
            PrivateKey::Token(_) => "pkcs11",
            _ => "private",
        };
        for (field, t) in m.times() {
            if let Some(t) = t {
                private.push_str(&format!("{field}: {}\n", format_time(t)));
                public.push_str(&format!("; {field}: {}\n", format_time(t)));
            }
        }
        let mut dnskey = String::new();
        rdata::fmt_text(RType::DNSKEY, key.key.dnskey_rdata(), &mut dnskey)
            .expect("String never fails");
        public.push_str(&format!("{zone} IN DNSKEY {dnskey}\n"));
        // The .key first: a key is loaded by its .private, so a crash in between leaves no
        // half key behind, only a .key that nothing reads.
        self.write_file(&format!("{}.key", key.stem), public.as_bytes())?;
        self.write_file(&format!("{}.{ext}", key.stem), private.as_bytes())
    }

    /// Writes `data` to `name` in the directory: a temporary file of mode 0600, synced,
    /// then renamed over the name.
    fn write_file(&self, name: &str, data: &[u8]) -> Result<(), Error> {
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let err = |e: io::Error| Error::Io(path.clone(), e);
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(err)?;
        f.write_all(data).and_then(|()| f.sync_all()).map_err(err)?;
        fs::rename(&tmp, &path).map_err(err)
    }
}

mod duty;
pub use duty::{duty, zone_keys, Duty};

mod files;
use files::{parse_key_file, parse_private_file, rsa_fields};

mod stamp;
pub use stamp::KeyFilesStamp;

mod time;
pub use time::{format_time, parse_time};

#[cfg(test)]
mod tests;
