//! tcp -- DNS over TCP state (RFC 7766, RFC 1035 §4.2.2): 2-octet length framing, one
//! connection's buffers, and one worker's table of connections ordered by last activity.
//!
//! Also the count of open connections per client address over all workers
//! ([`ClientCounts`]).
//!
//! Every operation here is O(1): the table is a slab indexed by the epoll token; the
//! least recently active connection (for idle timeouts and eviction) is the head of an
//! intrusive doubly linked list, and the connection that has been receiving one query the
//! longest (for the read timeout) the head of another. Never: socket calls, clocks (time is
//! passed in), locks.

use crate::keyed_hash;
use shardns_zone::xfr::Transfer;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Largest frame: the 2-octet length plus 65535 octets of message.
pub(crate) const MAX_FRAME: usize = 2 + 65535;
/// Size of a fresh connection's input buffer; grows for larger queries.
pub(crate) const INPUT_INITIAL: usize = 1024;

/// Input bytes of one connection, cut into length-prefixed frames.
#[derive(Debug)]
pub(crate) struct FrameBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl FrameBuf {
    /// Uses `buf` (its length, not capacity) as the initial space.
    pub(crate) fn new(mut buf: Vec<u8>) -> Self {
        if buf.len() < 2 {
            buf.resize(INPUT_INITIAL, 0);
        }
        Self {
            buf,
            start: 0,
            end: 0,
        }
    }

    /// Gives the buffer back (for reuse by the next connection).
    pub(crate) fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    /// Bytes received but not yet taken as frames.
    pub(crate) fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Length of the frame at `start`, once its 2-octet prefix is here.
    fn pending_frame_len(&self) -> Option<usize> {
        (self.buffered() >= 2)
            .then(|| u16::from_be_bytes([self.buf[self.start], self.buf[self.start + 1]]) as usize)
    }

    /// Whether a whole frame is buffered.
    pub(crate) fn has_frame(&self) -> bool {
        self.pending_frame_len()
            .is_some_and(|len| self.buffered() >= 2 + len)
    }

    /// Takes the next whole frame; returns the message's range for [`FrameBuf::frame`].
    pub(crate) fn next_frame(&mut self) -> Option<(usize, usize)> {
        let len = self.pending_frame_len()?;
        if self.buffered() < 2 + len {
            return None;
        }
        let range = (self.start + 2, self.start + 2 + len);
        self.start += 2 + len;
        Some(range)
    }

    /// The message bytes of a range from [`FrameBuf::next_frame`] (valid until the next
    /// [`FrameBuf::spare`]).
    pub(crate) fn frame(&self, range: (usize, usize)) -> &[u8] {
        &self.buf[range.0..range.1]
    }

    /// Space to read into: moves unread bytes to the front and grows the buffer if the
    /// frame being received does not fit. The flag says whether it allocated.
    pub(crate) fn spare(&mut self) -> (&mut [u8], bool) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let need = self.pending_frame_len().map_or(2, |len| 2 + len);
        let grew = need > self.buf.len();
        if grew {
            // Grow to the frame, at least doubling, never past one maximal frame.
            let size = need.max(self.buf.len() * 2).min(MAX_FRAME);
            self.buf.resize(size, 0);
        }
        (&mut self.buf[self.end..], grew)
    }

    /// Records that `n` bytes were read into [`FrameBuf::spare`].
    pub(crate) fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }
}

/// No neighbour in a list.
const NIL: u32 = u32::MAX;
/// The list of every connection, least recently active first (idle timeout, eviction).
const ACTIVITY: usize = 0;
/// The list of connections holding part of a query, oldest first (read timeout).
const PARTIAL: usize = 1;

/// A connection's neighbours in one list.
#[derive(Debug, Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
}

const UNLINKED: Link = Link {
    prev: NIL,
    next: NIL,
};

/// One client connection.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) v6: bool,
    pub(crate) input: FrameBuf,
    /// Response bytes the socket did not take yet; `output[sent..]` is still to go.
    pub(crate) output: Vec<u8>,
    pub(crate) sent: usize,
    /// The epoll interest currently registered.
    pub(crate) interest: u32,
    /// No more queries are read: the client shut down its sending side (or the read
    /// failed), or the connection reached its query limit. It closes once its output is sent.
    pub(crate) peer_closed: bool,
    /// Queries taken from this connection.
    pub(crate) queries: u32,
    /// This client's slot in [`ClientCounts`] ([`UNTRACKED`] if none).
    pub(crate) client_slot: u32,
    /// An outgoing zone transfer being streamed; further queries wait until it ends.
    pub(crate) transfer: Option<Box<Transfer>>,
    last_active: Instant,
    /// When the query being received started (valid while in the partial list).
    partial_since: Instant,
    in_partial: bool,
    links: [Link; 2],
}

impl Conn {
    pub(crate) fn new(
        stream: TcpStream,
        peer: Option<SocketAddr>,
        v6: bool,
        input: Vec<u8>,
        now: Instant,
    ) -> Self {
        Self {
            stream,
            peer,
            v6,
            input: FrameBuf::new(input),
            output: Vec::new(),
            sent: 0,
            interest: 0,
            peer_closed: false,
            queries: 0,
            client_slot: UNTRACKED,
            transfer: None,
            last_active: now,
            partial_since: now,
            in_partial: false,
            links: [UNLINKED; 2],
        }
    }

    /// Response bytes waiting for the socket.
    pub(crate) fn unsent(&self) -> usize {
        self.output.len() - self.sent
    }

    /// True while part of a query is buffered and the rest has not arrived.
    pub(crate) fn receiving(&self) -> bool {
        self.input.buffered() > 0 && !self.input.has_frame()
    }

    /// True if the connection is in the partial list (see [`ConnTable::set_partial`]).
    pub(crate) fn in_partial(&self) -> bool {
        self.in_partial
    }
}

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

/// A connection whose client has no slot in [`ClientCounts`] (limit off, no address, or no
/// room): it is not counted.
pub(crate) const UNTRACKED: u32 = u32::MAX;
/// Slots looked at for one address.
const PROBE: usize = 8;
/// Low bits of a slot word: the connection count; the rest: the address's tag.
const COUNT_BITS: u32 = 16;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// Open TCP connections per client address, over all workers, for
/// `limits.tcp_connections_per_client`. A fixed table of atomic words, each holding an
/// address's 48-bit tag and its connection count, touched only when a connection is
/// accepted or closed (never per query) and without a lock. An address probes [`PROBE`]
/// slots from its (seeded) hash; a slot whose count is 0 is free. The table has room for
/// several times `tcp_connections` addresses, so it is seldom crowded; an address that
/// finds no room is not counted (it is let in), and two addresses with the same tag (a
/// 2^-48 chance) share a count.
pub(crate) struct ClientCounts {
    slots: Box<[AtomicU64]>,
    mask: usize,
    seed: u64,
    limit: u64,
}

impl ClientCounts {
    /// A table for `limit` connections per address (0: no limit, no table) and up to
    /// `connections` open connections in all.
    pub(crate) fn new(limit: usize, connections: usize, seed: u64) -> Self {
        let size = if limit == 0 {
            0
        } else {
            connections
                .saturating_mul(4)
                .clamp(1024, 1 << 22)
                .next_power_of_two()
        };
        Self {
            slots: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask: size.saturating_sub(1),
            seed,
            limit: (limit as u64).min(COUNT_MASK),
        }
    }

    fn tag(&self, ip: IpAddr) -> u64 {
        let bits = match ip {
            IpAddr::V4(a) => u128::from(u32::from(a)) | 4 << 120,
            IpAddr::V6(a) => u128::from(a),
        };
        let h = keyed_hash(self.seed, &[(bits >> 64) as u64, bits as u64]);
        // The top 48 bits are the tag (never 0); the slot index comes from the rest.
        h | 1 << 63
    }

    /// Counts a new connection from `ip`: `Some(slot)` (or `Some(UNTRACKED)`) if it may be
    /// kept, `None` if its address already has `limit` connections open.
    pub(crate) fn acquire(&self, ip: Option<IpAddr>) -> Option<u32> {
        let Some(ip) = ip.filter(|_| self.limit > 0) else {
            return Some(UNTRACKED);
        };
        let h = self.tag(ip);
        let tag = h >> COUNT_BITS;
        let start = h as usize;
        // A few rounds: another worker may claim or change a slot under us.
        for _ in 0..4 {
            // The address's own slot, if it has one.
            for i in 0..PROBE {
                let idx = (start + i) & self.mask;
                let slot = &self.slots[idx];
                let mut v = slot.load(Relaxed);
                while v >> COUNT_BITS == tag && v & COUNT_MASK > 0 {
                    if v & COUNT_MASK >= self.limit {
                        return None;
                    }
                    match slot.compare_exchange_weak(v, v + 1, Relaxed, Relaxed) {
                        Ok(_) => return Some(idx as u32),
                        Err(now) => v = now,
                    }
                }
            }
            // Else a free slot.
            let mut raced = false;
            for i in 0..PROBE {
                let idx = (start + i) & self.mask;
                let slot = &self.slots[idx];
                let v = slot.load(Relaxed);
                if v & COUNT_MASK == 0 {
                    match slot.compare_exchange(v, tag << COUNT_BITS | 1, Relaxed, Relaxed) {
                        Ok(_) => return Some(idx as u32),
                        Err(_) => {
                            raced = true;
                            break;
                        }
                    }
                }
            }
            if !raced {
                break;
            }
        }
        Some(UNTRACKED)
    }

    /// Uncounts a connection counted by [`ClientCounts::acquire`] (nothing for
    /// [`UNTRACKED`]).
    pub(crate) fn release(&self, slot: u32) {
        if let Some(s) = self.slots.get(slot as usize) {
            s.fetch_sub(1, Relaxed);
        }
    }

    /// Open connections counted for `ip` (tests and diagnostics).
    #[cfg(test)]
    fn count(&self, ip: IpAddr) -> u64 {
        let h = self.tag(ip);
        (0..PROBE)
            .map(|i| self.slots[(h as usize + i) & self.mask].load(Relaxed))
            .filter(|v| v >> COUNT_BITS == h >> COUNT_BITS)
            .map(|v| v & COUNT_MASK)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    fn framed(msgs: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for m in msgs {
            v.extend_from_slice(&(m.len() as u16).to_be_bytes());
            v.extend_from_slice(m);
        }
        v
    }

    /// Feeds `data` in pieces of `step` bytes and collects every frame.
    fn feed(data: &[u8], step: usize) -> Vec<Vec<u8>> {
        let mut fb = FrameBuf::new(vec![0; 4]);
        let mut frames = Vec::new();
        let mut pos = 0;
        while pos < data.len() {
            let (spare, _) = fb.spare();
            let n = spare.len().min(step).min(data.len() - pos);
            spare[..n].copy_from_slice(&data[pos..pos + n]);
            fb.filled(n);
            pos += n;
            while let Some(r) = fb.next_frame() {
                frames.push(fb.frame(r).to_vec());
            }
        }
        assert_eq!(fb.buffered(), 0);
        frames
    }

    #[test]
    fn frames_split_anywhere() {
        let big = vec![9u8; 3000];
        let msgs: [&[u8]; 5] = [b"abc", b"", &big, b"x", b"hello world"];
        let data = framed(&msgs);
        for step in [1, 2, 3, 7, 100, 5000] {
            let got = feed(&data, step);
            assert_eq!(got.len(), msgs.len(), "step {step}");
            for (g, m) in got.iter().zip(msgs) {
                assert_eq!(g.as_slice(), m, "step {step}");
            }
        }
    }

    #[test]
    fn grows_only_for_a_large_frame_and_caps_at_max() {
        let mut fb = FrameBuf::new(Vec::new());
        assert_eq!(fb.spare().0.len(), INPUT_INITIAL);
        let (spare, _) = fb.spare();
        spare[..2].copy_from_slice(&65535u16.to_be_bytes());
        fb.filled(2);
        let (spare, grew) = fb.spare();
        assert!(grew);
        assert_eq!(spare.len(), MAX_FRAME - 2);
        let n = spare.len();
        assert!(!fb.has_frame());
        fb.filled(n);
        assert!(fb.has_frame());
        assert_eq!(fb.next_frame(), Some((2, MAX_FRAME)));
    }

    #[test]
    fn partial_length_prefix_waits() {
        let mut fb = FrameBuf::new(Vec::new());
        let (spare, _) = fb.spare();
        spare[0] = 0;
        fb.filled(1);
        assert!(fb.next_frame().is_none());
        let (spare, grew) = fb.spare();
        assert!(!grew);
        spare[..2].copy_from_slice(&[1, b'z']);
        fb.filled(2);
        let r = fb.next_frame().unwrap();
        assert_eq!(fb.frame(r), b"z");
    }

    fn conn(now: Instant) -> Conn {
        // A real socket pair so the table holds real streams.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        Conn::new(s, None, false, Vec::new(), now)
    }

    #[test]
    fn table_orders_by_activity_and_reuses_slots() {
        let t0 = Instant::now();
        let mut t = ConnTable::with_capacity(2);
        let (a, ga, _) = t.insert(conn(t0));
        let (b, _, _) = t.insert(conn(t0 + Duration::from_secs(1)));
        let (c, _, _) = t.insert(conn(t0 + Duration::from_secs(2)));
        assert_eq!(t.len(), 3);
        assert_eq!(t.oldest(), Some((a, t0)));
        t.touch(a, t0 + Duration::from_secs(3));
        assert_eq!(t.oldest().unwrap().0, b);
        t.remove(b).unwrap();
        assert_eq!(t.oldest().unwrap().0, c);
        t.touch(c, t0 + Duration::from_secs(4));
        assert_eq!(t.oldest().unwrap().0, a);
        // A stale token no longer reaches the slot once it is reused.
        t.remove(a).unwrap();
        assert!(t.get_mut(a, ga).is_none());
        let (a2, ga2, _) = t.insert(conn(t0));
        assert_eq!(a2, a);
        assert_ne!(ga2, ga);
        assert!(t.get_mut(a, ga).is_none());
        assert!(t.get_mut(a2, ga2).is_some());
        assert_eq!(t.oldest().unwrap().0, c);
        assert_eq!(t.occupied(), vec![a.min(c), a.max(c)]);
        t.remove(c);
        t.remove(a2);
        assert_eq!(t.len(), 0);
        assert!(t.oldest().is_none());
        assert!(t.remove(a2).is_none());
    }

    #[test]
    fn partial_list_orders_by_query_start() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut t = ConnTable::with_capacity(4);
        let (a, ga, _) = t.insert(conn(t0));
        let (b, _, _) = t.insert(conn(t0));
        let (c, _, _) = t.insert(conn(t0));
        assert!(t.oldest_partial().is_none());
        t.set_partial(b, at(10));
        t.set_partial(a, at(20));
        assert_eq!(t.oldest_partial(), Some((b, at(10))));
        assert!(t.get_mut(a, ga).unwrap().in_partial());
        // A new query on b restarts its clock.
        t.set_partial(b, at(30));
        assert_eq!(t.oldest_partial(), Some((a, at(20))));
        t.clear_partial(a);
        assert!(!t.get_mut(a, ga).unwrap().in_partial());
        assert_eq!(t.oldest_partial(), Some((b, at(30))));
        t.clear_partial(a); // not in the list: no change
        t.set_partial(c, at(40));
        // Activity and partial lists are independent.
        t.touch(b, at(50));
        assert_eq!(t.oldest().unwrap().0, a);
        assert_eq!(t.oldest_partial().unwrap().0, b);
        // Removing a connection takes it out of both.
        t.remove(b).unwrap();
        assert_eq!(t.oldest_partial(), Some((c, at(40))));
        t.remove(c).unwrap();
        assert!(t.oldest_partial().is_none());
        assert_eq!(t.oldest().unwrap().0, a);
    }

    #[test]
    fn client_counts_limit_each_address() {
        let counts = ClientCounts::new(2, 16, 12345);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        let a1 = counts.acquire(Some(a)).unwrap();
        let a2 = counts.acquire(Some(a)).unwrap();
        assert_eq!(a1, a2, "one slot per address");
        assert_ne!(a1, UNTRACKED);
        assert_eq!(counts.acquire(Some(a)), None);
        assert_eq!(counts.count(a), 2);
        // Another address is counted apart.
        let b1 = counts.acquire(Some(b)).unwrap();
        assert_ne!(b1, UNTRACKED);
        assert_eq!(counts.count(b), 1);
        counts.release(a1);
        assert_eq!(counts.count(a), 1);
        let a3 = counts.acquire(Some(a)).unwrap();
        assert_eq!(counts.acquire(Some(a)), None);
        counts.release(a2);
        counts.release(a3);
        assert_eq!(counts.count(a), 0);
        // A freed slot is reused, by anyone.
        assert!(counts.acquire(Some(a)).is_some());
        // No address, or no limit: let in, not counted.
        assert_eq!(counts.acquire(None), Some(UNTRACKED));
        let off = ClientCounts::new(0, 16, 1);
        for _ in 0..10 {
            assert_eq!(off.acquire(Some(a)), Some(UNTRACKED));
        }
        off.release(UNTRACKED);
    }

    #[test]
    fn client_counts_with_many_addresses() {
        // As many addresses as connections allowed: a quarter of the table.
        let counts = ClientCounts::new(1, 1000, 7);
        let mut held = Vec::new();
        for i in 0..1000u32 {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            let s = counts
                .acquire(Some(ip))
                .expect("first connection of an address");
            held.push((ip, s));
        }
        let tracked = held.iter().filter(|(_, s)| *s != UNTRACKED).count();
        assert_eq!(tracked, 1000);
        for (ip, s) in &held {
            if *s != UNTRACKED {
                assert_eq!(counts.acquire(Some(*ip)), None, "{ip}");
            }
        }
        for (_, s) in held {
            counts.release(s);
        }
        assert!(counts
            .slots
            .iter()
            .all(|v| v.load(Relaxed) & COUNT_MASK == 0));
    }
}
