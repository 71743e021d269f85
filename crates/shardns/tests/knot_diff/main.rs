//! Differential test against Knot DNS.
//!
//! The zones in `tests/diff/` are loaded into `knotd` (Debian's `knot` package) and into
//! `shardns serve`, both on 127.0.0.1. A fixed-seed generator makes a few thousand queries
//! (every owner name and empty non-terminal times every type, missing names, names below
//! wildcards, delegations and DNAMEs, mixed case, with and without EDNS and DO, some over TCP)
//! and sends each to both servers. The responses are parsed with hickory-proto, a parser that
//! is not ours, and compared: RCODE (extended), AA, TC, whether EDNS is present, and the
//! answer, authority and additional sections as sets of (lower-cased owner, type, class, TTL,
//! RDATA). Every difference is printed with its query; the test fails on any difference that
//! no entry of `ALLOWED` covers, and each entry names the RFC that makes both answers right.
//!
//! Names inside RDATA are compared without regard to case (RDATA in DNSSEC canonical form):
//! Knot writes a target compressed against the question, hence in the question's case.
//!
//! When `knotd` is not installed the test prints why and passes; CI installs `knot`
//! (`KNOTD=/path/to/knotd` picks another binary). `KNOT_DIFF_VERBOSE=1` prints every query
//! with both responses. The servers' configuration and logs stay in
//! `$CARGO_TARGET_TMPDIR/knot_diff-<pid>/` when the test fails.
//!
//! Never: any address but 127.0.0.1, unbounded waits, or processes left running.
//!
//! This file owns the zones, the test and its tally; the rest is in `queries` (the query
//! generator), `responses` (parsing and normalising a response, and how two differ),
//! `allowed` (the intended differences, each with its RFC) and `servers` (starting knotd and
//! shardns, and the client that asks them).

mod allowed;
#[path = "../common/mod.rs"]
mod common;
mod queries;
mod responses;
mod servers;

use allowed::ALLOWED;
use common::find_knotd;
use common::free_port;
use queries::{generate, Q};
use responses::{differences, show, Diff};
use servers::{start_knot, start_shardns, wait_ready, work_dir, Client};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;
use std::{env, fs};

/// The zones: apex and file under `tests/diff/`.
const ZONES: &[(&str, &str)] = &[
    ("diff.test.", "diff.test.zone"),
    ("child.diff.test.", "child.diff.test.zone"),
    ("second.test.", "second.test.zone"),
];

/// Type numbers the modules share.
const ANY: u16 = 255;
const OPT: u16 = 41;
const CNAME: u16 = 5;
const DNAME: u16 = 39;

/// Fewest queries the test must send (the issue asks for at least 2,000).
const MIN_QUERIES: usize = 2000;
/// The generator's seed: change it to explore, keep it fixed in the repository.
const SEED: u64 = 0x5eed_d1ff_0000_0001;

#[test]
fn knot_and_shardns_agree() {
    let Some(knotd) = find_knotd() else {
        println!("knot_diff: SKIPPED: knotd is not installed (apt-get install -y knot); nothing compared");
        return;
    };
    let started = Instant::now();
    let zone_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff");
    let work = work_dir();

    let knot_port = free_port();
    let mut knot = start_knot(&knotd, &work, &zone_dir, knot_port);
    let ours_port = std::iter::repeat_with(free_port)
        .take(10)
        .find(|&p| p != knot_port)
        .expect("a second free port");
    let mut ours = start_shardns(&work, &zone_dir, ours_port);
    let knot_addr = SocketAddr::from(([127, 0, 0, 1], knot_port));
    let ours_addr = SocketAddr::from(([127, 0, 0, 1], ours_port));
    let knot_client = Client::new(knot_addr);
    let ours_client = Client::new(ours_addr);
    wait_ready(&knot_client, &mut knot);
    wait_ready(&ours_client, &mut ours);

    let queries = generate(&zone_dir);
    assert!(
        queries.len() >= MIN_QUERIES,
        "only {} queries generated",
        queries.len()
    );

    let mut report = Report::default();
    for q in &queries {
        compare(q, &knot_client, &ours_client, &mut report);
        // A UDP response with TC set is retried over TCP, as a client would.
        if !q.tcp && report.last_truncated {
            let tcp = Q {
                tcp: true,
                ..q.clone()
            };
            compare(&tcp, &knot_client, &ours_client, &mut report);
        }
    }

    println!(
        "knot_diff: {} queries ({} over TCP) in {:.1} s: {} identical, {} allowed differences, {} unexplained",
        report.sent,
        report.sent_tcp,
        started.elapsed().as_secs_f64(),
        report.same,
        report.allowed.iter().sum::<usize>(),
        report.failures.len()
    );
    for (entry, n) in ALLOWED.iter().zip(&report.allowed) {
        if *n > 0 {
            println!(
                "knot_diff: allowed {n:4} x {}: {}",
                entry.name, entry.reason
            );
        }
    }
    for f in &report.both_failed {
        println!("knot_diff: no parsable response from either server: {f}");
    }
    for f in &report.failures {
        println!("{f}");
    }
    drop(ours);
    drop(knot);
    if report.failures.is_empty() {
        let _ = fs::remove_dir_all(&work);
    }
    assert!(
        report.failures.is_empty(),
        "{} responses differ from Knot DNS (printed above; servers' files are in {})",
        report.failures.len(),
        work.display()
    );
}

#[derive(Default)]
struct Report {
    sent: usize,
    sent_tcp: usize,
    same: usize,
    /// Per [`ALLOWED`] entry, how many differences it covered.
    allowed: Vec<usize>,
    failures: Vec<String>,
    /// Queries neither server answered with a parsable response (the same error both times).
    both_failed: Vec<String>,
    /// Either response to the last query had TC set.
    last_truncated: bool,
}

fn compare(q: &Q, knot: &Client, ours: &Client, report: &mut Report) {
    if report.allowed.is_empty() {
        report.allowed = vec![0; ALLOWED.len()];
    }
    let wire = q.to_wire();
    let k = knot.ask(q, &wire);
    let o = ours.ask(q, &wire);
    report.sent += 1;
    report.sent_tcp += usize::from(q.tcp);
    report.last_truncated = matches!(&k, Ok(r) if r.tc) || matches!(&o, Ok(r) if r.tc);
    if env::var_os("KNOT_DIFF_VERBOSE").is_some() {
        println!("QUERY {q}\n  knot: {}\n  ours: {}", show(&k), show(&o));
    }
    if let (Err(e), Err(_)) = (&k, &o) {
        report.both_failed.push(format!("{q}: {e}"));
    }
    let diffs = differences(&k, &o);
    if diffs.is_empty() {
        report.same += 1;
        return;
    }
    if let (Ok(k), Ok(o)) = (&k, &o) {
        if let Some(i) = ALLOWED.iter().position(|a| (a.applies)(q, k, o, &diffs)) {
            report.allowed[i] += 1;
            return;
        }
    }
    let mut s = format!("DIFF {q}");
    for line in diffs.iter().flat_map(Diff::lines) {
        let _ = write!(s, "\n    {line}");
    }
    report.failures.push(s);
}
