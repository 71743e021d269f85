//! DNSSEC signing for shardns: a zone's records in, the signed zone's records out.
//!
//! - [`nsec3`] hashes owner names (RFC 5155 §5) into caller buffers; [`digest`] computes key
//!   tags and DS digests.
//! - [`key`] holds a [`SigningKey`] for every algorithm we sign with (ECDSA P-256, the
//!   default, and P-384, Ed25519, RSA/SHA-256 and RSA/SHA-512) and verifies signatures.
//! - [`sign`] puts an RRset in canonical form (RFC 4034 §6) and makes or checks its RRSIG.
//! - [`chain`] builds the NSEC or NSEC3 chain of a zone and signs every authoritative RRset
//!   on all cores ([`sign_zone`]).
//! - [`keys`] is the key directory: BIND-format key files, generated keys, timing metadata,
//!   and which keys sign at a given time ([`keys::zone_keys`]).
//! - [`list`] holds records in compact form ([`RecordList`]: one buffer, offsets), what
//!   [`sign_list`] signs; [`reuse`] keeps the signatures of a previous version for the
//!   RRsets that did not change (incremental re-signing).
//! - [`cds`] picks the apex's CDS and CDNSKEY records by the zone's mode (Knot's); [`multi`]
//!   adds the other signers' key records of a multi-signer zone (RFC 8901).
//! - [`pkcs11`] keeps keys on a PKCS#11 token (an HSM): made, kept and used there.
//! - [`offline`] is an offline KSK (Knot's KSR/SKR): the ZSK timeline asked for, the
//!   DNSKEY RRsets signed by the KSK elsewhere, and their checks.
//! - [`roll`] decides the times of ZSK (pre-publication) and KSK/CSK (double-DS) rollovers.
//!
//! Sans-I/O except [`keys`], which reads and writes key files, and [`pkcs11`], which talks
//! to a token: no sockets, no clocks (times
//! are passed in), no logging; the signer's threads are scoped and joined before
//! [`sign_zone`] returns. No cryptography of our own:
//! aws-lc-rs signs, verifies, hashes and generates keys.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod alg;
pub mod cds;
pub mod chain;
pub mod digest;
mod error;
pub mod key;
pub mod keys;
pub mod list;
pub mod multi;
pub mod nsec3;
pub mod offline;
pub mod pkcs11;
pub mod reuse;
pub mod roll;
pub mod sign;

#[cfg(test)]
mod testutil;

pub use alg::{Algorithm, DigestType};
pub use cds::{CdsParams, CdsPublish};
pub use chain::{
    sign_list, sign_zone, Denial, Jitter, Policy, SignParams, SignedList, SignedZone, ZoneKey,
};
pub use digest::{ds_rdata, key_tag};
pub use error::Error;
pub use key::{PrivateKey, SigningKey};
pub use keys::{KeyMeta, KeyStore, Role, StoredKey};
pub use list::{Adopted, RecordList, Rr, BLOCK};
pub use multi::{DnskeyManagement, Foreign};
pub use nsec3::{nsec3_hash, Nsec3Params};
pub use reuse::Previous;
pub use sign::verify_rrsig;
