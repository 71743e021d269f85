//! End-to-end: DNS over QUIC (RFC 9250) with a client we did not write, `kdig +quic`
//! (Knot's, built on ngtcp2 and GnuTLS): answers with the certificate checked, padding,
//! NSID, statistics. Bad input: datagrams of garbage, of QUIC-looking garbage and of
//! unknown versions to the QUIC port (no crash; UDP, TCP and DoQ still served), and many
//! half-open connections: real Initial packets captured from kdig (it is pointed at a
//! socket of the test first), each sent from its own port and never continued: the
//! server accepts some, asks the rest to prove their address (Retry), and stays bounded.
//!
//! Zone transfers over QUIC (RFC 9250 §4.2): `kdig +quic AXFR` of a zone of 2,000 records
//! (seven messages on one stream) gets the records of the same transfer over TCP. (Larger
//! ones go out whole, but kdig 3.2 stops reading at the stream's end with the last
//! messages of about a megabyte still unread.)
//!
//! Certificates are made at test time with `openssl req`. Everything listens on 127.0.0.1;
//! every process is killed on drop.

mod common;

use common::*;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A server with DNS over QUIC on a port of its own, plus `extra` flags.
fn start_doq(tag: &str, extra: &[&str]) -> (Server, SocketAddr, TempDir) {
    start_encrypted(tag, "--quic-listen", None, extra)
}

/// `kdig +quic` with our CA and name checked.
fn kdig_quic(quic: SocketAddr, certs: &TempDir, args: &[&str]) -> String {
    let ca = certs.path().join("dns.test.crt").display().to_string();
    // +quic last: kdig 3.2 takes a +tls-* option after it as a switch back to TLS.
    let mut all = vec![
        format!("+tls-ca={ca}"),
        "+tls-hostname=dns.test".to_string(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    all.push("+quic".to_string());
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    kdig(quic, &all)
}

fn quic_answers_www(quic: SocketAddr, certs: &TempDir) -> bool {
    kdig_quic(quic, certs, &["+short", "www.example.test", "A"]).contains("192.0.2.10")
}

#[test]
fn kdig_over_quic_with_the_certificate_checked() {
    let (server, quic, certs) = start_doq("doq-kdig", &["--workers", "2", "--nsid", "ns-q"]);
    let out = kdig_quic(
        quic,
        &certs,
        &["+nsid", "+padding", "www.example.test", "A"],
    );
    assert!(out.contains("QUIC session (QUICv1)-(TLS1.3)"), "{out}");
    // RFC 9250 §4.2.1: the Message ID is 0 both ways.
    assert!(out.contains("status: NOERROR; id: 0"), "{out}");
    assert!(out.contains("192.0.2.10"), "{out}");
    assert!(out.contains("\"ns-q\""), "{out}");
    // Responses on an encrypted transport are padded to a multiple of 468 octets.
    assert!(out.contains("Received 468 B"), "{out}");
    // A name not ours: REFUSED (no resolver role over QUIC).
    let out = kdig_quic(quic, &certs, &["elsewhere.invalid", "A"]);
    assert!(out.contains("status: REFUSED"), "{out}");
    // The wrong name for the certificate: kdig refuses the handshake.
    let ca = certs.path().join("dns.test.crt").display().to_string();
    let bad = kdig(
        quic,
        &[
            &format!("+tls-ca={ca}"),
            "+tls-hostname=other.test",
            "+quic",
            "www.example.test",
        ],
    );
    assert!(!bad.contains("192.0.2.10"), "{bad}");
    assert_eq!(
        server.stat("shardns_queries_total{transport=\"quic\",ip=\"4\"}"),
        2.0
    );
    assert!(server.stat("shardns_quic_connections_total{result=\"accepted\"}") >= 2.0);
}

#[test]
fn garbage_to_the_quic_port_harms_nothing() {
    let (mut server, quic, certs) = start_doq("doq-garbage", &["--workers", "1"]);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..300 {
        let len = 1 + (next() % 1400) as usize;
        let mut d: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        match i % 4 {
            // A long-header Initial of version 1 with a random payload (fails to decrypt).
            0 if len > 1250 => {
                d[0] = 0xc0 | (d[0] & 0x0f);
                d[1..5].copy_from_slice(&1u32.to_be_bytes());
                d[5] = 8;
            }
            // An unknown version: the server may answer with Version Negotiation.
            1 if len > 1250 => {
                d[0] = 0xc0;
                d[1..5].copy_from_slice(&0x0a0a_0a0au32.to_be_bytes());
                d[5] = 8;
            }
            // A short header for a connection nobody has.
            2 => d[0] = 0x40 | (d[0] & 0x3f),
            _ => {}
        }
        sock.send_to(&d, quic).unwrap();
    }
    // Whatever came back (version negotiation, resets) is bounded by what was sent.
    let mut buf = [0u8; 2048];
    let mut answers = 0;
    while sock.recv_from(&mut buf).is_ok() {
        answers += 1;
        assert!(answers <= 300);
    }
    assert!(quic_answers_www(quic, &certs));
    assert!(dig(server.addr, &["+short", "www.example.test", "A"]).contains("192.0.2.10"));
    assert!(dig(server.addr, &["+tcp", "+short", "www.example.test", "A"]).contains("192.0.2.10"));
    assert_eq!(
        server.stat("shardns_quic_connections_total{result=\"accepted\"}"),
        1.0
    );
    assert!(server.terminate().success());
}

/// Real QUIC Initial packets: `n` kdig processes pointed at a socket of ours, the first
/// datagram of each (a ClientHello, padded to 1200 octets or more, each with its own
/// connection ID).
fn capture_initials(n: usize) -> Vec<Vec<u8>> {
    let trap = UdpSocket::bind("127.0.0.1:0").unwrap();
    trap.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let port = trap.local_addr().unwrap().port().to_string();
    let mut kids: Vec<_> = (0..n)
        .map(|_| {
            Command::new("kdig")
                .args(["@127.0.0.1", "-p", &port, "+quic", "+time=5", "+retry=0"])
                .arg("www.example.test")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("run kdig")
        })
        .collect();
    let mut first: HashMap<SocketAddr, Vec<u8>> = HashMap::new();
    let end = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 65_535];
    while first.len() < n && Instant::now() < end {
        if let Ok((len, from)) = trap.recv_from(&mut buf) {
            first.entry(from).or_insert_with(|| buf[..len].to_vec());
        }
    }
    for k in &mut kids {
        let _ = k.kill();
        let _ = k.wait();
    }
    assert_eq!(first.len(), n, "kdig sent no Initial packets");
    first.into_values().collect()
}

#[test]
fn half_open_connections_are_bounded() {
    // One worker, at most 4 QUIC connections; past 2 a client must prove its address.
    let (server, quic, certs) = start_doq(
        "doq-flood",
        &[
            "--workers",
            "1",
            "--tcp-connections-per-worker",
            "4",
            "--tcp-idle-timeout-ms",
            "1500",
        ],
    );
    let initials = capture_initials(10);
    for d in &initials {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.send_to(d, quic).unwrap();
        // Kept open until the end of the loop turn, so the server's answer has a port.
        std::thread::sleep(Duration::from_millis(20));
    }
    let end = Instant::now() + Duration::from_secs(5);
    while server.stat("shardns_quic_connections_total{result=\"retried\"}") < 8.0 {
        assert!(Instant::now() < end, "no Retry for the half-open flood");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        server.stat("shardns_quic_connections_total{result=\"accepted\"}"),
        2.0
    );
    // A real client passes the Retry and is served.
    assert!(quic_answers_www(quic, &certs));
    // The half-open ones time out (the idle timeout, at least three probe timeouts of the
    // handshake: some seconds); then new clients go straight in, without a Retry.
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let retried = server.stat("shardns_quic_connections_total{result=\"retried\"}");
        assert!(quic_answers_www(quic, &certs));
        if server.stat("shardns_quic_connections_total{result=\"retried\"}") == retried {
            break;
        }
        assert!(
            Instant::now() < end,
            "the half-open connections never expired"
        );
    }
    assert!(dig(server.addr, &["+short", "www.example.test", "A"]).contains("192.0.2.10"));
}

#[test]
fn the_resolver_answers_over_quic() {
    // An authoritative shardns for other.test, and a resolver with DoQ forwarding to it.
    let (_auth, forward) = other_test_upstream("doq-resolver");
    let (resolver, quic, certs) = start_doq(
        "doq-resolver",
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
    // A cache miss (the answer comes after the upstream's), then a hit.
    for _ in 0..2 {
        let out = kdig_quic(quic, &certs, &["www.other.test", "A"]);
        assert!(out.contains("192.0.2.77"), "{out}");
        assert!(out.contains("status: NOERROR; id: 0"), "{out}");
    }
    assert_eq!(resolver.stat("shardns_resolver_cache_misses_total"), 1.0);
    assert_eq!(resolver.stat("shardns_resolver_cache_hits_total"), 1.0);
}

/// The records of a `kdig` AXFR, without comments, sorted.
fn axfr_records(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    v.sort();
    v
}

#[test]
fn axfr_over_quic_in_several_messages() {
    let dir = TempDir::new("doq-xfr-zone");
    let mut text = String::from(
        "$TTL 300\n@ IN SOA ns.big.test. admin.big.test. 7 3600 600 86400 60\n\
         @ IN NS ns.big.test.\nns IN A 127.0.0.1\n",
    );
    for i in 0..2_000 {
        text.push_str(&format!(
            "h{i} IN TXT \"record number {i} of a zone big enough\"\n"
        ));
    }
    let zone = dir.write("big.test.zone", &text);
    let zone_arg = format!("big.test={}", zone.display());
    let (server, quic, certs) = start_doq(
        "doq-xfr",
        &[
            "--zone",
            &zone_arg,
            "--allow-transfer",
            "127.0.0.1",
            "--workers",
            "1",
        ],
    );
    let over_quic = kdig_quic(quic, &certs, &["big.test", "AXFR"]);
    let records = axfr_records(&over_quic);
    // 2,000 TXT, NS, A, and the SOA twice.
    assert_eq!(
        records.len(),
        2_004,
        "{}",
        &over_quic[..over_quic.len().min(2000)]
    );
    assert_eq!(
        records,
        axfr_records(&kdig(server.addr, &["big.test", "AXFR"]))
    );
    assert_eq!(server.stat("shardns_xfr_total{event=\"done\"}"), 2.0);
    assert_eq!(server.stat("shardns_xfr_total{event=\"aborted\"}"), 0.0);
    assert!(server.stat("shardns_xfr_messages_total") >= 14.0);
}
