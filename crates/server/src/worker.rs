//! worker -- one share-nothing worker: its own sockets, epoll loop, buffers and counters.
//!
//! A worker reads queries, answers them with `shardns_zone::respond` and writes the
//! responses itself; nothing is handed to another thread. UDP is read and written in
//! batches (recvmmsg/sendmmsg), TCP connections are nonblocking with per-connection
//! buffers. The zone snapshot is refreshed once per loop iteration (one atomic load) and
//! read without a lock. The clock is read once per loop iteration. Buffers are allocated
//! when the worker starts; the query path does not allocate. With `[rrl]` on, every UDP
//! response passes the worker's own rate limiter (`rrl`) before it is queued.
//!
//! With `server.xdp_interface` set, worker i may also own an AF_XDP socket (`XdpPort`) for
//! receive queue i of that interface: its UDP queries arrive as raw frames, are answered by
//! the same code as socket queries (`answer_udp`) straight into the frame, and go back on
//! the socket's TX ring; only the frame I/O differs.
//!
//! An allowed zone transfer (`xfr`) is streamed on its TCP connection at most 240 KiB per
//! turn of the loop and only while the client reads, so a big zone or a slow secondary
//! never holds the worker.
//!
//! TCP limits enforced here: connections per worker, in all, and per client address
//! (checked on accept); the idle timeout (no traffic) and the read timeout (one query
//! taking too long to arrive, however slowly it trickles in); queries per connection.

use crate::recursion::{Client, Recursion, Reply, KIND_UPSTREAM};
use crate::rrl::{Rrl, Verdict};
use crate::stats::{Via, WorkerStats, XFR_ABORTED, XFR_DONE, XFR_REFUSED, XFR_STARTED};
use crate::sys::{self, Epoll, Events, SendBatch, UdpBatch, BROKEN, READABLE, WRITABLE};
use crate::tcp::{Conn, ConnTable, INPUT_INITIAL, MAX_FRAME};
use crate::xdp::{self, Xsk};
use crate::xfr::{self as xfr_policy, Decision, TransferAcl};
use crate::Shared;
use arc_swap::ArcSwap;
use shardns_wire::message::{read_question, HEADER_LEN};
use shardns_wire::{NameBuf, RType, Rcode};
use shardns_zone::xfr::{self, Transfer};
use shardns_zone::{respond, Outcome, Transport, ZoneSet};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// Logs from the request path. A line that is written takes stderr's lock, which is
/// counted; a disabled level costs the one `enabled!` branch.
macro_rules! request_log {
    ($stats:expr, $level:ident, $($arg:tt)+) => {
        if tracing::enabled!(tracing::Level::$level) {
            $stats.lock_acquisitions.add(1);
            tracing::event!(tracing::Level::$level, $($arg)+);
        }
    };
}

/// How a worker behaves (from `[limits]` and `[log]`).
#[derive(Debug, Clone)]
pub(crate) struct WorkerOptions {
    pub(crate) udp_batch: usize,
    pub(crate) tcp_per_worker: usize,
    pub(crate) tcp_total: usize,
    pub(crate) tcp_idle_timeout: Duration,
    pub(crate) tcp_read_timeout: Duration,
    /// Queries per TCP connection (u32::MAX: no limit).
    pub(crate) tcp_max_queries: u32,
    pub(crate) udp_max_response: usize,
    pub(crate) log_queries: bool,
}

/// The sockets a worker owns: a UDP socket and a TCP listener per listen address, each
/// bound with SO_REUSEPORT so the kernel spreads clients over the workers.
#[derive(Debug, Default)]
pub(crate) struct WorkerSockets {
    pub(crate) udp: Vec<UdpSocket>,
    pub(crate) tcp: Vec<TcpListener>,
    /// The AF_XDP socket for this worker's receive queue (`server.xdp_interface`).
    pub(crate) xsk: Option<Xsk>,
}

/// A worker's AF_XDP socket and what answering its frames needs.
struct XdpPort {
    xsk: Xsk,
    /// Each UDP socket's local address: a resolver answer to an XDP query leaves through
    /// the socket bound to the address the query was sent to.
    sockets: Vec<SocketAddr>,
    /// The query is copied here so the response can be written over it in the frame.
    query: Box<[u8]>,
    /// When the kernel's counters for the socket were last copied into the statistics.
    counters_read: Option<Instant>,
}

/// Token kinds, in the top byte of an epoll token.
const KIND_SHIFT: u32 = 56;
const KIND_WAKER: u64 = 0;
const KIND_UDP: u64 = 1;
const KIND_LISTENER: u64 = 2;
const KIND_CONN: u64 = 3;
const KIND_XDP: u64 = 5;

fn conn_token(slot: u32, generation: u32) -> u64 {
    (KIND_CONN << KIND_SHIFT) | ((generation as u64 & 0xff_ffff) << 32) | slot as u64
}

/// UDP batches handled per socket before looking at other sockets again.
const UDP_ROUNDS: usize = 16;
/// Connections accepted per listener wake-up.
const ACCEPT_BURST: usize = 64;
/// Worker-wide TCP response staging: four maximal responses.
const TCP_STAGING: usize = 4 * MAX_FRAME;
/// Stop answering a connection's queries while this much output is unsent.
const OUTPUT_HIGH_WATER: usize = 64 * 1024;
/// Input buffers kept for reuse by later connections.
const BUFFER_POOL_MAX: usize = 256;

pub(crate) struct Worker {
    id: usize,
    shared: Arc<Shared>,
    opts: WorkerOptions,
    epoll: Epoll,
    udp: Vec<(UdpSocket, bool)>,
    listeners: Vec<(TcpListener, bool)>,
    listeners_paused: bool,
    conns: ConnTable,
    staging: Box<[u8]>,
    buffer_pool: Vec<Vec<u8>>,
    /// The resolver role (`[resolver] recursion = true`), else `None`.
    recursion: Option<Recursion>,
    /// Response rate limiting (`[rrl] enabled = true`), else `None`.
    rrl: Option<Rrl>,
    /// AF_XDP (`server.xdp_interface`), else `None`.
    xdp: Option<XdpPort>,
}

/// Where a UDP query came from, for `answer_udp`.
#[derive(Clone, Copy)]
struct UdpFrom {
    /// Index of the UDP socket (of the address) the query was sent to.
    socket: usize,
    peer: Option<SocketAddr>,
    via: Via,
    now: Instant,
    /// `now` on the rate limiter's clock (0 without RRL).
    rrl_now: u64,
}

impl Worker {
    /// Registers the sockets with a new epoll instance.
    pub(crate) fn new(
        id: usize,
        shared: Arc<Shared>,
        sockets: WorkerSockets,
        opts: WorkerOptions,
        recursion: Option<Recursion>,
        rrl: Option<Rrl>,
    ) -> io::Result<Self> {
        let epoll = Epoll::new()?;
        epoll.add(shared.wakers[id].fd(), KIND_WAKER << KIND_SHIFT, READABLE)?;
        let mut udp = Vec::new();
        let mut local = Vec::new();
        for (i, s) in sockets.udp.into_iter().enumerate() {
            local.push(s.local_addr()?);
            epoll.add(s.as_raw_fd(), (KIND_UDP << KIND_SHIFT) | i as u64, READABLE)?;
            let v6 = s.local_addr()?.is_ipv6();
            udp.push((s, v6));
        }
        let mut listeners = Vec::new();
        for (i, l) in sockets.tcp.into_iter().enumerate() {
            epoll.add(
                l.as_raw_fd(),
                (KIND_LISTENER << KIND_SHIFT) | i as u64,
                READABLE,
            )?;
            let v6 = l.local_addr()?.is_ipv6();
            listeners.push((l, v6));
        }
        let xdp = match sockets.xsk {
            Some(xsk) => {
                epoll.add(xsk.as_raw_fd(), KIND_XDP << KIND_SHIFT, READABLE)?;
                Some(XdpPort {
                    xsk,
                    sockets: local,
                    query: vec![0; xdp::FRAME].into_boxed_slice(),
                    counters_read: None,
                })
            }
            None => None,
        };
        let pool = opts.tcp_per_worker.min(BUFFER_POOL_MAX);
        Ok(Self {
            id,
            shared,
            conns: ConnTable::with_capacity(opts.tcp_per_worker.min(1 << 16)),
            opts,
            epoll,
            udp,
            listeners,
            listeners_paused: false,
            staging: vec![0; TCP_STAGING].into_boxed_slice(),
            buffer_pool: (0..pool.min(16)).map(|_| vec![0; INPUT_INITIAL]).collect(),
            recursion,
            rrl,
            xdp,
        })
    }

    /// The event loop; returns when the server shuts down.
    pub(crate) fn run(mut self) {
        let shared = Arc::clone(&self.shared);
        let stats = &shared.stats[self.id];
        let waker = &shared.wakers[self.id];
        let mut zones = arc_swap::Cache::new(&shared.zones);
        let mut events = Events::with_capacity(256);
        let mut batch = UdpBatch::new(self.opts.udp_batch);
        // The resolver's finished UDP answers, sent once per loop turn.
        let mut answers = self
            .recursion
            .is_some()
            .then(|| SendBatch::new(self.opts.udp_batch, self.opts.udp_max_response));
        let mut now = Instant::now();
        debug!(worker = self.id, "worker running");
        loop {
            let timeout = self.timeout_ms(now);
            if let Err(e) = self.epoll.wait(&mut events, timeout) {
                warn!(worker = self.id, "epoll_wait failed: {e}");
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            now = Instant::now();
            stats.wakeups.add(1);
            if shared.shutdown.load(Relaxed) {
                break;
            }
            let zones: &ZoneSet = zones.load();
            for (token, ready) in events.iter() {
                let index = (token & 0xffff_ffff) as usize;
                match token >> KIND_SHIFT {
                    KIND_UDP => self.serve_udp(index, zones, &mut batch, now, stats),
                    KIND_XDP => self.serve_xdp(zones, now, stats),
                    KIND_LISTENER => self.accept(index, now, stats),
                    KIND_CONN => {
                        let generation = ((token >> 32) & 0xff_ffff) as u32;
                        self.conn_ready(index as u32, generation, ready, zones, now, stats);
                    }
                    KIND_UPSTREAM => {
                        let generation = ((token >> 32) & 0xff_ffff) as u32;
                        if let Some(r) = self.recursion.as_mut() {
                            r.upstream_ready(index as u32, generation, ready, now, &self.epoll);
                        }
                    }
                    _ => waker.drain(),
                }
            }
            if let Some(answers) = answers.as_mut() {
                self.drive_recursion(now, answers, stats);
            }
            self.expire(now, stats);
        }
        self.close_all(stats);
        debug!(worker = self.id, "worker stopped");
    }

    /// epoll timeout: until the first TCP deadline (idle or read timeout) or the resolver's
    /// next timer, or forever.
    fn timeout_ms(&mut self, now: Instant) -> i32 {
        let until = |deadline: Instant| {
            let left = deadline.saturating_duration_since(now).as_millis();
            // Round up so we do not wake just before the deadline.
            left.min(i32::MAX as u128 - 1) as i32 + 1
        };
        let idle = self
            .conns
            .oldest()
            .map(|(_, last)| until(last + self.opts.tcp_idle_timeout));
        let read = self
            .conns
            .oldest_partial()
            .map(|(_, since)| until(since + self.opts.tcp_read_timeout));
        let resolver = self
            .recursion
            .as_mut()
            .and_then(|r| r.timeout_ms(now))
            .map(|ms| ms.min(i32::MAX as u64 - 1) as i32);
        // Replies the kernel did not take yet (copy mode sends inside the kick): try again soon.
        let xdp = self.xdp.as_mut().and_then(|x| {
            x.xsk.kick();
            (x.xsk.tx_pending() > 0).then_some(1)
        });
        [idle, read, resolver, xdp]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(-1)
    }

    /// Runs the resolver's timers and events; finished answers go to their clients (UDP:
    /// from the listening socket the query came in on, queued in `answers` and sent with
    /// sendmmsg at the end; TCP: the connection, if still open).
    fn drive_recursion(&mut self, now: Instant, answers: &mut SendBatch, stats: &WorkerStats) {
        let Some(rec) = self.recursion.as_mut() else {
            return;
        };
        let udp = &self.udp;
        let conns = &mut self.conns;
        let epoll = &self.epoll;
        rec.drive(now, epoll, stats, &mut |client, frame| match client {
            Client::Udp { socket, peer } => {
                if answers.is_full() {
                    flush_answers(udp, answers, stats);
                }
                // Refused only when longer than `udp_max_response`, which the resolver's
                // UDP answers never are.
                if !answers.push(socket, peer, &frame[2..]) {
                    stats.dropped.add(1);
                }
            }
            Client::Tcp { slot, generation } => {
                let Some(conn) = conns.get_mut(slot, generation) else {
                    stats.dropped.add(1);
                    return;
                };
                if queue_output(conn, frame, stats).is_err() {
                    // The connection is broken; epoll reports it and it is closed then.
                    return;
                }
                if conn.unsent() > 0 && conn.interest & WRITABLE == 0 {
                    let want = conn.interest | WRITABLE;
                    if epoll
                        .modify(conn.stream.as_raw_fd(), conn_token(slot, generation), want)
                        .is_ok()
                    {
                        conn.interest = want;
                    }
                }
            }
        });
        flush_answers(udp, answers, stats);
    }

    // ---- UDP ----

    fn serve_udp(
        &mut self,
        index: usize,
        zones: &ZoneSet,
        batch: &mut UdpBatch,
        now: Instant,
        stats: &WorkerStats,
    ) {
        let Some((fd, v6)) = self.udp.get(index).map(|(s, v6)| (s.as_raw_fd(), *v6)) else {
            return;
        };
        let via = Via::udp(v6);
        // The peer's address is decoded only when something needs it: logs, the resolver's
        // ACL, RRL, or a transfer ACL (an allowed IXFR over UDP gets the SOA).
        let want_peer = self.opts.log_queries
            || self.recursion.is_some()
            || self.rrl.is_some()
            || self.shared.transfer_acl.load().allows_anyone();
        let rrl_now = self.rrl.as_ref().map_or(0, |r| r.clock(now));
        let udp_max = self.opts.udp_max_response;
        for _ in 0..UDP_ROUNDS {
            stats.udp_recv_calls.add(1);
            let n = match batch.recv(fd) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    request_log!(stats, DEBUG, worker = self.id, "recvmmsg: {e}");
                    break;
                }
            };
            stats.queries[via as usize].add(n as u64);
            for i in 0..n {
                let slot = batch.queued();
                let peer = if want_peer { batch.peer(i) } else { None };
                let (query, out) = batch.query_and_response(i, slot);
                let cap = udp_max.min(out.len());
                let out = &mut out[..cap];
                let Some(query) = query else {
                    // Longer than any query we read: cut by the kernel, so unparseable.
                    stats.malformed.add(1);
                    stats.dropped.add(1);
                    continue;
                };
                let from = UdpFrom {
                    socket: index,
                    peer,
                    via,
                    now,
                    rrl_now,
                };
                if let Some(len) = self.answer_udp(zones, query, out, from, stats) {
                    batch.queue(i, len);
                }
            }
            let queued = batch.queued();
            let mut from = 0;
            while from < queued {
                stats.udp_send_calls.add(1);
                match batch.send(fd, from) {
                    Ok(k) => from += k.max(1),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        // The socket's send buffer is full: drop the rest of this batch.
                        stats.dropped.add((queued - from) as u64);
                        break;
                    }
                    Err(e) => {
                        // This datagram cannot be sent (e.g. an unreachable address): skip it.
                        request_log!(stats, DEBUG, worker = self.id, "sendmmsg: {e}");
                        stats.dropped.add(1);
                        from += 1;
                    }
                }
            }
            if n < batch.capacity() {
                break;
            }
        }
    }

    /// Answers one UDP query (read from a socket or an AF_XDP frame) into `out`: from the
    /// zones, else by the resolver role; then RRL, statistics and the query log. Returns the
    /// response length to send now, or `None`: dropped, or the resolver answers later
    /// through UDP socket `from.socket`.
    fn answer_udp(
        &mut self,
        zones: &ZoneSet,
        query: &[u8],
        out: &mut [u8],
        from: UdpFrom,
        stats: &WorkerStats,
    ) -> Option<usize> {
        let peer = from.peer;
        match respond(zones, query, Transport::Udp, out) {
            Some(mut o) if o.len <= out.len() => {
                if o.rcode == Rcode::REFUSED && is_transfer(&o) {
                    // Over UDP a transfer query gets one message of at most 512 octets: an
                    // allowed IXFR our SOA (RFC 1995 §2; TC if it does not fit), the rest
                    // their refusal.
                    let acl = self.shared.transfer_acl.load();
                    let room = out.len().min(512);
                    let ip = peer.map(|p| p.ip());
                    if let Some(Decision::Reply(r)) = xfr_policy::decide(
                        zones,
                        &acl,
                        query,
                        ip,
                        false,
                        unix_now(),
                        &mut out[..room],
                    ) {
                        if r.rcode != Rcode::NOERROR {
                            stats.xfr[XFR_REFUSED].add(1);
                        }
                        o = r;
                    }
                } else if o.rcode == Rcode::REFUSED {
                    // Not in our zones: the resolver role may take it.
                    if let (Some(rec), Some(p)) = (self.recursion.as_mut(), peer) {
                        let client = Client::Udp {
                            socket: from.socket,
                            peer: p,
                        };
                        match rec.query(query, client, Some(p.ip()), out, from.now, stats) {
                            Reply::Refused => {}
                            Reply::Pending => return None,
                            Reply::Written(cached) => o = cached,
                        }
                    }
                }
                // RRL off costs this one branch.
                if let (Some(rrl), Some(p)) = (self.rrl.as_mut(), peer) {
                    let resp = &mut out[..o.len];
                    match rrl.check(p.ip(), o.rcode, o.truncated, o.wildcard, resp, from.rrl_now) {
                        Verdict::Send => {}
                        Verdict::Drop => {
                            stats.rrl_dropped.add(1);
                            stats.dropped.add(1);
                            return None;
                        }
                        Verdict::Slip(len) => {
                            stats.rrl_slipped.add(1);
                            o.len = len;
                            o.truncated = true;
                        }
                    }
                }
                stats.answered(o.qtype, o.rcode, o.truncated);
                if self.opts.log_queries {
                    log_query(peer, from.via, query, &o, stats);
                }
                Some(o.len)
            }
            _ => {
                stats.dropped.add(1);
                None
            }
        }
    }

    /// Answers the frames on the AF_XDP socket's RX ring, each in place, in batches of
    /// `udp_batch`, like `serve_udp` does with a socket.
    fn serve_xdp(&mut self, zones: &ZoneSet, now: Instant, stats: &WorkerStats) {
        let Some(mut port) = self.xdp.take() else {
            return;
        };
        let rrl_now = self.rrl.as_ref().map_or(0, |r| r.clock(now));
        let udp_max = self.opts.udp_max_response;
        let batch = self.opts.udp_batch.min(u32::MAX as usize) as u32;
        for _ in 0..UDP_ROUNDS {
            let XdpPort {
                xsk,
                sockets,
                query,
                ..
            } = &mut port;
            let n = xsk.serve(batch, |frame, len| {
                let Some(q) = xdp::parse(&frame[..len]) else {
                    // The XDP program sent it, so it is UDP to us, but not well-formed.
                    stats.malformed.add(1);
                    stats.dropped.add(1);
                    return None;
                };
                let via = Via::xdp(q.v6);
                stats.queries[via as usize].add(1);
                let local = q.local(frame);
                let socket = sockets.iter().position(|a| {
                    *a == local
                        || (a.ip().is_unspecified()
                            && a.port() == local.port()
                            && a.is_ipv6() == local.is_ipv6())
                });
                let Some(socket) = socket else {
                    stats.dropped.add(1);
                    return None;
                };
                let query = &mut query[..q.len];
                query.copy_from_slice(&frame[q.offset..q.offset + q.len]);
                let cap = udp_max.min(frame.len() - q.offset);
                let from = UdpFrom {
                    socket,
                    peer: Some(q.peer(frame)),
                    via,
                    now,
                    rrl_now,
                };
                let out = &mut frame[q.offset..q.offset + cap];
                let len = self.answer_udp(zones, query, out, from, stats)?;
                Some(q.reply(frame, len))
            });
            if n < batch {
                break;
            }
        }
        // The kernel's drop counters cost a system call: copied at most once a second.
        if port
            .counters_read
            .is_none_or(|t| now.saturating_duration_since(t) >= Duration::from_secs(1))
        {
            port.counters_read = Some(now);
            if let Ok(k) = port.xsk.stats() {
                let values = [k.rx_dropped, k.rx_ring_full, k.rx_fill_empty, k.tx_invalid];
                for (c, v) in stats.xdp_kernel.iter().zip(values) {
                    c.set(v);
                }
            }
        }
        self.xdp = Some(port);
    }

    // ---- TCP ----

    fn accept(&mut self, index: usize, now: Instant, stats: &WorkerStats) {
        for _ in 0..ACCEPT_BURST {
            let Some((listener, v6)) = self.listeners.get(index) else {
                return;
            };
            let v6 = *v6;
            let (stream, peer) = match sys::accept_nonblocking(listener) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    // Out of descriptors or memory: make room, or stop accepting until a
                    // connection closes (the listener would otherwise wake us forever).
                    if !self.evict_oldest(stats) {
                        request_log!(
                            stats,
                            WARN,
                            worker = self.id,
                            "cannot accept TCP connections: {e}; pausing until one closes"
                        );
                        self.pause_listeners();
                        return;
                    }
                    continue;
                }
                Err(e) => {
                    request_log!(stats, DEBUG, worker = self.id, "accept: {e}");
                    continue;
                }
            };
            // The client's own limit first, so a refused connection evicts nobody.
            let Some(client_slot) = self.shared.tcp_clients.acquire(peer.map(|p| p.ip())) else {
                stats.tcp_refused_client.add(1);
                continue;
            };
            let at_limit = self.conns.len() >= self.opts.tcp_per_worker
                || self.shared.tcp_open.load(Relaxed) >= self.opts.tcp_total;
            if at_limit && !self.evict_oldest(stats) {
                self.shared.tcp_clients.release(client_slot);
                stats.tcp_refused.add(1);
                continue;
            }
            let input = match self.buffer_pool.pop() {
                Some(b) => b,
                None => {
                    stats.lock_acquisitions.add(1); // a heap allocation: the allocator may lock
                    vec![0; INPUT_INITIAL]
                }
            };
            let fd = stream.as_raw_fd();
            let mut conn = Conn::new(stream, peer, v6, input, now);
            conn.client_slot = client_slot;
            let (slot, generation, allocated) = self.conns.insert(conn);
            if allocated {
                stats.lock_acquisitions.add(1);
            }
            if let Err(e) = self.epoll.add(fd, conn_token(slot, generation), READABLE) {
                request_log!(stats, DEBUG, worker = self.id, "epoll add: {e}");
                if let Some(c) = self.conns.remove(slot) {
                    self.shared.tcp_clients.release(c.client_slot);
                }
                continue;
            }
            if let Some(c) = self.conns.get_mut(slot, generation) {
                c.interest = READABLE;
            }
            self.shared.tcp_open.fetch_add(1, Relaxed);
            stats.tcp_accepted.add(1);
            stats.tcp_open.set(self.conns.len() as u64);
        }
    }

    fn conn_ready(
        &mut self,
        slot: u32,
        generation: u32,
        ready: u32,
        zones: &ZoneSet,
        now: Instant,
        stats: &WorkerStats,
    ) {
        let log_queries = self.opts.log_queries;
        let max_queries = self.opts.tcp_max_queries;
        let Some(conn) = self.conns.get_mut(slot, generation) else {
            return;
        };
        let queries_before = conn.queries;
        if ready & BROKEN != 0 {
            self.close(slot, stats);
            return;
        }
        let mut active = false;
        let mut failed = false;
        if ready & WRITABLE != 0 && conn.unsent() > 0 {
            match flush_output(conn) {
                Ok(progress) => active |= progress,
                Err(_) => failed = true,
            }
        }
        if !failed
            && ready & READABLE != 0
            && !conn.peer_closed
            && conn.unsent() < OUTPUT_HIGH_WATER
        {
            let (spare, grew) = conn.input.spare();
            if grew {
                stats.lock_acquisitions.add(1);
            }
            match (&conn.stream).read(spare) {
                Ok(0) => conn.peer_closed = true,
                Ok(n) => {
                    conn.input.filled(n);
                    active = true;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => failed = true,
            }
        }
        if !failed {
            let ctx = FrameCtx {
                slot,
                generation,
                now,
                log_queries,
                max_queries,
            };
            match answer_frames(
                conn,
                &mut self.staging,
                zones,
                &self.shared.transfer_acl,
                self.recursion.as_mut(),
                ctx,
                stats,
            ) {
                Ok(streamed) => active |= streamed,
                Err(_) => failed = true,
            }
        }
        if failed || (conn.peer_closed && conn.unsent() == 0 && conn.transfer.is_none()) {
            self.close(slot, stats);
            return;
        }
        // A transfer with nothing unsent still has messages to write: EPOLLOUT (level
        // triggered) brings the connection back on the next turn of the loop.
        let want = if conn.unsent() > 0 || conn.transfer.is_some() {
            WRITABLE
        } else {
            0
        } | if !conn.peer_closed && conn.unsent() < OUTPUT_HIGH_WATER {
            READABLE
        } else {
            0
        };
        if want != conn.interest {
            if self
                .epoll
                .modify(conn.stream.as_raw_fd(), conn_token(slot, generation), want)
                .is_err()
            {
                self.close(slot, stats);
                return;
            }
            conn.interest = want;
        }
        // The read timeout runs from the first byte of a query (or the end of the one
        // before it) until the query is whole.
        let receiving = conn.receiving() && !conn.peer_closed;
        let progressed = conn.queries != queries_before;
        let in_partial = conn.in_partial();
        if receiving && (progressed || !in_partial) {
            self.conns.set_partial(slot, now);
        } else if !receiving && in_partial {
            self.conns.clear_partial(slot);
        }
        if active {
            self.conns.touch(slot, now);
        }
    }

    /// Closes connections that have been receiving one query for longer than the read
    /// timeout, then those idle for longer than the idle timeout (oldest first, each).
    fn expire(&mut self, now: Instant, stats: &WorkerStats) {
        while let Some((slot, since)) = self.conns.oldest_partial() {
            if now.saturating_duration_since(since) < self.opts.tcp_read_timeout {
                break;
            }
            stats.tcp_read_timeout_closed.add(1);
            self.close(slot, stats);
        }
        while let Some((slot, last)) = self.conns.oldest() {
            if now.saturating_duration_since(last) < self.opts.tcp_idle_timeout {
                break;
            }
            stats.tcp_idle_closed.add(1);
            self.close(slot, stats);
        }
    }

    /// Closes the least recently active connection; false if there is none.
    fn evict_oldest(&mut self, stats: &WorkerStats) -> bool {
        match self.conns.oldest() {
            Some((slot, _)) => {
                stats.tcp_evicted.add(1);
                self.close(slot, stats);
                true
            }
            None => false,
        }
    }

    fn close(&mut self, slot: u32, stats: &WorkerStats) {
        // Closing the descriptor also takes it out of the epoll set.
        if let Some(conn) = self.conns.remove(slot) {
            if let Some(t) = &conn.transfer {
                transfer_ended(conn.peer, t, stats);
            }
            let buf = conn.input.into_inner();
            if buf.len() == INPUT_INITIAL && self.buffer_pool.len() < BUFFER_POOL_MAX {
                self.buffer_pool.push(buf);
            }
            self.shared.tcp_clients.release(conn.client_slot);
            self.shared.tcp_open.fetch_sub(1, Relaxed);
            stats.tcp_open.set(self.conns.len() as u64);
            if self.listeners_paused {
                self.resume_listeners();
            }
        }
    }

    fn pause_listeners(&mut self) {
        for (i, (l, _)) in self.listeners.iter().enumerate() {
            let _ = self
                .epoll
                .modify(l.as_raw_fd(), (KIND_LISTENER << KIND_SHIFT) | i as u64, 0);
        }
        self.listeners_paused = true;
    }

    fn resume_listeners(&mut self) {
        for (i, (l, _)) in self.listeners.iter().enumerate() {
            let _ = self.epoll.modify(
                l.as_raw_fd(),
                (KIND_LISTENER << KIND_SHIFT) | i as u64,
                READABLE,
            );
        }
        self.listeners_paused = false;
    }

    /// Shutdown: one last try to send what is buffered, then close everything.
    fn close_all(&mut self, stats: &WorkerStats) {
        for slot in self.conns.occupied() {
            if let Some(conn) = self.conns.remove(slot) {
                let mut conn = conn;
                let _ = flush_output(&mut conn);
                if let Some(t) = &conn.transfer {
                    transfer_ended(conn.peer, t, stats);
                }
                self.shared.tcp_clients.release(conn.client_slot);
                self.shared.tcp_open.fetch_sub(1, Relaxed);
            }
        }
        stats.tcp_open.set(0);
    }
}

/// Sends the resolver's queued UDP answers, each from its listening socket.
fn flush_answers(udp: &[(UdpSocket, bool)], answers: &mut SendBatch, stats: &WorkerStats) {
    if answers.len() == 0 {
        return;
    }
    let done = answers.flush(|i| udp.get(i).map(|(s, _)| s.as_raw_fd()));
    stats.udp_send_calls.add(done.calls);
    stats.dropped.add(done.dropped);
}

/// Answers every whole query buffered on `conn`, in order, writing the responses with as
/// few system calls as the socket allows. Stops while too much output is unsent (the rest
/// stays buffered until the client reads). True if a zone transfer wrote messages (the
/// connection is active even when the socket took them all at once).
fn answer_frames(
    conn: &mut Conn,
    staging: &mut [u8],
    zones: &ZoneSet,
    transfer_acl: &ArcSwap<TransferAcl>,
    mut recursion: Option<&mut Recursion>,
    ctx: FrameCtx,
    stats: &WorkerStats,
) -> io::Result<bool> {
    // A transfer in progress goes first; queries behind it wait until it has ended, so
    // its messages are never interleaved with other responses.
    let streamed = continue_transfer(conn, staging, stats)?;
    let log_queries = ctx.log_queries;
    let via = Via::tcp(conn.v6);
    let mut used = 0;
    while conn.transfer.is_none()
        && conn.input.has_frame()
        && conn.unsent() < OUTPUT_HIGH_WATER
        && conn.queries < ctx.max_queries
    {
        if staging.len() - used < MAX_FRAME {
            queue_output(conn, &staging[..used], stats)?;
            used = 0;
            continue;
        }
        let Some(range) = conn.input.next_frame() else {
            break;
        };
        conn.queries += 1;
        if conn.queries >= ctx.max_queries {
            // The last query this connection gets answered: read no more, close once the
            // responses are out (RFC 7766 §6.2.3 lets the server close).
            conn.peer_closed = true;
            stats.tcp_query_limit_closed.add(1);
        }
        let query = conn.input.frame(range);
        stats.queries[via as usize].add(1);
        let out = &mut staging[used + 2..used + MAX_FRAME];
        match respond(zones, query, Transport::Tcp, out) {
            Some(mut o) if o.len <= out.len() => {
                if o.rcode == Rcode::REFUSED && is_transfer(&o) {
                    let ip = conn.peer.map(|p| p.ip());
                    let acl = transfer_acl.load();
                    match xfr_policy::decide(zones, &acl, query, ip, true, unix_now(), out) {
                        Some(Decision::Transfer(t)) => {
                            stats.answered(o.qtype, Rcode::NOERROR, false);
                            stats.xfr[XFR_STARTED].add(1);
                            info!(
                                "transfer of {} ({}, serial {}) to {}: started",
                                t.zone().apex(),
                                t.request().qtype,
                                t.zone().serial(),
                                OrDash(conn.peer)
                            );
                            conn.transfer = Some(t);
                            break;
                        }
                        Some(Decision::Reply(r)) => {
                            if r.rcode != Rcode::NOERROR {
                                stats.xfr[XFR_REFUSED].add(1);
                                let mut qname = NameBuf::new();
                                let _ = read_question(query, HEADER_LEN, &mut qname);
                                info!(
                                    "transfer of {} to {} refused: {}",
                                    qname.as_ref(),
                                    OrDash(conn.peer),
                                    r.rcode
                                );
                            }
                            o = r;
                        }
                        None => {}
                    }
                } else if o.rcode == Rcode::REFUSED {
                    if let Some(rec) = recursion.as_mut() {
                        let client = Client::Tcp {
                            slot: ctx.slot,
                            generation: ctx.generation,
                        };
                        let ip = conn.peer.map(|p| p.ip());
                        match rec.query(query, client, ip, out, ctx.now, stats) {
                            Reply::Refused => {}
                            Reply::Pending => continue,
                            Reply::Written(cached) => o = cached,
                        }
                    }
                }
                stats.answered(o.qtype, o.rcode, o.truncated);
                if log_queries {
                    log_query(conn.peer, via, query, &o, stats);
                }
                staging[used..used + 2].copy_from_slice(&(o.len as u16).to_be_bytes());
                used += 2 + o.len;
            }
            _ => stats.dropped.add(1),
        }
    }
    if used > 0 {
        queue_output(conn, &staging[..used], stats)?;
    }
    // A transfer that just started sends its first messages now.
    Ok(continue_transfer(conn, staging, stats)? || streamed)
}

/// Seconds since the epoch, for TSIG (a clock read, on the rare transfer path only).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// True for an outcome of an AXFR or IXFR query.
#[inline]
fn is_transfer(o: &Outcome) -> bool {
    matches!(o.qtype, Some(RType::AXFR | RType::IXFR))
}

/// Writes the next messages of `conn`'s transfer, at most a staging buffer's worth (15
/// messages, 240 KiB) per call and none while too much output is unsent, so one transfer of a big
/// zone cannot hold the worker: it comes back on the next turn of the loop. True if it
/// wrote any.
fn continue_transfer(conn: &mut Conn, staging: &mut [u8], stats: &WorkerStats) -> io::Result<bool> {
    let Some(mut t) = conn.transfer.take() else {
        return Ok(false);
    };
    t.set_time(unix_now());
    let mut used = 0;
    let room = 2 + xfr::MESSAGE_SIZE;
    while conn.unsent() < OUTPUT_HIGH_WATER && staging.len() - used >= room {
        let Some(len) = t.next_message(&mut staging[used + 2..used + room]) else {
            break;
        };
        staging[used..used + 2].copy_from_slice(&(len as u16).to_be_bytes());
        used += 2 + len;
        stats.xfr_messages.add(1);
        if t.is_done() {
            break;
        }
    }
    let sent = if used > 0 {
        queue_output(conn, &staging[..used], stats).map(|()| true)
    } else {
        Ok(false)
    };
    if t.is_done() {
        transfer_ended(conn.peer, &t, stats);
    } else {
        conn.transfer = Some(t);
    }
    sent
}

/// Counts and logs the end of a transfer: done once its last message is queued, else
/// aborted (the connection closed first, or a record was larger than a message).
#[cold]
fn transfer_ended(peer: Option<SocketAddr>, t: &Transfer, stats: &WorkerStats) {
    let done = t.is_done() && !t.failed();
    stats.xfr[if done { XFR_DONE } else { XFR_ABORTED }].add(1);
    let how = if done { "done" } else { "aborted" };
    info!(
        "transfer of {} (serial {}) to {}: {how}, {} records in {} messages",
        t.zone().apex(),
        t.zone().serial(),
        OrDash(peer),
        t.records(),
        t.messages()
    );
}

/// Which connection `answer_frames` serves, and when.
#[derive(Clone, Copy)]
struct FrameCtx {
    slot: u32,
    generation: u32,
    now: Instant,
    log_queries: bool,
    max_queries: u32,
}

/// Writes `data` now if nothing is queued before it; keeps whatever the socket refuses.
fn queue_output(conn: &mut Conn, data: &[u8], stats: &WorkerStats) -> io::Result<()> {
    let mut rest = data;
    if conn.unsent() == 0 {
        match (&conn.stream).write(data) {
            Ok(n) => rest = &data[n..],
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    if !rest.is_empty() {
        let cap = conn.output.capacity();
        conn.output.extend_from_slice(rest);
        if conn.output.capacity() != cap {
            stats.lock_acquisitions.add(1); // a heap allocation: the allocator may lock
        }
    }
    Ok(())
}

/// Sends queued output; true if the socket took anything.
fn flush_output(conn: &mut Conn) -> io::Result<bool> {
    let mut progress = false;
    while conn.unsent() > 0 {
        match (&conn.stream).write(&conn.output[conn.sent..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                conn.sent += n;
                progress = true;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if conn.unsent() == 0 {
        conn.sent = 0;
        if conn.output.capacity() > 2 * OUTPUT_HIGH_WATER {
            conn.output = Vec::new();
        } else {
            conn.output.clear();
        }
    }
    Ok(progress)
}

/// One info line per query (only when query logging is on), formatted without allocating.
/// Writing it takes stderr's lock, which is counted.
#[cold]
fn log_query(peer: Option<SocketAddr>, via: Via, query: &[u8], o: &Outcome, stats: &WorkerStats) {
    if !tracing::enabled!(target: "shardns::query", tracing::Level::INFO) {
        return;
    }
    stats.lock_acquisitions.add(1);
    let mut qname = NameBuf::new();
    let name = read_question(query, HEADER_LEN, &mut qname)
        .ok()
        .map(|_| qname.as_ref());
    info!(
        target: "shardns::query",
        "{} {} {} {} {} len={}{}",
        OrDash(peer),
        via.name(),
        OrDash(name),
        OrDash(o.qtype),
        o.rcode,
        o.len,
        if o.truncated { " TC" } else { "" }
    );
}

/// Shows a value, or `-` for none.
struct OrDash<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for OrDash<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}
