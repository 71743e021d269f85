//! tcp::table -- one worker's connections: a slab indexed by the epoll token, and
//! intrusive lists ordered by time (activity, partial queries, and each client's own) so
//! that every operation is O(1).

use super::{Conn, Link, ACTIVITY, NIL, PARTIAL, UNLINKED};
use std::time::Instant;

#[derive(Debug)]
struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

/// One worker's connections: a slab (index = epoll token) plus two intrusive lists, each
/// ordered by time, oldest first: every connection by last activity (idle timeout and
/// eviction), and the connections in the middle of receiving a query by when that query
/// started (read timeout). Times only grow, so appending keeps both lists sorted.
#[derive(Debug)]
pub(crate) struct ConnTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: [u32; 2],
    tail: [u32; 2],
    len: usize,
}

impl ConnTable {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            head: [NIL; 2],
            tail: [NIL; 2],
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds a connection as the most recently active; returns its slot and generation, and
    /// whether the table had to allocate.
    pub(crate) fn insert(&mut self, conn: Conn) -> (u32, u32, bool) {
        let now = conn.last_active;
        let mut allocated = false;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize].conn = Some(conn);
                s
            }
            None => {
                let cap = (self.slots.capacity(), self.free.capacity());
                self.slots.push(Slot {
                    generation: 0,
                    conn: Some(conn),
                });
                self.free
                    .reserve(self.slots.len().saturating_sub(self.free.len()));
                allocated = cap != (self.slots.capacity(), self.free.capacity());
                (self.slots.len() - 1) as u32
            }
        };
        self.len += 1;
        self.conn_mut(slot).last_active = now;
        self.push_back(ACTIVITY, slot);
        (slot, self.slots[slot as usize].generation, allocated)
    }

    /// The connection in `slot` if it is still the one `generation` named.
    pub(crate) fn get_mut(&mut self, slot: u32, generation: u32) -> Option<&mut Conn> {
        let s = self.slots.get_mut(slot as usize)?;
        if s.generation != generation {
            return None;
        }
        s.conn.as_mut()
    }

    fn occupied_slot(&self, slot: u32) -> bool {
        self.slots
            .get(slot as usize)
            .is_some_and(|s| s.conn.is_some())
    }

    /// Marks `slot` as active at `now` (moves it to the back of the activity list).
    pub(crate) fn touch(&mut self, slot: u32, now: Instant) {
        if self.occupied_slot(slot) {
            self.unlink(ACTIVITY, slot);
            self.conn_mut(slot).last_active = now;
            self.push_back(ACTIVITY, slot);
        }
    }

    /// Records that `slot` started receiving a query at `now` (moves it to the back of the
    /// partial list).
    pub(crate) fn set_partial(&mut self, slot: u32, now: Instant) {
        if !self.occupied_slot(slot) {
            return;
        }
        if self.conn_mut(slot).in_partial {
            self.unlink(PARTIAL, slot);
        }
        let c = self.conn_mut(slot);
        c.partial_since = now;
        c.in_partial = true;
        self.push_back(PARTIAL, slot);
    }

    /// Takes `slot` out of the partial list (it holds no part of a query now).
    pub(crate) fn clear_partial(&mut self, slot: u32) {
        if self.occupied_slot(slot) && self.conn_mut(slot).in_partial {
            self.unlink(PARTIAL, slot);
            self.conn_mut(slot).in_partial = false;
        }
    }

    /// Removes the connection in `slot`.
    pub(crate) fn remove(&mut self, slot: u32) -> Option<Conn> {
        if !self.occupied_slot(slot) {
            return None;
        }
        self.unlink(ACTIVITY, slot);
        self.clear_partial(slot);
        let s = &mut self.slots[slot as usize];
        s.generation = s.generation.wrapping_add(1);
        let conn = s.conn.take();
        self.free.push(slot);
        self.len -= 1;
        conn
    }

    /// The least recently active connection and when it was last active.
    pub(crate) fn oldest(&self) -> Option<(u32, Instant)> {
        let c = self
            .slots
            .get(self.head[ACTIVITY] as usize)?
            .conn
            .as_ref()?;
        Some((self.head[ACTIVITY], c.last_active))
    }

    /// The connection that started receiving its current query longest ago, and when.
    pub(crate) fn oldest_partial(&self) -> Option<(u32, Instant)> {
        let c = self.slots.get(self.head[PARTIAL] as usize)?.conn.as_ref()?;
        Some((self.head[PARTIAL], c.partial_since))
    }

    /// Every occupied slot (shutdown only; O(n)).
    pub(crate) fn occupied(&self) -> Vec<u32> {
        (0..self.slots.len() as u32)
            .filter(|&s| self.slots[s as usize].conn.is_some())
            .collect()
    }

    fn conn_mut(&mut self, slot: u32) -> &mut Conn {
        self.slots[slot as usize]
            .conn
            .as_mut()
            .expect("linked slot holds a connection")
    }

    fn unlink(&mut self, list: usize, slot: u32) {
        let Link { prev, next } = std::mem::replace(&mut self.conn_mut(slot).links[list], UNLINKED);
        if prev == NIL {
            self.head[list] = next;
        } else {
            self.conn_mut(prev).links[list].next = next;
        }
        if next == NIL {
            self.tail[list] = prev;
        } else {
            self.conn_mut(next).links[list].prev = prev;
        }
    }

    fn push_back(&mut self, list: usize, slot: u32) {
        let tail = self.tail[list];
        self.conn_mut(slot).links[list] = Link {
            prev: tail,
            next: NIL,
        };
        if tail == NIL {
            self.head[list] = slot;
        } else {
            self.conn_mut(tail).links[list].next = slot;
        }
        self.tail[list] = slot;
    }
}
