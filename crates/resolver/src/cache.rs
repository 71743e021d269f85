//! The shared record cache: positive and negative (RFC 2308) RRsets, sharded by name.
//!
//! Owns: 64 shards, each a `Mutex` over a slot array indexed by a `hashbrown::HashTable`
//! of slot numbers, and a CLOCK hand for eviction under a per-shard byte budget. One slot
//! holds every RRset cached at one name, so a cache hit for a plain answer takes exactly
//! one uncontended lock, held only while its records are copied out. RRsets are stored as
//! pre-encoded rdata (`u16` length + uncompressed rdata, repeated) with an absolute expiry
//! time; [`Cache::answer`] renders them straight into the caller's [`MessageWriter`] with
//! decremented TTLs, without allocating. A lookup hashes the name as it was asked (the hash
//! ignores case) and compares it with the slot's lower-cased name; nothing is copied.
//!
//! Trust (RFC 2181 §5.4.1): every RRset carries a [`Rank`]; data of a lower rank never
//! replaces unexpired data of a higher rank (glue never overwrites an answer), and clients
//! are only answered from data of rank [`Rank::Answer`] or better.
//!
//! Never: I/O, clocks (`now` is passed in, milliseconds on the driver's monotonic clock),
//! a global lock, or allocation on the hit path.

use std::sync::{Mutex, MutexGuard};

use hashbrown::HashTable;
use shardns_wire::name::{eq_ci, hash_ci, lower};
use shardns_wire::{Class, MessageWriter, NameBuf, NameRef, RType, Rcode, Record, Section};

const SHARDS: usize = 64;
/// Type number under which a name's NXDOMAIN entry is kept (no real type is 0).
const NXDOMAIN_TYPE: RType = RType(0);
/// Longest CNAME chain [`Cache::answer`] follows before giving up (and letting the
/// resolver decide).
const MAX_CACHED_CHAIN: usize = 8;
/// Bytes charged per heap allocation on top of its size (allocator header and rounding).
const ALLOC_OVERHEAD: usize = 16;
/// Bytes charged per slot for its place in the hash index (4-byte index + control byte,
/// at hashbrown's 7/8 load factor, rounded up).
const INDEX_OVERHEAD: usize = 8;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `data` is the RRset: (`u16` length, rdata) repeated.
    Positive,
    /// A CNAME synthesised from a DNAME: `data` is the DNAME owner, (`u16` length, DNAME
    /// rdata), then the CNAME rdata as for `Positive`.
    Synth,
    /// No data of this type (`rtype`), or no such name (`rtype` 0): `data` is the SOA's
    /// owner, (`u16` length, rdata), or empty.
    Negative,
}

struct Set {
    rtype: RType,
    kind: Kind,
    rank: Rank,
    expires: u64,
    data: Box<[u8]>,
}

impl Set {
    fn cost(&self) -> usize {
        self.data.len() + ALLOC_OVERHEAD
    }
    fn remaining_ttl(&self, now: u64) -> u32 {
        (self.expires.saturating_sub(now) / 1000) as u32
    }
    fn records(&self) -> usize {
        match self.kind {
            Kind::Positive => Rdatas(&self.data).count(),
            Kind::Synth => 2,
            Kind::Negative => 0,
        }
    }
}

struct Slot {
    hash: u64,
    /// Lower-cased wire form of the owner name.
    key: Box<[u8]>,
    sets: Vec<Set>,
    referenced: bool,
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
struct ShardInner {
    index: HashTable<u32>,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    hand: usize,
    bytes: usize,
    records: usize,
    rrsets: usize,
    locks: u64,
    evictions: u64,
}

#[repr(align(64))]
#[derive(Default)]
struct Shard {
    inner: Mutex<ShardInner>,
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

/// The outcome of [`Cache::answer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheAnswer {
    /// The answer was written; the caller sets `rcode` in the header.
    Hit {
        /// NOERROR (answer or NODATA) or NXDOMAIN.
        rcode: Rcode,
        /// The writer filled up; the records that fit are kept and the caller sets TC.
        truncated: bool,
        /// Shard locks taken (one per name in the chain).
        locks: u32,
    },
    /// Nothing usable cached (or only part of a CNAME chain); nothing was written.
    Miss {
        /// Shard locks taken.
        locks: u32,
    },
}

/// A cached answer copied out for the resolver's own use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    Miss,
    /// The RRset of the asked type.
    Positive(Vec<Record>),
    /// A CNAME at the name (and, if it was synthesised, the DNAME it came from first).
    Cname(Vec<Record>),
    /// The name does not exist; the SOA if one was given.
    NxDomain(Option<Record>),
    /// The name has no data of this type.
    NoData(Option<Record>),
}

/// What [`Cache::probe`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    Miss,
    /// The name exists: an RRset, NODATA or a CNAME is cached.
    Exists,
    NxDomain,
}

/// The SOA of a negative answer, borrowed: owner, TTL and RDATA.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Soa<'a> {
    pub(crate) owner: NameRef<'a>,
    pub(crate) ttl: u32,
    pub(crate) rdata: &'a [u8],
}

impl<'a> From<&'a Record> for Soa<'a> {
    fn from(r: &'a Record) -> Self {
        Self {
            owner: r.owner.as_ref(),
            ttl: r.ttl,
            rdata: &r.rdata,
        }
    }
}

/// The shared cache. `Send + Sync`; put it in an `Arc` (the [`crate::Resolver`] does).
pub struct Cache {
    shards: Box<[Shard]>,
    shard_budget: usize,
    min_ttl: u32,
    max_ttl: u32,
    max_negative_ttl: u32,
}

/// A name as it was spelled, with its case-insensitive hash: what finds a slot. Nothing
/// is copied or lower-cased on a lookup; slots keep their names lower-cased and compare
/// without regard to case.
struct Key<'a> {
    wire: &'a [u8],
    hash: u64,
}

impl<'a> Key<'a> {
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
        }
    }

    fn lock(&self, key: &Key<'_>) -> MutexGuard<'_, ShardInner> {
        // A panic while holding a shard lock leaves consistent data (every update is
        // completed before anything can panic), so a poisoned lock is used as it is.
        let mut g = self.shards[key.shard()]
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        g.locks += 1;
        g
    }

    /// The cache-hit fast path: writes the answer to (`qname`, `qtype`) after the caller's
    /// question, following cached CNAMEs, with TTLs counted down to `now`. Writes the SOA of
    /// a cached negative answer in the authority section. Takes one shard lock per name in
    /// the chain and never allocates. On a miss (or a chain whose end is not cached) the
    /// writer is left as it was.
    pub fn answer(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        w: &mut MessageWriter<'_>,
    ) -> CacheAnswer {
        let start = w.checkpoint();
        let mut locks = 0u32;
        // The current CNAME target, once the chain has moved (the question's name is used
        // as it is, so the first owner is written as the question spelled it).
        let mut target = NameBuf::new();
        let mut next = NameBuf::new();
        for hop in 0..=MAX_CACHED_CHAIN {
            let owner = if hop == 0 { qname } else { target.as_ref() };
            next.set(NameRef::ROOT);
            let key = Key::new(owner);
            let mut g = self.lock(&key);
            locks += 1;
            let Some(slot) = g.find_mut(&key) else { break };
            slot.referenced = true;
            let truncated;
            let outcome = match classify(slot, qtype, Rank::Answer, now) {
                None => break,
                Some((set, found)) => {
                    let ttl = set.remaining_ttl(now);
                    let r = match found {
                        Found::Positive => {
                            put_rdatas(w, Section::Answer, owner, set.rtype, ttl, &set.data)
                        }
                        Found::Cname => {
                            put_cname(w, owner, ttl, &set.data, set.kind == Kind::Synth, &mut next)
                        }
                        Found::NxDomain | Found::NoData => put_soa(w, ttl, &set.data),
                    };
                    truncated = r.is_err();
                    found
                }
            };
            drop(g);
            match outcome {
                // A CNAME query stops at the (synthesised) CNAME (RFC 1034 §3.6.2).
                Found::Cname if !truncated && qtype != RType::CNAME => {
                    target.set(next.as_ref());
                }
                Found::NxDomain => {
                    return CacheAnswer::Hit {
                        rcode: Rcode::NXDOMAIN,
                        truncated,
                        locks,
                    }
                }
                _ => {
                    return CacheAnswer::Hit {
                        rcode: Rcode::NOERROR,
                        truncated,
                        locks,
                    }
                }
            }
        }
        w.rollback(start);
        CacheAnswer::Miss { locks }
    }

    /// The answer to (`name`, `qtype`) from data of at least `min_rank`, copied out.
    pub(crate) fn lookup(
        &self,
        name: NameRef<'_>,
        qtype: RType,
        min_rank: Rank,
        now: u64,
    ) -> Lookup {
        let key = Key::new(name);
        let mut g = self.lock(&key);
        let Some(slot) = g.find_mut(&key) else {
            return Lookup::Miss;
        };
        slot.referenced = true;
        let Some((set, found)) = classify(slot, qtype, min_rank, now) else {
            return Lookup::Miss;
        };
        let ttl = set.remaining_ttl(now);
        match found {
            Found::Positive => Lookup::Positive(
                Rdatas(&set.data)
                    .map(|rd| record(name, set.rtype, ttl, rd))
                    .collect(),
            ),
            Found::Cname => {
                let mut out = Vec::with_capacity(2);
                let mut data: &[u8] = &set.data;
                if set.kind == Kind::Synth {
                    let Some((owner, rdata, rest)) = split_owned(data) else {
                        return Lookup::Miss;
                    };
                    out.push(record(owner, RType::DNAME, ttl, rdata));
                    data = rest;
                }
                out.extend(Rdatas(data).map(|rd| record(name, RType::CNAME, ttl, rd)));
                if qtype == RType::CNAME {
                    // The synthesised CNAME (with its DNAME) is the answer itself.
                    Lookup::Positive(out)
                } else {
                    Lookup::Cname(out)
                }
            }
            Found::NxDomain => Lookup::NxDomain(soa_record(&set.data, ttl)),
            Found::NoData => Lookup::NoData(soa_record(&set.data, ttl)),
        }
    }

    /// What the cache knows about (`name`, `qtype`) from data of at least `min_rank`,
    /// without copying anything out: one lock, no allocation.
    pub(crate) fn probe(&self, name: NameRef<'_>, qtype: RType, min_rank: Rank, now: u64) -> Probe {
        let key = Key::new(name);
        let mut g = self.lock(&key);
        let Some(slot) = g.find_mut(&key) else {
            return Probe::Miss;
        };
        slot.referenced = true;
        match classify(slot, qtype, min_rank, now) {
            None => Probe::Miss,
            Some((_, Found::NxDomain)) => Probe::NxDomain,
            Some(_) => Probe::Exists,
        }
    }

    /// Calls `f(rtype, remaining ttl, rdata)` for each record of the positive RRsets of the
    /// given types at `name` with at least `min_rank`; one lock. Returns how many it saw.
    pub(crate) fn visit(
        &self,
        name: NameRef<'_>,
        types: &[RType],
        min_rank: Rank,
        now: u64,
        mut f: impl FnMut(RType, u32, &[u8]),
    ) -> usize {
        let key = Key::new(name);
        let mut g = self.lock(&key);
        let Some(slot) = g.find_mut(&key) else {
            return 0;
        };
        slot.referenced = true;
        let mut n = 0;
        for set in &slot.sets {
            if set.kind == Kind::Positive
                && types.contains(&set.rtype)
                && set.rank >= min_rank
                && set.expires > now
            {
                for rd in Rdatas(&set.data) {
                    f(set.rtype, set.remaining_ttl(now), rd);
                    n += 1;
                }
            }
        }
        n
    }

    /// Caches an RRset. Returns false if it was not stored (zero TTL, or better data held).
    pub(crate) fn insert_rrset<'r, I>(
        &self,
        owner: NameRef<'_>,
        rtype: RType,
        rank: Rank,
        ttl: u32,
        rdatas: I,
        now: u64,
    ) -> bool
    where
        I: IntoIterator<Item = &'r [u8]>,
        I::IntoIter: Clone,
    {
        let rdatas = rdatas.into_iter();
        // Sized exactly: one allocation, and no reallocation when boxed.
        let mut data = Vec::with_capacity(rdatas.clone().map(|rd| 2 + rd.len()).sum());
        for rd in rdatas {
            push_rdata(&mut data, rd);
        }
        let ttl = ttl.clamp(self.min_ttl, self.max_ttl);
        self.insert(owner, rtype, Kind::Positive, rank, ttl, data, now)
    }

    /// Caches a CNAME synthesised from a DNAME (RFC 6672) at `owner`; `dname` is the
    /// DNAME's (owner, RDATA, TTL).
    pub(crate) fn insert_synth(
        &self,
        owner: NameRef<'_>,
        dname: (NameRef<'_>, &[u8], u32),
        cname_target: NameRef<'_>,
        rank: Rank,
        now: u64,
    ) -> bool {
        let (downer, drdata, dttl) = dname;
        let mut data = Vec::with_capacity(downer.len() + 2 + drdata.len() + 2 + cname_target.len());
        data.extend_from_slice(downer.as_wire());
        push_rdata(&mut data, drdata);
        push_rdata(&mut data, cname_target.as_wire());
        let ttl = dttl.clamp(self.min_ttl, self.max_ttl);
        self.insert(owner, RType::CNAME, Kind::Synth, rank, ttl, data, now)
    }

    /// Caches a negative answer (RFC 2308): NXDOMAIN when `rtype` is `None`, else NODATA
    /// for `rtype`. The TTL is the SOA's, capped by its MINIMUM field and the configured
    /// maximum; without an SOA nothing is cached (RFC 2308 §5).
    pub(crate) fn insert_negative(
        &self,
        owner: NameRef<'_>,
        rtype: Option<RType>,
        soa: Option<Soa<'_>>,
        rank: Rank,
        now: u64,
    ) -> bool {
        let Some(soa) = soa else { return false };
        let ttl = negative_ttl_of(soa.ttl, soa.rdata).min(self.max_negative_ttl);
        let mut data = Vec::with_capacity(soa.owner.len() + 2 + soa.rdata.len());
        data.extend_from_slice(soa.owner.as_wire());
        push_rdata(&mut data, soa.rdata);
        self.insert(
            owner,
            rtype.unwrap_or(NXDOMAIN_TYPE),
            Kind::Negative,
            rank,
            ttl,
            data,
            now,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &self,
        owner: NameRef<'_>,
        rtype: RType,
        kind: Kind,
        rank: Rank,
        ttl: u32,
        data: Vec<u8>,
        now: u64,
    ) -> bool {
        if ttl == 0 {
            return false;
        }
        let key = Key::new(owner);
        let new = Set {
            rtype,
            kind,
            rank,
            expires: now + u64::from(ttl) * 1000,
            data: data.into_boxed_slice(),
        };
        let mut g = self.lock(&key);
        let stored = g.insert(&key, new, now);
        if g.bytes > self.shard_budget {
            g.evict(self.shard_budget);
        }
        stored
    }

    /// Sizes and counters summed over the shards.
    pub fn stats(&self) -> CacheStats {
        let mut s = CacheStats::default();
        for shard in self.shards.iter() {
            let g = shard.inner.lock().unwrap_or_else(|e| e.into_inner());
            s.bytes += g.bytes;
            s.names += g.slots.len() - g.free.len();
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

    /// Drops every entry.
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            let mut g = shard.inner.lock().unwrap_or_else(|e| e.into_inner());
            let locks = g.locks;
            let evictions = g.evictions;
            *g = ShardInner {
                locks,
                evictions,
                ..ShardInner::default()
            };
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Found {
    Positive,
    Cname,
    NxDomain,
    NoData,
}

/// Picks the set that answers `qtype` at a name: the RRset or NODATA of that type, else a
/// CNAME, else NXDOMAIN.
fn classify(slot: &Slot, qtype: RType, min_rank: Rank, now: u64) -> Option<(&Set, Found)> {
    let live = |s: &&Set| s.expires > now && s.rank >= min_rank;
    let mut cname = None;
    let mut nx = None;
    for set in slot.sets.iter().filter(live) {
        if set.rtype == qtype {
            let found = match set.kind {
                Kind::Negative => Found::NoData,
                // A synthesised CNAME answers a CNAME query, but is rendered with its
                // DNAME (its data is not plain RDATA).
                Kind::Synth => Found::Cname,
                _ => Found::Positive,
            };
            return Some((set, found));
        }
        if set.rtype == RType::CNAME && set.kind != Kind::Negative {
            cname = Some(set);
        } else if set.rtype == NXDOMAIN_TYPE {
            nx = Some(set);
        }
    }
    cname
        .map(|s| (s, Found::Cname))
        .or(nx.map(|s| (s, Found::NxDomain)))
}

impl ShardInner {
    fn find_mut(&mut self, key: &Key<'_>) -> Option<&mut Slot> {
        let slots = &self.slots;
        let i = *self
            .index
            .find(key.hash, |&i| slot_key_eq(slots, i, key.wire))?;
        self.slots[i as usize].as_mut()
    }

    fn insert(&mut self, key: &Key<'_>, new: Set, now: u64) -> bool {
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
        let stored = update_sets(&mut slot.sets, new, now);
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
    fn evict(&mut self, budget: usize) {
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
    // Names mostly come in lower case: a plain comparison settles those at a third of the
    // cost of the case-folding one.
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

/// Puts `new` among a name's sets under the trust rules; drops expired sets on the way.
fn update_sets(sets: &mut Vec<Set>, new: Set, now: u64) -> bool {
    sets.retain(|s| s.expires > now);
    if let Some(old) = sets.iter().position(|s| s.rtype == new.rtype) {
        if sets[old].rank > new.rank {
            return false;
        }
        sets.swap_remove(old);
    }
    if new.rtype == NXDOMAIN_TYPE {
        // The name is gone: nothing less trusted than this stays.
        sets.retain(|s| s.rank > new.rank);
    } else if new.rank >= Rank::Answer {
        // Data at the name from an answer this good means it exists.
        sets.retain(|s| !(s.rtype == NXDOMAIN_TYPE && s.rank <= new.rank));
    }
    sets.push(new);
    sets.shrink_to_fit();
    true
}

/// RFC 2308 §5: the negative TTL is the lesser of the SOA's TTL and its MINIMUM field.
pub(crate) fn negative_ttl(soa: &Record) -> u32 {
    negative_ttl_of(soa.ttl, &soa.rdata)
}

fn negative_ttl_of(ttl: u32, rdata: &[u8]) -> u32 {
    soa_minimum(rdata).map_or(0, |m| m.min(ttl))
}

fn soa_minimum(rdata: &[u8]) -> Option<u32> {
    let b = rdata.get(rdata.len().checked_sub(4)?..)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn push_rdata(data: &mut Vec<u8>, rd: &[u8]) {
    data.extend_from_slice(&(rd.len() as u16).to_be_bytes());
    data.extend_from_slice(rd);
}

/// Iterates over the rdatas of pre-encoded data.
struct Rdatas<'a>(&'a [u8]);

impl<'a> Iterator for Rdatas<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let len = u16::from_be_bytes([*self.0.first()?, *self.0.get(1)?]) as usize;
        let rd = self.0.get(2..2 + len)?;
        self.0 = &self.0[2 + len..];
        Some(rd)
    }
}

/// Splits "owner name, (u16 length, rdata), rest".
fn split_owned(data: &[u8]) -> Option<(NameRef<'_>, &[u8], &[u8])> {
    let (owner, n) = NameRef::from_wire_prefix(data).ok()?;
    let rest = &data[n..];
    let rd = Rdatas(rest).next()?;
    Some((owner, rd, &rest[2 + rd.len()..]))
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

fn soa_record(data: &[u8], ttl: u32) -> Option<Record> {
    let (owner, rd, _) = split_owned(data)?;
    Some(record(owner, RType::SOA, ttl, rd))
}

type Put = Result<(), shardns_wire::writer::Full>;

fn put_rdatas(
    w: &mut MessageWriter<'_>,
    section: Section,
    owner: NameRef<'_>,
    rtype: RType,
    ttl: u32,
    data: &[u8],
) -> Put {
    for rd in Rdatas(data) {
        w.put_record(section, owner, rtype, Class::IN, ttl, rd)?;
    }
    Ok(())
}

/// Writes a cached CNAME (with its DNAME first, if synthesised) and copies its target.
fn put_cname(
    w: &mut MessageWriter<'_>,
    owner: NameRef<'_>,
    ttl: u32,
    data: &[u8],
    synth: bool,
    next: &mut NameBuf,
) -> Put {
    let mut data = data;
    if synth {
        let Some((downer, drd, rest)) = split_owned(data) else {
            return Ok(());
        };
        w.put_record(Section::Answer, downer, RType::DNAME, Class::IN, ttl, drd)?;
        data = rest;
    }
    let Some(rd) = Rdatas(data).next() else {
        return Ok(());
    };
    if let Ok(target) = NameRef::from_wire(rd) {
        next.set(target);
    }
    w.put_record(Section::Answer, owner, RType::CNAME, Class::IN, ttl, rd)
}

fn put_soa(w: &mut MessageWriter<'_>, ttl: u32, data: &[u8]) -> Put {
    match split_owned(data) {
        Some((owner, rd, _)) => {
            w.put_record(Section::Authority, owner, RType::SOA, Class::IN, ttl, rd)
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::{Header, Message, Name};

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn soa(zone: &str, ttl: u32, minimum: u32) -> Record {
        let mut rd = n(&format!("ns.{zone}")).as_wire().to_vec();
        rd.extend_from_slice(n(&format!("host.{zone}")).as_wire());
        for v in [1u32, 3600, 600, 86400, minimum] {
            rd.extend_from_slice(&v.to_be_bytes());
        }
        Record {
            owner: n(zone),
            rtype: RType::SOA,
            class: Class::IN,
            ttl,
            rdata: rd,
        }
    }

    fn answer(cache: &Cache, q: &str, qtype: RType, now: u64) -> (CacheAnswer, Message) {
        let mut buf = [0u8; 1232];
        let mut w = MessageWriter::new(&mut buf, 1232);
        w.put_question(n(q).as_ref(), qtype, Class::IN).unwrap();
        let r = cache.answer(n(q).as_ref(), qtype, now, &mut w);
        let msg = w.finish(&Header::default()).to_vec();
        (r, Message::parse(&msg).unwrap())
    }

    /// Names are found in any case (ASCII letters only): octets that differ by 0x20 but
    /// are not letters are different names.
    #[test]
    fn names_match_without_regard_to_case_of_letters_only() {
        let c = Cache::new(1 << 20, 0, 86400, 3600);
        let stored = NameRef::from_wire(b"\x04Ho[t\x0aExample-Zz\x00").unwrap();
        c.insert_rrset(
            stored,
            RType::A,
            Rank::AuthAnswer,
            60,
            [&[1, 2, 3, 4][..]],
            0,
        );
        for (wire, hit) in [
            (&b"\x04ho[t\x0aexample-zz\x00"[..], true),
            (b"\x04HO[T\x0aEXAMPLE-ZZ\x00", true),
            (b"\x04ho{t\x0aexample-zz\x00", false),
            (b"\x04ho[t\x0aexample\x0dzz\x00", false),
        ] {
            let name = NameRef::from_wire(wire).unwrap();
            let found = matches!(
                c.lookup(name, RType::A, Rank::Answer, 0),
                Lookup::Positive(_)
            );
            assert_eq!(found, hit, "{name}");
        }
        assert_eq!(c.stats().names, 1);
    }

    #[test]
    fn hit_decrements_ttl_and_takes_one_lock() {
        let c = Cache::new(1 << 20, 0, 86400, 3600);
        let www = n("www.example.");
        c.insert_rrset(
            www.as_ref(),
            RType::A,
            Rank::AuthAnswer,
            300,
            [&[192, 0, 2, 1][..], &[192, 0, 2, 2]],
            1_000,
        );
        let (r, m) = answer(&c, "WWW.example.", RType::A, 1_000 + 100_500);
        assert_eq!(
            r,
            CacheAnswer::Hit {
                rcode: Rcode::NOERROR,
                truncated: false,
                locks: 1
            }
        );
        assert_eq!(m.answers.len(), 2);
        assert_eq!(m.answers[0].ttl, 199);
        assert_eq!(m.answers[0].owner.to_string(), "WWW.example.");
        // Expired after 300 s.
        let (r, m) = answer(&c, "www.example.", RType::A, 1_000 + 300_000);
        assert!(matches!(r, CacheAnswer::Miss { .. }));
        assert!(m.answers.is_empty());
    }

    #[test]
    fn cname_chain_and_partial_chain_miss() {
        let c = Cache::new(1 << 20, 0, 86400, 3600);
        c.insert_rrset(
            n("a.example.").as_ref(),
            RType::CNAME,
            Rank::AuthAnswer,
            60,
            [n("b.other.").as_wire()],
            0,
        );
        let (r, m) = answer(&c, "a.example.", RType::A, 0);
        assert_eq!(r, CacheAnswer::Miss { locks: 2 });
        assert!(
            m.answers.is_empty(),
            "a partial chain leaves the writer as it was"
        );
        c.insert_rrset(
            n("b.other.").as_ref(),
            RType::A,
            Rank::AuthAnswer,
            30,
            [&[10, 0, 0, 1][..]],
            0,
        );
        let (r, m) = answer(&c, "a.example.", RType::A, 0);
        assert_eq!(
            r,
            CacheAnswer::Hit {
                rcode: Rcode::NOERROR,
                truncated: false,
                locks: 2
            }
        );
        assert_eq!(m.answers.len(), 2);
        assert_eq!(m.answers[1].owner, n("b.other."));
        // Asking for the CNAME itself does not follow it.
        let (_, m) = answer(&c, "a.example.", RType::CNAME, 0);
        assert_eq!(m.answers.len(), 1);
    }

    #[test]
    fn negative_entries_use_soa_ttl() {
        let c = Cache::new(1 << 20, 0, 86400, 3600);
        let s = soa("example.", 900, 300);
        assert_eq!(negative_ttl(&s), 300);
        c.insert_negative(
            n("nx.example.").as_ref(),
            None,
            Some((&s).into()),
            Rank::AuthAnswer,
            0,
        );
        c.insert_negative(
            n("www.example.").as_ref(),
            Some(RType::AAAA),
            Some((&s).into()),
            Rank::AuthAnswer,
            0,
        );
        let (r, m) = answer(&c, "nx.example.", RType::MX, 10_000);
        assert!(matches!(
            r,
            CacheAnswer::Hit {
                rcode: Rcode::NXDOMAIN,
                ..
            }
        ));
        assert_eq!(m.authority.len(), 1);
        assert_eq!(m.authority[0].ttl, 290);
        let (r, m) = answer(&c, "www.example.", RType::AAAA, 0);
        assert!(matches!(
            r,
            CacheAnswer::Hit {
                rcode: Rcode::NOERROR,
                ..
            }
        ));
        assert!(m.answers.is_empty());
        assert_eq!(m.authority[0].rtype, RType::SOA);
        assert!(matches!(
            answer(&c, "www.example.", RType::A, 0).0,
            CacheAnswer::Miss { .. }
        ));
        assert!(matches!(
            answer(&c, "nx.example.", RType::A, 300_000).0,
            CacheAnswer::Miss { .. }
        ));
        // Without an SOA nothing is cached.
        assert!(!c.insert_negative(n("x.example.").as_ref(), None, None, Rank::AuthAnswer, 0));
    }

    #[test]
    fn glue_never_overwrites_an_answer() {
        let c = Cache::new(1 << 20, 0, 86400, 3600);
        let ns = n("ns1.example.");
        assert!(c.insert_rrset(
            ns.as_ref(),
            RType::A,
            Rank::AuthAnswer,
            3600,
            [&[192, 0, 2, 53][..]],
            0
        ));
        assert!(!c.insert_rrset(
            ns.as_ref(),
            RType::A,
            Rank::Additional,
            3600,
            [&[6, 6, 6, 6][..]],
            0
        ));
        let got = c.lookup(ns.as_ref(), RType::A, Rank::Additional, 0);
        assert_eq!(
            got,
            Lookup::Positive(vec![record(ns.as_ref(), RType::A, 3600, &[192, 0, 2, 53])])
        );
        // Glue alone is usable for iteration but never answers a client.
        let g = n("ns2.example.");
        c.insert_rrset(
            g.as_ref(),
            RType::A,
            Rank::Additional,
            3600,
            [&[192, 0, 2, 54][..]],
            0,
        );
        assert_eq!(
            c.lookup(g.as_ref(), RType::A, Rank::Answer, 0),
            Lookup::Miss
        );
        assert!(matches!(
            answer(&c, "ns2.example.", RType::A, 0).0,
            CacheAnswer::Miss { .. }
        ));
        // An authoritative answer replaces the glue.
        assert!(c.insert_rrset(
            g.as_ref(),
            RType::A,
            Rank::AuthAnswer,
            3600,
            [&[192, 0, 2, 55][..]],
            0
        ));
        assert!(matches!(
            answer(&c, "ns2.example.", RType::A, 0).0,
            CacheAnswer::Hit { .. }
        ));
    }

    #[test]
    fn eviction_keeps_memory_bounded() {
        let budget = 64 * 4096;
        let c = Cache::new(budget, 0, 86400, 3600);
        for i in 0..20_000u32 {
            let name = n(&format!("host{i}.example."));
            c.insert_rrset(
                name.as_ref(),
                RType::A,
                Rank::AuthAnswer,
                3600,
                [&i.to_be_bytes()[..]],
                0,
            );
        }
        let s = c.stats();
        assert!(s.bytes <= budget, "{s:?}");
        assert!(s.evictions > 0);
        assert!(s.names > 500, "{s:?}");
        assert_eq!(s.records, s.names);
        // Every name still counted is still found.
        let last = n("host19999.example.");
        assert!(matches!(
            c.lookup(last.as_ref(), RType::A, Rank::Answer, 0),
            Lookup::Positive(_)
        ));
        c.clear();
        assert_eq!(c.stats().bytes, 0);
    }

    #[test]
    fn bytes_per_record_is_reported() {
        let c = Cache::new(1 << 30, 0, 86400, 3600);
        for i in 0..1000u32 {
            let name = n(&format!("host{i}.example.com."));
            c.insert_rrset(
                name.as_ref(),
                RType::A,
                Rank::AuthAnswer,
                3600,
                [&i.to_be_bytes()[..]],
                0,
            );
        }
        let s = c.stats();
        assert_eq!((s.names, s.records, s.rrsets), (1000, 1000, 1000));
        let per = s.bytes / s.records;
        assert!((100..300).contains(&per), "{per} bytes per A record");
    }

    /// A cache holding `www.old.example.` CNAME `www.new.example.`, synthesised from the
    /// DNAME `old.example.` -> `new.example.`.
    fn cache_with_synthesised_cname() -> Cache {
        let c = Cache::new(1 << 20, 0, 86400, 3600);
        let dname = Record {
            owner: n("old.example."),
            rtype: RType::DNAME,
            class: Class::IN,
            ttl: 600,
            rdata: n("new.example.").as_wire().to_vec(),
        };
        c.insert_synth(
            n("www.old.example.").as_ref(),
            (dname.owner.as_ref(), &dname.rdata, dname.ttl),
            n("www.new.example.").as_ref(),
            Rank::AuthAnswer,
            0,
        );
        c
    }

    #[test]
    fn synthesised_cname_renders_dname_first() {
        let c = cache_with_synthesised_cname();
        c.insert_rrset(
            n("www.new.example.").as_ref(),
            RType::A,
            Rank::AuthAnswer,
            600,
            [&[1, 2, 3, 4][..]],
            0,
        );
        let (r, m) = answer(&c, "www.old.example.", RType::A, 0);
        assert!(matches!(
            r,
            CacheAnswer::Hit {
                rcode: Rcode::NOERROR,
                ..
            }
        ));
        let types: Vec<_> = m.answers.iter().map(|r| r.rtype).collect();
        assert_eq!(types, [RType::DNAME, RType::CNAME, RType::A]);
        match c.lookup(n("www.old.example.").as_ref(), RType::A, Rank::Answer, 0) {
            Lookup::Cname(v) => assert_eq!(v.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    /// Found by the differential test against Unbound: a CNAME query at a name with a
    /// synthesised CNAME rendered the stored DNAME owner and RDATA as if they were CNAME
    /// RDATA. It must give the DNAME and the CNAME, and stop there (RFC 1034 §3.6.2).
    #[test]
    fn cname_query_at_a_synthesised_cname() {
        let c = cache_with_synthesised_cname();
        let (r, m) = answer(&c, "www.old.example.", RType::CNAME, 0);
        assert!(matches!(
            r,
            CacheAnswer::Hit {
                rcode: Rcode::NOERROR,
                truncated: false,
                locks: 1
            }
        ));
        let got: Vec<_> = m
            .answers
            .iter()
            .map(|r| (r.owner.to_string(), r.rtype, r.rdata.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "old.example.".to_string(),
                    RType::DNAME,
                    n("new.example.").as_wire().to_vec()
                ),
                (
                    "www.old.example.".to_string(),
                    RType::CNAME,
                    n("www.new.example.").as_wire().to_vec()
                ),
            ]
        );
        match c.lookup(
            n("www.old.example.").as_ref(),
            RType::CNAME,
            Rank::Answer,
            0,
        ) {
            Lookup::Positive(v) => {
                let types: Vec<_> = v.iter().map(|r| r.rtype).collect();
                assert_eq!(types, [RType::DNAME, RType::CNAME]);
            }
            other => panic!("{other:?}"),
        }
    }
}
