//! [`ZoneSet`]: the zones a server answers for, and which of them a query name falls in.
//!
//! Built for many zones (a hosting provider's hundreds of thousands): building a set is
//! linear in the number of zones, and changing a few zones ([`ZoneSet::update`]) makes a new
//! set that shares everything it did not change with the old one. The apexes are spread over
//! [`SHARDS`] hash tables, each behind its own `Arc`; an update copies only the shards its
//! zones fall in, so one zone's new version costs a copy of about `len / SHARDS` entries,
//! whatever the number of zones. Readers are unaffected: a set never changes once built.

use super::Zone;
use shardns_wire::name::eq_ci;
use shardns_wire::{Name, NameRef};
use std::sync::Arc;

/// Hash tables the apexes are spread over (a power of two).
pub const SHARDS: usize = 256;
/// Most labels a name has (a name of 255 octets has at most 127 labels, plus the root).
const MAX_DEPTH: usize = 128;

/// One shard: an open-addressing table (linear probing, at most half full) of the apex
/// hash and the zone, 16 bytes a slot. A lookup reads one slot's cache line, then the zone;
/// zones whose apexes hash alike sit in the same probe run and are told apart by name.
#[derive(Debug, Clone, Default)]
struct Shard {
    slots: Box<[Option<Entry>]>,
    len: usize,
}

#[derive(Debug, Clone)]
struct Entry {
    hash: u64,
    zone: Arc<Zone>,
}

impl Shard {
    /// Index of the zone at `apex` (whose hash is `hash`); counts name comparisons.
    #[inline]
    fn position(&self, hash: u64, apex: &[u8], comparisons: &mut u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let e = self.slots[i].as_ref()?;
            if e.hash == hash {
                *comparisons += 1;
                // A small zone is read whole now, so the comparison's and the answer's
                // loads of its data wait on one round of overlapping misses.
                e.zone.warm();
                if eq_ci(e.zone.apex_wire(), apex) {
                    return Some(i);
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn get(&self, hash: u64, apex: &[u8]) -> Option<&Arc<Zone>> {
        let i = self.position(hash, apex, &mut 0)?;
        self.slots[i].as_ref().map(|e| &e.zone)
    }

    /// Puts `zone` in, replacing the zone at the same apex; true if it was not there.
    fn put(&mut self, hash: u64, zone: Arc<Zone>, comparisons: &mut u64) -> bool {
        if let Some(i) = self.position(hash, zone.apex_wire(), comparisons) {
            self.slots[i] = Some(Entry { hash, zone });
            return false;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.place(Entry { hash, zone });
        self.len += 1;
        true
    }

    fn place(&mut self, e: Entry) {
        let mask = self.slots.len() - 1;
        let mut i = e.hash as usize & mask;
        while self.slots[i].is_some() {
            i = (i + 1) & mask;
        }
        self.slots[i] = Some(e);
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(8);
        let old = std::mem::replace(&mut self.slots, (0..size).map(|_| None).collect());
        for e in old.into_vec().into_iter().flatten() {
            self.place(e);
        }
    }

    /// Takes out the zone at `apex`; true if it was there. The entries after it in its
    /// probe run move back (no tombstones, so lookups never probe further than they must).
    fn remove(&mut self, hash: u64, apex: &[u8], comparisons: &mut u64) -> bool {
        let Some(mut hole) = self.position(hash, apex, comparisons) else {
            return false;
        };
        self.slots[hole] = None;
        self.len -= 1;
        let mask = self.slots.len() - 1;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let Some(e) = &self.slots[j] else {
                return true;
            };
            // The entry at j may move to the hole unless its home lies cyclically in
            // (hole, j]: then a lookup starting from home would not pass the hole.
            let home = e.hash as usize & mask;
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
        }
    }

    fn zones(&self) -> impl Iterator<Item = &Arc<Zone>> + '_ {
        self.slots.iter().flatten().map(|e| &e.zone)
    }
}

/// The question name of a query in wire form: one question, its name uncompressed (as every
/// query's is), or `None`. Reads the header's QDCOUNT and the name, nothing more.
fn question_name(msg: &[u8]) -> Option<NameRef<'_>> {
    if msg.len() < 12 || msg[4] != 0 || msg[5] != 1 {
        return None;
    }
    NameRef::from_wire_prefix(&msg[12..])
        .ok()
        .map(|(name, _)| name)
}

/// The zones a server answers for. Zones are shared, so a reload can keep an unchanged or
/// failed zone's previous version without copying it.
#[derive(Debug, Clone)]
pub struct ZoneSet {
    shards: Box<[Arc<Shard>]>,
    /// Zones per apex label count, so lookups only hash suffixes that can match.
    depth_counts: Box<[u32; MAX_DEPTH]>,
    /// The label counts that some apex has, longest first.
    depths: Vec<u8>,
    len: usize,
    work: BuildWork,
}

/// The work that made a set, counted so tests can check it grows with what changed rather
/// than with the number of zones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildWork {
    /// Apex comparisons (zones whose apex hashes alike are compared name to name).
    pub comparisons: u64,
    /// Table entries copied from the set it was made from (shards an update touched).
    pub entries_copied: u64,
}

/// A change to a set: a zone's (new) version, or an apex no longer served.
#[derive(Debug, Clone)]
pub enum ZoneChange {
    /// Serve this zone, replacing any zone with the same apex.
    Put(Arc<Zone>),
    /// Stop serving the zone at this apex.
    Remove(Name),
}

impl Default for ZoneSet {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Arc::new(Shard::default())).collect(),
            depth_counts: Box::new([0; MAX_DEPTH]),
            depths: Vec::new(),
            len: 0,
            work: BuildWork::default(),
        }
    }
}

/// Apex lookups one [`ZoneSet::prefetch`] stages at most (a query takes one per apex depth
/// of the set that is not longer than its name); the queries beyond are left unstaged.
pub const PREFETCH_MAX: usize = 64;

fn shard_of(hash: u64) -> usize {
    // The top bits: the tables inside each shard index by the low ones.
    (hash >> 56) as usize & (SHARDS - 1)
}

impl ZoneSet {
    /// A set of zones; a later zone with the same apex replaces an earlier one.
    pub fn new(zones: Vec<Zone>) -> Self {
        Self::from_shared(zones.into_iter().map(Arc::new).collect())
    }

    /// A set of shared zones; a later zone with the same apex replaces an earlier one.
    /// Linear in the number of zones.
    pub fn from_shared(zones: Vec<Arc<Zone>>) -> Self {
        Self::default().update(zones.into_iter().map(ZoneChange::Put))
    }

    /// A new set: this one with `changes` applied in order. Only the shards the changed
    /// apexes fall in are copied; the rest (and every unchanged zone) are shared with `self`.
    pub fn update(&self, changes: impl IntoIterator<Item = ZoneChange>) -> Self {
        let mut shards: Vec<Arc<Shard>> = self.shards.to_vec();
        let mut copied = [false; SHARDS];
        let mut depth_counts = self.depth_counts.clone();
        let mut len = self.len;
        let mut work = BuildWork::default();
        for change in changes {
            let apex = match &change {
                ZoneChange::Put(z) => z.apex(),
                ZoneChange::Remove(name) => name.as_ref(),
            };
            let hash = apex.hash_ci();
            let s = shard_of(hash);
            if !copied[s] {
                copied[s] = true;
                work.entries_copied += shards[s].len as u64;
            }
            // Unique after the first change to it in this update, so no further copies.
            let shard = Arc::make_mut(&mut shards[s]);
            let labels = apex.label_count();
            match change {
                ZoneChange::Put(zone) => {
                    if shard.put(hash, zone, &mut work.comparisons) {
                        depth_counts[labels] += 1;
                        len += 1;
                    }
                }
                ZoneChange::Remove(name) => {
                    if shard.remove(hash, name.as_wire(), &mut work.comparisons) {
                        depth_counts[labels] -= 1;
                        len -= 1;
                    }
                }
            }
        }
        let depths = (0..MAX_DEPTH)
            .rev()
            .filter(|&d| depth_counts[d] > 0)
            .map(|d| d as u8)
            .collect();
        Self {
            shards: shards.into_boxed_slice(),
            depth_counts,
            depths,
            len,
            work,
        }
    }

    /// The zone with the longest apex that `qname` is at or below: one hash lookup per
    /// distinct apex depth, never a scan over the zones.
    pub fn find(&self, qname: NameRef<'_>) -> Option<&Zone> {
        let labels = qname.label_count();
        for &depth in &self.depths {
            let depth = usize::from(depth);
            if depth > labels {
                continue;
            }
            let suffix = qname.suffix(depth);
            if let Some(z) = self.lookup(suffix) {
                return Some(z);
            }
        }
        None
    }

    /// Readies the lookups of a batch of queries before any is answered, so that the cache
    /// misses of different queries overlap instead of each query waiting on its own three in
    /// turn (the set's slot, the zone's header, the zone's data). `messages` are DNS
    /// messages in wire form; each one's question name is read (one question, an
    /// uncompressed name; anything else is skipped, to be answered or refused as usual).
    /// `hint` is given the addresses of cache lines that the answers will read, to prefetch;
    /// it must not assume they point at anything (it is a hint, like [`Zone::arrays`]).
    ///
    /// Three passes over the batch: hash each name's suffix at every apex depth the set has
    /// and hint the shard slot; read each slot and hint the zone's header; read each
    /// header and hint the zone's data. Each pass reads only what the pass before hinted.
    /// Answers are unchanged: [`ZoneSet::find`] still does the lookup. No allocation; at
    /// most [`PREFETCH_MAX`] lookups are staged.
    pub fn prefetch<'m>(
        &self,
        messages: impl IntoIterator<Item = &'m [u8]>,
        hint: impl Fn(*const u8),
    ) {
        let mut hashes = [0u64; PREFETCH_MAX];
        let mut staged = 0;
        'messages: for msg in messages {
            let Some(qname) = question_name(msg) else {
                continue;
            };
            let labels = qname.label_count();
            for &depth in &self.depths {
                let depth = usize::from(depth);
                if depth > labels {
                    continue;
                }
                if staged == PREFETCH_MAX {
                    break 'messages;
                }
                let hash = qname.suffix(depth).hash_ci();
                let slots = &self.shards[shard_of(hash)].slots;
                if let Some(slot) = slots.get(hash as usize & slots.len().wrapping_sub(1)) {
                    hint(std::ptr::from_ref(slot).cast());
                    hashes[staged] = hash;
                    staged += 1;
                }
            }
        }
        let mut zones: [Option<&Zone>; PREFETCH_MAX] = [None; PREFETCH_MAX];
        for (&hash, zone) in hashes[..staged].iter().zip(&mut zones) {
            let slots = &self.shards[shard_of(hash)].slots;
            let mask = slots.len() - 1;
            let mut i = hash as usize & mask;
            // At most half full, so the probe run ends at an empty slot.
            while let Some(e) = &slots[i] {
                if e.hash == hash {
                    // The header's first and last bytes: it may straddle two lines.
                    let at: *const Zone = Arc::as_ptr(&e.zone);
                    hint(at.cast());
                    hint(at.wrapping_add(1).cast::<u8>().wrapping_sub(1));
                    *zone = Some(&e.zone);
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        for zone in zones[..staged].iter().flatten() {
            zone.prefetch_data(&hint);
        }
    }

    /// The zone with exactly this apex.
    pub fn get(&self, apex: NameRef<'_>) -> Option<&Arc<Zone>> {
        self.lookup(apex)
    }

    fn lookup(&self, apex: NameRef<'_>) -> Option<&Arc<Zone>> {
        let hash = apex.hash_ci();
        self.shards[shard_of(hash)].get(hash, apex.as_wire())
    }

    /// Every zone, in no particular order.
    pub fn zones(&self) -> impl Iterator<Item = &Arc<Zone>> + '_ {
        self.shards.iter().flat_map(|s| s.zones())
    }

    /// Zones in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the set holds no zone.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The work that made this set from the one before it (see [`BuildWork`]).
    pub fn build_work(&self) -> BuildWork {
        self.work
    }
}
