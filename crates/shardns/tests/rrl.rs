//! End-to-end: response rate limiting. A flood from one address gets `rate` answers a
//! second plus slipped (TC) responses at the slip cadence, while another address is
//! answered normally; TCP is never limited; RRL is off by default; clients are grouped by
//! prefix and NXDOMAIN answers by zone.
//!
//! The server listens on 127.0.0.20 and the clients send from 127.0.0.21 and 127.0.0.22,
//! so the source address (not just the port) tells them apart.

mod common;

use common::*;
use hickory_proto::op::ResponseCode;
use std::net::{Ipv4Addr, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

const SERVER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 20);
const FLOOD_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 21);
const OTHER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 22);

/// The TC bit and answer count of a raw response.
fn tc_and_answers(r: &[u8]) -> (bool, u16) {
    (r[2] & 0x02 != 0, u16::from_be_bytes([r[6], r[7]]))
}

#[test]
fn flood_is_limited_to_the_rate_and_others_are_answered() {
    const RATE: f64 = 10.0;
    const WINDOW: f64 = 1.0;
    // Rate and slip from the flags; window and a /32 prefix (127.0.0.21 and .22 share a
    // /24) from the file.
    let server = Server::start_on(
        "rrl-flood",
        SERVER_IP,
        Some("[rrl]\nwindow = 1\nipv4_prefix = 32\n"),
        &["--workers", "2", "--rrl-rate", "10", "--rrl-slip", "2"],
    );
    assert!(server
        .log()
        .contains("response rate limiting on: 10 per second"));
    let addr = server.addr;

    let flood = udp_from(FLOOD_IP, addr);
    flood
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let sender = flood.try_clone().unwrap();
    // Up to 3000 queries, one a millisecond, for at most 3 s.
    let send = std::thread::spawn(move || {
        let start = Instant::now();
        let mut sent = 0u32;
        while sent < 3000 && start.elapsed() < Duration::from_secs(3) {
            let due = start + Duration::from_millis(u64::from(sent));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            sender
                .send(&query(sent as u16, "www.example.test", 1, Some(1232)))
                .unwrap();
            sent += 1;
        }
        (sent, start.elapsed())
    });
    // Meanwhile another address asks for the same name, five times a second.
    let other = std::thread::spawn(move || {
        let sock = udp_from(OTHER_IP, addr);
        for i in 0..15u16 {
            let r = udp_exchange(&sock, &query(40_000 + i, "www.example.test", 1, None))
                .unwrap_or_else(|| panic!("query {i} from {OTHER_IP} unanswered"));
            let m = parse(&r);
            assert!(!m.metadata.truncation, "query {i} from {OTHER_IP} limited");
            assert_eq!(m.metadata.response_code, ResponseCode::NoError);
            assert_eq!(m.answers.len(), 2);
            std::thread::sleep(Duration::from_millis(200));
        }
    });

    let (mut answered, mut slipped) = (0u32, 0u32);
    let mut buf = [0u8; 2048];
    let mut quiet_since: Option<Instant> = None;
    loop {
        match flood.recv(&mut buf) {
            Ok(n) => {
                quiet_since = None;
                let m = parse(&buf[..n]);
                assert_eq!(m.metadata.response_code, ResponseCode::NoError);
                match tc_and_answers(&buf[..n]) {
                    (false, 2) => answered += 1,
                    (true, 0) => {
                        // The question only, so the client retries over TCP.
                        assert_eq!(m.queries.len(), 1);
                        assert!(m.additionals.is_empty() && m.authorities.is_empty());
                        assert_eq!(n, 12 + 18 + 4);
                        slipped += 1;
                    }
                    other => panic!("unexpected response {other:?}: {:02x?}", &buf[..n]),
                }
            }
            Err(_) => {
                if send.is_finished() {
                    let q = *quiet_since.get_or_insert_with(Instant::now);
                    if q.elapsed() > Duration::from_millis(500) {
                        break;
                    }
                }
            }
        }
    }
    let (sent, took) = send.join().unwrap();
    other.join().unwrap();
    let secs = took.as_secs_f64();
    eprintln!("flood: {sent} queries in {secs:.2} s, {answered} answered, {slipped} slipped");
    assert!(sent >= 1000, "only {sent} queries sent");

    // At most the burst (rate × window) plus the rate over the flood, with a little room
    // for the time before the first and after the last query.
    let most = RATE * (secs + WINDOW) + 3.0;
    assert!(
        f64::from(answered) <= most,
        "{answered} answered, more than {most}"
    );
    assert!(
        f64::from(answered) >= RATE * secs * 0.5,
        "{answered} answered: the limit let through far less than the rate"
    );

    let dropped_stat = server.stat("shardns_rrl_limited_total{action=\"dropped\"}");
    let slipped_stat = server.stat("shardns_rrl_limited_total{action=\"slipped\"}");
    // Slip 2: every second limited response is sent truncated, the others dropped (one
    // bucket, so the cadence is exact).
    assert!(
        (dropped_stat - slipped_stat).abs() <= 1.0,
        "dropped {dropped_stat}, slipped {slipped_stat}"
    );
    assert!(slipped_stat >= 100.0, "slipped {slipped_stat}");
    // Every slipped response arrived (loopback; allow a handful lost under load).
    assert!(
        f64::from(slipped) <= slipped_stat && f64::from(slipped) >= slipped_stat - 5.0,
        "received {slipped} TC responses, the server slipped {slipped_stat}"
    );
    let accounted = f64::from(answered + slipped) + dropped_stat;
    assert!(
        accounted <= f64::from(sent) && accounted >= f64::from(sent) - 5.0,
        "{sent} sent, {accounted} answered, slipped or dropped"
    );
    assert!(server.stat("shardns_dropped_total") >= dropped_stat);

    // TCP is never limited: the same source, its UDP bucket empty, gets every answer.
    let mut s = tcp_from(FLOOD_IP, addr);
    let queries: Vec<Vec<u8>> = (0..100)
        .map(|i| query(50_000 + i, "www.example.test", 1, None))
        .collect();
    for r in tcp_exchange_on(&mut s, &queries) {
        let m = parse(&r);
        assert!(!m.metadata.truncation);
        assert_eq!(m.answers.len(), 2);
    }
    assert_eq!(
        server.stat("shardns_rrl_limited_total"),
        dropped_stat + slipped_stat
    );
}

#[test]
fn off_by_default() {
    let server = Server::start_on("rrl-off", SERVER_IP, None, &["--workers", "1"]);
    let sock = udp_from(FLOOD_IP, server.addr);
    for i in 0..300u16 {
        let r = udp_exchange(&sock, &query(i, "www.example.test", 1, None))
            .unwrap_or_else(|| panic!("query {i} unanswered"));
        assert_eq!(tc_and_answers(&r), (false, 2), "query {i}");
    }
    assert_eq!(server.stat("shardns_rrl_limited_total"), 0.0);
}

#[test]
fn prefixes_and_classes_share_buckets() {
    // One response a second, every limited one slipped; default /24 prefixes.
    let server = Server::start_on(
        "rrl-classes",
        SERVER_IP,
        Some("[rrl]\nenabled = true\nrate = 1\nwindow = 1\nslip = 1\n"),
        &["--workers", "1"],
    );
    let a = udp_from(FLOOD_IP, server.addr);
    let b = udp_from(OTHER_IP, server.addr);
    let ask = |s: &UdpSocket, id: u16, name: &str| {
        let r = udp_exchange(s, &query(id, name, 1, None)).expect("a response");
        parse(&r)
    };
    // Several answers asked for at once: one each, whatever the machine's pace.
    let mut truncated = 0;
    for (i, s) in [&a, &a, &a, &b, &b, &b].into_iter().enumerate() {
        truncated += usize::from(ask(s, i as u16, "mail.example.test").metadata.truncation);
    }
    // 127.0.0.21 and .22 are one /24: one bucket for mail.example.test A. At most a
    // refill or two if this machine is slow.
    assert!(truncated >= 3, "{truncated} of 6 truncated");
    // Another name is another bucket.
    let m = ask(&b, 100, "www.example.test");
    assert!(!m.metadata.truncation);
    assert_eq!(m.answers.len(), 2);
    // Every NXDOMAIN of the zone shares one bucket, whatever the name.
    let mut nx_truncated = 0;
    for i in 0..6u16 {
        let m = ask(&a, 200 + i, &format!("nothing-{i}.example.test"));
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
        nx_truncated += usize::from(m.metadata.truncation);
    }
    assert!(nx_truncated >= 3, "{nx_truncated} of 6 NXDOMAIN truncated");
    // Slip 1: nothing dropped.
    assert_eq!(
        server.stat("shardns_rrl_limited_total{action=\"dropped\"}"),
        0.0
    );
    assert!(server.stat("shardns_rrl_limited_total{action=\"slipped\"}") >= 6.0);
    // A config error names the key and line.
    let bad = TempDir::new("rrl-bad");
    let path = bad.write("bad.toml", "[rrl]\nenabled = true\nslip = 11\n");
    let out = Command::new(BIN)
        .arg("check")
        .arg("-c")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:3:") && err.contains("rrl.slip") && err.contains("between 0 and 10"),
        "{err}"
    );
}
