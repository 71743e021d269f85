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

use super::{Worker, KIND_QUIC, KIND_SHIFT};
use crate::dispatch::{Action, Dispatcher};
use crate::origin::{Origin, Via};
use crate::stats::{WorkerStats, QUIC_ACCEPTED, QUIC_REFUSED, QUIC_RETRIED};
use arc_swap::ArcSwap;
use bytes::{Bytes, BytesMut};
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, IdleTimeout, ReadError,
    ServerConfig, StreamEvent, StreamId, TransportConfig, VarInt,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use shardns_zone::xfr::{self, Transfer};
use shardns_zone::ZoneSet;
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The server's QUIC setup: the certificate (as for DoT, with ALPN "doq") and the endpoint
/// settings every worker shares.
pub(crate) struct QuicConfig {
    current: ArcSwap<ServerConfig>,
    endpoint: Arc<EndpointConfig>,
    files: (PathBuf, PathBuf),
    idle: Duration,
}

impl QuicConfig {
    /// Reads the certificate chain and key (PEM); `idle` closes quiet connections.
    pub(crate) fn load(cert: &Path, key: &Path, idle: Duration) -> Result<Self, String> {
        Ok(Self {
            current: ArcSwap::from(server_config(cert, key, idle)?),
            endpoint: Arc::new(EndpointConfig::default()),
            files: (cert.to_path_buf(), key.to_path_buf()),
            idle,
        })
    }

    /// Reads the files again (as `TlsConfig::reload`): new connections get the new one.
    pub(crate) fn reload(&self, files: Option<(&Path, &Path)>) -> Result<(), String> {
        let (cert, key) = files.unwrap_or((&self.files.0, &self.files.1));
        self.current.store(server_config(cert, key, self.idle)?);
        Ok(())
    }
}

/// A QUIC server config: TLS 1.3 only (QUIC has no other), rustls with aws-lc-rs, ALPN "doq"
/// (RFC 9250 §4.1.1), no 0-RTT (replayable queries are not worth it), no migration.
fn server_config(cert: &Path, key: &Path, idle: Duration) -> Result<Arc<ServerConfig>, String> {
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    tls.alpn_protocols = vec![b"doq".to_vec()];
    tls.max_early_data_size = 0;
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(MAX_STREAMS))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .max_idle_timeout(IdleTimeout::try_from(idle).ok())
        .stream_receive_window(VarInt::from_u32(STREAM_MAX as u32 + 1))
        .receive_window(VarInt::from_u32(WINDOW))
        .send_window(WINDOW.into());
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    config.migration(false);
    Ok(Arc::new(config))
}

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
        epoll: &crate::sys::Epoll,
        max_conns: usize,
    ) -> io::Result<Self> {
        let mut socks = Vec::new();
        for (i, s) in sockets.into_iter().enumerate() {
            epoll.add(
                s.as_raw_fd(),
                (KIND_QUIC << KIND_SHIFT) | i as u64,
                crate::sys::READABLE,
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
        let mut dispatch =
            self.roles
                .dispatcher(zones, &self.shared, stats, self.opts.log_queries, now);
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

/// Takes what stream `id` has; a whole query is answered.
fn read_stream(
    q: &mut Quic,
    ch: ConnectionHandle,
    c: &mut QuicConn,
    id: StreamId,
    dispatch: &mut Dispatcher<'_>,
    now: Instant,
    stats: &WorkerStats,
) {
    let mut fin = false;
    let mut reset = None;
    let others = c.buffered_except(id);
    {
        let buf = c.partial.entry(id).or_default();
        let mut recv = c.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            c.partial.remove(&id);
            return;
        };
        loop {
            match chunks.next(STREAM_MAX) {
                Ok(Some(chunk)) => {
                    let total = buf.len() + chunk.bytes.len();
                    if total > STREAM_MAX {
                        reset = Some(DOQ_PROTOCOL_ERROR);
                        break;
                    }
                    if others + total > BUFFERED_MAX {
                        reset = Some(DOQ_EXCESSIVE_LOAD);
                        break;
                    }
                    buf.extend_from_slice(&chunk.bytes);
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(_)) => {
                    reset = Some(DOQ_REQUEST_CANCELLED);
                    break;
                }
            }
        }
        let _ = chunks.finalize();
    }
    let Some(buf) = c.partial.get(&id) else {
        return;
    };
    let want = match buf.get(..2) {
        Some(l) => 2 + u16::from_be_bytes([l[0], l[1]]) as usize,
        None => usize::MAX,
    };
    let error = match reset {
        Some(code) => Some(code),
        // Not one whole message: a stream error.
        None if buf.len() > want || (fin && buf.len() < want) => Some(DOQ_PROTOCOL_ERROR),
        None => None,
    };
    if let Some(code) = error {
        c.partial.remove(&id);
        let _ = c.conn.send_stream(id).reset(VarInt::from_u32(code));
        let _ = c.conn.recv_stream(id).stop(VarInt::from_u32(code));
        if code == DOQ_PROTOCOL_ERROR {
            stats.malformed.add(1);
        } else {
            stats.dropped.add(1);
        }
        return;
    }
    if buf.len() < want {
        return;
    }
    let Some(query) = c.partial.remove(&id) else {
        return;
    };
    let message = &query[2..];
    let peer = c.conn.remote_address();
    let via = Via::Quic {
        conn: ch.0,
        stream: id.into(),
    };
    let origin = Origin::new(via, peer.is_ipv6(), Some(peer));
    stats.queries[origin.slot()].add(1);
    // RFC 9250 §4.2.1: the Message ID is 0; anything else closes the connection.
    if message.len() >= 2 && message[..2] != [0, 0] {
        stats.malformed.add(1);
        c.conn.close(
            now,
            VarInt::from_u32(DOQ_PROTOCOL_ERROR),
            Bytes::from_static(b"message ID not 0"),
        );
        return;
    }
    let (len_field, out) = q.out.split_at_mut(2);
    match dispatch.handle(message, origin, out) {
        Action::Send(w) => {
            len_field.copy_from_slice(&(w.len as u16).to_be_bytes());
            respond(c, id, &q.out[..2 + w.len], stats);
        }
        // The resolver answers later (`Quic::deliver`); the stream waits.
        Action::Pending => {}
        // A zone transfer: its messages on this stream, as the client takes them.
        Action::Stream(t) => {
            if c.transfers.len() >= XFR_PER_CONN {
                super::stream::transfer_ended(origin.peer, &t, stats);
                let _ = c
                    .conn
                    .send_stream(id)
                    .reset(VarInt::from_u32(DOQ_EXCESSIVE_LOAD));
                return;
            }
            c.transfers.insert(id, t);
            pump(&mut q.out, c, id, stats);
        }
        Action::Drop => {
            let _ = c
                .conn
                .send_stream(id)
                .reset(VarInt::from_u32(DOQ_REQUEST_CANCELLED));
        }
    }
}

/// Writes `response` (length-prefixed) on stream `id` and finishes it; what the stream does
/// not take now is kept for later while the connection has room.
fn respond(c: &mut QuicConn, id: StreamId, response: &[u8], stats: &WorkerStats) {
    let room = BUFFERED_MAX.saturating_sub(c.buffered_except(id));
    let mut stream = c.conn.send_stream(id);
    let sent = match stream.write(response) {
        Ok(n) if n == response.len() => {
            let _ = stream.finish();
            return;
        }
        Ok(n) => n,
        Err(quinn_proto::WriteError::Blocked) => 0,
        Err(_) => return,
    };
    // The client does not take what it asked for: kept while there is room.
    if response.len() - sent <= room {
        c.unsent.insert(id, (response.to_vec(), sent));
    } else {
        let _ = stream.reset(VarInt::from_u32(DOQ_EXCESSIVE_LOAD));
        stats.dropped.add(1);
    }
}

impl Quic {
    /// A resolver answer (`frame`: length-prefixed) for stream `stream` of connection
    /// `conn`, if both are still there; the connection is driven at the end of the turn.
    pub(super) fn deliver(&mut self, conn: usize, stream: u64, frame: &[u8], stats: &WorkerStats) {
        let ch = ConnectionHandle(conn);
        let (Some(c), Ok(v)) = (self.conns.get_mut(&ch), VarInt::from_u64(stream)) else {
            stats.dropped.add(1);
            return;
        };
        respond(c, StreamId::from(v), frame, stats);
        self.touched.push(ch);
    }
}

/// Writes the next messages of stream `id`'s zone transfer, if it has one, while the
/// stream takes them whole (at most [`XFR_MESSAGES_PER_TURN`]); the stream is finished after
/// the last one.
fn pump(out: &mut [u8], c: &mut QuicConn, id: StreamId, stats: &WorkerStats) {
    if c.unsent.contains_key(&id) {
        return;
    }
    let Some(mut t) = c.transfers.remove(&id) else {
        return;
    };
    t.set_time(crate::dispatch::unix_now());
    let room = (2 + xfr::MESSAGE_SIZE).min(out.len());
    let mut broken = false;
    for _ in 0..XFR_MESSAGES_PER_TURN {
        let Some(len) = t.next_message(&mut out[2..room]) else {
            break;
        };
        out[..2].copy_from_slice(&(len as u16).to_be_bytes());
        stats.xfr_messages.add(1);
        let data = &out[..2 + len];
        match c.conn.send_stream(id).write(data) {
            Ok(n) if n == data.len() => {}
            Ok(n) => {
                c.unsent.insert(id, (data.to_vec(), n));
                break;
            }
            Err(quinn_proto::WriteError::Blocked) => {
                c.unsent.insert(id, (data.to_vec(), 0));
                break;
            }
            Err(_) => {
                broken = true;
                break;
            }
        }
        if t.is_done() {
            break;
        }
    }
    if t.is_done() || broken {
        if !c.unsent.contains_key(&id) && !broken {
            let _ = c.conn.send_stream(id).finish();
        }
        super::stream::transfer_ended(Some(c.conn.remote_address()), &t, stats);
        return;
    }
    if !c.unsent.contains_key(&id) {
        c.more = true;
    }
    c.transfers.insert(id, t);
}

/// Writes more of a response the stream did not take at once; the stream is finished
/// when it is all gone, unless a zone transfer has more for it.
fn write_unsent(c: &mut QuicConn, id: StreamId) {
    let Some((data, sent)) = c.unsent.get_mut(&id) else {
        return;
    };
    let mut stream = c.conn.send_stream(id);
    match stream.write(&data[*sent..]) {
        Ok(n) => {
            *sent += n;
            if *sent == data.len() {
                if !c.transfers.contains_key(&id) {
                    let _ = stream.finish();
                }
                c.unsent.remove(&id);
            }
        }
        Err(quinn_proto::WriteError::Blocked) => {}
        Err(_) => {
            c.unsent.remove(&id);
        }
    }
}
