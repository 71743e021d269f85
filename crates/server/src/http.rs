//! http -- a minimal HTTP/1.0 responder for Prometheus scrapes (`GET /metrics`).
//!
//! One thread, one request per connection, many connections at once: an epoll loop over
//! nonblocking sockets, so a client that sends its request a byte at a time delays nobody
//! else. Each connection has [`DEADLINE`] from its accept to read its request and take the
//! whole answer, then it is closed; at most [`MAX_CONNECTIONS`] are open, and a new one
//! closes the oldest, so a flood of idle connections cannot keep a scrape out for longer
//! than it takes to open that many. Off unless `[stats] http` (or `--stats-http`) is set.
//! Never touches a worker.

use crate::Shared;
use shardns_sys::{Epoll, Events, READABLE, WRITABLE};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// How long a connection has, from its accept, to send its request and take the answer.
pub(crate) const DEADLINE: Duration = Duration::from_secs(2);
/// Connections open at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// The longest request head read (we need only its first line).
const HEAD_MAX: usize = 4096;
/// The listener's epoll token; a connection's is its slot.
const LISTENER: u64 = u64::MAX;

/// Serves scrapes until shutdown (or until epoll itself fails, which the log says).
pub(crate) fn serve(listener: TcpListener, shared: Arc<Shared>) {
    if let Err(e) = run(&listener, &shared) {
        warn!("stats http: {e}; statistics over HTTP stopped");
    }
}

/// One connection: the request head as read so far, then the answer as sent so far.
struct Conn {
    stream: TcpStream,
    head: Vec<u8>,
    /// The whole answer once the head is in (empty while reading).
    out: Vec<u8>,
    sent: usize,
    deadline: Instant,
}

/// What a connection needs next.
enum Next {
    Read,
    Write,
    Close,
}

fn run(listener: &TcpListener, shared: &Shared) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let epoll = Epoll::new()?;
    epoll.add(listener.as_raw_fd(), LISTENER, READABLE)?;
    let mut conns: Vec<Option<Conn>> = (0..MAX_CONNECTIONS).map(|_| None).collect();
    let mut events = Events::with_capacity(MAX_CONNECTIONS + 1);
    while !shared.plane.shutdown.load(Relaxed) {
        let now = Instant::now();
        for slot in &mut conns {
            if slot.as_ref().is_some_and(|c| c.deadline <= now) {
                debug!("stats http: a connection past its deadline closed");
                *slot = None; // closing the socket takes it out of the epoll set
            }
        }
        // Wake for the next deadline, and at least once a second for the shutdown flag.
        let next = conns.iter().flatten().map(|c| c.deadline).min();
        let wait = next.map_or(Duration::from_secs(1), |d| {
            d.saturating_duration_since(now).min(Duration::from_secs(1))
        });
        epoll.wait(&mut events, wait.as_millis() as i32 + 1)?;
        for (token, _) in events.iter() {
            if token == LISTENER {
                accept(listener, &epoll, &mut conns);
                continue;
            }
            let slot = token as usize;
            let Some(conn) = conns.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            match conn.advance(shared) {
                Ok(Next::Read) => {}
                Ok(Next::Write) => {
                    let fd = conn.stream.as_raw_fd();
                    if epoll.modify(fd, token, WRITABLE).is_err() {
                        conns[slot] = None;
                    }
                }
                Ok(Next::Close) => conns[slot] = None,
                Err(e) => {
                    debug!("stats http: {e}");
                    conns[slot] = None;
                }
            }
        }
    }
    Ok(())
}

/// Accepts what is waiting, each into a free slot, else into the oldest connection's.
fn accept(listener: &TcpListener, epoll: &Epoll, conns: &mut [Option<Conn>]) {
    for _ in 0..MAX_CONNECTIONS {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) => {
                debug!("stats http: accept: {e}");
                return;
            }
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        let slot = match conns.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                debug!("stats http: {MAX_CONNECTIONS} connections open; the oldest closed");
                oldest(conns)
            }
        };
        // Dropping the slot's old connection first takes its socket out of the epoll set.
        conns[slot] = None;
        if epoll.add(stream.as_raw_fd(), slot as u64, READABLE).is_ok() {
            conns[slot] = Some(Conn {
                stream,
                head: Vec::with_capacity(512),
                out: Vec::new(),
                sent: 0,
                deadline: Instant::now() + DEADLINE,
            });
        }
    }
}

/// The slot whose connection was accepted first (every slot is taken).
fn oldest(conns: &[Option<Conn>]) -> usize {
    conns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.as_ref().map(|c| (i, c.deadline)))
        .min_by_key(|&(_, d)| d)
        .map_or(0, |(i, _)| i)
}

impl Conn {
    /// Reads what has come, or sends what the socket takes; says what is next.
    fn advance(&mut self, shared: &Shared) -> io::Result<Next> {
        if self.out.is_empty() {
            let mut buf = [0u8; 1024];
            loop {
                let room = (HEAD_MAX - self.head.len()).min(buf.len());
                match self.stream.read(&mut buf[..room]) {
                    // The client has said all it will: answer what we have, if anything.
                    Ok(0) if self.head.is_empty() => return Ok(Next::Close),
                    Ok(0) => break,
                    Ok(n) => {
                        self.head.extend_from_slice(&buf[..n]);
                        if head_complete(&self.head) || self.head.len() == HEAD_MAX {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Next::Read),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            self.out = answer(&self.head, shared);
        }
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Next::Write),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Next::Close)
    }
}

fn head_complete(head: &[u8]) -> bool {
    head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n")
}

/// The whole HTTP answer to a request head.
fn answer(head: &[u8], shared: &Shared) -> Vec<u8> {
    let head = String::from_utf8_lossy(head);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body) = match (method, target) {
        ("GET", "/metrics" | "/") => ("200 OK", shared.metrics_text()),
        ("GET", _) => ("404 Not Found", "not found; try /metrics\n".to_string()),
        _ => ("405 Method Not Allowed", "only GET\n".to_string()),
    };
    let mut out = format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}
