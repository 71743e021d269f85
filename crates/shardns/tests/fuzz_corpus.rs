//! Replays the fuzz corpus (`fuzz/corpus/<target>/*`) through the fuzz targets' own checks
//! (`fuzz/src/lib.rs`, compiled in here), on stable Rust and without libFuzzer, so every
//! input the fuzzer kept, crashes it found included once they are added, stays a test.

#[allow(unreachable_pub, dead_code)]
#[path = "../../../fuzz/src/lib.rs"]
mod checks;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Runs `check` on every file of `fuzz/corpus/<target>/`; fails naming each input that panics.
fn replay(target: &str, check: fn(&[u8])) {
    replay_dir("corpus", target, check);
}

/// Runs `check` on every file of `fuzz/<dir>/<target>/`.
fn replay_dir(dir: &str, target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(dir)
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    let mut failed = Vec::new();
    for f in &files {
        let data = std::fs::read(f).expect("read seed");
        if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
            failed.push(f.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs fail:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
    println!("{target}: {} inputs replayed", files.len());
}

#[test]
fn doh_request_corpus() {
    replay("doh_request", checks::doh_request);
}

#[test]
fn parse_message_corpus() {
    replay("parse_message", checks::parse_message);
}

#[test]
fn proxy_header_corpus() {
    replay("proxy_header", checks::proxy_header);
}

#[test]
fn name_from_wire_corpus() {
    replay("name_from_wire", checks::name_from_wire);
}

#[test]
fn scan_zone_corpus() {
    replay("scan_zone", checks::scan_zone);
}

#[test]
fn respond_corpus() {
    replay("respond", checks::respond);
}

#[test]
fn config_corpus() {
    replay("config", checks::config);
}

#[test]
fn resolver_cache_corpus() {
    replay("resolver_cache", checks::resolver_cache);
}

#[test]
fn catalog_corpus() {
    replay("catalog", checks::catalog);
}

#[test]
fn xfr_in_corpus() {
    replay("xfr_in", checks::xfr_in);
}

#[test]
fn update_corpus() {
    replay("update", checks::update);
}

/// The hand-made update seeds end as their names say: changes compared with the full
/// build (`diff.test.`, and the NSEC-signed `nsec.lab.`), nothing to change, and refusals.
#[test]
fn update_seeds_reach_each_outcome() {
    use checks::UpdateEnd::*;
    use shardns_wire::Rcode;
    for (seed, want) in [
        ("add-a", Changed),
        ("add-dateserial", Changed),
        ("prereq-then-replace", Changed),
        ("delete-name", Changed),
        ("delete-rr", Changed),
        ("apex-ns-and-soa", Changed),
        ("new-cut", Changed),
        ("nsec-add-name", Changed),
        ("cname-conflict", Changed),
        ("prereq-nxdomain", Refused(Rcode::NXDOMAIN)),
        ("notzone", Refused(Rcode::NOTZONE)),
        ("formerr-meta", Refused(Rcode::FORMERR)),
        ("nsec-refused", Refused(Rcode::REFUSED)),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/update")
            .join(seed);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(checks::update_run(&data), want, "{seed}");
    }
}

/// The hand-made seeds reach what they were made for: a patch compared with the full
/// build (`diff.test.` and the NSEC-signed `nsec.lab.`), a whole zone, an SOA alone, and
/// the refusals.
#[test]
fn xfr_in_seeds_reach_each_outcome() {
    use checks::XfrInEnd::*;
    for (seed, want) in [
        ("ixfr-diff", Patched),
        ("ixfr-diff-delete-name", Patched),
        ("ixfr-nsec-add-name", Patched),
        ("axfr-diff", Built),
        ("ixfr-diff-axfr-form", Built),
        ("axfr-nsec", Built),
        ("ixfr-up-to-date", SoaOnly),
        ("axfr-serial-mismatch", Rejected),
        ("ixfr-diff-wrong-start", Rejected),
        ("ixfr-diff-delete-missing", Rejected),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/xfr_in")
            .join(seed);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(checks::xfr_in_run(&data), want, "{seed}");
    }
}

/// The journal seeds are what their names say: three diffs read whole, and the same
/// journal cut short giving the first two and the damage at the third's start.
#[test]
fn journal_seeds_read_as_made() {
    use shardns_server::journal_file::parse;
    let apex: shardns_server::Name = "diff.test.".parse().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/journal");
    let three = std::fs::read(dir.join("three")).unwrap();
    let (diffs, damage) = parse(&three[1..], &apex).unwrap();
    assert_eq!((diffs.len(), damage), (3, None));
    let cut = std::fs::read(dir.join("three-cut")).unwrap();
    let (two, damage) = parse(&cut[1..], &apex).unwrap();
    assert_eq!(two, diffs[..2]);
    let at = damage.expect("damage reported").0;
    assert_eq!(at, 14 + 11 + 24 + diffs[0].len() + diffs[1].len());
    assert!(parse(&std::fs::read(dir.join("wrong-zone")).unwrap()[1..], &apex).is_err());
}

#[test]
fn journal_corpus() {
    replay("journal", checks::journal);
}

#[test]
fn ksr_corpus() {
    replay("ksr", checks::ksr);
}

/// The offline-KSK seeds end as their names say: the real documents (fuzz/make_corpus.py
/// --shardns) signed and taken, the hand-made refusals refused.
#[test]
fn offline_ksk_seeds_reach_each_outcome() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let read = |t: &str, seed: &str| std::fs::read(dir.join(t).join(seed)).unwrap();
    for (seed, want) in [
        ("real-ecdsap256sha256", Some(4)),
        ("real-ed25519", Some(4)),
        ("doc-example", Some(2)),
        ("ttl-cds-always", Some(1)),
        ("ttl-cds-delete", Some(1)),
        ("empty-period", Some(0)),
        ("long-period", Some(0)),
        ("no-end", None),
        ("include", None),
        ("origin", None),
        ("other-class", None),
    ] {
        assert_eq!(checks::ksr_run(&read("ksr", seed)), want, "ksr {seed}");
    }
    for (seed, want) in [
        ("real-ed25519-always", Some(true)),
        ("real-ecdsap256sha256-delete-dnssec", Some(true)),
        ("real-ed25519-none", Some(true)),
        ("shape", Some(false)),
        ("class-ch", None),
        ("include", None),
        ("no-end", None),
    ] {
        assert_eq!(checks::skr_run(&read("skr", seed)), want, "skr {seed}");
    }
}

#[test]
fn skr_corpus() {
    replay("skr", checks::skr);
}

#[test]
fn pregenerated_corpus() {
    replay("pregenerated", checks::pregenerated);
}

#[test]
fn tsig_corpus() {
    replay("tsig", checks::tsig);
}

#[test]
fn xfr_corpus() {
    replay("xfr", checks::xfr);
}

/// The TSIG-signed seeds were signed by fuzz/make_corpus.py with Python's own `hmac`, an
/// implementation of RFC 8945 §4.3.3 that is not ours: our verification must accept them.
#[test]
fn python_signed_requests_verify() {
    let key: shardns_wire::tsig::Key = "hmac-sha256:fuzz.:c2VjcmV0".parse().unwrap();
    for seed in ["q-axfr-tsig", "q-ixfr-tsig-edns"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/parse_message")
            .join(seed);
        let msg = std::fs::read(&path).unwrap();
        let sig = shardns_wire::tsig::read(&msg).unwrap().expect("a TSIG");
        let keys = [key.clone()];
        assert!(
            shardns_wire::tsig::verify(&msg, &sig, &keys, sig.time).is_ok(),
            "{seed}"
        );
    }
}
