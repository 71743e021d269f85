//! keys::files -- reading the two files of a key: the `.key` file's DNSKEY record and role
//! comment, the `.private` file's algorithm, key fields and times (BIND's formats).

use super::parse_time;
use super::Role;
use crate::alg::Algorithm;
use crate::error::Error;
use crate::key::{PrivateKey, RsaPrivate, FLAG_ZONE};
use shardns_wire::text::{base64_decode, Token};
use shardns_wire::{rdata, Name, NameRef, RType};
use std::path::Path;

pub(super) fn rsa_fields(r: &RsaPrivate) -> [(&'static str, &[u8]); 8] {
    [
        ("Modulus", &r.modulus),
        ("PublicExponent", &r.public_exponent),
        ("PrivateExponent", &r.private_exponent),
        ("Prime1", &r.prime1),
        ("Prime2", &r.prime2),
        ("Exponent1", &r.exponent1),
        ("Exponent2", &r.exponent2),
        ("Coefficient", &r.coefficient),
    ]
}

/// What a `.key` file holds.
pub(super) struct PublicFile {
    pub(super) owner: Name,
    pub(super) flags: u16,
    pub(super) algorithm: Algorithm,
    pub(super) public_key: Vec<u8>,
    pub(super) csk: bool,
}

pub(super) fn parse_key_file(path: &Path, text: &str) -> Result<PublicFile, Error> {
    let corrupt = |what: String| Error::Corrupt {
        path: path.to_path_buf(),
        what,
    };
    let csk = text
        .lines()
        .next()
        .is_some_and(|l| l.starts_with(';') && l.contains(Role::Csk.words()));
    let mut record = None;
    for line in text.lines() {
        let line = line.split(';').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if record.replace(line).is_some() {
            return Err(corrupt("more than one record".into()));
        }
    }
    let line = record.ok_or_else(|| corrupt("no DNSKEY record".into()))?;
    let mut words = line
        .split_ascii_whitespace()
        .filter(|w| *w != "(" && *w != ")");
    let owner = words.next().unwrap_or_default();
    let owner = Name::from_text(owner, Some(NameRef::ROOT))
        .map_err(|e| corrupt(format!("bad owner {owner:?}: {e}")))?;
    // Optional TTL and class, then the type.
    let mut rtype = "";
    for w in words.by_ref() {
        if w.eq_ignore_ascii_case("IN") || w.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        rtype = w;
        break;
    }
    if !rtype.eq_ignore_ascii_case("DNSKEY") {
        return Err(corrupt(format!("a {rtype} record, not DNSKEY")));
    }
    let tokens: Vec<Token<'_>> = words.map(|w| Token::plain(w.as_bytes())).collect();
    let mut rdata = Vec::new();
    rdata::from_text(RType::DNSKEY, &tokens, NameRef::ROOT, &mut rdata)
        .map_err(|e| corrupt(format!("bad DNSKEY: {e}")))?;
    let flags = u16::from_be_bytes([rdata[0], rdata[1]]);
    let algorithm = Algorithm::from_number(rdata[3])
        .filter(|a| a.can_sign())
        .ok_or_else(|| corrupt(format!("algorithm {} cannot sign", rdata[3])))?;
    if rdata[2] != 3 || flags & FLAG_ZONE == 0 {
        return Err(corrupt(
            "not a DNSSEC zone key (protocol 3, flag 256)".into(),
        ));
    }
    Ok(PublicFile {
        owner,
        flags,
        algorithm,
        public_key: rdata[4..].to_vec(),
        csk,
    })
}

/// The times of a `.private` file, in [`KeyMeta::times`] order.
pub(super) const TIME_FIELDS: [&str; 8] = [
    "Created",
    "Publish",
    "Activate",
    "Inactive",
    "Delete",
    "DSPublish",
    "SyncPublish",
    "SyncDelete",
];

/// What a `.private` file holds: algorithm, key, and the times.
pub(super) struct PrivateFile {
    pub(super) algorithm: Algorithm,
    pub(super) key: PrivateKey,
    pub(super) times: [Option<u64>; 8],
}

pub(super) fn parse_private_file(path: &Path, text: &str) -> Result<PrivateFile, Error> {
    let corrupt = |what: String| Error::Corrupt {
        path: path.to_path_buf(),
        what,
    };
    let mut fields: Vec<(&str, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        let (k, v) = line
            .split_once(':')
            .ok_or_else(|| corrupt(format!("line {}: not `Field: value`", i + 1)))?;
        fields.push((k.trim(), v.trim()));
    }
    let get = |k: &str| {
        fields
            .iter()
            .find(|(f, _)| f.eq_ignore_ascii_case(k))
            .map(|f| f.1)
    };
    let format =
        get("Private-key-format").ok_or_else(|| corrupt("no Private-key-format".into()))?;
    if !format.starts_with("v1.") {
        return Err(corrupt(format!("Private-key-format {format}, not v1.x")));
    }
    let alg = get("Algorithm").ok_or_else(|| corrupt("no Algorithm".into()))?;
    let algorithm = alg
        .split_ascii_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .and_then(Algorithm::from_number)
        .ok_or_else(|| corrupt(format!("unknown Algorithm {alg}")))?;
    let b64 = |k: &str| -> Result<Vec<u8>, Error> {
        let v = get(k).ok_or_else(|| corrupt(format!("no {k}")))?;
        let mut out = Vec::new();
        base64_decode(v.split_ascii_whitespace().map(str::as_bytes), &mut out)
            .map_err(|e| corrupt(format!("{k}: {e}")))?;
        Ok(out)
    };
    let key = match algorithm {
        // A key on a PKCS#11 token (a `.pkcs11` file): where it is, not what it is.
        _ if get("Pkcs11Id").is_some() => {
            let v = get("Pkcs11Id").unwrap_or_default();
            let id = (0..v.len())
                .step_by(2)
                .map(|i| v.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
                .collect::<Option<Vec<u8>>>()
                .filter(|id| !id.is_empty())
                .ok_or_else(|| corrupt(format!("bad Pkcs11Id {v:?}")))?;
            PrivateKey::Token(id)
        }
        Algorithm::EcdsaP256Sha256 | Algorithm::EcdsaP384Sha384 => {
            PrivateKey::Ecdsa(b64("PrivateKey")?)
        }
        Algorithm::Ed25519 => PrivateKey::Ed25519(
            b64("PrivateKey")?
                .try_into()
                .map_err(|_| corrupt("Ed25519 PrivateKey is not 32 octets".into()))?,
        ),
        Algorithm::RsaSha256 | Algorithm::RsaSha512 => PrivateKey::Rsa(RsaPrivate {
            modulus: b64("Modulus")?,
            public_exponent: b64("PublicExponent")?,
            private_exponent: b64("PrivateExponent")?,
            prime1: b64("Prime1")?,
            prime2: b64("Prime2")?,
            exponent1: b64("Exponent1")?,
            exponent2: b64("Exponent2")?,
            coefficient: b64("Coefficient")?,
        }),
        other => {
            return Err(Error::KeyFile(
                path.to_path_buf(),
                Box::new(Error::Unsupported(other)),
            ))
        }
    };
    let mut times = [None; 8];
    for (slot, field) in times.iter_mut().zip(TIME_FIELDS) {
        if let Some(v) = get(field) {
            *slot = Some(parse_time(v).ok_or_else(|| corrupt(format!("bad {field} time {v:?}")))?);
        }
    }
    Ok(PrivateFile {
        algorithm,
        key,
        times,
    })
}
