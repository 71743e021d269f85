//! End-to-end: many zones (issue 19). A server with a couple of thousand zones reads only
//! what changed on a reload (the reply says how many zones it read: the work is counted,
//! not timed), reads named zones on `shardns reload ZONE...`, and among broken and missing
//! zone files serves every good zone, reports each bad one once, and picks up a fixed one
//! alone. A SIGHUP finds each kind of edit (rename over, in place, touch, a new file, a
//! deleted one, an `$INCLUDE`d file, the zone list) from inotify events, `stat`ing only the
//! files concerned (the summary line counts them).
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

/// SIGHUP and waits (bounded) for its summary line in the log; returns the line.
fn hup(server: &Server) -> String {
    let before = server.log().matches("reloaded ").count();
    server.sighup();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = server.log();
        if log.matches("reloaded ").count() > before {
            let line = log.lines().rfind(|l| l.contains("reloaded ")).unwrap();
            return line.to_string();
        }
        assert!(std::time::Instant::now() < end, "no reload logged:\n{log}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The files a reload `stat`ed, from its summary line.
fn stat_ed(line: &str) -> usize {
    let (before, _) = line.split_once(" files stat'ed").expect(line);
    before.rsplit(' ').next().unwrap().parse().expect(line)
}

#[test]
fn sighup_sees_every_kind_of_edit_without_looking_at_the_other_zones() {
    // Zones from a zone list; z7 $INCLUDEs inc.txt; z2000 is listed but has no file yet.
    let n = 2000;
    let dir = TempDir::new("many-edits");
    let mut list = String::new();
    for i in 0..n {
        let extra = if i == 7 { "$INCLUDE inc.txt\n" } else { "" };
        dir.write(&format!("z{i}.zone"), &(zone_text(i, 1, 1) + extra));
        list.push_str(&format!("z{i}.test. z{i}.zone\n"));
    }
    list.push_str(&format!("z{n}.test. z{n}.zone\n"));
    dir.write("inc.txt", "mail A 192.0.2.7\n");
    let list_path = dir.write("zones.list", &list);
    let base = dir.path().to_path_buf();
    let path = |f: &str| base.join(f);
    let (z1, z2, z3, z4, inc) = (
        path("z1.zone"),
        path("z2.zone"),
        path("z3.zone"),
        path("z4.zone"),
        path("inc.txt"),
    );
    let znew = path(&format!("z{n}.zone"));
    let arg = list_path.display().to_string();
    let mut server = Server::start_in(dir, &["--zone-list", &arg, "--workers", "2"]);
    server.wait_for_log(
        &format!("loaded {n} zones"),
        std::time::Duration::from_secs(5),
    );
    let all = n + 1;

    // Nothing changed: nothing read; the zone list and the directory stat'ed, no zone file.
    let line = hup(&server);
    assert!(
        line.contains(&format!("reloaded 0 of {all} zones")),
        "{line}"
    );
    assert!(
        line.contains("config unchanged, changes from inotify"),
        "{line}"
    );
    assert_eq!(stat_ed(&line), 2, "{line}");

    // Each edit: one zone read, its file (and included file) stat'ed, none of the others.
    let edit = |what: &str, change: &dyn Fn(), i: usize, want: Result<&str, u16>| {
        change();
        let line = hup(&server);
        assert!(line.contains(&format!("of {all} zones")), "{what}: {line}");
        assert!(
            line.contains("reloaded 1 of") || line.contains("1 failed"),
            "{what}: {line}"
        );
        assert!(stat_ed(&line) <= 4, "{what}: {line}");
        assert_eq!(www(&server, i).as_deref().map_err(|e| *e), want, "{what}");
    };
    // An editor's save: a new file renamed over the old one.
    edit(
        "rename over",
        &|| {
            std::fs::write(path("z1.zone.swp"), zone_text(1, 2, 11)).unwrap();
            std::fs::rename(path("z1.zone.swp"), &z1).unwrap();
        },
        1,
        Ok("192.0.2.11"),
    );
    // Written in place, at once, same length (the mtime need not move).
    edit(
        "in place",
        &|| std::fs::write(&z2, zone_text(2, 2, 22)).unwrap(),
        2,
        Ok("192.0.2.22"),
    );
    // touch: read again (nothing new to serve).
    edit(
        "touch",
        &|| {
            let f = std::fs::File::options().write(true).open(&z3).unwrap();
            f.set_modified(std::time::SystemTime::now()).unwrap();
        },
        3,
        Ok("192.0.2.1"),
    );
    // The included file.
    edit(
        "include",
        &|| std::fs::write(&inc, "mail A 192.0.2.77\n").unwrap(),
        7,
        Ok("192.0.2.1"),
    );
    let sock = udp_client(server.addr4());
    let m = parse(&udp_exchange(&sock, &query(9, "mail.z7.test.", 1, None)).unwrap());
    assert_eq!(m.answers[0].data.to_string(), "192.0.2.77");
    // The listed zone's file created.
    edit(
        "new file",
        &|| std::fs::write(&znew, zone_text(n, 1, 99)).unwrap(),
        n,
        Ok("192.0.2.99"),
    );
    // Deleted: reported, the previous version kept.
    edit(
        "deleted",
        &|| std::fs::remove_file(&z4).unwrap(),
        4,
        Ok("192.0.2.1"),
    );
    assert!(server.log().contains(&format!("{}:", z4.display())));

    // The zone list edited: read again, the zone added is served.
    server
        .dir
        .write(&format!("z{}.zone", n + 1), &zone_text(n + 1, 1, 42));
    rewrite(
        &list_path,
        &(list + &format!("z{}.test. z{}.zone\n", n + 1, n + 1)),
    );
    let line = hup(&server);
    assert!(
        line.contains(&format!("reloaded 1 of {} zones", n + 2)),
        "{line}"
    );
    assert!(line.contains("config read"), "{line}");
    assert_eq!(www(&server, n + 1).as_deref(), Ok("192.0.2.42"));
}

#[test]
fn queries_arriving_together_get_their_own_zones_answers() {
    // A worker starts the zone lookups of every datagram of a recvmmsg batch before it
    // answers any (ZoneSet::prefetch): datagrams sent back to back, to different zones,
    // malformed ones among them, must each get their own zone's answer as before.
    let n = 2000;
    let dir = TempDir::new("many-zones-batch");
    let mut config = String::new();
    for i in 0..n {
        let file = dir.path().join(format!("z{i}.zone"));
        std::fs::write(&file, zone_text(i, 1, (i % 250 + 1) as u8)).unwrap();
        config.push_str(&format!(
            "[[zone]]\nname = \"z{i}.test.\"\nfile = \"{}\"\n",
            file.display()
        ));
    }
    let config = dir.write("shardns.toml", &config).display().to_string();
    let mut server = Server::start_in(dir, &["--config", &config, "--workers", "1"]);
    server.wait_for_log(
        &format!("loaded {n} zones"),
        std::time::Duration::from_secs(5),
    );
    let sock = udp_client(server.addr4());
    let mut buf = vec![0u8; 65535];
    for burst in 0..4u16 {
        let mut expected = std::collections::HashMap::new();
        for k in 0..64u16 {
            let id = burst * 100 + k;
            let i = (usize::from(id) * 7919) % n;
            let mut q = query(id, &format!("www.z{i}.test."), 1, None);
            match k % 16 {
                // Two questions, a question name that points elsewhere, a cut header:
                // skipped by the staging, refused or dropped by the answer as before.
                5 => q[5] = 2,
                9 => q[12] = 0xc0,
                13 => q.truncate(7),
                _ => {
                    expected.insert(id, format!("192.0.2.{}", i % 250 + 1));
                }
            }
            sock.send(&q).unwrap();
        }
        while !expected.is_empty() {
            let len = sock
                .recv(&mut buf)
                .unwrap_or_else(|e| panic!("burst {burst}: {e}; still waiting for {expected:?}"));
            // Only the well-formed queries' answers are read (the others' are not ours to
            // check here: tests/hostile does).
            let id = u16::from_be_bytes([buf[0], buf[1]]);
            if let Some(want) = expected.remove(&id) {
                assert_eq!(
                    answers(&parse(&buf[..len])),
                    vec![format!("A {want}")],
                    "id {id}"
                );
            }
        }
    }
    assert_eq!(www(&server, 7).as_deref(), Ok("192.0.2.8"));
    // The bursts did arrive as batches (a debug build reads ~40 a call here).
    let per_call = server.stat("shardns_udp_queries_per_recv_call");
    assert!(per_call > 1.0, "{per_call} datagrams per recvmmsg call");
}
