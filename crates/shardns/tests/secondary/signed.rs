//! A secondary zone with `dnssec = true` ("bump in the wire", Knot's `dnssec-signing: on`
//! on a secondary, BIND's `inline-signing yes`): knotd (or a shardns primary) serves the
//! zone unsigned, shardns transfers it, signs it and serves it signed, to queries and to a
//! shardns tertiary that follows it by IXFR. The signed zone is judged by
//! `ldns-verify-zone` and `dnssec-verify` on its AXFR, after the first transfer (AXFR,
//! signed whole) and after a change (IXFR, signed incrementally), with NSEC and with NSEC3;
//! its serial is its own, moved by a change of the primary and by a signature refresh
//! alike.

use super::*;

const APEX: &str = "bump.test.";

/// Version `serial` of the primary's unsigned zone (RETRY 1 s): `gone` names that version
/// 2 removes, `added` names it adds, a TXT it changes.
fn version(serial: u32) -> String {
    let mut z = format!(
        "$TTL 300\n@ SOA ns1 hostmaster {serial} 3600 1 1209600 60\n@ NS ns1\n\
         ns1 A 192.0.2.1\nwww A 192.0.2.80\nsub NS ns.sub\nns.sub A 192.0.2.53\n\
         *.wild TXT \"wildcard\"\n"
    );
    if serial == 1 {
        z.push_str("www TXT \"one\"\n");
        for k in 0..10 {
            z.push_str(&format!("gone{k} A 10.1.0.{k}\n"));
        }
    } else {
        z.push_str(&format!("www TXT \"version {serial}\"\n"));
        for k in 0..30 {
            z.push_str(&format!("added{k} A 10.2.0.{k}\nadded{k} TXT \"new\"\n"));
        }
    }
    for i in 0..300 {
        z.push_str(&format!("h{i} A 10.0.{}.{}\n", i >> 8, i & 255));
    }
    z
}

/// Our secondary's config: the zone from `primary`, signed with the keys in `keys`, kept
/// in `copy`, transferable and announced to `notify`; `extra` lines in its table.
fn signed_toml(
    primary: SocketAddr,
    keys: &Path,
    copy: &Path,
    notify: SocketAddr,
    extra: &str,
) -> String {
    format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\nkey_directory = \"{}\"\n\
         notify = [\"{notify}\"]\n[[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\n\
         primary = [\"{primary}\"]\nprimary_key = \"{TSIG_NAME}\"\ndnssec = true\n{extra}",
        tsig_toml(),
        keys.display(),
        copy.display()
    )
}

/// The AXFR of the zone from `server` judged by ldns-verify-zone and dnssec-verify
/// (written to `dir`); the AXFR's records.
fn verified(server: SocketAddr, dir: &TempDir, tag: &str) -> String {
    let text = axfr_text(server, APEX, 100);
    let file = dir.write(&format!("{tag}.axfr"), &text);
    if let Err(e) = verify_zone_file(&file, APEX) {
        panic!("{tag}: {e}");
    }
    text
}

/// `dig +dnssec` for `name` `qtype`: the answer's lines, and whether one is an RRSIG
/// covering `qtype`.
fn signed_answer(server: SocketAddr, name: &str, qtype: &str) -> (String, bool) {
    let out = dig(server, &["+dnssec", "+norec", "+short", name, qtype]);
    let rrsig = out.lines().any(|l| l.starts_with(&format!("{qtype} 13 ")));
    (out, rrsig)
}

/// The RRSIG of the apex SOA as `dig +short` shows it: the same signature, the same
/// signed version.
fn soa_rrsig_of(server: SocketAddr) -> String {
    dig(server, &["+dnssec", "+norec", "+short", APEX, "SOA"])
        .lines()
        .filter(|l| l.starts_with("SOA "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn knotd_unsigned_zone_served_signed_by_axfr_then_ixfr_and_followed_by_ixfr() {
    let Some(knotd) = find_knotd() else {
        println!("secondary: SKIPPED: knotd is not installed (apt-get install -y knot)");
        return;
    };
    let work = TempDir::new("bump-knot");
    let file = work.write("bump.test.zone", &version(1));
    let (knot_addr, ours, third) = (local(), local(), local());
    let mut knot = start_knot_primary(&knotd, work.path(), knot_addr, &[(APEX, &file)], ours);
    wait_authoritative(knot_addr, APEX, &mut knot);
    let keys = work.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let copy = work.path().join("bump.test.copy");
    let toml = signed_toml(knot_addr, &keys, &copy, third, "");
    let mut server = start_secondary("bump-s", ours, &work, &toml);
    // The first signed serial is the primary's.
    wait_serial(ours, APEX, 1, Duration::from_secs(20), || server.log());
    let tertiary = Server::start_at(
        "bump-t",
        &[third],
        &[
            "--workers",
            "1",
            "--secondary",
            &format!("{APEX}={ours}"),
            "--allow-transfer",
            "127.0.0.1",
        ],
    );
    let logs = || format!("ours:\n{}\ntertiary:\n{}", server.log(), tertiary.log());
    wait_serial(third, APEX, 1, Duration::from_secs(20), logs);

    // Signed whole after the AXFR: judged, and answers carry signatures.
    let first = verified(ours, &work, "v1");
    assert!(
        first.contains("DNSKEY") && first.contains("NSEC"),
        "{first}"
    );
    assert!(
        !axfr(knot_addr, APEX, true)
            .iter()
            .any(|r| r.contains("rrsig")),
        "the primary's zone is signed"
    );
    let (www, rrsig) = signed_answer(ours, "www.bump.test", "A");
    assert!(rrsig && www.contains("192.0.2.80"), "{www}");
    assert!(
        server.log().contains("signed whole as serial 1"),
        "{}",
        logs()
    );

    // The primary changes: 10 names gone, 30 names added, a TXT changed; knotd's IXFR,
    // signed by itself here, at a serial above the last signed.
    std::fs::write(&file, version(2)).unwrap();
    knotc(work.path(), &["zone-reload", APEX]);
    wait_serial(ours, APEX, 2, Duration::from_secs(20), logs);
    wait_serial(third, APEX, 2, Duration::from_secs(20), logs);
    let log = server.log();
    assert!(
        log.contains("serial 2 from the primary signed incrementally as serial 2"),
        "{}",
        logs()
    );
    assert!(log.contains("by IXFR from"), "{}", logs());
    let second = verified(ours, &work, "v2");
    assert!(second.contains("added29.bump.test.") && !second.contains("gone3."));
    let (added, rrsig) = signed_answer(ours, "added7.bump.test", "TXT");
    assert!(rrsig && added.contains("\"new\""), "{added}");
    let (txt, rrsig) = signed_answer(ours, "www.bump.test", "TXT");
    assert!(rrsig && txt.contains("version 2"), "{txt}");
    // A name gone is denied, with NSEC proofs.
    let gone = dig(ours, &["+dnssec", "+norec", "gone3.bump.test", "A"]);
    assert!(
        gone.contains("NXDOMAIN") && gone.contains("\tNSEC\t") && gone.contains("RRSIG\tNSEC"),
        "{gone}"
    );

    // The IXFR from serial 1 that we serve downstream: incremental, signed differences
    // (new signatures and chain records), far smaller than the zone.
    let out = kdig(ours, &[APEX, "IXFR=1", "+nocomments", "+nostats"]);
    let records: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .collect();
    let soas: Vec<&str> = records
        .iter()
        .filter(|l| l.contains("\tSOA\t"))
        .copied()
        .collect();
    assert!(soas.len() == 4, "not an incremental answer:\n{out}");
    assert!(
        soas[1].contains(" 1 3600 ") && soas[2].contains(" 2 3600 "),
        "{out}"
    );
    assert!(
        records
            .iter()
            .any(|l| l.starts_with("added7.") && l.contains("\tRRSIG\t")),
        "{out}"
    );
    assert!(records
        .iter()
        .any(|l| l.starts_with("gone3.") && l.contains("\tNSEC\t")));
    assert!(records.len() < first.lines().count() / 2, "{out}");
    // The tertiary took that IXFR and holds what we serve, signatures and all.
    assert!(
        tertiary.log().contains(&format!("by IXFR from {ours}")),
        "{}",
        logs()
    );
    assert_eq!(
        axfr(third, APEX, false),
        axfr(ours, APEX, false),
        "the tertiary's zone is not ours"
    );

    // A restart serves the same signed version (same serial, same signatures), kept in the
    // key directory after the incremental signing, and still follows the primary.
    let soa_before = soa_rrsig_of(ours);
    // Kept by a thread of its own once served (a SIGKILL before that loses it).
    server.wait_for_log(
        "signed version 2 kept in the key directory",
        Duration::from_secs(20),
    );
    drop(tertiary);
    drop(server);
    let server = start_secondary("bump-s-again", ours, &work, &toml);
    wait_serial(ours, APEX, 2, Duration::from_secs(20), || server.log());
    assert_eq!(soa_rrsig_of(ours), soa_before, "{}", server.log());
    assert!(
        server.log().contains("serving the signed zone kept in"),
        "{}",
        server.log()
    );
    std::fs::write(&file, version(3)).unwrap();
    knotc(work.path(), &["zone-reload", APEX]);
    wait_serial(ours, APEX, 3, Duration::from_secs(20), || server.log());
    verified(ours, &work, "v3");
}

/// A shardns primary; NSEC3; signatures valid 12 s, refreshed 9 s before they expire: the signed
/// serial moves on every 3 s though the primary's stays. A transfer that cannot be signed
/// (the key directory gone) is not taken: the signed version served stays, and the log
/// says why; with the keys back, the change is signed and served.
#[test]
fn signatures_are_refreshed_and_a_version_that_cannot_be_signed_is_not_served() {
    let work = TempDir::new("bump-refresh");
    let file = work.write("bump.test.zone", &version(1));
    let (top, ours, nobody) = (local(), local(), local());
    let primary = start_secondary(
        "bump-p",
        top,
        &work,
        &format!(
            "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\nnotify = [\"{ours}\"]\n\
             transfer_key = \"{TSIG_NAME}\"\n[[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\n",
            tsig_toml(),
            file.display()
        ),
    );
    let keys = work.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let copy = work.path().join("bump.test.copy");
    let toml = signed_toml(
        top,
        &keys,
        &copy,
        nobody,
        "signature_validity = 12\nsignature_refresh = \"9s\"\nnsec3 = true\n",
    );
    let server = start_secondary("bump-r", ours, &work, &toml);
    wait_serial(ours, APEX, 1, Duration::from_secs(20), || server.log());
    // Refreshed twice, the primary still at serial 1.
    wait_serial(ours, APEX, 3, Duration::from_secs(15), || server.log());
    assert_eq!(serial_at(top, APEX), Some(1));
    verified(ours, &work, "refreshed");
    // The status tells the two serials apart.
    let (ok, status) = control::zone_cmd(&server, &["status", APEX]);
    assert!(ok, "{status}");
    assert!(
        status.contains("serial: 1 (serving)") && status.contains("signed: serial "),
        "{status}"
    );

    // The keys go away, the primary changes: transferred, not signed, not served.
    let away = work.path().join("keys-away");
    std::fs::rename(&keys, &away).unwrap();
    std::fs::write(&file, version(2)).unwrap();
    assert!(primary.control("reload").status.success());
    let end = Instant::now() + Duration::from_secs(15);
    while !server.log().contains("serial 2 cannot be signed") {
        assert!(Instant::now() < end, "{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let held = serial_at(ours, APEX).unwrap();
    assert!((3..10).contains(&held), "{held}\n{}", server.log());
    let (added, _) = signed_answer(ours, "added7.bump.test", "TXT");
    assert!(!added.contains("new"), "{added}");
    let (www, rrsig) = signed_answer(ours, "www.bump.test", "A");
    assert!(rrsig, "{www}");
    assert!(server.log().contains("does not exist"), "{}", server.log());

    // The keys are back: the next try (RETRY 1 s) signs it, above every serial before.
    std::fs::rename(&away, &keys).unwrap();
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let (added, rrsig) = signed_answer(ours, "added7.bump.test", "TXT");
        if rrsig && added.contains("new") {
            break;
        }
        assert!(Instant::now() < end, "{added}\n{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(serial_at(ours, APEX).unwrap() > held);
    let after = verified(ours, &work, "after");
    assert!(
        after.contains(" NSEC3PARAM ") && after.contains(" NSEC3 "),
        "{after}"
    );
    // Signed by itself, NSEC3 chain patched.
    assert!(
        server
            .log()
            .contains("serial 2 from the primary signed incrementally"),
        "{}",
        server.log()
    );
}
