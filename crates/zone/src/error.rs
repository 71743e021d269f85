//! [`Error`], the one error of this crate, and [`Diag`], the place in a zone file that its
//! [`Error::Invalid`] (and the scanner's warnings) point at.
//!
//! A leaf: it names no other module of the crate, so that every one of them can return it
//! without an import circle.

use shardns_wire::{Name, Rcode};
use std::fmt;
use std::path::PathBuf;

/// A diagnostic tied to a place in a zone file; prints as `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diag {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based; 0 when the problem is the zone as a whole).
    pub line: u32,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

/// Why a zone was rejected, a catalog cannot be used, or a transfer (or an SOA query)
/// failed. The version being served is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    // Zone files and the checks every zone must pass (`scan`, `db`, `load`, `update`).
    /// A zone that was rejected, with every error found, in file order.
    Invalid {
        /// The errors.
        errors: Vec<Diag>,
    },

    // Catalog zones (`catalog`).
    /// No TXT at `version.<catalog>` (RFC 9432 §4.1).
    NoVersion,
    /// A version the consumer does not know (only "2" is).
    BadVersion(String),
    /// More than one version record.
    ManyVersions(usize),
    /// The same member zone under two member IDs (§4.2: a member zone is listed once).
    Duplicate {
        /// The member zone.
        zone: Name,
        /// The two IDs.
        ids: [String; 2],
    },
    /// The zone is a stand-in (never transferred or expired): nothing to read.
    Unavailable,

    // Incoming transfers (`xfr::incoming`).
    /// Not a DNS message, or not the answer to our query (ID, QR, opcode, question).
    Malformed(String),
    /// The primary answered with an error.
    Rcode(Rcode),
    /// The answer is about another zone (its first record is not our apex's SOA).
    WrongZone(String),
    /// TC set on an answer over TCP.
    Truncated,
    /// The closing SOA's serial differs from the opening one's.
    SerialMismatch {
        /// The opening SOA's serial.
        first: u32,
        /// The closing one's.
        last: u32,
    },
    /// More than the transfer limits allow (what, and the limit).
    Limit(&'static str, u64),
    /// An IXFR that does not apply to our version (fall back to AXFR).
    Inconsistent(String),
    /// Records after the closing SOA.
    AfterEnd,
    /// The answer ended before the closing SOA (the primary stopped mid-transfer).
    Unfinished,
    /// The zone transferred fails the checks every zone must pass.
    InvalidTransfer {
        /// The errors.
        errors: Vec<Diag>,
    },

    /// Wire data that could not be read, or an answer not signed as it must be (a TSIG
    /// error of `shardns_wire`).
    Wire(shardns_wire::Error),

    // Signing an update's change (`update::sign`).
    /// The change cannot be signed incrementally, and why.
    Resign(ResignKind),
}

impl Error {
    /// The diagnostics of a rejected zone ([`Error::Invalid`], [`Error::InvalidTransfer`]);
    /// empty for any other error.
    pub fn diagnostics(&self) -> &[Diag] {
        match self {
            Self::Invalid { errors } | Self::InvalidTransfer { errors } => errors,
            _ => &[],
        }
    }

    /// True if an AXFR may succeed where this IXFR failed: the primary refused or does not
    /// implement IXFR, or its answer does not apply to our version (RFC 1995 §4 allows a
    /// client to fall back to AXFR).
    pub fn retry_with_axfr(&self) -> bool {
        matches!(
            self,
            Self::Rcode(_)
                | Self::Inconsistent(_)
                | Self::WrongZone(_)
                | Self::InvalidTransfer { .. }
        )
    }

    /// True for an update's change that cannot be signed incrementally but will be if the
    /// new zone is signed whole ([`ResignKind::needs_full_signing`]).
    pub fn needs_full_signing(&self) -> bool {
        matches!(self, Self::Resign(k) if k.needs_full_signing())
    }

    /// A rejected zone as the failure of the transfer that brought it.
    pub(crate) fn transferred(self) -> Self {
        match self {
            Self::Invalid { errors } => Self::InvalidTransfer { errors },
            other => other,
        }
    }
}

/// The diagnostics, one per line.
fn lines(f: &mut fmt::Formatter<'_>, errors: &[Diag]) -> fmt::Result {
    for (i, d) in errors.iter().enumerate() {
        if i > 0 {
            f.write_str("\n")?;
        }
        write!(f, "{d}")?;
    }
    Ok(())
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid { errors } => lines(f, errors),
            Self::NoVersion => write!(f, "no version property (TXT at version.<catalog>)"),
            Self::BadVersion(v) => write!(f, "version {v:?} is not supported (only \"2\")"),
            Self::ManyVersions(n) => write!(f, "{n} version records (one expected)"),
            Self::Duplicate { zone, ids } => write!(
                f,
                "member zone {zone} is listed twice, as {} and {}",
                ids[0], ids[1]
            ),
            Self::Unavailable => write!(f, "the catalog zone has no version to read"),
            Self::Malformed(m) => write!(f, "malformed answer: {m}"),
            Self::Rcode(r) => write!(f, "the primary answered {r}"),
            Self::WrongZone(m) => write!(f, "wrong zone: {m}"),
            Self::Truncated => f.write_str("truncated answer (TC) over TCP"),
            Self::SerialMismatch { first, last } => write!(
                f,
                "the closing SOA has serial {last}, the opening one {first}"
            ),
            Self::Limit(what, n) => write!(f, "more than {n} {what} (transfer limit)"),
            Self::Inconsistent(m) => write!(f, "IXFR does not apply: {m}"),
            Self::AfterEnd => f.write_str("records after the closing SOA"),
            Self::Unfinished => f.write_str("the transfer ended before the closing SOA"),
            Self::InvalidTransfer { errors } => {
                f.write_str("the zone transferred is not valid:\n")?;
                lines(f, errors)
            }
            Self::Wire(e) => write!(f, "{e}"),
            Self::Resign(k) => write!(f, "{k}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
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

/// Why a change cannot be signed incrementally ([`Error::Resign`]; `update::sign`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResignKind {
    /// The zone is not signed, or not with `params.denial` (NSEC or NSEC3, its
    /// parameters, opt-out): sign it whole.
    NotSigned,
    /// The zone's DNSKEY, CDS or CDNSKEY RRsets (records or TTL), or the keys its SOA and
    /// DNSKEY RRsets are signed with, are not those `keys` and `params` give: sign whole.
    Keys,
    /// The new SOA's TTL or MINIMUM moves the TTL of every NSEC or NSEC3 record: sign whole.
    DenialTtl,
    /// The change was not read against this version of the zone (another SOA).
    Stale,
    /// A new name's NSEC3 hash is another name's (RFC 5155 §7.1: change the salt).
    Nsec3Collision(Name, Name),
    /// A key failed to sign (the signer's message).
    Key(String),
}

impl ResignKind {
    /// True when signing the new zone whole ([`shardns_dnssec::sign_list`]) will do.
    pub fn needs_full_signing(&self) -> bool {
        matches!(self, Self::NotSigned | Self::Keys | Self::DenialTtl)
    }
}

impl fmt::Display for ResignKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSigned => f.write_str("the zone is not signed the way it is to be signed"),
            Self::Keys => f.write_str("the zone is not signed with these keys"),
            Self::DenialTtl => f.write_str("the new SOA changes the TTL of the denial chain"),
            Self::Stale => f.write_str("the change was read against another version"),
            Self::Nsec3Collision(a, b) => {
                write!(f, "{a} and {b} have the same NSEC3 hash: change the salt")
            }
            Self::Key(e) => write!(f, "signing failed: {e}"),
        }
    }
}
