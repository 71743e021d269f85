//! rpz::shards -- the copy-on-write storage of a policy zone: the name triggers split in
//! [`SHARDS`] tables by hash, and the local data in chunks, each behind an `Arc`. A new
//! version made by an IXFR ([`super::PolicyZone::patched`]) shares every shard and chunk
//! it does not change with the version the workers read, and copies only those it does:
//! an update costs the shards its names fall in, not the whole zone.

use std::sync::Arc;

use shardns_wire::NameRef;

use super::table::NameTable;
use super::{LocalData, Stored};

/// Shards of a name table: enough that one holds a few hundred names of a million-name
/// zone, so that a change copies a fraction of a percent of it.
const SHARDS: usize = 4096;
/// Local data per chunk.
const CHUNK: usize = 1024;

/// The shard of a name's hash: bits that hashbrown uses neither for the bucket (the low
/// ones, a shard's table being small) nor for its tag (the top seven).
#[inline]
fn shard_of(hash: u64) -> usize {
    (hash >> 32) as usize % SHARDS
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
        Self {
            shards: vec![None; SHARDS].into_boxed_slice(),
            len: 0,
            label_counts: 0,
        }
    }
}

impl Names {
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
        self.shards[shard_of(hash)].as_ref()?.get(name, hash)
    }

    /// While building (the shards not shared yet): the entry of `name`, or `None` after
    /// adding it with `action`.
    pub(super) fn get_or_insert(&mut self, name: NameRef<'_>, action: Stored) -> Option<Stored> {
        let shard = self.shards[shard_of(name.hash_ci())].get_or_insert_with(Default::default);
        let old = Arc::make_mut(shard).get_or_insert(name, action);
        if old.is_none() {
            self.len += 1;
            self.label_counts |= 1u128 << name.label_count();
        }
        old
    }

    /// Room for `n` more names, spread over the shards.
    pub(super) fn reserve(&mut self, n: usize) {
        let each = n / SHARDS + n / SHARDS / 8 + 1;
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
            .map(|(i, (n, _))| (shard_of(n.hash_ci()), i))
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
