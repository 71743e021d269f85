//! Spoofing test of the resolver role: forged answers must never reach a client or the cache.
//!
//! shardns runs as a resolver on 127.0.0.61:53 whose root hints point at a fake
//! authoritative server of this test on 127.0.0.60:53, which answers every question as the
//! root zone. When the full question for a target name arrives, the fake learns the
//! resolver's upstream address, port and query ID from the datagram and, before its true
//! answer (sent 100 ms later), forges answers carrying a poisoned address:
//!
//! - from the right address and port with the wrong ID (ID + 1);
//! - with the right ID from the right address but another source port;
//! - with the right ID and port number from another address (127.0.0.62);
//! - from the right address and port with the right ID but another question.
//!
//! The client must get the true address, and a second query (a cache hit: the fake sees no
//! new query) must too. The resolver validates (a trust anchor for a name outside the fake
//! world makes the fake's unsigned data insecure, as an unsigned TLD is under the real root).
//! Needs root for port 53: without it the test prints SKIPPED and passes.
//!
//! Never: any address outside 127.0.0.60-127.0.0.62, unbounded waits, processes left running.

mod common;

use common::{wire_name, Server, TempDir};
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const FAKE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 60);
const RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 61);
const OTHER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 62);
const TRUE_ADDR: [u8; 4] = [192, 0, 2, 1];
const POISON: [u8; 4] = [6, 6, 6, 6];
/// Names whose full A query draws the forgeries (one round each).
const TARGETS: &[&str] = &["www.victim.spoof.", "mail.victim.spoof.", "a.b.c.spoof."];

#[test]
fn forged_answers_are_rejected_and_never_cached() {
    for ip in [FAKE, RESOLVER, OTHER] {
        let addr = SocketAddr::from((ip, 53));
        let probe = UdpSocket::bind(addr)
            .err()
            .or_else(|| TcpListener::bind(addr).err());
        if let Some(e) = probe {
            if e.kind() == ErrorKind::PermissionDenied {
                println!("spoofing: SKIPPED: cannot bind {addr} ({e}): run as root");
                return;
            }
            panic!("{addr} is in use ({e}): see `ss -lunpt`");
        }
    }
    let fake = Fake::start();
    let dir = TempDir::new("spoofing");
    let hints = dir.write(
        "root.hints",
        &format!(". NS a.root-servers.net.\na.root-servers.net. A {FAKE}\n"),
    );
    let hints = hints.display().to_string();
    // Validation on, with a trust anchor outside the fake world: the fake's unsigned data
    // is provably insecure, so every answer goes through the validator (and gets no AD),
    // and validation asks the fake nothing more.
    let anchor = dir.write(
        "anchor.ds",
        &format!("anchor.invalid. IN DS 1 13 2 {}\n", "00".repeat(32)),
    );
    let anchor = anchor.display().to_string();
    let resolver = Server::start_at(
        "spoofing-resolver",
        &[SocketAddr::from((RESOLVER, 53))],
        &[
            "--workers",
            "1",
            "--recursion",
            // The fake hierarchy is on loopback.
            "--allow-loopback-upstreams",
            "--trust-anchor",
            &anchor,
            "--root-hints",
            &hints,
        ],
    );

    for (round, name) in TARGETS.iter().enumerate() {
        let id = 100 + round as u16;
        let first = ask(name, id);
        assert_eq!(
            first,
            vec![TRUE_ADDR],
            "{name}: the client got a forged answer"
        );
        // One query, or two if a slow machine let the resolver's timeout (at least 150 ms)
        // pass before the true answer: each drew its forgeries.
        let seen = fake.full_queries(name);
        assert!(
            (1..=2).contains(&seen.len()),
            "{name}: upstream queries {seen:?}"
        );
        // A cache hit: no new upstream query, still the true address.
        let second = ask(name, id + 50);
        assert_eq!(second, vec![TRUE_ADDR], "{name}: the cache holds a forgery");
        assert_eq!(
            fake.full_queries(name).len(),
            seen.len(),
            "{name}: not from the cache"
        );
    }
    let log = fake.log.lock().unwrap().clone();
    let forged: usize = log.iter().map(|q| q.forged).sum();
    let targeted = log
        .iter()
        .filter(|q| TARGETS.contains(&q.qname.as_str()) && q.qtype == 1)
        .count();
    assert_eq!(forged, 4 * targeted, "every forgery was sent");
    // Each upstream query came from its own port with its own ID (what makes blind
    // forgery hard in the first place).
    let mut ports: Vec<u16> = log.iter().map(|q| q.from.port()).collect();
    ports.sort_unstable();
    ports.dedup();
    assert!(ports.len() + 1 >= log.len(), "source ports repeat: {log:?}");
    let mut ids: Vec<u16> = log.iter().map(|q| q.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert!(ids.len() + 1 >= log.len(), "query IDs repeat: {log:?}");
    println!(
        "spoofing: {} upstream queries from {} ports, {forged} forged answers rejected",
        log.len(),
        ports.len()
    );
    assert_eq!(
        resolver.stat("shardns_resolver_cache_hits_total"),
        TARGETS.len() as f64
    );
    drop(fake);
}

/// Asks the resolver for `name` A (RD, no EDNS); returns the A records' addresses.
fn ask(name: &str, id: u16) -> Vec<[u8; 4]> {
    let sock = common::udp_client(SocketAddr::from((RESOLVER, 53)));
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut q = common::query(id, name, 1, None);
    q[2] |= 0x01;
    let resp = common::udp_exchange(&sock, &q).unwrap_or_else(|| panic!("no answer for {name}"));
    let m = common::parse(&resp);
    assert_eq!(
        m.metadata.response_code,
        hickory_proto::op::ResponseCode::NoError,
        "{name}: {m:?}"
    );
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            hickory_proto::rr::RData::A(a) => Some(a.0.octets()),
            _ => None,
        })
        .collect()
}

/// One query the fake received.
#[derive(Clone, Debug)]
struct Seen {
    from: SocketAddr,
    id: u16,
    qname: String,
    qtype: u16,
    /// Forged answers sent for it before the true one.
    forged: usize,
}

/// The fake root: answers every question authoritatively, and forges before answering the
/// full A question for a target.
struct Fake {
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Seen>>>,
    thread: Option<JoinHandle<()>>,
}

impl Fake {
    fn start() -> Self {
        let sock = UdpSocket::bind((FAKE, 53)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let other_port = UdpSocket::bind((FAKE, 0)).unwrap();
        let other_addr = UdpSocket::bind((OTHER, 53)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (s, l) = (Arc::clone(&stop), Arc::clone(&log));
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            while !s.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let Some((id, qname, qtype)) = question(&buf[..n]) else {
                    continue;
                };
                let text = name_text(&qname);
                let mut seen = Seen {
                    from,
                    id,
                    qname: text.clone(),
                    qtype,
                    forged: 0,
                };
                let target = TARGETS.contains(&text.as_str()) && qtype == 1;
                if target {
                    let poison = [(qname.clone(), POISON)];
                    let forgeries: [(&UdpSocket, Vec<u8>); 4] = [
                        (&sock, response(id.wrapping_add(1), &qname, qtype, &poison)),
                        (&other_port, response(id, &qname, qtype, &poison)),
                        (&other_addr, response(id, &qname, qtype, &poison)),
                        (
                            &sock,
                            response(
                                id,
                                &wire_name("evil.spoof."),
                                qtype,
                                &[(qname.clone(), POISON)],
                            ),
                        ),
                    ];
                    for (from_sock, msg) in forgeries {
                        if from_sock.send_to(&msg, from).is_ok() {
                            seen.forged += 1;
                        }
                    }
                    // The true answer comes late (the resolver's timeouts are 150 ms or more).
                    std::thread::sleep(Duration::from_millis(100));
                }
                l.lock().unwrap().push(seen);
                let answers: Vec<(Vec<u8>, [u8; 4])> = if target {
                    vec![(qname.clone(), TRUE_ADDR)]
                } else {
                    Vec::new() // an empty non-terminal or NODATA: NOERROR, AA, nothing
                };
                let _ = sock.send_to(&response(id, &qname, qtype, &answers), from);
            }
        });
        Self {
            stop,
            log,
            thread: Some(thread),
        }
    }

    /// The full (not minimised) A queries seen for `name`.
    fn full_queries(&self, name: &str) -> Vec<Seen> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|q| q.qname == name && q.qtype == 1)
            .cloned()
            .collect()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// ID, lower-cased wire QNAME and QTYPE of a query.
fn question(msg: &[u8]) -> Option<(u16, Vec<u8>, u16)> {
    if msg.len() < 12 || msg[2] & 0x80 != 0 {
        return None;
    }
    let mut end = 12;
    loop {
        let len = usize::from(*msg.get(end)?);
        end += 1 + len;
        if len == 0 {
            break;
        }
    }
    let qname = msg.get(12..end)?.to_ascii_lowercase();
    let qtype = u16::from_be_bytes([*msg.get(end)?, *msg.get(end + 1)?]);
    Some((u16::from_be_bytes([msg[0], msg[1]]), qname, qtype))
}

fn name_text(wire: &[u8]) -> String {
    let mut out = String::new();
    let mut rest = wire;
    while let Some((&len, tail)) = rest.split_first() {
        if len == 0 {
            break;
        }
        out.push_str(&String::from_utf8_lossy(&tail[..usize::from(len)]));
        out.push('.');
        rest = &tail[usize::from(len)..];
    }
    if out.is_empty() {
        out.push('.');
    }
    out
}

/// An authoritative NOERROR response to (`qname`, `qtype`) with A records `answers`.
fn response(id: u16, qname: &[u8], qtype: u16, answers: &[(Vec<u8>, [u8; 4])]) -> Vec<u8> {
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x84, 0x00]); // QR, AA
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&(answers.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(qname);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    for (owner, addr) in answers {
        m.extend_from_slice(owner);
        m.extend_from_slice(&1u16.to_be_bytes());
        m.extend_from_slice(&1u16.to_be_bytes());
        m.extend_from_slice(&300u32.to_be_bytes());
        m.extend_from_slice(&4u16.to_be_bytes());
        m.extend_from_slice(addr);
    }
    m
}
