//! The key cache: what validation learned about each zone's keys, shared by all workers
//! (Unbound's key cache). Sharded like the record cache; consulted only on the miss path.
//!
//! Owns: [`KeyCache`] and [`KeyEntry`]. An entry expires with the records it came from
//! (bogus ones after `bogus_ttl`); a full shard drops its expired entries, then everything.
//! Never: I/O, clocks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use shardns_wire::name::hash_ci;
use shardns_wire::{Name, NameRef};

const SHARDS: usize = 16;
/// Zones per shard before expired entries are dropped.
const MAX_PER_SHARD: usize = 4096;

/// What is known about one zone's keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeyEntry {
    /// The zone's DNSKEY RRset validated: the zone keys (DNSKEY rdata) to check its data.
    Keys(Arc<[Vec<u8>]>),
    /// Its DS RRset validated (the supported records); the DNSKEY RRset not fetched yet.
    Ds(Arc<[Vec<u8>]>),
    /// Provably unsigned (or signed only with algorithms we do not validate).
    Insecure,
    /// Validation of the zone's keys failed: everything in it is bogus, with this EDE code.
    Bogus(u16),
    /// A secure denial of DS at a name that is no delegation point: no zone starts here.
    /// Data claiming to be signed by it is bogus; unsigned data below it belongs to a zone
    /// further down, or to the signed zone above (and then is bogus).
    NoCut,
}

/// Zone name (lower case) -> (entry, expiry in ms on the driver's clock).
#[derive(Default)]
pub(crate) struct KeyCache {
    shards: [Mutex<HashMap<Name, (KeyEntry, u64)>>; SHARDS],
}

fn lower(name: NameRef<'_>) -> Name {
    let mut buf = [0u8; shardns_wire::name::MAX_NAME_LEN];
    let n = name.lowercase_into(&mut buf);
    Name::from_wire(&buf[..n]).unwrap_or_else(|_| name.to_name())
}

impl KeyCache {
    fn shard(
        &self,
        name: NameRef<'_>,
    ) -> std::sync::MutexGuard<'_, HashMap<Name, (KeyEntry, u64)>> {
        let i = (hash_ci(name.as_wire()) >> 32) as usize % SHARDS;
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live entry of `zone`.
    pub(crate) fn get(&self, zone: NameRef<'_>, now: u64) -> Option<KeyEntry> {
        let key = lower(zone);
        let g = self.shard(zone);
        let (entry, expires) = g.get(&key)?;
        (*expires > now).then(|| entry.clone())
    }

    /// Drops every bogus entry (the wall clock stepped: the verdict may have been the old
    /// clock's).
    pub(crate) fn forget_bogus(&self) {
        for shard in &self.shards {
            let mut g = shard.lock().unwrap_or_else(|e| e.into_inner());
            g.retain(|_, (entry, _)| !matches!(entry, KeyEntry::Bogus(_)));
        }
    }

    /// Remembers `entry` for `zone` for `ttl` seconds.
    pub(crate) fn put(&self, zone: NameRef<'_>, entry: KeyEntry, ttl: u32, now: u64) {
        let key = lower(zone);
        let mut g = self.shard(zone);
        if g.len() >= MAX_PER_SHARD && !g.contains_key(&key) {
            g.retain(|_, (_, exp)| *exp > now);
            if g.len() >= MAX_PER_SHARD {
                g.clear();
            }
        }
        g.insert(key, (entry, now + u64::from(ttl.max(1)) * 1000));
    }
}
