//! tcp -- DNS over TCP state (RFC 7766, RFC 1035 §4.2.2): 2-octet length framing, one
//! connection's buffers, and one worker's table of connections ordered by last activity.
//!
//! Every operation here is O(1): the table is a slab indexed by the epoll token, and the
//! least recently active connection (for idle timeouts and eviction) is the head of an
//! intrusive doubly linked list. Never: sockets calls, clocks (time is passed in), locks.

use std::net::{SocketAddr, TcpStream};
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

/// No neighbour in the activity list.
const NIL: u32 = u32::MAX;

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
    /// The client shut down its sending side (or the read failed): no more queries.
    pub(crate) peer_closed: bool,
    last_active: Instant,
    prev: u32,
    next: u32,
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
            last_active: now,
            prev: NIL,
            next: NIL,
        }
    }

    /// Response bytes waiting for the socket.
    pub(crate) fn unsent(&self) -> usize {
        self.output.len() - self.sent
    }
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

/// One worker's connections: a slab (index = epoll token) plus a list ordered by last
/// activity, least recent first.
#[derive(Debug)]
pub(crate) struct ConnTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    len: usize,
}

impl ConnTable {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            head: NIL,
            tail: NIL,
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
        self.push_back(slot, now);
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

    /// Marks `slot` as active at `now` (moves it to the back of the list).
    pub(crate) fn touch(&mut self, slot: u32, now: Instant) {
        if self
            .slots
            .get(slot as usize)
            .is_some_and(|s| s.conn.is_some())
        {
            self.unlink(slot);
            self.push_back(slot, now);
        }
    }

    /// Removes the connection in `slot`.
    pub(crate) fn remove(&mut self, slot: u32) -> Option<Conn> {
        self.slots.get(slot as usize)?.conn.as_ref()?;
        self.unlink(slot);
        let s = &mut self.slots[slot as usize];
        s.generation = s.generation.wrapping_add(1);
        let conn = s.conn.take();
        self.free.push(slot);
        self.len -= 1;
        conn
    }

    /// The least recently active connection and when it was last active.
    pub(crate) fn oldest(&self) -> Option<(u32, Instant)> {
        let c = self.slots.get(self.head as usize)?.conn.as_ref()?;
        Some((self.head, c.last_active))
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

    fn unlink(&mut self, slot: u32) {
        let (prev, next) = {
            let c = self.conn_mut(slot);
            let links = (c.prev, c.next);
            c.prev = NIL;
            c.next = NIL;
            links
        };
        if prev == NIL {
            self.head = next;
        } else {
            self.conn_mut(prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.conn_mut(next).prev = prev;
        }
    }

    fn push_back(&mut self, slot: u32, now: Instant) {
        let tail = self.tail;
        {
            let c = self.conn_mut(slot);
            c.last_active = now;
            c.prev = tail;
            c.next = NIL;
        }
        if tail == NIL {
            self.head = slot;
        } else {
            self.conn_mut(tail).next = slot;
        }
        self.tail = slot;
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
}
