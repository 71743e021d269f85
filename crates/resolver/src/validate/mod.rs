//! DNSSEC validation (RFC 4033-4035, RFC 5155, RFC 6840): trust anchors, the key cache,
//! and the checks themselves (RRSIGs, NSEC and NSEC3 denials), as pure functions over
//! records. The cryptography is `shardns_dnssec`'s (aws-lc-rs underneath); nothing here signs,
//! hashes or verifies on its own.
//!
//! # Design
//!
//! **Where it sits.** Iteration (`iterate`) is unchanged in what it asks and follows. A frame
//! that must be validated (the client's question unless CD was set, and the DS and DNSKEY
//! questions validation itself asks) also keeps, while it reads its responses, the RRSIGs
//! of every RRset it accepts, the zone whose servers gave each RRset, and the NSEC/NSEC3
//! records (with their RRSIGs) of a denial or a wildcard answer. When the frame has its
//! outcome (after the response was accepted, before the answer goes out), the task judges
//! it (`iterate::secure`): every RRset not already validated in the cache needs the keys
//! of its zone (the RRSIG's signer, or for unsigned data the zone that answered).
//!
//! **Sub-queries.** The engine stays sans-I/O: when a zone's keys are not known, judging
//! returns *need (zone, DS)* or *need (zone, DNSKEY)* and the task pushes a frame for that
//! question on its stack, exactly as it does for a name server's address. That frame
//! iterates like any other (a DS question starts from the closest cut *above* the zone, as
//! DS lives in the parent), is judged in turn (a DS RRset needs the parent's keys: the chain
//! climbs to a trust anchor), and what it proved goes into the [`KeyCache`]:
//! `Keys` (the zone's validated DNSKEYs), `Ds` (validated DS records, DNSKEY still to
//! fetch), `Insecure` (a DS absence proven by NSEC/NSEC3 with the NS bit set, an Opt-Out
//! span, only unsupported algorithms or digests, or an insecure parent), or `Bogus` (with
//! its EDE, kept `bogus_ttl`). Then the frame below is judged again, now with the keys.
//! Each DS/DNSKEY question costs upstream queries from the task's `max_queries` budget;
//! once known, a zone's keys serve every resolution of every worker.
//!
//! **The cache.** Every cached set carries a [`Security`] (`Indeterminate` when cached by
//! iteration, then re-stamped by the judge with `Secure`, `Insecure` or `Bogus` and a TTL
//! no longer than its signatures' validity or, bogus, than `bogus_ttl`). The field fits in
//! the padding of the set (32 bytes before and after). The hit path
//! ([`crate::Cache::answer_cd`]) reads it while it copies the set out, under the same
//! shard lock: no signature is ever verified again for a hit and nothing is allocated.
//! With validation on, an `Indeterminate` set is a miss (the resolver validates it), a
//! `Bogus` one a SERVFAIL with its EDE, unless the client set CD. AD is reported
//! (`CacheAnswer::Hit::secure`, [`crate::Resolution::secure`]) only when every set of the
//! answer is `Secure`; the server sets it when the client set DO or AD.
//!
//! **Limits** (KeyTrap, CVE-2023-50387, and the NSEC3 variant, CVE-2023-50868): per
//! resolution at most `max_validations` signature checks and `max_nsec3_hashes` NSEC3
//! hashes; per RRSIG at most `max_key_collisions` keys with its tag and algorithm are
//! tried; NSEC3 with more than `max_nsec3_iterations` iterations is insecure (RFC 9276).
//! Over a limit the answer is bogus. Validation frames count against `max_queries` and
//! a depth bound of their own.
//!
//! Algorithms 5, 7, 8, 10, 13, 14, 15 are validated; a zone whose DS records name only
//! others (or only unknown digest types; SHA-1, SHA-256 and SHA-384 are known) is insecure
//! (RFC 6840 §5.2), and so is everything below a trust anchor with no usable record
//! (RFC 4035 §5.2). Not done yet: aggressive use of NSEC3 ranges, trust anchor updates
//! (RFC 5011). Logging bogus answers is the server's job (the EDE says why).
//!
//! **Aggressive NSEC (RFC 8198, `aggressive`).** After a secure NSEC denial, the verified
//! NSEC records and the zone's SOA (its signature checked) are kept per zone in canonical
//! order ([`NsecCache`]); a validating frame that misses the cache hands the kept range
//! before its name, and the one before the wildcard at the closest encloser, to the same
//! `check_denial` a fetched proof goes through. A proven NXDOMAIN or NODATA is the frame's
//! outcome, secure, without an upstream query (`Config::aggressive_nsec`, on by default).
//!
//! **DNSSEC records for DO clients.** Every cached set keeps, after its own data, the
//! DNSSEC records that came with it (`cache::set`): its RRSIGs, and for a negative entry
//! or a wildcard expansion the proof from the authority section (NSEC/NSEC3 records, their
//! RRSIGs, the SOA's RRSIGs), stored when the response is read and again when the set is
//! re-stamped. A hit writes them only for a client that set DO (with the set's remaining
//! TTL; a set lives no longer than its DNSSEC records); a resolution hands them over in
//! [`crate::Resolution::dnssec_answer`] and `dnssec_authority`. Nothing is verified again,
//! nothing is allocated on a hit, and `Set` is still 32 bytes.
//!
//! Owns: [`Security`], [`TrustAnchors`], the [`KeyCache`], and the checks (`rrsig`,
//! `denial`). Never: I/O, clocks (the unix time is passed in), cryptography of its own.

mod aggressive;
mod anchors;
mod denial;
mod keys;
mod rrsig;

#[cfg(test)]
mod tests;

pub(crate) use aggressive::{NsecCache, VerifiedRr};
pub use anchors::TrustAnchors;
pub(crate) use denial::{check_denial, check_wildcard, Denial, DenialKind, DenialRr};
pub(crate) use keys::{KeyCache, KeyEntry};
pub(crate) use rrsig::verify_rrset;

/// What DNSSEC validation made of an RRset or an answer (RFC 4033 §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Security {
    /// Not checked (yet), or validation is off.
    #[default]
    Indeterminate = 0,
    /// Provably not signed: no trust anchor above it, or below an insecure delegation.
    Insecure = 1,
    /// Signed, and the signatures chain to a trust anchor.
    Secure = 2,
    /// Should be signed, and is not, or not validly.
    Bogus = 3,
}

impl Security {
    /// The weaker of two: an answer is as secure as its least secure part.
    pub(crate) fn and(self, other: Security) -> Security {
        use Security::*;
        match (self, other) {
            (Bogus, _) | (_, Bogus) => Bogus,
            (Indeterminate, _) | (_, Indeterminate) => Indeterminate,
            (Insecure, _) | (_, Insecure) => Insecure,
            _ => Secure,
        }
    }
}

/// How a set is stamped when cached: its security, the EDE code of a bogus set, and the
/// longest TTL it may keep (its signatures' validity; the bogus TTL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) sec: Security,
    pub(crate) ede: u16,
    pub(crate) ttl_cap: u32,
}

impl Stamp {
    /// Cached by iteration, not checked.
    pub(crate) const UNCHECKED: Stamp = Stamp {
        sec: Security::Indeterminate,
        ede: 0,
        ttl_cap: u32::MAX,
    };
}

/// Per-resolution counters against KeyTrap-style zones.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Budget {
    /// Signature verifications so far.
    pub(crate) validations: u32,
    /// NSEC3 hashes so far.
    pub(crate) nsec3_hashes: u32,
}

/// The validation limits and clock, from the configuration and the driver.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Seconds since 1970, now.
    pub(crate) unix_now: u32,
    /// Clock skew allowed on either side of an RRSIG's validity, seconds: a tenth of its
    /// validity period, clamped to `skew_min..=skew_max` (as Unbound does).
    pub(crate) skew_min: u32,
    pub(crate) skew_max: u32,
    pub(crate) max_validations: u32,
    pub(crate) max_key_collisions: u8,
    pub(crate) max_nsec3_hashes: u32,
    pub(crate) max_nsec3_iterations: u16,
}

/// DNSSEC algorithms validated: RFC 8624 §3.1's MUST and RECOMMENDED for validation,
/// the SHA-1 ones (5, 7) included (a validator MUST validate them), Ed448 (16) not
/// (aws-lc-rs has no Ed448).
pub(crate) fn algorithm_supported(alg: u8) -> bool {
    matches!(alg, 5 | 7 | 8 | 10 | 13 | 14 | 15)
}

/// DS digest types understood: SHA-1 (accepted), SHA-256, SHA-384.
pub(crate) fn digest_supported(digest: u8) -> bool {
    matches!(digest, 1 | 2 | 4)
}
