//! The fake upstream servers on 127.0.0.30-34, one thread each: a root that refers to each
//! TLD's server, a server that answers garbage of many kinds (chosen by the query's name), a
//! slow one, a silent one and a good one; with the raw message building they need.

use crate::common::*;
use crate::noise;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The question of a query: (ID, RD, lower-case labels, QTYPE, end of the question).
struct Q {
    id: u16,
    flags: u16,
    labels: Vec<String>,
    qtype: u16,
    end: usize,
}

fn parse_query(m: &[u8]) -> Option<Q> {
    if m.len() < 12 || m[2] & 0x80 != 0 {
        return None;
    }
    let mut pos = 12;
    let mut labels = Vec::new();
    loop {
        let l = usize::from(*m.get(pos)?);
        if l == 0 || l > 63 {
            break;
        }
        labels.push(String::from_utf8_lossy(m.get(pos + 1..pos + 1 + l)?).to_ascii_lowercase());
        pos += 1 + l;
    }
    if m.get(pos) != Some(&0) || m.len() < pos + 5 {
        return None;
    }
    Some(Q {
        id: u16::from_be_bytes([m[0], m[1]]),
        flags: u16::from_be_bytes([m[2], m[3]]),
        labels,
        qtype: u16::from_be_bytes([m[pos + 1], m[pos + 2]]),
        end: pos + 5,
    })
}

fn rr(owner: &str, rtype: u16, rdata: &[u8]) -> Vec<u8> {
    record(&wire_name(owner), rtype, rdata)
}

fn soa(zone: &str) -> Vec<u8> {
    let mut rdata = wire_name(&format!("ns.{zone}"));
    rdata.extend_from_slice(&wire_name(&format!("admin.{zone}")));
    for v in [1u32, 3600, 600, 86400, 60] {
        rdata.extend_from_slice(&v.to_be_bytes());
    }
    rr(zone, 6, &rdata)
}

/// A response to `q` (the raw query `raw`): its question, then the sections.
fn response(q: &Q, raw: &[u8], aa: bool, rcode: u8, sections: [&[Vec<u8>]; 3]) -> Vec<u8> {
    let mut m = q.id.to_be_bytes().to_vec();
    let flags = 0x8000 | if aa { 0x0400 } else { 0 } | (q.flags & 0x0100) | u16::from(rcode);
    m.extend_from_slice(&flags.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    for s in sections {
        m.extend_from_slice(&(s.len() as u16).to_be_bytes());
    }
    m.extend_from_slice(&raw[12..q.end]);
    for s in sections {
        for r in s {
            m.extend_from_slice(r);
        }
    }
    m
}

const TLDS: [(&str, [u8; 4]); 4] = [
    ("garbage", [127, 0, 0, 31]),
    ("slow", [127, 0, 0, 32]),
    ("silent", [127, 0, 0, 33]),
    ("good", [127, 0, 0, 34]),
];

/// The root: a referral to each TLD's server, NXDOMAIN for the rest.
fn root_answer(q: &Q, raw: &[u8]) -> Vec<u8> {
    match TLDS
        .iter()
        .find(|(t, _)| q.labels.last().is_some_and(|l| l == t))
    {
        Some((tld, ip)) => {
            let ns = format!("ns.{tld}.");
            response(
                q,
                raw,
                false,
                0,
                [
                    &[],
                    &[rr(&format!("{tld}."), 2, &wire_name(&ns))],
                    &[rr(&ns, 1, ip)],
                ],
            )
        }
        None => response(q, raw, true, 3, [&[], &[soa(".")], &[]]),
    }
}

/// A correct authoritative answer from a TLD server: `www.<tld>. A 192.0.2.44` for any
/// name below the TLD, the NS set at the apex.
fn tld_answer(q: &Q, raw: &[u8]) -> Vec<u8> {
    let tld = q.labels.last().cloned().unwrap_or_default();
    let apex = format!("{tld}.");
    let name = format!("{}.", q.labels.join("."));
    if q.labels.len() == 1 {
        return match q.qtype {
            2 => response(
                q,
                raw,
                true,
                0,
                [&[rr(&apex, 2, &wire_name(&format!("ns.{apex}")))], &[], &[]],
            ),
            _ => response(q, raw, true, 0, [&[], &[soa(&apex)], &[]]),
        };
    }
    match q.qtype {
        1 => response(
            q,
            raw,
            true,
            0,
            [&[rr(&name, 1, &[192, 0, 2, 44])], &[], &[]],
        ),
        _ => response(q, raw, true, 0, [&[], &[soa(&apex)], &[]]),
    }
}

/// What the garbage server sends for a query whose label below `garbage.` is `kind`.
fn garbage_answers(kind: &str, q: &Q, raw: &[u8], seed: u64) -> Vec<Vec<u8>> {
    let good = tld_answer(q, raw);
    let id = q.id.to_be_bytes();
    match kind {
        "random" => vec![noise(seed, 1 + (seed % 500) as usize)],
        "idonly" => {
            let mut m = noise(seed, 200);
            m[..2].copy_from_slice(&id);
            m[2] |= 0x80;
            vec![m]
        }
        "short" => (2..12).map(|n| good[..n].to_vec()).collect(),
        "cut" => vec![good[..good.len() - 3].to_vec()],
        "wrongid" => {
            let mut m = good.clone();
            m[1] ^= 1;
            vec![m]
        }
        "wrongq" => {
            let other = wire_name("elsewhere.garbage.");
            let mut m = good[..12].to_vec();
            m.extend_from_slice(&other);
            m.extend_from_slice(&raw[q.end - 4..q.end]);
            m.extend_from_slice(&good[q.end..]);
            vec![m]
        }
        "counts" => {
            let mut m = good[..12].to_vec();
            m[4..12].fill(0xff);
            vec![m]
        }
        "loop" => {
            // The answer's owner is a pointer to itself.
            let mut m = good[..q.end].to_vec();
            m[6..8].copy_from_slice(&1u16.to_be_bytes());
            let at = m.len();
            m.extend_from_slice(&[
                0xc0 | (at >> 8) as u8,
                at as u8,
                0,
                1,
                0,
                1,
                0,
                0,
                1,
                44,
                0,
                4,
                1,
                2,
                3,
                4,
            ]);
            vec![m]
        }
        "flood" => (0..120u64)
            .map(|i| {
                let mut m = noise(seed + i, 12 + (i as usize * 7) % 300);
                if i % 6 == 0 {
                    m[..2].copy_from_slice(&id);
                    m[2] |= 0x80;
                }
                m
            })
            .collect(),
        "tc" => {
            // Truncated: the resolver retries over TCP, where the server sends garbage.
            let mut m = good[..q.end].to_vec();
            m[2] |= 0x02;
            m[6..12].fill(0);
            vec![m]
        }
        "formerr" => vec![response(q, raw, false, 1, [&[], &[], &[]])],
        "refused" => vec![response(q, raw, false, 5, [&[], &[], &[]])],
        "selfref" => {
            // A referral to itself, forever (a lame delegation loop).
            let zone = format!("{}.", q.labels[q.labels.len() - 2..].join("."));
            vec![response(
                q,
                raw,
                false,
                0,
                [
                    &[],
                    &[rr(&zone, 2, &wire_name("ns.garbage."))],
                    &[rr("ns.garbage.", 1, &[127, 0, 0, 31])],
                ],
            )]
        }
        "upward" => vec![response(
            q,
            raw,
            false,
            0,
            [
                &[],
                &[rr(".", 2, &wire_name("a.root."))],
                &[rr("a.root.", 1, &[127, 0, 0, 30])],
            ],
        )],
        "upwardaa" => vec![response(
            q,
            raw,
            true,
            0,
            [&[], &[rr(".", 2, &wire_name("a.root."))], &[]],
        )],
        // Bad answers to the minimised question `<kind>.garbage. A` only (a server broken
        // for its own empty non-terminals); the full name gets the good answer.
        _ if q.labels.len() == 2 && q.qtype == 1 => match kind {
            "qminnoaa" => vec![response(q, raw, false, 0, [&[], &[soa("garbage.")], &[]])],
            "qminservfail" => vec![response(q, raw, false, 2, [&[], &[], &[]])],
            "qminrefused" => vec![response(q, raw, false, 5, [&[], &[], &[]])],
            "qminnxdomain" => vec![response(q, raw, true, 3, [&[], &[soa("garbage.")], &[]])],
            _ => vec![good],
        },
        _ => vec![good],
    }
}

/// Kinds whose minimised question is answered badly and whose full name resolves.
pub(crate) const QMIN_KINDS: [&str; 4] =
    ["qminnoaa", "qminservfail", "qminrefused", "qminnxdomain"];

pub(crate) const GARBAGE_KINDS: [&str; 14] = [
    "random", "idonly", "short", "cut", "wrongid", "wrongq", "counts", "loop", "flood", "tc",
    "formerr", "refused", "selfref", "upward",
];

/// How a fake server answers a query (the raw query, how many it has seen): after what
/// delay, with which datagrams.
type Behaviour = Box<dyn Fn(&Q, &[u8], u64) -> (Duration, Vec<Vec<u8>>) + Send>;

/// The fake upstream servers, one thread each; stopped and joined on drop.
pub(crate) struct Fakes {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Fakes {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The next port [`fake_port`] tries: each call takes its own, so that two tests of this
/// binary running at once never pick the same free port (found free by both, bound by one).
static NEXT_FAKE_PORT: AtomicU16 = AtomicU16::new(6299);

/// A port free on every address the fakes and the resolver use (from 6200-6299), not
/// handed to another caller before.
pub(crate) fn fake_port() -> u16 {
    'ports: loop {
        let port = NEXT_FAKE_PORT.fetch_sub(1, Ordering::Relaxed);
        if port < 6200 {
            break;
        }
        for last in 30..=36u8 {
            let ip = Ipv4Addr::new(127, 0, 0, last);
            if UdpSocket::bind((ip, port)).is_err() || TcpListener::bind((ip, port)).is_err() {
                continue 'ports;
            }
        }
        return port;
    }
    panic!("no port in 6200-6299 free on 127.0.0.30-36");
}

pub(crate) fn start_fakes(port: u16) -> Fakes {
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let udp = |last: u8| {
        let s = UdpSocket::bind((Ipv4Addr::new(127, 0, 0, last), port)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        s
    };
    // Serves one UDP socket: `f` gives (delay, datagrams) for each query.
    let serve = |sock: UdpSocket, stop: Arc<AtomicBool>, f: Behaviour| {
        std::thread::spawn(move || {
            let mut later: Vec<(Instant, SocketAddr, Vec<u8>)> = Vec::new();
            let mut buf = [0u8; 4096];
            let mut n_seen = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, peer)) = sock.recv_from(&mut buf) {
                    n_seen += 1;
                    if let Some(q) = parse_query(&buf[..n]) {
                        let (delay, out) = f(&q, &buf[..n], n_seen);
                        for m in out {
                            later.push((Instant::now() + delay, peer, m));
                        }
                    }
                }
                let now = Instant::now();
                later.retain(|(at, peer, m)| {
                    if *at <= now {
                        let _ = sock.send_to(m, peer);
                        false
                    } else {
                        true
                    }
                });
            }
        })
    };
    let now = Duration::ZERO;
    threads.push(serve(
        udp(30),
        Arc::clone(&stop),
        Box::new(move |q, raw, _| (now, vec![root_answer(q, raw)])),
    ));
    threads.push(serve(
        udp(31),
        Arc::clone(&stop),
        Box::new(move |q, raw, n| {
            let kind = q.labels.iter().rev().nth(1).cloned().unwrap_or_default();
            (now, garbage_answers(&kind, q, raw, n))
        }),
    ));
    // Slow: correct answers, long after the resolver's largest per-query timeout (3 s).
    threads.push(serve(
        udp(32),
        Arc::clone(&stop),
        Box::new(move |q, raw, _| (Duration::from_millis(3500), vec![tld_answer(q, raw)])),
    ));
    // Silent: reads and never answers.
    threads.push(serve(
        udp(33),
        Arc::clone(&stop),
        Box::new(move |_, _, _| (now, Vec::new())),
    ));
    threads.push(serve(
        udp(34),
        Arc::clone(&stop),
        Box::new(move |q, raw, _| (now, vec![tld_answer(q, raw)])),
    ));
    // The garbage server's TCP side: garbage, then close.
    let listener = TcpListener::bind((Ipv4Addr::new(127, 0, 0, 31), port)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let stop2 = Arc::clone(&stop);
    threads.push(std::thread::spawn(move || {
        let mut seed = 77;
        while !stop2.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    use std::io::{Read, Write};
                    s.set_nonblocking(false).unwrap();
                    s.set_read_timeout(Some(Duration::from_millis(500)))
                        .unwrap();
                    let mut b = [0u8; 512];
                    let _ = s.read(&mut b);
                    seed += 1;
                    let _ = s.write_all(&noise(seed, 300));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }));
    Fakes { stop, threads }
}
