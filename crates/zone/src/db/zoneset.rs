//! [`ZoneSet`]: the zones a server answers for, and which of them a query name falls in.
//!
//! Built for many zones (a hosting provider's hundreds of thousands): building a set is
//! linear in the number of zones, and changing a few zones ([`ZoneSet::update`]) makes a new
//! set that shares everything it did not change with the old one. The apexes are spread over
//! [`SHARDS`] hash tables, each behind its own `Arc`; an update copies only the shards its
//! zones fall in, so one zone's new version costs a copy of about `len / SHARDS` entries,
//! whatever the number of zones. Readers are unaffected: a set never changes once built.

use super::Zone;
use shardns_wire::{Name, NameRef};
use std::collections::HashMap;
use std::sync::Arc;

/// Hash tables the apexes are spread over (a power of two).
pub const SHARDS: usize = 256;
/// Most labels a name has (a name of 255 octets has at most 127 labels, plus the root).
const MAX_DEPTH: usize = 128;

/// One shard: apex hash -> the zones with that hash.
type Shard = HashMap<u64, Same>;

/// The zones whose apexes hash alike: almost always one, kept without an allocation of its
/// own (a hosting provider's million zones would otherwise cost a million small vectors).
#[derive(Debug, Clone)]
enum Same {
    One(Arc<Zone>),
    Many(Vec<Arc<Zone>>),
}

impl Same {
    fn as_slice(&self) -> &[Arc<Zone>] {
        match self {
            Same::One(z) => std::slice::from_ref(z),
            Same::Many(v) => v,
        }
    }
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
            shards: (0..SHARDS).map(|_| Arc::new(Shard::new())).collect(),
            depth_counts: Box::new([0; MAX_DEPTH]),
            depths: Vec::new(),
            len: 0,
            work: BuildWork::default(),
        }
    }
}

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
                work.entries_copied += shards[s].len() as u64;
            }
            // Unique after the first change to it in this update, so no further copies.
            let shard = Arc::make_mut(&mut shards[s]);
            let labels = apex.label_count();
            match change {
                ZoneChange::Put(zone) => {
                    let Some(same) = shard.get_mut(&hash) else {
                        shard.insert(hash, Same::One(zone));
                        depth_counts[labels] += 1;
                        len += 1;
                        continue;
                    };
                    let at = same.as_slice().iter().position(|z| {
                        work.comparisons += 1;
                        z.apex().eq_ci(&zone.apex())
                    });
                    match (at, same) {
                        (Some(_), Same::One(z)) => *z = zone,
                        (Some(i), Same::Many(v)) => v[i] = zone,
                        (None, same) => {
                            let mut v = same.as_slice().to_vec();
                            v.push(zone);
                            *same = Same::Many(v);
                            depth_counts[labels] += 1;
                            len += 1;
                        }
                    }
                }
                ZoneChange::Remove(name) => {
                    let Some(same) = shard.get_mut(&hash) else {
                        continue;
                    };
                    let at = same.as_slice().iter().position(|z| {
                        work.comparisons += 1;
                        z.apex().eq_ci(&name.as_ref())
                    });
                    let Some(i) = at else { continue };
                    depth_counts[labels] -= 1;
                    len -= 1;
                    let mut rest = same.as_slice().to_vec();
                    rest.swap_remove(i);
                    match rest.len() {
                        0 => {
                            shard.remove(&hash);
                        }
                        1 => *same = Same::One(rest.pop().expect("one left")),
                        _ => *same = Same::Many(rest),
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

    /// The zone with exactly this apex.
    pub fn get(&self, apex: NameRef<'_>) -> Option<&Arc<Zone>> {
        self.lookup(apex)
    }

    fn lookup(&self, apex: NameRef<'_>) -> Option<&Arc<Zone>> {
        let hash = apex.hash_ci();
        self.shards[shard_of(hash)]
            .get(&hash)?
            .as_slice()
            .iter()
            .find(|z| z.apex().eq_ci(&apex))
    }

    /// Every zone, in no particular order.
    pub fn zones(&self) -> impl Iterator<Item = &Arc<Zone>> + '_ {
        self.shards
            .iter()
            .flat_map(|s| s.values().flat_map(Same::as_slice))
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
