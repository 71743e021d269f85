//! The fake servers run by the test itself: a silent one that reads and never answers, and a
//! front that answers every UDP query with TC and relays TCP to a real server.

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
