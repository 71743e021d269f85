//! End-to-end: many zones (issue 19). A server with a couple of thousand zones reads only
//! what changed on a reload (the reply says how many zones it read: the work is counted,
//! not timed), reads named zones on `shardns reload ZONE...`, and among broken and missing
//! zone files serves every good zone, reports each bad one once, and picks up a fixed one
//! alone.
//!
//! Never: any address but 127.0.0.1 and ::1, unbounded waits, or processes left running.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

/// Zone `i`'s file: its SOA (serial), NS and an A record for `www` (192.0.2.`host`).
fn zone_text(i: usize, serial: u32, host: u8) -> String {
    format!(
        "$TTL 300\n@ SOA ns.z{i}.test. hostmaster {serial} 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.{host}\n"
    )
}

/// Writes `n` zones (z0.test. ... ) and a config listing them; returns the config's path.
fn write_zones(dir: &TempDir, n: usize, broken: &[usize], missing: &[usize]) -> std::path::PathBuf {
    let mut config = String::new();
    for i in 0..n {
        let file = dir.path().join(format!("z{i}.zone"));
        if broken.contains(&i) {
            // Line 5: an address that is not one.
            std::fs::write(
                &file,
                zone_text(i, 1, 1)
                    .replace("192.0.2.1\nwww A 192.0.2.1", "192.0.2.1\nwww A 192.0.2.300"),
            )
            .unwrap();
        } else if !missing.contains(&i) {
            std::fs::write(&file, zone_text(i, 1, 1)).unwrap();
        }
        config.push_str(&format!(
            "[[zone]]\nname = \"z{i}.test.\"\nfile = \"{}\"\n",
            file.display()
        ));
    }
    dir.write("shardns.toml", &config)
}

/// The address `www.z{i}.test.` has, or the RCODE if none.
fn www(server: &Server, i: usize) -> Result<String, u16> {
    let sock = udp_client(server.addr4());
    let wire =
        udp_exchange(&sock, &query(7, &format!("www.z{i}.test."), 1, None)).expect("an answer");
    let m = parse(&wire);
    match m.answers.first() {
        Some(r) => Ok(r.data.to_string()),
        None => Err(u16::from(m.metadata.response_code)),
    }
}

/// `shardns reload [ZONE...]`: (success, reply text).
fn reload(server: &Server, zones: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .arg("reload")
        .arg("--control")
        .arg(&server.control)
        .args(zones)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Rewrites a zone file after the file system's timestamp granularity has passed.
fn rewrite(path: &Path, text: &str) {
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_reload_reads_only_the_zones_that_changed() {
    let n = 2000;
    let dir = TempDir::new("many-zones");
    let config = write_zones(&dir, n, &[], &[]);
    let zone5 = dir.path().join("z5.zone");
    let config = config.display().to_string();
    let mut server = Server::start_in(dir, &["--config", &config, "--workers", "2"]);
    server.wait_for_log(
        &format!("loaded {n} zones"),
        std::time::Duration::from_secs(5),
    );
    for i in [0, 1, n / 2, n - 1] {
        assert_eq!(www(&server, i).as_deref(), Ok("192.0.2.1"), "z{i}");
    }

    // Nothing changed: nothing read.
    let (ok, text) = reload(&server, &[]);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("reloaded 0 of {n} zones")), "{text}");
    assert!(text.contains(&format!("({n} unchanged")), "{text}");

    // One file changed: that zone alone is read, and served at once.
    rewrite(&zone5, &zone_text(5, 2, 55));
    let (ok, text) = reload(&server, &[]);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("reloaded 1 of {n} zones")), "{text}");
    assert_eq!(www(&server, 5).as_deref(), Ok("192.0.2.55"));
    assert_eq!(www(&server, 6).as_deref(), Ok("192.0.2.1"));

    // SIGHUP does the same.
    rewrite(&zone5, &zone_text(5, 3, 56));
    let before = server.log().matches("reloaded 1 of").count();
    server.sighup();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.log().matches("reloaded 1 of").count() == before {
        assert!(std::time::Instant::now() < end, "{}", server.log());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(www(&server, 5).as_deref(), Ok("192.0.2.56"));

    // Named zones are read whether they changed or not; an unknown name is said to be so.
    let (ok, text) = reload(&server, &["z9.test.", "Z10.test", "z9.TEST."]);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("reloaded 2 of {n} zones")), "{text}");
    let (_, text) = reload(&server, &["nosuch.test."]);
    assert!(
        text.contains("zone nosuch.test. is not configured"),
        "{text}"
    );
    assert!(text.contains(&format!("reloaded 0 of {n} zones")), "{text}");
    let (ok, text) = reload(&server, &["bad..name"]);
    assert!(!ok, "{text}");
}

#[test]
fn broken_and_missing_zones_among_many_are_reported_once() {
    let n = 1000;
    let broken = [3, 500, 999];
    let missing = [4, 501];
    let dir = TempDir::new("many-bad");
    let config = write_zones(&dir, n, &broken, &missing);
    let files: Vec<_> = (0..n)
        .map(|i| dir.path().join(format!("z{i}.zone")))
        .collect();
    let config = config.display().to_string();
    let mut server = Server::start_in(dir, &["--config", &config, "--workers", "2"]);
    server.wait_for_log("5 failed", std::time::Duration::from_secs(5));
    // Every good zone answers; the bad ones are not served.
    for i in 0..n {
        let want = if broken.contains(&i) || missing.contains(&i) {
            Err(5) // REFUSED: no zone of ours
        } else {
            Ok("192.0.2.1".to_string())
        };
        assert_eq!(www(&server, i), want, "z{i}");
    }
    let count = |needle: &str| server.log().matches(needle).count();
    for &i in &broken {
        assert_eq!(
            count(&format!("{}:5:", files[i].display())),
            1,
            "z{i}\n{}",
            server.log()
        );
    }
    for &i in &missing {
        assert_eq!(count(&format!("{}:", files[i].display())), 1, "z{i}");
    }

    // A reload with nothing changed reads nothing and reports nothing again.
    let (_, text) = reload(&server, &[]);
    assert!(text.contains(&format!("reloaded 0 of {n} zones")), "{text}");
    assert!(text.contains("5 still failing"), "{text}");
    for &i in &broken {
        assert_eq!(count(&format!("{}:5:", files[i].display())), 1, "z{i}");
    }

    // One fixed, one created: just those two are read, and served.
    rewrite(&files[500], &zone_text(500, 2, 50));
    rewrite(&files[501], &zone_text(501, 1, 51));
    let (ok, text) = reload(&server, &[]);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("reloaded 2 of {n} zones")), "{text}");
    assert!(text.contains("3 still failing"), "{text}");
    assert_eq!(www(&server, 500).as_deref(), Ok("192.0.2.50"));
    assert_eq!(www(&server, 501).as_deref(), Ok("192.0.2.51"));
    assert_eq!(www(&server, 3), Err(5));
}

#[test]
fn a_zone_list_names_the_zones_and_a_reload_follows_it() {
    let n = 1000;
    let dir = TempDir::new("zone-list");
    let mut list = String::from("# one zone per line: NAME FILE\n");
    for i in 0..n {
        dir.write(&format!("z{i}.zone"), &zone_text(i, 1, 1));
        list.push_str(&format!("z{i}.test. z{i}.zone\n"));
    }
    let list_path = dir.write("zones.list", &list);
    let arg = list_path.display().to_string();
    let mut server = Server::start_in(dir, &["--zone-list", &arg, "--workers", "2"]);
    server.wait_for_log(
        &format!("loaded {n} zones"),
        std::time::Duration::from_secs(5),
    );
    assert_eq!(www(&server, n - 1).as_deref(), Ok("192.0.2.1"));

    // One line added, one removed: the reload reads the new zone alone and drops the other.
    server.dir.write(&format!("z{n}.zone"), &zone_text(n, 1, 9));
    let list = list.replace("z0.test. z0.zone\n", "") + &format!("z{n}.test. z{n}.zone\n");
    rewrite(&list_path, &list);
    let (ok, text) = reload(&server, &[]);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("reloaded 1 of {n} zones")), "{text}");
    assert!(text.contains("1 removed"), "{text}");
    assert_eq!(www(&server, n).as_deref(), Ok("192.0.2.9"));
    assert_eq!(www(&server, 0), Err(5));

    // A malformed line: the reload fails with list:line and keeps everything.
    rewrite(&list_path, &(list.clone() + "only-a-name.test.\n"));
    let (ok, text) = reload(&server, &[]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "{}:{}: expected NAME FILE",
            list_path.display(),
            n + 2 // the comment line, n lines, then this one
        )),
        "{text}"
    );
    assert_eq!(www(&server, n).as_deref(), Ok("192.0.2.9"));
}
