//! End-to-end: DNS over TLS (RFC 7858), NSID (RFC 5001) and DNS cookies (RFC 7873, RFC
//! 9018) with clients we did not write: `kdig +tls`, `dig +tls`, `openssl s_client` (a raw
//! TLS pipe for pipelined queries and for reading the certificate), `dig +nsid`, `dig
//! +cookie`, and Unbound forwarding over TLS. Bad input: a handshake that never finishes,
//! garbage instead of a ClientHello, many handshakes at once.
//!
//! Certificates are made at test time with `openssl req` (P-256, self-signed) in the test's
//! own directory. Everything listens on 127.0.0.1; every process is killed on drop.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server with DNS over TLS on its own port, the certificate for `dns.test`, and `extra`
/// flags; returns it and its TLS address.
fn start_dot(tag: &str, config: Option<&str>, extra: &[&str]) -> (Server, SocketAddr, TempDir) {
    let mut args = vec!["--workers", "2"];
    args.extend_from_slice(extra);
    start_encrypted(tag, "--tls-listen", config, &args)
}

/// A raw TLS pipe (`openssl s_client -quiet`): bytes in on stdin, decrypted bytes out.
struct SClient(Child);

impl SClient {
    fn connect(addr: SocketAddr, ca: &Path) -> Self {
        let child = Command::new("openssl")
            .args(["s_client", "-quiet", "-no_ign_eof", "-verify_return_error"])
            .arg("-connect")
            .arg(addr.to_string())
            .arg("-CAfile")
            .arg(ca)
            .args(["-servername", "dns.test", "-alpn", "dot"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run openssl s_client");
        Self(child)
    }

    fn send(&mut self, data: &[u8]) {
        let stdin = self.0.stdin.as_mut().unwrap();
        stdin.write_all(data).unwrap();
        stdin.flush().unwrap();
    }

    /// Reads `n` framed responses (the server's idle timeout bounds the wait).
    fn responses(&mut self, n: usize) -> Vec<Vec<u8>> {
        let out = self.0.stdout.as_mut().unwrap();
        let mut msgs = Vec::new();
        for _ in 0..n {
            let mut len = [0u8; 2];
            if out.read_exact(&mut len).is_err() {
                break;
            }
            let mut m = vec![0u8; u16::from_be_bytes(len) as usize];
            if out.read_exact(&mut m).is_err() {
                break;
            }
            msgs.push(m);
        }
        msgs
    }
}

impl Drop for SClient {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn kdig_and_dig_over_tls_with_nsid_and_padding() {
    let (server, tls, certs) = start_dot("dot-clients", None, &["--nsid", "ns1.shardns.test"]);
    let ca = certs.path().join("dns.test.crt").display().to_string();
    // kdig: the certificate checked against our CA and name; padding asked for.
    let out = kdig(
        tls,
        &[
            "+tls",
            &format!("+tls-ca={ca}"),
            "+tls-hostname=dns.test",
            "+nsid",
            "+padding",
            "www.example.test",
            "A",
        ],
    );
    assert!(out.contains("status: NOERROR"), "{out}");
    assert!(out.contains("192.0.2.10"), "{out}");
    assert!(out.contains("\"ns1.shardns.test\""), "{out}");
    assert!(out.contains("PADDING"), "{out}");
    // RFC 8467: padded responses are a multiple of 468 octets.
    assert!(out.contains("Received 468 B"), "{out}");
    // dig +tls, no padding asked: none sent.
    let out = dig(
        tls,
        &[
            "+tls",
            &format!("+tls-ca={ca}"),
            "+tls-hostname=dns.test",
            "www.example.test",
            "A",
        ],
    );
    assert!(out.contains("status: NOERROR"), "{out}");
    assert!(out.contains("192.0.2.11"), "{out}");
    assert!(out.contains("(TLS)"), "{out}");
    assert!(!out.contains("PAD:"), "{out}");
    // The same answers over plain UDP and TCP, never padded there.
    let out = dig(
        server.addr,
        &["+padding=128", "+nsid", "www.example.test", "A"],
    );
    assert!(out.contains("192.0.2.10") && !out.contains("PAD:"), "{out}");
    assert!(out.contains("ns1.shardns.test"), "{out}");
    assert!(server.stat("shardns_tls_handshakes_total{result=\"done\"}") >= 2.0);
    assert!(server.stat("shardns_queries_total{transport=\"tls\",ip=\"4\"}") >= 2.0);
}

#[test]
fn pipelined_queries_over_one_tls_connection() {
    let (_server, tls, certs) = start_dot("dot-pipeline", None, &[]);
    let mut c = SClient::connect(tls, &certs.path().join("dns.test.crt"));
    let names = ["www.example.test", "example.test", "mail.example.test"];
    let queries: Vec<Vec<u8>> = (0..30u16)
        .map(|id| query(id, names[id as usize % 3], 1, Some(1232)))
        .collect();
    // All thirty in one write: the server reads them as they come and answers each.
    c.send(&framed(&queries));
    let responses = c.responses(30);
    assert_eq!(responses.len(), 30);
    let mut ids: Vec<u16> = responses.iter().map(|m| parse(m).metadata.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..30).collect::<Vec<u16>>());
    for m in &responses {
        assert_eq!(
            parse(m).metadata.response_code,
            hickory_proto::op::ResponseCode::NoError
        );
    }
}

#[test]
fn nsid_and_cookies_with_dig() {
    let server = Server::start_on(
        "cookies",
        Ipv4Addr::LOCALHOST,
        Some(
            "[server]\nnsid = \"ns-a\"\ncookie_secrets = [\"e5e973e5a6b2a43f48e7dc849e37bfcf\"]\n",
        ),
        &[],
    );
    let a = server.addr;
    // NSID only when asked.
    assert!(dig(a, &["+nsid", "www.example.test"]).contains("NSID: 6e 73 2d 61 (\"ns-a\")"));
    assert!(!dig(a, &["+nocookie", "www.example.test"]).contains("NSID"));
    // A client cookie alone: a server cookie comes back (dig checks it echoes ours).
    let out = dig(a, &["+cookie", "www.example.test"]);
    let cookie = out
        .lines()
        .find_map(|l| l.strip_prefix("; COOKIE: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no cookie: {out}"))
        .to_string();
    assert_eq!(cookie.len(), 48, "client (8) and server (16) cookie: {out}");
    assert!(
        out.contains("(good)") && out.contains("status: NOERROR"),
        "{out}"
    );
    // RFC 9018: version 1, three reserved octets.
    assert_eq!(&cookie[16..24], "01000000");
    // Sent back: accepted, answered.
    let out = dig(a, &[&format!("+cookie={cookie}"), "www.example.test"]);
    assert!(
        out.contains("status: NOERROR") && out.contains("192.0.2.10"),
        "{out}"
    );
    // A server cookie that is not ours: BADCOOKIE over UDP with a fresh one; dig retries
    // with it and gets the answer.
    let forged = format!("{}{}", &cookie[..16], "01000000aaaaaaaabbbbbbbbcccccccc");
    let out = dig(
        a,
        &[
            &format!("+cookie={forged}"),
            "+nobadcookie",
            "www.example.test",
        ],
    );
    assert!(out.contains("status: BADCOOKIE"), "{out}");
    assert!(!out.contains("192.0.2.10"), "{out}");
    let out = dig(
        a,
        &[
            &format!("+cookie={forged}"),
            "+badcookie",
            "www.example.test",
        ],
    );
    assert!(out.contains("BADCOOKIE, retrying"), "{out}");
    assert!(
        out.contains("status: NOERROR") && out.contains("192.0.2.10"),
        "{out}"
    );
    // Over TCP the same forged cookie is answered (the connection proved the address).
    let out = dig(
        a,
        &[&format!("+cookie={forged}"), "+tcp", "www.example.test"],
    );
    assert!(out.contains("status: NOERROR"), "{out}");
    // A malformed COOKIE option (5 octets): FORMERR.
    let out = dig(
        a,
        &["+ednsopt=10:0102030405", "+nocookie", "www.example.test"],
    );
    assert!(out.contains("status: FORMERR"), "{out}");
    assert!(server.stat("shardns_bad_cookies_total") >= 2.0);
}

#[test]
fn stalled_garbage_and_many_handshakes_are_bounded() {
    let config = "[limits]\ntls_handshake_timeout_ms = 700\ntcp_connections = 60\n\
                  tcp_connections_per_worker = 30\ntcp_connections_per_client = 0\n";
    let (server, tls, _certs) = start_dot("dot-bad", Some(config), &[]);
    // Garbage instead of a ClientHello: an alert or a close, at once.
    let mut g = TcpStream::connect(tls).unwrap();
    g.write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5])
        .unwrap();
    g.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    g.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = [0u8; 64];
    let start = Instant::now();
    loop {
        match g.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => assert!(start.elapsed() < Duration::from_secs(3)),
        }
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "garbage kept open"
    );
    // A handshake that never finishes: closed after the handshake timeout.
    let mut silent = TcpStream::connect(tls).unwrap();
    let start = Instant::now();
    assert!(closed_by_server(&mut silent, Duration::from_secs(5)));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    // Many handshakes at once: 200 silent connections; at most the TCP limits stay open,
    // and UDP and TCP answer meanwhile.
    let mut held: Vec<TcpStream> = (0..200)
        .filter_map(|_| TcpStream::connect(tls).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let open = server.stat("shardns_tcp_connections_open");
    assert!(open <= 60.0, "{open} connections open");
    let udp = dig(server.addr, &["www.example.test", "+short"]);
    assert!(udp.contains("192.0.2.10"), "{udp}");
    let tcp = dig(server.addr, &["+tcp", "www.example.test", "+short"]);
    assert!(tcp.contains("192.0.2.10"), "{tcp}");
    // And DoT still serves a new client.
    let out = kdig(tls, &["+tls", "www.example.test", "A"]);
    assert!(out.contains("status: NOERROR"), "{out}");
    // The silent ones go at their handshake timeout: wait for that, not for a time.
    server.wait_for_stat("shardns_tcp_connections_open", 0.0, Duration::from_secs(10));
    assert!(server.stat("shardns_tls_handshakes_total{result=\"timeout\"}") >= 1.0);
    assert!(server.stat("shardns_tls_handshakes_total{result=\"failed\"}") >= 1.0);
    held.clear();
}

#[test]
fn certificate_reloaded_on_sighup_open_connections_continue() {
    let (server, tls, certs) = start_dot("dot-reload", None, &["--tcp-idle-timeout-ms", "30000"]);
    assert!(presented_subject(tls, None).contains("CN = dns.test"));
    // A connection opened with the first certificate.
    let mut old = SClient::connect(tls, &certs.path().join("dns.test.crt"));
    old.send(&framed(&[query(1, "www.example.test", 1, None)]));
    assert_eq!(old.responses(1).len(), 1);
    // New files in place of the old ones, then SIGHUP.
    let (cert2, key2) = make_cert(certs.path(), "dns2.test");
    std::fs::copy(&cert2, certs.path().join("dns.test.crt")).unwrap();
    std::fs::copy(&key2, certs.path().join("dns.test.key")).unwrap();
    let mut server = server;
    server.sighup();
    server.wait_for_log("TLS certificate reloaded", Duration::from_secs(10));
    assert!(presented_subject(tls, None).contains("CN = dns2.test"));
    // The old connection still answers.
    old.send(&framed(&[query(2, "www.example.test", 1, None)]));
    let r = old.responses(1);
    assert_eq!(r.len(), 1);
    assert_eq!(parse(&r[0]).metadata.id, 2);
}

#[test]
fn unbound_forwards_over_tls() {
    let Some(unbound) = find_program("unbound", "UNBOUND") else {
        eprintln!("skipped: no unbound");
        return;
    };
    let (_server, tls, certs) = start_dot("dot-unbound", None, &[]);
    let dir = TempDir::new("dot-unbound-resolver");
    // Unbound answers names under test. itself (RFC 6761) unless told not to.
    let port = free_port();
    let conf = dir.write(
        "unbound.conf",
        &format!(
            "server:\n  interface: 127.0.0.1@{port}\n  do-daemonize: no\n  chroot: \"\"\n  \
             username: \"\"\n  pidfile: \"\"\n  directory: \"{dir}\"\n  use-syslog: no\n  \
             logfile: \"\"\n  do-ip6: no\n  module-config: \"iterator\"\n  \
             tls-cert-bundle: \"{ca}\"\n  access-control: 127.0.0.0/8 allow\n  \
             do-not-query-localhost: no\n  num-threads: 1\n  \
             local-zone: \"test.\" nodefault\n{fence}\
             forward-zone:\n  name: \"example.test.\"\n  forward-addr: {ip}@{tport}#dns.test\n  \
             forward-tls-upstream: yes\n",
            dir = dir.path().display(),
            ca = certs.path().join("dns.test.crt").display(),
            ip = tls.ip(),
            tport = tls.port(),
            fence = unbound_fence(),
        ),
    );
    let mut cmd = Command::new(unbound);
    cmd.arg("-d").arg("-c").arg(&conf);
    let mut daemon = Daemon::spawn("unbound", cmd, dir.path().join("unbound.log"));
    let resolver = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    // Unbound needs a moment to bind; bounded retries.
    let mut out = String::new();
    for _ in 0..50 {
        out = dig(resolver, &["www.example.test", "A"]);
        if out.contains("192.0.2.10") {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        daemon.check_alive();
    }
    assert!(
        out.contains("status: NOERROR") && out.contains("192.0.2.10"),
        "{out}\n{}",
        daemon.log()
    );
}
