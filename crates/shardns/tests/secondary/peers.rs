//! Knot DNS, NSD and BIND as primaries, with TSIG: the first transfer, changes brought by
//! NOTIFY, answers identical to the primary's.

use super::*;

const APEX: &str = "sec.test.";
/// Names with an A and a TXT in the zone: a few hundred kilobytes, many messages.
const HOSTS: usize = 3000;
/// Serial changes knotd makes, each to be taken as an IXFR (the issue asks for 100).
const CHANGES: u32 = 100;

/// Version `serial` of the test zone: the base, a record that moves and one that changes
/// every version, and one name more per version.
fn version(serial: u32) -> String {
    let mut extra = format!(
        "moved A 10.99.{}.{}\nlast TXT \"serial {serial}\"\n",
        serial >> 8,
        serial & 255
    );
    for k in 2..=serial {
        extra.push_str(&format!("n{k} AAAA 2001:db8::{k:x}\n"));
    }
    zone_text(serial, HOSTS, &extra)
}

fn kill_hup(pid: u32) {
    let ok = Command::new("kill")
        .arg("-HUP")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn knotd_axfr_then_100_ixfr_by_notify_then_the_copy_after_a_restart() {
    let Some(knotd) = find_knotd() else {
        println!("secondary: SKIPPED: knotd is not installed (apt-get install -y knot)");
        return;
    };
    let work = TempDir::new("sec-knot");
    let file = work.write("sec.test.zone", &version(1));
    let knot_addr = local();
    let sec_addr = local();
    let mut knot = start_knot_primary(&knotd, work.path(), knot_addr, &[(APEX, &file)], sec_addr);
    wait_authoritative(knot_addr, APEX, &mut knot);
    let copy = work.path().join("copy").join("sec.test.zone");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    let toml = secondary_toml(APEX, &[knot_addr], Some(&copy));
    let mut server = start_secondary("sec-knot-s", sec_addr, &work, &toml);

    // The first transfer: AXFR, signed; the same records as knotd's.
    wait_serial(sec_addr, APEX, 1, Duration::from_secs(20), || knot.log());
    assert_same_zone(sec_addr, knot_addr, APEX);
    assert_eq!(
        dig(sec_addr, &["+short", "h2999.sec.test", "A"]).trim(),
        "10.0.11.183"
    );

    // CHANGES versions, one at a time: knotd's reload computes the difference, NOTIFYs us
    // (signed), we ask IXFR (signed) and serve the new serial. The SOA refresh is an hour
    // away: only the NOTIFY brings each version this soon.
    let started = Instant::now();
    for serial in 2..=CHANGES + 1 {
        std::fs::write(&file, version(serial)).unwrap();
        knotc(work.path(), &["zone-reload", APEX]);
        wait_serial(sec_addr, APEX, serial, Duration::from_secs(20), || {
            format!("knotd:\n{}\nshardns:\n{}", knot.log(), server.log())
        });
    }
    println!(
        "secondary: {CHANGES} versions from knotd by NOTIFY + IXFR in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let last = CHANGES + 1;
    assert_same_zone(sec_addr, knot_addr, APEX);
    assert_eq!(
        server.stat("shardns_xfr_in_total{result=\"ixfr\"}"),
        f64::from(CHANGES)
    );
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"axfr\"}"), 1.0);
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"failed\"}"), 0.0);
    assert!(server.stat("shardns_notify_in_total{result=\"accepted\"}") >= f64::from(CHANGES));
    assert_eq!(
        server.stat("shardns_notify_in_total{result=\"refused\"}"),
        0.0
    );
    assert!(server.stat("shardns_xfr_in_bytes_total") > 100_000.0);
    let log = server.log();
    assert_eq!(
        log.matches(" by IXFR from ").count(),
        CHANGES as usize,
        "{log}"
    );
    // The copy on disk is the last version.
    let kept = std::fs::read_to_string(&copy).unwrap();
    assert!(
        kept.starts_with(&format!("; {APEX} serial {last},")),
        "{}",
        &kept[..200]
    );

    // A restart with no primary at all: the copy (refreshed moments ago) is served at once.
    server.terminate();
    drop(knot);
    let again = local();
    let mut server = start_secondary("sec-knot-again", again, &work, &toml);
    wait_serial(again, APEX, last, Duration::from_secs(10), || server.log());
    server.wait_for_log("serving the copy in", Duration::from_secs(1));
    assert_eq!(
        dig(again, &["+short", &format!("n{last}.sec.test"), "AAAA"]).trim(),
        format!("2001:db8::{last:x}")
    );
    assert_eq!(server.stat("shardns_secondary_zones_unavailable"), 0.0);
}

#[test]
fn nsd_axfr_and_a_change_by_notify() {
    let Some(nsd) = peer("nsd", "NSD") else {
        println!("secondary: SKIPPED: nsd is not installed (apt-get install -y nsd)");
        return;
    };
    let work = TempDir::new("sec-nsd");
    let file = work.write("sec.test.zone", &version(1));
    let nsd_addr = local();
    let sec_addr = local();
    let mut nsd = start_nsd_primary(&nsd, work.path(), nsd_addr, &[(APEX, &file)], sec_addr);
    wait_authoritative(nsd_addr, APEX, &mut nsd);
    let toml = secondary_toml(APEX, &[nsd_addr], None);
    let server = start_secondary("sec-nsd-s", sec_addr, &work, &toml);
    wait_serial(sec_addr, APEX, 1, Duration::from_secs(20), || nsd.log());
    assert_same_zone(sec_addr, nsd_addr, APEX);

    // NSD re-reads its zone files on SIGHUP and NOTIFYs us.
    std::fs::write(&file, version(2)).unwrap();
    kill_hup(nsd.pid());
    wait_serial(sec_addr, APEX, 2, Duration::from_secs(20), || {
        format!("nsd:\n{}\nshardns:\n{}", nsd.log(), server.log())
    });
    assert_same_zone(sec_addr, nsd_addr, APEX);
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"failed\"}"), 0.0);
    assert!(server.stat("shardns_notify_in_total{result=\"accepted\"}") >= 1.0);
}

#[test]
fn named_axfr_and_an_ixfr_by_notify() {
    let Some(named) = peer("named", "NAMED") else {
        println!("secondary: SKIPPED: named is not installed (apt-get install -y bind9)");
        return;
    };
    let work = TempDir::new("sec-named");
    let file = work.write("sec.test.zone", &version(1));
    let named_addr = local();
    let sec_addr = local();
    let mut named =
        start_named_primary(&named, work.path(), named_addr, &[(APEX, &file)], sec_addr);
    wait_authoritative(named_addr, APEX, &mut named);
    let toml = secondary_toml(APEX, &[named_addr], None);
    let server = start_secondary("sec-named-s", sec_addr, &work, &toml);
    wait_serial(sec_addr, APEX, 1, Duration::from_secs(20), || named.log());
    assert_same_zone(sec_addr, named_addr, APEX);

    // named re-reads its zone files on SIGHUP, keeps the difference (ixfr-from-differences)
    // and NOTIFYs us; we take it as IXFR.
    std::fs::write(&file, version(2)).unwrap();
    kill_hup(named.pid());
    wait_serial(sec_addr, APEX, 2, Duration::from_secs(20), || {
        format!("named:\n{}\nshardns:\n{}", named.log(), server.log())
    });
    assert_same_zone(sec_addr, named_addr, APEX);
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"ixfr\"}"), 1.0);
    assert_eq!(server.stat("shardns_xfr_in_total{result=\"failed\"}"), 0.0);
}
