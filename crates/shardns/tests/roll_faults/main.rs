//! Faults during key rollovers (issue 29 item 7), end to end on loopback: a ZSK, a KSK
//! (its DS checked at a parent `test.` signed and served by a second shardns, which serves
//! `sign.test.` too as the child's secondary), an algorithm rollover and a key shape
//! rollover (CSK to KSK + ZSK) of `sign.test.`, the server killed with SIGKILL and started again at every step of each;
//! the incoming key's file lost in the middle of a roll and given back; a parent that does
//! not show the new DS. Through all of it the RFC 7583 sampler (`sampler`) looks at the
//! zone every 300 ms and fails the test on any DNSKEY/DS/RRSIG combination a cache may hold
//! within the TTLs that would not validate, or any signature served outside its validity;
//! after every restart the AXFR must pass ldns-verify-zone and dnssec-verify and delv must
//! validate it (from the parent's key through the parent where there is one, else from the
//! DS the test holds as the parent's); and each roll must finish.
//!
//! Never: any address outside 127.0.0.0/8, unbounded waits, processes left running (the
//! servers are killed on drop). Missing tools skip the tests (fail them under CI).

#[path = "../common/mod.rs"]
mod common;
mod lab;
mod sampler;

use lab::{ds_lines, have_tools, key_cmd, Lab};
use std::time::{Duration, Instant};

/// The tag of the ZSK signing `www.sign.test. A`.
fn www_signer(s: &sampler::State) -> Option<u16> {
    s.data
        .get("www.sign.test. A")
        .and_then(|t| t.iter().next().copied())
}

/// The key files of the key tagged `tag`: `(.private, moved-away name)`.
fn private_file(lab: &Lab, tag: u16) -> (std::path::PathBuf, std::path::PathBuf) {
    let end = format!("+{tag:05}.private");
    let file = std::fs::read_dir(&lab.keys)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().ends_with(&end))
        .unwrap_or_else(|| panic!("no private file of {tag}"));
    let lost = lab.data.path().join("lost.private");
    (file, lost)
}

/// ZSK pre-publication: the server killed at every step; the new ZSK's private key file
/// lost once the key is published (before it signs) and given back past its `Activate`.
#[test]
fn zsk_roll_survives_kills_and_a_lost_key_file() {
    if !have_tools("roll_faults") {
        return;
    }
    let mut lab = Lab::start("rf-zsk", false, "");
    lab.run_until(10, false, "signed", |s| s.keys.len() == 2);
    let before = lab.sample().unwrap();
    let old = www_signer(&before).unwrap();
    let out = key_cmd(&lab.keys, "rollover", &["--zsk"]);
    assert!(out.contains("ZSK rollover started"), "{out}");
    let (ok, out) = lab.reload();
    assert!(ok, "{out}");
    lab.run_until(10, false, "new ZSK published", |s| s.keys.len() == 3);
    lab.kill_and_restart();
    let published = lab.sample().unwrap();
    let new = *published.keys.difference(&before.keys).next().unwrap();

    // The new key's private file goes: the signing stops and the log says why; what is
    // served stays as it was (the new key published, the old one signing), past the new
    // key's Activate, through the re-signing timer and a restart.
    let (file, lost) = private_file(&lab, new);
    std::fs::rename(&file, &lost).unwrap();
    let said = format!("private key file of Ksign.test.+013+{new:05} is missing or unreadable");
    let (_, out) = lab.reload();
    assert!(
        lab.child().log().contains(&said),
        "the log does not say it: {out}\n{}",
        lab.child().log()
    );
    // Past the new key's Activate (4 s after its publication) and a restart.
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let s = lab.sample().expect("still served");
        assert_eq!(s, published, "the zone moved on without the key");
        if lab.restarts == 1 && Instant::now() + Duration::from_secs(3) > until {
            lab.kill_and_restart();
            assert!(lab.child().log().contains(&said), "{}", lab.child().log());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    lab.judge("with the key file lost");
    // Back: the roll resumes (the new key signs), killed at every step to its end.
    std::fs::rename(&lost, &file).unwrap();
    let (ok, out) = lab.reload();
    assert!(ok, "{out}");
    // Its Activate passed unserved: the old key's withdrawal waits from now, said so.
    assert!(
        lab.child()
            .log()
            .contains("next step waits its time from now"),
        "{}",
        lab.child().log()
    );
    lab.run_until(40, true, "old ZSK withdrawn", |s| {
        s.keys.len() == 2 && !s.keys.contains(&old) && www_signer(s) == Some(new)
    });
    lab.kill_and_restart();
    lab.sample();
    lab.check();
    assert!(lab.restarts >= 3, "{} restarts", lab.restarts);
}

/// A KSK double-DS rollover with the parent's DS checked: a parent that does not show
/// the new DS keeps the roll waiting (killed meanwhile, it still waits), the zone valid
/// and the log saying why; once the parent serves it, the roll goes on, killed at every
/// step, to its end.
#[test]
fn ksk_roll_waits_for_the_parent_and_survives_kills() {
    if !have_tools("roll_faults") {
        return;
    }
    let mut lab = Lab::start("rf-ksk", true, "");
    lab.run_until(10, false, "signed", |s| s.keys.len() == 2);
    let old = lab.ds[0].0;
    let out = key_cmd(&lab.keys, "rollover", &["--ksk"]);
    assert!(out.contains("double-DS"), "{out}");
    let (ok, out) = lab.reload();
    assert!(ok, "{out}");
    let new = ds_lines(&lab.keys)
        .into_iter()
        .map(|(t, _)| t)
        .find(|&t| t != old)
        .expect("the new key's DS");
    // The parent never shows it: nothing moves, a restart included.
    let waiting = format!("waiting for the DS of the new key {new}");
    for round in 0..2 {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            let s = lab.sample().expect("served");
            assert_eq!(s.keys.len(), 2, "round {round}: {s:?}");
            assert_eq!(lab.state_of(new), "ds-pending");
            std::thread::sleep(Duration::from_millis(300));
        }
        assert!(
            lab.child().log().contains(&waiting),
            "the log does not say why:\n{}",
            lab.child().log()
        );
        lab.kill_and_restart();
    }
    // The parent serves both DS: confirmed by the check, the roll goes on to its end.
    lab.set_parent_ds(ds_lines(&lab.keys));
    assert_eq!(lab.ds.len(), 2);
    lab.run_until(60, true, "old KSK withdrawn", |s| {
        s.keys.len() == 2 && s.keys.contains(&new) && !s.keys.contains(&old)
    });
    // The parent drops the old DS.
    let only_new = ds_lines(&lab.keys)
        .into_iter()
        .filter(|(t, _)| *t == new)
        .collect();
    lab.set_parent_ds(only_new);
    lab.kill_and_restart();
    lab.sample();
    lab.check();
}

/// An algorithm rollover (ECDSAP256SHA256 to ED25519, KSK and ZSK) with the parent's DS
/// checked, killed at every step. The parent (the test) serves both DS once the new KSK's
/// CDS appears, and keeps the old one after the CDS names the new key alone: the old
/// algorithm's DNSKEYs stay while it does (RFC 6781 §4.1.4: withdrawn only after the DS
/// change; dnsviz's MISSING_SEP_FOR_ALG otherwise), a restart included, the log saying what
/// is waited for; once the parent drops it, the roll goes on to its end.
#[test]
fn algorithm_roll_keeps_the_old_key_while_its_ds_is_at_the_parent() {
    if !have_tools("roll_faults") {
        return;
    }
    let mut lab = Lab::start("rf-alg", true, "");
    lab.run_until(10, false, "signed", |s| s.keys.len() == 2);
    let old_ksk = lab.ds[0].0;
    lab.configure("algorithm = \"ed25519\"\n");
    lab.child().sighup();
    lab.run_until(60, true, "the new KSK's CDS", |s| {
        s.algorithms.0.contains(&15) && s.cds.len() >= 2
    });
    lab.set_parent_ds(ds_lines(&lab.keys));
    assert!(lab.ds.len() >= 2, "{:?}", lab.ds);
    lab.run_until(60, true, "the CDS naming the new KSK alone", |s| {
        !s.cds.is_empty() && !s.cds.contains(&old_ksk)
    });
    // The parent keeps the old DS past the parent's DS TTL and delay (3 s): the old
    // DNSKEYs stay, through a restart.
    let waiting = "the DS of the old algorithm 13 to be gone";
    for round in 0..2 {
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            let s = lab.sample().expect("served");
            assert!(
                s.algorithms.0.contains(&13) && s.keys.contains(&old_ksk),
                "round {round}: the old DNSKEY withdrawn while its DS is at the parent: {s:?}"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        assert!(
            lab.child().log().contains(waiting),
            "the log does not say why:\n{}",
            lab.child().log()
        );
        if round == 0 {
            lab.kill_and_restart();
        }
    }
    // The parent replaces the DS set (as the CDS asks): the roll goes on to its end.
    let new: Vec<_> = ds_lines(&lab.keys)
        .into_iter()
        .filter(|(t, _)| *t != old_ksk)
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    lab.set_parent_ds(new);
    lab.run_until(60, true, "the old algorithm gone", |s| {
        s.algorithms.0 == [15].into() && s.algorithms.1 == [15].into()
    });
    lab.kill_and_restart();
    lab.sample();
    lab.check();
}

/// A key shape rollover (a CSK to a KSK and a ZSK, `single_type_signing` changed) with
/// the parent's DS checked, killed at every step: the ZSK published, then signing beside
/// the CSK, the KSK's DS, the KSK signing, the CSK withdrawn.
#[test]
fn shape_roll_survives_kills() {
    if !have_tools("roll_faults") {
        return;
    }
    let mut lab = Lab::start("rf-shape", true, "single_type_signing = true\n");
    lab.run_until(10, false, "signed", |s| s.keys.len() == 1);
    let csk = lab.ds[0].0;
    lab.configure("");
    lab.child().sighup();
    lab.run_until(30, true, "the new ZSK signing beside the CSK", |s| {
        s.keys.len() == 2 && s.data.get("www.sign.test. A").is_some_and(|t| t.len() == 2)
    });
    let ds = ds_lines(&lab.keys);
    assert_eq!(ds.len(), 2, "the CSK's and the new KSK's DS: {ds:?}");
    let ksk = ds.iter().map(|(t, _)| *t).find(|&t| t != csk).unwrap();
    assert_eq!(lab.state_of(ksk), "ds-pending");
    lab.set_parent_ds(ds);
    lab.run_until(60, true, "the CSK withdrawn", |s| {
        s.keys.len() == 2 && s.keys.contains(&ksk) && !s.keys.contains(&csk)
    });
    let only_new = ds_lines(&lab.keys)
        .into_iter()
        .filter(|(t, _)| *t == ksk)
        .collect();
    lab.set_parent_ds(only_new);
    lab.kill_and_restart();
    let last = lab.sample().unwrap();
    assert_eq!(last.key_signers, [ksk].into());
    assert!(lab.restarts >= 4, "{} restarts", lab.restarts);
    lab.check();
}

/// A ZSK rollover through wall-clock leaps of the server (`SHARDNS_TEST_CLOCK_SKEW`): two
/// hours forward while the new key is published, back while it signs, and back two
/// hours before the last signing across a restart. The signer goes by the monotonic
/// clock and never before its last signing: no signature starts in the future or has
/// expired by the true clock, no wait is cut short (the sampler), and the roll finishes.
#[test]
fn zsk_roll_through_clock_leaps() {
    if !have_tools("roll_faults") {
        return;
    }
    let mut lab = Lab::start("rf-clock", false, "");
    lab.run_until(10, false, "signed", |s| s.keys.len() == 2);
    let before = lab.sample().unwrap();
    let old = www_signer(&before).unwrap();
    key_cmd(&lab.keys, "rollover", &["--zsk"]);
    assert!(lab.reload().0);
    lab.run_until(10, false, "new ZSK published", |s| s.keys.len() == 3);
    let new = *lab
        .sample()
        .unwrap()
        .keys
        .difference(&before.keys)
        .next()
        .unwrap();
    // Two hours forward: a signing now must not take the steps the leap passed.
    lab.set_skew(7200);
    let (ok, out) = lab.reload();
    assert!(ok, "{out}");
    assert!(
        lab.child().log().contains("the wall clock leapt 72"),
        "{}",
        lab.child().log()
    );
    lab.run_until(20, false, "new ZSK signing", |s| www_signer(s) == Some(new));
    // Back to the true time while it signs.
    lab.set_skew(0);
    assert!(lab.reload().0);
    // Two hours behind the last signing, across a restart.
    lab.set_skew(-7200);
    lab.kill_and_restart();
    assert!(
        lab.child().log().contains("before the last signing"),
        "{}",
        lab.child().log()
    );
    lab.run_until(30, false, "old ZSK withdrawn", |s| {
        s.keys.len() == 2 && !s.keys.contains(&old) && www_signer(s) == Some(new)
    });
    lab.sample();
    lab.check();
}
