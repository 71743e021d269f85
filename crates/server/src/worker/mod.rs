//! worker -- one share-nothing worker: its own sockets, epoll loop, buffers and counters.
//!
//! A worker reads queries, has them answered by `dispatch` (the same code for every
//! transport) and writes the responses itself; nothing is handed to another thread. The
//! zone snapshot is refreshed once per loop iteration (one atomic load) and read without a
//! lock; the clock is read once per loop iteration. Buffers are allocated when the worker
//! starts; the query path does not allocate.
//!
//! This module owns the loop (`Worker::run`: epoll, timers, the resolver's deliveries); the
//! transports only move bytes:
//! - `udp`: socket datagrams in batches (recvmmsg/sendmmsg);
//! - `xdp_port`: AF_XDP frames (`server.xdp_interface`), answered in place in the frame;
//! - `conn`: TCP connections: accept, readiness, limits, timeouts, close;
//! - `stream`: the bytes on a connection: framed queries in, responses and zone transfers
//!   out, written only while the client reads;
//! - `tls`: DNS over TLS, a TCP connection with rustls between the socket and `stream`;
//! - `https`: DNS over HTTPS, a TLS connection with h2's HTTP/2 server instead of `stream`;
//! - `quic`: DNS over QUIC, a quinn-proto endpoint over the worker's own UDP sockets.
//!
use crate::dispatch::{Asked, Back, Dispatcher, Exit, QName};
use crate::dnstap::Tap;
use crate::origin::{Origin, Via};
use crate::recursion::{Recursion, KIND_UPSTREAM};
use crate::rrl::Rrl;
use crate::stats::WorkerStats;
use crate::tcp::{ConnTable, INPUT_INITIAL, MAX_FRAME};
use crate::xdp::Xsk;
use crate::Shared;
use shardns_sys::{Epoll, Events, SendBatch, UdpBatch, READABLE, WRITABLE};
use shardns_zone::ZoneSet;
use std::io;
use std::net::{TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// Logs from the request path. A line that is written takes stderr's lock, which is
/// counted; a disabled level costs the one `enabled!` branch.
macro_rules! request_log {
    ($stats:expr, $level:ident, $($arg:tt)+) => {
        if tracing::enabled!(tracing::Level::$level) {
            $stats.request_locks.add(1);
            tracing::event!(tracing::Level::$level, $($arg)+);
        }
    };
}

mod conn;
mod https;
mod proxy;
mod quic;
mod stream;
mod tls;
mod udp;
mod xdp_port;

pub(crate) use quic::QuicConfig;
pub(crate) use tls::TlsConfig;

use stream::queue_output;
use xdp_port::XdpPort;

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
    /// Time a TLS client has to finish its handshake.
    pub(crate) tls_handshake_timeout: Duration,
    /// DNS over HTTPS: concurrent HTTP/2 streams per connection.
    pub(crate) https_streams: u32,
    /// DNS over HTTPS: streams a client may reset per connection and second.
    pub(crate) https_resets_per_second: u32,
    /// `server.proxy_protocol_from`: whose datagrams and connections start with a PROXY
    /// protocol v2 header.
    pub(crate) proxy_from: Vec<shardns_config::AclEntry>,
}

/// The sockets a worker owns: a UDP socket and a TCP listener per listen address, each
/// bound with SO_REUSEPORT so the kernel spreads clients over the workers.
#[derive(Debug, Default)]
pub(crate) struct WorkerSockets {
    pub(crate) udp: Vec<UdpSocket>,
    pub(crate) tcp: Vec<TcpListener>,
    /// A DNS-over-TLS listener per `server.tls_listen` address.
    pub(crate) tls: Vec<TcpListener>,
    /// A DNS-over-QUIC UDP socket per `server.quic_listen` address.
    pub(crate) quic: Vec<UdpSocket>,
    /// A DNS-over-HTTPS listener per `server.https_listen` address.
    pub(crate) https: Vec<TcpListener>,
    /// The AF_XDP socket for this worker's receive queue (`server.xdp_interface`).
    pub(crate) xsk: Option<Xsk>,
}

/// Token kinds, in the top byte of an epoll token.
const KIND_SHIFT: u32 = 56;
const KIND_WAKER: u64 = 0;
const KIND_UDP: u64 = 1;
const KIND_LISTENER: u64 = 2;
const KIND_CONN: u64 = 3;
const KIND_XDP: u64 = 5;
const KIND_QUIC: u64 = 6;

fn conn_token(slot: u32, generation: u32) -> u64 {
    (KIND_CONN << KIND_SHIFT) | ((generation as u64 & 0xff_ffff) << 32) | slot as u64
}

/// UDP batches handled per socket before looking at other sockets again.
const UDP_ROUNDS: usize = 16;
/// Connections accepted per listener wake-up.
const ACCEPT_BURST: usize = 64;
/// Worker-wide TCP response staging: four maximal responses.
const TCP_STAGING: usize = 4 * MAX_FRAME;
/// Input buffers kept for reuse by later connections.
const BUFFER_POOL_MAX: usize = 256;
/// Rounds of decrypting and answering per TLS readiness event (a round takes what fits in
/// the input buffer).
const TLS_ROUNDS: usize = 8;

pub(crate) struct Worker {
    id: usize,
    shared: Arc<Shared>,
    opts: WorkerOptions,
    epoll: Epoll,
    udp: Vec<(UdpSocket, bool)>,
    /// TCP listeners, then DNS-over-TLS listeners from `tls_from` on, then DNS-over-HTTPS
    /// listeners from `https_from` on.
    listeners: Vec<(TcpListener, bool)>,
    tls_from: usize,
    https_from: usize,
    /// TLS handshakes in progress, with their deadlines.
    handshakes: tls::Handshakes,
    listeners_paused: bool,
    conns: ConnTable,
    staging: Box<[u8]>,
    buffer_pool: Vec<Vec<u8>>,
    /// The roles beside the zones that a query may go through.
    roles: Roles,
    /// AF_XDP (`server.xdp_interface`), else `None`.
    xdp: Option<XdpPort>,
    /// DNS over QUIC (`server.quic_listen`), else `None`.
    quic: Option<quic::Quic>,
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
        tap: Option<Tap>,
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
        add_listeners(&epoll, &mut listeners, sockets.tcp)?;
        let tls_from = listeners.len();
        add_listeners(&epoll, &mut listeners, sockets.tls)?;
        let https_from = listeners.len();
        add_listeners(&epoll, &mut listeners, sockets.https)?;
        let xdp = match sockets.xsk {
            Some(xsk) => {
                epoll.add(xsk.as_raw_fd(), KIND_XDP << KIND_SHIFT, READABLE)?;
                Some(XdpPort::new(xsk, local))
            }
            None => None,
        };
        let quic = match &shared.quic {
            Some(config) if !sockets.quic.is_empty() => Some(quic::Quic::new(
                sockets.quic,
                config,
                &epoll,
                opts.tcp_per_worker,
            )?),
            _ => None,
        };
        let pool = opts.tcp_per_worker.min(BUFFER_POOL_MAX);
        Ok(Self {
            id,
            shared,
            conns: ConnTable::with_capacity(opts.tcp_per_worker.min(1 << 16)),
            tls_from,
            https_from,
            handshakes: tls::Handshakes::new(opts.tls_handshake_timeout, 4 * opts.tcp_per_worker),
            opts,
            epoll,
            udp,
            listeners,
            listeners_paused: false,
            staging: vec![0; TCP_STAGING].into_boxed_slice(),
            buffer_pool: (0..pool.min(16)).map(|_| vec![0; INPUT_INITIAL]).collect(),
            roles: Roles {
                recursion,
                rrl,
                tap,
            },
            xdp,
            quic,
        })
    }

    /// The event loop; returns when the server shuts down.
    pub(crate) fn run(mut self) {
        let shared = Arc::clone(&self.shared);
        let stats = &shared.stats[self.id];
        let waker = &shared.wakers[self.id];
        let mut zones = arc_swap::Cache::new(&shared.plane.zones);
        let mut events = Events::with_capacity(256);
        let mut batch = UdpBatch::new(self.opts.udp_batch);
        // The resolver's finished UDP answers, sent once per loop turn.
        let mut answers = self
            .roles
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
            if shared.plane.shutdown.load(Relaxed) {
                break;
            }
            let zones: &ZoneSet = zones.load();
            for (token, ready) in events.iter() {
                let index = (token & 0xffff_ffff) as usize;
                match token >> KIND_SHIFT {
                    KIND_UDP => self.serve_udp(index, zones, &mut batch, now, stats),
                    KIND_XDP => self.serve_xdp(zones, now, stats),
                    KIND_QUIC => self.serve_quic(index, zones, now, stats),
                    KIND_LISTENER => self.accept(index, now, stats),
                    KIND_CONN => {
                        let generation = ((token >> 32) & 0xff_ffff) as u32;
                        self.conn_ready(index as u32, generation, ready, zones, now, stats);
                    }
                    KIND_UPSTREAM => {
                        let generation = ((token >> 32) & 0xff_ffff) as u32;
                        if let Some(r) = self.roles.recursion.as_mut() {
                            r.upstream_ready(index as u32, generation, ready, now, &self.epoll);
                        }
                    }
                    _ => {
                        waker.drain();
                        self.take_eviction(stats);
                        self.take_late(&mut answers, stats);
                    }
                }
            }
            if let Some(answers) = answers.as_mut() {
                self.drive_recursion(now, answers, stats);
            }
            if self.quic.is_some() {
                self.quic_turn(zones, now, stats);
            }
            self.expire(now, stats);
            if let Some(tap) = self.roles.tap.as_mut() {
                tap.flush(stats);
            }
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
        let handshake = self.handshakes.next_deadline().map(until);
        let resolver = self
            .roles
            .recursion
            .as_mut()
            .and_then(|r| r.timeout_ms(now))
            .map(|ms| ms.min(i32::MAX as u64 - 1) as i32);
        // Replies the kernel did not take yet (copy mode sends inside the kick): try again soon.
        let xdp = self.xdp.as_mut().and_then(|x| {
            x.xsk.kick();
            (x.xsk.tx_pending() > 0).then_some(1)
        });
        let quic = self.quic.as_ref().and_then(|q| q.next_timeout()).map(until);
        [idle, read, handshake, resolver, xdp, quic]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(-1)
    }

    /// Runs the resolver's timers and events; finished answers leave the way every answer
    /// does ([`Exit::send`]), then go to their clients (UDP: from the listening socket the
    /// query came in on, queued in `answers` and sent with sendmmsg at the end; the stream
    /// transports: the connection or stream, if still open).
    fn drive_recursion(&mut self, now: Instant, answers: &mut SendBatch, stats: &WorkerStats) {
        let Roles {
            recursion,
            tap,
            rrl,
        } = &mut self.roles;
        let Some(rec) = recursion.as_mut() else {
            return;
        };
        let rrl_now = rrl.as_ref().map_or(0, |r| r.clock(now));
        let mut exit = Exit {
            rrl: rrl.as_mut(),
            rrl_now,
            stats,
            log_queries: self.opts.log_queries,
            tap: tap.as_mut(),
            now,
        };
        let mut to = Late {
            udp: &self.udp,
            answers,
            quic: &mut self.quic,
            conns: &mut self.conns,
            epoll: &self.epoll,
            stats,
        };
        let policy = self.shared.edns.load();
        rec.drive(
            now,
            &self.epoll,
            stats,
            &policy,
            &mut |origin, w, qname, policy, frame| {
                // The query was logged by dnstap when it came in.
                let asked = Asked {
                    qname: Some(QName::Kept(qname)),
                    query: None,
                    client: true,
                    policy,
                };
                let Some(w) = exit.send::<true>(w, asked, origin, &mut frame[2..]) else {
                    return;
                };
                frame[..2].copy_from_slice(&(w.len as u16).to_be_bytes());
                to.deliver(origin, &frame[..2 + w.len]);
            },
        );
        flush_answers(&self.udp, answers, stats);
    }
}

impl Worker {
    /// Sends the answers the control plane made for this worker's clients (dynamic
    /// updates: `Shared::deliver_late`), as the resolver's later answers go.
    fn take_late(&mut self, answers: &mut Option<SendBatch>, stats: &WorkerStats) {
        let mail = std::mem::take(
            &mut *self.shared.late[self.id]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if mail.is_empty() {
            return;
        }
        let (batch, size) = (self.opts.udp_batch, self.opts.udp_max_response);
        let answers = answers.get_or_insert_with(|| SendBatch::new(batch, size));
        let mut to = Late {
            udp: &self.udp,
            answers,
            quic: &mut self.quic,
            conns: &mut self.conns,
            epoll: &self.epoll,
            stats,
        };
        let mut frame = Vec::new();
        for (origin, answer) in mail {
            let Ok(len) = u16::try_from(answer.len()) else {
                continue;
            };
            frame.clear();
            frame.extend_from_slice(&len.to_be_bytes());
            frame.extend_from_slice(&answer);
            to.deliver(origin, &frame);
        }
        flush_answers(&self.udp, answers, stats);
    }
}

/// Where the resolver's later answers go: the worker's sockets and connections.
struct Late<'a> {
    udp: &'a [(UdpSocket, bool)],
    answers: &'a mut SendBatch,
    quic: &'a mut Option<quic::Quic>,
    conns: &'a mut ConnTable,
    epoll: &'a Epoll,
    stats: &'a WorkerStats,
}

impl Late<'_> {
    fn push_udp(&mut self, socket: usize, to: std::net::SocketAddr, frame: &[u8]) {
        if self.answers.is_full() {
            flush_answers(self.udp, self.answers, self.stats);
        }
        // Refused only when longer than `udp_max_response`, which the resolver's UDP
        // answers never are.
        if !self.answers.push(socket, to, &frame[2..]) {
            self.stats.dropped.add(1);
        }
    }

    /// Moves a later answer's bytes (`frame`: with its 2-octet length prefix) to `origin`.
    fn deliver(&mut self, origin: Origin, frame: &[u8]) {
        let stats = self.stats;
        let (slot, generation) = match origin.via {
            // An AF_XDP query's answer leaves through the socket bound to its address.
            Via::Udp { socket } | Via::Xdp { socket } => {
                let Some(peer) = origin.peer else {
                    stats.dropped.add(1);
                    return;
                };
                self.push_udp(socket, peer, frame);
                return;
            }
            // Back to the proxy, not to the client the header named.
            Via::UdpProxied { socket, proxy } => {
                self.push_udp(socket.into(), proxy.addr(origin.v6), frame);
                return;
            }
            Via::Quic { conn, stream } => {
                if let Some(q) = self.quic.as_mut() {
                    q.deliver(conn, stream, frame, stats);
                }
                return;
            }
            Via::Tcp { slot, generation } | Via::Tls { slot, generation } => {
                let Some(conn) = self.conns.get_mut(slot, generation) else {
                    stats.dropped.add(1);
                    return;
                };
                if queue_output(conn, frame, stats).is_err() {
                    // The connection is broken; epoll reports it and it is closed then.
                    return;
                }
                (slot, generation)
            }
            Via::Https {
                slot,
                generation,
                stream,
            } => {
                let Some(conn) = self.conns.get_mut(slot, generation) else {
                    stats.dropped.add(1);
                    return;
                };
                if https::deliver(conn, stream, &frame[2..]).is_err()
                    || stream::flush_output(conn).is_err()
                {
                    return;
                }
                (slot, generation)
            }
        };
        // A stream connection: wait for room to write the rest.
        let Some(conn) = self.conns.get_mut(slot, generation) else {
            return;
        };
        if conn.unsent() > 0 && conn.interest & WRITABLE == 0 {
            let want = conn.interest | WRITABLE;
            if self
                .epoll
                .modify(conn.stream.as_raw_fd(), conn_token(slot, generation), want)
                .is_ok()
            {
                conn.interest = want;
            }
        }
    }
}

/// Registers `new` listeners with the worker's epoll, each under its index in `listeners`
/// (TCP, DoT and DoH listeners share that table; the caller notes where each kind starts),
/// with whether it is IPv6.
fn add_listeners(
    epoll: &Epoll,
    listeners: &mut Vec<(TcpListener, bool)>,
    new: Vec<TcpListener>,
) -> io::Result<()> {
    for l in new {
        let i = listeners.len();
        epoll.add(
            l.as_raw_fd(),
            (KIND_LISTENER << KIND_SHIFT) | i as u64,
            READABLE,
        )?;
        let v6 = l.local_addr()?.is_ipv6();
        listeners.push((l, v6));
    }
    Ok(())
}

/// Sends the resolver's queued UDP answers, each from its listening socket.
fn flush_answers(udp: &[(UdpSocket, bool)], answers: &mut SendBatch, stats: &WorkerStats) {
    if answers.is_empty() {
        return;
    }
    let done = answers.flush(|i| udp.get(i).map(|(s, _)| s.as_raw_fd()));
    stats.udp_send_calls.add(done.calls);
    stats.dropped.add(done.dropped);
}

/// A worker's roles beside the zones, each its own (no sharing between workers).
pub(crate) struct Roles {
    /// The resolver role (`[resolver] recursion = true`), else `None`.
    pub(crate) recursion: Option<Recursion>,
    /// Response rate limiting (`[rrl] enabled = true`), else `None`.
    pub(crate) rrl: Option<Rrl>,
    /// The dnstap log (`[dnstap]`), else `None`.
    pub(crate) tap: Option<Tap>,
}

impl Roles {
    /// The dispatcher a transport hands its queries to for this turn of the loop.
    fn dispatcher<'w>(
        &'w mut self,
        zones: &'w ZoneSet,
        (shared, worker): (&'w Arc<Shared>, usize),
        stats: &'w WorkerStats,
        log_queries: bool,
        now: Instant,
    ) -> Dispatcher<'w> {
        let rrl_now = self.rrl.as_ref().map_or(0, |r| r.clock(now));
        let exit = Exit {
            rrl: self.rrl.as_mut(),
            rrl_now,
            stats,
            log_queries,
            tap: self.tap.as_mut(),
            now,
        };
        Dispatcher {
            zones,
            transfer_acl: &shared.plane.transfer_acl,
            journals: &shared.plane.journals,
            secondary: shared.plane.secondary.as_ref(),
            control: &shared.plane.stats,
            recursion: self.recursion.as_mut(),
            edns: &shared.edns,
            unix: shared.unix_clock,
            exit,
            recursive: false,
            back: Back { shared, worker },
        }
    }
}
