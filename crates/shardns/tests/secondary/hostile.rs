//! A primary of our own making (a thread of this test, on loopback) that answers the SOA
//! query well, then misbehaves in the transfer: garbage, another zone, a closing SOA of
//! another serial, an endless transfer, a bad TSIG, a transfer cut short, no answer at all.
//! Each is a failed transfer, logged with its cause, and the secondary keeps serving the
//! version it had; a good transfer at the end is taken.

use super::*;
use shardns_wire::tsig::{self, Key, Signer};
use shardns_wire::{Query, Transport};
use shardns_zone::xfr::{self, Transfer};
use shardns_zone::{load_zone_text, respond_to_message, ScanOptions, Zone, ZoneSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;

const APEX: &str = "hostile.test.";

/// How the fake primary answers a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Good,
    Garbage,
    OtherZone,
    SerialMismatch,
    Endless,
    BadTsig,
    CutShort,
    Silent,
    /// An IXFR answered in incremental form with a deletion our version does not hold;
    /// an AXFR answered well.
    BadIxfr,
}

const MODES: [Mode; 9] = [
    Mode::Good,
    Mode::Garbage,
    Mode::OtherZone,
    Mode::SerialMismatch,
    Mode::Endless,
    Mode::BadTsig,
    Mode::CutShort,
    Mode::Silent,
    Mode::BadIxfr,
];

fn make_zone(apex: &str, serial: u32) -> Arc<Zone> {
    let text = zone_text(serial, 300, "");
    let opts = ScanOptions::new(apex.parse().unwrap());
    Arc::new(
        load_zone_text(text.as_bytes(), Path::new("t"), &opts)
            .unwrap()
            .0,
    )
}

fn key() -> Key {
    tsig_kdig().parse().unwrap()
}

struct Fake {
    addr: SocketAddr,
    mode: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Fake {
    fn start(serial: u32) -> Self {
        let addr = local();
        let mode = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let zones = Arc::new(ZoneSet::from_shared(vec![make_zone(APEX, serial)]));
        let udp = UdpSocket::bind(addr).unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let tcp = TcpListener::bind(addr).unwrap();
        tcp.set_nonblocking(true).unwrap();
        let (z, s) = (Arc::clone(&zones), Arc::clone(&stop));
        let soa = std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            let mut out = vec![0u8; 4096];
            while !s.load(SeqCst) {
                let Ok((n, from)) = udp.recv_from(&mut buf) else {
                    continue;
                };
                let Some(w) = respond_to_message(&z, &buf[..n], Transport::Udp, &mut out) else {
                    continue;
                };
                let mut len = w.len;
                if let Ok(Some(sig)) = tsig::read(&buf[..n]) {
                    len = Signer::new(&key(), &sig).sign(&mut out, len, unix_now());
                }
                let _ = udp.send_to(&out[..len], from);
            }
        });
        let (z, s, m) = (Arc::clone(&zones), Arc::clone(&stop), Arc::clone(&mode));
        let xfr = std::thread::spawn(move || {
            while !s.load(SeqCst) {
                match tcp.accept() {
                    Ok((conn, _)) => {
                        let mode = MODES[m.load(SeqCst)];
                        let zone = z.zones().next().unwrap().clone();
                        let _ = serve(conn, mode, &zone, &s);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self {
            addr,
            mode,
            stop,
            threads: vec![soa, xfr],
        }
    }

    fn set(&self, mode: Mode) {
        self.mode
            .store(MODES.iter().position(|m| *m == mode).unwrap(), SeqCst);
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The messages of our own transfer of `zone` answering `query`, unsigned.
fn transfer(zone: &Arc<Zone>, query: &[u8]) -> Vec<Vec<u8>> {
    let q = Query::parse(query).unwrap();
    let xfr::Read::Transfer(req) = xfr::request(&q) else {
        return Vec::new();
    };
    let mut t = Transfer::new(Arc::clone(zone), req);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1024];
    // Small messages: many of them.
    while let Some(n) = t.next_message(&mut buf) {
        out.push(buf[..n].to_vec());
    }
    out
}

/// `messages` signed in turn with `key` as the answer to the signed `query` (RFC 8945
/// §5.3.1, every message).
fn sign_all(messages: Vec<Vec<u8>>, query: &[u8], key: &Key) -> Vec<Vec<u8>> {
    let Ok(Some(sig)) = tsig::read(query) else {
        return messages;
    };
    let mut signer = Signer::new(key, &sig);
    messages
        .into_iter()
        .map(|mut m| {
            let len = m.len();
            m.resize(len + signer.room(), 0);
            let n = signer.sign(&mut m, len, unix_now());
            m.truncate(n);
            m
        })
        .collect()
}

fn serve(
    mut conn: TcpStream,
    mode: Mode,
    zone: &Arc<Zone>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut len = [0u8; 2];
    conn.read_exact(&mut len)?;
    let mut query = vec![0u8; u16::from_be_bytes(len) as usize];
    conn.read_exact(&mut query)?;
    let good = sign_all(transfer(zone, &query), &query, &key());
    let id = [query[0], query[1]];
    let qtype = Query::parse(&query).map(|q| q.qtype());
    let messages: Vec<Vec<u8>> = match mode {
        Mode::Good => good,
        Mode::BadIxfr if qtype == Ok(shardns_wire::RType::IXFR) => {
            // The differences from a version 1 that held a record ours does not.
            let text = zone_text(1, 300, "nothere A 192.0.2.200\n");
            let opts = ScanOptions::new(APEX.parse().unwrap());
            let theirs = load_zone_text(text.as_bytes(), Path::new("t"), &opts)
                .unwrap()
                .0;
            let diff = xfr::diff::Diff::compute(&theirs, zone);
            let q = Query::parse(&query).unwrap();
            let xfr::Read::Transfer(req) = xfr::request(&q) else {
                return Ok(());
            };
            let mut t = Transfer::incremental(Arc::clone(zone), req, Arc::new(diff));
            let mut v = Vec::new();
            let mut buf = vec![0u8; 1024];
            while let Some(n) = t.next_message(&mut buf) {
                v.push(buf[..n].to_vec());
            }
            sign_all(v, &query, &key())
        }
        Mode::BadIxfr => good,
        Mode::Garbage => vec![[&id[..], b"\x84\x00 this is not DNS at all"].concat()],
        Mode::OtherZone => {
            // A transfer of another zone, as an answer to our query (ID, question patched).
            let other = make_zone("other.test.", 9);
            let q = another_zone(&query, "other.test.");
            sign_all(transfer(&other, &q), &query, &key())
        }
        Mode::SerialMismatch => {
            // Opens with this version, closes with the next one.
            let next = make_zone(APEX, zone.serial() + 1);
            let mut v = vec![transfer(zone, &query).swap_remove(0)];
            v.extend(transfer(&next, &query).into_iter().skip(1));
            sign_all(v, &query, &key())
        }
        Mode::Endless => {
            // The first message, then the second again and again, unsigned (TSIG allows 99
            // in a row; the message limit, 50 here, comes first).
            let body = transfer(zone, &query).swap_remove(1);
            let mut v = vec![good[0].clone()];
            v.extend(std::iter::repeat_n(body, 5000));
            v
        }
        Mode::BadTsig => {
            let mut wrong = key();
            wrong.secret[0] ^= 1;
            sign_all(transfer(zone, &query), &query, &wrong)
        }
        Mode::CutShort => good[..good.len() / 2].to_vec(),
        Mode::Silent => {
            // Holds the connection open, sending nothing, until the client gives up.
            let end = Instant::now() + Duration::from_secs(10);
            let mut b = [0u8; 1];
            while Instant::now() < end && !stop.load(SeqCst) {
                conn.set_read_timeout(Some(Duration::from_millis(100)))?;
                match conn.read(&mut b) {
                    Ok(0) => break,
                    _ => continue,
                }
            }
            Vec::new()
        }
    };
    for m in messages {
        if stop.load(SeqCst) {
            break;
        }
        conn.write_all(&(m.len() as u16).to_be_bytes())?;
        conn.write_all(&m)?;
    }
    Ok(())
}

/// `query` (an AXFR or IXFR) asking for `apex` instead, with the same ID.
fn another_zone(query: &[u8], apex: &str) -> Vec<u8> {
    let mut q = query[..12].to_vec();
    q[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(&wire_name(apex));
    q.extend_from_slice(&252u16.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    q
}

/// A signed NOTIFY for the zone, sent to the secondary (a refresh at once).
fn notify(to: SocketAddr, z: &Zone) {
    let mut buf = vec![0u8; 1024];
    let len = xfr::notify(z, 4242, &mut buf);
    let len = tsig::sign_request(&mut buf, len, &key(), unix_now());
    let sock = udp_client(to);
    let answer = udp_exchange(&sock, &buf[..len]).expect("an answer to our NOTIFY");
    let m = parse(&answer);
    assert_eq!(
        format!("{:?}", m.metadata.response_code),
        "NoError",
        "NOTIFY refused"
    );
}

#[test]
fn bad_transfers_fail_and_the_version_served_stays() {
    let fake = Fake::start(2);
    let dir = TempDir::new("hostile");
    // A copy of version 1 kept from before, refreshed just now: served at start.
    let copy = dir.write("hostile.test.zone", &zone_text(1, 300, ""));
    let mut toml = secondary_toml(APEX, &[fake.addr], Some(&copy));
    toml.push_str("[limits]\ntransfer_in_max_messages = 50\ntransfer_in_timeout_ms = 2000\n");
    // The first refresh runs at start: let it fail on garbage.
    fake.set(Mode::Garbage);
    let sec = local();
    let server = start_secondary("hostile-s", sec, &dir, &toml);
    let v1 = make_zone(APEX, 1);
    let cases = [
        (Mode::Garbage, "malformed answer"),
        (Mode::OtherZone, "question is other.test."),
        (
            Mode::SerialMismatch,
            "the closing SOA has serial 3, the opening one 2",
        ),
        (Mode::Endless, "more than 50 messages (transfer limit)"),
        (Mode::BadTsig, "BADSIG"),
        (Mode::CutShort, "the transfer ended before the closing SOA"),
        (Mode::Silent, "took longer than"),
    ];
    for (i, (mode, cause)) in cases.iter().enumerate() {
        fake.set(*mode);
        if i > 0 {
            notify(sec, &v1);
        }
        let end = Instant::now() + Duration::from_secs(15);
        while !server.log().contains(cause) {
            assert!(
                Instant::now() < end,
                "{mode:?}: no {cause:?} in the log:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            serial_at(sec, APEX),
            Some(1),
            "{mode:?}: the version served changed"
        );
        assert_eq!(rcode_of(sec, "h1.hostile.test"), "NoError");
    }
    for line in server.log().lines().filter(|l| l.contains(" failed, ")) {
        println!(
            "secondary: {}",
            line.split_once("secondary: ").map_or(line, |p| p.1)
        );
    }
    assert!(server.stat("shardns_xfr_in_total{result=\"failed\"}") >= cases.len() as f64);
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"axfr\"}"), 0.0);
    // A good transfer at last.
    fake.set(Mode::Good);
    notify(sec, &v1);
    wait_serial(sec, APEX, 2, Duration::from_secs(15), || server.log());
    assert_eq!(server.stat("shardns_secondary_zones_unavailable"), 0.0);
}

/// An IXFR whose deletions do not match our version: the secondary says so and falls back to
/// AXFR; a primary whose serial went backwards: ignored, logged, our version kept; a NOTIFY
/// from an address that is not a primary: REFUSED, counted, no refresh.
#[test]
fn a_bad_ixfr_falls_back_to_axfr_a_serial_going_back_is_ignored_a_stray_notify_refused() {
    let fake = Fake::start(2);
    let dir = TempDir::new("hostile-ixfr");
    let copy = dir.write("hostile.test.zone", &zone_text(1, 300, ""));
    let toml = secondary_toml(APEX, &[fake.addr], Some(&copy));
    fake.set(Mode::BadIxfr);
    let sec = local();
    let mut server = start_secondary("hostile-ixfr-s", sec, &dir, &toml);
    server.wait_for_log(
        "deletes nothere.hostile.test. A 192.0.2.200, which is not in the zone); trying AXFR",
        Duration::from_secs(15),
    );
    wait_serial(sec, APEX, 2, Duration::from_secs(15), || server.log());
    server.wait_for_log("serial 1 -> 2 by AXFR", Duration::from_secs(5));
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"ixfr\"}"), 0.0);
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"axfr\"}"), 1.0);

    // A NOTIFY from 127.0.0.2, not a primary: REFUSED, counted, nothing refreshed.
    let before = server.log().matches("refreshing").count();
    let v2 = make_zone(APEX, 2);
    let mut buf = vec![0u8; 1024];
    let len = xfr::notify(&v2, 99, &mut buf);
    let sock = udp_from(Ipv4Addr::new(127, 0, 0, 2), sec);
    sock.send(&buf[..len]).unwrap();
    let mut answer = [0u8; 512];
    let n = sock.recv(&mut answer).expect("an answer to the NOTIFY");
    assert_eq!(
        format!("{:?}", parse(&answer[..n]).metadata.response_code),
        "Refused"
    );
    server.wait_for_stat(
        "shardns_notify_in_total{result=\"refused\"}",
        1.0,
        Duration::from_secs(5),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.log().matches("refreshing").count(), before);
    drop(server);

    // The primary goes back to serial 2 while our copy is at 5: kept, and said so.
    let dir = TempDir::new("hostile-back");
    let copy = dir.write("hostile.test.zone", &zone_text(5, 300, ""));
    let toml = secondary_toml(APEX, &[fake.addr], Some(&copy));
    fake.set(Mode::Good);
    let sec = local();
    let mut server = start_secondary("hostile-back-s", sec, &dir, &toml);
    server.wait_for_log(
        "has serial 2, not newer than ours (5); keeping ours",
        Duration::from_secs(15),
    );
    assert_eq!(serial_at(sec, APEX), Some(5));
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"axfr\"}"), 0.0);
}
