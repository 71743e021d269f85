//! End-to-end: a shardns secondary pulling zones over TLS (XoT, RFC 9103; `primary_tls`):
//! from shardns's own DoT listener (with TSIG: AXFR, then an IXFR after a NOTIFY), from
//! BIND 9.18 as a TLS primary (`listen-on ... tls`, `allow-transfer ... transport tls`); a
//! primary whose certificate is for another name or from another CA, or whose key matches
//! no SPKI pin, is refused with a log line that says so while the kept copy goes on being
//! served (and the right pin is let through); a primary that accepts the connection but
//! never finishes the handshake times out; NSD 4.6, which negotiates no ALPN, is refused.
//!
//! Certificates: a test CA (made by `openssl` at test time) signing the primary's; the
//! secondary trusts only that CA. Everything on 127.0.0.1; every process killed on drop.

mod common;

use common::*;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const APEX: &str = "xot.test.";

/// A CA (its own certificate, `{tag}-ca.crt`) and a certificate it signs for `name` and
/// 127.0.0.1: (ca, cert, key).
fn make_ca_and_cert(dir: &Path, tag: &str, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ca = dir.join(format!("{tag}-ca.crt"));
    let ca_key = dir.join(format!("{tag}-ca.key"));
    let csr = dir.join(format!("{tag}.csr"));
    let cert = dir.join(format!("{tag}.crt"));
    let key = dir.join(format!("{tag}.key"));
    let ext = dir.join(format!("{tag}.ext"));
    std::fs::write(
        &ext,
        format!("subjectAltName=DNS:{name},IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let p = |p: &Path| p.display().to_string();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut a = vec!["req", "-x509"];
    a.extend(ec);
    let (ca_s, ca_key_s) = (p(&ca), p(&ca_key));
    // Each CA its own subject, so that another CA's is not taken for the issuer.
    let ca_subj = format!("/CN=XoT test CA {tag}");
    a.extend(["-days", "2", "-subj", &ca_subj, "-keyout", &ca_key_s]);
    a.extend(["-out", &ca_s]);
    run(&a);
    let (csr_s, key_s, cert_s, ext_s) = (p(&csr), p(&key), p(&cert), p(&ext));
    let subj = format!("/CN={name}");
    let mut a = vec!["req"];
    a.extend(ec);
    a.extend(["-subj", &subj, "-keyout", &key_s, "-out", &csr_s]);
    run(&a);
    run(&[
        "x509",
        "-req",
        "-in",
        &csr_s,
        "-CA",
        &ca_s,
        "-CAkey",
        &ca_key_s,
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &ext_s,
        "-out",
        &cert_s,
    ]);
    (ca, cert, key)
}

/// Version `serial` of the test zone: a few hundred names (several messages), one record
/// that changes with each version.
fn version(serial: u32) -> String {
    let mut z = format!(
        "$TTL 300\n@ SOA ns1 hostmaster {serial} 3600 600 1209600 60\n@ NS ns1\n\
         ns1 A 192.0.2.1\nlast TXT \"serial {serial}\"\n"
    );
    for i in 0..500 {
        z.push_str(&format!("h{i} A 10.0.{}.{}\n", i >> 8, i & 255));
    }
    z
}

/// The serial `server` answers for the apex over UDP, if any.
fn serial_at(server: SocketAddr) -> Option<u32> {
    let out = dig(server, &["+short", "+norec", APEX, "SOA"]);
    out.split_whitespace().nth(2)?.parse().ok()
}

fn wait_serial(server: SocketAddr, serial: u32, limit: Duration, log: impl Fn() -> String) {
    let end = Instant::now() + limit;
    loop {
        if serial_at(server) == Some(serial) {
            return;
        }
        assert!(
            Instant::now() < end,
            "{server} does not answer serial {serial} after {limit:?} (it answers {:?})\n{}",
            serial_at(server),
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn local() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()))
}

#[allow(clippy::too_many_arguments)]
/// A shardns secondary of APEX on `listen` pulling from `primary` over TLS, the
/// certificate checked against `ca` and `name`; with TSIG if `tsig`; its copy in `copy`.
/// (`ca` empty: `name` is the whole `primary_tls` table.)
fn start_secondary(
    tag: &str,
    dir: &TempDir,
    listen: SocketAddr,
    primary: SocketAddr,
    ca: &Path,
    name: &str,
    tsig: bool,
    copy: &Path,
) -> Server {
    let toml = format!(
        "{}[[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\nprimary = [\"{primary}\"]\n{}\
         primary_tls = {}\n",
        if tsig { tsig_toml() } else { String::new() },
        copy.display(),
        if tsig {
            format!("primary_key = \"{TSIG_NAME}\"\n")
        } else {
            String::new()
        },
        if ca.as_os_str().is_empty() {
            name.to_string()
        } else {
            format!("{{ ca_file = \"{}\", name = \"{name}\" }}", ca.display())
        },
    );
    let config = dir.write(&format!("{tag}.toml"), &toml);
    let config = config.to_str().unwrap().to_string();
    Server::start_at(tag, &[listen], &["--workers", "1", "--config", &config])
}

/// shardns as a primary of APEX (zone file `zone`), DoT on `tls`, transfers only with the
/// test TSIG key, NOTIFY to `notify`.
fn start_shardns_primary(
    dir: &TempDir,
    listen: SocketAddr,
    tls: SocketAddr,
    cert: &Path,
    key: &Path,
    zone: &Path,
    notify: SocketAddr,
) -> Server {
    let toml = format!(
        "{}[server]\ntls_listen = [\"{tls}\"]\ntls_certificate = \"{}\"\ntls_key = \"{}\"\n\
         allow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\nnotify = [\"{notify}\"]\n\
         [[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\n",
        tsig_toml(),
        cert.display(),
        key.display(),
        zone.display()
    );
    let config = dir.write("primary.toml", &toml);
    let config = config.to_str().unwrap().to_string();
    Server::start_at(
        "xot-in-primary",
        &[listen],
        &["--workers", "1", "--config", &config],
    )
}

#[test]
fn from_shardns_over_tls_with_tsig_axfr_then_ixfr_then_bad_certificates_refused() {
    let work = TempDir::new("xot-in-shardns");
    let (ca, cert, key) = make_ca_and_cert(work.path(), "primary", "ns1.xot.test");
    let zone = work.write("xot.test.zone", &version(1));
    let (p_addr, p_tls, s_addr) = (local(), local(), local());
    let primary = start_shardns_primary(&work, p_addr, p_tls, &cert, &key, &zone, s_addr);
    let copy = work.path().join("copy.zone");
    let mut secondary = start_secondary(
        "xot-in-s1",
        &work,
        s_addr,
        p_tls,
        &ca,
        "ns1.xot.test",
        true,
        &copy,
    );
    wait_serial(s_addr, 1, Duration::from_secs(20), || secondary.log());
    assert_eq!(
        dig(s_addr, &["+short", "h499.xot.test", "A"]).trim(),
        "10.0.1.243"
    );
    // Everything went over TLS: the SOA query and the AXFR, signed (the primary refuses
    // unsigned transfers), and nothing over the primary's UDP or TCP.
    let handshakes = primary.stat("shardns_tls_handshakes_total{result=\"done\"}");
    assert!(handshakes >= 2.0, "{handshakes}");
    assert_eq!(
        primary.stat("shardns_queries_total{transport=\"udp\",ip=\"4\"}"),
        0.0
    );
    assert!(secondary.log().contains("AXFR"), "{}", secondary.log());

    // A change: the primary reloads, NOTIFYs us; we take it as an IXFR over TLS.
    std::fs::write(&zone, version(2)).unwrap();
    primary.sighup();
    wait_serial(s_addr, 2, Duration::from_secs(20), || {
        format!("{}\n---primary---\n{}", secondary.log(), primary.log())
    });
    assert_eq!(
        dig(s_addr, &["+short", "last.xot.test", "TXT"]).trim(),
        "\"serial 2\""
    );
    assert!(
        secondary.log().contains("IXFR"),
        "no IXFR in the log:\n{}",
        secondary.log()
    );
    assert!(primary.stat("shardns_tls_handshakes_total{result=\"done\"}") > handshakes);
    secondary.terminate();

    // The same secondary, now checking the certificate against another name: refused with
    // a line that says why; the copy kept in the file (serial 2) goes on being served.
    let mut wrong_name = start_secondary(
        "xot-in-s2",
        &work,
        s_addr,
        p_tls,
        &ca,
        "other.test",
        true,
        &copy,
    );
    wrong_name.wait_for_log(
        "invalid peer certificate: certificate not valid for name \"other.test\"",
        Duration::from_secs(20),
    );
    assert!(wrong_name
        .log()
        .contains(&format!("TLS: handshake with {p_tls}")));
    assert_eq!(serial_at(s_addr), Some(2));
    wrong_name.terminate();

    // And against a CA that did not sign it.
    let (other_ca, _, _) = make_ca_and_cert(work.path(), "other", "ns1.xot.test");
    let mut wrong_ca = start_secondary(
        "xot-in-s3",
        &work,
        s_addr,
        p_tls,
        &other_ca,
        "ns1.xot.test",
        true,
        &copy,
    );
    wrong_ca.wait_for_log("invalid peer certificate", Duration::from_secs(20));
    assert!(
        wrong_ca.log().contains("UnknownIssuer"),
        "{}",
        wrong_ca.log()
    );
    assert_eq!(serial_at(s_addr), Some(2));
    wrong_ca.terminate();
}

#[test]
fn a_primary_that_never_finishes_the_handshake_times_out() {
    let work = TempDir::new("xot-in-silent");
    let (ca, _, _) = make_ca_and_cert(work.path(), "silent", "ns1.xot.test");
    // The kernel completes TCP connections to a listener nobody accepts from: the client
    // connects, sends its ClientHello, and never hears back.
    let silent = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let s_addr = local();
    let copy = work.path().join("copy.zone");
    let started = Instant::now();
    let mut secondary = start_secondary(
        "xot-in-silent-s",
        &work,
        s_addr,
        silent_addr,
        &ca,
        "ns1.xot.test",
        false,
        &copy,
    );
    secondary.wait_for_log(
        &format!("no TLS handshake with {silent_addr} within 10s"),
        Duration::from_secs(30),
    );
    assert!(started.elapsed() >= Duration::from_secs(9));
    // Still serving: SERVFAIL for the zone it has no copy of yet.
    let out = dig(s_addr, &[APEX, "SOA"]);
    assert!(out.contains("SERVFAIL"), "{out}");
    drop(silent);
}

#[test]
fn from_named_as_tls_primary_axfr_then_ixfr() {
    let Some(named) = peer("named", "NAMED") else {
        eprintln!("SKIPPED: named not installed");
        return;
    };
    let work = TempDir::new("xot-in-named");
    let (ca, cert, key) = make_ca_and_cert(work.path(), "named", "ns1.xot.test");
    let zone = work.write("xot.test.zone", &version(1));
    let (n_addr, n_tls, s_addr) = (local(), local(), local());
    let conf = format!(
        "options {{\n  directory \"{w}\";\n  pid-file \"{w}/named.pid\";\n\
         \x20 session-keyfile \"{w}/session.key\";\n  managed-keys-directory \"{w}\";\n\
         \x20 listen-on port {port} {{ {ip}; }};\n\
         \x20 listen-on port {tport} tls local-tls {{ {ip}; }};\n  listen-on-v6 {{ none; }};\n\
         \x20 recursion no;\n  dnssec-validation no;\n  notify explicit;\n\
         \x20 also-notify {{ {sip} port {sport}; }};\n  ixfr-from-differences yes;\n}};\n\
         controls {{ }};\n\
         tls local-tls {{ cert-file \"{cert}\"; key-file \"{key}\"; }};\n\
         zone \"{APEX}\" {{ type primary; file \"{zone}\";\n\
         \x20 allow-transfer port {tport} transport tls {{ 127.0.0.0/8; }}; }};\n",
        w = work.path().display(),
        ip = n_addr.ip(),
        port = n_addr.port(),
        tport = n_tls.port(),
        sip = s_addr.ip(),
        sport = s_addr.port(),
        cert = cert.display(),
        key = key.display(),
        zone = zone.display(),
    );
    let path = work.write("named.conf", &conf);
    let mut cmd = Command::new(&named);
    cmd.arg("-g").arg("-c").arg(&path);
    let mut daemon = Daemon::spawn("named", cmd, work.path().join("named.log"));
    // named answers once the zone is loaded.
    let end = Instant::now() + Duration::from_secs(20);
    while serial_at(n_addr) != Some(1) {
        daemon.check_alive();
        assert!(
            Instant::now() < end,
            "named did not start:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // allow-transfer ... transport tls: named refuses the same transfer over plain TCP.
    let plain = kdig(n_addr, &[APEX, "AXFR"]);
    assert!(
        !plain.contains("h499.xot.test"),
        "named allowed a clear-text AXFR:\n{plain}"
    );

    let copy = work.path().join("copy.zone");
    let secondary = start_secondary(
        "xot-in-named-s",
        &work,
        s_addr,
        n_tls,
        &ca,
        "ns1.xot.test",
        false,
        &copy,
    );
    wait_serial(s_addr, 1, Duration::from_secs(20), || {
        format!("{}\n---named---\n{}", secondary.log(), daemon.log())
    });
    assert_eq!(
        dig(s_addr, &["+short", "h499.xot.test", "A"]).trim(),
        "10.0.1.243"
    );

    std::fs::write(&zone, version(2)).unwrap();
    let ok = Command::new("kill")
        .arg("-HUP")
        .arg(daemon.pid().to_string())
        .status()
        .unwrap();
    assert!(ok.success());
    wait_serial(s_addr, 2, Duration::from_secs(20), || {
        format!("{}\n---named---\n{}", secondary.log(), daemon.log())
    });
    assert_eq!(
        dig(s_addr, &["+short", "last.xot.test", "TXT"]).trim(),
        "\"serial 2\""
    );
    assert!(
        secondary.log().contains("IXFR"),
        "no IXFR in the log:\n{}",
        secondary.log()
    );
}

/// NSD 4.6 serves transfers on its `tls-port` (kdig +tls AXFR gets the zone) but picks no
/// ALPN; RFC 9103 §7.1 makes "dot" the XoT protocol, so our secondary refuses it, saying so.
/// If a later NSD negotiates "dot", this test fails and NSD becomes a tested XoT primary.
#[test]
fn nsd_4_6_as_tls_primary_is_refused_for_want_of_alpn_dot() {
    let Some(nsd) = peer("nsd", "NSD") else {
        eprintln!("SKIPPED: nsd not installed");
        return;
    };
    let work = TempDir::new("xot-in-nsd");
    let (ca, cert, key) = make_ca_and_cert(work.path(), "nsd", "ns1.xot.test");
    work.write("xot.test.zone", &version(1));
    let (n_addr, n_tls, s_addr) = (local(), local(), local());
    let conf = format!(
        "server:\n    ip-address: {ip}@{port}\n    ip-address: {ip}@{tport}\n    tls-port: {tport}\n\
         \x20   tls-service-key: \"{key}\"\n    tls-service-pem: \"{cert}\"\n\
         \x20   username: \"\"\n    chroot: \"\"\n    zonesdir: \"{w}\"\n    database: \"\"\n\
         \x20   pidfile: \"{w}/nsd.pid\"\n    xfrdfile: \"{w}/xfrd.state\"\n\
         \x20   zonelistfile: \"{w}/zone.list\"\n    xfrdir: \"{w}\"\n    server-count: 1\n\
         \x20   do-ip6: no\n\
         remote-control:\n    control-enable: no\n\
         zone:\n    name: \"xot.test\"\n    zonefile: \"{w}/xot.test.zone\"\n\
         \x20   provide-xfr: 127.0.0.0/8 NOKEY\n",
        w = work.path().display(),
        ip = n_addr.ip(),
        port = n_addr.port(),
        tport = n_tls.port(),
        key = key.display(),
        cert = cert.display(),
    );
    let path = work.write("nsd.conf", &conf);
    let mut cmd = Command::new(nsd);
    cmd.arg("-d").arg("-c").arg(&path);
    let mut daemon = Daemon::spawn("nsd", cmd, work.path().join("nsd.log"));
    let end = Instant::now() + Duration::from_secs(20);
    while serial_at(n_addr) != Some(1) {
        daemon.check_alive();
        assert!(Instant::now() < end, "nsd did not start:\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let ca_arg = format!("+tls-ca={}", ca.display());
    let over_tls = kdig(
        n_tls,
        &["+tls", &ca_arg, "+tls-hostname=ns1.xot.test", APEX, "AXFR"],
    );
    assert!(over_tls.contains("h499.xot.test"), "{over_tls}");

    let copy = work.path().join("copy.zone");
    let mut secondary = start_secondary(
        "xot-in-nsd-s",
        &work,
        s_addr,
        n_tls,
        &ca,
        "ns1.xot.test",
        false,
        &copy,
    );
    secondary.wait_for_log(
        &format!("{n_tls} did not negotiate ALPN \"dot\""),
        Duration::from_secs(20),
    );
    assert_eq!(serial_at(s_addr), None);
}

#[test]
fn pinned_by_spki_with_a_wrong_pin_refused() {
    let work = TempDir::new("xot-in-pin");
    let (_, cert, key) = make_ca_and_cert(work.path(), "pin", "ns1.xot.test");
    let (_, other_cert, _) = make_ca_and_cert(work.path(), "pin-other", "ns1.xot.test");
    let zone = work.write("xot.test.zone", &version(1));
    let (p_addr, p_tls, s_addr) = (local(), local(), local());
    let _primary = start_shardns_primary(&work, p_addr, p_tls, &cert, &key, &zone, s_addr);
    let copy = work.path().join("copy.zone");
    let pinned = format!("{{ spki_sha256 = [\"{}\"] }}", spki_pin(&cert));
    let secondary = start_secondary(
        "xot-in-pin-s",
        &work,
        s_addr,
        p_tls,
        Path::new(""),
        &pinned,
        true,
        &copy,
    );
    wait_serial(s_addr, 1, Duration::from_secs(20), || secondary.log());
    drop(secondary);

    let wrong = format!("{{ spki_sha256 = [\"{}\"] }}", spki_pin(&other_cert));
    let mut secondary = start_secondary(
        "xot-in-pin-s2",
        &work,
        s_addr,
        p_tls,
        Path::new(""),
        &wrong,
        true,
        &copy,
    );
    secondary.wait_for_log(
        "invalid peer certificate: ApplicationVerificationFailure",
        Duration::from_secs(20),
    );
    assert!(secondary.log().contains("checked against the SPKI pins"));
    // The copy from the pinned run is served.
    assert_eq!(serial_at(s_addr), Some(1));
}
