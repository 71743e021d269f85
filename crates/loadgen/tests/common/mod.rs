//! A small in-process DNS responder for the bench tests: a UDP thread and a TCP thread on
//! loopback with ephemeral ports. It echoes each query back as a response, with an RCODE
//! chosen by the first label of the query name ("nx..." NXDOMAIN, "sf..." SERVFAIL,
//! "rf..." REFUSED, else NOERROR), an optional delay (UDP), and optionally drops every Nth
//! UDP query. It records how many queries were in flight at once (received, not yet
//! answered). It stops when dropped, or after its lifetime at the latest.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub(crate) struct Behaviour {
    /// Hold every UDP answer this long.
    pub(crate) delay: Duration,
    /// Drop every Nth UDP query (the Nth, 2Nth, ...).
    pub(crate) drop_every: Option<u64>,
    /// Stop on its own after this long.
    pub(crate) lifetime: Duration,
}

impl Default for Behaviour {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            drop_every: None,
            lifetime: Duration::from_secs(30),
        }
    }
}

#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) received: AtomicU64,
    pub(crate) answered: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) tcp_received: AtomicU64,
    in_flight: AtomicI64,
    max_in_flight: AtomicI64,
}

impl Stats {
    pub(crate) fn max_in_flight(&self) -> i64 {
        self.max_in_flight.load(Ordering::SeqCst)
    }
    pub(crate) fn reset_max(&self) {
        self.max_in_flight.store(0, Ordering::SeqCst);
    }
    pub(crate) fn get(v: &AtomicU64) -> u64 {
        v.load(Ordering::SeqCst)
    }
}

pub(crate) struct Responder {
    pub(crate) udp: SocketAddr,
    pub(crate) tcp: SocketAddr,
    pub(crate) stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// RCODE for a query, from its first label.
fn rcode_for(query: &[u8]) -> u8 {
    let len = *query.get(12).unwrap_or(&0) as usize;
    let label = query.get(13..13 + len).unwrap_or(&[]);
    match label.get(..2) {
        Some(b"nx") => 3,
        Some(b"sf") => 2,
        Some(b"rf") => 5,
        _ => 0,
    }
}

/// The query turned into a response: QR set, RCODE chosen by name.
fn answer(query: &[u8]) -> Vec<u8> {
    let mut r = query.to_vec();
    if r.len() >= 12 {
        r[2] |= 0x80;
        r[3] = (r[3] & 0xf0) | rcode_for(query);
    }
    r
}

impl Responder {
    pub(crate) fn start(b: Behaviour) -> Self {
        Self::start_on(IpAddr::V4(Ipv4Addr::LOCALHOST), b).expect("responder on 127.0.0.1")
    }

    pub(crate) fn start_on(ip: IpAddr, b: Behaviour) -> std::io::Result<Self> {
        let udp = UdpSocket::bind((ip, 0))?;
        let tcp = TcpListener::bind((ip, 0))?;
        let stats = Arc::new(Stats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (udp_addr, tcp_addr) = (udp.local_addr()?, tcp.local_addr()?);
        let deadline = Instant::now() + b.lifetime;
        let u = {
            let (stats, stop) = (stats.clone(), stop.clone());
            std::thread::spawn(move || serve_udp(udp, b, &stats, &stop, deadline))
        };
        let t = {
            let (stats, stop) = (stats.clone(), stop.clone());
            std::thread::spawn(move || serve_tcp(tcp, &stats, &stop, deadline))
        };
        Ok(Self {
            udp: udp_addr,
            tcp: tcp_addr,
            stats,
            stop,
            threads: vec![u, t],
        })
    }
}

fn serve_udp(sock: UdpSocket, b: Behaviour, stats: &Stats, stop: &AtomicBool, deadline: Instant) {
    let mut held: VecDeque<(Instant, SocketAddr, Vec<u8>)> = VecDeque::new();
    let mut buf = [0u8; 4096];
    let mut n: u64 = 0;
    let _ = sock.set_read_timeout(Some(Duration::from_millis(5)));
    let mut nonblocking = false;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let now = Instant::now();
        while held.front().is_some_and(|h| h.0 <= now) {
            let (_, to, msg) = held.pop_front().expect("checked");
            // Counted out of flight before it leaves, so the next query cannot overtake it.
            stats.in_flight.fetch_sub(1, Ordering::SeqCst);
            stats.answered.fetch_add(1, Ordering::SeqCst);
            let _ = sock.send_to(&msg, to);
        }
        // Idle: block in recv (it wakes on arrival; its timeout is coarse, jiffies). Holding
        // answers: poll without blocking and sleep in short precise steps until one is due.
        let holding = !held.is_empty();
        if holding != nonblocking {
            let _ = sock.set_nonblocking(holding);
            nonblocking = holding;
        }
        let (len, from) = match sock.recv_from(&mut buf) {
            Ok(r) => r,
            Err(_) => {
                if let Some(h) = held.front() {
                    std::thread::sleep(
                        h.0.saturating_duration_since(now)
                            .min(Duration::from_micros(200)),
                    );
                }
                continue;
            }
        };
        n += 1;
        stats.received.fetch_add(1, Ordering::SeqCst);
        if b.drop_every.is_some_and(|k| n.is_multiple_of(k)) {
            stats.dropped.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        let f = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(f, Ordering::SeqCst);
        let msg = answer(&buf[..len]);
        if b.delay.is_zero() {
            stats.in_flight.fetch_sub(1, Ordering::SeqCst);
            stats.answered.fetch_add(1, Ordering::SeqCst);
            let _ = sock.send_to(&msg, from);
        } else {
            held.push_back((Instant::now() + b.delay, from, msg));
        }
    }
}

fn serve_tcp(listener: TcpListener, stats: &Arc<Stats>, stop: &Arc<AtomicBool>, deadline: Instant) {
    let _ = listener.set_nonblocking(true);
    let mut conns = Vec::new();
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match listener.accept() {
            Ok((s, _)) => {
                let (stats, stop) = (stats.clone(), stop.clone());
                conns.push(std::thread::spawn(move || {
                    serve_tcp_conn(s, &stats, &stop, deadline)
                }));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    for c in conns {
        let _ = c.join();
    }
}

fn serve_tcp_conn(mut s: TcpStream, stats: &Stats, stop: &AtomicBool, deadline: Instant) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 1 << 17];
    let mut have = 0usize;
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match s.read(&mut buf[have..]) {
            Ok(0) => return,
            Ok(k) => have += k,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        let mut at = 0;
        out.clear();
        while have - at >= 2 {
            let len = u16::from_be_bytes([buf[at], buf[at + 1]]) as usize;
            if have - at < 2 + len {
                break;
            }
            let msg = answer(&buf[at + 2..at + 2 + len]);
            out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
            out.extend_from_slice(&msg);
            stats.tcp_received.fetch_add(1, Ordering::SeqCst);
            at += 2 + len;
        }
        buf.copy_within(at..have, 0);
        have -= at;
        if !out.is_empty() && s.write_all(&out).is_err() {
            return;
        }
    }
}
