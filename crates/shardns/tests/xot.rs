//! End-to-end: zone transfers over TLS (XoT, RFC 9103) from our DNS-over-TLS listener, to
//! clients we did not write: `kdig +tls AXFR` (compared with the same transfer over TCP),
//! NSD 4.6 as a secondary (`request-xfr` with a `tls-auth` clause: it checks our
//! certificate against the name and requires TLS 1.3) and BIND 9.18 as a secondary
//! (`primaries { ... tls NAME; }` with `ca-file` and `remote-hostname`). Knot 3.2's knotd
//! cannot be the secondary here: its remotes have no TLS (that came with Knot 3.3/3.4).
//!
//! Everything listens on 127.0.0.1; every process is killed on drop.

mod common;

use common::*;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

/// A primary with DoT on its own port, the embedded zone transferable by 127.0.0.1.
fn start_primary(tag: &str) -> (Server, SocketAddr, TempDir) {
    let certs = TempDir::new(&format!("{tag}-certs"));
    let (cert, key) = make_cert(certs.path(), "dns.test");
    let tls = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let tls_arg = tls.to_string();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let server = Server::start_on(
        tag,
        Ipv4Addr::LOCALHOST,
        None,
        &[
            "--tls-listen",
            &tls_arg,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--allow-transfer",
            "127.0.0.1",
            "--workers",
            "2",
        ],
    );
    (server, tls, certs)
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
fn kdig_axfr_over_tls_matches_tcp() {
    let (server, tls, certs) = start_primary("xot-kdig");
    let ca = certs.path().join("dns.test.crt").display().to_string();
    let over_tls = kdig(
        tls,
        &[
            "+tls",
            &format!("+tls-ca={ca}"),
            "+tls-hostname=dns.test",
            "example.test",
            "AXFR",
        ],
    );
    let over_tcp = kdig(server.addr, &["example.test", "AXFR"]);
    // kdig prints no TLS line for a transfer: the server's counters say it was TLS.
    assert_eq!(
        server.stat("shardns_tls_handshakes_total{result=\"done\"}"),
        1.0
    );
    assert_eq!(
        server.stat("shardns_queries_total{transport=\"tls\",ip=\"4\"}"),
        1.0
    );
    let records = axfr_records(&over_tls);
    assert!(records.len() > 5, "{over_tls}");
    assert_eq!(records, axfr_records(&over_tcp));
    assert_eq!(server.stat("shardns_xfr_total{event=\"done\"}"), 2.0);
}

/// Waits (bounded) until `secondary` answers `www.example.test A` from its copy.
fn wait_for_copy(secondary: SocketAddr, daemon: &mut Daemon) {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if dig(secondary, &["+short", "+norec", "www.example.test", "A"]).contains("192.0.2.10") {
            return;
        }
        daemon.check_alive();
        assert!(
            Instant::now() < end,
            "{} did not transfer the zone; its log:\n{}",
            daemon.name,
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn nsd_transfers_over_tls() {
    let Some(nsd) = peer("nsd", "NSD") else {
        eprintln!("SKIPPED: nsd not installed");
        return;
    };
    let (server, tls, certs) = start_primary("xot-nsd");
    let work = TempDir::new("xot-nsd-work");
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let ca = certs.path().join("dns.test.crt");
    let conf = format!(
        "server:\n    ip-address: {ip}\n    port: {port}\n    username: \"\"\n    chroot: \"\"\n\
         \x20   zonesdir: \"{w}\"\n    database: \"\"\n    pidfile: \"{w}/nsd.pid\"\n\
         \x20   xfrdfile: \"{w}/xfrd.state\"\n    zonelistfile: \"{w}/zone.list\"\n\
         \x20   xfrdir: \"{w}\"\n    server-count: 1\n    verbosity: 2\n    do-ip6: no\n\
         \x20   tls-cert-bundle: \"{ca}\"\n\
         remote-control:\n    control-enable: no\n\
         tls-auth:\n    name: \"primary\"\n    auth-domain-name: \"dns.test\"\n\
         zone:\n    name: \"example.test\"\n    zonefile: \"{w}/example.test.zone\"\n\
         \x20   request-xfr: AXFR {tip}@{tport} NOKEY primary\n",
        w = work.path().display(),
        ip = listen.ip(),
        port = listen.port(),
        ca = ca.display(),
        tip = tls.ip(),
        tport = tls.port(),
    );
    let path = work.write("nsd.conf", &conf);
    let mut cmd = Command::new(nsd);
    cmd.arg("-d").arg("-c").arg(&path);
    let mut daemon = Daemon::spawn("nsd", cmd, work.path().join("nsd.log"));
    wait_for_copy(listen, &mut daemon);
    assert!(server.stat("shardns_xfr_total{event=\"done\"}") >= 1.0);
    assert!(server.stat("shardns_tls_handshakes_total{result=\"done\"}") >= 1.0);
    assert!(server.log().contains("transfer of example.test"));
}

#[test]
fn bind_transfers_over_tls() {
    let Some(named) = peer("named", "NAMED") else {
        eprintln!("SKIPPED: named not installed");
        return;
    };
    let (server, tls, certs) = start_primary("xot-named");
    let work = TempDir::new("xot-named-work");
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let ca = certs.path().join("dns.test.crt");
    let conf = format!(
        "options {{\n  directory \"{w}\";\n  pid-file \"{w}/named.pid\";\n\
         \x20 session-keyfile \"{w}/session.key\";\n  managed-keys-directory \"{w}\";\n\
         \x20 listen-on port {port} {{ {ip}; }};\n  listen-on-v6 {{ none; }};\n\
         \x20 recursion no;\n  dnssec-validation no;\n  notify no;\n}};\n\
         controls {{ }};\n\
         tls primary-tls {{ ca-file \"{ca}\"; remote-hostname \"dns.test\"; }};\n\
         zone \"example.test\" {{ type secondary; file \"{w}/example.test.db\";\n\
         \x20 primaries {{ {tip} port {tport} tls primary-tls; }}; }};\n",
        w = work.path().display(),
        ip = listen.ip(),
        port = listen.port(),
        ca = ca.display(),
        tip = tls.ip(),
        tport = tls.port(),
    );
    let path = work.write("named.conf", &conf);
    let mut cmd = Command::new(named);
    cmd.arg("-g").arg("-c").arg(&path);
    let mut daemon = Daemon::spawn("named", cmd, work.path().join("named.log"));
    wait_for_copy(listen, &mut daemon);
    assert!(server.stat("shardns_xfr_total{event=\"done\"}") >= 1.0);
    assert!(server.stat("shardns_tls_handshakes_total{result=\"done\"}") >= 1.0);
}
