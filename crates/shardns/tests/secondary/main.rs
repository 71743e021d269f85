//! shardns as a secondary (issue 14, step 1): zones transferred from real primaries and
//! kept fresh by NOTIFY, IXFR and the SOA timers.
//!
//! - `peers`: Knot DNS (`knotd`), NSD and BIND (`named`), Debian's packages, as primaries,
//!   every transfer and NOTIFY signed with TSIG (hmac-sha256): the AXFR from each, answers
//!   identical to the primary's; from knotd, 100 successive serial changes each brought by
//!   its NOTIFY and taken as IXFR, then a restart that serves the copy kept on disk without
//!   any primary.
//! - `chain`: shardns -> shardns -> shardns: a change at the top reaches the bottom through
//!   NOTIFY; a primary that goes away makes the zone expire (SERVFAIL, logged, counted), and
//!   its return brings it back.
//! - `hostile`: a primary of our own making that answers garbage, another zone, a closing
//!   SOA of another serial, an endless transfer, a bad TSIG, a transfer cut short: each is a
//!   failed transfer, logged, and the version served stays; an IXFR whose deletions do not
//!   match falls back to AXFR; a serial going backwards is ignored and logged; a NOTIFY from
//!   an address that is not a primary is refused and counted.
//! - `outgoing`: Knot DNS, NSD and BIND as secondaries of shardns take true IXFR from its
//!   journal; the journal survives a restart, and one cut short by a crash is detected.
//! - `control`: `shardns zone status|refresh|retransfer|notify`.
//! - `names`: `a/b.example.` and `a_b.example.`, once one journal file name, each keep
//!   their history over a restart.
//! - `signed`: a secondary zone with `dnssec = true` (bump in the wire): knotd's unsigned
//!   zone served signed, judged by ldns-verify-zone and dnssec-verify after an AXFR and an
//!   IXFR (signed incrementally), followed by a shardns tertiary by IXFR; its own serial,
//!   moved by signature refreshes; a version that cannot be signed is not served.
//! - `slow`: a primary of our own making that sends a message every 2 s, or trickles one:
//!   other primaries' zones are served and expire on time meanwhile, at most two transfers
//!   ask it at once, and a transfer that makes no progress is ended and retried.
//!
//! ```sh
//! cargo test -p shardns --test secondary -- --nocapture
//! ```
//!
//! A test whose peer program is missing (`KNOTD=`, `NSD=`, `NAMED=` pick others) prints
//! SKIPPED and passes; `scripts/test.sh` installs them.
//!
//! Never: any address outside 127.0.0.0/8, unbounded waits, or processes left running
//! (every server is killed by PID on drop, also when a test fails).

mod catalog;
mod chain;
#[path = "../common/mod.rs"]
mod common;
mod control;
mod hostile;
mod names;
mod outgoing;
mod peers;
mod signed;
mod slow;

use common::*;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A zone at `apex` with a delegation and its glue, a wildcard, an MX, and `hosts` names
/// with an A and a TXT each (enough of them fill many messages). SOA REFRESH of an hour: a
/// change within a test comes by NOTIFY, never by the timer.
pub fn zone_text(serial: u32, hosts: usize, extra: &str) -> String {
    let mut z = format!(
        "$TTL 300\n@ SOA ns1 hostmaster {serial} 3600 600 1209600 60\n@ NS ns1\n@ NS ns2\n\
         ns1 A 192.0.2.1\nns2 AAAA 2001:db8::2\n@ MX 10 mail\nmail A 192.0.2.25\n\
         sub NS ns.sub\nns.sub A 192.0.2.53\n*.wild TXT \"wildcard\"\n{extra}"
    );
    for i in 0..hosts {
        z.push_str(&format!(
            "h{i} A 10.{}.{}.{}\nh{i} TXT \"host {i}\"\n",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        ));
    }
    z
}

/// The serial `server` answers for `apex` (`None`: no answer, or not NOERROR with an SOA).
pub fn serial_at(server: SocketAddr, apex: &str) -> Option<u32> {
    let sock = udp_client(server);
    let wire = udp_exchange(&sock, &query(7, apex, 6, None))?;
    let m = parse(&wire);
    let soa = m.answers.first()?;
    soa.data.to_string().split_whitespace().nth(2)?.parse().ok()
}

/// The RCODE `server` answers a query for `name` (A) with, as hickory names it.
pub fn rcode_of(server: SocketAddr, name: &str) -> String {
    let sock = udp_client(server);
    match udp_exchange(&sock, &query(8, name, 1, None)) {
        Some(wire) => format!("{:?}", parse(&wire).metadata.response_code),
        None => "no answer".into(),
    }
}

/// Waits until `server` answers `serial` for `apex`; panics after `limit` with `context()`.
pub fn wait_serial(
    server: SocketAddr,
    apex: &str,
    serial: u32,
    limit: Duration,
    context: impl Fn() -> String,
) {
    let end = Instant::now() + limit;
    loop {
        let got = serial_at(server, apex);
        if got == Some(serial) {
            return;
        }
        assert!(
            Instant::now() < end,
            "{server} answers serial {got:?} for {apex}, not {serial}, after {limit:?}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The AXFR of `apex` from `server` by kdig (signed with the test key if `signed`), its
/// records normalised and sorted.
pub fn axfr(server: SocketAddr, apex: &str, signed: bool) -> Vec<String> {
    let key = tsig_kdig();
    let mut args = vec![apex, "AXFR", "+nocomments", "+nostats"];
    if signed {
        args.extend(["-y", &key]);
    }
    let out = kdig(server, &args);
    let mut v: Vec<String> = out
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .filter(|l| !l.contains("\tTSIG\t") && !l.contains(" TSIG "))
        .map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .collect();
    // The SOA comes first and last: keep it once.
    v.sort();
    v.dedup();
    v
}

/// Panics unless the AXFRs of `apex` from `ours` and from `theirs` (signed) hold the same
/// records; prints only the differences.
pub fn assert_same_zone(ours: SocketAddr, theirs: SocketAddr, apex: &str) {
    let (a, b) = (axfr(ours, apex, false), axfr(theirs, apex, true));
    let only_ours: Vec<&String> = a.iter().filter(|r| !b.contains(r)).take(20).collect();
    let only_theirs: Vec<&String> = b.iter().filter(|r| !a.contains(r)).take(20).collect();
    assert!(
        !a.is_empty() && only_ours.is_empty() && only_theirs.is_empty(),
        "{} records from us, {} from the primary; only ours: {only_ours:#?}\nonly theirs: {only_theirs:#?}",
        a.len(),
        b.len()
    );
}

/// A shardns config (TOML) with the test key and one secondary zone.
pub fn secondary_toml(apex: &str, primaries: &[SocketAddr], file: Option<&Path>) -> String {
    let primaries: Vec<String> = primaries.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\n[[zone]]\nname = \"{apex}\"\n{}primary = [{}]\nprimary_key = \"{TSIG_NAME}\"\n",
        tsig_toml(),
        file.map_or(String::new(), |f| format!("file = \"{}\"\n", f.display())),
        primaries.join(", ")
    )
}

/// Starts shardns as a secondary on `listen` with the config `toml` (written in `dir`).
pub fn start_secondary(tag: &str, listen: SocketAddr, dir: &TempDir, toml: &str) -> Server {
    let config = dir.write(&format!("{tag}.toml"), toml);
    let config = config.to_str().unwrap().to_string();
    Server::start_at(tag, &[listen], &["--workers", "1", "--config", &config])
}

/// A free address on 127.0.0.1.
pub fn local() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()))
}

/// True if `program` runs `--version` (or `-v`): installed and usable.
pub fn runs(program: &Path) -> bool {
    Command::new(program)
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}
