//! End-to-end: DNS over HTTPS (RFC 8484, HTTP/2) with clients we did not write: `kdig
//! +https` (POST) and `kdig +https-get` (Knot's, on nghttp2 and GnuTLS), `dig +https` and
//! `dig +https-get` (BIND 9.18's), for an authoritative zone and through a forwarding
//! resolver; `curl --http2` for the HTTP errors of RFC 8484 §4.1 and RFC 9110 (404, 405,
//! 413, 415, 400) and Cache-Control (§5.1). Bad input: a TLS handshake that never
//! finishes, many handshakes at once, and the HTTP/2 "rapid reset" flood (CVE-2023-44487)
//! written frame by frame through `openssl s_client -alpn h2`: GOAWAY ENHANCE_YOUR_CALM,
//! with UDP and TCP served throughout.
//!
//! Certificates are made at test time with `openssl req`. Everything listens on
//! 127.0.0.1; every process is killed on drop.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A server with DNS over HTTPS on its own port (certificate for `dns.test`), plus
/// `extra` flags.
fn start_doh(tag: &str, config: Option<&str>, extra: &[&str]) -> (Server, SocketAddr, TempDir) {
    start_encrypted(tag, "--https-listen", config, extra)
}

fn ca(certs: &TempDir) -> String {
    certs.path().join("dns.test.crt").display().to_string()
}

/// `kdig` over HTTPS (`how`: `+https` for POST, `+https-get`) with our CA and name checked.
fn kdig_https(addr: SocketAddr, certs: &TempDir, how: &str, args: &[&str]) -> String {
    let mut all = vec![
        format!("+tls-ca={}", ca(certs)),
        "+tls-hostname=dns.test".to_string(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    // The transport last: kdig 3.2 takes a +tls-* option after it as a switch back to TLS.
    all.push(how.to_string());
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    kdig(addr, &all)
}

/// `curl --http2` to `path` (method `method`, body `body` with `content_type`): the HTTP
/// version, status and the response headers.
fn curl(
    addr: SocketAddr,
    certs: &TempDir,
    method: &str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> (String, String) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = TempDir::new(&format!("doh-curl-body-{}", N.fetch_add(1, Relaxed)));
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "--http2", "--max-time", "5", "-o", "/dev/null"])
        .args(["-D", "-", "-w", "\n%{http_version} %{http_code}"])
        .arg("--cacert")
        .arg(ca(certs))
        .arg("--resolve")
        .arg(format!("dns.test:{}:127.0.0.1", addr.port()))
        .args(["-X", method]);
    if let Some((ct, data)) = body {
        let file = dir.write("body", "");
        std::fs::write(&file, data).unwrap();
        cmd.args(["-H", &format!("content-type: {ct}")])
            .arg("--data-binary")
            .arg(format!("@{}", file.display()));
    }
    let out = cmd
        .arg(format!("https://dns.test:{}{path}", addr.port()))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = text.lines().last().unwrap_or("").to_string();
    (status, text.to_ascii_lowercase())
}

/// base64url without padding, as RFC 8484 §4.1 asks for the `dns` parameter.
fn base64url(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut s = String::new();
    for c in data.chunks(3) {
        let n = c.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - c.len()));
        for i in 0..=c.len() {
            s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    s
}

#[test]
fn kdig_and_dig_over_https_for_our_zone() {
    let (server, https, certs) = start_doh("doh-kdig", None, &["--workers", "2"]);
    // POST, then GET, certificate checked.
    let out = kdig_https(https, &certs, "+https", &["www.example.test", "A"]);
    assert!(
        out.contains("HTTP session (HTTP/2-POST)-(dns.test/dns-query)-(status: 200)"),
        "{out}"
    );
    assert!(out.contains("192.0.2.10"), "{out}");
    assert!(out.contains("status: NOERROR"), "{out}");
    let out = kdig_https(
        https,
        &certs,
        "+https-get",
        &["+padding", "www.example.test", "A"],
    );
    assert!(
        out.contains("HTTP session (HTTP/2-GET)-(dns.test/dns-query)-(status: 200)"),
        "{out}"
    );
    assert!(out.contains("192.0.2.10"), "{out}");
    // Responses on an encrypted transport are padded to a multiple of 468 octets.
    assert!(out.contains("Received 468 B"), "{out}");
    // A name not ours: REFUSED (no resolver role here).
    let out = kdig_https(https, &certs, "+https", &["elsewhere.invalid", "A"]);
    assert!(out.contains("status: REFUSED"), "{out}");
    // BIND's dig, POST and GET.
    for how in ["+https", "+https-get"] {
        let out = dig(https, &[how, "www.example.test", "A"]);
        assert!(out.contains("192.0.2.10"), "{how}: {out}");
        assert!(out.contains("(127.0.0.1) (HTTPS"), "{how}: {out}");
    }
    // The wrong name for the certificate: kdig refuses the handshake.
    let bad = kdig(
        https,
        &[
            &format!("+tls-ca={}", ca(&certs)),
            "+tls-hostname=other.test",
            "www.example.test",
            "+https",
        ],
    );
    assert!(!bad.contains("192.0.2.10"), "{bad}");
    assert_eq!(
        server.stat("shardns_queries_total{transport=\"https\",ip=\"4\"}"),
        5.0
    );
    // UDP and TCP as before.
    assert!(dig(server.addr, &["+short", "www.example.test"]).contains("192.0.2.10"));
}

#[test]
fn http_errors_and_cache_control() {
    let (server, https, certs) = start_doh("doh-curl", None, &["--workers", "1"]);
    let q = base64url(&query(0, "www.example.test", 1, None));
    let (status, head) = curl(https, &certs, "GET", &format!("/dns-query?dns={q}"), None);
    assert_eq!(status, "2 200", "{head}");
    assert!(
        head.contains("content-type: application/dns-message"),
        "{head}"
    );
    // The zone's TTL is 3600 everywhere in this answer.
    assert!(head.contains("cache-control: max-age=3600"), "{head}");
    // A name error: the SOA's negative TTL (its minimum, 300).
    let nx = base64url(&query(0, "nothing.example.test", 1, None));
    let (status, head) = curl(https, &certs, "GET", &format!("/dns-query?dns={nx}"), None);
    assert_eq!(status, "2 200", "{head}");
    assert!(head.contains("cache-control: max-age=300"), "{head}");
    // POST of the same query.
    let raw = query(0x1234, "www.example.test", 1, None);
    let dm = "application/dns-message";
    let (status, _) = curl(https, &certs, "POST", "/dns-query", Some((dm, &raw)));
    assert_eq!(status, "2 200");
    type Case<'a> = (&'a str, String, Option<(&'a str, Vec<u8>)>, &'a str);
    let cases: [Case<'_>; 8] = [
        ("GET", format!("/other?dns={q}"), None, "404"),
        ("PUT", "/dns-query".into(), Some((dm, raw.clone())), "405"),
        (
            "POST",
            "/dns-query".into(),
            Some(("text/plain", raw.clone())),
            "415",
        ),
        (
            "POST",
            "/dns-query".into(),
            Some((dm, vec![0; 70_000])),
            "413",
        ),
        ("POST", "/dns-query".into(), Some((dm, vec![0; 5])), "400"),
        ("GET", "/dns-query?dns=!!!!".into(), None, "400"),
        ("GET", "/dns-query?dns=AAAA".into(), None, "400"),
        ("GET", "/dns-query?name=www".into(), None, "400"),
    ];
    for (method, path, body, want) in &cases {
        let body = body.as_ref().map(|(ct, b)| (*ct, b.as_slice()));
        let (status, head) = curl(https, &certs, method, path, body);
        assert_eq!(status, format!("2 {want}"), "{method} {path}: {head}");
        if *want == "405" {
            assert!(head.contains("allow: get, post"), "{head}");
        }
    }
    assert!(server.stat("shardns_https_events_total{event=\"rejected\"}") >= 8.0);
    assert_eq!(
        server.stat("shardns_queries_total{transport=\"https\",ip=\"4\"}"),
        3.0
    );
    assert!(dig(server.addr, &["+short", "www.example.test"]).contains("192.0.2.10"));
    assert!(dig(server.addr, &["+tcp", "+short", "www.example.test"]).contains("192.0.2.10"));
}

#[test]
fn the_resolver_answers_over_https() {
    // An authoritative shardns for other.test, and a resolver with DoH forwarding to it.
    let (_auth, forward) = other_test_upstream("doh-resolver");
    let (resolver, https, certs) = start_doh(
        "doh-resolver",
        None,
        &[
            "--recursion",
            // The default local zone test. (RFC 6761, as Unbound) would answer the names.
            "--local-zone",
            "test. nodefault",
            "--no-validation",
            "--forward",
            &forward,
            "--allow-recursion",
            "127.0.0.0/8",
            "--workers",
            "1",
        ],
    );
    // A cache miss (the answer comes after the upstream's), then hits, POST and GET.
    let out = kdig_https(https, &certs, "+https", &["www.other.test", "A"]);
    assert!(out.contains("192.0.2.77"), "{out}");
    let out = kdig_https(https, &certs, "+https-get", &["www.other.test", "A"]);
    assert!(out.contains("192.0.2.77"), "{out}");
    let out = dig(https, &["+https", "www.other.test", "A"]);
    assert!(out.contains("192.0.2.77"), "{out}");
    assert_eq!(resolver.stat("shardns_resolver_cache_misses_total"), 1.0);
    assert_eq!(resolver.stat("shardns_resolver_cache_hits_total"), 2.0);
    // A miss on a name the upstream does not have, through GET.
    let out = kdig_https(https, &certs, "+https-get", &["nothing.other.test", "A"]);
    assert!(out.contains("status: NXDOMAIN"), "{out}");
}

#[test]
fn stalled_and_many_handshakes_are_bounded() {
    let config = "[limits]\ntls_handshake_timeout_ms = 700\ntcp_connections = 60\n\
                  tcp_connections_per_worker = 30\ntcp_connections_per_client = 0\n";
    let (server, https, certs) = start_doh("doh-handshakes", Some(config), &["--workers", "2"]);
    // A handshake that never finishes: closed after the handshake timeout.
    let mut silent = TcpStream::connect(https).unwrap();
    let start = Instant::now();
    assert!(closed_by_server(&mut silent, Duration::from_secs(5)));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    // Thousands of handshakes: 2,000 connections, each sending garbage for a ClientHello
    // and 200 of them left silent; at most the TCP limits stay open, UDP and TCP answer.
    let mut held = Vec::new();
    for i in 0..2_000 {
        let Ok(mut s) = TcpStream::connect(https) else {
            continue;
        };
        if i % 10 == 0 {
            held.push(s);
        } else {
            let _ = s.write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]);
        }
    }
    let open = server.stat("shardns_tcp_connections_open");
    assert!(open <= 60.0, "{open} connections open");
    let udp = dig(server.addr, &["www.example.test", "+short"]);
    assert!(udp.contains("192.0.2.10"), "{udp}");
    let tcp = dig(server.addr, &["+tcp", "www.example.test", "+short"]);
    assert!(tcp.contains("192.0.2.10"), "{tcp}");
    // The silent ones go at their handshake timeout (wait for that, not for a time); then
    // DoH serves a new client.
    server.wait_for_stat("shardns_tcp_connections_open", 0.0, Duration::from_secs(10));
    let out = kdig_https(https, &certs, "+https", &["www.example.test", "A"]);
    assert!(out.contains("192.0.2.10"), "{out}");
    assert!(server.stat("shardns_tls_handshakes_total{result=\"timeout\"}") >= 1.0);
    assert!(server.stat("shardns_tls_handshakes_total{result=\"failed\"}") >= 100.0);
    held.clear();
}

/// A raw HTTP/2 client through `openssl s_client -alpn h2`: frames written by hand.
struct RawH2 {
    child: Child,
    frames: mpsc::Receiver<(u8, u32, Vec<u8>)>,
}

impl RawH2 {
    fn connect(addr: SocketAddr, certs: &TempDir) -> Self {
        let mut child = Command::new("openssl")
            .args(["s_client", "-quiet", "-verify_return_error", "-alpn", "h2"])
            .args(["-servername", "dns.test", "-connect"])
            .arg(addr.to_string())
            .arg("-CAfile")
            .arg(ca(certs))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run openssl s_client");
        let mut out = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || loop {
            let mut head = [0u8; 9];
            if out.read_exact(&mut head).is_err() {
                return;
            }
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0; len];
            if out.read_exact(&mut payload).is_err() {
                return;
            }
            let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
            if tx.send((head[3], stream, payload)).is_err() {
                return;
            }
        });
        let mut c = Self { child, frames };
        c.send(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        c.send(&frame(4, 0, 0, &[]));
        c
    }

    fn send(&mut self, data: &[u8]) {
        let stdin = self.child.stdin.as_mut().unwrap();
        // The server may have closed the connection already.
        let _ = stdin.write_all(data).and_then(|()| stdin.flush());
    }

    /// Frames until the connection ends or `limit` passes.
    fn frames_until_closed(&self, limit: Duration) -> (Vec<(u8, u32, Vec<u8>)>, bool) {
        let end = Instant::now() + limit;
        let mut got = Vec::new();
        loop {
            match self
                .frames
                .recv_timeout(end.saturating_duration_since(Instant::now()))
            {
                Ok(f) => got.push(f),
                Err(mpsc::RecvTimeoutError::Disconnected) => return (got, true),
                Err(mpsc::RecvTimeoutError::Timeout) => return (got, false),
            }
        }
    }
}

impl Drop for RawH2 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// HEADERS (END_STREAM, END_HEADERS) of a DoH GET for `www.example.test`, HPACK without
/// Huffman coding: :method GET, :scheme https (static table), :path and :authority
/// (literals with indexed names).
fn get_headers(stream: u32, q: &str) -> Vec<u8> {
    let path = format!("/dns-query?dns={q}");
    let mut block = vec![0x82, 0x87, 0x04, path.len() as u8];
    block.extend_from_slice(path.as_bytes());
    block.extend_from_slice(&[0x01, 8]);
    block.extend_from_slice(b"dns.test");
    frame(1, 0x5, stream, &block)
}

/// RST_STREAM with CANCEL.
fn rst(stream: u32) -> Vec<u8> {
    frame(3, 0, stream, &8u32.to_be_bytes())
}

/// The error code of the GOAWAY among `frames`, if one came.
fn goaway(frames: &[(u8, u32, Vec<u8>)]) -> Option<u32> {
    frames
        .iter()
        .find(|(kind, _, p)| *kind == 7 && p.len() >= 8)
        .map(|(_, _, p)| u32::from_be_bytes([p[4], p[5], p[6], p[7]]))
}

const ENHANCE_YOUR_CALM: u32 = 0xb;

#[test]
fn rapid_reset_gets_goaway_enhance_your_calm() {
    let config = "[limits]\nhttps_resets_per_second = 10\n";
    let (server, https, certs) = start_doh("doh-reset", Some(config), &["--workers", "1"]);
    let q = base64url(&query(0, "www.example.test", 1, None));
    // First, that the raw client works: one GET answered on stream 1.
    let mut ok = RawH2::connect(https, &certs);
    ok.send(&get_headers(1, &q));
    let end = Instant::now() + Duration::from_secs(5);
    let mut data = false;
    while !data && Instant::now() < end {
        if let Ok((kind, stream, _)) = ok.frames.recv_timeout(Duration::from_millis(200)) {
            data = kind == 0 && stream == 1;
        }
    }
    assert!(data, "no DATA frame for a plain GET");
    drop(ok);
    // A burst: 5,000 streams opened and reset at once.
    let mut burst = RawH2::connect(https, &certs);
    let mut flood = Vec::new();
    for i in 0..5_000u32 {
        flood.extend_from_slice(&get_headers(2 * i + 1, &q));
        flood.extend_from_slice(&rst(2 * i + 1));
    }
    burst.send(&flood);
    let (frames, closed) = burst.frames_until_closed(Duration::from_secs(10));
    assert_eq!(
        goaway(&frames),
        Some(ENHANCE_YOUR_CALM),
        "{} frames",
        frames.len()
    );
    assert!(closed, "connection left open after GOAWAY");
    // Spread out: one stream opened and reset at a time, 40 within a second, past the
    // limit of 10 per second.
    let mut slow = RawH2::connect(https, &certs);
    for i in 0..40u32 {
        let mut pair = get_headers(2 * i + 1, &q);
        pair.extend_from_slice(&rst(2 * i + 1));
        slow.send(&pair);
        std::thread::sleep(Duration::from_millis(20));
    }
    let (frames, closed) = slow.frames_until_closed(Duration::from_secs(5));
    assert_eq!(
        goaway(&frames),
        Some(ENHANCE_YOUR_CALM),
        "{} frames",
        frames.len()
    );
    assert!(closed, "connection left open after GOAWAY");
    assert!(server.stat("shardns_https_events_total{event=\"calm\"}") >= 2.0);
    // Everything else unharmed.
    assert!(dig(server.addr, &["+short", "www.example.test"]).contains("192.0.2.10"));
    assert!(dig(server.addr, &["+tcp", "+short", "www.example.test"]).contains("192.0.2.10"));
    let out = kdig_https(https, &certs, "+https", &["www.example.test", "A"]);
    assert!(out.contains("192.0.2.10"), "{out}");
}

#[test]
fn dnstap_logs_doh_queries_as_doh() {
    let dir = TempDir::new("doh-dnstap-out");
    let file = dir.path().join("tap.fstrm");
    let file_arg = file.display().to_string();
    let (mut server, https, certs) = start_doh(
        "doh-dnstap",
        None,
        &["--dnstap-file", &file_arg, "--workers", "1"],
    );
    let out = kdig_https(https, &certs, "+https-get", &["www.example.test", "A"]);
    assert!(out.contains("192.0.2.10"), "{out}");
    server.wait_for_stat("shardns_dnstap_frames_total", 2.0, Duration::from_secs(10));
    assert!(server.terminate().success());
    let read = Command::new("dnstap-read")
        .arg("-y")
        .arg(&file)
        .output()
        .expect("run dnstap-read");
    let yaml = String::from_utf8_lossy(&read.stdout);
    // dnstap-read reads both messages (BIND 9.18 prints every protocol but TCP as UDP).
    assert_eq!(yaml.matches("type: AUTH_QUERY").count(), 1, "{yaml}");
    assert_eq!(yaml.matches("type: AUTH_RESPONSE").count(), 1, "{yaml}");
    assert!(yaml.contains("www.example.test"), "{yaml}");
    // So the protocol is read from the frames: socket_family INET (field 2 = 1) then
    // socket_protocol DOH (field 3 = 4), in both messages.
    let raw = std::fs::read(&file).unwrap();
    let doh = raw.windows(4).filter(|w| *w == [0x10, 1, 0x18, 4]).count();
    assert_eq!(doh, 2, "socket_protocol DOH in {} octets", raw.len());
}

#[test]
fn many_streams_in_flight_on_reused_connections() {
    // dnsperf 2.10 (-m doh, GET): 2 connections, up to 20 queries in flight, for a second.
    // It takes one response per TLS read, so this also checks that each response has a
    // record of its own.
    let (server, https, _certs) = start_doh("doh-dnsperf", None, &["--workers", "1"]);
    let dir = TempDir::new("doh-dnsperf-queries");
    let queries = dir.write("q.txt", "www.example.test A\nexample.test SOA\n");
    let out = Command::new("dnsperf")
        .arg("-d")
        .arg(&queries)
        .args([
            "-l",
            "1",
            "-c",
            "2",
            "-q",
            "20",
            "-m",
            "doh",
            "-s",
            "127.0.0.1",
        ])
        .args(["-p", &https.port().to_string()])
        .output()
        .expect("run dnsperf");
    let text = String::from_utf8_lossy(&out.stdout);
    let count = |what: &str| -> u64 {
        let line = text.lines().find(|l| l.trim_start().starts_with(what));
        let line = line.unwrap_or_else(|| panic!("no {what} in {text}"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    assert_eq!(count("Queries lost:"), 0, "{text}");
    assert!(count("Queries completed:") >= 100, "{text}");
    assert!(text.contains("NOERROR"), "{text}");
    let answered = server.stat("shardns_queries_total{transport=\"https\",ip=\"4\"}");
    assert!(answered >= count("Queries completed:") as f64, "{answered}");
}

#[test]
fn certificate_reloaded_on_sighup() {
    let (mut server, https, certs) = start_doh("doh-reload", None, &["--workers", "1"]);
    assert!(presented_subject(https, Some("h2")).contains("CN = dns.test"));
    // New files in place of the old ones, then SIGHUP: new connections get the new one,
    // for DoH as for DoT.
    let (cert2, key2) = make_cert(certs.path(), "dns2.test");
    std::fs::copy(&cert2, certs.path().join("dns.test.crt")).unwrap();
    std::fs::copy(&key2, certs.path().join("dns.test.key")).unwrap();
    server.sighup();
    server.wait_for_log("TLS certificate reloaded", Duration::from_secs(10));
    assert!(presented_subject(https, Some("h2")).contains("CN = dns2.test"));
    let ca2 = certs.path().join("dns.test.crt").display().to_string();
    let out = kdig(
        https,
        &[
            &format!("+tls-ca={ca2}"),
            "+tls-hostname=dns2.test",
            "www.example.test",
            "+https",
        ],
    );
    assert!(out.contains("192.0.2.10"), "{out}");
}

#[test]
fn an_unfinished_post_body_hits_the_read_timeout() {
    let config = "[limits]\ntcp_read_timeout_ms = 600\ntcp_idle_timeout_ms = 30000\n";
    let (server, https, certs) = start_doh("doh-slow-post", Some(config), &["--workers", "1"]);
    // HEADERS of a POST (no END_STREAM), then nothing: :method POST, :scheme https,
    // :path /dns-query, :authority, then content-type (static index 31)
    // application/dns-message.
    let mut block = vec![0x83, 0x87, 0x04, 10];
    block.extend_from_slice(b"/dns-query");
    block.extend_from_slice(&[0x01, 8]);
    block.extend_from_slice(b"dns.test");
    block.extend_from_slice(&[0x0f, 0x10, 23]);
    block.extend_from_slice(b"application/dns-message");
    let mut slow = RawH2::connect(https, &certs);
    slow.send(&frame(1, 0x4, 1, &block));
    let start = Instant::now();
    let (frames, closed) = slow.frames_until_closed(Duration::from_secs(10));
    let waited = start.elapsed();
    let kinds: Vec<(u8, u32)> = frames.iter().map(|f| (f.0, f.1)).collect();
    assert!(closed, "still open after {waited:?}, frames {kinds:?}");
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert!(server.stat("shardns_tcp_connections_closed_total{reason=\"read_timeout\"}") >= 1.0);
}

#[test]
fn the_per_connection_query_limit_sends_goaway() {
    // `--tcp-queries-per-connection 2`: curl fetches six URLs, reusing its connection while
    // it may; after each connection's second request the server sends GOAWAY, so curl needs
    // three connections, and every request is answered.
    let (server, https, certs) = start_doh(
        "doh-query-limit",
        None,
        &["--workers", "1", "--tcp-queries-per-connection", "2"],
    );
    let q = base64url(&query(0, "www.example.test", 1, None));
    let url = format!("https://dns.test:{}/dns-query?dns={q}", https.port());
    let out = Command::new("curl")
        .args(["-s", "--http2", "--max-time", "10"])
        .args(["-w", "%{http_code} %{num_connects}\n"])
        .arg("--cacert")
        .arg(ca(&certs))
        .arg("--resolve")
        .arg(format!("dns.test:{}:127.0.0.1", https.port()))
        .args((0..6).flat_map(|_| ["-o", "/dev/null", url.as_str()]))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines.iter().all(|l| l.starts_with("200 ")), "{text}");
    let connects: u32 = lines
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().parse::<u32>().unwrap())
        .sum();
    assert_eq!(connects, 3, "{text}");
    assert_eq!(
        server.stat("shardns_queries_total{transport=\"https\",ip=\"4\"}"),
        6.0
    );
    assert_eq!(
        server.stat("shardns_tcp_connections_closed_total{reason=\"query_limit\"}"),
        3.0
    );
}
