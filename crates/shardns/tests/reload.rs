//! End-to-end: reloading zones while queries run (no query lost or failed), and a broken
//! zone on reload (the old version keeps answering, the error is logged with file:line).

mod common;

use common::*;
use hickory_proto::op::ResponseCode;
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn zone_version(v: u32) -> String {
    format!(
        "$TTL 60\n@ SOA ns hostmaster {v} 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n\
         www A 198.51.100.{v}\nv{v} TXT \"version {v}\"\n"
    )
}

/// A config file with one zone, so reloads re-read the config as well.
fn setup(tag: &str) -> (TempDir, String) {
    let dir = TempDir::new(tag);
    dir.write("reload.test.zone", &zone_version(1));
    let cfg = dir.write(
        "shardns.toml",
        "[server]\nworkers = 2\n\n[[zone]]\nname = \"reload.test.\"\nfile = \"reload.test.zone\"\n",
    );
    (dir, cfg.display().to_string())
}

#[test]
fn twenty_reloads_under_queries_lose_nothing() {
    let (dir, cfg) = setup("reload-load");
    let server = Server::start_in(dir, &["--config", &cfg]);
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    // Two UDP clients (v4, v6) and one TCP client, each one query at a time.
    for (i, addr) in [server.addr4(), server.addr6(), server.addr4()]
        .into_iter()
        .enumerate()
    {
        let (stop, answered) = (Arc::clone(&stop), Arc::clone(&answered));
        clients.push(std::thread::spawn(move || -> Result<u64, String> {
            let deadline = Instant::now() + Duration::from_secs(60);
            let udp = udp_client(addr);
            let mut tcp = TcpStream::connect(addr).unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline && n < 200_000 {
                let q = query(n as u16, "www.reload.test", 1, Some(1232));
                let r = if i == 2 {
                    tcp_exchange_on(&mut tcp, &[q]).pop()
                } else {
                    udp_exchange(&udp, &q)
                };
                let r = r.ok_or_else(|| format!("client {i}: query {n} got no answer"))?;
                let m = parse(&r);
                if m.metadata.response_code != ResponseCode::NoError || m.answers.len() != 1 {
                    return Err(format!("client {i}: query {n} failed: {m:?}"));
                }
                n += 1;
                answered.fetch_add(1, Ordering::Relaxed);
            }
            Ok(n)
        }));
    }
    let zone_path = server.dir.path().join("reload.test.zone");
    for v in 2..=21u32 {
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&zone_path, zone_version(v)).unwrap();
        if v % 2 == 0 {
            let out = server.control("reload");
            assert!(out.status.success(), "reload {v}: {out:?}");
            assert!(String::from_utf8_lossy(&out.stdout).contains("reloaded 1 of 1 zones"));
        } else {
            let before = server.log().matches("reloaded 1 of 1").count();
            server.sighup();
            let end = Instant::now() + Duration::from_secs(10);
            while server.log().matches("reloaded 1 of 1").count() == before {
                assert!(
                    Instant::now() < end,
                    "SIGHUP reload {v} not logged:\n{}",
                    server.log()
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        // The new version is served at once after the reload returns.
        let out = dig(server.addr4(), &["+short", "www.reload.test", "A"]);
        assert_eq!(out.trim(), format!("198.51.100.{v}"), "after reload {v}");
    }
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        let n = c.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
        assert!(n > 0);
    }
    assert!(answered.load(Ordering::Relaxed) > 60);
    assert_eq!(server.stat("shardns_reloads_total{result=\"ok\"}"), 20.0);
    assert_eq!(server.stat("shardns_dropped_total"), 0.0);
}

#[test]
fn broken_zone_on_reload_keeps_the_old_version() {
    let (dir, cfg) = setup("reload-broken");
    let mut server = Server::start_in(dir, &["--config", &cfg]);
    let zone_path = server.dir.path().join("reload.test.zone");
    assert_eq!(
        dig(server.addr4(), &["+short", "www.reload.test"]).trim(),
        "198.51.100.1"
    );

    // Line 5 is broken.
    let mut broken = zone_version(2);
    broken = broken.replacen("www A 198.51.100.2", "www A 198.51.100.256", 1);
    assert_eq!(broken.lines().position(|l| l.contains(".256")), Some(4));
    std::fs::write(&zone_path, &broken).unwrap();
    let out = server.control("reload");
    assert!(!out.status.success(), "a failed reload exits non-zero");
    let where_ = format!("{}:5:", zone_path.display());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&where_),
        "reload output names file:line: {text}"
    );
    assert!(text.contains("keeping its previous version"), "{text}");
    server.wait_for_log(&where_, Duration::from_secs(5));

    // The old version still answers, over UDP and TCP.
    assert_eq!(
        dig(server.addr4(), &["+short", "www.reload.test"]).trim(),
        "198.51.100.1"
    );
    assert_eq!(
        dig(server.addr6(), &["+short", "+tcp", "v1.reload.test", "TXT"]).trim(),
        "\"version 1\""
    );
    // SIGHUP with the same broken file: it has not changed, so it is not read or reported
    // again (issue 19: a broken zone is reported once), and the old version stays.
    server.sighup();
    server.wait_for_log("reloaded 0 of 1 zones", Duration::from_secs(10));
    assert_eq!(server.log().matches(&where_).count(), 1, "{}", server.log());
    assert_eq!(
        dig(server.addr4(), &["+short", "www.reload.test"]).trim(),
        "198.51.100.1"
    );

    // A missing file also keeps the old version.
    std::fs::remove_file(&zone_path).unwrap();
    assert!(!server.control("reload").status.success());
    assert_eq!(
        dig(server.addr4(), &["+short", "www.reload.test"]).trim(),
        "198.51.100.1"
    );

    // A broken config keeps everything.
    let cfg_path = server.dir.path().join("shardns.toml");
    std::fs::write(
        &cfg_path,
        "[server]\nworkers = 2\n[[zone]]\nname = \"reload.test.\"\nfiel = \"x\"\n",
    )
    .unwrap();
    let out = server.control("reload");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("shardns.toml:5:"),
        "{out:?}"
    );
    assert_eq!(
        dig(server.addr4(), &["+short", "www.reload.test"]).trim(),
        "198.51.100.1"
    );

    // Fixed: the new version is served.
    std::fs::write(
        &cfg_path,
        "[server]\nworkers = 2\n[[zone]]\nname = \"reload.test.\"\nfile = \"reload.test.zone\"\n",
    )
    .unwrap();
    std::fs::write(&zone_path, zone_version(3)).unwrap();
    let out = server.control("reload");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        dig(server.addr4(), &["+short", "www.reload.test"]).trim(),
        "198.51.100.3"
    );
    // Three failed: the broken file, the missing one, the broken config (the SIGHUP that
    // found the broken file unchanged read nothing, and says the zone is still failing).
    assert!(server.stat("shardns_reloads_total{result=\"failed\"}") >= 3.0);
    assert!(server.log().contains("1 still failing"), "{}", server.log());
}

#[test]
fn reload_adds_and_removes_zones() {
    let (dir, cfg) = setup("reload-zones");
    let server = Server::start_in(dir, &["--config", &cfg]);
    server.dir.write(
        "other.test.zone",
        "$TTL 60\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 192.0.2.9\n",
    );
    let cfg_path = server.dir.path().join("shardns.toml");
    std::fs::write(
        &cfg_path,
        "[[zone]]\nname = \"reload.test.\"\nfile = \"reload.test.zone\"\n\
         [[zone]]\nname = \"other.test.\"\nfile = \"other.test.zone\"\n",
    )
    .unwrap();
    assert!(dig(server.addr4(), &["ns.other.test"]).contains("REFUSED"));
    assert!(server.control("reload").status.success());
    assert_eq!(
        dig(server.addr4(), &["+short", "ns.other.test"]).trim(),
        "192.0.2.9"
    );
    std::fs::write(
        &cfg_path,
        "[[zone]]\nname = \"other.test.\"\nfile = \"other.test.zone\"\n",
    )
    .unwrap();
    assert!(server.control("reload").status.success());
    assert!(dig(server.addr4(), &["www.reload.test"]).contains("REFUSED"));
    assert_eq!(server.stat("shardns_zones"), 1.0);
    // A control socket nobody listens on is a clear error.
    let out = Command::new(BIN)
        .args(["stats", "--control"])
        .arg(server.dir.path().join("nope"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot connect to the control socket"),
        "{out:?}"
    );
}
