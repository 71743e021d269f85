//! Aggressive use of the DNSSEC-validated cache (RFC 8198): NSEC records that proved a
//! denial securely are kept in canonical order per zone, with the zone's (verified) SOA,
//! so that a later question whose name falls inside a kept range is answered NXDOMAIN (or
//! NODATA) without asking. NSEC only, as Unbound does by default (NSEC3 ranges are hashes:
//! Unbound 1.17 does not use them aggressively either).
//!
//! Owns: [`NsecCache`] (stored by `iterate::secure` after a secure NSEC denial; read by a
//! validating frame on a cache miss) and [`Synthesized`]. What the kept records prove is
//! decided by `denial::check_denial`, the same check a fetched denial goes through: only
//! the range before the name, and the one before the wildcard at its closest encloser, are
//! handed to it. Sharded by zone, consulted only on the miss path; a full shard drops its
//! expired ranges, then everything.
//! Never: signature checks (only verified records are stored), I/O, clocks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use shardns_wire::name::hash_ci;
use shardns_wire::{Class, Name, NameRef, RType, Record};

use super::denial::{check_denial, common_labels, wildcard_of, Denial, DenialKind, DenialRr};
use super::{Budget, Limits};

const SHARDS: usize = 16;
/// NSEC records per shard before expired ones are dropped (then the shard is emptied).
const MAX_PER_SHARD: usize = 16_384;

/// A name ordered canonically (RFC 4034 §6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Canonical(Name);

impl Ord for Canonical {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.as_ref().canonical_cmp(&other.0.as_ref())
    }
}

impl PartialOrd for Canonical {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A verified RRset kept for synthesis: its RDATA (one record: an NSEC, or the SOA), its
/// RRSIGs, the TTL it came with and its expiry (ms, driver's clock).
#[derive(Clone, Debug)]
struct Kept {
    rdata: Vec<u8>,
    sigs: Vec<Vec<u8>>,
    ttl: u32,
    expires: u64,
}

#[derive(Default)]
struct ZoneRanges {
    soa: Option<Kept>,
    nsecs: BTreeMap<Canonical, Kept>,
}

/// Zone (lower case) -> its kept SOA and NSEC ranges.
#[derive(Default)]
pub(crate) struct NsecCache {
    shards: [Mutex<Shard>; SHARDS],
}

/// Zones keyed by their lower-cased wire name (looked up without allocating).
#[derive(Default)]
struct Shard {
    zones: HashMap<Box<[u8]>, ZoneRanges>,
    nsecs: usize,
}

/// A verified record handed to [`NsecCache::put`]: owner, RDATA, TTL, its RRSIGs' RDATA.
pub(crate) struct VerifiedRr<'a> {
    pub(crate) owner: NameRef<'a>,
    pub(crate) rdata: &'a [u8],
    pub(crate) ttl: u32,
    pub(crate) sigs: Vec<Vec<u8>>,
}

/// A denial made from kept ranges: NXDOMAIN or NODATA, the zone's SOA (TTL counted down
/// and capped by the ranges used), and the proof for DO clients (NSEC records, their
/// RRSIGs, the SOA's RRSIGs).
#[derive(Clone, Debug)]
pub(crate) struct Synthesized {
    pub(crate) nxdomain: bool,
    pub(crate) soa: Record,
    pub(crate) proof: Vec<Record>,
}

fn lower(name: NameRef<'_>) -> Name {
    let mut buf = [0u8; shardns_wire::name::MAX_NAME_LEN];
    let n = name.lowercase_into(&mut buf);
    Name::from_wire(&buf[..n]).unwrap_or_else(|_| name.to_name())
}

/// `name` lower-cased into `buf`, as a key of [`Shard::zones`].
fn zone_key<'b>(
    name: NameRef<'_>,
    buf: &'b mut [u8; shardns_wire::name::MAX_NAME_LEN],
) -> &'b [u8] {
    let n = name.lowercase_into(buf);
    &buf[..n]
}

fn record(owner: NameRef<'_>, rtype: RType, ttl: u32, rdata: &[u8]) -> Record {
    Record {
        owner: owner.to_name(),
        rtype,
        class: Class::IN,
        ttl,
        rdata: rdata.to_vec(),
    }
}

impl Kept {
    fn remaining(&self, now: u64) -> u32 {
        (self.expires.saturating_sub(now) / 1000) as u32
    }
}

impl NsecCache {
    fn shard(&self, zone: NameRef<'_>) -> std::sync::MutexGuard<'_, Shard> {
        let i = (hash_ci(zone.as_wire()) >> 32) as usize % SHARDS;
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `zone`'s SOA (verified, with its RRSIGs) and NSEC records (each verified, with
    /// its RRSIGs) for `ttl` seconds at most (each record's own TTL if shorter).
    pub(crate) fn put(
        &self,
        zone: NameRef<'_>,
        soa: VerifiedRr<'_>,
        nsecs: Vec<VerifiedRr<'_>>,
        ttl: u32,
        now: u64,
    ) {
        let expiry = |t: u32| now + u64::from(t.min(ttl)) * 1000;
        let mut buf = [0u8; shardns_wire::name::MAX_NAME_LEN];
        let key: Box<[u8]> = zone_key(zone, &mut buf).into();
        let mut g = self.shard(zone);
        if g.nsecs + nsecs.len() > MAX_PER_SHARD {
            let mut left = 0;
            for z in g.zones.values_mut() {
                z.nsecs.retain(|_, k| k.expires > now);
                left += z.nsecs.len();
            }
            g.zones.retain(|_, z| !z.nsecs.is_empty());
            g.nsecs = left;
            if g.nsecs + nsecs.len() > MAX_PER_SHARD {
                g.zones.clear();
                g.nsecs = 0;
            }
        }
        let Shard {
            zones,
            nsecs: count,
        } = &mut *g;
        let z = zones.entry(key).or_default();
        z.soa = Some(Kept {
            rdata: soa.rdata.to_vec(),
            ttl: soa.ttl,
            expires: expiry(soa.ttl),
            sigs: soa.sigs,
        });
        for n in nsecs {
            let kept = Kept {
                rdata: n.rdata.to_vec(),
                sigs: n.sigs,
                ttl: n.ttl,
                expires: expiry(n.ttl),
            };
            if z.nsecs.insert(Canonical(lower(n.owner)), kept).is_none() {
                *count += 1;
            }
        }
    }

    /// Forgets every kept range: their lifetimes were capped by signature validity as the
    /// wall clock read before it stepped.
    pub(crate) fn clear(&self) {
        for shard in &self.shards {
            let mut g = shard.lock().unwrap_or_else(|e| e.into_inner());
            g.zones.clear();
            g.nsecs = 0;
        }
    }

    /// The closest zone above `qname` (above its parent for a DS question, which the
    /// parent answers) with kept ranges, and what they prove about (`qname`, `qtype`).
    pub(crate) fn synthesize(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        limits: &Limits,
    ) -> Option<Synthesized> {
        let top = qname.label_count() - usize::from(qtype == RType::DS && !qname.is_root());
        let mut buf = [0u8; shardns_wire::name::MAX_NAME_LEN];
        for labels in (0..=top).rev() {
            let zone = qname.suffix(labels);
            let g = self.shard(zone);
            let Some(z) = g.zones.get(zone_key(zone, &mut buf)) else {
                continue;
            };
            // The closest zone with ranges decides: a zone above it knows nothing below.
            return synthesize_in(z, zone, qname, qtype, now, limits);
        }
        None
    }
}

/// The live NSEC at or before `name` in canonical order (the last one wraps around).
fn before<'z>(z: &'z ZoneRanges, name: NameRef<'_>, now: u64) -> Option<(&'z Name, &'z Kept)> {
    let key = Canonical(name.to_name());
    z.nsecs
        .range(..=key)
        .next_back()
        .or_else(|| z.nsecs.iter().next_back())
        .filter(|(_, k)| k.expires > now)
        .map(|(o, k)| (&o.0, k))
}

fn synthesize_in(
    z: &ZoneRanges,
    zone: NameRef<'_>,
    qname: NameRef<'_>,
    qtype: RType,
    now: u64,
    limits: &Limits,
) -> Option<Synthesized> {
    let soa = z.soa.as_ref().filter(|s| s.expires > now)?;
    let (owner, first) = before(z, qname, now)?;
    let mut used: Vec<(&Name, &Kept)> = vec![(owner, first)];
    // The wildcard at the closest encloser: its range (or itself) is needed too.
    let next = NameRef::from_wire_prefix(&first.rdata).ok()?.0;
    let ce = common_labels(qname, owner.as_ref()).max(common_labels(qname, next));
    if ce >= zone.label_count() && ce < qname.label_count() {
        let w = wildcard_of(qname.suffix(ce))?;
        if let Some((o, k)) = before(z, w.as_ref(), now) {
            if !o.as_ref().eq_ci(&owner.as_ref()) {
                used.push((o, k));
            }
        }
    }
    let rrs: Vec<DenialRr<'_>> = used
        .iter()
        .map(|(o, k)| DenialRr {
            owner: o.as_ref(),
            rtype: RType::NSEC,
            rdata: &k.rdata,
        })
        .collect();
    // NSEC needs no hashes: the budget is not spent.
    let mut budget = Budget::default();
    let mut proven = |kind| {
        matches!(
            check_denial(&rrs, qname, kind, zone, limits, &mut budget),
            Denial::Proven { .. }
        )
    };
    let nxdomain = if proven(DenialKind::NxDomain) {
        true
    } else if proven(DenialKind::NoData(qtype)) {
        false
    } else {
        return None;
    };
    // RFC 8198 §5.4: no longer than the SOA's negative TTL nor the ranges used.
    let minimum = soa
        .rdata
        .len()
        .checked_sub(4)
        .and_then(|i| soa.rdata.get(i..))
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let ttl = used
        .iter()
        .map(|(_, k)| k.remaining(now))
        .fold(soa.remaining(now).min(minimum).min(soa.ttl), u32::min);
    if ttl == 0 {
        return None;
    }
    let mut proof = Vec::new();
    for (o, k) in &used {
        proof.push(record(o.as_ref(), RType::NSEC, ttl, &k.rdata));
        for s in &k.sigs {
            proof.push(record(o.as_ref(), RType::RRSIG, ttl, s));
        }
    }
    for s in &soa.sigs {
        proof.push(record(zone, RType::RRSIG, ttl, s));
    }
    Some(Synthesized {
        nxdomain,
        soa: record(zone, RType::SOA, ttl, &soa.rdata),
        proof,
    })
}
