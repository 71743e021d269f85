//! rpz::shards -- the copy-on-write storage of a policy zone: the name triggers split in
//! shards by hash (a power of two of them, about [`PER_SHARD`] names each for a zone whose
//! size is known when it is built, [`SHARDS`] otherwise), and the local data in chunks,
//! each behind an `Arc`. A new
//! version made by an IXFR ([`super::PolicyZone::patched`]) shares every shard and chunk
//! it does not change with the version the workers read, and copies only those it does:
//! an update costs the shards its names fall in, not the whole zone.

use std::sync::Arc;

use shardns_wire::NameRef;

use super::table::NameTable;
use super::{LocalData, Stored};

/// Shards of a name table whose size is not known when it is built.
const SHARDS: usize = 4096;
/// Names per shard aimed at when the size is known: a change copies about this many
/// names' worth, and each shard costs about a hundred octets of its own.
const PER_SHARD: usize = 64;
/// Most shards of one table (a million names: 16,384 of them).
const MAX_SHARDS: usize = 1 << 16;
/// Local data per chunk.
const CHUNK: usize = 1024;

/// The shard of a name's hash among `n` (a power of two): bits that hashbrown uses
/// neither for the bucket (the low ones, a shard's table being small) nor for its tag (the
/// top seven).
#[inline]
fn shard_of(hash: u64, n: usize) -> usize {
    (hash >> 32) as usize & (n - 1)
}

/// Name triggers in shards (created when the first name falls in them).
#[derive(Clone)]
pub(super) struct Names {
    shards: Box<[Option<Arc<NameTable>>]>,
    len: usize,
    /// The union of the shards' label counts (a bit may stay after its names went: it
    /// only costs a lookup).
    label_counts: u128,
}

impl Default for Names {
    fn default() -> Self {
        Self::with_shards(SHARDS)
    }
}

impl Names {
    /// An empty table of `n` shards (a power of two).
    fn with_shards(n: usize) -> Self {
        Self {
            shards: vec![None; n].into_boxed_slice(),
            len: 0,
            label_counts: 0,
        }
    }

    /// An empty table sized for about `n` names.
    pub(super) fn for_names(n: usize) -> Self {
        Self::with_shards((n / PER_SHARD).next_power_of_two().clamp(256, MAX_SHARDS))
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn memory(&self) -> usize {
        self.shards.len() * size_of::<usize>()
            + self
                .shards
                .iter()
                .flatten()
                .map(|s| s.memory() + size_of::<NameTable>() + 16)
                .sum::<usize>()
    }

    /// Whether a name of `labels` labels may be in the table.
    #[inline]
    pub(super) fn may_hold(&self, labels: usize) -> bool {
        labels < 128 && self.label_counts & (1u128 << labels) != 0
    }

    /// The action of `name`, if it is in the table.
    #[inline]
    pub(super) fn get(&self, name: NameRef<'_>) -> Option<Stored> {
        let hash = name.hash_ci();
        self.shards[shard_of(hash, self.shards.len())]
            .as_ref()?
            .get(name, hash)
    }

    /// While building (the shards not shared yet): the entry of `name`, or `None` after
    /// adding it with `action`.
    pub(super) fn get_or_insert(&mut self, name: NameRef<'_>, action: Stored) -> Option<Stored> {
        let at = shard_of(name.hash_ci(), self.shards.len());
        let shard = self.shards[at].get_or_insert_with(Default::default);
        let old = Arc::make_mut(shard).get_or_insert(name, action);
        if old.is_none() {
            self.len += 1;
            self.label_counts |= 1u128 << name.label_count();
        }
        old
    }

    /// Room for `n` more names, spread over the shards.
    pub(super) fn reserve(&mut self, n: usize) {
        let shards = self.shards.len();
        let each = n / shards + n / shards / 8 + 1;
        for s in self.shards.iter_mut() {
            Arc::make_mut(s.get_or_insert_with(Default::default)).reserve(each);
        }
    }

    pub(super) fn shrink(&mut self) {
        for s in self.shards.iter_mut() {
            if s.as_ref().is_some_and(|t| t.is_empty()) {
                *s = None;
            } else if let Some(t) = s {
                Arc::make_mut(t).shrink();
            }
        }
    }

    /// A copy with `changes` made (each a name and its new action, `None` to remove it):
    /// the shards they fall in are built again, the others shared.
    pub(super) fn with(&self, changes: &[(NameRef<'_>, Option<Stored>)]) -> Self {
        let mut by_shard: Vec<(usize, usize)> = changes
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (shard_of(n.hash_ci(), self.shards.len()), i))
            .collect();
        by_shard.sort_unstable();
        let mut out = self.clone();
        for group in by_shard.chunk_by(|a, b| a.0 == b.0) {
            let shard = group[0].0;
            let mine: Vec<&(NameRef<'_>, Option<Stored>)> =
                group.iter().map(|&(_, i)| &changes[i]).collect();
            let mut table = NameTable::default();
            let old = self.shards[shard].as_deref();
            table.reserve(old.map_or(0, NameTable::len) + mine.len());
            for (wire, a) in old.into_iter().flat_map(NameTable::entries) {
                if !mine
                    .iter()
                    .any(|(n, _)| n.as_wire().eq_ignore_ascii_case(wire))
                {
                    let _ = table.get_or_insert(NameRef::from_validated(wire), a);
                }
            }
            for (name, a) in &mine {
                if let Some(a) = a {
                    let _ = table.get_or_insert(*name, *a);
                }
            }
            table.shrink();
            out.len = out.len - old.map_or(0, NameTable::len) + table.len();
            out.label_counts |= table.label_counts();
            out.shards[shard] = (!table.is_empty()).then(|| Arc::new(table));
        }
        out
    }
}

/// Local data in chunks: the builder appends; an IXFR appends too (copying the last
/// chunk only), and the entries it replaces stay until the next whole transfer.
#[derive(Clone, Default)]
pub(super) struct Locals {
    chunks: Vec<Arc<Vec<LocalData>>>,
    len: usize,
}

impl Locals {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn get(&self, i: usize) -> &LocalData {
        &self.chunks[i / CHUNK][i % CHUNK]
    }

    pub(super) fn get_mut(&mut self, i: usize) -> &mut LocalData {
        &mut Arc::make_mut(&mut self.chunks[i / CHUNK])[i % CHUNK]
    }

    pub(super) fn push(&mut self, data: LocalData) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        let last = self.chunks.last_mut().expect("a chunk with room");
        Arc::make_mut(last).push(data);
        self.len += 1;
    }

    pub(super) fn pop(&mut self) {
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).pop();
            self.len -= 1;
            if last.is_empty() {
                self.chunks.pop();
            }
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &LocalData> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    pub(super) fn shrink(&mut self) {
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).shrink_to_fit();
        }
    }
}

#[cfg(test)]
impl Names {
    /// Shards this table holds that are not the very ones `other` holds.
    pub(super) fn unshared_with(&self, other: &Names) -> usize {
        self.shards
            .iter()
            .zip(other.shards.iter())
            .filter(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
                (None, None) => false,
                _ => true,
            })
            .count()
    }
}
