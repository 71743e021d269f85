//! Which CDS and CDNSKEY records the apex carries (RFC 7344, RFC 8078): Knot's
//! `cds-cdnskey-publish` modes and `cds-digest-type`.
//!
//! The keys that may have a CDS are the KSKs and CSKs in the DNSKEY RRset and in their
//! sync window ([`crate::keys::KeyMeta::has_cds`]): the current key, and during a
//! double-DS rollover the new key once its DNSKEY has been published for the DNSKEY TTL
//! plus the propagation delay (Knot's "ready"), beside the old key until its DNSKEY is
//! withdrawn. Of those the mode picks:
//!
//! - `none`: none.
//! - `rollover` (the default, as Knot's): only while a rollover is under way, that is while
//!   two keys may have one; both, since the old key's DS stays needed at the parent until
//!   its DNSKEY is withdrawn. Outside rollovers none: the first DS goes to the parent by
//!   hand (`shardns key ds`), as with Knot's first KSK.
//! - `always`: all of them, so in a steady state the current key's; during a rollover both,
//!   as `double-ds` (Knot's `always` shows the ready key alone, which signs the DNSKEY
//!   RRset there; our new key signs nothing before it is active, so a CDS set without the
//!   old key would tell the parent to drop a DS still in use).
//! - `double-ds`: all of them (up to two).
//! - `delete-dnssec`: the RFC 8078 §4 delete form only, CDS `0 0 0 00` and CDNSKEY
//!   `0 3 0 AA==`: the parent is asked to remove the DS, the first step to go insecure.

use crate::alg::DigestType;
use crate::digest::ds_rdata;
use core::fmt;
use shardns_wire::NameRef;

/// Which CDS and CDNSKEY records are published (Knot's `cds-cdnskey-publish`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CdsPublish {
    /// None.
    None,
    /// During a rollover only (the default).
    #[default]
    Rollover,
    /// Always, for the current key (both during a rollover).
    Always,
    /// Always, for the current key and a new one (up to two).
    DoubleDs,
    /// The delete form of RFC 8078 only.
    DeleteDnssec,
}

impl CdsPublish {
    /// Every mode, in the order of the docs.
    pub const ALL: [Self; 5] = [
        Self::None,
        Self::Rollover,
        Self::Always,
        Self::DoubleDs,
        Self::DeleteDnssec,
    ];

    /// The mode's name in the config (Knot's).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Rollover => "rollover",
            Self::Always => "always",
            Self::DoubleDs => "double-ds",
            Self::DeleteDnssec => "delete-dnssec",
        }
    }

    /// The mode of this name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }
}

impl fmt::Display for CdsPublish {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A zone's CDS settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CdsParams {
    /// Which records.
    pub publish: CdsPublish,
    /// The CDS digest: SHA-256 (the default) or SHA-384.
    pub digest: DigestType,
}

impl Default for CdsParams {
    fn default() -> Self {
        Self {
            publish: CdsPublish::default(),
            digest: DigestType::Sha256,
        }
    }
}

/// CDS rdata of the delete form (RFC 8078 §4): key tag 0, algorithm 0, digest type 0,
/// digest `00`.
pub const CDS_DELETE: [u8; 5] = [0, 0, 0, 0, 0];
/// CDNSKEY rdata of the delete form: flags 0, protocol 3, algorithm 0, key `AA==`.
pub const CDNSKEY_DELETE: [u8; 5] = [0, 0, 3, 0, 0];

/// Rdatas of one type (CDNSKEY or CDS).
pub type Rdatas = Vec<Vec<u8>>;

/// The apex's CDNSKEY and CDS rdatas, in that order, for the DNSKEY rdatas of the keys that
/// may have a CDS (`eligible`), under `p`. `None` if a DNSKEY is shorter than its fixed
/// fields.
pub fn apex_records<'a>(
    apex: NameRef<'_>,
    eligible: impl IntoIterator<Item = &'a [u8]>,
    p: &CdsParams,
) -> Option<(Rdatas, Rdatas)> {
    let keys: Vec<&[u8]> = eligible.into_iter().collect();
    let chosen: &[&[u8]] = match p.publish {
        CdsPublish::None => &[],
        CdsPublish::DeleteDnssec => {
            return Some((vec![CDNSKEY_DELETE.to_vec()], vec![CDS_DELETE.to_vec()]));
        }
        CdsPublish::Rollover if keys.len() < 2 => &[],
        CdsPublish::Rollover | CdsPublish::Always | CdsPublish::DoubleDs => &keys,
    };
    let mut cdnskey = Vec::with_capacity(chosen.len());
    let mut cds = Vec::with_capacity(chosen.len());
    for dnskey in chosen {
        cdnskey.push(dnskey.to_vec());
        cds.push(ds_rdata(apex, dnskey, p.digest)?);
    }
    Some((cdnskey, cds))
}

#[cfg(test)]
mod tests;
