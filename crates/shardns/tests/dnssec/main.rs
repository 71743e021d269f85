//! DNSSEC serving (issue 13): the lab that judges shardns's answers to DO=1 queries over
//! pre-signed zones, against the RFCs' own examples, against Knot DNS, and through a
//! validating resolver.
//!
//! Three parts, each run against knotd (the reference, Debian's `knot`) to show that the
//! harness and the data are right, and against `shardns serve` in a test of its own:
//!
//! 1. **RFC examples** (`rfc`). The signed zones of RFC 4035 Appendix A and RFC 5155
//!    Appendix A (`tests/data/dnssec/rfc*-example.zone`, the RFCs' records one a line) are
//!    served, and each example query of RFC 4035 B.1-B.8 and RFC 5155 B.1-B.6 (B.2.1
//!    included) is asked with DO=1; the response must hold, section by section and as sets,
//!    the records the RFC prints (RCODE, AA and the DO bit too; TTLs aside, see `rfc`).
//! 2. **Knot differential** (`lab`). `bench/dnssec/make-zones.sh` wrote one zone signed
//!    three ways (NSEC; NSEC3 with 0 iterations and no salt; NSEC3 Opt-Out) with wildcards,
//!    empty non-terminals, signed and unsigned delegations, CNAMEs (one to a wildcard),
//!    a DNAME, glue and an RRset too big for UDP (`tests/data/dnssec/lab/`, committed: the
//!    ECDSA keys and signatures are random, so the tests use one fixed run). Every name is
//!    asked every type (NSEC, NSEC3, RRSIG, DNSKEY, NSEC3PARAM, DS and ANY among them) with
//!    DO=1 and DO=0, ANY and RRSIG also over TCP, some with a 512-octet buffer or no EDNS to
//!    force truncation (a truncated UDP response is asked again over TCP). Against knotd
//!    alone, every answer must be signed and every denial proved (`lab::invariants`);
//!    against shardns, each response must equal Knot's: RCODE, AA, TC, AD, EDNS and DO, and
//!    the three sections as sets of records, TTLs and signatures included. Two differences
//!    are allowed, as in tests/knot_diff (ANY, RFC 8482; what a truncated response holds,
//!    RFC 2181 §9).
//! 3. **Validation** (`validate`). Unbound, validating with the lab zones' DS records as its
//!    only trust anchors and fenced from every address but 127.0.0.0/8, resolves every lab
//!    name and type through the parents on knotd, and through the parents on shardns; the
//!    children run on a knotd of their own at 127.0.0.71:53 (where the zones' glue points).
//!    In front of knotd nothing may be SERVFAIL (bogus) but what leaves the lab, and spot
//!    checks must be secure or insecure as they should; in front of shardns every RCODE, AD
//!    bit and answer must be the same as in front of knotd. Needs root (port 53): without
//!    it these tests print SKIPPED and pass, as tests/resolver_unbound does.
//!
//! A check of the data comes first (`zone_data_verifies`): ldns-verify-zone accepts every
//! zone (the RFC zones at a time their signatures were valid: they expired in 2004 and 2015).
//!
//! ```sh
//! cargo test -p shardns --test dnssec -- --nocapture        # every part, with the tallies
//! DNSSEC_VERBOSE=1 cargo test -p shardns --test dnssec -- --nocapture lab_shardns
//! ```
//!
//! Each difference is printed with its query and zone, then the header fields that differ
//! and, per section, the records only Knot sent and those only shardns sent (RRSIG, NSEC,
//! NSEC3, DS and DNSKEY shown field by field: covered type, labels, original TTL, key tag,
//! signer; next name or hash and the type bit map). `DNSSEC_VERBOSE=1` prints every query
//! with both responses (and Unbound's log, with the reason of any bogus answer).
//!
//! When knotd, unbound or ldns-verify-zone is missing (`KNOTD=`, `UNBOUND=` pick others)
//! the tests needing it print SKIPPED and pass; `scripts/test.sh` installs them. Servers'
//! configuration and logs stay in `$CARGO_TARGET_TMPDIR/dnssec-<pid>-<test>/` when a test
//! fails.
//!
//! Never: any address outside 127.0.0.0/8, unbounded waits, or processes left running
//! (every server is killed by PID on drop).

#[path = "../common/mod.rs"]
mod common;
mod lab;
mod rfc;
mod servers;
mod validate;
mod wire;

use common::{find_knotd, find_program};
use servers::{port, start_knot, start_shardns, wait_ready, Client, Zones};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Fewest queries per lab zone the differential must send (the issue asks for 100 and more).
const MIN_QUERIES_PER_ZONE: usize = 100;

/// A scratch directory for one test's servers, removed unless the test fails.
struct Work(PathBuf);

impl Work {
    fn new(tag: &str) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("dnssec-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the work directory");
        Self(dir)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("dnssec: servers' files kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn knotd_or_skip(test: &str) -> Option<PathBuf> {
    let k = find_knotd();
    if k.is_none() {
        println!("dnssec {test}: SKIPPED: knotd is not installed (apt-get install knot); nothing compared");
    }
    k
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn report(what: &str, failures: &[String]) {
    for f in failures {
        println!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{what}: {} failures (printed above)",
        failures.len()
    );
}

#[test]
fn zone_data_verifies() {
    let Some(ldns) = find_program("ldns-verify-zone", "LDNS_VERIFY_ZONE") else {
        println!("dnssec: SKIPPED: ldns-verify-zone is not installed (apt-get install ldnsutils)");
        return;
    };
    let dir = lab::data_dir();
    let mut runs: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for appendix in [&rfc::RFC4035, &rfc::RFC5155] {
        runs.push((
            dir.join(appendix.file),
            vec!["-t".into(), appendix.valid_at.into()],
        ));
    }
    for apex in lab::PARENTS {
        for zone in [apex.to_string(), format!("signed.{apex}")] {
            let ds = dir.join("lab").join(format!("{zone}ds"));
            runs.push((
                lab::zone_file(&zone),
                vec!["-k".into(), ds.display().to_string()],
            ));
        }
    }
    for (file, args) in runs {
        let out = Command::new(&ldns)
            .args(&args)
            .arg(&file)
            .output()
            .expect("run ldns-verify-zone");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("Zone is verified and complete"),
            "ldns-verify-zone {args:?} {}:\n{text}",
            file.display()
        );
    }
}

/// Serves `appendix`'s zone on knotd, reads it back by AXFR, and runs its cases against
/// knotd or, with `ours`, against shardns.
fn rfc_appendix(appendix: &rfc::Appendix, ours: bool) {
    let test = format!("{} {}", appendix.rfc, if ours { "shardns" } else { "knot" });
    let Some(knotd) = knotd_or_skip(&test) else {
        return;
    };
    let work = Work::new(&test.replace(' ', "-"));
    let zones: &Zones = &[(
        appendix.apex.to_string(),
        lab::data_dir().join(appendix.file),
    )];
    let knot_addr = loopback(port());
    let mut knot = start_knot(&knotd, &work.0, "knot", knot_addr, zones);
    let knot_client = Client::new(knot_addr);
    wait_ready(&knot_client, &[appendix.apex], &mut knot);
    let zone = knot_client.axfr(appendix.apex).expect("AXFR from knotd");
    let failures = if ours {
        let ours_addr = loopback(port());
        let mut shardns = start_shardns(&work.0, ours_addr, zones);
        let client = Client::new(ours_addr);
        wait_ready(&client, &[appendix.apex], &mut shardns);
        rfc::run(appendix, &zone, &client, "shardns")
    } else {
        rfc::run(appendix, &zone, &knot_client, "knot")
    };
    println!(
        "dnssec {test}: {} examples, {} differ from the RFC",
        appendix.cases.len(),
        failures.len()
    );
    report(&test, &failures);
}

#[test]
fn rfc4035_appendix_b_knot() {
    rfc_appendix(&rfc::RFC4035, false);
}

#[test]
fn rfc5155_appendix_b_knot() {
    rfc_appendix(&rfc::RFC5155, false);
}

#[test]
fn rfc4035_appendix_b_shardns() {
    rfc_appendix(&rfc::RFC4035, true);
}

#[test]
fn rfc5155_appendix_b_shardns() {
    rfc_appendix(&rfc::RFC5155, true);
}

/// knotd serving the lab parents on a free loopback port.
fn lab_knot(knotd: &Path, work: &Work) -> (common::Daemon, Client) {
    let addr = loopback(port());
    let mut knot = start_knot(knotd, &work.0, "knot", addr, &lab::parent_zones());
    let client = Client::new(addr);
    wait_ready(&client, &lab::PARENTS, &mut knot);
    (knot, client)
}

#[test]
fn lab_knot_signs_its_answers() {
    let Some(knotd) = knotd_or_skip("lab knot") else {
        return;
    };
    let work = Work::new("lab-knot");
    let (_knot, client) = lab_knot(&knotd, &work);
    let mut failures = Vec::new();
    let mut sent = 0;
    for apex in lab::PARENTS {
        let queries = lab::queries(apex);
        assert!(queries.len() >= MIN_QUERIES_PER_ZONE);
        for q in &queries {
            let mut q = q.clone();
            loop {
                sent += 1;
                match client.ask(&q) {
                    Err(e) => failures.push(format!("[{apex}] {q}: no response ({e})")),
                    Ok(r) => {
                        for v in lab::invariants(apex, &q, &r) {
                            failures.push(format!(
                                "[{apex}] {q}: {v}\n    {}",
                                wire::show(&Ok(r.clone()))
                            ));
                        }
                        if r.tc && !q.tcp {
                            q.tcp = true;
                            continue;
                        }
                    }
                }
                break;
            }
        }
    }
    println!(
        "dnssec lab knot: {sent} queries over {} zones, {} answers break an invariant",
        lab::PARENTS.len(),
        failures.len()
    );
    report("lab knot", &failures);
}

#[test]
fn lab_shardns_matches_knot() {
    let Some(knotd) = knotd_or_skip("lab shardns") else {
        return;
    };
    let work = Work::new("lab-shardns");
    let (_knot, knot) = lab_knot(&knotd, &work);
    let ours_addr = loopback(port());
    let mut shardns = start_shardns(&work.0, ours_addr, &lab::parent_zones());
    let ours = Client::new(ours_addr);
    wait_ready(&ours, &lab::PARENTS, &mut shardns);
    let mut tally = lab::Tally::default();
    for apex in lab::PARENTS {
        let queries = lab::queries(apex);
        let before = (tally.sent, tally.failures.len());
        lab::differential(apex, &queries, &knot, &ours, &mut tally);
        println!(
            "dnssec lab shardns: [{apex}] {} queries ({} asked, TCP retries included), {} differ",
            queries.len(),
            tally.sent - before.0,
            tally.failures.len() - before.1
        );
    }
    println!(
        "dnssec lab shardns: {} queries: {} identical, {} allowed differences, {} unexplained",
        tally.sent,
        tally.same,
        tally.allowed.iter().map(|(_, n)| n).sum::<usize>(),
        tally.failures.len()
    );
    for (name, n) in &tally.allowed {
        if *n > 0 {
            println!("dnssec lab shardns: allowed {n:4} x {name}");
        }
    }
    drop(shardns);
    report("lab shardns vs knot", &tally.failures);
}

/// The validation world: the children's knotd on 127.0.0.71:53, the parents on knotd
/// (and, with `ours`, on shardns), an Unbound in front of each.
fn validation(ours: bool) {
    let test = if ours {
        "validation shardns"
    } else {
        "validation knot"
    };
    let Some(knotd) = knotd_or_skip(test) else {
        return;
    };
    let Some(unbound) = find_program("unbound", "UNBOUND") else {
        println!("dnssec {test}: SKIPPED: unbound is not installed (apt-get install unbound); nothing validated");
        return;
    };
    let _turn = validate::PORT_53.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(why) = validate::port_53_free() {
        println!("dnssec {test}: SKIPPED: {why}; nothing validated");
        return;
    }
    let work = Work::new(&test.replace(' ', "-"));
    let child_addr = SocketAddr::from((validate::CHILD_IP, 53));
    let mut children = start_knot(&knotd, &work.0, "children", child_addr, &lab::child_zones());
    let child_apexes: Vec<String> = lab::child_zones().into_iter().map(|(a, _)| a).collect();
    let child_refs: Vec<&str> = child_apexes.iter().map(String::as_str).collect();
    wait_ready(&Client::new(child_addr), &child_refs, &mut children);
    let (_knot, knot) = lab_knot(&knotd, &work);

    let knot_side = validate::resolve_all(
        &unbound,
        &work.0.join("unbound-knot"),
        validate::UNBOUND_KNOT_IP,
        knot.addr,
    );
    let mut failures = validate::check_knot_side(&knot_side);
    let secure = knot_side
        .iter()
        .filter(|r| matches!(&r.r, Ok(r) if r.ad))
        .count();
    println!(
        "dnssec {test}: {} names and types resolved through unbound in front of knotd: {secure} secure (AD)",
        knot_side.len()
    );
    if ours {
        let ours_addr = loopback(port());
        let mut shardns = start_shardns(&work.0, ours_addr, &lab::parent_zones());
        wait_ready(&Client::new(ours_addr), &lab::PARENTS, &mut shardns);
        let ours_side = validate::resolve_all(
            &unbound,
            &work.0.join("unbound-shardns"),
            validate::UNBOUND_OURS_IP,
            ours_addr,
        );
        let diffs = validate::compare(&knot_side, &ours_side);
        println!(
            "dnssec {test}: through unbound, {} of {} differ between knotd and shardns",
            diffs.len(),
            ours_side.len()
        );
        failures.extend(diffs);
    }
    report(test, &failures);
}

#[test]
fn lab_unbound_validates_knot() {
    validation(false);
}

#[test]
fn lab_unbound_validates_shardns_like_knot() {
    validation(true);
}

/// Outgoing transfers carry the signed zone: each lab zone, transferred from shardns by
/// `dig` (AXFR), is a zone ldns-verify-zone verifies with its DS.
#[test]
fn axfr_from_shardns_verifies() {
    let (Some(ldns), Some(dig)) = (
        find_program("ldns-verify-zone", "LDNS_VERIFY_ZONE"),
        find_program("dig", "DIG"),
    ) else {
        println!("dnssec axfr: SKIPPED: ldns-verify-zone or dig is not installed");
        return;
    };
    let work = Work::new("axfr");
    let addr = loopback(port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shardns"));
    cmd.args(["serve", "--workers", "1", "--allow-transfer", "127.0.0.1"])
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--control")
        .arg(work.0.join("shardns.ctl"));
    for apex in lab::PARENTS {
        cmd.arg("--zone")
            .arg(format!("{apex}={}", lab::zone_file(apex).display()));
    }
    let mut shardns = common::Daemon::spawn("shardns", cmd, work.0.join("shardns.log"));
    let client = Client::new(addr);
    wait_ready(&client, &lab::PARENTS, &mut shardns);
    for apex in lab::PARENTS {
        let out = Command::new(&dig)
            .args(["+onesoa", "+nocmd", "+nostats", "+time=5", "+tries=1"])
            .arg(format!("@{}", addr.ip()))
            .args(["-p", &addr.port().to_string(), apex, "AXFR"])
            .output()
            .expect("run dig");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            text.contains("RRSIG") && !text.contains("Transfer failed"),
            "AXFR of {apex}:\n{text}"
        );
        let file = work.0.join(format!("{apex}axfr"));
        std::fs::write(&file, &text).expect("write the transfer");
        let ds = lab::data_dir().join("lab").join(format!("{apex}ds"));
        let v = Command::new(&ldns)
            .arg("-k")
            .arg(&ds)
            .arg(&file)
            .output()
            .expect("run ldns-verify-zone");
        let verdict =
            String::from_utf8_lossy(&v.stdout).into_owned() + &String::from_utf8_lossy(&v.stderr);
        assert!(
            v.status.success() && verdict.contains("Zone is verified and complete"),
            "ldns-verify-zone on shardns's AXFR of {apex}:\n{verdict}"
        );
        println!("dnssec axfr: {apex} transferred from shardns and verified");
    }
}
