//! keys::duty -- what each of a zone's keys does at a given time: in the DNSKEY RRset,
//! signing the key RRsets or the rest, CDS published.

use super::{KeyMeta, Role, StoredKey};
use crate::chain::ZoneKey;

/// The keys of `keys` to sign with at `now`, and what each does: published keys are in
/// the DNSKEY RRset, active ones sign by role, CDS and CDNSKEY are published for those in
/// their sync window and in the DNSKEY RRset ([`KeyMeta::has_cds`]; which of them the
/// zone shows is the [`crate::cds::CdsPublish`] mode's choice). Where an algorithm has an
/// active KSK but no active ZSK or CSK, its KSKs sign the whole zone, as `dnssec-signzone` does with KSKs
/// only, so that every RRset has a signature of each algorithm (RFC 4035 §2.2). A key that
/// signs while its DNSKEY is not published ([`KeyMeta::signs`]: an algorithm rollover)
/// signs as an active one.
pub fn zone_keys(keys: &[StoredKey], now: u64) -> Vec<ZoneKey<'_>> {
    keys.iter()
        .filter_map(|k| {
            let d = duty(&k.meta, keys.iter().map(|k| &k.meta), now);
            (d.dnskey || d.cds || d.signs_keys || d.signs_zone).then_some(ZoneKey {
                key: &k.key,
                dnskey: d.dnskey,
                signs_keys: d.signs_keys,
                signs_zone: d.signs_zone,
                cds: d.cds,
            })
        })
        .collect()
}

/// What a key does in the signed zone at a given time ([`duty`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Duty {
    /// In the DNSKEY RRset.
    pub dnskey: bool,
    /// Signs the DNSKEY, CDS and CDNSKEY RRsets.
    pub signs_keys: bool,
    /// Signs the other RRsets.
    pub signs_zone: bool,
    /// CDS and CDNSKEY are published for it.
    pub cds: bool,
}

/// What `k`, one of the zone's keys `all`, does at `now` (the rules of [`zone_keys`]).
pub fn duty<'a>(k: &KeyMeta, all: impl Iterator<Item = &'a KeyMeta>, now: u64) -> Duty {
    let active = k.signs(now);
    let mut zsk_active = false;
    if active && k.role == Role::Ksk {
        let mut all = all;
        zsk_active = all.any(|o| o.algorithm == k.algorithm && o.signs(now) && o.role != Role::Ksk);
    }
    Duty {
        dnskey: k.is_published(now),
        signs_keys: active && k.role != Role::Zsk,
        signs_zone: active && (k.role != Role::Ksk || !zsk_active),
        cds: k.has_cds(now),
    }
}
