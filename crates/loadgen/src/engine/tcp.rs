//! engine::tcp -- the rate mode's pipelined TCP: `TcpSet`, several connections each with its
//! own ID space, queries written length-prefixed back to back and answers read in any order;
//! a broken connection is dropped and re-opened after a pause.

use super::transport::{expire_all, round_robin, OnAnswer, Transport, Worker};
use super::{handle_response, Counters, SOCKET_BUFFER};
use crate::sys::{self, BATCH};
use crate::track::{Slot, Tracker};
use crate::Error;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

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
