//! One shard's storage: a slot array indexed by a `hashbrown::HashTable` of slot numbers,
//! a free list, and a CLOCK hand for eviction under the shard's byte budget.
//!
//! Owns: [`Slot`] (every set cached at one name), [`ShardInner`] (what the shard's `Mutex`
//! guards: slots, index, byte and record counts, counters) and the trust rules applied when
//! a set is stored ([`update_sets`]).

use std::sync::Mutex;

use hashbrown::HashTable;
use shardns_wire::name::{eq_ci, lower};

use super::negative::NXDOMAIN_TYPE;
use super::set::{Set, ALLOC_OVERHEAD};
use super::{HashedName, Rank};
use crate::validate::Security;

/// Bytes charged per slot for its place in the hash index (4-byte index + control byte,
/// at hashbrown's 7/8 load factor, rounded up).
const INDEX_OVERHEAD: usize = 8;

pub(super) struct Slot {
    hash: u64,
    /// Lower-cased wire form of the owner name.
    key: Box<[u8]>,
    pub(super) sets: Vec<Set>,
    /// The CLOCK reference bit: set on every use, cleared by the hand.
    pub(super) referenced: bool,
}

impl Slot {
    fn cost(&self) -> usize {
        size_of::<Option<Slot>>()
            + INDEX_OVERHEAD
            + self.key.len()
            + ALLOC_OVERHEAD
            + self.sets.capacity() * size_of::<Set>()
            + ALLOC_OVERHEAD
            + self.sets.iter().map(Set::cost).sum::<usize>()
    }
    fn records(&self) -> usize {
        self.sets.iter().map(Set::records).sum()
    }
}

#[derive(Default)]
pub(super) struct ShardInner {
    index: HashTable<u32>,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    hand: usize,
    pub(super) bytes: usize,
    pub(super) records: usize,
    pub(super) rrsets: usize,
    pub(super) locks: u64,
    pub(super) evictions: u64,
}

#[repr(align(64))]
#[derive(Default)]
pub(super) struct Shard {
    pub(super) inner: Mutex<ShardInner>,
}

impl ShardInner {
    /// Names with a slot.
    pub(super) fn names(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Drops every slot; the counters stay.
    pub(super) fn clear(&mut self) {
        let locks = self.locks;
        let evictions = self.evictions;
        *self = ShardInner {
            locks,
            evictions,
            ..ShardInner::default()
        };
    }

    pub(super) fn find_mut(&mut self, key: &HashedName<'_>) -> Option<&mut Slot> {
        let slots = &self.slots;
        let i = *self
            .index
            .find(key.hash, |&i| slot_key_eq(slots, i, key.wire))?;
        self.slots[i as usize].as_mut()
    }

    /// Stores `new` at its name. Expired sets of the name are dropped, unless they are
    /// less than `keep` ms past expiry (kept for serve-stale).
    pub(super) fn insert(&mut self, key: &HashedName<'_>, new: Set, now: u64, keep: u64) -> bool {
        let slots = &self.slots;
        let mut created = false;
        let i = match self
            .index
            .find(key.hash, |&i| slot_key_eq(slots, i, key.wire))
        {
            Some(&i) => i as usize,
            None => {
                created = true;
                let slot = Slot {
                    hash: key.hash,
                    key: lower_case(key.wire),
                    sets: Vec::with_capacity(1),
                    referenced: true,
                };
                let i = match self.free.pop() {
                    Some(i) => {
                        self.slots[i as usize] = Some(slot);
                        i as usize
                    }
                    None => {
                        self.slots.push(Some(slot));
                        self.slots.len() - 1
                    }
                };
                let slots = &self.slots;
                self.index
                    .insert_unique(key.hash, i as u32, |&j| slot_hash(slots, j));
                i
            }
        };
        let Some(slot) = self.slots[i].as_mut() else {
            return false;
        };
        let before = if created {
            (0, 0, 0)
        } else {
            (slot.cost(), slot.records(), slot.sets.len())
        };
        let stored = update_sets(&mut slot.sets, new, now, keep);
        slot.referenced = true;
        let after = (slot.cost(), slot.records(), slot.sets.len());
        let empty = slot.sets.is_empty();
        self.bytes = self.bytes + after.0 - before.0;
        self.records = self.records + after.1 - before.1;
        self.rrsets = self.rrsets + after.2 - before.2;
        if empty {
            self.remove(i);
        }
        stored
    }

    /// Drops every name with a bogus set (see [`super::Cache::forget_bogus`]).
    pub(super) fn forget_bogus(&mut self) {
        for i in 0..self.slots.len() {
            let bogus = self.slots[i]
                .as_ref()
                .is_some_and(|s| s.sets.iter().any(|set| set.sec == Security::Bogus));
            if bogus {
                self.remove(i);
            }
        }
    }

    fn remove(&mut self, i: usize) {
        let Some(slot) = self.slots[i].take() else {
            return;
        };
        if let Ok(e) = self.index.find_entry(slot.hash, |&j| j as usize == i) {
            e.remove();
        }
        self.bytes -= slot.cost();
        self.records -= slot.records();
        self.rrsets -= slot.sets.len();
        self.free.push(i as u32);
    }

    /// CLOCK: sweeps the hand, clearing reference bits and evicting unreferenced names,
    /// until the shard is under its budget (at most two turns).
    pub(super) fn evict(&mut self, budget: usize) {
        let n = self.slots.len();
        let mut steps = 0;
        while self.bytes > budget && steps < 2 * n + 1 {
            steps += 1;
            self.hand = (self.hand + 1) % n;
            let hand = self.hand;
            let Some(slot) = self.slots[hand].as_mut() else {
                continue;
            };
            if slot.referenced {
                slot.referenced = false;
            } else {
                self.remove(hand);
                self.evictions += 1;
            }
        }
    }
}

/// True if slot `i` holds `name` (any case; slot keys are lower-cased).
#[inline]
fn slot_key_eq(slots: &[Option<Slot>], i: u32, name: &[u8]) -> bool {
    // Names mostly come in lower case: a plain comparison settles those without the
    // slower case-folding one.
    slots[i as usize]
        .as_ref()
        .is_some_and(|s| *s.key == *name || eq_ci(&s.key, name))
}

/// The lower-cased copy of a name that a slot keeps.
fn lower_case(wire: &[u8]) -> Box<[u8]> {
    wire.iter().map(|&b| lower(b)).collect()
}

fn slot_hash(slots: &[Option<Slot>], i: u32) -> u64 {
    slots[i as usize].as_ref().map_or(0, |s| s.hash)
}

/// Puts `new` among a name's sets under the trust rules; drops expired sets on the way
/// (but those less than `keep` ms past expiry, kept to be served stale). An expired set
/// never outranks fresh data.
fn update_sets(sets: &mut Vec<Set>, new: Set, now: u64, keep: u64) -> bool {
    sets.retain(|s| s.expires().saturating_add(keep) > now);
    if let Some(old) = sets.iter().position(|s| s.rtype == new.rtype) {
        if sets[old].rank > new.rank && sets[old].expires() > now {
            return false;
        }
        sets.swap_remove(old);
    }
    if new.rtype == NXDOMAIN_TYPE {
        // The name is gone: nothing less trusted than this stays, nothing stale either.
        sets.retain(|s| s.rank > new.rank && s.expires() > now);
    } else if new.rank >= Rank::Answer {
        // Data at the name from an answer this good means it exists.
        sets.retain(|s| !(s.rtype == NXDOMAIN_TYPE && (s.rank <= new.rank || s.expires() <= now)));
    }
    sets.push(new);
    sets.shrink_to_fit();
    true
}
