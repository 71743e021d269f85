//! End-to-end: the real `shardns serve` answering over UDP and TCP, IPv4 and IPv6, checked
//! with dig, kdig and hickory-proto; pipelined TCP; truncation and the TCP retry;
//! statistics over the control socket and HTTP (scrapes answered while slow clients dawdle);
//! query logging.

mod common;

use common::*;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn embedded_zone_over_udp_and_tcp_on_ipv4_and_ipv6() {
    let server = Server::start("embedded", &["--workers", "2"]);
    let www = ["192.0.2.10", "192.0.2.11"];
    for addr in [server.addr4(), server.addr6()] {
        for transport in ["+notcp", "+tcp"] {
            let out = dig(addr, &[transport, "+short", "www.example.test", "A"]);
            assert_eq!(sorted_lines(&out), www, "dig {transport} via {addr}");
            let out = kdig(addr, &[transport, "+short", "www.example.test", "A"]);
            assert_eq!(sorted_lines(&out), www, "kdig {transport} via {addr}");
        }
        // Raw query, independent parser.
        let sock = udp_client(addr);
        let m = parse(&udp_exchange(&sock, &query(7, "www.example.test", 1, Some(1232))).unwrap());
        assert_eq!(m.metadata.id, 7);
        assert!(m.metadata.authoritative);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert_eq!(answers(&m), ["A 192.0.2.10", "A 192.0.2.11"]);

        let r = tcp_exchange(addr, &[query(8, "nope.example.test", 1, None)]);
        let m = parse(&r[0]);
        assert_eq!(m.metadata.id, 8);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
        assert_eq!(m.authorities[0].record_type(), RecordType::SOA);
    }
    // The rest of the example zone: CNAME, wildcard, delegation with glue, MX.
    let a = server.addr4();
    assert_eq!(
        sorted_lines(&dig(a, &["+short", "web.example.test", "A"])),
        ["192.0.2.10", "192.0.2.11", "www.example.test."]
    );
    assert_eq!(
        dig(a, &["+short", "anything.apps.example.test", "A"]).trim(),
        "192.0.2.80"
    );
    assert_eq!(
        dig(a, &["+short", "api.apps.example.test", "A"]).trim(),
        "192.0.2.81"
    );
    assert_eq!(
        sorted_lines(&dig(a, &["+short", "example.test", "MX"])),
        ["10 mail.example.test.", "20 mail2.example.test."]
    );
    let sock = udp_client(a);
    let m = parse(&udp_exchange(&sock, &query(9, "host.sub.example.test", 1, Some(1232))).unwrap());
    assert!(!m.metadata.authoritative, "a referral is not authoritative");
    assert!(m.answers.is_empty());
    assert!(
        m.authorities
            .iter()
            .all(|r| r.record_type() == RecordType::NS)
            && m.authorities.len() == 2
    );
    assert!(
        m.additionals
            .iter()
            .any(|r| r.record_type() == RecordType::A),
        "glue: {m:?}"
    );
    // Outside our zones.
    let m = parse(&udp_exchange(&sock, &query(10, "example.org", 1, None)).unwrap());
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
}

#[test]
fn zone_from_flags_answers_and_stops_on_sigterm() {
    let dir = TempDir::new("flags");
    let zone = dir.write(
        "flags.test.zone",
        "$TTL 60\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nhost AAAA 2001:db8::7\n",
    );
    let zarg = format!("flags.test={}", zone.display());
    let mut server = Server::start_in(dir, &["--zone", &zarg, "--workers", "1"]);
    assert_eq!(
        dig(server.addr6(), &["+short", "host.flags.test", "AAAA"]).trim(),
        "2001:db8::7"
    );
    assert_eq!(
        dig(server.addr4(), &["+short", "+tcp", "ns.flags.test", "A"]).trim(),
        "192.0.2.1"
    );
    // The embedded zone is not served when a zone is configured.
    assert!(dig(server.addr4(), &["www.example.test"]).contains("REFUSED"));
    let status = server.terminate();
    assert!(status.success(), "{status}");
    assert!(server.log().contains("stopped"));
    assert!(
        !server.control.exists(),
        "the control socket is removed on exit"
    );
}

/// Our sockets use SO_REUSEPORT, which would let a second server of the same user join
/// the first's sockets and take part of its queries; it must refuse to start instead.
#[test]
fn a_second_server_on_the_same_address_refuses_to_start() {
    let first = Server::start("first", &["--workers", "1"]);
    let dir = TempDir::new("second");
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--workers", "2", "--listen"])
        .arg(first.addr4().to_string())
        .arg("--control")
        .arg(dir.path().join("ctl"))
        .env_remove("RUST_LOG");
    let mut second = Daemon::spawn("second shardns", cmd, dir.path().join("log"));
    let status = second.wait_exit(Duration::from_secs(10));
    let log = second.log();
    assert!(
        status.is_some_and(|s| !s.success()),
        "the second server started ({status:?}): {log}"
    );
    assert!(
        log.contains(&format!("UDP {}", first.addr4())) && log.contains("address already in use"),
        "{log}"
    );
    // The first one still has all of its queries.
    assert_eq!(
        dig(first.addr4(), &["+short", "www.example.test", "A"]).trim(),
        dig(first.addr6(), &["+short", "www.example.test", "A"]).trim()
    );
    assert!(!dig(first.addr4(), &["+short", "www.example.test", "A"])
        .trim()
        .is_empty());
}

#[test]
fn pipelined_tcp_queries_are_answered_in_order() {
    let server = Server::start("pipeline", &["--workers", "1"]);
    let names = [
        "www", "mail", "ns1", "nope", "web", "ns2", "x.apps", "mail2", "www", "sip",
    ];
    let queries: Vec<Vec<u8>> = names
        .iter()
        .enumerate()
        .map(|(i, n)| query(100 + i as u16, &format!("{n}.example.test"), 1, None))
        .collect();
    for addr in [server.addr4(), server.addr6()] {
        let responses = tcp_exchange(addr, &queries);
        for (i, r) in responses.iter().enumerate() {
            let m = parse(r);
            assert_eq!(m.metadata.id, 100 + i as u16, "answers come back in order");
            assert_eq!(
                m.queries[0].name().to_string(),
                format!("{}.example.test.", names[i])
            );
        }
        // Several rounds on one connection, and a query split across writes.
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for round in 0..3 {
            let r = tcp_exchange_on(&mut s, &queries[round..round + 3]);
            assert_eq!(r.len(), 3);
        }
        let q = query(555, "www.example.test", 28, None);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        s.write_all(&framed[..1]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        s.write_all(&framed[1..7]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        s.write_all(&framed[7..]).unwrap();
        let m = parse(&read_frame(&mut s).unwrap());
        assert_eq!(m.metadata.id, 555);
        assert_eq!(answers(&m), ["AAAA 2001:db8::10"]);
    }
}

#[test]
fn many_pipelined_queries_from_a_slow_reader() {
    // 1000 queries of ~6 kB answers each, written in a burst; the client reads only after a
    // pause, so the server must buffer, stop reading (back-pressure) and resume, without
    // losing or reordering anything, while still answering UDP.
    let dir = TempDir::new("slowreader");
    let zone = dir.write("big.test.zone", &big_txt_zone(60));
    let zarg = format!("big.test={}", zone.display());
    let server = Server::start_in(dir, &["--zone", &zarg, "--workers", "1"]);
    let n = 1000u16;
    let mut s = TcpStream::connect(server.addr4()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let writer = {
        let mut w = s.try_clone().unwrap();
        std::thread::spawn(move || {
            for i in 0..n {
                let q = query(i, "big.big.test", 16, None);
                w.write_all(&(q.len() as u16).to_be_bytes()).unwrap();
                w.write_all(&q).unwrap();
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    // UDP is answered by the same (single) worker meanwhile.
    assert_eq!(
        dig(server.addr4(), &["+short", "ns.big.test", "A"]).trim(),
        "192.0.2.1"
    );
    for i in 0..n {
        let m = parse(&read_frame(&mut s).unwrap());
        assert_eq!(m.metadata.id, i);
        assert_eq!(m.answers.len(), 60);
    }
    writer.join().unwrap();
    // The server did have to keep output for later: buffering it allocated, and the
    // allocations are counted.
    assert!(server.stat("shardns_request_allocations_total") > 0.0);
}

/// A zone with an RRset too large for a UDP response.
fn big_txt_zone(n: usize) -> String {
    let mut z = String::from(
        "$TTL 300\n@ SOA ns hostmaster 1 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n",
    );
    for i in 0..n {
        z.push_str(&format!("big TXT \"record {i:03} {}\"\n", "x".repeat(80)));
    }
    z
}

#[test]
fn truncated_over_udp_then_complete_over_tcp() {
    let dir = TempDir::new("trunc");
    let zone = dir.write("big.test.zone", &big_txt_zone(60));
    let zarg = format!("big.test={}", zone.display());
    let server = Server::start_in(dir, &["--zone", &zarg, "--workers", "2"]);
    for addr in [server.addr4(), server.addr6()] {
        let sock = udp_client(addr);
        for edns in [None, Some(1232), Some(4096)] {
            let r = udp_exchange(&sock, &query(21, "big.big.test", 16, edns)).unwrap();
            assert!(r.len() <= edns.unwrap_or(512) as usize);
            let m = parse(&r);
            assert!(m.metadata.truncation, "TC over UDP with {edns:?}");
        }
        let r = tcp_exchange(addr, &[query(22, "big.big.test", 16, None)]);
        let m = parse(&r[0]);
        assert!(!m.metadata.truncation);
        assert_eq!(m.answers.len(), 60);
        // dig retries over TCP by itself when it sees TC.
        let out = dig(addr, &["big.big.test", "TXT"]);
        assert!(out.contains("Truncated, retrying in TCP mode"), "{out}");
        assert!(out.contains("ANSWER: 60"), "{out}");
        let out = kdig(addr, &["+short", "big.big.test", "TXT"]);
        assert_eq!(
            out.lines().filter(|l| l.starts_with("\"record ")).count(),
            60,
            "{out}"
        );
    }
    assert!(server.stat("shardns_truncated_total") >= 6.0);
}

/// `curl` of `url`: its output, and how long it took (at most 5 s).
fn curl_timed(url: &str) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "5", url])
        .output()
        .expect("run curl (Debian package curl)");
    (out, started.elapsed())
}

/// A client that sends a request a byte every 200 ms, for at most 6 s (`connected` once
/// it is connected): returns when the server closed the connection, counted from the
/// connect, or `None` if it never did.
fn slowloris(addr: &str, connected: std::sync::mpsc::Sender<()>) -> Option<Duration> {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nonblocking(true).unwrap();
    connected.send(()).unwrap();
    let request = b"GET /metrics HTTP/1.0\r\nHost: slow\r\nX-Pad: aaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    for byte in request.iter().cycle() {
        if started.elapsed() > Duration::from_secs(6) {
            return None;
        }
        let mut b = [0u8; 64];
        match s.read(&mut b) {
            Ok(0) => return Some(started.elapsed()),
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => return Some(started.elapsed()),
            _ => {}
        }
        if s.write(std::slice::from_ref(byte)).is_err() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

#[test]
fn slow_http_clients_delay_no_scrape_and_are_cut_at_their_deadline() {
    let http = format!("127.0.0.1:{}", free_port());
    let _server = Server::start("slow-http", &["--workers", "1", "--stats-http", &http]);
    let url = format!("http://{http}/metrics");
    // The server is up: a scrape alone.
    let (out, _) = curl_timed(&url);
    assert!(out.status.success(), "{out:?}");

    let (tx, rx) = std::sync::mpsc::channel();
    let slow: Vec<_> = (0..6)
        .map(|_| {
            let (http, tx) = (http.clone(), tx.clone());
            std::thread::spawn(move || slowloris(&http, tx))
        })
        .collect();
    // Every slow client is connected (and dawdling) before the scrape.
    for _ in 0..6 {
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
    }
    let (out, took) = curl_timed(&url);
    assert!(out.status.success(), "{out:?} after {took:?}");
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(body.contains("shardns_queries_total"), "{body}");
    assert!(took < Duration::from_secs(2), "the scrape took {took:?}");
    // Each slow client is cut at its 2 s deadline, however it keeps sending.
    for t in slow {
        let cut = t.join().unwrap();
        let cut = cut.expect("a slow client was never cut");
        assert!(
            cut >= Duration::from_millis(1900) && cut < Duration::from_millis(4500),
            "cut after {cut:?}"
        );
    }

    // A flood of idle connections, more than are served at once: the oldest make room.
    let idle: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(&http).unwrap())
        .collect();
    let (out, took) = curl_timed(&url);
    assert!(out.status.success(), "{out:?} after {took:?}");
    assert!(took < Duration::from_secs(2), "the scrape took {took:?}");
    drop(idle);
}

#[test]
fn statistics_over_the_control_socket_and_http() {
    let http_port = free_port();
    let http = format!("127.0.0.1:{http_port}");
    let server = Server::start("stats", &["--workers", "2", "--stats-http", &http]);
    let sock4 = udp_client(server.addr4());
    let sock6 = udp_client(server.addr6());
    for i in 0..20 {
        assert!(udp_exchange(&sock4, &query(i, "www.example.test", 1, None)).is_some());
        assert!(udp_exchange(&sock6, &query(i, "www.example.test", 28, None)).is_some());
    }
    assert!(udp_exchange(&sock4, &query(99, "nope.example.test", 15, None)).is_some());
    tcp_exchange(
        server.addr4(),
        &[
            query(1, "example.test", 6, None),
            query(2, "example.test", 2, None),
        ],
    );

    let out = server.control("stats");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stat_value(&text, "shardns_queries_total{transport=\"udp\",ip=\"4\"}"),
        21.0
    );
    assert_eq!(
        stat_value(&text, "shardns_queries_total{transport=\"udp\",ip=\"6\"}"),
        20.0
    );
    assert_eq!(
        stat_value(&text, "shardns_queries_total{transport=\"tcp\",ip=\"4\"}"),
        2.0
    );
    assert_eq!(
        stat_value(&text, "shardns_queries_by_type_total{type=\"A\"}"),
        20.0
    );
    assert_eq!(
        stat_value(&text, "shardns_queries_by_type_total{type=\"AAAA\"}"),
        20.0
    );
    assert_eq!(
        stat_value(&text, "shardns_queries_by_type_total{type=\"MX\"}"),
        1.0
    );
    assert_eq!(
        stat_value(&text, "shardns_responses_total{rcode=\"NXDOMAIN\"}"),
        1.0
    );
    assert_eq!(stat_value(&text, "shardns_responses_total"), 43.0);
    assert_eq!(stat_value(&text, "shardns_worker_queries_total"), 43.0);
    assert_eq!(
        stat_value(&text, "shardns_request_locks_total"),
        0.0,
        "no lock on the answer path"
    );
    assert_eq!(stat_value(&text, "shardns_request_locks_per_query"), 0.0);
    assert_eq!(
        stat_value(&text, "shardns_request_allocations_total"),
        0.0,
        "no allocation on the answer path"
    );
    assert_eq!(stat_value(&text, "shardns_workers"), 2.0);
    assert_eq!(stat_value(&text, "shardns_zones"), 1.0);

    let mut s = TcpStream::connect(&http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.0 200 OK\r\n"), "{reply}");
    let body = reply.split_once("\r\n\r\n").unwrap().1;
    assert_eq!(stat_value(body, "shardns_responses_total"), 43.0);
    let mut s = TcpStream::connect(&http).unwrap();
    s.write_all(b"GET /nope HTTP/1.0\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.0 404"), "{reply}");
}

#[test]
fn query_logging_is_opt_in() {
    let mut quiet = Server::start("quiet", &["--workers", "1"]);
    let mut loud = Server::start("loud", &["--workers", "1", "--log-queries"]);
    for s in [&quiet, &loud] {
        dig(s.addr4(), &["+short", "mail.example.test", "A"]);
        dig(s.addr6(), &["+short", "+tcp", "nope.example.test", "TXT"]);
    }
    loud.wait_for_log("mail.example.test. A NOERROR", Duration::from_secs(5));
    loud.wait_for_log(
        "tcp nope.example.test. TXT NXDOMAIN",
        Duration::from_secs(5),
    );
    // Logging takes stderr's lock, and the counter says so.
    assert!(loud.stat("shardns_request_locks_total") >= 2.0);
    quiet.wait_for_log("ready", Duration::from_secs(1));
    assert!(!quiet.log().contains("shardns::query"), "{}", quiet.log());
    assert_eq!(quiet.stat("shardns_request_locks_total"), 0.0);
}
