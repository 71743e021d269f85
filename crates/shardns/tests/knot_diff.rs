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
//! no entry of [`ALLOWED`] covers, and each entry names the RFC that makes both answers right.
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

mod common;

use common::{find_program, frame, free_port, Daemon};
use hickory_proto::op::{Header, Query};
use hickory_proto::rr::{DNSClass, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use std::{env, fs};

/// The zones: apex and file under `tests/diff/`.
const ZONES: &[(&str, &str)] = &[
    ("diff.test.", "diff.test.zone"),
    ("child.diff.test.", "child.diff.test.zone"),
    ("second.test.", "second.test.zone"),
];

/// Query types asked of every name: every type the zones hold, a few they do not, and ANY.
const TYPES: &[u16] = &[
    1,     // A
    2,     // NS
    5,     // CNAME
    6,     // SOA
    12,    // PTR
    13,    // HINFO
    15,    // MX
    16,    // TXT
    28,    // AAAA
    33,    // SRV
    35,    // NAPTR
    39,    // DNAME
    43,    // DS
    44,    // SSHFP
    46,    // RRSIG
    47,    // NSEC
    48,    // DNSKEY
    50,    // NSEC3
    51,    // NSEC3PARAM
    52,    // TLSA
    64,    // SVCB
    65,    // HTTPS
    257,   // CAA
    65280, // private use, RFC 3597 generic
    65534, // private use, RFC 3597 generic
    255,   // ANY
];
const ANY: u16 = 255;
const OPT: u16 = 41;
const CNAME: u16 = 5;
const DNAME: u16 = 39;

/// Fewest queries the test must send (the issue asks for at least 2,000).
const MIN_QUERIES: usize = 2000;
/// The generator's seed: change it to explore, keep it fixed in the repository.
const SEED: u64 = 0x5eed_d1ff_0000_0001;

// ---------------------------------------------------------------------------------------------
// The test

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

// ---------------------------------------------------------------------------------------------
// Intended differences

/// A difference both servers are right about, with the RFC that says so.
struct Allowed {
    name: &'static str,
    reason: &'static str,
    /// Whether this entry covers the difference between Knot's response and ours.
    applies: fn(&Q, &Resp, &Resp, &[Diff]) -> bool,
}

const ALLOWED: &[Allowed] = &[
    Allowed {
        name: "ANY answered with different RRsets",
        reason: "RFC 8482 §4.1 and §4.4: a responder may answer ANY with one RRset (or a subset) \
                 of its choice and may answer differently over TCP; Knot sends one RRset over \
                 both transports, shardns one over UDP and all over TCP",
        applies: |q, k, o, diffs| {
            q.qtype == ANY
                && !k.answer().is_empty()
                && !o.answer().is_empty()
                && diffs.iter().all(|d| matches!(d, Diff::Section(0 | 2, ..)))
                && k.answer()
                    .iter()
                    .chain(o.answer())
                    .all(|rr| rr.name == q.name.to_ascii_lowercase())
        },
    },
    Allowed {
        name: "what a truncated response holds",
        reason: "RFC 2181 §9: with TC set, the RRsets that fit may be kept or left out and the \
                 client must retry over TCP (which this test then does and compares); Knot keeps \
                 the RRsets that fit, shardns sends only the question and OPT",
        applies: |_, k, o, diffs| {
            k.tc && o.tc
                && o.sections.iter().all(BTreeSet::is_empty)
                && diffs.iter().all(|d| matches!(d, Diff::Section(..)))
        },
    },
    Allowed {
        name: "CNAME chain cut short by Knot",
        reason: "RFC 1034 §4.3.2 step 3a and §5.3.3: the server restarts the lookup at each CNAME \
                 target and the resolver finishes a chain the server did not; neither RFC sets a \
                 length, and Knot stops after 5 CNAMEs (CNAME_CHAIN_MAX), shardns after 12",
        applies: |_, k, o, diffs| {
            let cnames = k.answer().iter().filter(|rr| rr.rtype == CNAME).count();
            cnames >= KNOT_CNAME_CHAIN_MAX
                && k.rcode == 0
                && k.aa == o.aa
                && k.answer()
                    .iter()
                    .all(|rr| matches!(rr.rtype, CNAME | DNAME))
                && k.answer().is_subset(o.answer())
                && k.sections[1].is_empty()
                && k.sections[2].is_empty()
                && diffs
                    .iter()
                    .all(|d| matches!(d, Diff::Section(..) | Diff::Rcode(..)))
        },
    },
    Allowed {
        name: "zone transfer refused with another RCODE",
        reason: "neither server allows this client to transfer: both say NOTIMP to AXFR over \
                 UDP (RFC 5936 §4.2 does not define it); Knot checks its ACL first and says \
                 NOTAUTH to the rest, shardns says REFUSED outside its ACL (RFC 1035 §4.1.1, as \
                 BIND and NSD) and FORMERR to an IXFR without the client's SOA (RFC 1995 §3; \
                 this test's IXFR queries carry none)",
        applies: |q, k, o, _| {
            matches!(q.qtype, 251 | 252)
                && [k.rcode, o.rcode]
                    .iter()
                    .all(|r| matches!(r, 1 | 4 | 5 | 9))
                && (o.rcode != 1 || q.qtype == 251)
                && k.answer().is_empty()
                && o.answer().is_empty()
        },
    },
    Allowed {
        name: "TTL of an RRset whose records disagree",
        reason: "RFC 2181 §5.2: the TTLs of an RRset must be equal, so ttlmix* is a zone error; \
                 both servers load it with one TTL for the set, Knot the last one in the file, \
                 shardns the first",
        applies: |_, k, o, diffs| {
            diffs.iter().all(|d| match d {
                Diff::Section(_, kr, or) => {
                    kr.iter().chain(or).all(|rr| rr.name.starts_with("ttlmix"))
                }
                _ => false,
            }) && (0..3).all(|i| without_ttl(&k.sections[i]) == without_ttl(&o.sections[i]))
        },
    },
];

/// Knot's CNAME_CHAIN_MAX (knot/nameserver/internet.c): CNAMEs it follows for one query.
const KNOT_CNAME_CHAIN_MAX: usize = 5;

/// A section's records with the TTLs left out.
fn without_ttl(set: &BTreeSet<Rr>) -> BTreeSet<(String, u16, u16, Vec<u8>)> {
    set.iter()
        .map(|rr| (rr.name.clone(), rr.rtype, rr.class, rr.key.clone()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Queries

/// One query: what is asked, how, and of which transport.
#[derive(Debug, Clone)]
struct Q {
    /// Presentation form, absolute, with the case actually sent.
    name: String,
    qtype: u16,
    qclass: u16,
    /// EDNS: (UDP payload size, DO).
    edns: Option<(u16, bool)>,
    tcp: bool,
    id: u16,
}

impl Q {
    fn to_wire(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(64);
        m.extend_from_slice(&self.id.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(self.edns.is_some())]);
        m.extend_from_slice(&name_to_wire(&self.name));
        m.extend_from_slice(&self.qtype.to_be_bytes());
        m.extend_from_slice(&self.qclass.to_be_bytes());
        if let Some((size, dnssec_ok)) = self.edns {
            m.push(0);
            m.extend_from_slice(&OPT.to_be_bytes());
            m.extend_from_slice(&size.to_be_bytes());
            m.extend_from_slice(&[0, 0, if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
        }
        m
    }
}

impl std::fmt::Display for Q {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, type_name(self.qtype))?;
        if self.qclass != 1 {
            write!(f, " CLASS{}", self.qclass)?;
        }
        match self.edns {
            None => f.write_str(" noedns")?,
            Some((size, dnssec_ok)) => {
                write!(f, " edns={size}{}", if dnssec_ok { " +do" } else { "" })?
            }
        }
        f.write_str(if self.tcp { " tcp" } else { " udp" })
    }
}

/// splitmix64: small, fixed, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
    fn label(&mut self) -> String {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789-";
        let len = 1 + self.below(12);
        let mut s: String = (0..len).map(|_| self.pick(CHARS) as char).collect();
        // Never start with '-' or produce "*": plain hostnames only.
        if s.starts_with('-') {
            s.replace_range(0..1, "q");
        }
        s
    }
    /// Flips the case of roughly half the letters.
    fn mix_case(&mut self, name: &str) -> String {
        name.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() && self.chance(50) {
                    flip_case(c)
                } else {
                    c
                }
            })
            .collect()
    }
}

fn flip_case(c: char) -> char {
    if c.is_ascii_lowercase() {
        c.to_ascii_uppercase()
    } else {
        c.to_ascii_lowercase()
    }
}

/// Builds the query list: deterministic for a given zone directory and [`SEED`].
fn generate(zone_dir: &Path) -> Vec<Q> {
    let mut rng = Rng(SEED);
    let mut names = BTreeSet::new();
    for (apex, file) in ZONES {
        let text = fs::read_to_string(zone_dir.join(file)).expect("zone file");
        for owner in owners(&text, apex) {
            // The owner and every empty non-terminal between it and the apex.
            let labels = split_labels(&owner);
            let apex_labels = split_labels(apex).len();
            for keep in apex_labels..=labels.len() {
                names.insert(join_labels(&labels[labels.len() - keep..]));
            }
        }
    }
    let mut out = Vec::new();
    let mut push = |rng: &mut Rng, name: &str, qtype: u16, qclass: u16| {
        let name = if rng.chance(40) {
            rng.mix_case(name)
        } else {
            name.to_string()
        };
        let edns = if rng.chance(25) {
            None
        } else {
            Some((rng.pick(&[512u16, 1232, 4096]), rng.chance(50)))
        };
        let tcp = rng.chance(12);
        let id = rng.next() as u16;
        out.push(Q {
            name,
            qtype,
            qclass,
            edns,
            tcp,
            id,
        });
    };

    // Every existing name (owners and empty non-terminals) times every type.
    for name in &names {
        for &t in TYPES {
            push(&mut rng, name, t, 1);
        }
    }
    // Names that do not exist, below each apex and below existing names.
    let all: Vec<&String> = names.iter().collect();
    for _ in 0..150 {
        let parent = if rng.chance(30) {
            ZONES[rng.below(ZONES.len())].0.to_string()
        } else {
            all[rng.below(all.len())].clone()
        };
        let name = format!("{}.{parent}", rng.label());
        let t = rng.pick(TYPES);
        push(&mut rng, &name, t, 1);
    }
    // Below wildcards, delegations and DNAMEs, one or two labels deep.
    const BELOW: &[&str] = &[
        "wild.diff.test.",
        "sub.wild.diff.test.",
        "ent.wild.diff.test.",
        "host.ent.wild.diff.test.",
        "exists.wild.diff.test.",
        "cwild.diff.test.",
        "cwild-out.diff.test.",
        "wloop.diff.test.",
        "wchain.diff.test.",
        "child.diff.test.",
        "ns.child.diff.test.",
        "deleg.diff.test.",
        "outdeleg.diff.test.",
        "glue6.diff.test.",
        "dn.diff.test.",
        "www.dn.diff.test.",
        "dnout.diff.test.",
        "dnsecond.diff.test.",
        "dnloop.diff.test.",
        "dnlong.diff.test.",
        "second.test.",
        "*.second.test.",
        "host1.second.test.",
        "subdel.second.test.",
        "www.second.test.",
    ];
    for suffix in BELOW {
        for i in 0..12 {
            let mut name = format!("{}.{suffix}", rng.label());
            if i % 3 == 2 {
                name = format!("{}.{name}", rng.label());
            }
            for _ in 0..3 {
                let t = rng.pick(TYPES);
                push(&mut rng, &name, t, 1);
            }
        }
    }
    // Fixed cases: DNAME substitutions that overflow 255 octets (RFC 6672 §2.2: YXDOMAIN) and
    // ones that just fit, labels that look like wildcards, names outside every zone, and
    // classes other than IN.
    let x63 = "x".repeat(63);
    let fixed = [
        format!("{x63}.yyyyyyyyyy.dnlong.diff.test."),
        format!("{x63}.dnlong.diff.test."),
        format!("{}.dnlong.diff.test.", "x".repeat(40)),
        format!("{x63}.{}.dn.diff.test.", "z".repeat(63)),
        "x.dnloop.diff.test.".to_string(),
        "a.b.dn.diff.test.".to_string(),
        "www.target.dn.diff.test.".to_string(),
        "www.dnsecond.diff.test.".to_string(),
        "host1.dnsecond.diff.test.".to_string(),
        "nothing.dnsecond.diff.test.".to_string(),
        "sub.*.second.test.".to_string(),
        "foo.*.second.test.".to_string(),
        "*.wild.diff.test.".to_string(),
        "*.ent.wild.diff.test.".to_string(),
        "esc\\.dot.diff.test.".to_string(),
        "esc.dot.diff.test.".to_string(),
        "test.".to_string(),
        ".".to_string(),
        "example.".to_string(),
        "outside.example.".to_string(),
        "diff.test.example.".to_string(),
        "xdiff.test.".to_string(),
        "child.diff.test.".to_string(),
        "ns.child.diff.test.".to_string(),
    ];
    for name in &fixed {
        for t in [1, 5, 16, 39, 43, ANY] {
            push(&mut rng, name, t, 1);
        }
    }
    for name in ["diff.test.", "www.diff.test.", "second.test."] {
        for class in [3, 4, 254, 255] {
            push(&mut rng, name, 1, class);
            push(&mut rng, name, 6, class);
        }
    }
    // Types no record has and meta types.
    for name in [
        "diff.test.",
        "www.diff.test.",
        "nothere.diff.test.",
        "child.diff.test.",
    ] {
        for t in [0, 3, 4, 99, 1234, 251, 252, 253, 254, 32768, 65535] {
            push(&mut rng, name, t, 1);
        }
    }
    out
}

/// Owner names (absolute, presentation form) in zone text, read the simple way: the first
/// field of each line that does not start with blank space, `;` or `$` (`$ORIGIN` is honoured).
fn owners(text: &str, apex: &str) -> Vec<String> {
    let mut origin = apex.to_string();
    let mut out = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        if let Some(rest) = line.strip_prefix("$ORIGIN") {
            origin = rest
                .split_whitespace()
                .next()
                .expect("$ORIGIN name")
                .to_string();
            continue;
        }
        if line.starts_with([' ', '\t', ';', '$']) || line.is_empty() {
            continue;
        }
        let owner = fields.next().expect("owner");
        out.push(if owner == "@" {
            origin.clone()
        } else if owner.ends_with('.') && !owner.ends_with("\\.") {
            owner.to_string()
        } else {
            format!("{owner}.{origin}")
        });
    }
    out
}

/// Labels of an absolute presentation name, escapes kept as written (the root has none).
fn split_labels(name: &str) -> Vec<String> {
    let mut labels = Vec::new();
    if name == "." {
        return labels;
    }
    let mut cur = String::new();
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                cur.push(chars.next().expect("escape"));
            }
            '.' => labels.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        labels.push(cur);
    }
    labels
}

fn join_labels(labels: &[String]) -> String {
    let mut s = String::new();
    for l in labels {
        s.push_str(l);
        s.push('.');
    }
    if s.is_empty() {
        s.push('.');
    }
    s
}

/// Wire form of an absolute presentation name (`\X` and `\DDD` escapes).
fn name_to_wire(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 2);
    for label in split_labels(name) {
        let mut bytes = Vec::new();
        let b = label.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
                let v = (b[i + 1] - b'0') as u16 * 100
                    + (b[i + 2] - b'0') as u16 * 10
                    + (b[i + 3] - b'0') as u16;
                bytes.push(v as u8);
                i += 4;
            } else if b[i] == b'\\' {
                bytes.push(b[i + 1]);
                i += 2;
            } else {
                bytes.push(b[i]);
                i += 1;
            }
        }
        assert!(!bytes.is_empty() && bytes.len() < 64, "bad label in {name}");
        out.push(bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.push(0);
    assert!(out.len() <= 255, "name too long: {name}");
    out
}

fn type_name(t: u16) -> String {
    match RecordType::from(t) {
        RecordType::Unknown(_) => format!("TYPE{t}"),
        known => known.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Responses

/// A response as compared: the fields that must match, sections as sets.
#[derive(Debug, Clone)]
struct Resp {
    /// RCODE with the OPT record's extended bits.
    rcode: u16,
    aa: bool,
    tc: bool,
    edns: bool,
    /// Answer, authority, additional (OPT excluded).
    sections: [BTreeSet<Rr>; 3],
}

impl Resp {
    fn answer(&self) -> &BTreeSet<Rr> {
        &self.sections[0]
    }
}

/// One record as compared: equal when owner, type, class, TTL and the RDATA in DNSSEC
/// canonical form (RFC 4034 §6.2: names in the RDATA of the older types lower-cased, nothing
/// compressed) are. Case in RDATA names is not compared: a server that compresses a target
/// against the question, as Knot does, sends it in the question's case (RFC 4343 §4).
#[derive(Debug, Clone)]
struct Rr {
    /// Owner, lower-cased, presentation form.
    name: String,
    rtype: u16,
    class: u16,
    ttl: u32,
    /// RDATA in canonical form.
    key: Vec<u8>,
    /// RDATA as hickory-proto prints it, as received.
    rdata: String,
}

impl Rr {
    fn sort_key(&self) -> (&str, u16, u16, u32, &[u8]) {
        (&self.name, self.rtype, self.class, self.ttl, &self.key)
    }
}

impl PartialEq for Rr {
    fn eq(&self, other: &Self) -> bool {
        self.sort_key() == other.sort_key()
    }
}

impl Eq for Rr {}

impl PartialOrd for Rr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.sort_key().cmp(&other.sort_key())
    }
}

impl std::fmt::Display for Rr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let class = if self.class == 1 {
            "IN".to_string()
        } else {
            format!("CLASS{}", self.class)
        };
        write!(
            f,
            "{} {} {class} {} {}",
            self.name,
            self.ttl,
            type_name(self.rtype),
            self.rdata
        )
    }
}

/// Parses a response with hickory-proto, record by record (its `Message` reader refuses
/// records with empty RDATA outside UPDATE, which RFC 3597 allows).
fn parse_response(q: &Q, buf: &[u8]) -> Result<Resp, String> {
    let mut d = BinDecoder::new(buf);
    let h = Header::read(&mut d).map_err(|e| format!("header: {e}"))?;
    if h.metadata.id != q.id {
        return Err(format!("id {} instead of {}", h.metadata.id, q.id));
    }
    for _ in 0..h.counts.queries {
        let qq = Query::read(&mut d).map_err(|e| format!("question: {e}"))?;
        if !qq.name().to_ascii().eq_ignore_ascii_case(&q.name) && q.name != "." {
            return Err(format!("question {} echoed for {}", qq.name(), q.name));
        }
    }
    let mut rcode = u16::from(h.metadata.response_code) & 0xf;
    let mut edns = false;
    let mut sections: [BTreeSet<Rr>; 3] = Default::default();
    let counts = [h.counts.answers, h.counts.authorities, h.counts.additionals];
    for (i, &count) in counts.iter().enumerate() {
        for _ in 0..count {
            let r: Record = Record::read(&mut d).map_err(|e| format!("section {i}: {e}"))?;
            if r.record_type() == RecordType::OPT {
                if i != 2 || edns {
                    return Err("misplaced or second OPT record".into());
                }
                edns = true;
                rcode |= ((r.ttl >> 24) as u16) << 4;
                continue;
            }
            sections[i].insert(Rr {
                name: r.name.to_lowercase().to_ascii(),
                rtype: u16::from(r.record_type()),
                class: match r.dns_class {
                    DNSClass::OPT(_) => OPT,
                    c => u16::from(c),
                },
                ttl: r.ttl,
                key: canonical_rdata(&r.data)?,
                rdata: match &r.data {
                    RData::Update0(_) => "\\# 0".to_string(),
                    data => data.to_string(),
                },
            });
        }
    }
    if !d.is_empty() {
        return Err(format!("{} octets after the last record", d.len()));
    }
    Ok(Resp {
        rcode,
        aa: h.metadata.authoritative,
        tc: h.metadata.truncation,
        edns,
        sections,
    })
}

/// RDATA in DNSSEC canonical form (empty for an empty RDATA).
fn canonical_rdata(data: &RData) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    if !matches!(data, RData::Update0(_)) {
        let mut e = BinEncoder::new(&mut out);
        e.set_canonical_form(true);
        data.emit(&mut e)
            .map_err(|e| format!("re-encoding {data}: {e}"))?;
    }
    Ok(out)
}

/// One way in which two responses differ.
#[derive(Debug)]
enum Diff {
    /// Only one side answered or parsed: (knot, ours).
    Outcome(String, String),
    Rcode(u16, u16),
    Aa(bool, bool),
    Tc(bool, bool),
    Edns(bool, bool),
    /// Section index, records only Knot sent, records only we sent.
    Section(usize, Vec<Rr>, Vec<Rr>),
}

impl Diff {
    /// The difference as lines for the report.
    fn lines(&self) -> Vec<String> {
        match self {
            Diff::Outcome(k, o) => vec![format!("response: knot {k} / ours {o}")],
            Diff::Rcode(k, o) => vec![format!(
                "rcode: knot {} / ours {}",
                rcode_name(*k),
                rcode_name(*o)
            )],
            Diff::Aa(k, o) => vec![format!("AA: knot {k} / ours {o}")],
            Diff::Tc(k, o) => vec![format!("TC: knot {k} / ours {o}")],
            Diff::Edns(k, o) => vec![format!("EDNS: knot {k} / ours {o}")],
            Diff::Section(i, k, o) => {
                let name = SECTION_NAMES[*i];
                let knot = k.iter().map(|rr| format!("{name} only knot: {rr}"));
                knot.chain(o.iter().map(|rr| format!("{name} only ours: {rr}")))
                    .collect()
            }
        }
    }
}

const SECTION_NAMES: [&str; 3] = ["answer", "authority", "additional"];

/// One line per response, for the verbose log.
fn show(r: &Result<Resp, String>) -> String {
    match r {
        Err(e) => format!("error: {e}"),
        Ok(r) => {
            let mut s = format!(
                "{}{}{}{}",
                rcode_name(r.rcode),
                if r.aa { " aa" } else { "" },
                if r.tc { " tc" } else { "" },
                if r.edns { " edns" } else { "" }
            );
            for (i, section) in r.sections.iter().enumerate() {
                for rr in section {
                    let _ = write!(s, " | {}: {rr}", ["an", "ns", "ar"][i]);
                }
            }
            s
        }
    }
}

fn rcode_name(r: u16) -> String {
    const NAMES: &[&str] = &[
        "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
        "NXRRSET", "NOTAUTH", "NOTZONE",
    ];
    match r {
        16 => "BADVERS".into(),
        _ => NAMES
            .get(r as usize)
            .map_or_else(|| format!("RCODE{r}"), |s| s.to_string()),
    }
}

fn differences(k: &Result<Resp, String>, o: &Result<Resp, String>) -> Vec<Diff> {
    let (k, o) = match (k, o) {
        (Ok(k), Ok(o)) => (k, o),
        (Err(a), Err(b)) if a == b => return Vec::new(),
        _ => {
            let show = |r: &Result<Resp, String>| match r {
                Ok(r) => format!(
                    "rcode {} with {} records",
                    rcode_name(r.rcode),
                    r.sections.iter().map(BTreeSet::len).sum::<usize>()
                ),
                Err(e) => format!("error ({e})"),
            };
            return vec![Diff::Outcome(show(k), show(o))];
        }
    };
    let mut diffs = Vec::new();
    if k.rcode != o.rcode {
        diffs.push(Diff::Rcode(k.rcode, o.rcode));
    }
    if k.aa != o.aa {
        diffs.push(Diff::Aa(k.aa, o.aa));
    }
    if k.tc != o.tc {
        diffs.push(Diff::Tc(k.tc, o.tc));
    }
    if k.edns != o.edns {
        diffs.push(Diff::Edns(k.edns, o.edns));
    }
    for i in 0..3 {
        let (ks, os) = (&k.sections[i], &o.sections[i]);
        if ks != os {
            diffs.push(Diff::Section(
                i,
                ks.difference(os).cloned().collect(),
                os.difference(ks).cloned().collect(),
            ));
        }
    }
    diffs
}

// ---------------------------------------------------------------------------------------------
// Talking to a server

struct Client {
    addr: SocketAddr,
    udp: UdpSocket,
}

impl Client {
    fn new(addr: SocketAddr) -> Self {
        let udp = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP client socket");
        udp.set_read_timeout(Some(Duration::from_millis(400)))
            .expect("timeout");
        Self { addr, udp }
    }

    /// Sends `wire` (the query `q`) and parses the response; bounded retries.
    fn ask(&self, q: &Q, wire: &[u8]) -> Result<Resp, String> {
        let mut last = String::from("no response");
        for _ in 0..3 {
            let got = if q.tcp {
                self.exchange_tcp(wire)
            } else {
                self.exchange_udp(q.id, wire)
            };
            match got {
                Ok(buf) => return parse_response(q, &buf),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn exchange_udp(&self, id: u16, wire: &[u8]) -> Result<Vec<u8>, String> {
        self.udp
            .send_to(wire, self.addr)
            .map_err(|e| format!("send: {e}"))?;
        let mut buf = vec![0u8; 65535];
        // Skip late answers to earlier tries (other ids); at most a few per query.
        for _ in 0..8 {
            let (n, from) = self
                .udp
                .recv_from(&mut buf)
                .map_err(|e| format!("no response ({e})"))?;
            if from == self.addr && n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id {
                buf.truncate(n);
                return Ok(buf);
            }
        }
        Err("only stray datagrams".into())
    }

    fn exchange_tcp(&self, wire: &[u8]) -> Result<Vec<u8>, String> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1))
            .map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
        s.write_all(&frame(wire))
            .map_err(|e| format!("write: {e}"))?;
        let mut len = [0u8; 2];
        s.read_exact(&mut len)
            .map_err(|e| format!("read length: {e}"))?;
        let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
        s.read_exact(&mut buf)
            .map_err(|e| format!("read message: {e}"))?;
        Ok(buf)
    }
}

/// Waits (bounded) until the server answers the SOA of every zone authoritatively.
fn wait_ready(client: &Client, server: &mut Daemon) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 1u16;
    loop {
        let ready = ZONES.iter().all(|(apex, _)| {
            id = id.wrapping_add(1);
            let q = Q {
                name: apex.to_string(),
                qtype: 6,
                qclass: 1,
                edns: None,
                tcp: false,
                id,
            };
            matches!(client.exchange_udp(id, &q.to_wire()).map(|b| parse_response(&q, &b)),
                Ok(Ok(r)) if r.rcode == 0 && r.aa && !r.answer().is_empty())
        });
        if ready {
            return;
        }
        server.check_alive();
        assert!(
            Instant::now() < deadline,
            "{} did not answer within 20 s; its log:\n{}",
            server.name,
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------------
// Starting and stopping the servers

/// A server process, killed and reaped when dropped (also when the test panics).
fn find_knotd() -> Option<PathBuf> {
    find_program("knotd", "KNOTD")
}

/// A fresh directory for the servers' configuration, databases and logs.
fn work_dir() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("knot_diff-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("knot-db")).expect("create work dir");
    dir
}

fn start_knot(knotd: &Path, work: &Path, zone_dir: &Path, port: u16) -> Daemon {
    let mut conf = format!(
        "server:\n    rundir: \"{w}\"\n    pidfile: \"{w}/knot.pid\"\n    listen: 127.0.0.1@{port}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         database:\n    storage: \"{w}/knot-db\"\n\
         template:\n  - id: default\n    storage: \"{z}\"\n    zonefile-sync: -1\n\
         \x20   zonefile-load: whole\n    journal-content: none\n    dnssec-signing: off\n\
         zone:\n",
        w = work.display(),
        z = zone_dir.display()
    );
    for (apex, file) in ZONES {
        let _ = write!(
            conf,
            "  - domain: {apex}\n    file: \"{}\"\n",
            zone_dir.join(file).display()
        );
    }
    let path = work.join("knot.conf");
    fs::write(&path, conf).expect("write knot.conf");
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&path);
    Daemon::spawn("knotd", cmd, work.join("knotd.log"))
}

fn start_shardns(work: &Path, zone_dir: &Path, port: u16) -> Daemon {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shardns"));
    cmd.arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--workers")
        .arg("1");
    cmd.arg("--control").arg(work.join("shardns.ctl"));
    for (apex, file) in ZONES {
        cmd.arg("--zone")
            .arg(format!("{apex}={}", zone_dir.join(file).display()));
    }
    Daemon::spawn("shardns", cmd, work.join("shardns.log"))
}
