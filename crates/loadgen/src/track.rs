//! Queries in flight on one socket or connection, found by ID, expired in send order.
//!
//! A table of all 65,536 IDs says which are in flight (and for which query and stream); a FIFO
//! of (ID, generation) in send order is the timer wheel: sends happen in time order, so the
//! oldest query is always at the front and expiring costs O(1) per query. Entries whose
//! query was answered become stale and are dropped when they reach the front.

use std::collections::VecDeque;

/// One query in flight.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Slot {
    /// Send time, ns since the run's start.
    pub(crate) sent: u64,
    /// Index in the query list.
    pub(crate) query: u32,
    /// The stream that sent it (rr mode), else 0.
    pub(crate) stream: u32,
    generation: u32,
    busy: bool,
}

pub(crate) struct Tracker {
    slots: Box<[Slot]>,
    next_id: u16,
    fifo: VecDeque<(u16, u32)>,
    in_flight: usize,
}

impl Tracker {
    pub(crate) fn new() -> Self {
        Self {
            slots: vec![Slot::default(); 1 << 16].into_boxed_slice(),
            next_id: fastrand::u16(..),
            fifo: VecDeque::with_capacity(1 << 16),
            in_flight: 0,
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Reserves a free ID for `query` (sent by `stream`); `None` if all 65,536 are in flight.
    #[inline]
    pub(crate) fn reserve(&mut self, query: u32, stream: u32) -> Option<u16> {
        if self.in_flight >= self.slots.len() {
            return None;
        }
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            let s = &mut self.slots[id as usize];
            if !s.busy {
                s.busy = true;
                s.generation = s.generation.wrapping_add(1);
                s.query = query;
                s.stream = stream;
                self.in_flight += 1;
                return Some(id);
            }
        }
    }

    /// The reserved query `id` left at `sent` ns: start its timer.
    #[inline]
    pub(crate) fn commit(&mut self, id: u16, sent: u64) {
        let s = &mut self.slots[id as usize];
        s.sent = sent;
        self.fifo.push_back((id, s.generation));
    }

    /// The reserved query `id` was not sent after all.
    #[inline]
    pub(crate) fn cancel(&mut self, id: u16) {
        let s = &mut self.slots[id as usize];
        if s.busy {
            s.busy = false;
            self.in_flight -= 1;
        }
    }

    /// A response with `id` arrived: if that ID is in flight and `check` accepts its slot
    /// (the question matches), frees and returns it.
    #[inline]
    pub(crate) fn take(&mut self, id: u16, check: impl FnOnce(&Slot) -> bool) -> Option<Slot> {
        let s = &mut self.slots[id as usize];
        if !s.busy || !check(s) {
            return None;
        }
        s.busy = false;
        self.in_flight -= 1;
        Some(*s)
    }

    /// Expires every query sent at or before `now - timeout`, oldest first, calling `lost`
    /// for each; returns the time the next one expires, if any.
    #[inline]
    pub(crate) fn expire(
        &mut self,
        now: u64,
        timeout: u64,
        mut lost: impl FnMut(&Slot),
    ) -> Option<u64> {
        while let Some(&(id, generation)) = self.fifo.front() {
            let s = &mut self.slots[id as usize];
            if !s.busy || s.generation != generation {
                self.fifo.pop_front();
                continue;
            }
            let deadline = s.sent + timeout;
            if deadline > now {
                return Some(deadline);
            }
            s.busy = false;
            self.in_flight -= 1;
            self.fifo.pop_front();
            lost(s);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_expire_and_reuse() {
        let mut t = Tracker::new();
        let a = t.reserve(7, 1).unwrap();
        t.commit(a, 100);
        let b = t.reserve(8, 2).unwrap();
        t.commit(b, 200);
        let c = t.reserve(9, 3).unwrap();
        t.cancel(c);
        assert_eq!(t.in_flight(), 2);
        assert!(t.take(a, |s| s.query == 99).is_none());
        assert_eq!(t.take(a, |_| true).unwrap().stream, 1);
        assert!(t.take(a, |_| true).is_none(), "answered twice");
        let mut lost = vec![];
        assert_eq!(t.expire(1000, 1000, |s| lost.push(s.query)), Some(1200));
        assert_eq!(t.expire(1200, 1000, |s| lost.push(s.query)), None);
        assert_eq!(lost, vec![8]);
        assert_eq!(t.in_flight(), 0);
    }

    #[test]
    fn skips_busy_ids_when_wrapping() {
        let mut t = Tracker::new();
        let first = t.reserve(0, 0).unwrap();
        t.commit(first, 0);
        for i in 0..70_000u32 {
            let id = t.reserve(i, 0).unwrap();
            assert_ne!(id, first);
            t.commit(id, 1);
            assert!(t.take(id, |_| true).is_some());
        }
        let mut n = 0;
        t.expire(10, 5, |_| n += 1);
        assert_eq!(n, 1);
        for _ in 0..(1 << 16) {
            let id = t.reserve(0, 0).unwrap();
            t.commit(id, 0);
        }
        assert!(t.reserve(0, 0).is_none());
    }
}
