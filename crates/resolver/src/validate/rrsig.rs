//! Checking one RRset's RRSIGs against a zone's keys (RFC 4035 §5.3), within the limits.
//!
//! Owns: [`verify_rrset`]: which RRSIGs are candidates (type covered, signer is the zone,
//! labels), the validity window with the clock skew allowance, which keys are tried (tag,
//! algorithm, zone bit, not revoked; at most `max_key_collisions` per RRSIG), and the EDE
//! of a failure. The signature itself is checked by `shardns_dnssec::verify_rrsig`.

use shardns_dnssec::key::{FLAG_REVOKE, FLAG_ZONE};
use shardns_dnssec::sign::RrsigFields;
use shardns_dnssec::{key_tag, verify_rrsig};
use shardns_wire::{Class, NameRef, RType};

use super::{algorithm_supported, Budget, Limits};
use crate::reply::Ede;

/// An RRset whose signature verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Verified {
    /// The RRSIG's Labels field (fewer than the owner's: a wildcard expansion).
    pub(crate) labels: u8,
    /// How long the RRset may be cached: the original TTL, and the seconds left until the
    /// signature expires.
    pub(crate) ttl_cap: u32,
}

/// Why an RRset did not verify: the EDE code (RFC 8914).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SigFail(pub(crate) u16);

/// Checks the RRset (`owner`, `rtype`, `rdatas`) against the RRSIGs among `sigs` (RRSIG
/// rdatas at the owner) with the DNSKEYs `keys` of `zone`. The first RRSIG that verifies
/// settles it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_rrset<'a>(
    owner: NameRef<'_>,
    rtype: RType,
    rdatas: &[&[u8]],
    sigs: impl Iterator<Item = &'a [u8]>,
    zone: NameRef<'_>,
    keys: &[Vec<u8>],
    limits: &Limits,
    budget: &mut Budget,
) -> Result<Verified, SigFail> {
    let now = limits.unix_now;
    let mut candidates = 0;
    let (mut expired, mut early, mut no_key, mut tried) = (false, false, false, false);
    for sig in sigs {
        let Some((f, _)) = RrsigFields::parse(sig) else {
            continue;
        };
        if f.type_covered != rtype
            || !f.signer.eq_ci(&zone)
            || usize::from(f.labels) > owner.label_count()
        {
            continue;
        }
        candidates += 1;
        if !algorithm_supported(f.algorithm) {
            continue;
        }
        if !f.valid_at(now) {
            // A little skew either way: a clock a bit behind or ahead is not an attack.
            // A tenth of the validity period, clamped (Unbound's val-sig-skew-min/max).
            let skew = (f.expiration.wrapping_sub(f.inception) / 10)
                .clamp(limits.skew_min, limits.skew_max.max(limits.skew_min));
            let skewed = f.valid_at(now.wrapping_add(skew))
                && f.inception.wrapping_sub(now) <= skew
                || f.valid_at(now.wrapping_sub(skew)) && now.wrapping_sub(f.expiration) <= skew;
            if !skewed {
                if now.wrapping_sub(f.expiration) as i32 > 0 {
                    expired = true;
                } else {
                    early = true;
                }
                continue;
            }
        }
        let mut matched = 0u8;
        for key in keys {
            if key.len() < 4 || key[3] != f.algorithm || key_tag(key) != f.key_tag {
                continue;
            }
            let flags = u16::from_be_bytes([key[0], key[1]]);
            if flags & FLAG_ZONE == 0 || flags & FLAG_REVOKE != 0 {
                continue;
            }
            if matched >= limits.max_key_collisions {
                break;
            }
            matched += 1;
            if budget.validations >= limits.max_validations {
                return Err(SigFail(Ede::DNSSEC_BOGUS));
            }
            budget.validations += 1;
            tried = true;
            if verify_rrsig(sig, owner, Class::IN, rtype, rdatas.iter().copied(), key).is_ok() {
                let left = f.expiration.wrapping_sub(now);
                let left = if (left as i32) < 0 { 0 } else { left };
                return Ok(Verified {
                    labels: f.labels,
                    ttl_cap: f.original_ttl.min(left.max(1)),
                });
            }
        }
        if matched == 0 {
            no_key = true;
        }
    }
    let code = if candidates == 0 {
        Ede::RRSIGS_MISSING
    } else if tried {
        Ede::DNSSEC_BOGUS
    } else if expired {
        Ede::SIGNATURE_EXPIRED
    } else if early {
        Ede::SIGNATURE_NOT_YET_VALID
    } else if no_key {
        Ede::DNSKEY_MISSING
    } else {
        Ede::DNSSEC_BOGUS
    };
    Err(SigFail(code))
}
