//! Algorithm rollover (issue 29 item 3, RFC 6781 §4.1.4), end to end on loopback: the
//! zone's `algorithm` changed in the config rolls `sign.test.` from ECDSAP256SHA256 to
//! ED25519 (a CSK, and a KSK with a ZSK), and a KSK with a ZSK from RSASHA256 to
//! ECDSAP256SHA256, with the parent `test.` served and signed by knotd, which takes the new
//! DS by our TSIG-signed push and serves `sign.test.` as our secondary. Sampled all along:
//! the AXFR passes `ldns-verify-zone` and `dnssec-verify`, `delv` from the parent's key
//! alone fully validates the zone through knotd, and the algorithms of the DNSKEYs and
//! RRSIGs go through the conservative order's phases, none skipped, never back, each
//! lasting its wait. The server is restarted in the middle; the roll goes on from the key
//! directory. Missing tools skip the test with a message; `scripts/test.sh` installs them.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Every TTL 4 s, so each step of the roll takes seconds (5 with the propagation delay),
/// several samples long.
const CHILD_TTL: u32 = 4;

const SECRET: &str = "YWxnb3JpdGhtLXJvbGwta2V5LWZvci10ZXN0cy0wMQ==";

/// The child's config; `cds`: `cds_cdnskey_publish`.
fn write_config(
    data: &TempDir,
    knot: SocketAddr,
    algorithm: &str,
    single: bool,
    cds: &str,
) -> PathBuf {
    data.write(
        "shardns.toml",
        &format!(
            "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.0/8\"]\n\
             [[key]]\nname = \"ds-key\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
             [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
             algorithm = \"{algorithm}\"\nsingle_type_signing = {single}\n\
             cds_cdnskey_publish = \"{cds}\"\n\
             propagation_delay = 1\nparent_ds_ttl = 4\nparent_propagation_delay = 1\n\
             notify = [\"{knot}\"]\nds_check_interval = 1\n\
             ds_push = \"{knot}\"\nds_push_key = \"ds-key\"\n"
        ),
    )
}

/// One sample of the zone: the algorithms of its DNSKEYs, of its RRSIGs, of its CDS.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sample {
    dnskey: BTreeSet<u8>,
    rrsig: BTreeSet<u8>,
    cds: BTreeSet<u8>,
}

fn sample(axfr: &str) -> Sample {
    let mut s = Sample {
        dnskey: BTreeSet::new(),
        rrsig: BTreeSet::new(),
        cds: BTreeSet::new(),
    };
    for line in axfr.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.get(3).copied() {
            Some("DNSKEY") => s.dnskey.insert(f[6].parse().unwrap()),
            Some("RRSIG") => s.rrsig.insert(f[5].parse().unwrap()),
            Some("CDS") => s.cds.insert(f[5].parse().unwrap()),
            _ => false,
        };
    }
    s
}

/// The phases of the conservative order, old algorithm `o`, new `n`: (DNSKEY, RRSIG).
fn phases(o: u8, n: u8) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (mut both, only_o, only_n) = (vec![o, n], vec![o], vec![n]);
    both.sort();
    vec![
        (only_o.clone(), only_o.clone()),
        (only_o, both.clone()),
        (both.clone(), both.clone()),
        (only_n.clone(), both),
        (only_n.clone(), only_n),
    ]
}

/// The lab started for this test (`common::ParentLab`).
fn start(tag: &str, single: bool, algorithm: &str, cds: &str) -> Option<ParentLab> {
    ParentLab::start(
        "algorithm_roll",
        tag,
        SECRET,
        &child_zone(CHILD_TTL),
        |data, parent| {
            write_config(data, parent, algorithm, single, cds);
        },
    )
}

/// Judges the zone now (`ParentLab::judged`): the sample and the AXFR.
fn judged(lab: &mut ParentLab, n: usize) -> (Sample, String) {
    let axfr = lab.judged(n);
    (sample(&axfr), axfr)
}

fn parent_ds_algs(lab: &ParentLab) -> BTreeSet<u8> {
    lab.parent_ds()
        .iter()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

/// Waits until knotd serves a DS of algorithm `alg` for the child.
fn wait_parent_ds(lab: &mut ParentLab, alg: u8) {
    let end = Instant::now() + Duration::from_secs(30);
    while !parent_ds_algs(lab).contains(&alg) {
        lab.knot.check_alive();
        assert!(Instant::now() < end, "no DS of {alg} at knotd");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn roll(tag: &str, single: bool, cds: &str, from: (&str, u8), to: (&str, u8)) {
    let Some(mut lab) = start(tag, single, from.0, cds) else {
        return;
    };
    wait_parent_ds(&mut lab, from.1);
    let (first, _) = judged(&mut lab, 0);
    assert_eq!(first.dnskey, BTreeSet::from([from.1]));
    assert_eq!(first.rrsig, BTreeSet::from([from.1]));
    // The config's algorithm changes: the roll starts at the reload.
    write_config(&lab.data, lab.parent, to.0, single, cds);
    let out = lab.child().control("reload");
    assert!(out.status.success(), "{out:?}");
    lab.child()
        .wait_for_log("algorithm rollover started", Duration::from_secs(20));
    let want = phases(from.1, to.1);
    let (mut at, mut seen, mut restarted) = (0usize, vec![false; want.len()], false);
    seen[0] = true;
    let mut cds_seen = vec![first.cds.clone()];
    // When each phase was first and last seen.
    let mut first_at = vec![None; want.len()];
    let mut last_at = vec![Instant::now(); want.len()];
    let end = Instant::now() + Duration::from_secs(120);
    for n in 1.. {
        let (s, axfr) = judged(&mut lab, n);
        let phase = want
            .iter()
            .position(|(k, r)| s.dnskey.iter().eq(k) && s.rrsig.iter().eq(r))
            .unwrap_or_else(|| panic!("sample {n}: not a phase of the order: {s:?}\n{axfr}"));
        assert!(
            phase >= at,
            "sample {n}: back from phase {at} to {phase}: {s:?}"
        );
        at = phase;
        seen[phase] = true;
        first_at[phase].get_or_insert(Instant::now());
        last_at[phase] = Instant::now();
        if cds_seen.last() != Some(&s.cds) {
            cds_seen.push(s.cds.clone());
        }
        // No CDS names a key the DNSKEY RRset lacks.
        assert!(s.cds.is_subset(&s.dnskey), "sample {n}: {s:?}");
        if phase == 2 && !restarted {
            // A restart in the middle: the roll goes on from the key directory.
            restarted = true;
            lab.child().terminate();
            lab.start_child(&format!("{tag}-again"));
        }
        if phase == want.len() - 1 {
            break;
        }
        assert!(Instant::now() < end, "not over after 120 s at phase {at}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(seen, vec![true; want.len()], "a phase skipped");
    // Each step lasts its wait, 5 s (largest TTL, DNSKEY TTL, parent DS TTL, each + 1 s of
    // propagation): at least 4 s between the samples around it, the wait counted from a
    // whole second.
    for p in 1..want.len() - 1 {
        let around = first_at[p + 1].unwrap() - last_at[p - 1];
        assert!(
            around >= Duration::from_secs(4),
            "phase {p} lasted at most {around:?}"
        );
    }
    assert!(restarted);
    // The CDS: the new key's beside the old one's (double-DS), then the new key's alone
    // (`always`); in the `rollover` mode only while the roll needs them: both, then the new
    // key's alone at the DS change, until the old DS is seen gone (a second or so: a sample
    // may miss it).
    let (o, n) = (BTreeSet::from([from.1]), BTreeSet::from([to.1]));
    let both = BTreeSet::from([from.1, to.1]);
    match cds {
        "always" => assert_eq!(cds_seen, vec![o, both, n]),
        _ => {
            let none = BTreeSet::new();
            let with_change = vec![none.clone(), both.clone(), n, none.clone()];
            let without = vec![none.clone(), both, none];
            assert!(
                cds_seen == with_change || cds_seen == without,
                "CDS seen {cds_seen:?}"
            );
        }
    }
    wait_parent_ds(&mut lab, to.1);
    let end = Instant::now() + Duration::from_secs(20);
    while parent_ds_algs(&lab) != BTreeSet::from([to.1]) {
        assert!(Instant::now() < end, "the old DS stays at knotd");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (last, _) = judged(&mut lab, 9999);
    assert_eq!(last.rrsig, BTreeSet::from([to.1]));
    let log = lab.child().log();
    assert!(
        !log.contains("algorithm rollover started"),
        "started again:\n{log}"
    );
}

#[test]
fn csk_ecdsa_to_ed25519() {
    roll(
        "algroll-csk",
        true,
        "always",
        ("ecdsap256sha256", 13),
        ("ed25519", 15),
    );
}

#[test]
fn ksk_zsk_ecdsa_to_ed25519() {
    roll(
        "algroll-kz",
        false,
        "rollover",
        ("ecdsap256sha256", 13),
        ("ed25519", 15),
    );
}

#[test]
fn ksk_zsk_rsasha256_to_ecdsa() {
    roll(
        "algroll-rsa",
        false,
        "always",
        ("rsasha256", 8),
        ("ecdsap256sha256", 13),
    );
}
