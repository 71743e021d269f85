//! recursion::upstream -- the worker's sockets to upstream servers: one per outstanding
//! query (UDP connected to the server from a random port, or TCP with RFC 7766 framing),
//! registered in the worker's epoll set, read until the engine takes an answer.

use super::{Recursion, UPSTREAM_ROUNDS};
use shardns_resolver::QueryId;
use shardns_sys::{Epoll, BROKEN, READABLE, WRITABLE};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

/// Token of an upstream socket: kind 4 in the top byte.
pub(crate) const KIND_UPSTREAM: u64 = 4;

pub(super) fn upstream_token(slot: u32, generation: u32) -> u64 {
    (KIND_UPSTREAM << 56) | ((u64::from(generation) & 0xff_ffff) << 32) | u64::from(slot)
}

/// One upstream query's socket.
pub(super) struct Upstream {
    pub(super) generation: u32,
    pub(super) query: QueryId,
    pub(super) server: SocketAddr,
    pub(super) kind: UpKind,
}

pub(super) enum UpKind {
    Udp(UdpSocket),
    Tcp {
        stream: TcpStream,
        out: Vec<u8>,
        sent: usize,
        input: Vec<u8>,
    },
}

impl Recursion {
    pub(super) fn open_upstream(
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
