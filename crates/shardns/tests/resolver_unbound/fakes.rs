//! The fake servers run by the test itself: a silent one that reads and never answers, a
//! front that answers every UDP query with TC and relays TCP to a real server, and a front
//! that relays UDP to a real server and spoils some answers (bad answers to minimised
//! questions, upward referrals).

use crate::common;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Reads UDP queries on port 53 and never answers; a TCP listener that never accepts.
pub(crate) struct Silent {
    stop: Arc<AtomicBool>,
    pub(crate) seen: Arc<AtomicU64>,
    pub(crate) thread: Option<JoinHandle<()>>,
    _tcp: TcpListener,
}

impl Silent {
    pub(crate) fn start(ip: &str) -> Self {
        let addr: SocketAddr = format!("{ip}:53").parse().unwrap();
        let udp = UdpSocket::bind(addr).unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let tcp = TcpListener::bind(addr).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let (s, n) = (Arc::clone(&stop), Arc::clone(&seen));
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !s.load(Ordering::Relaxed) {
                if udp.recv_from(&mut buf).is_ok() {
                    n.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Self {
            stop,
            seen,
            thread: Some(thread),
            _tcp: tcp,
        }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers every UDP query with TC set and nothing else (RFC 1035 §4.2.1: retry over TCP),
/// and relays each TCP query to `backend` port 53 over TCP.
pub(crate) struct TcFront {
    stop: Arc<AtomicBool>,
    pub(crate) udp: Arc<AtomicU64>,
    pub(crate) tcp: Arc<AtomicU64>,
    pub(crate) threads: Vec<JoinHandle<()>>,
}

impl TcFront {
    pub(crate) fn start(ip: &str, backend: &str) -> Self {
        let addr: SocketAddr = format!("{ip}:53").parse().unwrap();
        let backend: SocketAddr = format!("{backend}:53").parse().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (udp_n, tcp_n) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));

        let udp = UdpSocket::bind(addr).unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let (s, n) = (Arc::clone(&stop), Arc::clone(&udp_n));
        let t1 = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !s.load(Ordering::Relaxed) {
                let Ok((len, peer)) = udp.recv_from(&mut buf) else {
                    continue;
                };
                if let Some(reply) = truncated_reply(&buf[..len]) {
                    n.fetch_add(1, Ordering::Relaxed);
                    let _ = udp.send_to(&reply, peer);
                }
            }
        });

        let listener = TcpListener::bind(addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        let (s, n) = (Arc::clone(&stop), Arc::clone(&tcp_n));
        let t2 = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        n.fetch_add(1, Ordering::Relaxed);
                        // Bounded by the read timeouts: ends when either side goes quiet.
                        std::thread::spawn(move || relay(conn, backend));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self {
            stop,
            udp: udp_n,
            tcp: tcp_n,
            threads: vec![t1, t2],
        }
    }
}

impl Drop for TcFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The header and question of `query` with QR, AA and TC set; `None` if it is no query.
fn truncated_reply(query: &[u8]) -> Option<Vec<u8>> {
    if query.len() < 12 || query[2] & 0x80 != 0 || u16::from_be_bytes([query[4], query[5]]) != 1 {
        return None;
    }
    let mut end = 12;
    loop {
        let len = usize::from(*query.get(end)?);
        end += 1 + len;
        if len == 0 {
            break;
        }
    }
    end += 4;
    let mut reply = query.get(..end)?.to_vec();
    reply[2] = (query[2] & 0x79) | 0x80 | 0x04 | 0x02; // keep opcode and RD; QR, AA, TC
    reply[3] = 0;
    reply[6..12].fill(0);
    Some(reply)
}

fn relay(mut conn: TcpStream, backend: SocketAddr) {
    let timeout = Some(Duration::from_secs(3));
    let _ = conn.set_read_timeout(timeout);
    let Ok(mut up) = TcpStream::connect_timeout(&backend, Duration::from_secs(3)) else {
        return;
    };
    let _ = up.set_read_timeout(timeout);
    while let Ok(q) = common::read_frame(&mut conn) {
        if up.write_all(&common::frame(&q)).is_err() {
            return;
        }
        let Ok(r) = common::read_frame(&mut up) else {
            return;
        };
        if conn.write_all(&common::frame(&r)).is_err() {
            return;
        }
    }
}

/// Relays UDP queries to `backend` port 53 and spoils the answers by the zone below `test.`
/// the question is in: `noaa`, `servfail`, `refused` turn a NODATA answer to a type A
/// question (what a minimised question for an empty non-terminal gets) into NOERROR without
/// AA, SERVFAIL or REFUSED; `upref` answers everything with the root's NS and AA (an upward
/// referral). Its TCP port is bound and never accepts (both resolvers use UDP here).
pub(crate) struct Mangler {
    stop: Arc<AtomicBool>,
    pub(crate) seen: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    _tcp: TcpListener,
}

impl Mangler {
    pub(crate) fn start(ip: &str, backend: &str) -> Self {
        let addr: SocketAddr = format!("{ip}:53").parse().unwrap();
        let backend: SocketAddr = format!("{backend}:53").parse().unwrap();
        let udp = UdpSocket::bind(addr).unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let tcp = TcpListener::bind(addr).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let (s, n) = (Arc::clone(&stop), Arc::clone(&seen));
        let thread = std::thread::spawn(move || {
            let up = UdpSocket::bind("127.0.0.49:0").unwrap();
            up.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut buf = [0u8; 4096];
            while !s.load(Ordering::Relaxed) {
                let Ok((len, peer)) = udp.recv_from(&mut buf) else {
                    continue;
                };
                n.fetch_add(1, Ordering::Relaxed);
                // One query at a time: the backend answers at once.
                if up.send_to(&buf[..len], backend).is_err() {
                    continue;
                }
                let mut reply = [0u8; 4096];
                let Ok(rlen) = up.recv(&mut reply) else {
                    continue;
                };
                if let Some(out) = spoil(&reply[..rlen]) {
                    let _ = udp.send_to(&out, peer);
                }
            }
        });
        Self {
            stop,
            seen,
            thread: Some(thread),
            _tcp: tcp,
        }
    }
}

impl Drop for Mangler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The backend's `reply` as the mangling front sends it on.
fn spoil(reply: &[u8]) -> Option<Vec<u8>> {
    let (labels, end) = question(reply)?;
    let qtype = u16::from_be_bytes([reply[end - 4], reply[end - 3]]);
    let zone = labels.iter().rev().nth(1).map(String::as_str);
    let rcode = reply[3] & 0x0f;
    let ancount = u16::from_be_bytes([reply[6], reply[7]]);
    let aa = reply[2] & 0x04 != 0;
    // The header and question alone, with `rcode` and AA as given, then `rest`.
    let rewrite = |aa: bool, rcode: u8, counts: [u16; 3], rest: &[u8]| {
        let mut m = reply[..end].to_vec();
        m[2] = (reply[2] & !0x04) | if aa { 0x04 } else { 0 };
        m[3] = (reply[3] & 0xf0) | rcode;
        for (i, c) in counts.iter().enumerate() {
            m[6 + 2 * i..8 + 2 * i].copy_from_slice(&c.to_be_bytes());
        }
        m.extend_from_slice(rest);
        m
    };
    let nodata_a = qtype == 1 && rcode == 0 && ancount == 0 && aa;
    Some(match zone {
        Some("upref") => {
            let ns = common::record(&[0], 2, &common::wire_name("a.root-servers.net."));
            rewrite(true, 0, [0, 1, 0], &ns)
        }
        Some("noaa") if nodata_a => {
            let mut m = reply.to_vec();
            m[2] &= !0x04;
            m
        }
        Some("servfail") if nodata_a => rewrite(false, 2, [0, 0, 0], &[]),
        Some("refused") if nodata_a => rewrite(false, 5, [0, 0, 0], &[]),
        _ => reply.to_vec(),
    })
}

/// The question's lower-case labels and the offset after it, of a message with one question
/// and no compression in it.
fn question(m: &[u8]) -> Option<(Vec<String>, usize)> {
    if m.len() < 12 || u16::from_be_bytes([m[4], m[5]]) != 1 {
        return None;
    }
    let mut pos = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*m.get(pos)?);
        if len == 0 {
            break;
        }
        let label = m.get(pos + 1..pos + 1 + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        pos += 1 + len;
    }
    let end = pos + 5;
    (m.len() >= end).then_some((labels, end))
}
