//! tcp::table -- one worker's connections: a slab indexed by the epoll token, and
//! intrusive lists ordered by time (activity, partial queries, and each client's own) so
//! that every operation is O(1).

use super::{Conn, Link, ACTIVITY, CLIENT, NIL, PARTIAL, UNLINKED, UNTRACKED};
use std::collections::HashMap;
use std::time::Instant;

#[derive(Debug)]
struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

/// One worker's connections: a slab (index = epoll token) plus intrusive lists, each
/// ordered by time, oldest first: every connection by last activity (idle timeout and
/// eviction), the connections in the middle of receiving a query by when that query
/// started (read timeout), and each counted client's connections by last activity (a
/// client at its limit gives up its own longest-idle one). Times only grow, so appending
/// keeps every list sorted.
#[derive(Debug)]
pub(crate) struct ConnTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: [u32; 2],
    tail: [u32; 2],
    /// The ends of each client's list, by the client's `ClientCounts` slot; a client with
    /// no connection on this worker has no entry.
    clients: HashMap<u32, (u32, u32)>,
    len: usize,
}

impl ConnTable {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            head: [NIL; 2],
            tail: [NIL; 2],
            clients: HashMap::with_capacity(n),
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
                allocated = self.clients.len() == self.clients.capacity();
                self.slots.push(Slot {
                    generation: 0,
                    conn: Some(conn),
                });
                self.free
                    .reserve(self.slots.len().saturating_sub(self.free.len()));
                allocated |= cap != (self.slots.capacity(), self.free.capacity());
                (self.slots.len() - 1) as u32
            }
        };
        self.len += 1;
        self.conn_mut(slot).last_active = now;
        self.push_back(ACTIVITY, slot);
        if self.conn_mut(slot).client_slot != UNTRACKED {
            self.push_back(CLIENT, slot);
        }
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
            // Already last of its client's list (a client's only connection, or the one it
            // keeps using): nothing moves, and the client's ends are not looked up.
            let c = self.conn_mut(slot);
            if c.client_slot != UNTRACKED && c.links[CLIENT].next != NIL {
                self.unlink(CLIENT, slot);
                self.push_back(CLIENT, slot);
            }
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
        if self.conn_mut(slot).client_slot != UNTRACKED {
            self.unlink(CLIENT, slot);
        }
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

    /// The least recently active connection of the client counted in `client_slot` (a
    /// [`super::ClientCounts`] slot) on this worker, if it has one here.
    pub(crate) fn oldest_of_client(&self, client_slot: u32) -> Option<u32> {
        self.clients.get(&client_slot).map(|&(head, _)| head)
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

    /// The ends (head, tail) of `list`; `key` is the client slot for [`CLIENT`].
    fn ends(&self, list: usize, key: u32) -> (u32, u32) {
        if list == CLIENT {
            self.clients.get(&key).copied().unwrap_or((NIL, NIL))
        } else {
            (self.head[list], self.tail[list])
        }
    }

    fn set_ends(&mut self, list: usize, key: u32, (head, tail): (u32, u32)) {
        if list != CLIENT {
            self.head[list] = head;
            self.tail[list] = tail;
        } else if head == NIL {
            self.clients.remove(&key);
        } else {
            self.clients.insert(key, (head, tail));
        }
    }

    fn unlink(&mut self, list: usize, slot: u32) {
        let key = self.conn_mut(slot).client_slot;
        let Link { prev, next } = std::mem::replace(&mut self.conn_mut(slot).links[list], UNLINKED);
        let (mut head, mut tail) = self.ends(list, key);
        if prev == NIL {
            head = next;
        } else {
            self.conn_mut(prev).links[list].next = next;
        }
        if next == NIL {
            tail = prev;
        } else {
            self.conn_mut(next).links[list].prev = prev;
        }
        self.set_ends(list, key, (head, tail));
    }

    fn push_back(&mut self, list: usize, slot: u32) {
        let key = self.conn_mut(slot).client_slot;
        let (head, tail) = self.ends(list, key);
        self.conn_mut(slot).links[list] = Link {
            prev: tail,
            next: NIL,
        };
        if tail == NIL {
            self.set_ends(list, key, (slot, slot));
        } else {
            self.conn_mut(tail).links[list].next = slot;
            self.set_ends(list, key, (head, slot));
        }
    }
}
