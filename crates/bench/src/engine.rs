//! The I/O shared by both modes: sockets, counters, response matching, and the UDP and TCP
//! transports of the rate mode.
//!
//! Never on the per-query path: allocation, a clock read, or a system call per query. The
//! caller reads the clock once per loop turn (ns since the run's start); a UDP send reads it
//! once more per sendmmsg call, so each call's queries carry the time just before it.

use crate::queries::QueryList;
use crate::sys::{self, RecvBatch, SendBatch, BATCH, SEND_BATCH};
use crate::track::{Slot, Tracker};
use crate::Error;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Socket buffer size asked for (the kernel may cap it).
const SOCKET_BUFFER: usize = 4 << 20;

/// Counts of one worker (summed over workers and runs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) sent: u64,
    pub(crate) answered: u64,
    pub(crate) lost: u64,
    /// Responses whose ID was in flight but whose question was another query's.
    pub(crate) mismatched: u64,
    /// Responses with an ID not in flight (late after a timeout, duplicates) or not responses.
    pub(crate) unexpected: u64,
    pub(crate) send_errors: u64,
    pub(crate) recv_errors: u64,
    pub(crate) truncated: u64,
    /// Answers by the header's four RCODE bits.
    pub(crate) rcodes: [u64; 16],
}

impl Counters {
    pub(crate) fn add(&mut self, o: &Self) {
        self.sent += o.sent;
        self.answered += o.answered;
        self.lost += o.lost;
        self.mismatched += o.mismatched;
        self.unexpected += o.unexpected;
        self.send_errors += o.send_errors;
        self.recv_errors += o.recv_errors;
        self.truncated += o.truncated;
        for (a, b) in self.rcodes.iter_mut().zip(o.rcodes) {
            *a += b;
        }
    }
}

/// Matches a response to its query in flight: the ID must be in flight on `tracker`, and the
/// question must be the query's. Counts the answer's RCODE.
#[inline]
pub(crate) fn handle_response(
    msg: &[u8],
    tracker: &mut Tracker,
    q: &QueryList,
    c: &mut Counters,
) -> Option<Slot> {
    if msg.len() < 12 {
        c.unexpected += 1;
        return None;
    }
    let id = u16::from_be_bytes([msg[0], msg[1]]);
    let flags = u16::from_be_bytes([msg[2], msg[3]]);
    if flags & 0x8000 == 0 {
        c.unexpected += 1;
        return None;
    }
    let mut mismatch = false;
    let slot = tracker.take(id, |s| {
        mismatch = !q.matches(s.query as usize, msg);
        !mismatch
    });
    match slot {
        Some(s) => {
            c.answered += 1;
            c.rcodes[(flags & 0x0f) as usize] += 1;
            if flags & 0x0200 != 0 {
                c.truncated += 1;
            }
            Some(s)
        }
        None => {
            if mismatch {
                c.mismatched += 1;
            } else {
                c.unexpected += 1;
            }
            None
        }
    }
}

/// The run's clock: CLOCK_REALTIME (the clock of the kernel's arrival times) in ns since the
/// run's start, never going backwards. Read once per loop turn.
pub(crate) struct Clock {
    base: u64,
    last: u64,
}

impl Clock {
    pub(crate) fn start() -> Self {
        Self {
            base: sys::realtime_ns(),
            last: 0,
        }
    }

    /// Now, in ns since the start.
    #[inline]
    pub(crate) fn now(&mut self) -> u64 {
        self.last = sys::realtime_ns().saturating_sub(self.base).max(self.last);
        self.last
    }

    /// The time of the last [`Clock::now`].
    #[inline]
    pub(crate) fn last(&self) -> u64 {
        self.last
    }

    /// A kernel arrival time (ns since the epoch) in ns since the start; `fallback` if absent.
    #[inline]
    pub(crate) fn arrival(&self, at: Option<u64>, fallback: u64) -> u64 {
        at.map_or(fallback, |t| t.saturating_sub(self.base))
    }
}

/// What a rate worker's transport works with on every call: the query list and the walk's
/// position in it, the run's clock and the worker's counters (one argument, not four).
pub(crate) struct Worker<'q> {
    pub(crate) q: &'q QueryList,
    /// The next query's index in `q`.
    pub(crate) pos: usize,
    pub(crate) clock: Clock,
    pub(crate) c: Counters,
}

impl<'q> Worker<'q> {
    /// Reserves IDs on `tracker` for up to `want` queries from the walk's position on and
    /// hands each to `put` (the tracker, index in the batch, ID, body): how both transports
    /// fill a batch.
    /// Returns how many; fewer when the tracker has no free ID.
    #[inline]
    fn reserve(
        &self,
        tracker: &mut Tracker,
        want: usize,
        mut put: impl FnMut(&mut Tracker, usize, u16, &'q [u8]),
    ) -> usize {
        let mut m = 0;
        while m < want {
            let qi = (self.pos + m) % self.q.len();
            let Some(id) = tracker.reserve(qi as u32, 0) else {
                break;
            };
            put(tracker, m, id, self.q.body(qi));
            m += 1;
        }
        m
    }

    /// Moves the walk past `k` queries.
    #[inline]
    fn advance(&mut self, k: usize) {
        self.pos = (self.pos + k) % self.q.len();
    }
}

/// The round robin both transports send by: each member (socket or connection) in turn is
/// offered up to `batch` of the `n` queries, until all left or every member in a row took
/// fewer than offered. `send(member, want)` returns how many it sent, `None` if it could
/// take none (closed or full). Returns how many left.
#[inline]
fn round_robin(
    next: &mut usize,
    members: usize,
    n: usize,
    batch: usize,
    mut send: impl FnMut(usize, usize) -> Option<usize>,
) -> usize {
    let mut total = 0;
    let mut full = 0;
    while total < n && full < members {
        let i = *next;
        *next = (i + 1) % members;
        let want = (n - total).min(batch);
        match send(i, want) {
            Some(sent) => {
                total += sent;
                if sent < want {
                    full += 1;
                } else {
                    full = 0;
                }
            }
            None => full += 1,
        }
    }
    total
}

/// Sends `batch`, whose queries hold the IDs `ids` (by batch index), on `fd` in one system
/// call, and settles each ID on `tracker`: committed if it left, else cancelled and handed to
/// `unsent` (its batch index). The UDP send of both modes; returns how many left.
///
/// Every datagram of the call is stamped with the clock read just before it. On loopback the
/// call delivers each datagram into the server's socket in turn, so for the last of 128 this
/// overstates the latency by tens of microseconds; it can never understate it. (Spreading
/// the stamps over the call, t0 + (t1 - t0) * j / n, was tried: a call preempted halfway
/// stretches t1, and answers came out "before" their queries.)
#[inline]
pub(crate) fn send_batch(
    batch: &mut SendBatch<'_>,
    fd: RawFd,
    ids: &[u16],
    tracker: &mut Tracker,
    clock: &mut Clock,
    c: &mut Counters,
    mut unsent: impl FnMut(usize),
) -> usize {
    let m = ids.len();
    let t0 = clock.last();
    let sent = match batch.send(fd) {
        Ok(s) => s,
        Err(_) => {
            // A hard error (e.g. ICMP refused): count the batch as sent; it times out.
            c.send_errors += m as u64;
            m
        }
    };
    // One clock read per system call: the next call's start.
    clock.now();
    let order = batch.order();
    for &i in &order[..sent] {
        tracker.commit(ids[i as usize], t0);
    }
    for &i in &order[sent..m] {
        tracker.cancel(ids[i as usize]);
        unsent(i as usize);
    }
    batch.clear();
    sent
}

/// The earliest next expiry over `trackers`, after expiring what is older than `timeout`.
fn expire_all<'t>(
    trackers: impl Iterator<Item = &'t mut Tracker>,
    now: u64,
    timeout: u64,
    lost: &mut dyn FnMut(&Slot),
) -> Option<u64> {
    trackers
        .filter_map(|t| t.expire(now, timeout, &mut *lost))
        .min()
}

/// A non-blocking UDP socket connected to `server`, bound to the wildcard of its family.
pub(crate) fn udp_socket(server: SocketAddr) -> Result<UdpSocket, Error> {
    let io = |e| Error::Io {
        what: format!("UDP socket to {server}"),
        error: e,
    };
    let bind: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(bind).map_err(io)?;
    s.connect(server).map_err(io)?;
    s.set_nonblocking(true).map_err(io)?;
    sys::set_buffer_sizes(s.as_raw_fd(), SOCKET_BUFFER);
    sys::enable_rx_timestamps(s.as_raw_fd()).map_err(io)?;
    Ok(s)
}

/// What a transport calls with each matched response: its slot and arrival time.
pub(crate) type OnAnswer<'a> = dyn FnMut(&Slot, u64) + 'a;

/// What the rate mode needs of a transport.
pub(crate) trait Transport<'q> {
    /// Sends up to `n` queries from the worker's list position on (advancing it); returns how
    /// many left. Fewer means every socket or connection is full for now. The worker's clock
    /// was read at the start of the turn; a transport may read it again once per system call.
    fn send(&mut self, w: &mut Worker<'q>, n: usize) -> usize;
    /// Fills `out` with one poll entry per socket or connection, for the sleep between turns.
    fn poll_fds(&self, out: &mut Vec<libc::pollfd>);
    /// Reads what has arrived (`ready`: the sleep's poll result); calls `answer` with each
    /// matched response's slot and arrival time.
    fn receive(&mut self, ready: &[libc::pollfd], w: &mut Worker<'q>, answer: &mut OnAnswer<'_>);
    /// Expires queries older than `timeout`; returns the next expiry time.
    fn expire(&mut self, now: u64, timeout: u64, lost: &mut dyn FnMut(&Slot)) -> Option<u64>;
    fn in_flight(&self) -> usize;
}

/// Several connected UDP sockets, each with its own ID space; batches go round-robin.
///
/// Arrivals do not wake the worker: the kernel stamps each datagram's arrival time, so the
/// worker drains its sockets once per turn (its pacing tick) and the latency stays exact.
pub(crate) struct UdpSet<'q> {
    fds: Vec<RawFd>,
    trackers: Vec<Tracker>,
    want_write: Vec<bool>,
    next: usize,
    send: SendBatch<'q>,
    recv: RecvBatch,
    probe: Vec<libc::pollfd>,
}

impl UdpSet<'_> {
    pub(crate) fn new(sockets: &[UdpSocket]) -> Self {
        Self {
            fds: sockets.iter().map(|s| s.as_raw_fd()).collect(),
            trackers: sockets.iter().map(|_| Tracker::new()).collect(),
            want_write: vec![false; sockets.len()],
            next: 0,
            send: SendBatch::new(),
            recv: RecvBatch::new(),
            probe: Vec::with_capacity(sockets.len()),
        }
    }
}

impl<'q> Transport<'q> for UdpSet<'q> {
    fn send(&mut self, w: &mut Worker<'q>, n: usize) -> usize {
        let mut ids = [0u16; SEND_BATCH];
        round_robin(&mut self.next, self.fds.len(), n, SEND_BATCH, |si, want| {
            let tracker = &mut self.trackers[si];
            let m = w.reserve(tracker, want, |_, m, id, body| {
                self.send.push(id, body);
                ids[m] = id;
            });
            let sent = send_batch(
                &mut self.send,
                self.fds[si],
                &ids[..m],
                tracker,
                &mut w.clock,
                &mut w.c,
                |_| {},
            );
            // After a partial send (socket buffer full) the walk through the list skips the
            // unsent queries' positions: the count, hence the rate, stays exact.
            w.advance(sent);
            self.want_write[si] = sent < want;
            Some(sent)
        })
    }

    fn poll_fds(&self, out: &mut Vec<libc::pollfd>) {
        out.clear();
        out.extend(
            self.fds
                .iter()
                .zip(&self.want_write)
                .map(|(&fd, &w)| libc::pollfd {
                    fd,
                    events: if w { libc::POLLOUT } else { 0 },
                    revents: 0,
                }),
        );
    }

    fn receive(&mut self, ready: &[libc::pollfd], w: &mut Worker<'q>, answer: &mut OnAnswer<'_>) {
        let (q, clock, c) = (w.q, &w.clock, &mut w.c);
        for (si, p) in ready.iter().enumerate() {
            if p.revents & libc::POLLOUT != 0 {
                self.want_write[si] = false;
            }
        }
        // One socket: just try it. Several: one zero-timeout poll says which hold data.
        self.probe.clear();
        self.probe
            .extend(self.fds.iter().map(|&fd| sys::pollfd(fd, false)));
        if self.fds.len() > 1 {
            let _ = sys::poll(&mut self.probe, Duration::ZERO);
        } else {
            self.probe[0].revents = libc::POLLIN;
        }
        let now = clock.last();
        for si in 0..self.fds.len() {
            if !sys::readable(&self.probe[si]) {
                continue;
            }
            // Bounded: at most 16 batches per socket per turn, then the sender gets its turn.
            for _ in 0..16 {
                let n = match self.recv.recv(self.fds[si]) {
                    Ok(n) => n,
                    Err(_) => {
                        c.recv_errors += 1;
                        0
                    }
                };
                for i in 0..n {
                    if let Some(slot) =
                        handle_response(self.recv.get(i), &mut self.trackers[si], q, c)
                    {
                        answer(&slot, clock.arrival(self.recv.arrival(i), now));
                    }
                }
                if n < BATCH {
                    break;
                }
            }
        }
    }

    fn expire(&mut self, now: u64, timeout: u64, lost: &mut dyn FnMut(&Slot)) -> Option<u64> {
        expire_all(self.trackers.iter_mut(), now, timeout, lost)
    }

    fn in_flight(&self) -> usize {
        self.trackers.iter().map(Tracker::in_flight).sum()
    }
}

/// Bytes of unsent queries above which a TCP connection takes no more until it drains.
const TCP_OUT_LIMIT: usize = 256 << 10;
/// Receive buffer: holds the largest DNS message (64 KiB) plus its length and more.
const TCP_IN_BUF: usize = 128 << 10;

/// One pipelined TCP connection: queries go out length-prefixed back to back; answers come
/// back in any order and are matched by ID.
struct TcpConn {
    stream: Option<TcpStream>,
    tracker: Tracker,
    out: Vec<u8>,
    out_pos: usize,
    inbuf: Box<[u8]>,
    in_len: usize,
    /// When the connection may next be re-opened after a failure (ns since start).
    retry_at: u64,
}

impl TcpConn {
    fn pending(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Writes what the socket takes.
    fn flush(&mut self, now: u64, c: &mut Counters) {
        while self.out_pos < self.out.len() {
            let Some(s) = self.stream.as_mut() else {
                return;
            };
            match s.write(&self.out[self.out_pos..]) {
                Ok(0) => {
                    self.fail(now, c);
                    return;
                }
                Ok(k) => self.out_pos += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.fail(now, c);
                    return;
                }
            }
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        } else if self.out_pos > self.out.len() / 2 {
            self.out.drain(..self.out_pos);
            self.out_pos = 0;
        }
    }

    /// Drops a broken connection; its queries in flight will time out.
    fn fail(&mut self, now: u64, c: &mut Counters) {
        self.stream = None;
        self.out.clear();
        self.out_pos = 0;
        self.in_len = 0;
        self.retry_at = now + 100_000_000;
        c.send_errors += 1;
    }
}

/// Several pipelined TCP connections; batches go round-robin.
pub(crate) struct TcpSet {
    server: SocketAddr,
    conns: Vec<TcpConn>,
    next: usize,
}

fn tcp_connect(server: SocketAddr) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&server, Duration::from_secs(1))?;
    s.set_nodelay(true)?;
    s.set_nonblocking(true)?;
    sys::set_buffer_sizes(s.as_raw_fd(), SOCKET_BUFFER);
    Ok(s)
}

impl TcpSet {
    pub(crate) fn connect(server: SocketAddr, connections: usize) -> Result<Self, Error> {
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let stream = tcp_connect(server).map_err(|e| Error::Io {
                what: format!("TCP connection to {server}"),
                error: e,
            })?;
            conns.push(TcpConn {
                stream: Some(stream),
                tracker: Tracker::new(),
                out: Vec::with_capacity(TCP_OUT_LIMIT + 64 * 1024),
                out_pos: 0,
                inbuf: vec![0; TCP_IN_BUF].into_boxed_slice(),
                in_len: 0,
                retry_at: 0,
            });
        }
        Ok(Self {
            server,
            conns,
            next: 0,
        })
    }
}

impl<'q> Transport<'q> for TcpSet {
    fn send(&mut self, w: &mut Worker<'q>, n: usize) -> usize {
        let now = w.clock.last();
        round_robin(&mut self.next, self.conns.len(), n, BATCH, |ci, want| {
            let conn = &mut self.conns[ci];
            if conn.stream.is_none() {
                if now < conn.retry_at {
                    return None;
                }
                match tcp_connect(self.server) {
                    Ok(s) => conn.stream = Some(s),
                    Err(_) => {
                        conn.retry_at = now + 100_000_000;
                        return None;
                    }
                }
            }
            if conn.pending() > TCP_OUT_LIMIT {
                return None;
            }
            let m = w.reserve(&mut conn.tracker, want, |tracker, _, id, body| {
                let len = (body.len() + 2) as u16;
                conn.out.extend_from_slice(&len.to_be_bytes());
                conn.out.extend_from_slice(&id.to_be_bytes());
                conn.out.extend_from_slice(body);
                tracker.commit(id, now);
            });
            w.advance(m);
            conn.flush(now, &mut w.c);
            Some(m)
        })
    }

    fn poll_fds(&self, out: &mut Vec<libc::pollfd>) {
        out.clear();
        out.extend(self.conns.iter().map(|c| match &c.stream {
            Some(s) => sys::pollfd(s.as_raw_fd(), c.pending() > 0),
            // A negative fd is ignored by poll.
            None => sys::pollfd(-1, false),
        }));
    }

    fn receive(&mut self, ready: &[libc::pollfd], w: &mut Worker<'q>, answer: &mut OnAnswer<'_>) {
        let (q, clock, c) = (w.q, &w.clock, &mut w.c);
        let now = clock.last();
        for (conn, p) in self.conns.iter_mut().zip(ready) {
            if p.revents & libc::POLLOUT != 0 {
                conn.flush(now, c);
            }
            if !sys::readable(p) {
                continue;
            }
            for _ in 0..16 {
                let Some(s) = conn.stream.as_mut() else { break };
                match s.read(&mut conn.inbuf[conn.in_len..]) {
                    Ok(0) => {
                        conn.fail(now, c);
                        break;
                    }
                    Ok(k) => {
                        conn.in_len += k;
                        let mut at = 0;
                        while conn.in_len - at >= 2 {
                            let len =
                                u16::from_be_bytes([conn.inbuf[at], conn.inbuf[at + 1]]) as usize;
                            if conn.in_len - at < 2 + len {
                                break;
                            }
                            let msg = &conn.inbuf[at + 2..at + 2 + len];
                            if let Some(slot) = handle_response(msg, &mut conn.tracker, q, c) {
                                answer(&slot, now);
                            }
                            at += 2 + len;
                        }
                        conn.inbuf.copy_within(at..conn.in_len, 0);
                        conn.in_len -= at;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        c.recv_errors += 1;
                        conn.fail(now, c);
                        break;
                    }
                }
            }
        }
    }

    fn expire(&mut self, now: u64, timeout: u64, lost: &mut dyn FnMut(&Slot)) -> Option<u64> {
        let trackers = self.conns.iter_mut().map(|c| &mut c.tracker);
        expire_all(trackers, now, timeout, lost)
    }

    fn in_flight(&self) -> usize {
        self.conns.iter().map(|c| c.tracker.in_flight()).sum()
    }
}
