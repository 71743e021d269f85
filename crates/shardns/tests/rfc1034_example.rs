//! RFC 1034 §6.1's EDU. zone, the one C.ISI.EDU. serves, loaded in shardns and in knotd.
//!
//! The zone names C.ISI.EDU. as one of its name servers, and C.ISI.EDU. lies below the
//! ISI.EDU. delegation, which gives glue for VAXA, A and VENERA but not for C. Knot and NSD
//! load it (Knot without a word); shardns loads it with a warning, which `shardns check`
//! prints (exit 0) and `shardns serve` logs. Then a few queries (the apex NS and SOA,
//! referrals into ISI.EDU., MIT.EDU., UCI.EDU. and YALE.EDU., an NXDOMAIN) go to both servers
//! on 127.0.0.1, and their responses, parsed with hickory-proto, must agree: RCODE, AA, and
//! each section as a set of (lower-cased owner, TTL, type, RDATA).
//!
//! When `knotd` is not installed the comparison prints why and passes; the `check` test runs
//! regardless. `KNOTD=/path/to/knotd` picks another binary.
//!
//! Never: any address but 127.0.0.1, unbounded waits, or processes left running.

mod common;

use common::{
    find_knotd, free_port, parse, query, start_knot, udp_client, udp_exchange, wait_authoritative,
    Daemon, TempDir,
};
use hickory_proto::rr::Record;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

/// RFC 1034 §6.1, the EDU. zone file, as the RFC gives it (shared with the zone crate's tests).
const EDU_ZONE: &str = include_str!("../../zone/tests/data/rfc1034-edu.zone");

/// What the warning says, in `shardns check`'s output and the server's log.
const WARNING: &str = "EDU.: NS C.ISI.EDU. has no address records (A or AAAA) in the zone: \
                       it is below the delegation ISI.EDU., which gives no glue for it";

const A: u16 = 1;
const NS: u16 = 2;
const SOA: u16 = 6;
const MX: u16 = 15;

/// The queries asked of both servers.
const QUERIES: &[(&str, u16)] = &[
    ("EDU.", NS),
    ("EDU.", SOA),
    ("C.ISI.EDU.", A),
    ("ISI.EDU.", NS),
    ("www.isi.edu.", A),
    ("VAXA.ISI.EDU.", A),
    ("XX.LCS.MIT.EDU.", A),
    ("ICS.UCI.EDU.", A),
    ("YALE.EDU.", MX),
    ("NOSUCH.EDU.", A),
    ("a.b.nosuch.edu.", SOA),
];

#[test]
fn shardns_check_warns_and_loads() {
    let dir = TempDir::new("rfc1034-check");
    let zone = dir.write("edu.zone", EDU_ZONE);
    let out = Command::new(common::BIN)
        .arg("check")
        .arg("--zone")
        .arg(format!("EDU.={}", zone.display()))
        .output()
        .expect("run shardns check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "shardns check failed:\n{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!("shardns: warning: {}: {WARNING}", zone.display()),
        "one warning, and nothing else"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 zones load"),
        "{out:?}"
    );
}

#[test]
fn knot_and_shardns_answer_the_rfc1034_edu_zone_alike() {
    let Some(knotd) = find_knotd() else {
        println!("rfc1034_example: SKIPPED: knotd is not installed (apt-get install -y knot); nothing compared");
        return;
    };
    let dir = TempDir::new("rfc1034-knot");
    let zone = dir.write("edu.zone", EDU_ZONE);
    let knot_port = free_port();
    let ours_port = free_port();
    let knot_addr = SocketAddr::from(([127, 0, 0, 1], knot_port));
    let mut knot = start_knot(&knotd, dir.path(), knot_addr, &[("EDU.", &zone)]);
    let mut ours = start_shardns(dir.path(), &zone, ours_port);
    let ours_addr = SocketAddr::from(([127, 0, 0, 1], ours_port));
    wait_authoritative(knot_addr, "EDU.", &mut knot);
    wait_authoritative(ours_addr, "EDU.", &mut ours);

    // The server logs the warning when it loads the zone.
    assert!(
        ours.log().contains(WARNING),
        "shardns did not log the warning:\n{}",
        ours.log()
    );
    let mut differences = Vec::new();
    for (i, &(name, qtype)) in QUERIES.iter().enumerate() {
        let id = 100 + i as u16;
        let from_knot = ask(knot_addr, id, name, qtype);
        let from_ours = ask(ours_addr, id, name, qtype);
        println!("{name} type {qtype}:\n  knotd:   {from_knot:?}\n  shardns: {from_ours:?}");
        if from_knot != from_ours {
            differences.push(format!(
                "{name} type {qtype}:\n  knotd:   {from_knot:?}\n  shardns: {from_ours:?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} responses differ:\n{}",
        differences.len(),
        QUERIES.len(),
        differences.join("\n")
    );

    // The answers are what RFC 1034 §4.3.2 makes of this zone, not only the same.
    let apex_ns = ask(ours_addr, 1, "EDU.", NS);
    assert_eq!((apex_ns.rcode, apex_ns.aa), (0, true));
    assert_eq!(
        apex_ns.sections[0],
        ["edu. 3600 NS c.isi.edu.", "edu. 3600 NS sri-nic.arpa."]
    );
    let referral = ask(ours_addr, 2, "C.ISI.EDU.", A);
    assert_eq!((referral.rcode, referral.aa), (0, false));
    assert!(referral.sections[0].is_empty());
    assert_eq!(referral.sections[1].len(), 3, "{referral:?}");
    assert_eq!(referral.sections[2].len(), 5, "{referral:?}");
    let nx = ask(ours_addr, 3, "NOSUCH.EDU.", A);
    assert_eq!((nx.rcode, nx.aa), (3, true));
}

/// What is compared of a response.
#[derive(Debug, PartialEq, Eq)]
struct Summary {
    rcode: u16,
    aa: bool,
    /// Answer, authority and additional: `owner TTL TYPE RDATA`, lower-cased, sorted.
    sections: [Vec<String>; 3],
}

/// Asks `server` one question over UDP, without EDNS.
fn ask(server: SocketAddr, id: u16, name: &str, qtype: u16) -> Summary {
    let sock = udp_client(server);
    let wire = udp_exchange(&sock, &query(id, name, qtype, None))
        .unwrap_or_else(|| panic!("no answer from {server} to {name} type {qtype}"));
    let m = parse(&wire);
    let section = |records: &[Record]| {
        let mut v: Vec<String> = records
            .iter()
            .map(|r| {
                let rdata = r.data.to_string().to_lowercase();
                let owner = r.name.to_lowercase();
                format!("{owner} {} {} {rdata}", r.ttl, r.record_type())
            })
            .collect();
        v.sort();
        v
    };
    Summary {
        rcode: u16::from(m.metadata.response_code),
        aa: m.metadata.authoritative,
        sections: [
            section(&m.answers),
            section(&m.authorities),
            section(&m.additionals),
        ],
    }
}

fn start_shardns(work: &Path, zone: &Path, port: u16) -> Daemon {
    let mut cmd = Command::new(common::BIN);
    cmd.arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--workers")
        .arg("1")
        .arg("--control")
        .arg(work.join("shardns.ctl"))
        .arg("--zone")
        .arg(format!("EDU.={}", zone.display()))
        .env_remove("RUST_LOG");
    Daemon::spawn("shardns", cmd, work.join("shardns.log"))
}
