//! worker::quic -- DNS over QUIC (RFC 9250): each worker drives a quinn-proto `Endpoint`
//! and its `Connection`s (sans-I/O QUIC) from its own epoll loop, over its own UDP socket
//! per `server.quic_listen` address.
//!
//! ```text
//!  UDP datagram ─▶ Endpoint::handle ─┬─ new connection: accept (retry first under load,
//!                                    │   refuse at the limit)
//!                                    ├─ for a connection: Connection::handle_event
//!                                    └─ stateless answer (version negotiation, reset): sent
//!  each connection touched, then: endpoint events ⇄ Endpoint, stream events: a new
//!  bidirectional stream's bytes gathered until its 2-octet length is complete, the query
//!  (Message ID 0, RFC 9250 §4.2.1) handed to `Dispatcher::handle` like any other, the
//!  response written with its length, the stream finished; Connection::poll_transmit ─▶
//!  send_to; the earliest timer of all connections becomes part of the loop's timeout.
//! ```
//!
//! Routing: every worker binds the QUIC addresses with SO_REUSEPORT, and the kernel picks
//! the socket, so the worker, by a hash of the 4-tuple. A client's datagrams keep their
//! 4-tuple, so a connection stays on the worker that accepted it. A client that migrates
//! (a new address or port: a NAT rebinding) may land on another worker, which does not
//! know its connection IDs and answers with a stateless reset (every worker shares the
//! reset key), so the client connects anew; connection migration is off (`migration
//! (false)`) for that reason. Routing by connection ID (an eBPF SO_REUSEPORT program
//! reading a worker number from the ID) would lift it; not done.
//!
//! One query per stream, as RFC 9250 §4.2 says; a stream with more, or a message ID other
//! than 0, is a protocol error (DOQ_PROTOCOL_ERROR closes the connection). The resolver
//! role answers a cache miss later: its answer is written to the stream when the worker
//! delivers it ([`Quic::deliver`]). A zone transfer (XoQ) writes its messages on the
//! query's stream as the client's flow control lets it, a few per turn of the loop, at most
//! two transfers at once per connection.
//!
//! Limits: connections per worker are `limits.tcp_connections_per_worker`; past half of
//! it a new client must first prove its address (a Retry), at the limit it is refused
//! (CONNECTION_REFUSED). 100 concurrent streams per connection, at most 128 KiB held for
//! its unfinished queries and untaken responses (past it, DOQ_EXCESSIVE_LOAD resets the
//! stream) and 1 MiB in quinn-proto's windows each way; idle connections closed after
//! `limits.tcp_idle_timeout_ms`. Unlike the UDP path, this one allocates: quinn-proto takes
//! each datagram in a `BytesMut` and keeps its own state per connection.

mod config;
mod streams;

pub(crate) use config::QuicConfig;
use streams::{pump, read_stream, write_unsent};

use super::{Worker, KIND_QUIC, KIND_SHIFT};
use crate::dispatch::Dispatcher;
use crate::stats::{WorkerStats, QUIC_ACCEPTED, QUIC_REFUSED, QUIC_RETRIED};
use bytes::BytesMut;
use quinn_proto::{ConnectionHandle, DatagramEvent, Dir, Endpoint, Event, StreamEvent, StreamId};
use shardns_zone::xfr::Transfer;
use shardns_zone::ZoneSet;
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

/// RFC 9250 §8.4 error codes.
const DOQ_PROTOCOL_ERROR: u32 = 0x2;
const DOQ_REQUEST_CANCELLED: u32 = 0x3;
const DOQ_EXCESSIVE_LOAD: u32 = 0x4;
/// Concurrent streams (queries) a client may have open on a connection.
const MAX_STREAMS: u32 = 100;
/// Datagrams read per readiness event before the loop looks at other sockets.
const RECV_BURST: usize = 64;
/// Datagrams a connection may send per turn before others get their turn.
const TRANSMITS_PER_TURN: usize = 64;
/// A stream's bytes: the length and the largest DNS message.
const STREAM_MAX: usize = 2 + 65_535;
/// Octets a connection may have waiting in our buffers: queries not yet whole, responses
/// the client has not taken. Past it the stream that would add more is reset
/// (DOQ_EXCESSIVE_LOAD): a client cannot make a worker hold 100 streams of 64 KiB each.
const BUFFERED_MAX: usize = 128 * 1024;
/// Messages of a zone transfer written per stream per turn of the loop.
const XFR_MESSAGES_PER_TURN: usize = 8;
/// Zone transfers at once on one connection.
const XFR_PER_CONN: usize = 2;
/// What quinn-proto itself may hold per connection, each way.
const WINDOW: u32 = 1 << 20;

/// One connection and what its streams hold.
struct QuicConn {
    conn: quinn_proto::Connection,
    /// The socket it came in on.
    socket: usize,
    /// Queries still arriving.
    partial: HashMap<StreamId, Vec<u8>>,
    /// Responses the stream did not take at once (flow control): the bytes, and how many
    /// went.
    unsent: HashMap<StreamId, (Vec<u8>, usize)>,
    /// Zone transfers being written, one per stream (RFC 9250 §4.2: the messages of an
    /// AXFR or IXFR on the query's stream).
    transfers: HashMap<StreamId, Box<Transfer>>,
    /// A transfer has messages left that the stream would take, or datagrams are left to
    /// send: drive the connection again next turn.
    more: bool,
    timeout: Option<Instant>,
}

impl QuicConn {
    /// Octets held for streams other than `id`.
    fn buffered_except(&self, id: StreamId) -> usize {
        let partial: usize = self
            .partial
            .iter()
            .filter(|(s, _)| **s != id)
            .map(|(_, b)| b.len())
            .sum();
        let unsent: usize = self
            .unsent
            .iter()
            .filter(|(s, _)| **s != id)
            .map(|(_, (b, sent))| b.len() - sent)
            .sum();
        partial + unsent
    }
}

/// A worker's QUIC side.
pub(super) struct Quic {
    sockets: Vec<(UdpSocket, SocketAddr)>,
    endpoint: Endpoint,
    conns: HashMap<ConnectionHandle, QuicConn>,
    /// Connections with new input or timers due, to drive this turn.
    touched: Vec<ConnectionHandle>,
    next_timeout: Option<Instant>,
    max_conns: usize,
    recv: Box<[u8]>,
    send: Vec<u8>,
    out: Box<[u8]>,
}

impl Quic {
    /// Registers the sockets with the worker's epoll instance.
    pub(super) fn new(
        sockets: Vec<UdpSocket>,
        config: &QuicConfig,
        epoll: &shardns_sys::Epoll,
        max_conns: usize,
    ) -> io::Result<Self> {
        let mut socks = Vec::new();
        for (i, s) in sockets.into_iter().enumerate() {
            epoll.add(
                s.as_raw_fd(),
                (KIND_QUIC << KIND_SHIFT) | i as u64,
                shardns_sys::READABLE,
            )?;
            let local = s.local_addr()?;
            socks.push((s, local));
        }
        Ok(Self {
            sockets: socks,
            // A server config here makes the endpoint take new connections; each is accepted
            // with the current one (a reload replaces it).
            endpoint: Endpoint::new(
                Arc::clone(&config.endpoint),
                Some(config.current.load_full()),
                false,
                None,
            ),
            conns: HashMap::new(),
            touched: Vec::new(),
            next_timeout: None,
            max_conns: max_conns.max(1),
            recv: vec![0; 65_535].into_boxed_slice(),
            send: Vec::with_capacity(2048),
            out: vec![0; STREAM_MAX].into_boxed_slice(),
        })
    }

    /// The earliest timer of any connection.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.next_timeout
    }

    /// Sends what `send[..size]` holds (one datagram, or several of `segment` octets).
    fn transmit(&self, socket: usize, t: &quinn_proto::Transmit, stats: &WorkerStats) {
        let Some((s, _)) = self.sockets.get(socket) else {
            return;
        };
        let data = &self.send[..t.size.min(self.send.len())];
        let segment = t.segment_size.unwrap_or(data.len()).max(1);
        for d in data.chunks(segment) {
            if s.send_to(d, t.destination).is_err() {
                // QUIC retransmits; nothing else to do.
                stats.dropped.add(1);
            }
        }
    }
}

impl Worker {
    /// Reads what QUIC socket `index` holds (a burst), then drives the connections it
    /// touched.
    pub(super) fn serve_quic(
        &mut self,
        index: usize,
        zones: &ZoneSet,
        now: Instant,
        stats: &WorkerStats,
    ) {
        let Some(q) = self.quic.as_mut() else {
            return;
        };
        let Some(config) = self.shared.quic.as_ref() else {
            return;
        };
        for _ in 0..RECV_BURST {
            let Some((sock, local)) = q.sockets.get(index) else {
                return;
            };
            let local_ip = local.ip();
            let (n, peer) = match sock.recv_from(&mut q.recv) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let data = BytesMut::from(&q.recv[..n]);
            q.send.clear();
            match q
                .endpoint
                .handle(now, peer, Some(local_ip), None, data, &mut q.send)
            {
                Some(DatagramEvent::ConnectionEvent(ch, event)) => {
                    if let Some(c) = q.conns.get_mut(&ch) {
                        c.conn.handle_event(event);
                        q.touched.push(ch);
                    }
                }
                Some(DatagramEvent::NewConnection(incoming)) => {
                    let open = q.conns.len();
                    if open >= q.max_conns {
                        let t = q.endpoint.refuse(incoming, &mut q.send);
                        q.transmit(index, &t, stats);
                        stats.quic_connections[QUIC_REFUSED].add(1);
                    } else if open >= q.max_conns / 2 && !incoming.remote_address_validated() {
                        match q.endpoint.retry(incoming, &mut q.send) {
                            Ok(t) => {
                                q.transmit(index, &t, stats);
                                stats.quic_connections[QUIC_RETRIED].add(1);
                            }
                            Err(e) => q.endpoint.ignore(e.into_incoming()),
                        }
                    } else {
                        let server = config.current.load_full();
                        match q.endpoint.accept(incoming, now, &mut q.send, Some(server)) {
                            Ok((ch, conn)) => {
                                stats.quic_connections[QUIC_ACCEPTED].add(1);
                                q.conns.insert(
                                    ch,
                                    QuicConn {
                                        conn,
                                        socket: index,
                                        partial: HashMap::new(),
                                        unsent: HashMap::new(),
                                        transfers: HashMap::new(),
                                        more: false,
                                        timeout: None,
                                    },
                                );
                                q.touched.push(ch);
                            }
                            Err(e) => {
                                if let Some(t) = e.response {
                                    q.transmit(index, &t, stats);
                                }
                            }
                        }
                    }
                }
                Some(DatagramEvent::Response(t)) => q.transmit(index, &t, stats),
                None => {}
            }
        }
        self.drive_quic(zones, now, stats);
    }

    /// Runs the timers that are due, then drives every connection touched this turn.
    pub(super) fn quic_turn(&mut self, zones: &ZoneSet, now: Instant, stats: &WorkerStats) {
        let Some(q) = self.quic.as_mut() else {
            return;
        };
        if q.next_timeout.is_some_and(|t| t <= now) {
            for (ch, c) in q.conns.iter_mut() {
                if c.timeout.is_some_and(|t| t <= now) {
                    c.conn.handle_timeout(now);
                    q.touched.push(*ch);
                } else if c.more {
                    q.touched.push(*ch);
                }
            }
        }
        // Timers due, and the resolver's answers delivered this turn.
        self.drive_quic(zones, now, stats);
    }

    /// Drives the touched connections: endpoint events, streams, transmits, timers; drops
    /// the drained ones; recomputes the earliest timer.
    fn drive_quic(&mut self, zones: &ZoneSet, now: Instant, stats: &WorkerStats) {
        let Some(q) = self.quic.as_mut() else {
            return;
        };
        if q.touched.is_empty() {
            return;
        }
        let mut dispatch = self.roles.dispatcher(
            zones,
            (&self.shared, self.id),
            stats,
            self.opts.log_queries,
            now,
        );
        let mut touched = std::mem::take(&mut q.touched);
        touched.sort_unstable_by_key(|ch| ch.0);
        touched.dedup();
        for ch in touched.drain(..) {
            let Some(mut c) = q.conns.remove(&ch) else {
                continue;
            };
            drive_one(q, ch, &mut c, &mut dispatch, now, stats);
            c.timeout = c.conn.poll_timeout();
            if c.conn.is_drained() {
                for t in c.transfers.values() {
                    super::stream::transfer_ended(Some(c.conn.remote_address()), t, stats);
                }
                continue;
            }
            q.conns.insert(ch, c);
        }
        q.touched = touched;
        // A transfer with more to write wakes the loop at once.
        let more = q.conns.values().any(|c| c.more).then_some(now);
        q.next_timeout = q.conns.values().filter_map(|c| c.timeout).chain(more).min();
    }
}

/// One connection's turn.
fn drive_one(
    q: &mut Quic,
    ch: ConnectionHandle,
    c: &mut QuicConn,
    dispatch: &mut Dispatcher<'_>,
    now: Instant,
    stats: &WorkerStats,
) {
    endpoint_events(q, ch, c);
    while let Some(event) = c.conn.poll() {
        match event {
            Event::Stream(StreamEvent::Readable { id }) => {
                read_stream(q, ch, c, id, dispatch, now, stats);
            }
            Event::Stream(StreamEvent::Writable { id }) => {
                write_unsent(c, id);
                pump(&mut q.out, c, id, stats);
            }
            Event::Stream(StreamEvent::Stopped { id, .. }) => {
                c.unsent.remove(&id);
                if let Some(t) = c.transfers.remove(&id) {
                    super::stream::transfer_ended(Some(c.conn.remote_address()), &t, stats);
                }
            }
            _ => {}
        }
    }
    while let Some(id) = c.conn.streams().accept(Dir::Bi) {
        read_stream(q, ch, c, id, dispatch, now, stats);
    }
    // Responses and transfers the streams did not take yet: tried again whenever the
    // connection moves (an acknowledgement or a window update frees room; quinn-proto does
    // not announce every such change as `Writable`).
    c.more = false;
    if !c.transfers.is_empty() || !c.unsent.is_empty() {
        let mut ids: Vec<StreamId> = c.unsent.keys().chain(c.transfers.keys()).copied().collect();
        ids.sort_unstable_by_key(|id| u64::from(*id));
        ids.dedup();
        for id in ids {
            write_unsent(c, id);
            pump(&mut q.out, c, id, stats);
        }
    }
    let mut sent = 0;
    while sent < TRANSMITS_PER_TURN {
        q.send.clear();
        match c.conn.poll_transmit(now, 1, &mut q.send) {
            Some(t) => q.transmit(c.socket, &t, stats),
            None => break,
        }
        sent += 1;
    }
    // More to send than a turn's share: again next turn, without waiting for the client.
    if sent == TRANSMITS_PER_TURN {
        c.more = true;
    }
    endpoint_events(q, ch, c);
}

/// Events between the connection and the endpoint (connection IDs, the end).
fn endpoint_events(q: &mut Quic, ch: ConnectionHandle, c: &mut QuicConn) {
    while let Some(event) = c.conn.poll_endpoint_events() {
        if let Some(back) = q.endpoint.handle_event(ch, event) {
            c.conn.handle_event(back);
        }
    }
}
