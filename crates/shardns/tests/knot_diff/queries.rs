//! The query generator: from the zone files and a fixed seed, every owner name and empty
//! non-terminal times every type, missing names, names below wildcards, delegations and
//! DNAMEs, fixed edge cases, other classes and meta types; in mixed case, with and without
//! EDNS and DO, some over TCP. Also presentation names in and out of wire form.

use crate::{ANY, OPT, SEED, ZONES};
use hickory_proto::rr::RecordType;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

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

/// One query: what is asked, how, and of which transport.
#[derive(Debug, Clone)]
pub(crate) struct Q {
    /// Presentation form, absolute, with the case actually sent.
    pub(crate) name: String,
    pub(crate) qtype: u16,
    pub(crate) qclass: u16,
    /// EDNS: (UDP payload size, DO).
    pub(crate) edns: Option<(u16, bool)>,
    pub(crate) tcp: bool,
    pub(crate) id: u16,
}

impl Q {
    pub(crate) fn to_wire(&self) -> Vec<u8> {
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
    pub(crate) fn below(&mut self, n: usize) -> usize {
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
pub(crate) fn generate(zone_dir: &Path) -> Vec<Q> {
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

pub(crate) fn type_name(t: u16) -> String {
    match RecordType::from(t) {
        RecordType::Unknown(_) => format!("TYPE{t}"),
        known => known.to_string(),
    }
}
