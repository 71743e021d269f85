//! Differential test of DNSSEC validation: shardns's resolver against a validating Unbound,
//! on a signed loopback hierarchy (issue 15).
//!
//! The hierarchy is `tests/data/validation/` (written by `make-zones.sh` beside this file,
//! which says what each zone is): a root `.` signed with RSASHA256, the TLD `val.` with
//! NSEC3, and below it secure zones (NSEC, NSEC3, NSEC3 Opt-Out with an unsigned child,
//! NSEC3 with 150 iterations, RSASHA1 and RSASHA1-NSEC3-SHA1), an unsigned one, and bogus
//! ones (expired and not yet valid signatures, a DS matching no key, a missing RRSIG, a
//! forged A record, a broken NSEC3 chain, an SOA whose signature fails, under every denial
//! of its zone), one whose DS names an unsupported algorithm (insecure), and a KeyTrap-style one
//! (24 DNSKEYs with one key tag, 12 RRSIGs of that tag on one RRset, none valid). Each
//! instance on port 53 of its own address:
//!
//! | address     | what |
//! |---|---|
//! | 127.0.0.80 | shardns, the root zone `.` |
//! | 127.0.0.81 | shardns, `val.` |
//! | 127.0.0.82 | shardns, every zone below `val.` |
//! | 127.0.0.88 | shardns `--recursion --trust-anchor root.ds`, root hints at 127.0.0.80 |
//! | 127.0.0.89 | Unbound, `validator iterator`, the same hints and anchor, fenced from every address but 127.0.0.0/8 |
//!
//! Every question of `corpus` is asked of both resolvers with DO, without DO, and with DO
//! and CD, then a few inside the NSEC ranges the corpus proved (`corpus::aggressive`, which
//! shardns must answer without an upstream query, RFC 8198), and the replies compared (`compare`): RCODE, AD, the answer's data, its RRSIGs
//! (whole), the authority section's records (SOA, its RRSIGs, NSEC/NSEC3 proofs with
//! theirs; whole but for TTLs) and the EDE codes. Differences are classified by `allowed::ALLOWED`, each class with its reason; any
//! other difference fails the test. Spot checks against what the zones must give (secure,
//! insecure, bogus) make sure the world works, on both sides. Last, independent clients ask
//! shardns (`clients`): `delv`, validating for itself from the same anchor with the RRSIGs,
//! DS, DNSKEY and NSEC/NSEC3 records shardns returns, and `kdig +dnssec` (AD bit, records).
//!
//! Needs root (port 53) and `unbound`: without either the test prints SKIPPED and passes.
//! `VALIDATION_VERBOSE=1` prints every query with both replies. Every process is killed by
//! PID when the test ends, even on failure.
//!
//! Never: any address outside 127.0.0.80-127.0.0.89, unbounded waits, processes left running.

mod allowed;
mod ask;
mod clients;
#[path = "../common/mod.rs"]
mod common;
mod compare;
mod corpus;
#[allow(dead_code)]
#[path = "../resolver_unbound/processes.rs"]
mod processes;
#[allow(dead_code)]
#[path = "../dnssec/wire.rs"]
mod wire;

use allowed::ALLOWED;
use ask::{ask, Reply};
use common::TempDir;
use compare::differences;
use corpus::{corpus, How, Query};
use processes::{find_unbound, Proc};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use wire::{rcode_name, type_name, A, DNSKEY, DS, MX, RRSIG, SOA};

const ROOT: &str = "127.0.0.80";
const TLD: &str = "127.0.0.81";
const LEAVES: &str = "127.0.0.82";
const SHARDNS: &str = "127.0.0.88";
const UNBOUND: &str = "127.0.0.89";

/// Fewest queries the corpus must hold.
const MIN_QUERIES: usize = 300;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/validation")
}

/// Every address this test binds must have port 53 free. Not being allowed to bind it (not
/// root) skips the test; a port in use fails it.
fn addresses_free() -> Result<(), String> {
    for ip in [ROOT, TLD, LEAVES, SHARDNS, UNBOUND] {
        let addr: SocketAddr = format!("{ip}:53").parse().unwrap();
        let probe = UdpSocket::bind(addr)
            .err()
            .or_else(|| TcpListener::bind(addr).err());
        if let Some(e) = probe {
            if e.kind() == ErrorKind::PermissionDenied {
                return Err(format!("cannot bind {addr} ({e}): run as root"));
            }
            panic!("{addr} is in use ({e}): see `ss -lunpt`");
        }
    }
    Ok(())
}

/// Unbound on [`UNBOUND`]:53, validating with `anchor` (a file of DS records), fenced.
fn start_unbound(bin: &Path, dir: &Path, hints: &Path, anchor: &Path) -> Proc {
    let mut conf = format!(
        "server:
  interface: {UNBOUND}
  port: 53
  interface-automatic: no
  do-daemonize: no
  use-syslog: no
  logfile: \"\"
  username: \"\"
  chroot: \"\"
  directory: \"{dir}\"
  pidfile: \"\"
  num-threads: 1
  verbosity: 1
  val-log-level: 2
  ede: yes
  access-control: 127.0.0.0/8 allow
  do-not-query-localhost: no
  do-ip6: no
  root-hints: \"{hints}\"
  qname-minimisation: yes
  module-config: \"validator iterator\"
  val-permissive-mode: no
  aggressive-nsec: yes
  trust-anchor-file: \"{anchor}\"
",
        dir = dir.display(),
        hints = hints.display(),
        anchor = anchor.display(),
    );
    conf.push_str(&common::unbound_fence());
    conf.push_str("remote-control:\n  control-enable: no\n");
    let path = dir.join("unbound.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new(bin);
    cmd.arg("-d").arg("-c").arg(&path);
    Proc::spawn(format!("unbound@{UNBOUND}"), cmd, None, "start of service")
}

/// What both resolvers must give for these (name, type, how): (RCODE, AD). The world
/// works only if they do.
const SPOT: &[(&str, u16, How, u16, bool)] = &[
    ("www.nsec.val.", A, How::Do, 0, true),
    ("www.nsec3.val.", A, How::Do, 0, true),
    ("nothere.nsec.val.", A, How::Do, 3, true),
    ("nothere.nsec3.val.", A, How::Do, 3, true),
    ("host.wild.nsec3.val.", A, How::Do, 0, true),
    ("www.optout.val.", A, How::Do, 0, true),
    ("www.insec.optout.val.", A, How::Do, 0, false),
    ("www.unsigned.val.", A, How::Do, 0, false),
    ("www.alg253.val.", A, How::Do, 0, false),
    ("www.rsasha1.val.", A, How::Do, 0, true),
    ("nothere.rsasha1.val.", A, How::Do, 3, true),
    ("www.nsec3rsasha1.val.", A, How::Do, 0, true),
    ("nothere.nsec3rsasha1.val.", A, How::Do, 3, true),
    ("www.badsoa.val.", A, How::Do, 0, true),
    ("www.badsoa.val.", MX, How::Do, 2, false),
    ("nothere.badsoa.val.", A, How::Do, 2, false),
    ("www.nsec.val.", RRSIG, How::Do, 0, false),
    ("www.expired.val.", A, How::Do, 2, false),
    ("www.future.val.", A, How::Do, 2, false),
    ("www.badds.val.", A, How::Do, 2, false),
    ("www.nosig.val.", A, How::Do, 2, false),
    ("www.forged.val.", A, How::Do, 2, false),
    ("nothere.badnsec3.val.", A, How::Do, 2, false),
    ("www.keytrap.val.", A, How::Do, 2, false),
    ("www.forged.val.", A, How::Cd, 0, false),
    ("val.", DNSKEY, How::Do, 0, true),
    ("nsec.val.", DS, How::Do, 0, true),
    (".", SOA, How::Plain, 0, false),
];

fn show(r: &Result<Reply, String>) -> String {
    match r {
        Err(e) => format!("error: {e}"),
        Ok(r) => {
            let mut s = format!(
                "{}{}{} ede {:?} {} ms",
                rcode_name(r.resp.rcode),
                if r.resp.ad { " ad" } else { "" },
                if r.resp.dnssec_ok { " do" } else { "" },
                r.ede,
                r.ms
            );
            for (i, section) in r.resp.sections.iter().enumerate() {
                for rr in section {
                    let _ = write!(s, "\n      {}: {rr}", ["an", "ns", "ar"][i]);
                }
            }
            s
        }
    }
}

fn label(q: &Query) -> String {
    format!("{} {} {}", q.name, type_name(q.qtype), q.how.name())
}

#[test]
fn validation_matches_unbound() {
    let Some(unbound_bin) = find_unbound() else {
        println!("validation: SKIPPED: unbound is not installed (apt-get install unbound); nothing compared");
        return;
    };
    if let Err(why) = addresses_free() {
        println!("validation: SKIPPED: {why}; nothing compared");
        return;
    }
    let started = Instant::now();
    let dir = TempDir::new("validation");
    let data = data_dir();
    let zone = |apex: &str, file: &str| -> [String; 2] {
        [
            "--zone".into(),
            format!("{apex}={}", data.join(file).display()),
        ]
    };
    let one = ["--workers".to_string(), "1".to_string()];
    let root_args: Vec<String> = one.iter().cloned().chain(zone(".", "root.zone")).collect();
    let tld_args: Vec<String> = one
        .iter()
        .cloned()
        .chain(zone("val.", "val.zone"))
        .collect();
    let mut leaf_args: Vec<String> = one.to_vec();
    for leaf in corpus::LEAVES {
        leaf_args.extend(zone(&format!("{leaf}.val."), &format!("{leaf}.val.zone")));
    }
    leaf_args.extend(zone("insec.optout.val.", "insec.optout.val.zone"));
    let auths = [
        Proc::shardns(dir.path(), ROOT, &root_args),
        Proc::shardns(dir.path(), TLD, &tld_args),
        Proc::shardns(dir.path(), LEAVES, &leaf_args),
    ];

    let hints = dir.write(
        "root.hints",
        &format!(". 3600000 NS a.root-servers.net.\na.root-servers.net. 3600000 A {ROOT}\n"),
    );
    let anchor = data.join("root.ds");
    let shardns = Proc::shardns(
        dir.path(),
        SHARDNS,
        &[
            "--workers".to_string(),
            "2".into(),
            "--recursion".into(),
            // The signed hierarchy is on loopback.
            "--allow-loopback-upstreams".into(),
            "--root-hints".into(),
            hints.display().to_string(),
            "--trust-anchor".into(),
            anchor.display().to_string(),
        ],
    );
    let unbound = start_unbound(&unbound_bin, dir.path(), &hints, &anchor);

    let corpus = corpus();
    assert!(corpus.len() >= MIN_QUERIES, "only {} queries", corpus.len());
    let s_addr: SocketAddr = format!("{SHARDNS}:53").parse().unwrap();
    let u_addr: SocketAddr = format!("{UNBOUND}:53").parse().unwrap();
    let mut results: Vec<(Result<Reply, String>, Result<Reply, String>)> = corpus
        .iter()
        .map(|q| (ask(s_addr, q), ask(u_addr, q)))
        .collect();
    // Aggressive NSEC (RFC 8198): names inside ranges the corpus proved are answered
    // without an upstream query, the same as Unbound's.
    let upstream = "shardns_resolver_upstream_queries_total";
    let before = shardns.stat(upstream);
    let aggressive = corpus::aggressive();
    results.extend(aggressive.iter().map(|q| (ask(s_addr, q), ask(u_addr, q))));
    let asked = shardns.stat(upstream) - before;
    let corpus: Vec<Query> = corpus.into_iter().chain(aggressive).collect();
    // Independent clients (delv validating for itself, kdig +dnssec) through shardns.
    let (client_failures, clients_ran) = clients::check(SHARDNS, &anchor, dir.path());

    let verbose = std::env::var_os("VALIDATION_VERBOSE").is_some();
    let mut identical = 0;
    let mut allowed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unexplained = Vec::new();
    for (q, (s, u)) in corpus.iter().zip(&results) {
        let diffs = differences(s, u);
        if verbose {
            println!(
                "{}\n  shardns: {}\n  unbound: {}",
                label(q),
                show(s),
                show(u)
            );
        }
        if diffs.is_empty() {
            identical += 1;
            continue;
        }
        let mut lines = Vec::new();
        for d in &diffs {
            let class = match (s, u) {
                (Ok(s), Ok(u)) => ALLOWED.iter().find(|a| (a.applies)(q, d, s, u)),
                _ => None,
            };
            match class {
                Some(a) => *allowed.entry(a.name).or_default() += 1,
                None => {
                    *by_kind.entry(d.kind()).or_default() += 1;
                    lines.push(d.to_string());
                }
            }
        }
        if !lines.is_empty() {
            unexplained.push(format!(
                "{}: {}\n  shardns: {}\n  unbound: {}",
                label(q),
                lines.join("; "),
                show(s),
                show(u)
            ));
        }
    }

    // The world works: what the zones must give, on both sides.
    let mut broken = Vec::new();
    for &(name, t, how, rcode, ad) in SPOT {
        let i = corpus
            .iter()
            .position(|q| q.name == name && q.qtype == t && q.how == how)
            .unwrap_or_else(|| panic!("{name} {} is not in the corpus", type_name(t)));
        for (who, r) in [("shardns", &results[i].0), ("unbound", &results[i].1)] {
            match r {
                Ok(r) if r.resp.rcode == rcode && r.resp.ad == ad => {}
                other => broken.push(format!(
                    "{who}: {}: expected {}{}, got {}",
                    label(&corpus[i]),
                    rcode_name(rcode),
                    if ad { " ad" } else { "" },
                    show(other)
                )),
            }
        }
    }

    let stats: Vec<String> = [
        "shardns_resolver_upstream_queries_total",
        "shardns_dnssec_secure_total",
        "shardns_dnssec_insecure_total",
        "shardns_dnssec_bogus_total",
    ]
    .iter()
    .map(|n| format!("{n} {}", shardns.stat(n)))
    .collect();
    println!(
        "validation: {} queries in {:.1} s: {identical} identical, {} with allowed differences only, {} unexplained (by kind: {by_kind:?})",
        corpus.len(),
        started.elapsed().as_secs_f64(),
        corpus.len() - identical - unexplained.len(),
        unexplained.len(),
    );
    for a in ALLOWED {
        println!(
            "  allowed {:>4} {}: {}",
            allowed.get(a.name).copied().unwrap_or(0),
            a.name,
            a.why
        );
    }
    println!("  {}", stats.join(", "));
    println!(
        "  aggressive NSEC: {} questions inside proven ranges, {asked} upstream queries",
        corpus::aggressive().len()
    );
    assert_eq!(asked, 0.0, "aggressive NSEC: answered from proven ranges");
    println!(
        "  independent clients: {clients_ran}: {} failures",
        client_failures.len()
    );
    // Every verdict is counted, and bogus answers are logged (once per name and reason).
    for n in [
        "shardns_dnssec_secure_total",
        "shardns_dnssec_insecure_total",
        "shardns_dnssec_bogus_total",
    ] {
        assert!(shardns.stat(n) > 0.0, "{n} is 0");
    }
    let log = shardns.log();
    let logged = log
        .matches("DNSSEC: bogus answer for www.forged.val. A:")
        .count();
    assert_eq!(logged, 1, "the forged answer is logged once:\n{log}");
    drop(unbound);
    drop(shardns);
    drop(auths);
    assert!(
        client_failures.is_empty(),
        "independent clients:\n{}",
        client_failures.join("\n")
    );
    assert!(
        broken.is_empty() && unexplained.is_empty(),
        "{} unexplained differences:\n{}\n\n{} spot checks failed (the world does not work):\n{}",
        unexplained.len(),
        unexplained.join("\n"),
        broken.len(),
        broken.join("\n")
    );
}
