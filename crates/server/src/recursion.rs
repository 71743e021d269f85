//! recursion -- one worker's side of the resolver role: it drives that worker's
//! `shardns_resolver::Engine` with real sockets.
//!
//! Owns: the worker's [`Recursion`] (engine, pending client queries keyed by `TaskId`,
//! upstream sockets keyed by `QueryId`, the millisecond clock the engine sees). Shared
//! between workers: only the [`RecursionShared`] (the `Resolver` with its sharded cache, and
//! the ACL), in an `Arc`.
//!
//! The order for a client query: `dispatch` asks the zones first; only a query for a name
//! outside them (`Reply::NotOurs`) reaches [`Recursion::query`]. A
//! query with RD from an allowed client is answered from the cache straight into the
//! worker's output buffer (no allocation, one shard lock per name) or becomes a resolution;
//! its answer is delivered when the engine reports `Event::Done`. A worker keeps at most
//! `resolver.max_pending` client queries waiting; a cache miss beyond that is answered
//! SERVFAIL at once (and counted).
//! Never: blocking calls, `unsafe`, locks other than the cache's shard locks.

use crate::config::AclEntry;
use crate::stats::WorkerStats;
use crate::sys::{Epoll, BROKEN, READABLE, WRITABLE};
use shardns_resolver::{
    client_response_limit, finish_client_response, CacheAnswer, Engine, Event, QueryId, Resolution,
    Resolver, TaskId, OPT_ROOM,
};
use shardns_wire::message::Header;
use shardns_wire::{Class, MessageWriter, Name, Query, RType, Rcode};
use shardns_zone::Written;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

/// Largest upstream response read.
const UPSTREAM_MAX: usize = 65535;
/// Datagrams read from one upstream socket per wake-up.
const UPSTREAM_ROUNDS: usize = 8;

/// What every worker's resolver side shares: the resolver (cache, config), the ACL and
/// the per-worker limits.
pub(crate) struct RecursionShared {
    pub(crate) resolver: Arc<Resolver>,
    pub(crate) allow: Vec<AclEntry>,
    /// Client queries waiting for a resolution, per worker (`resolver.max_pending`).
    pub(crate) max_pending: usize,
    /// Largest UDP response to a client (`limits.udp_max_response`).
    pub(crate) udp_max: usize,
}

impl RecursionShared {
    fn allowed(&self, ip: IpAddr) -> bool {
        // A handful of configured prefixes: a scan is cheapest.
        self.allow.iter().any(|a| a.contains(ip))
    }
}

/// Where a client query came from, to send its answer back.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Client {
    /// From listening UDP socket `socket` of the worker, sender `peer`.
    Udp { socket: usize, peer: SocketAddr },
    /// On TCP connection (`slot`, `generation`) of the worker.
    Tcp { slot: u32, generation: u32 },
}

/// What [`Recursion::query`] did with a query for a name outside our zones.
pub(crate) enum Handling {
    /// Not for recursion (no RD, client not allowed, not class IN): refuse it.
    Refused,
    /// Answered from the cache: the response is in the output buffer.
    Written(Written),
    /// Resolving; the answer follows later.
    Pending,
}

/// A client waiting for a resolution.
struct Pending {
    client: Client,
    id: u16,
    rd: bool,
    cd: bool,
    qname: Name,
    qtype: RType,
    /// The client's EDNS: (UDP payload size, DO bit).
    edns: Option<(u16, bool)>,
}

enum UpKind {
    Udp(UdpSocket),
    Tcp {
        stream: TcpStream,
        out: Vec<u8>,
        sent: usize,
        input: Vec<u8>,
    },
}

struct Upstream {
    generation: u32,
    query: QueryId,
    server: SocketAddr,
    kind: UpKind,
}

/// One worker's resolver driver.
pub(crate) struct Recursion {
    shared: Arc<RecursionShared>,
    engine: Engine,
    base: Instant,
    pending: HashMap<TaskId, Pending>,
    upstreams: Vec<Option<Upstream>>,
    free: Vec<u32>,
    by_query: HashMap<QueryId, u32>,
    next_generation: u32,
    read_buf: Box<[u8]>,
    write_buf: Box<[u8]>,
}

/// Hands a finished answer to its client: the response with its 2-octet TCP length
/// prefix (a UDP client gets the bytes after the prefix).
pub(crate) type Deliver<'a> = &'a mut dyn FnMut(Client, &[u8]);

impl Recursion {
    pub(crate) fn new(shared: Arc<RecursionShared>, seed: [u8; 32], base: Instant) -> Self {
        let engine = Engine::new(Arc::clone(&shared.resolver), seed);
        Self {
            shared,
            engine,
            base,
            pending: HashMap::new(),
            upstreams: Vec::new(),
            free: Vec::new(),
            by_query: HashMap::new(),
            next_generation: 0,
            read_buf: vec![0; UPSTREAM_MAX].into_boxed_slice(),
            write_buf: vec![0; 2 + 65535].into_boxed_slice(),
        }
    }

    /// The engine's clock: milliseconds since the worker started.
    pub(crate) fn clock(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.base).as_millis() as u64
    }

    /// Milliseconds until the engine's next timer (None: no timer).
    pub(crate) fn timeout_ms(&mut self, now: Instant) -> Option<u64> {
        let at = self.engine.poll_timeout()?;
        Some(at.saturating_sub(self.clock(now)))
    }

    /// Handles a query for a name outside our zones (`shardns_zone::Reply::NotOurs`: a
    /// QUERY with a supported EDNS version and question type), from `peer_ip` (checked
    /// against the ACL). `out` is the response buffer (its length bounds a TCP answer; a
    /// UDP answer stays within the client's EDNS size).
    pub(crate) fn query(
        &mut self,
        query: &Query<'_>,
        client: Client,
        peer_ip: Option<IpAddr>,
        out: &mut [u8],
        now: Instant,
        stats: &WorkerStats,
    ) -> Handling {
        let qh = query.header();
        let qtype = query.qtype();
        let qname = query.qname();
        if !qh.rd() || query.qclass() != Class::IN {
            return Handling::Refused;
        }
        if !peer_ip.is_some_and(|ip| self.shared.allowed(ip)) {
            stats.resolver_refused.add(1);
            return Handling::Refused;
        }
        let edns = query.edns().map(|e| (e.udp_size, e.dnssec_ok));
        let tcp = matches!(client, Client::Tcp { .. });
        let limit = client_response_limit(tcp, edns, out.len());
        let clock = self.clock(now);
        // Cache first: the answer goes straight into the output buffer.
        let mut w = MessageWriter::new(out, limit);
        let _ = w.put_question(qname, qtype, Class::IN);
        let after_question = w.checkpoint();
        if edns.is_some() {
            w.set_limit(limit.saturating_sub(OPT_ROOM));
        }
        match self
            .shared
            .resolver
            .cache()
            .answer(qname, qtype, clock, &mut w)
        {
            CacheAnswer::Hit {
                rcode,
                truncated,
                locks,
            } => {
                stats.resolver_cache_hits.add(1);
                stats.resolver_cache_locks.add(u64::from(locks));
                stats.lock_acquisitions.add(u64::from(locks));
                if truncated {
                    w.rollback(after_question);
                }
                let (len, _) = finish_client_response(w, qh, rcode, truncated, limit, edns, None);
                Handling::Written(Written {
                    len,
                    rcode,
                    qtype: Some(qtype),
                    truncated,
                    wildcard: None,
                })
            }
            CacheAnswer::Miss { locks } => {
                stats.resolver_cache_misses.add(1);
                stats.lock_acquisitions.add(u64::from(locks));
                if self.pending.len() >= self.shared.max_pending {
                    // Overloaded: fail fast rather than queue without bound.
                    stats.resolver_pending_limited.add(1);
                    w.rollback(after_question);
                    let (len, _) =
                        finish_client_response(w, qh, Rcode::SERVFAIL, false, limit, edns, None);
                    return Handling::Written(Written {
                        len,
                        rcode: Rcode::SERVFAIL,
                        qtype: Some(qtype),
                        truncated: false,
                        wildcard: None,
                    });
                }
                let task = self.engine.resolve(qname, qtype, clock);
                self.pending.insert(
                    task,
                    Pending {
                        client,
                        id: qh.id,
                        rd: qh.rd(),
                        cd: qh.cd(),
                        qname: qname.to_name(),
                        qtype,
                        edns,
                    },
                );
                Handling::Pending
            }
        }
    }

    /// Fires due timers, then acts on every event the engine has: sends upstream queries,
    /// closes their sockets, and hands finished answers to `deliver`.
    pub(crate) fn drive(
        &mut self,
        now: Instant,
        epoll: &Epoll,
        stats: &WorkerStats,
        deliver: Deliver<'_>,
    ) {
        let clock = self.clock(now);
        self.engine.handle_timeout(clock);
        // Bounded by the engine's per-resolution query limits; the cap is a safety net.
        for _ in 0..1_000_000 {
            let Some(ev) = self.engine.poll() else { break };
            match ev {
                Event::Transmit(t) => {
                    stats.resolver_upstream_queries.add(1);
                    if self
                        .open_upstream(t.query, t.server, t.tcp, t.source_port, t.payload(), epoll)
                        .is_err()
                    {
                        self.engine.handle_send_error(t.query, clock);
                    }
                }
                Event::Close(q) => {
                    if let Some(slot) = self.by_query.remove(&q) {
                        // Dropping the socket closes it and takes it out of the epoll set.
                        self.upstreams[slot as usize] = None;
                        self.free.push(slot);
                    }
                }
                Event::Done(task, answer) => {
                    let Some(p) = self.pending.remove(&task) else {
                        continue;
                    };
                    if answer.rcode == Rcode::SERVFAIL {
                        stats.resolver_servfails.add(1);
                    }
                    let tcp = matches!(p.client, Client::Tcp { .. });
                    let end = if tcp {
                        self.write_buf.len()
                    } else {
                        (2 + self.shared.udp_max).min(self.write_buf.len())
                    };
                    let (len, truncated) =
                        write_answer(&mut self.write_buf[2..end], &p, &answer, tcp);
                    self.write_buf[..2].copy_from_slice(&(len as u16).to_be_bytes());
                    stats.answered(Some(p.qtype), answer.rcode, truncated);
                    deliver(p.client, &self.write_buf[..2 + len]);
                }
            }
        }
    }

    fn open_upstream(
        &mut self,
        query: QueryId,
        server: SocketAddr,
        tcp: bool,
        source_port: u16,
        payload: &[u8],
        epoll: &Epoll,
    ) -> io::Result<()> {
        let domain = Domain::for_address(server);
        let kind = if tcp {
            // Non-blocking and close-on-exec from the start: one system call, no fcntl.
            let s = Socket::new(domain, Type::STREAM.nonblocking(), Some(Protocol::TCP))?;
            s.set_nodelay(true)?;
            match s.connect(&SockAddr::from(server)) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            let mut out = Vec::with_capacity(2 + payload.len());
            out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
            out.extend_from_slice(payload);
            UpKind::Tcp {
                stream: s.into(),
                out,
                sent: 0,
                input: Vec::new(),
            }
        } else {
            let s = Socket::new(domain, Type::DGRAM.nonblocking(), Some(Protocol::UDP))?;
            let any: IpAddr = if server.is_ipv4() {
                Ipv4Addr::UNSPECIFIED.into()
            } else {
                Ipv6Addr::UNSPECIFIED.into()
            };
            if s.bind(&SockAddr::from(SocketAddr::new(any, source_port)))
                .is_err()
            {
                s.bind(&SockAddr::from(SocketAddr::new(any, 0)))?;
            }
            s.connect(&SockAddr::from(server))?;
            let udp: UdpSocket = s.into();
            udp.send(payload)?;
            UpKind::Udp(udp)
        };
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.upstreams.push(None);
                (self.upstreams.len() - 1) as u32
            }
        };
        let (fd, interest) = match &kind {
            UpKind::Udp(s) => (s.as_raw_fd(), READABLE),
            UpKind::Tcp { stream, .. } => (stream.as_raw_fd(), READABLE | WRITABLE),
        };
        if let Err(e) = epoll.add(fd, upstream_token(slot, generation), interest) {
            self.free.push(slot);
            return Err(e);
        }
        self.upstreams[slot as usize] = Some(Upstream {
            generation,
            query,
            server,
            kind,
        });
        self.by_query.insert(query, slot);
        Ok(())
    }

    /// An upstream socket is ready.
    pub(crate) fn upstream_ready(
        &mut self,
        slot: u32,
        generation: u32,
        ready: u32,
        now: Instant,
        epoll: &Epoll,
    ) {
        let clock = self.clock(now);
        let Some(Some(up)) = self.upstreams.get_mut(slot as usize) else {
            return;
        };
        if up.generation & 0xff_ffff != generation {
            return;
        }
        let (query, server) = (up.query, up.server);
        match &mut up.kind {
            UpKind::Udp(s) => {
                for _ in 0..UPSTREAM_ROUNDS {
                    match s.recv_from(&mut self.read_buf) {
                        Ok((n, from)) => {
                            // The engine checks source, ID and question and rejects (and
                            // counts) what does not match; datagrams for a finished query
                            // are ignored.
                            if self
                                .engine
                                .handle_response(query, from, &self.read_buf[..n], clock)
                            {
                                // Taken as the answer (or the query was already over): the
                                // socket closes on Close, so a further read would only
                                // return EAGAIN. A forgery was counted and skipped: read
                                // on for the real answer. (Epoll is level-triggered: were
                                // anything left unread, the next wait would report it.)
                                break;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => {
                            // ICMP unreachable (connection refused) or similar.
                            self.engine.handle_send_error(query, clock);
                            break;
                        }
                    }
                }
            }
            UpKind::Tcp {
                stream,
                out,
                sent,
                input,
            } => {
                let mut failed = false;
                if ready & WRITABLE != 0 && *sent < out.len() {
                    match stream.write(&out[*sent..]) {
                        Ok(n) => *sent += n,
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                            ) => {}
                        Err(_) => failed = true,
                    }
                    if *sent == out.len() {
                        let _ = epoll.modify(
                            stream.as_raw_fd(),
                            upstream_token(slot, generation),
                            READABLE,
                        );
                    }
                }
                if !failed && ready & READABLE != 0 {
                    match stream.read(&mut self.read_buf) {
                        Ok(0) => failed = true,
                        Ok(n) => input.extend_from_slice(&self.read_buf[..n]),
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                            ) => {}
                        Err(_) => failed = true,
                    }
                } else if !failed && ready & BROKEN != 0 {
                    failed = true;
                }
                if input.len() >= 2 {
                    let len = usize::from(u16::from_be_bytes([input[0], input[1]]));
                    if input.len() >= 2 + len {
                        let msg = std::mem::take(input);
                        self.engine
                            .handle_response(query, server, &msg[2..2 + len], clock);
                        return;
                    }
                }
                if failed {
                    self.engine.handle_send_error(query, clock);
                }
            }
        }
    }
}

/// Token of an upstream socket: kind 4 in the top byte.
pub(crate) const KIND_UPSTREAM: u64 = 4;

fn upstream_token(slot: u32, generation: u32) -> u64 {
    (KIND_UPSTREAM << 56) | ((u64::from(generation) & 0xff_ffff) << 32) | u64::from(slot)
}

/// Writes a finished resolution's response for its client; returns (length, truncated).
fn write_answer(buf: &mut [u8], p: &Pending, answer: &Resolution, tcp: bool) -> (usize, bool) {
    let limit = client_response_limit(tcp, p.edns, buf.len());
    let mut w = MessageWriter::new(buf, limit);
    let _ = w.put_question(p.qname.as_ref(), p.qtype, Class::IN);
    let after_question = w.checkpoint();
    if p.edns.is_some() {
        w.set_limit(limit.saturating_sub(OPT_ROOM));
    }
    let truncated = answer.write(&mut w).is_err();
    if truncated {
        w.rollback(after_question);
    }
    let mut qh = Header {
        id: p.id,
        ..Header::default()
    };
    qh.set_rd(p.rd);
    qh.set_cd(p.cd);
    let (len, _) = finish_client_response(
        w,
        &qh,
        answer.rcode,
        truncated,
        limit,
        p.edns,
        answer.ede.as_ref(),
    );
    (len, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Events;

    /// A query or response for `a.fwd. A IN` with one 192.0.2.1 answer if `answer`.
    fn message(id: u16, flags: u16, answer: bool) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&[0, 1, 0, u8::from(answer), 0, 0, 0, 0]);
        m.extend_from_slice(b"\x01a\x03fwd\x00\x00\x01\x00\x01");
        if answer {
            m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1]);
        }
        m
    }

    #[test]
    fn upstream_reads_skip_forgeries_and_stop_at_the_answer() {
        let fake = UdpSocket::bind("127.0.0.1:0").unwrap();
        fake.set_read_timeout(Some(std::time::Duration::from_secs(3)))
            .unwrap();
        let other = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut config = shardns_resolver::Config::default();
        config.forward_zones = vec![shardns_resolver::ZoneServers {
            zone: "fwd.".parse().unwrap(),
            servers: vec![fake.local_addr().unwrap()],
        }];
        let shared = Arc::new(RecursionShared {
            resolver: Arc::new(Resolver::new(config)),
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            max_pending: 4,
            udp_max: 1232,
        });
        let now = Instant::now();
        let mut rec = Recursion::new(shared, [7; 32], now);
        let epoll = Epoll::new().unwrap();
        let stats = WorkerStats::default();
        let peer: SocketAddr = "127.0.0.1:5353".parse().unwrap();
        let client = Client::Udp { socket: 0, peer };
        let mut out = [0u8; 4096];
        let q = message(0x1234, 0x0100, false);
        let query = Query::parse(&q).unwrap();
        let reply = rec.query(&query, client, Some(peer.ip()), &mut out, now, &stats);
        assert!(matches!(reply, Handling::Pending));
        rec.drive(now, &epoll, &stats, &mut |_, _| {
            panic!("an answer before any response")
        });

        // The upstream query: answer it after two forgeries, and forge once more after.
        let mut buf = [0u8; 512];
        let (n, resolver) = fake.recv_from(&mut buf).unwrap();
        let id = u16::from_be_bytes([buf[0], buf[1]]);
        assert_eq!(&buf[12..n.min(12 + 11)], &q[12..]);
        let response = |id| message(id, 0x8180, true);
        // From another port: the connected socket never sees it.
        other.send_to(&response(id), resolver).unwrap();
        fake.send_to(&response(id.wrapping_add(1)), resolver)
            .unwrap(); // wrong ID
        fake.send_to(&message(id, 0x0180, true), resolver).unwrap(); // QR clear
        fake.send_to(&response(id), resolver).unwrap();
        fake.send_to(&response(id.wrapping_add(2)), resolver)
            .unwrap();

        let mut events = Events::with_capacity(4);
        epoll.wait(&mut events, 3000).unwrap();
        let (token, ready) = events
            .iter()
            .next()
            .expect("the upstream socket is readable");
        assert_eq!(token >> 56, KIND_UPSTREAM);
        let (slot, generation) = (
            (token & 0xffff_ffff) as u32,
            ((token >> 32) & 0xff_ffff) as u32,
        );
        rec.upstream_ready(slot, generation, ready, now, &epoll);
        // Both forgeries before the answer were read and rejected; the one after it was
        // not read at all: the socket is still readable.
        assert_eq!(rec.engine.stats().rejected, 2);
        epoll.wait(&mut events, 0).unwrap();
        assert_eq!(
            events.iter().map(|(t, _)| t).collect::<Vec<_>>(),
            vec![token],
            "the datagram after the answer was read"
        );

        let mut answers = Vec::new();
        rec.drive(now, &epoll, &stats, &mut |c, frame| {
            answers.push((c, frame.to_vec()))
        });
        assert_eq!(answers.len(), 1);
        let (c, frame) = &answers[0];
        assert!(matches!(c, Client::Udp { socket: 0, peer: p } if *p == peer));
        let a = &frame[2..];
        assert_eq!(u16::from_be_bytes([a[0], a[1]]), 0x1234);
        assert_eq!(u16::from_be_bytes([a[6], a[7]]), 1, "one answer");
        assert!(a.ends_with(&[192, 0, 2, 1]));
        // The query is over: its socket is closed.
        assert!(rec.upstreams[slot as usize].is_none());
        assert_eq!(rec.engine.stats().rejected, 2);
    }

    #[test]
    fn upstream_tokens_carry_kind_slot_and_generation() {
        let t = upstream_token(7, 0x0100_0003);
        assert_eq!(t >> 56, KIND_UPSTREAM);
        assert_eq!(t & 0xffff_ffff, 7);
        assert_eq!((t >> 32) & 0xff_ffff, 3);
    }
}
