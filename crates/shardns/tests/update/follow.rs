//! knotd as a secondary of a shardns primary whose zone changes by dynamic update: every
//! SOA query, transfer and NOTIFY signed with the transfer key; each update is journaled,
//! NOTIFY goes out, and knotd takes the change as a true IXFR (its log says so), serving
//! the updated records and serial. An IXFR from the first serial (kdig) gets the
//! incremental answer from the journal. Updates survive a restart and a kill.

use super::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// knotd as a secondary of `primary` for the zone, TSIG on everything.
fn knot_secondary(knotd: &Path, work: &Path, listen: SocketAddr, primary: SocketAddr) -> Daemon {
    let rest = format!(
        "key:\n  - id: {TSIG_NAME}\n    algorithm: hmac-sha256\n    secret: {TSIG_SECRET}\n\
         remote:\n  - id: primary\n    address: {pip}@{pport}\n    key: {TSIG_NAME}\n\
         acl:\n  - id: notify\n    address: 127.0.0.1\n    key: {TSIG_NAME}\n    action: notify\n\
         zone:\n  - domain: {APEX}\n    master: primary\n    acl: notify\n\
         \x20   storage: \"{w}\"\n    file: \"{w}/knot-copy.zone\"\n    zonefile-sync: -1\n",
        w = work.display(),
        pip = primary.ip(),
        pport = primary.port(),
    );
    spawn_knot(knotd, work, listen, "info", &rest)
}

/// Waits until `at` answers `serial` for the zone; panics after `limit` with `context()`.
fn wait_serial(at: SocketAddr, serial: u32, limit: Duration, context: impl Fn() -> String) {
    let end = Instant::now() + limit;
    loop {
        let got = serial_at(at);
        if got == Some(serial) {
            return;
        }
        assert!(
            Instant::now() < end,
            "{at} answers serial {got:?}, not {serial}, after {limit:?}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn knotd_follows_updates_by_notify_and_ixfr() {
    let knotd = knotd();
    let work = TempDir::new("upd-follow");
    let file = work.write("upd.test.zone", &zone_text(1));
    let ours = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, free_port()));
    let theirs = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, free_port()));
    let toml = format!(
        "{}[[key]]\nname = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
         [server]\nallow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\n\
         notify = [\"{theirs}\"]\n\
         [[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\nupdate_policy = [\"grant {KEY_NAME} zonesub ANY\"]\n",
        tsig_toml(),
        file.display()
    );
    let config = work.write("shardns.toml", &toml);
    let config = config.to_str().unwrap().to_string();
    let server = Server::start_at(
        "upd-follow-s",
        &[ours],
        &["--workers", "1", "--config", &config],
    );
    let knot_dir = TempDir::new("upd-follow-knot");
    let mut knot = knot_secondary(&knotd, knot_dir.path(), theirs, ours);
    let context =
        |knot: &Daemon| format!("--- knotd:\n{}\n--- shardns:\n{}", knot.log(), server.log());
    wait_serial(theirs, 1, Duration::from_secs(30), || context(&knot));

    // Three updates by nsupdate, each a new serial that knotd takes by IXFR.
    let key = upd_key();
    let steps = [
        "update add n1.upd.test. 300 A 192.0.2.61\nsend\n",
        "update delete www.upd.test. A\nupdate add www.upd.test. 300 A 192.0.2.62\nsend\n",
        "update delete alias.upd.test. CNAME\nupdate add n3.upd.test. 300 TXT \"third\"\nsend\n",
    ];
    for (i, body) in steps.iter().enumerate() {
        let r = nsupdate(ours, &["-y", &key], body);
        assert!(r.ok, "update {i}: {}\n{}", r.text, context(&knot));
        let serial = i as u32 + 2;
        assert_eq!(serial_at(ours), Some(serial), "{}", context(&knot));
        knot.check_alive();
        let started = Instant::now();
        wait_serial(theirs, serial, Duration::from_secs(20), || context(&knot));
        println!(
            "knotd: serial {serial} {:.3} s after the update",
            started.elapsed().as_secs_f64()
        );
    }
    assert_eq!(short(theirs, "n1.upd.test", "A"), ["192.0.2.61"]);
    assert_eq!(short(theirs, "www.upd.test", "A"), ["192.0.2.62"]);
    assert_eq!(short(theirs, "n3.upd.test", "TXT"), ["\"third\""]);
    assert_eq!(status(theirs, "alias.upd.test", "CNAME"), "NXDOMAIN");

    // knotd's log: the first transfer an AXFR, the rest incremental, never a fallback.
    let log = knot.log();
    let ixfr = log
        .lines()
        .filter(|l| l.contains("IXFR, incoming") && l.contains("finished"))
        .count();
    assert!(
        ixfr >= 3 && !log.contains("fallback to AXFR"),
        "knotd did not take the updates by IXFR ({ixfr} finished):\n{}",
        context(&knot)
    );
    // "[upd.test.] notify, incoming, remote ..., serial 2", then "refresh, ..., zone
    // updated, ..., serial 1 -> 2": each version told by NOTIFY, each taken.
    for serial in 2..=4 {
        let taken = format!("serial {} -> {serial}", serial - 1);
        let told = log
            .lines()
            .any(|l| l.contains("notify, incoming") && l.ends_with(&format!("serial {serial}")));
        let updated = log
            .lines()
            .any(|l| l.contains("zone updated") && l.contains(&taken));
        assert!(
            told && updated,
            "knotd's log does not show the NOTIFY and refresh to serial {serial}:\n{log}"
        );
    }

    // Our journal: an IXFR from serial 1 is incremental (SOA 4, SOA 1, the deleted, SOA 4,
    // the added, SOA 4), not the whole zone.
    let (out, records) = ixfr_records(ours, &tsig_kdig(), APEX, 1);
    // Deleted: www A .1, alias CNAME; added: n1 A, www A .62, n3 TXT.
    assert_eq!(records.len(), 4 + 2 + 3, "{out}");
    assert!(records[1].contains(" 1 3600 "), "{out}");
}

/// An accepted update is journaled before it is answered: after a restart (SIGTERM, and
/// again after SIGKILL right after the answer) the zone still has it, at its serial, with
/// only `--zone NAME=FILE` given (the journal beside the zone file).
#[test]
fn updates_survive_a_restart_and_a_kill() {
    let zone_dir = TempDir::new("upd-restart-zone");
    let file = zone_dir.write("upd.test.zone", &zone_text(1));
    let zone = format!("{APEX}={}", file.display());
    let key = upd_key();
    let args = ["--workers", "1", "--zone", &zone, "--update-key", &key];
    let mut server = Server::start("upd-restart-1", &args);
    let r = nsupdate(
        server.addr4(),
        &["-y", &key],
        "update add kept.upd.test. 300 A 192.0.2.70\nsend\n",
    );
    assert!(r.ok, "{}\n{}", r.text, server.log());
    server.terminate();
    let server = Server::start("upd-restart-2", &args);
    let at = server.addr4();
    assert_eq!(
        short(at, "kept.upd.test", "A"),
        ["192.0.2.70"],
        "{}",
        server.log()
    );
    assert_eq!(serial_at(at), Some(2));

    // Killed at once after the answer: nothing lost either.
    let r = nsupdate(
        at,
        &["-y", &key],
        "update add killed.upd.test. 300 A 192.0.2.71\nsend\n",
    );
    assert!(r.ok, "{}\n{}", r.text, server.log());
    drop(server); // SIGKILL
    let server = Server::start("upd-restart-3", &args);
    let at = server.addr4();
    assert_eq!(
        short(at, "killed.upd.test", "A"),
        ["192.0.2.71"],
        "{}",
        server.log()
    );
    assert_eq!(short(at, "kept.upd.test", "A"), ["192.0.2.70"]);
    assert_eq!(serial_at(at), Some(3));
}

/// A journal past its limits drops no version its zone file lacks: the file is written
/// first. With `journal_max_depth = 4`, 24 updates (each its own version), then a SIGKILL
/// right after the last answer: every update is still there, at its serial; the journal
/// file stays near its limit and the zone file has caught up.
#[test]
fn updates_past_the_journal_limit_survive_a_kill() {
    let zone_dir = TempDir::new("upd-jfull-zone");
    let file = zone_dir.write("upd.test.zone", &zone_text(1));
    let config = zone_dir.write("shardns.toml", "[server]\njournal_max_depth = 4\n");
    let zone = format!("{APEX}={}", file.display());
    let key = upd_key();
    let config_arg = config.display().to_string();
    let args = [
        "--workers",
        "1",
        "--config",
        &config_arg,
        "--zone",
        &zone,
        "--update-key",
        &key,
    ];
    let server = Server::start("upd-jfull-1", &args);
    for i in 0..24 {
        let r = nsupdate(
            server.addr4(),
            &["-y", &key],
            &format!("update add n{i}.upd.test. 300 A 192.0.2.{i}\nsend\n"),
        );
        assert!(r.ok, "{}\n{}", r.text, server.log());
    }
    let log = server.log();
    drop(server); // SIGKILL
    let journal = std::fs::metadata(format!("{}.journal", file.display())).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let server = Server::start("upd-jfull-2", &args);
    let at = server.addr4();
    for i in 0..24 {
        let name = format!("n{i}.upd.test");
        assert_eq!(
            short(at, &name, "A"),
            [format!("192.0.2.{i}")],
            "{}",
            server.log()
        );
    }
    assert_eq!(serial_at(at), Some(25));
    assert!(log.contains("(journal full)"), "{log}");
    // Four versions of one record each (and the SOA), twice over at most.
    assert!(journal.len() < 4096, "journal of {} octets", journal.len());
    assert!(text.contains("n10.upd.test."), "{text}");
}
