//! Key shape rollover (issue 29), end to end on loopback: `single_type_signing` changed in
//! the config rolls `sign.test.` from one CSK to a KSK and a ZSK, then back to a CSK, with
//! the parent `test.` served and signed by knotd, which takes the new DS by our TSIG-signed
//! push and serves `sign.test.` as our secondary. Sampled all along: the AXFR passes
//! `ldns-verify-zone` and `dnssec-verify`, `delv` from the parent's key alone fully
//! validates the zone through knotd, and the keys go through the roll's steps in order,
//! never back. The server is restarted in the middle of the first roll; it goes on from
//! the key directory. Missing tools skip the test with a message; `scripts/test.sh`
//! installs them.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Every TTL 2 s, so each wait of the roll is 3 s with the propagation delay.
const CHILD_TTL: u32 = 2;

const SECRET: &str = "c2hhcGUtcm9sbC1rZXktZm9yLXRoZS10ZXN0cy0wMDE=";

fn write_config(data: &TempDir, knot: SocketAddr, single: bool) -> PathBuf {
    data.write(
        "shardns.toml",
        &format!(
            "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.0/8\"]\n\
             [[key]]\nname = \"ds-key\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
             [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
             algorithm = \"ecdsap256sha256\"\nsingle_type_signing = {single}\n\
             cds_cdnskey_publish = \"always\"\n\
             propagation_delay = 1\nparent_ds_ttl = 2\nparent_propagation_delay = 1\n\
             notify = [\"{knot}\"]\nds_check_interval = 1\n\
             ds_push = \"{knot}\"\nds_push_key = \"ds-key\"\n"
        ),
    )
}

/// One sample of the zone, each key named by whether it was there before the roll
/// (`o`) or is new (`n`) and its flags (257, 256): the DNSKEYs, the keys signing the
/// DNSKEY RRset, the keys signing `www`'s A RRset; and the tags of the DNSKEYs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sample {
    dnskey: BTreeSet<String>,
    keysig: BTreeSet<String>,
    datasig: BTreeSet<String>,
    tags: BTreeSet<u16>,
    /// The tags of the DNSKEYs with the SEP flag (257): the DS the parent is to serve.
    seps: BTreeSet<u16>,
}

fn sample(axfr: &str, old: &BTreeSet<u16>) -> Sample {
    let mut flags = std::collections::BTreeMap::new();
    let (mut keysig, mut datasig) = (BTreeSet::new(), BTreeSet::new());
    for line in axfr.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match (f.get(3).copied(), f.get(4).copied()) {
            (Some("DNSKEY"), _) => {
                let rdata = format!("{} {} {} {}", f[4], f[5], f[6], f[7..].concat());
                flags.insert(key_tag_of(&rdata), f[4].to_string());
            }
            (Some("RRSIG"), Some("DNSKEY")) => {
                keysig.insert(f[10].parse::<u16>().unwrap());
            }
            (Some("RRSIG"), Some("A")) if f[0] == "www.sign.test." => {
                datasig.insert(f[10].parse::<u16>().unwrap());
            }
            _ => {}
        }
    }
    let name = |t: &u16| {
        let age = if old.contains(t) { "o" } else { "n" };
        format!("{age}{}", flags.get(t).map_or("?", |f| f.as_str()))
    };
    Sample {
        dnskey: flags.keys().map(name).collect(),
        keysig: keysig.iter().map(name).collect(),
        datasig: datasig.iter().map(name).collect(),
        tags: flags.keys().copied().collect(),
        seps: flags
            .iter()
            .filter(|(_, f)| f.as_str() == "257")
            .map(|(t, _)| *t)
            .collect(),
    }
}

/// The lab started for this test (`common::ParentLab`).
fn start(tag: &str, single: bool) -> Option<ParentLab> {
    ParentLab::start(
        "shape_roll",
        tag,
        SECRET,
        &child_zone(CHILD_TTL),
        |data, parent| {
            write_config(data, parent, single);
        },
    )
}

/// Judges the zone now (`ParentLab::judged`): the sample and the AXFR.
fn judged(lab: &mut ParentLab, n: usize, old: &BTreeSet<u16>) -> (Sample, String) {
    let axfr = lab.judged(n);
    (sample(&axfr, old), axfr)
}

fn parent_ds_tags(lab: &ParentLab) -> BTreeSet<u16> {
    lab.parent_ds()
        .iter()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

/// A step of a roll: the DNSKEYs, the keys signing the DNSKEY RRset, those signing data.
type Step = (
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// CSK (o257) -> KSK (n257) + ZSK (n256), in order; the KSK may be published (its DS
/// confirmed) before or after the ZSK signs.
const TO_SPLIT: &[Step] = &[
    (&["o257"], &["o257"], &["o257"]),
    (&["n256", "o257"], &["o257"], &["o257"]),
    (&["n256", "n257", "o257"], &["o257"], &["o257"]),
    (&["n256", "o257"], &["o257"], &["n256", "o257"]),
    (&["n256", "n257", "o257"], &["o257"], &["n256", "o257"]),
    (&["n256", "n257", "o257"], &["n257"], &["n256"]),
    (&["n256", "n257"], &["n257"], &["n256"]),
];

/// KSK (o257) + ZSK (o256) -> CSK (n257); the old KSK and ZSK withdrawn together (their
/// waits are equal with every TTL 2 s) or the KSK first.
const TO_CSK: &[Step] = &[
    (&["o256", "o257"], &["o257"], &["o256"]),
    (&["n257", "o256", "o257"], &["o257"], &["o256"]),
    (&["n257", "o256", "o257"], &["n257"], &["n257"]),
    (&["n257", "o256"], &["n257"], &["n257"]),
    (&["n257"], &["n257"], &["n257"]),
];

fn step_of(s: &Sample, steps: &[Step]) -> Option<usize> {
    let eq = |set: &BTreeSet<String>, want: &[&str]| {
        set.iter().map(String::as_str).eq(want.iter().copied())
    };
    steps
        .iter()
        .position(|(k, ks, ds)| eq(&s.dnskey, k) && eq(&s.keysig, ks) && eq(&s.datasig, ds))
}

/// Waits until knotd serves exactly the DS of `tags`.
fn wait_parent_ds(lab: &mut ParentLab, tags: &BTreeSet<u16>) {
    let end = Instant::now() + Duration::from_secs(30);
    while parent_ds_tags(lab) != *tags {
        lab.knot.check_alive();
        assert!(
            Instant::now() < end,
            "knotd's DS: {:?}, not {tags:?}",
            parent_ds_tags(lab)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Rolls the lab's zone to `single`, sampled and judged until the last step; `must`: the
/// steps every roll goes through; restarts the server once at step `restart_at`.
/// Returns the keys' tags at the end.
fn roll(
    lab: &mut ParentLab,
    single: bool,
    steps: &[Step],
    must: &[usize],
    restart_at: Option<usize>,
) -> BTreeSet<u16> {
    let (first, _) = judged(lab, 0, &BTreeSet::new());
    let old = first.tags.clone();
    write_config(&lab.data, lab.parent, single);
    let out = lab.child().control("reload");
    assert!(out.status.success(), "{out:?}");
    lab.child()
        .wait_for_log("key shape rollover started", Duration::from_secs(20));
    let (mut at, mut seen, mut restarted) = (0usize, vec![false; steps.len()], false);
    let end = Instant::now() + Duration::from_secs(60);
    for n in 1.. {
        let (s, axfr) = judged(lab, n, &old);
        let step = step_of(&s, steps)
            .unwrap_or_else(|| panic!("sample {n}: not a step of the roll: {s:?}\n{axfr}"));
        assert!(
            step >= at,
            "sample {n}: back from step {at} to {step}: {s:?}"
        );
        (at, seen[step]) = (step, true);
        if Some(step) == restart_at && !restarted {
            restarted = true;
            lab.child().terminate();
            lab.start_child("shape-again");
        }
        if step == steps.len() - 1 {
            break;
        }
        assert!(Instant::now() < end, "not over after 60 s at step {at}");
        std::thread::sleep(Duration::from_millis(150));
    }
    for &m in must {
        assert!(seen[m], "step {m} skipped: {seen:?}");
    }
    assert_eq!(restarted, restart_at.is_some());
    let (last, _) = judged(lab, 9999, &old);
    wait_parent_ds(lab, &last.seps);
    last.tags
}

#[test]
fn csk_to_ksk_zsk_and_back() {
    let Some(mut lab) = start("shape", true) else {
        return;
    };
    let (first, _) = judged(&mut lab, 0, &BTreeSet::new());
    wait_parent_ds(&mut lab, &first.seps);
    // The CSK's signatures go once the KSK signs, and the ZSK signed beside it before.
    let split = roll(&mut lab, false, TO_SPLIT, &[4, 5, 6], Some(4));
    assert_eq!(split.len(), 2);
    let csk = roll(&mut lab, true, TO_CSK, &[1, 2, 4], None);
    assert_eq!(csk.len(), 1);
    assert!(csk.is_disjoint(&split) && csk.is_disjoint(&first.tags));
}
