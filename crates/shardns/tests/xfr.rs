//! Outgoing zone transfers, read by programs we did not write: dig and kdig fetch AXFR and
//! IXFR answers (and see the refusals), and Knot DNS (`knotd`, Debian's `knot`) runs as a
//! secondary of shardns, pulls the zone, serves it record for record as shardns does, and
//! follows a reload. A transfer of a big zone to a client that stops reading must not hold
//! up anyone else and must end at the idle timeout.
//!
//! Never: any address outside loopback, unbounded waits, processes left running.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

/// A zone with glue below a delegation, a wildcard, an empty non-terminal, upper case, and
/// `hosts` names with an A and a TXT each (enough of them fill several messages).
fn zone_text(serial: u32, hosts: usize, extra: &str) -> String {
    let mut z = format!(
        "$TTL 300\n@ SOA ns1 hostmaster {serial} 7200 3600 1209600 60\n@ NS ns1\n@ NS ns2\n\
         ns1 A 192.0.2.1\nns2 AAAA 2001:db8::2\n@ MX 10 Mail\nMail A 192.0.2.25\n\
         sub NS ns.sub\nns.sub A 192.0.2.53\n*.wild TXT \"wildcard\"\ndeep.a.b A 192.0.2.9\n{extra}"
    );
    for i in 0..hosts {
        z.push_str(&format!(
            "h{i} A 10.{}.{}.{}\nh{i} TXT \"host {i} of the transfer test zone\"\n",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        ));
    }
    z
}

/// Records in `zone_text(_, hosts, "")`.
fn record_count(hosts: usize) -> usize {
    11 + 2 * hosts
}

/// The record lines of dig or kdig output (comments dropped, whitespace and case
/// normalised), in order.
fn records(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn start(tag: &str, text: &str, args: &[&str]) -> (Server, std::path::PathBuf) {
    let dir = TempDir::new(tag);
    let path = dir.write("xfr.test.zone", text);
    let zone = format!("xfr.test.={}", path.display());
    let mut all = vec!["--workers", "1", "--zone", &zone];
    all.extend_from_slice(args);
    (Server::start_in(dir, &all), path)
}

#[test]
fn axfr_and_ixfr_with_dig_and_kdig() {
    let hosts = 3000;
    let (server, _) = start(
        "xfr-dig",
        &zone_text(2024010101, hosts, ""),
        &["--allow-transfer", "127.0.0.2", "--allow-transfer", "::1"],
    );
    let v4 = server.addr4();

    // AXFR from an allowed address: the SOA first and last, every record once between.
    let out = dig(v4, &["-b", "127.0.0.2", "xfr.test", "AXFR"]);
    let axfr = records(&out);
    assert_eq!(axfr.len(), record_count(hosts) + 1, "{out}");
    assert!(
        axfr[0].contains(" soa ") && axfr[0] == axfr[axfr.len() - 1],
        "{out}"
    );
    let messages: usize = out
        .split("messages ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no XFR size line: {out}"));
    assert!(messages > 1, "{hosts} hosts fit in one message?");
    for want in [
        "ns.sub.xfr.test. 300 in a 192.0.2.53",
        "*.wild.xfr.test. 300 in txt \"wildcard\"",
        "deep.a.b.xfr.test. 300 in a 192.0.2.9",
        "xfr.test. 300 in mx 10 mail.xfr.test.",
    ] {
        assert!(axfr.iter().any(|l| l == want), "{want} missing");
    }
    // The zone's own case, not the question's.
    let upper = dig(v4, &["-b", "127.0.0.2", "XFR.TEST", "AXFR"]);
    assert!(upper.contains("Mail.xfr.test."), "{upper}");

    // kdig over IPv6 (::1 is allowed too) gets the same records.
    let out6 = kdig(server.addr6(), &["xfr.test", "AXFR"]);
    assert_eq!(sorted(records(&out6)), sorted(axfr.clone()), "{out6}");

    // IXFR: from the current serial, the SOA alone; from an older one, the whole zone in
    // AXFR form (the journal does not reach back to it: RFC 1995 §4); over UDP, the SOA
    // alone (RFC 1995 §2).
    let current = records(&dig(
        v4,
        &["-b", "127.0.0.2", "xfr.test", "IXFR=2024010101"],
    ));
    assert_eq!(current.len(), 1);
    assert!(current[0].contains("2024010101"));
    let older = records(&dig(
        v4,
        &["-b", "127.0.0.2", "xfr.test", "IXFR=2024010100"],
    ));
    assert_eq!(sorted(older), sorted(axfr.clone()));
    let udp = kdig(v4, &["-b", "127.0.0.2", "+notcp", "xfr.test", "IXFR=1"]);
    assert_eq!(records(&udp).len(), 1, "{udp}");

    // Refusals: an address outside the ACL, a zone not served, AXFR over UDP.
    let status = |args: &[&str]| {
        let out = kdig_output(v4, args);
        let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
        ["REFUSED", "NOTAUTH", "NOTIMPL", "FORMERR"]
            .into_iter()
            .find(|r| text.contains(r))
            .unwrap_or_else(|| panic!("no refusal for {args:?}: {text}"))
    };
    assert_eq!(status(&["-b", "127.0.0.1", "xfr.test", "AXFR"]), "REFUSED");
    assert_eq!(
        status(&["-b", "127.0.0.1", "xfr.test", "IXFR=1"]),
        "REFUSED"
    );
    assert_eq!(
        status(&["-b", "127.0.0.2", "other.test", "AXFR"]),
        "NOTAUTH"
    );
    assert_eq!(
        status(&["-b", "127.0.0.2", "www.xfr.test", "AXFR"]),
        "NOTAUTH"
    );
    assert_eq!(
        status(&["-b", "127.0.0.2", "+notcp", "xfr.test", "AXFR"]),
        "NOTIMPL"
    );

    // Counted: 4 whole transfers (dig twice, kdig, the older IXFR), 5 refusals.
    server.wait_for_stat(
        "shardns_xfr_total{event=\"done\"}",
        4.0,
        Duration::from_secs(5),
    );
    assert_eq!(server.stat("shardns_xfr_total{event=\"started\"}"), 4.0);
    assert_eq!(server.stat("shardns_xfr_total{event=\"refused\"}"), 5.0);
    assert_eq!(server.stat("shardns_xfr_total{event=\"aborted\"}"), 0.0);
    assert!(server.stat("shardns_xfr_messages_total") >= 4.0 * messages as f64 - 4.0);
    assert!(server.log().contains("transfer of xfr.test. to 127.0.0.1"));
}

#[test]
fn knotd_as_a_secondary_follows_a_reload() {
    let Some(knotd) = find_program("knotd", "KNOTD") else {
        println!(
            "xfr: SKIPPED: knotd is not installed (apt-get install -y knot); nothing transferred"
        );
        return;
    };
    let hosts = 2000;
    let knot_port = free_port();
    let knot_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, knot_port));
    let notify = knot_addr.to_string();
    let (server, path) = start(
        "xfr-knot",
        &zone_text(1, hosts, ""),
        &["--allow-transfer", "127.0.0.1", "--notify", &notify],
    );
    let work = TempDir::new("xfr-knotd");
    let mut knot = knot_secondary(&knotd, &work, knot_port, server.addr4().port(), None);

    // knotd starts with no copy and transfers the zone from shardns at once.
    wait_for_serial(&mut knot, knot_addr, 1);
    let from_knot = sorted(records(&kdig(knot_addr, &["xfr.test", "AXFR"])));
    let from_us = sorted(records(&kdig(server.addr4(), &["xfr.test", "AXFR"])));
    assert_eq!(from_knot.len(), record_count(hosts) + 1);
    assert_eq!(from_knot, from_us, "knotd's copy differs from the primary");
    // And it answers from that copy like we do.
    assert_eq!(
        dig(knot_addr, &["+short", "h1999.xfr.test", "A"]).trim(),
        "10.0.7.207"
    );

    // A new version on the primary: the reload keeps the change in the zone's journal and
    // sends knotd a NOTIFY; knotd asks (IXFR from serial 1), gets the one difference in
    // incremental form, and serves the new record. (Its SOA refresh is two hours away:
    // only the NOTIFY can bring it this soon.)
    std::fs::write(&path, zone_text(2, hosts, "new A 192.0.2.99\n")).unwrap();
    let out = server.control("reload");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    wait_for_serial(&mut knot, knot_addr, 2);
    assert_eq!(
        dig(knot_addr, &["+short", "new.xfr.test", "A"]).trim(),
        "192.0.2.99"
    );
    let from_knot = sorted(records(&kdig(knot_addr, &["xfr.test", "AXFR"])));
    let from_us = sorted(records(&kdig(server.addr4(), &["xfr.test", "AXFR"])));
    assert_eq!(from_knot, from_us, "knotd's copy after the reload differs");
    assert!(server.stat("shardns_xfr_total{event=\"done\"}") >= 4.0);
    assert!(server
        .log()
        .contains("transfer of xfr.test. (IXFR incremental from 1, serial 2)"));
    // Over UDP the same differences fit in one message (RFC 1995 §2): SOA 2, SOA 1, SOA 2,
    // the new record, SOA 2.
    let udp = kdig(server.addr4(), &["+notcp", "xfr.test", "IXFR=1"]);
    let udp = records(&udp);
    assert_eq!(udp.len(), 5, "{udp:?}");
    assert!(udp[3].contains("192.0.2.99"), "{udp:?}");
    // The reload's NOTIFY was answered (the startup one too, if knotd was up in time).
    assert!(server.stat("shardns_notify_total{result=\"answered\"}") >= 1.0);
    let answered = format!("notify of xfr.test. (serial 2) to {knot_addr}: answered NOERROR");
    server_log_contains(&server, &answered);
}

/// Waits (5 s at most) for `needle` in the server's log.
fn server_log_contains(server: &Server, needle: &str) {
    let end = Instant::now() + Duration::from_secs(5);
    while !server.log().contains(needle) {
        assert!(Instant::now() < end, "no {needle:?} in:\n{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A secondary played by the test: it must get a NOTIFY at startup and after a reload that
/// changes the serial, none after a reload that does not, and retries while it stays quiet.
#[test]
fn notify_at_startup_after_reloads_and_retried_until_answered() {
    let secondary = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    secondary
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let target = secondary.local_addr().unwrap().to_string();
    let (server, path) = start("xfr-notify", &zone_text(41, 5, ""), &["--notify", &target]);
    // Reads one NOTIFY: (ID, the serial in its answer section, the message, its sender).
    let next = || {
        let mut buf = [0u8; 512];
        let (n, from) = secondary.recv_from(&mut buf).expect("a NOTIFY within 5 s");
        let m = parse(&buf[..n]);
        let h = &m.metadata;
        assert_eq!(u8::from(h.op_code), 4, "opcode NOTIFY");
        assert!(h.authoritative && h.message_type == hickory_proto::op::MessageType::Query);
        assert_eq!(m.queries[0].name().to_string(), "xfr.test.");
        assert_eq!(u16::from(m.queries[0].query_type()), 6);
        let serial = match &m.answers[0].data {
            hickory_proto::rr::RData::SOA(soa) => soa.serial,
            other => panic!("not an SOA: {other:?}"),
        };
        (h.id, serial, buf[..n].to_vec(), from)
    };
    let answer = |msg: &[u8], from: SocketAddr| {
        let mut r = msg.to_vec();
        r[2] |= 0x80; // QR
        secondary.send_to(&r, from).unwrap();
    };
    let (_, serial, msg, from) = next();
    assert_eq!(serial, 41, "the startup NOTIFY");
    answer(&msg, from);
    server.wait_for_stat(
        "shardns_notify_total{result=\"answered\"}",
        1.0,
        Duration::from_secs(5),
    );

    // Same serial: no NOTIFY. New serial: one, retried while unanswered.
    assert!(server.control("reload").status.success());
    std::fs::write(&path, zone_text(42, 5, "")).unwrap();
    assert!(server.control("reload").status.success());
    let (id1, serial, _, _) = next();
    assert_eq!(serial, 42);
    let (id2, serial, msg, from) = next();
    assert_eq!((id2, serial), (id1, 42), "a retry of the same NOTIFY");
    answer(&msg, from);
    server.wait_for_stat(
        "shardns_notify_total{result=\"answered\"}",
        2.0,
        Duration::from_secs(5),
    );
    assert_eq!(server.stat("shardns_notify_total{result=\"sent\"}"), 3.0);
    assert_eq!(server.stat("shardns_notify_total{result=\"failed\"}"), 0.0);
    // Nothing more comes once answered (the next retry would have been 2 s later).
    secondary
        .set_read_timeout(Some(Duration::from_millis(2500)))
        .unwrap();
    let mut buf = [0u8; 512];
    assert!(
        secondary.recv_from(&mut buf).is_err(),
        "a NOTIFY after the answer"
    );
}

/// knotd as a secondary of xfr.test. from the primary at 127.0.0.1:`primary`, taking
/// NOTIFY from 127.0.0.1, and transfers signed with `key` (NAME, base64 secret) if given.
fn knot_secondary(
    knotd: &std::path::Path,
    work: &TempDir,
    port: u16,
    primary: u16,
    key: Option<(&str, &str)>,
) -> Daemon {
    let (keys, remote_key) = match key {
        Some((name, secret)) => (
            format!("key:\n  - id: {name}\n    algorithm: hmac-sha256\n    secret: {secret}\n"),
            format!("    key: {name}\n"),
        ),
        None => (String::new(), String::new()),
    };
    let conf = format!(
        "server:\n    rundir: \"{w}\"\n    listen: 127.0.0.1@{port}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         database:\n    storage: \"{w}\"\n{keys}\
         remote:\n  - id: primary\n    address: 127.0.0.1@{primary}\n{remote_key}\
         acl:\n  - id: local\n    address: 127.0.0.1\n    action: [transfer, notify]\n\
         zone:\n  - domain: xfr.test\n    master: primary\n    acl: local\n\
         \x20   file: \"{w}/xfr.test.zone\"\n    zonefile-sync: -1\n",
        w = work.path().display(),
    );
    let conf_path = work.write("knot.conf", &conf);
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&conf_path);
    Daemon::spawn("knotd", cmd, work.path().join("knotd.log"))
}

#[test]
fn tsig_signed_transfers_with_kdig_and_knotd() {
    let hosts = 3000;
    let secret = "3q2+7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGho=";
    let key = format!("hmac-sha256:xfr-key:{secret}");
    let knot_port = free_port();
    let (server, _) = start(
        "xfr-tsig",
        &zone_text(9, hosts, ""),
        &["--allow-transfer", "127.0.0.1", "--transfer-key", &key],
    );
    let v4 = server.addr4();
    // kdig checks the request's answer against the key (a wrong MAC on the first message
    // fails it); the chaining of the later messages is left to knotd below, which checks
    // every one (with the chaining broken on purpose, kdig still accepted the transfer and
    // knotd refused it).
    let out = kdig_output(v4, &["-y", &key, "xfr.test", "AXFR"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success() && !err.contains(";; ERROR"), "{err}");
    let all = records(&text);
    let tsigs = all.iter().filter(|l| l.contains(" tsig ")).count();
    assert!(tsigs > 1, "one TSIG per message, several messages: {tsigs}");
    assert_eq!(all.len() - tsigs, record_count(hosts) + 1);
    // Unsigned, another secret, an unknown key.
    let status = |args: &[&str]| {
        let out = kdig_output(v4, args);
        String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned()
    };
    assert!(status(&["xfr.test", "AXFR"]).contains("REFUSED"));
    let wrong = "hmac-sha256:xfr-key:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    assert!(status(&["-y", wrong, "xfr.test", "AXFR"]).contains("BADSIG"));
    let unknown = format!("hmac-sha256:other-key:{secret}");
    assert!(status(&["-y", &unknown, "xfr.test", "AXFR"]).contains("BADKEY"));
    // IXFR from the current serial: the SOA alone, signed.
    let ixfr = status(&["-y", &key, "xfr.test", "IXFR=9"]);
    assert!(
        !ixfr.contains(";; ERROR") && ixfr.contains("TSIG"),
        "{ixfr}"
    );

    // knotd with the key: it transfers the zone and verifies every message itself.
    let Some(knotd) = find_program("knotd", "KNOTD") else {
        println!("xfr: SKIPPED the knotd part: knotd is not installed");
        return;
    };
    let work = TempDir::new("xfr-tsig-knotd");
    let mut knot = knot_secondary(
        &knotd,
        &work,
        knot_port,
        v4.port(),
        Some(("xfr-key", secret)),
    );
    let knot_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, knot_port));
    wait_for_serial(&mut knot, knot_addr, 9);
    assert_eq!(
        dig(knot_addr, &["+short", "h2999.xfr.test", "A"]).trim(),
        "10.0.11.183"
    );
}

/// Waits (30 s at most) until knotd serves the zone at `serial`.
fn wait_for_serial(knot: &mut Daemon, addr: SocketAddr, serial: u32) {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        knot.check_alive();
        let soa = dig(addr, &["+short", "xfr.test", "SOA"]);
        if soa.split_whitespace().nth(2) == Some(&serial.to_string()) {
            return;
        }
        assert!(
            Instant::now() < end,
            "knotd has no serial {serial} after 30 s (SOA {soa:?}); its log:\n{}",
            knot.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_stalled_transfer_holds_up_nobody_and_ends_at_the_idle_timeout() {
    let hosts = 60_000;
    let (server, _) = start(
        "xfr-slow",
        &zone_text(7, hosts, ""),
        &[
            "--allow-transfer",
            "127.0.0.2",
            "--tcp-idle-timeout-ms",
            "1500",
        ],
    );
    // A client asks for the zone (about 5 MB), takes the first message, then stops reading.
    let mut slow = tcp_from(Ipv4Addr::new(127, 0, 0, 2), server.addr4());
    let q = query(1, "xfr.test", 252, None);
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    slow.write_all(&framed).unwrap();
    let first = read_frame(&mut slow).expect("the first message");
    assert!(parse(&first).answers.len() > 100);
    assert_eq!(server.stat("shardns_xfr_total{event=\"started\"}"), 1.0);

    // The same (only) worker still answers UDP and other TCP clients at once.
    let sock = udp_client(server.addr4());
    for i in 0..200 {
        let r = udp_exchange(&sock, &query(i, "h42.xfr.test", 1, None)).expect("a UDP answer");
        assert_eq!(answers(&parse(&r)), ["A 10.0.0.42"]);
    }
    let tcp = tcp_exchange(server.addr4(), &[query(7, "h7.xfr.test", 1, None)]);
    assert_eq!(answers(&parse(&tcp[0])), ["A 10.0.0.7"]);

    // The stalled transfer ends at the idle timeout, counted as aborted.
    server.wait_for_stat(
        "shardns_xfr_total{event=\"aborted\"}",
        1.0,
        Duration::from_secs(10),
    );
    assert!(closed_by_server(&mut drain(slow), Duration::from_secs(5)));

    // A client that reads gets the whole zone.
    let started = Instant::now();
    let out = kdig(server.addr4(), &["-b", "127.0.0.2", "xfr.test", "AXFR"]);
    let all = records(&out);
    assert_eq!(
        all.len(),
        record_count(hosts) + 1,
        "{}",
        &out[out.len().saturating_sub(500)..]
    );
    println!(
        "xfr: {} records of a {hosts}-host zone in {:.2} s (debug build)",
        all.len(),
        started.elapsed().as_secs_f64()
    );
    server.wait_for_stat(
        "shardns_xfr_total{event=\"done\"}",
        1.0,
        Duration::from_secs(5),
    );
}

/// Reads and drops whatever the server had queued for `s` (its socket buffers hold part of
/// the transfer), so that what follows is the close.
fn drain(mut s: std::net::TcpStream) -> std::net::TcpStream {
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    s
}

#[test]
fn transfers_are_refused_by_default() {
    let (server, _) = start("xfr-off", &zone_text(1, 10, ""), &[]);
    let out = dig(server.addr4(), &["xfr.test", "AXFR"]);
    assert!(out.contains("Transfer failed"), "{out}");
    assert_eq!(server.stat("shardns_xfr_total{event=\"refused\"}"), 1.0);
    assert_eq!(server.stat("shardns_xfr_total{event=\"started\"}"), 0.0);
}
