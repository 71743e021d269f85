//! The shared record cache: positive and negative (RFC 2308) RRsets, sharded by name.
//!
//! Owns: [`Cache`] itself (its 64 shards and TTL bounds, the shard lock, statistics and
//! clearing), [`Rank`] and [`CacheStats`]. One slot holds every RRset cached at one name, so
//! a cache hit for a plain answer takes exactly one uncontended lock, held only while its
//! records are copied out. A lookup hashes the name as it was asked (the hash ignores case)
//! and compares it with the slot's lower-cased name; nothing is copied.
//!
//! Trust (RFC 2181 §5.4.1): every RRset carries a [`Rank`]; data of a lower rank never
//! replaces unexpired data of a higher rank (glue never overwrites an answer), and clients
//! are only answered from data of rank [`Rank::Answer`] or better.
//!
//! The rest, by concern:
//! - `set`: one cached RRset or negative entry and the encoding of its data, with the
//!   DNSSEC records (RRSIGs, NSEC/NSEC3 proofs) kept for clients that set DO.
//! - `shard`: a shard's slot array, its hash index, the trust rules on update and CLOCK
//!   eviction under the shard's byte budget.
//! - `render`: the client hit path, [`Cache::answer`], writing cached answers straight into
//!   a [`shardns_wire::MessageWriter`].
//! - `lookup`: what the resolver itself reads (records copied out, probes, visits).
//! - `insert`: caching RRsets and CNAMEs synthesised from DNAMEs.
//! - `negative`: NXDOMAIN and NODATA entries and their TTLs (RFC 2308).
//!
//! Never: I/O, clocks (`now` is passed in, milliseconds on the driver's monotonic clock),
//! a global lock, or allocation on the hit path.

use std::sync::MutexGuard;

use shardns_wire::name::hash_ci;
use shardns_wire::NameRef;

mod insert;
mod lookup;
mod negative;
mod render;
mod set;
mod shard;
mod stale;

#[cfg(test)]
mod tests;

pub(crate) use lookup::{DnssecRecords, Lookup, Probe};
pub(crate) use negative::{negative_ttl, Soa};
pub use render::CacheAnswer;
pub(crate) use set::DnssecRr;

use shard::{Shard, ShardInner};

const SHARDS: usize = 64;

/// Trust of cached data, lowest first (RFC 2181 §5.4.1, simplified).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// Additional-section data and glue; used only to reach servers.
    Additional = 1,
    /// The NS RRset of a referral (the parent's copy); used only to reach servers.
    Referral = 2,
    /// An answer without the AA bit (from a forwarder).
    Answer = 3,
    /// Authority-section data of an authoritative answer.
    AuthAuthority = 4,
    /// The answer section of an authoritative answer.
    AuthAnswer = 5,
}

/// What the cache holds, for the server's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Bytes in use, as charged against the memory bound.
    pub bytes: usize,
    /// Names with at least one entry.
    pub names: usize,
    /// RRsets and negative entries.
    pub rrsets: usize,
    /// Records in positive RRsets.
    pub records: usize,
    /// Shard lock acquisitions since the cache was made (reading these stats not counted).
    pub lock_acquisitions: u64,
    /// Names evicted under the memory bound.
    pub evictions: u64,
}

/// The shared cache. `Send + Sync`; put it in an `Arc` (the [`crate::Resolver`] does).
pub struct Cache {
    shards: Box<[Shard]>,
    shard_budget: usize,
    min_ttl: u32,
    max_ttl: u32,
    max_negative_ttl: u32,
    /// DNSSEC validation is on: the hit path answers only from checked sets (secure or
    /// insecure), answers bogus ones with SERVFAIL, and leaves unchecked ones to the
    /// resolver (unless the client set CD).
    pub(crate) validating: bool,
    /// How long past expiry sets are kept to be served stale (0: serve-stale off).
    pub(crate) stale_keep_ms: u64,
    /// Prefetch on: the hit path reports sets in the last tenth of their TTL.
    pub(crate) prefetch: bool,
}

/// A name as it was spelled, with its case-insensitive hash: what finds a slot. Nothing
/// is copied or lower-cased on a lookup; slots keep their names lower-cased and compare
/// without regard to case.
struct HashedName<'a> {
    wire: &'a [u8],
    hash: u64,
}

impl<'a> HashedName<'a> {
    #[inline]
    fn new(name: NameRef<'a>) -> Self {
        let wire = name.as_wire();
        Self {
            wire,
            hash: hash_ci(wire),
        }
    }
    fn shard(&self) -> usize {
        // Bits hashbrown uses neither for buckets (low bits) nor for tags (top 7 bits).
        ((self.hash >> 40) as usize) & (SHARDS - 1)
    }
}

impl Cache {
    /// A cache bounded to about `bytes` bytes, with TTLs clamped to `[min_ttl, max_ttl]`
    /// and negative TTLs to at most `max_negative_ttl` (seconds).
    pub fn new(bytes: usize, min_ttl: u32, max_ttl: u32, max_negative_ttl: u32) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            shard_budget: bytes / SHARDS,
            min_ttl,
            max_ttl: max_ttl.max(min_ttl),
            max_negative_ttl,
            validating: false,
            stale_keep_ms: 0,
            prefetch: false,
        }
    }

    fn lock(&self, key: &HashedName<'_>) -> MutexGuard<'_, ShardInner> {
        // A panic while holding a shard lock leaves consistent data (every update is
        // completed before anything can panic), so a poisoned lock is used as it is.
        let mut g = self.shards[key.shard()]
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        g.locks += 1;
        g
    }

    /// Sizes and counters summed over the shards.
    pub fn stats(&self) -> CacheStats {
        let mut s = CacheStats::default();
        for shard in self.shards.iter() {
            let g = shard.inner.lock().unwrap_or_else(|e| e.into_inner());
            s.bytes += g.bytes;
            s.names += g.names();
            s.rrsets += g.rrsets;
            s.records += g.records;
            s.lock_acquisitions += g.locks;
            s.evictions += g.evictions;
        }
        s
    }

    /// Shard lock acquisitions so far (for locks per query).
    pub fn lock_acquisitions(&self) -> u64 {
        self.stats().lock_acquisitions
    }

    /// Drops every name holding a bogus set. After the wall clock stepped, a bogus verdict
    /// may have been the old clock's (signatures not yet valid, or expired).
    pub(crate) fn forget_bogus(&self) {
        for shard in self.shards.iter() {
            shard
                .inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .forget_bogus();
        }
    }

    /// Drops every entry.
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            shard
                .inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
        }
    }
}
