//! PROXY protocol v2 (`server.proxy_protocol_from`): shardns behind dnsdist (UDP and TCP,
//! `useProxyProtocol`) and HAProxy (DoT and DoH passed through in TCP mode with
//! `send-proxy-v2`) sees the real client: queries sent from 127.0.0.2 through the proxy on
//! 127.0.0.1 are logged as 127.0.0.2, and a transfer ACL that allows only 127.0.0.2 lets
//! them through. Headers written by hand (from the spec's layout, not with our parser) check
//! the cases the proxies do not send: LOCAL, a header cut in two, malformed ones, and a
//! listed proxy's query without a header; and the per-client decisions behind one proxy:
//! the resolver's `allow` (with a later answer that must still go to the proxy) and RRL.
//!
//! Never: any address outside loopback, unbounded waits, processes left running.

mod common;

use common::*;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

const CLIENT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

const ZONE: &str = "$TTL 300\n@ SOA ns hostmaster 1 7200 3600 1209600 60\n@ NS ns\n\
                    ns A 192.0.2.1\nwww A 192.0.2.80\n";

/// shardns on 127.0.0.1 with zone `proxy.test.`, 127.0.0.1 as its proxy, transfers allowed
/// to 127.0.0.2 only, every query logged; `extra` flags added.
fn start(tag: &str, extra: &[&str]) -> (Server, TempDir) {
    start_with(tag, "", extra)
}

/// As [`start`], with `more` appended to the config file.
fn start_with(tag: &str, more: &str, extra: &[&str]) -> (Server, TempDir) {
    let zones = TempDir::new(&format!("{tag}-zone"));
    let zone = format!(
        "proxy.test.={}",
        zones.write("proxy.test.zone", ZONE).display()
    );
    let config = format!(
        "[server]\nproxy_protocol_from = [\"127.0.0.1/32\", \"::1\"]\n\
         allow_transfer = [\"127.0.0.2\"]\n{more}"
    );
    let mut args = vec!["--workers", "1", "--zone", &zone, "--log-queries"];
    args.extend_from_slice(extra);
    let server = Server::start_on(tag, Ipv4Addr::LOCALHOST, Some(&config), &args);
    (server, zones)
}

/// A version 2 header laid out as the spec's §2.2 says: the 12-octet signature, version 2
/// and `command`, family INET with `protocol` (1 STREAM, 2 DGRAM), the length, then source
/// and destination addresses and ports.
fn v2_header(command: u8, protocol: u8, source: SocketAddr, dest: SocketAddr) -> Vec<u8> {
    let mut h = vec![
        0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a,
    ];
    h.push(0x20 | command);
    h.push(0x10 | protocol);
    h.extend_from_slice(&12u16.to_be_bytes());
    for a in [source, dest] {
        let SocketAddr::V4(a) = a else {
            panic!("IPv4 only")
        };
        h.extend_from_slice(&a.ip().octets());
    }
    h.extend_from_slice(&source.port().to_be_bytes());
    h.extend_from_slice(&dest.port().to_be_bytes());
    h
}

/// True once a logged query line names `client` (an address without port), `transport`
/// and `name`.
fn logged(server: &Server, client: &str, transport: &str, name: &str) -> bool {
    let end = Instant::now() + Duration::from_secs(3);
    loop {
        let seen = server.log().lines().any(|l| {
            l.contains(&format!(" {client}:"))
                && l.contains(&format!(" {transport} "))
                && l.contains(name)
        });
        if seen || Instant::now() > end {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends datagram `d` and waits (3 s) for the response with ID `id`.
fn exchange(sock: &UdpSocket, d: &[u8], id: u16) -> Option<Vec<u8>> {
    sock.send(d).unwrap();
    let mut buf = vec![0u8; 65535];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) if n >= 2 && buf[..2] == id.to_be_bytes() => return Some(buf[..n].to_vec()),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

fn axfr_allowed(out: &str) -> bool {
    out.lines().filter(|l| l.contains("\tSOA\t")).count() == 2
}

/// Waits until `server` answers `www.proxy.test` (a proxy that is starting up).
fn wait_answering(server: SocketAddr, daemon: &mut Daemon, tcp: bool) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let out = dig(
            server,
            &[
                "+short",
                if tcp { "+tcp" } else { "+notcp" },
                "www.proxy.test",
                "A",
            ],
        );
        if out.contains("192.0.2.80") {
            return;
        }
        daemon.check_alive();
        assert!(
            Instant::now() < end,
            "{} does not answer:\n{}",
            daemon.name,
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn dnsdist_passes_the_client_over_udp_and_tcp() {
    let (server, _zones) = start("proxy-dnsdist", &[]);
    let work = TempDir::new("proxy-dnsdist-conf");
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let conf = work.write(
        "dnsdist.conf",
        &format!(
            "setLocal(\"{listen}\")\nsetACL({{\"127.0.0.0/8\"}})\nsetSecurityPollSuffix(\"\")\n\
             newServer({{address=\"{}\", useProxyProtocol=true}}):setUp()\n",
            server.addr
        ),
    );
    let program = find_program("dnsdist", "DNSDIST")
        .expect("dnsdist is not installed (scripts/test.sh installs Debian's dnsdist)");
    let mut cmd = Command::new(program);
    cmd.args(["--supervised", "--disable-syslog", "-C"])
        .arg(&conf);
    let mut dnsdist = Daemon::spawn("dnsdist", cmd, work.path().join("dnsdist.log"));
    wait_answering(listen, &mut dnsdist, false);

    // UDP from 127.0.0.2 through dnsdist: shardns logs 127.0.0.2, not dnsdist's address.
    let out = dig(
        listen,
        &["-b", "127.0.0.2", "+notcp", "www.proxy.test", "A"],
    );
    assert!(out.contains("192.0.2.80"), "{out}");
    assert!(
        logged(&server, "127.0.0.2", "udp", "www.proxy.test"),
        "{}",
        server.log()
    );

    // TCP: the transfer ACL allows 127.0.0.2 alone, so only the real client's address lets
    // the AXFR through; from 127.0.0.3 (and from dnsdist's own 127.0.0.1) it is refused.
    let out = dig(listen, &["-b", "127.0.0.2", "proxy.test", "AXFR"]);
    assert!(
        axfr_allowed(&out),
        "AXFR from 127.0.0.2 through dnsdist:\n{out}\n{}",
        server.log()
    );
    assert!(
        server.log().contains("(AXFR, serial 1) to 127.0.0.2:"),
        "{}",
        server.log()
    );
    let out = dig(listen, &["-b", "127.0.0.3", "proxy.test", "AXFR"]);
    assert!(
        !axfr_allowed(&out),
        "AXFR from 127.0.0.3 through dnsdist:\n{out}"
    );
    let refused = |l: &str| l.contains("to 127.0.0.3:") && l.contains("refused");
    assert!(server.log().lines().any(refused), "{}", server.log());
    let out = dig(listen, &["-b", "127.0.0.1", "proxy.test", "AXFR"]);
    assert!(
        !axfr_allowed(&out),
        "AXFR from 127.0.0.1 through dnsdist:\n{out}"
    );
    // No header came from anyone but dnsdist, and dnsdist's were all valid.
    assert_eq!(server.stat("shardns_proxy_errors_total"), 0.0);

    // Straight to shardns from 127.0.0.2, which is no proxy: its own address, no header.
    let out = dig(server.addr, &["-b", "127.0.0.2", "proxy.test", "AXFR"]);
    assert!(axfr_allowed(&out), "direct AXFR from 127.0.0.2:\n{out}");
    dnsdist.check_alive();
}

#[test]
fn hand_written_headers_over_udp_and_tcp() {
    let (server, _zones) = start("proxy-hand", &[]);
    let www = query(0x4242, "www.proxy.test", 1, Some(1232));
    let sock = udp_from(Ipv4Addr::LOCALHOST, server.addr);
    let me = sock.local_addr().unwrap();
    let send = |sock: &UdpSocket, header: &[u8]| {
        let mut d = header.to_vec();
        d.extend_from_slice(&www);
        exchange(sock, &d, 0x4242)
    };

    // PROXY naming 127.0.0.9: the answer comes back to us (the proxy), the log names 127.0.0.9.
    let client = SocketAddr::from(([127, 0, 0, 9], 40000));
    let answer =
        send(&sock, &v2_header(1, 2, client, server.addr)).expect("an answer to the proxy");
    assert_eq!(answers(&parse(&answer)), vec!["A 192.0.2.80"]);
    assert!(
        logged(&server, "127.0.0.9", "udp", "www.proxy.test"),
        "{}",
        server.log()
    );

    // LOCAL (a health check): answered, as from the proxy itself.
    let before = server
        .log()
        .lines()
        .filter(|l| l.contains(&format!(" {me} ")))
        .count();
    assert!(send(&sock, &v2_header(0, 2, client, server.addr)).is_some());
    let end = Instant::now() + Duration::from_secs(3);
    while server
        .log()
        .lines()
        .filter(|l| l.contains(&format!(" {me} ")))
        .count()
        == before
    {
        assert!(
            Instant::now() < end,
            "LOCAL not logged as {me}:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Dropped and counted: no header from a listed proxy, version 1 in the binary form, a
    // STREAM header on a datagram, a length past the datagram.
    let mut v1 = v2_header(1, 2, client, server.addr);
    v1[12] = 0x11;
    let stream = v2_header(1, 1, client, server.addr);
    let mut long = v2_header(1, 2, client, server.addr);
    long[15] = 200;
    for (header, reason) in [
        (&[][..], "signature"),
        (&v1[..], "version"),
        (&stream[..], "family"),
        (&long[..], "truncated"),
    ] {
        assert!(send(&sock, header).is_none(), "{reason}: answered");
        server.wait_for_stat(
            &format!("shardns_proxy_errors_total{{reason=\"{reason}\"}}"),
            1.0,
            Duration::from_secs(3),
        );
    }

    // From 127.0.0.2, not a proxy, a header is not read: the bytes are taken as DNS.
    let other = udp_from(CLIENT, server.addr);
    if let Some(r) = send(&other, &v2_header(1, 2, client, server.addr)) {
        assert_ne!(answers(&parse(&r)), vec!["A 192.0.2.80"]);
    }
    assert_eq!(server.stat("shardns_proxy_errors_total"), 4.0);

    // TCP: the header in two pieces, then an AXFR that only 127.0.0.2 may have.
    let mut s = tcp_from(Ipv4Addr::LOCALHOST, server.addr);
    let h = v2_header(1, 1, SocketAddr::from((CLIENT, 5555)), server.addr);
    s.write_all(&h[..7]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    s.write_all(&h[7..]).unwrap();
    let axfr = query(7, "proxy.test", 252, None);
    let got = tcp_exchange_on(&mut s, std::slice::from_ref(&axfr));
    let m = parse(&got[0]);
    assert_eq!(u16::from(m.metadata.response_code), 0, "{m:?}");
    assert!(!m.answers.is_empty());

    // The same with a header naming 127.0.0.3: refused.
    let mut s = tcp_from(Ipv4Addr::LOCALHOST, server.addr);
    s.write_all(&v2_header(
        1,
        1,
        SocketAddr::from(([127, 0, 0, 3], 5555)),
        server.addr,
    ))
    .unwrap();
    let got = tcp_exchange_on(&mut s, &[axfr]);
    assert_eq!(u16::from(parse(&got[0]).metadata.response_code), 5);

    // A listed proxy's connection without a header: closed, counted.
    let mut s = tcp_from(Ipv4Addr::LOCALHOST, server.addr);
    s.write_all(&frame(&www)).unwrap();
    assert!(closed_by_server(&mut s, Duration::from_secs(3)));
    server.wait_for_stat(
        "shardns_proxy_errors_total{reason=\"signature\"}",
        2.0,
        Duration::from_secs(3),
    );
}

#[test]
fn haproxy_passes_the_client_over_tls_and_https() {
    let https = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let https_arg = https.to_string();
    let certs = TempDir::new("proxy-haproxy-certs");
    let (cert, key) = make_cert(certs.path(), "dns.test");
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let dot = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let dot_arg = dot.to_string();
    let (server, _zones) = start(
        "proxy-haproxy",
        &[
            "--tls-listen",
            &dot_arg,
            "--https-listen",
            &https_arg,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ],
    );
    let work = TempDir::new("proxy-haproxy-conf");
    let (front_dot, front_https) = (
        SocketAddr::from((Ipv4Addr::LOCALHOST, free_port())),
        SocketAddr::from((Ipv4Addr::LOCALHOST, free_port())),
    );
    let conf = work.write(
        "haproxy.cfg",
        &format!(
            "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             listen dot\n  bind {front_dot}\n  server s {dot} send-proxy-v2\n\
             listen doh\n  bind {front_https}\n  server s {https} send-proxy-v2\n"
        ),
    );
    let program = find_program("haproxy", "HAPROXY")
        .expect("haproxy is not installed (scripts/test.sh installs Debian's haproxy)");
    let mut cmd = Command::new(program);
    cmd.arg("-db").arg("-f").arg(&conf);
    let mut haproxy = Daemon::spawn("haproxy", cmd, work.path().join("haproxy.log"));

    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let out = kdig(
            front_dot,
            &["-b", "127.0.0.2", "+tls", "+short", "www.proxy.test", "A"],
        );
        if out.contains("192.0.2.80") {
            break;
        }
        haproxy.check_alive();
        assert!(
            Instant::now() < end,
            "no DoT answer through haproxy:\n{}",
            haproxy.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        logged(&server, "127.0.0.2", "tls", "www.proxy.test"),
        "{}",
        server.log()
    );

    let out = kdig(
        front_https,
        &["-b", "127.0.0.2", "+https", "+short", "www.proxy.test", "A"],
    );
    assert!(out.contains("192.0.2.80"), "DoH through haproxy: {out}");
    assert!(
        logged(&server, "127.0.0.2", "https", "www.proxy.test"),
        "{}",
        server.log()
    );
    assert_eq!(server.stat("shardns_proxy_errors_total"), 0.0);

    // Straight to the DoT port from 127.0.0.1, a listed proxy, without a header: the TLS
    // hello is not a header, so the connection is dropped.
    let out = kdig(
        dot,
        &[
            "+tls",
            "+short",
            "+retry=0",
            "+timeout=2",
            "www.proxy.test",
            "A",
        ],
    );
    assert!(!out.contains("192.0.2.80"), "{out}");
    server.wait_for_stat(
        "shardns_proxy_errors_total{reason=\"signature\"}",
        1.0,
        Duration::from_secs(3),
    );
    haproxy.check_alive();
}

#[test]
fn the_resolver_decides_by_the_proxied_client() {
    let (_auth, forward) = other_test_upstream("proxy-resolver");
    let (server, _zones) = start(
        "proxy-resolver",
        &[
            "--recursion",
            // The default local zone test. (RFC 6761, as Unbound) would answer the names.
            "--local-zone",
            "test. nodefault",
            "--no-validation",
            "--forward",
            &forward,
            "--allow-recursion",
            "127.0.0.9",
        ],
    );
    let mut q = query(0x5151, "www.other.test", 1, Some(1232));
    q[2] |= 0x01; // RD
    let sock = udp_from(Ipv4Addr::LOCALHOST, server.addr);
    let ask = |client: [u8; 4]| {
        let mut d = v2_header(1, 2, SocketAddr::from((client, 40000)), server.addr);
        d.extend_from_slice(&q);
        exchange(&sock, &d, 0x5151).expect("an answer to the proxy")
    };
    // 127.0.0.9 may recurse: a cache miss, answered later, still to the proxy's socket.
    let m = parse(&ask([127, 0, 0, 9]));
    assert_eq!(answers(&m), vec!["A 192.0.2.77"], "{m:?}");
    assert_eq!(server.stat("shardns_resolver_cache_misses_total"), 1.0);
    // 127.0.0.8 may not, though the proxy (127.0.0.1) sent both.
    let m = parse(&ask([127, 0, 0, 8]));
    assert_eq!(u16::from(m.metadata.response_code), 5, "{m:?}");
    assert_eq!(server.stat("shardns_resolver_refused_total"), 1.0);
}

#[test]
fn rate_limiting_tells_proxied_clients_apart() {
    let (server, _zones) = start_with(
        "proxy-rrl",
        "[rrl]\nwindow = 1\nipv4_prefix = 32\n",
        &["--rrl-rate", "2", "--rrl-slip", "0"],
    );
    let www = query(0x6161, "www.proxy.test", 1, None);
    let sock = udp_from(Ipv4Addr::LOCALHOST, server.addr);
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let ask = |client: [u8; 4]| {
        let mut d = v2_header(1, 2, SocketAddr::from((client, 40000)), server.addr);
        d.extend_from_slice(&www);
        exchange(&sock, &d, 0x6161).is_some()
    };
    // 127.0.0.9 floods: limited to about the rate (the rest dropped, no slip).
    let answered = (0..12).filter(|_| ask([127, 0, 0, 9])).count();
    assert!(answered < 12, "{answered} of 12 answered: not limited");
    assert!(server.stat("shardns_rrl_limited_total{action=\"dropped\"}") > 0.0);
    // 127.0.0.10, through the same proxy in the same second, is another client.
    assert!(ask([127, 0, 0, 10]), "127.0.0.10 limited with 127.0.0.9");
}
