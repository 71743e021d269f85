//! [`Error`], the one error of this crate, and [`RollKind`], which one of its variants
//! carries (here, not in `roll`, so that this module stays a leaf and every other module
//! can return the error without an import circle).

use crate::alg::Algorithm;
use core::fmt;
use shardns_wire::Name;
use std::io;
use std::path::PathBuf;

/// Which keys a rollover replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RollKind {
    /// The zone-signing key, by pre-publication.
    Zsk,
    /// The key-signing key, or the combined signing key, by double-DS.
    Ksk,
}

impl fmt::Display for RollKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Zsk => "ZSK",
            Self::Ksk => "KSK/CSK",
        })
    }
}

/// Why a key could not be made, loaded or used, a zone signed, a rollover started, the key
/// directory read, or an RRSIG verified. A failed signing leaves the caller serving the
/// previous version.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    // Keys (`key`).
    /// The algorithm cannot be used for this (see [`Algorithm::can_sign`]).
    Unsupported(Algorithm),
    /// aws-lc-rs rejected the key material (wrong length, not on the curve, public and private
    /// parts that do not match, an RSA modulus outside 2048..=4096 bits, ...).
    Rejected(String),
    /// The system random number generator failed.
    Random,
    /// A PKCS#11 module or token that failed (cannot load, no such token, wrong PIN, a key
    /// not there, a signature refused): what and why.
    Token(String),

    // Signing a zone (`chain`).
    /// No SOA record at the apex, or more than one.
    Soa,
    /// A record whose owner is not at or below the apex.
    OutOfZone(Name),
    /// No key signs the key RRsets (`true`) or the rest of the zone (`false`).
    NoSigningKey {
        /// Which role is missing: the key RRsets' signer.
        for_keys: bool,
    },
    /// Two names with the same NSEC3 hash: choose another salt (RFC 5155 §7.1).
    Nsec3Collision(Name, Name),
    /// An NSEC3 salt longer than 255 octets.
    Nsec3Salt,
    /// A key failed to sign: the key's error ([`Error::Unsupported`], [`Error::Rejected`]
    /// or [`Error::Random`]).
    Signing(Box<Error>),

    // Rollovers (`roll`).
    /// No active key of the kind to replace (a CSK zone has no ZSK).
    NoKey(RollKind),
    /// A rollover of the kind is under way: the key of this tag has events to come.
    InProgress(RollKind, u16),
    /// No new key is waiting for its DS at the parent (with this tag, if one was named).
    NothingToConfirm(Option<u16>),

    // The key directory (`keys`).
    /// The directory does not exist.
    Missing(PathBuf),
    /// The path exists but is not a directory.
    NotADirectory(PathBuf),
    /// A directory or file that could not be read or written.
    Io(PathBuf, io::Error),
    /// A key file that does not parse, or whose parts disagree.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A key file for `zone` whose DNSKEY belongs to `found`.
    WrongZone {
        /// The file.
        path: PathBuf,
        /// The zone asked for.
        zone: Name,
        /// The owner of its DNSKEY.
        found: Name,
    },
    /// Key material in this file (or directory) that aws-lc-rs refused, or an algorithm we
    /// cannot use: the key's error.
    KeyFile(PathBuf, Box<Error>),

    // Verifying an RRSIG (`sign`).
    /// The RRSIG or DNSKEY rdata is malformed.
    MalformedRrsig,
    /// The RRSIG covers another type than the RRset's.
    TypeCovered,
    /// The DNSKEY's algorithm or key tag is not the RRSIG's, or it is not a zone key
    /// (RFC 4035 §5.3.1).
    WrongKey,
    /// An algorithm this crate cannot verify.
    UnknownAlgorithm(u8),
    /// The Labels field is larger than the owner's label count (RFC 4035 §5.3.1).
    Labels,
    /// The signature does not match.
    BadSignature,

    /// Wire data or presentation-format text that could not be read.
    Wire(shardns_wire::Error),

    // An offline KSK's requests and responses (`offline`).
    /// A KSR or SKR that is malformed, does not match the keys, or does not verify: why.
    Offline(String),
}

impl Error {
    /// A key's error as the failure to sign a zone (printed as "signing failed: ...").
    pub(crate) fn signing(self) -> Self {
        Self::Signing(Box::new(self))
    }

    /// A key's error as the failure of the key in file `path`.
    pub(crate) fn in_file(self, path: PathBuf) -> Self {
        Self::KeyFile(path, Box::new(self))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(a) => write!(f, "algorithm {a} is not supported for signing"),
            Self::Rejected(why) => write!(f, "key rejected: {why}"),
            Self::Random => f.write_str("the system random number generator failed"),
            Self::Token(why) => f.write_str(why),
            Self::Soa => f.write_str("the zone needs exactly one SOA record at its apex"),
            Self::OutOfZone(n) => write!(f, "{n} is not in the zone"),
            Self::NoSigningKey { for_keys: true } => {
                f.write_str("no active key signs the DNSKEY RRset (KSK or CSK)")
            }
            Self::NoSigningKey { for_keys: false } => {
                f.write_str("no active key signs the zone (ZSK or CSK)")
            }
            Self::Nsec3Collision(a, b) => {
                write!(f, "{a} and {b} have the same NSEC3 hash: change the salt")
            }
            Self::Nsec3Salt => f.write_str("NSEC3 salt longer than 255 octets"),
            Self::Signing(e) => write!(f, "signing failed: {e}"),
            Self::NoKey(RollKind::Zsk) => {
                f.write_str("no active ZSK to replace (a zone signed by a CSK rolls it with --ksk)")
            }
            Self::NoKey(k) => write!(f, "no active {k} to replace"),
            Self::InProgress(k, tag) => write!(
                f,
                "a {k} rollover is under way (key {tag} has events to come; `shardns key list`)"
            ),
            Self::NothingToConfirm(Some(tag)) => {
                write!(
                    f,
                    "key {tag} is not a new key waiting for its DS at the parent"
                )
            }
            Self::NothingToConfirm(None) => {
                f.write_str("no new key is waiting for its DS at the parent")
            }
            Self::Missing(p) => write!(f, "key directory {} does not exist", p.display()),
            Self::NotADirectory(p) => write!(f, "{} is not a directory", p.display()),
            Self::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Self::Corrupt { path, what } => write!(f, "{}: {what}", path.display()),
            Self::WrongZone { path, zone, found } => {
                write!(f, "{}: a key for {found}, not for {zone}", path.display())
            }
            Self::KeyFile(p, e) => write!(f, "{}: {e}", p.display()),
            Self::MalformedRrsig => f.write_str("malformed RRSIG or DNSKEY"),
            Self::TypeCovered => f.write_str("RRSIG covers another type"),
            Self::WrongKey => f.write_str("DNSKEY does not match the RRSIG"),
            Self::UnknownAlgorithm(a) => write!(f, "unsupported algorithm {a}"),
            Self::Labels => f.write_str("RRSIG labels exceed the owner's"),
            Self::BadSignature => f.write_str("signature does not verify"),
            Self::Wire(e) => write!(f, "{e}"),
            Self::Offline(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(_, e) => Some(e),
            Self::Signing(e) | Self::KeyFile(_, e) => Some(&**e),
            Self::Wire(e) => Some(e),
            _ => None,
        }
    }
}

impl From<shardns_wire::Error> for Error {
    fn from(e: shardns_wire::Error) -> Self {
        Self::Wire(e)
    }
}
