//! A denial chain edited in place: the old chain (the zone's NSEC owners in canonical
//! order, or its NSEC3 hashes in order), the members it loses and those it gains; the next
//! and previous member of any key in the new chain, found by a binary search in the old
//! one and steps over the members lost (so O(log zone + change) per question).

use std::cmp::Ordering;
use std::collections::HashSet;

/// The old chain, sorted by key, read by index.
pub(super) trait Old {
    /// A key: a name (canonical order) or an NSEC3 hash.
    type Key;
    fn len(&self) -> usize;
    /// Old member `i`'s key against `k`.
    fn cmp_at(&self, i: usize, k: &Self::Key) -> Ordering;
    /// Two keys.
    fn cmp(a: &Self::Key, b: &Self::Key) -> Ordering;
}

/// A member of the new chain: one of the old chain's, or one of the added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Link {
    Old(usize),
    Added(usize),
}

/// The edit: old members removed (by index), keys added (sorted).
pub(super) struct Edit<'c, C: Old> {
    pub(super) old: &'c C,
    pub(super) removed: HashSet<usize>,
    pub(super) added: Vec<C::Key>,
}

/// The number of leading indices of `0..n` for which `pred` holds (it holds for a prefix).
fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl<C: Old> Edit<'_, C> {
    /// The old member at or after index `i` (forward) or at or before it (backward) that
    /// is not removed, wrapping around; whether it wrapped. `None` if all are removed.
    fn step(&self, mut i: usize, forward: bool, mut wrapped: bool) -> Option<(usize, bool)> {
        let n = self.old.len();
        for _ in 0..=n {
            if i >= n {
                if forward {
                    i = 0;
                } else {
                    i = n.checked_sub(1)?;
                }
                wrapped = true;
            }
            if !self.removed.contains(&i) {
                return Some((i, wrapped));
            }
            if forward {
                i += 1;
            } else if i == 0 {
                i = n;
            } else {
                i -= 1;
            }
        }
        None
    }

    /// The member of the new chain after `k` (wrapping to the first).
    pub(super) fn next(&self, k: &C::Key) -> Link {
        let n = self.old.len();
        let i = partition(n, |i| self.old.cmp_at(i, k) != Ordering::Greater);
        let old = self.step(i, true, false);
        let j = self
            .added
            .partition_point(|a| C::cmp(a, k) != Ordering::Greater);
        let add = (!self.added.is_empty()).then_some(if j == self.added.len() {
            (0, true)
        } else {
            (j, false)
        });
        match (old, add) {
            (Some((i, _)), None) => Link::Old(i),
            (None, Some((j, _))) => Link::Added(j),
            (Some((i, wi)), Some((j, wj))) => {
                let old_first = match wi.cmp(&wj) {
                    Ordering::Equal => self.old.cmp_at(i, &self.added[j]) == Ordering::Less,
                    o => o == Ordering::Less,
                };
                if old_first {
                    Link::Old(i)
                } else {
                    Link::Added(j)
                }
            }
            (None, None) => unreachable!("the chain keeps its apex"),
        }
    }

    /// The member of the new chain before `k` (wrapping to the last).
    pub(super) fn prev(&self, k: &C::Key) -> Link {
        let n = self.old.len();
        let i = partition(n, |i| self.old.cmp_at(i, k) == Ordering::Less);
        let old = match i {
            0 => self.step(n, false, true),
            i => self.step(i - 1, false, false),
        };
        let j = self
            .added
            .partition_point(|a| C::cmp(a, k) == Ordering::Less);
        let add = (!self.added.is_empty()).then(|| match j {
            0 => (self.added.len() - 1, true),
            j => (j - 1, false),
        });
        match (old, add) {
            (Some((i, _)), None) => Link::Old(i),
            (None, Some((j, _))) => Link::Added(j),
            (Some((i, wi)), Some((j, wj))) => {
                let old_first = match wi.cmp(&wj) {
                    Ordering::Equal => self.old.cmp_at(i, &self.added[j]) == Ordering::Greater,
                    o => o == Ordering::Less,
                };
                if old_first {
                    Link::Old(i)
                } else {
                    Link::Added(j)
                }
            }
            (None, None) => unreachable!("the chain keeps its apex"),
        }
    }
}
