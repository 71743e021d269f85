//! Catalog zones (RFC 9432): knotd's catalog driving shardns, shardns's catalog driving
//! knotd, and catalogs that must not be used (bad version, a member listed twice, a
//! configured zone as a member) leaving the members served as they were. Every catalog
//! and member transfer is signed with TSIG.

use super::*;
use std::fmt::Write as _;

const CAT: &str = "cat.test.";

/// A small member zone whose records name it (so answers tell members apart).
fn member_zone(apex: &str, serial: u32) -> String {
    zone_text(serial, 3, &format!("who TXT \"{apex}\"\n"))
}

/// The TXT `who.<apex>` answers (empty when it does not).
fn who(server: SocketAddr, apex: &str) -> String {
    dig(server, &["+short", &format!("who.{apex}"), "TXT"])
        .trim()
        .to_string()
}

/// Panics unless the signed AXFRs of `apex` from `a` and `b` hold the same records.
fn same_zone_signed(a: SocketAddr, b: SocketAddr, apex: &str) {
    let (x, y) = (axfr(a, apex, true), axfr(b, apex, true));
    assert!(!x.is_empty() && x == y, "{apex}: {x:#?}\n{y:#?}");
}

/// Waits until `check()` holds; panics after `limit` with `context()`.
fn wait_until(limit: Duration, mut check: impl FnMut() -> bool, context: impl Fn() -> String) {
    let end = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < end, "not within {limit:?}\n{}", context());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// knotd as the producer of `CAT`, with `members` (apex, group) from files in `work`;
/// NOTIFY (signed) to `notify`.
fn knot_producer_conf(
    work: &Path,
    listen: SocketAddr,
    notify: SocketAddr,
    members: &[(&str, Option<&str>)],
) -> String {
    let mut conf = knot_primary_conf(work, listen, notify);
    let _ = writeln!(conf, "  - domain: {CAT}\n    catalog-role: generate");
    for (apex, group) in members {
        let _ = write!(
            conf,
            "  - domain: {apex}\n    file: \"{w}/{apex}zone\"\n    catalog-role: member\n    catalog-zone: {CAT}\n",
            w = work.display()
        );
        if let Some(g) = group {
            let _ = writeln!(conf, "    catalog-group: {g}");
        }
    }
    conf
}

#[test]
fn knotd_catalog_drives_shardns_members_added_removed_and_moved() {
    let Some(knotd) = find_knotd() else {
        println!("catalog: SKIPPED: knotd is not installed (apt-get install -y knot)");
        return;
    };
    let work = TempDir::new("cat-knot");
    for apex in ["m1.test.", "m2.test.", "m3.test.", "m4.test."] {
        work.write(&format!("{apex}zone"), &member_zone(apex, 1));
    }
    std::fs::create_dir_all(work.path().join("knot-db")).unwrap();
    let knot_addr = local();
    let sec_addr = local();
    let members = [
        ("m1.test.", None),
        ("m2.test.", Some("blue")),
        ("m3.test.", None),
    ];
    let conf = work.write(
        "knot.conf",
        &knot_producer_conf(work.path(), knot_addr, sec_addr, &members),
    );
    let mut cmd = Command::new(&knotd);
    cmd.arg("-c").arg(&conf);
    let mut knot = Daemon::spawn("knotd", cmd, work.path().join("knotd.log"));
    wait_authoritative(knot_addr, "m1.test.", &mut knot);

    // shardns consumes the catalog: members of no group keep a copy in copies/, those of
    // group "blue" in blue/.
    std::fs::create_dir_all(work.path().join("copies")).unwrap();
    std::fs::create_dir_all(work.path().join("blue")).unwrap();
    let toml = format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\n\
         [[template]]\nname = \"default\"\nfile = \"{w}/copies/{{zone}}.zone\"\n\
         [[template]]\nname = \"blue\"\nfile = \"{w}/blue/{{zone}}.zone\"\n\
         [[zone]]\nname = \"{CAT}\"\nfile = \"{w}/cat.copy\"\nprimary = [\"{knot_addr}\"]\n\
         primary_key = \"{TSIG_NAME}\"\ncatalog = \"consume\"\ncatalog_templates = [\"default\", \"blue\"]\n",
        tsig_toml(),
        w = work.path().display()
    );
    let mut server = start_secondary("cat-knot-s", sec_addr, &work, &toml);
    let ctx = || format!("knotd:\n{}\nshardns:\n{}", knot.log(), server.log());
    for apex in ["m1.test.", "m2.test.", "m3.test."] {
        wait_serial(sec_addr, apex, 1, Duration::from_secs(20), ctx);
        assert_same_zone(sec_addr, knot_addr, apex);
        assert_eq!(who(sec_addr, apex), format!("\"{apex}\""));
    }
    assert!(work.path().join("copies/m1.test.zone").exists());
    assert!(work.path().join("blue/m2.test.zone").exists());
    assert_eq!(rcode_of(sec_addr, "m4.test."), "Refused");
    assert_eq!(server.stat("shardns_catalog_member_zones"), 3.0);

    // m4 added, m1 removed, m3 moved to group blue: one config reload of knotd, a new
    // catalog serial, a NOTIFY; shardns follows within seconds.
    let members = [
        ("m2.test.", Some("blue")),
        ("m3.test.", Some("blue")),
        ("m4.test.", None),
    ];
    std::fs::write(
        &conf,
        knot_producer_conf(work.path(), knot_addr, sec_addr, &members),
    )
    .unwrap();
    let changed = Instant::now();
    knotc(work.path(), &["reload"]);
    wait_serial(sec_addr, "m4.test.", 1, Duration::from_secs(20), ctx);
    wait_until(
        Duration::from_secs(20),
        || rcode_of(sec_addr, "m1.test.") == "Refused",
        ctx,
    );
    println!(
        "catalog: knotd's change reflected by shardns in {:.2} s",
        changed.elapsed().as_secs_f64()
    );
    assert_same_zone(sec_addr, knot_addr, "m4.test.");
    assert!(!work.path().join("copies/m1.test.zone").exists());
    wait_until(
        Duration::from_secs(10),
        || work.path().join("blue/m3.test.zone").exists(),
        ctx,
    );
    assert!(!work.path().join("copies/m3.test.zone").exists());
    assert_eq!(who(sec_addr, "m3.test."), "\"m3.test.\"");
    assert!(server
        .log()
        .contains("zone m3.test.: group None -> Some(\"blue\")"));
    assert_eq!(server.stat("shardns_catalog_member_zones"), 3.0);

    // A member's change comes by its own NOTIFY.
    work.write("m4.test.zone", &member_zone("m4.test.", 2));
    knotc(work.path(), &["zone-reload", "m4.test."]);
    wait_serial(sec_addr, "m4.test.", 2, Duration::from_secs(20), ctx);

    // A restart without knotd: the catalog's copy brings the members back, each from its
    // copy.
    server.terminate();
    drop(knot);
    let again = local();
    let server = start_secondary("cat-knot-again", again, &work, &toml);
    let ctx = || server.log();
    wait_serial(again, "m4.test.", 2, Duration::from_secs(10), ctx);
    for apex in ["m2.test.", "m3.test."] {
        wait_serial(again, apex, 1, Duration::from_secs(10), ctx);
    }
    assert_eq!(rcode_of(again, "m1.test."), "Refused");
}

/// A catalog zone file at `CAT` version `serial` listing `members` (id, zone), with
/// `version` as its version property (`None`: none).
fn catalog_text(serial: u32, version: Option<&str>, members: &[(&str, &str)]) -> String {
    let mut t =
        format!("$TTL 0\n@ SOA invalid. invalid. {serial} 3600 600 2147483646 0\n@ NS invalid.\n");
    if let Some(v) = version {
        let _ = writeln!(t, "version TXT \"{v}\"");
    }
    for (id, zone) in members {
        let _ = writeln!(t, "{id}.zones PTR {zone}");
    }
    t
}

#[test]
fn a_bad_catalog_keeps_the_members_served() {
    // shardns as the primary of the catalog and its members (from files), shardns as the
    // consumer.
    let work = TempDir::new("cat-bad");
    for apex in ["a.test.", "b.test.", "c.test."] {
        work.write(&format!("{apex}zone"), &member_zone(apex, 1));
    }
    let cat = work.write(
        "cat.zone",
        &catalog_text(1, Some("2"), &[("a", "a.test."), ("b", "b.test.")]),
    );
    let prim_addr = local();
    let sec_addr = local();
    let mut prim_toml = format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\nnotify = [\"{sec_addr}\"]\n\
         [[zone]]\nname = \"{CAT}\"\nfile = \"{}\"\n",
        tsig_toml(),
        cat.display()
    );
    for apex in ["a.test.", "b.test.", "c.test."] {
        let _ = write!(
            prim_toml,
            "[[zone]]\nname = \"{apex}\"\nfile = \"{}\"\n",
            work.path().join(format!("{apex}zone")).display()
        );
    }
    let primary = start_secondary("cat-bad-p", prim_addr, &work, &prim_toml);
    // The consumer serves c.test. from a file of its own: a catalog may not take it.
    let own = work.write("own-c.zone", &zone_text(77, 1, ""));
    let toml = format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\n\
         [[zone]]\nname = \"c.test.\"\nfile = \"{}\"\n\
         [[zone]]\nname = \"{CAT}\"\nprimary = [\"{prim_addr}\"]\nprimary_key = \"{TSIG_NAME}\"\ncatalog = \"consume\"\n",
        tsig_toml(),
        own.display()
    );
    let server = start_secondary("cat-bad-s", sec_addr, &work, &toml);
    let ctx = || format!("primary:\n{}\nconsumer:\n{}", primary.log(), server.log());
    for apex in ["a.test.", "b.test."] {
        wait_serial(sec_addr, apex, 1, Duration::from_secs(20), ctx);
    }
    let members_served = |server: &Server| {
        serial_at(sec_addr, "a.test.") == Some(1)
            && serial_at(sec_addr, "b.test.") == Some(1)
            && server.stat("shardns_catalog_member_zones") == 2.0
    };

    // Each bad version in turn: reloaded on the primary, NOTIFY, transferred, not used.
    let bad: [(&str, String, &str); 3] = [
        (
            "version 1",
            catalog_text(2, Some("1"), &[("a", "a.test.")]),
            "serial 2 not used, version \"1\" is not supported",
        ),
        (
            "no version",
            catalog_text(3, None, &[("a", "a.test.")]),
            "serial 3 not used, no version property",
        ),
        (
            "a member twice",
            catalog_text(4, Some("2"), &[("a", "a.test."), ("x", "A.test.")]),
            "serial 4 not used, member zone A.test. is listed twice, as a and x",
        ),
    ];
    for (n, (what, text, line)) in bad.iter().enumerate() {
        std::fs::write(&cat, text).unwrap();
        primary.sighup();
        wait_serial(sec_addr, CAT, 2 + n as u32, Duration::from_secs(20), ctx);
        wait_until(Duration::from_secs(10), || server.log().contains(line), ctx);
        assert!(members_served(&server), "{what}: {}", ctx());
        assert_eq!(
            server.stat("shardns_catalog_rejected_total"),
            1.0 + n as f64
        );
    }

    // A good version naming our own c.test. and a bad member name: both left out, a
    // removed, b kept.
    std::fs::write(
        &cat,
        catalog_text(
            5,
            Some("2"),
            &[("b", "b.test."), ("c", "c.test."), ("in", "x.cat.test.")],
        ),
    )
    .unwrap();
    primary.sighup();
    wait_serial(sec_addr, CAT, 5, Duration::from_secs(20), ctx);
    wait_until(
        Duration::from_secs(10),
        || {
            server
                .log()
                .contains("catalog cat.test.: member c.test. is a configured zone")
        },
        ctx,
    );
    wait_until(
        Duration::from_secs(1),
        || {
            server
                .log()
                .contains("member in: x.cat.test. cannot be a member zone")
        },
        ctx,
    );
    wait_until(
        Duration::from_secs(10),
        || rcode_of(sec_addr, "a.test.") == "Refused",
        ctx,
    );
    assert_eq!(serial_at(sec_addr, "b.test."), Some(1));
    assert_eq!(
        serial_at(sec_addr, "c.test."),
        Some(77),
        "our own c.test. stays"
    );
    assert_eq!(server.stat("shardns_catalog_member_zones"), 1.0);

    // A [[zone]] for the member b.test. added by a reload: the catalog keeps it.
    let file_b = work.write("own-b.zone", &zone_text(88, 1, ""));
    let more = format!(
        "{toml}[[zone]]\nname = \"b.test.\"\nfile = \"{}\"\n",
        file_b.display()
    );
    std::fs::write(work.path().join("cat-bad-s.toml"), more).unwrap();
    server.sighup();
    wait_until(
        Duration::from_secs(10),
        || {
            server
                .log()
                .contains("reload: zone b.test. is a member of a catalog; its file is not read")
        },
        ctx,
    );
    assert_eq!(serial_at(sec_addr, "b.test."), Some(1));
}

/// knotd consuming `CAT` from `primary`, members set up by a template of the same primary.
fn knot_consumer_conf(work: &Path, listen: SocketAddr, primary: SocketAddr) -> String {
    format!(
        "server:\n    rundir: \"{w}\"\n    pidfile: \"{w}/knot.pid\"\n    listen: {ip}@{port}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         database:\n    storage: \"{w}/knot-db\"\n\
         key:\n  - id: {TSIG_NAME}\n    algorithm: hmac-sha256\n    secret: {TSIG_SECRET}\n\
         remote:\n  - id: primary\n    address: {pip}@{pport}\n    key: {TSIG_NAME}\n\
         acl:\n  - id: notify\n    address: 127.0.0.1\n    key: {TSIG_NAME}\n    action: notify\n\
         \x20 - id: xfr\n    address: 127.0.0.0/8\n    key: {TSIG_NAME}\n    action: transfer\n\
         template:\n  - id: default\n    storage: \"{w}\"\n    zonefile-sync: -1\n\
         \x20 - id: member\n    storage: \"{w}\"\n    master: primary\n    acl: [notify, xfr]\n    zonefile-sync: -1\n\
         \x20 - id: blue\n    storage: \"{w}\"\n    master: primary\n    acl: [notify, xfr]\n    zonefile-sync: -1\n\
         zone:\n  - domain: {CAT}\n    master: primary\n    acl: [notify, xfr]\n\
         \x20   catalog-role: interpret\n    catalog-template: [member, blue]\n",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
        pip = primary.ip(),
        pport = primary.port(),
    )
}

/// The shardns producer's config: `members` (apex, group) in the catalog, all NOTIFY to
/// `notify`.
fn producer_toml(work: &Path, notify: SocketAddr, members: &[(&str, Option<&str>)]) -> String {
    let mut t = format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\nnotify = [\"{notify}\"]\n\
         [[zone]]\nname = \"{CAT}\"\ncatalog = \"produce\"\n",
        tsig_toml()
    );
    for (apex, group) in members {
        let _ = write!(
            t,
            "[[zone]]\nname = \"{apex}\"\nfile = \"{}\"\ncatalog_member = \"{CAT}\"\n",
            work.join(format!("{apex}zone")).display()
        );
        if let Some(g) = group {
            let _ = writeln!(t, "catalog_group = \"{g}\"");
        }
    }
    t
}

#[test]
fn shardns_catalog_drives_knotd() {
    let Some(knotd) = find_knotd() else {
        println!("catalog: SKIPPED: knotd is not installed (apt-get install -y knot)");
        return;
    };
    let work = TempDir::new("cat-prod");
    for apex in ["p1.test.", "p2.test.", "p3.test."] {
        work.write(&format!("{apex}zone"), &member_zone(apex, 1));
    }
    std::fs::create_dir_all(work.path().join("knot-db")).unwrap();
    let prim_addr = local();
    let knot_addr = local();
    let members = [("p1.test.", None), ("p2.test.", Some("blue"))];
    let config = work.write(
        "producer.toml",
        &producer_toml(work.path(), knot_addr, &members),
    );
    let config_s = config.to_str().unwrap().to_string();
    let server = Server::start_at(
        "cat-prod-p",
        &[prim_addr],
        &["--workers", "1", "--config", &config_s],
    );
    wait_serial(prim_addr, "p1.test.", 1, Duration::from_secs(10), || {
        server.log()
    });
    let conf = work.write(
        "knot.conf",
        &knot_consumer_conf(work.path(), knot_addr, prim_addr),
    );
    let mut cmd = Command::new(&knotd);
    cmd.arg("-c").arg(&conf);
    let knot = Daemon::spawn("knotd", cmd, work.path().join("knotd.log"));
    let ctx = || format!("knotd:\n{}\nshardns:\n{}", knot.log(), server.log());
    for apex in ["p1.test.", "p2.test."] {
        wait_serial(knot_addr, apex, 1, Duration::from_secs(30), ctx);
        same_zone_signed(prim_addr, knot_addr, apex);
    }
    // Knot applied the group: p2 under template "blue".
    let catalog = axfr(prim_addr, CAT, true);
    assert!(
        catalog.iter().any(|r| r.contains("txt \"blue\"")),
        "{catalog:?}"
    );

    // p3 added, p1 removed, by a reload of our config: a new catalog serial, NOTIFY.
    let before = serial_at(prim_addr, CAT).unwrap();
    let members = [("p2.test.", Some("blue")), ("p3.test.", None)];
    std::fs::write(&config, producer_toml(work.path(), knot_addr, &members)).unwrap();
    let changed = Instant::now();
    server.sighup();
    wait_until(
        Duration::from_secs(10),
        || serial_at(prim_addr, CAT).is_some_and(|s| s != before),
        ctx,
    );
    wait_serial(knot_addr, "p3.test.", 1, Duration::from_secs(30), ctx);
    wait_until(
        Duration::from_secs(30),
        || rcode_of(knot_addr, "p1.test.") == "Refused",
        ctx,
    );
    println!(
        "catalog: shardns's change reflected by knotd in {:.2} s",
        changed.elapsed().as_secs_f64()
    );
    same_zone_signed(prim_addr, knot_addr, "p3.test.");
    same_zone_signed(prim_addr, knot_addr, CAT);
}

/// Issue 19: thousands of members added, then half of them removed, by a catalog: each
/// change is swapped in zone by zone, and a zone of the consumer's own answers throughout
/// (a query every 10 ms, none lost, none slow).
#[test]
fn thousands_of_members_come_and_go_while_answers_go_on() {
    const MEMBERS: usize = 2000;
    let work = TempDir::new("cat-many");
    let names: Vec<String> = (0..MEMBERS).map(|i| format!("z{i}.many.")).collect();
    let prim_addr = local();
    let sec_addr = local();
    let producer = |n: usize| {
        let mut t = format!(
            "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\n\
             [[zone]]\nname = \"{CAT}\"\ncatalog = \"produce\"\nnotify = [\"{sec_addr}\"]\n",
            tsig_toml()
        );
        for name in &names[..n] {
            let _ = write!(
                t,
                "[[zone]]\nname = \"{name}\"\nfile = \"m.zone\"\ncatalog_member = \"{CAT}\"\n"
            );
        }
        t
    };
    // One file for every member: $ORIGIN-relative records take each member's name.
    work.write("m.zone", &zone_text(1, 2, ""));
    let config = work.write("producer.toml", &producer(MEMBERS));
    let config_s = config.to_str().unwrap().to_string();
    let primary = Server::start_at(
        "cat-many-p",
        &[prim_addr],
        &["--workers", "1", "--config", &config_s],
    );
    wait_serial(
        prim_addr,
        &names[MEMBERS - 1],
        1,
        Duration::from_secs(20),
        || primary.log(),
    );
    let own = work.write("own.zone", &zone_text(5, 1, ""));
    let toml = format!(
        "{}[server]\n[[zone]]\nname = \"own.test.\"\nfile = \"{}\"\n\
         [[zone]]\nname = \"{CAT}\"\nprimary = [\"{prim_addr}\"]\nprimary_key = \"{TSIG_NAME}\"\ncatalog = \"consume\"\n",
        tsig_toml(),
        own.display()
    );
    let server = start_secondary("cat-many-s", sec_addr, &work, &toml);
    wait_serial(sec_addr, "own.test.", 5, Duration::from_secs(10), || {
        server.log()
    });

    // The prober: own.test.'s SOA every 10 ms until told to stop; the slowest answer.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let prober = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let (mut n, mut lost, mut slowest) = (0u32, 0u32, Duration::ZERO);
            let deadline = Instant::now() + Duration::from_secs(300);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                let t = Instant::now();
                if serial_at(sec_addr, "own.test.") != Some(5) {
                    lost += 1;
                }
                slowest = slowest.max(t.elapsed());
                n += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            (n, lost, slowest)
        })
    };
    let ctx = || {
        server
            .log()
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let started = Instant::now();
    wait_until(
        Duration::from_secs(240),
        || server.stat("shardns_catalog_member_zones") == MEMBERS as f64,
        ctx,
    );
    for name in [&names[0], &names[MEMBERS / 2], &names[MEMBERS - 1]] {
        wait_serial(sec_addr, name, 1, Duration::from_secs(240), ctx);
    }
    let added = started.elapsed();

    // Half of them leave the catalog.
    std::fs::write(&config, producer(MEMBERS / 2)).unwrap();
    let started = Instant::now();
    primary.sighup();
    wait_until(
        Duration::from_secs(60),
        || server.stat("shardns_catalog_member_zones") == (MEMBERS / 2) as f64,
        ctx,
    );
    wait_until(
        Duration::from_secs(10),
        || rcode_of(sec_addr, &names[MEMBERS - 1]) == "Refused",
        ctx,
    );
    let removed = started.elapsed();
    assert_eq!(serial_at(sec_addr, &names[0]), Some(1));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (n, lost, slowest) = prober.join().unwrap();
    println!(
        "catalog: {MEMBERS} members added in {:.2} s, {} removed in {:.2} s; own zone asked {n} times meanwhile, {lost} lost, slowest answer {:.1} ms",
        added.as_secs_f64(),
        MEMBERS / 2,
        removed.as_secs_f64(),
        slowest.as_secs_f64() * 1000.0
    );
    assert_eq!(lost, 0);
    assert!(slowest < Duration::from_millis(500), "{slowest:?}");
    assert!(server.log().contains(&format!(
        "{} member zones (0 added, {} removed",
        MEMBERS / 2,
        MEMBERS / 2
    )));
}

/// RFC 9432 §5.5: a member listed by a second catalog stays with the first until the first
/// names the second in its `coo` property; then it moves, and the first dropping it no
/// longer removes it.
#[test]
fn a_member_moves_to_another_catalog_only_by_change_of_ownership() {
    let work = TempDir::new("cat-coo");
    work.write("a.test.zone", &member_zone("a.test.", 1));
    let cat1 = work.write(
        "cat1.zone",
        &catalog_text(1, Some("2"), &[("a", "a.test.")]),
    );
    let cat2 = work.write("cat2.zone", &catalog_text(1, Some("2"), &[]));
    let prim_addr = local();
    let sec_addr = local();
    let prim_toml = format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\nnotify = [\"{sec_addr}\"]\n\
         [[zone]]\nname = \"{CAT}\"\nfile = \"{}\"\n[[zone]]\nname = \"cat2.test.\"\nfile = \"{}\"\n\
         [[zone]]\nname = \"a.test.\"\nfile = \"{}\"\n",
        tsig_toml(),
        cat1.display(),
        cat2.display(),
        work.path().join("a.test.zone").display()
    );
    let primary = start_secondary("cat-coo-p", prim_addr, &work, &prim_toml);
    let toml = format!(
        "{}[server]\n\
         [[zone]]\nname = \"{CAT}\"\nprimary = [\"{prim_addr}\"]\nprimary_key = \"{TSIG_NAME}\"\ncatalog = \"consume\"\n\
         [[zone]]\nname = \"cat2.test.\"\nprimary = [\"{prim_addr}\"]\nprimary_key = \"{TSIG_NAME}\"\ncatalog = \"consume\"\n",
        tsig_toml()
    );
    let server = start_secondary("cat-coo-s", sec_addr, &work, &toml);
    let ctx = || format!("primary:\n{}\nconsumer:\n{}", primary.log(), server.log());
    wait_serial(sec_addr, "a.test.", 1, Duration::from_secs(20), ctx);
    let owner = |server: &Server| {
        let (_, text) = control::zone_cmd(server, &["status", "a.test."]);
        text.lines()
            .find_map(|l| l.strip_prefix("catalog: "))
            .map(str::to_string)
    };
    assert_eq!(owner(&server).as_deref(), Some(CAT));

    // cat2 lists it too: it stays with cat.test.
    std::fs::write(&cat2, catalog_text(2, Some("2"), &[("b", "a.test.")])).unwrap();
    primary.sighup();
    wait_serial(sec_addr, "cat2.test.", 2, Duration::from_secs(20), ctx);
    wait_until(
        Duration::from_secs(10),
        || {
            server.log().contains(
                "catalog cat2.test.: member a.test. belongs to catalog cat.test.; left there",
            )
        },
        ctx,
    );
    assert_eq!(owner(&server).as_deref(), Some(CAT));

    // cat.test. names cat2.test. as its new owner: it moves, and is still served.
    let coo = format!(
        "{}coo.a.zones PTR cat2.test.\n",
        catalog_text(2, Some("2"), &[("a", "a.test.")])
    );
    std::fs::write(&cat1, coo).unwrap();
    primary.sighup();
    wait_until(
        Duration::from_secs(20),
        || owner(&server).as_deref() == Some("cat2.test."),
        ctx,
    );
    assert!(server.log().contains(
        "catalog cat2.test.: member a.test. moves here from catalog cat.test. (change of ownership)"
    ));
    assert_eq!(serial_at(sec_addr, "a.test."), Some(1));

    // cat.test. drops it: cat2.test. keeps it.
    std::fs::write(&cat1, catalog_text(3, Some("2"), &[])).unwrap();
    primary.sighup();
    wait_serial(sec_addr, CAT, 3, Duration::from_secs(20), ctx);
    wait_until(
        Duration::from_secs(10),
        || {
            server
                .log()
                .contains("catalog cat.test.: serial 3: 0 member zones")
        },
        ctx,
    );
    assert_eq!(serial_at(sec_addr, "a.test."), Some(1));
    assert_eq!(owner(&server).as_deref(), Some("cat2.test."));
    assert_eq!(server.stat("shardns_catalog_member_zones"), 1.0);
}
