//! The lab zones (written by `bench/dnssec/make-zones.sh`, committed under
//! `tests/data/dnssec/lab/`), the queries asked of them, what every DNSSEC answer of Knot's
//! must hold (the check that the harness and the data are right), and the differential run.

use crate::servers::Client;
use crate::wire::*;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The signed parents, one per way of signing.
pub(crate) const PARENTS: [&str; 3] = ["nsec.lab.", "nsec3.lab.", "optout.lab."];

/// The children of each parent (served by a knotd of their own in the validation test).
pub(crate) const CHILDREN: [&str; 3] = ["signed", "unsigned", "d1.ent2"];

/// Names asked in every parent, relative to its apex ("@" is the apex): every owner, empty
/// non-terminals, names below wildcards, a DNAME and delegations, and missing names.
pub(crate) const NAMES: &[&str] = &[
    "@",
    "www",
    "mail",
    "ns1",
    "ns2",
    "_sip._tcp",
    "_tcp",
    "nothere",
    "a.nothere",
    "zzzz",
    "0",
    // empty non-terminals and what is below them
    "ent",
    "b.ent",
    "a.b.ent",
    "x.b.ent",
    // wildcards: expansions (one and two labels), the wildcard itself, a name beside it,
    // the empty non-terminal above it, a wildcard CNAME
    "wild",
    "host.wild",
    "a.b.wild",
    "*.wild",
    "exists.wild",
    "x.wcn",
    // CNAMEs: in the zone, chain, to a wildcard, to a missing name, out of the zone
    "cname",
    "cname-chain",
    "cname-wild",
    "cname-nx",
    "cname-ext",
    // DNAME: the owner, a rewritten name that exists, one that does not
    "dn",
    "www.dn",
    "nx.dn",
    "tgt",
    "www.tgt",
    // delegations: signed, unsigned, unsigned below an empty non-terminal, out-of-zone NS
    "signed",
    "www.signed",
    "ns.signed",
    "unsigned",
    "www.unsigned",
    "ns.unsigned",
    "ent2",
    "d1.ent2",
    "www.d1.ent2",
    "ext",
    "www.ext",
    // more than 1232 octets
    "big",
];

/// Types asked of every name, with DO=1 and DO=0.
pub(crate) const TYPES: &[u16] = &[
    A, AAAA, TXT, MX, NS, SOA, CNAME, SRV, DS, DNSKEY, RRSIG, NSEC, NSEC3, NSEC3PARAM, ANY,
];

/// Types also asked with a 512-octet EDNS buffer, and without EDNS, to force truncation.
const SMALL_TYPES: &[u16] = &[A, TXT, MX, DNSKEY, NSEC, DS, ANY];

pub(crate) fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dnssec")
}

/// A parent's zone file.
pub(crate) fn zone_file(apex: &str) -> PathBuf {
    data_dir().join("lab").join(format!("{apex}zone"))
}

/// A parent's DS record (the trust anchor), presentation form.
pub(crate) fn ds(apex: &str) -> String {
    let path = data_dir().join("lab").join(format!("{apex}ds"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .find(|l| l.contains(" DS "))
        .unwrap_or_else(|| panic!("no DS in {}", path.display()))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The three parents: (apex, file).
pub(crate) fn parent_zones() -> Vec<(String, PathBuf)> {
    PARENTS
        .iter()
        .map(|apex| (apex.to_string(), zone_file(apex)))
        .collect()
}

/// Every child of every parent: (apex, file).
pub(crate) fn child_zones() -> Vec<(String, PathBuf)> {
    PARENTS
        .iter()
        .flat_map(|p| CHILDREN.iter().map(move |c| format!("{c}.{p}")))
        .map(|apex| {
            let file = zone_file(&apex);
            (apex, file)
        })
        .collect()
}

/// `rel` (from [`NAMES`]) under `apex`.
pub(crate) fn absolute(rel: &str, apex: &str) -> String {
    if rel == "@" {
        apex.to_string()
    } else {
        format!("{rel}.{apex}")
    }
}

/// The names asked of `apex`: [`NAMES`], plus for NSEC3 zones the first NSEC3 owner name
/// (which must not exist for lookups, RFC 5155 §7.2.8).
pub(crate) fn names(apex: &str) -> Vec<String> {
    let mut v: Vec<String> = NAMES.iter().map(|n| absolute(n, apex)).collect();
    let text = std::fs::read_to_string(zone_file(apex)).expect("read the zone file");
    if let Some(owner) = text
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some("NSEC3"))
        .and_then(|l| l.split_whitespace().next())
    {
        v.push(owner.to_ascii_lowercase());
    }
    v
}

/// The queries of the differential for `apex`.
pub(crate) fn queries(apex: &str) -> Vec<Q> {
    let mut out = Vec::new();
    for name in names(apex) {
        for &t in TYPES {
            out.push(Q::dnssec(&name, t));
            out.push(Q {
                edns: Some((1232, false)),
                ..Q::dnssec(&name, t)
            });
        }
        out.push(Q {
            tcp: true,
            ..Q::dnssec(&name, ANY)
        });
        out.push(Q {
            tcp: true,
            ..Q::dnssec(&name, RRSIG)
        });
        for &t in SMALL_TYPES {
            out.push(Q {
                edns: Some((512, true)),
                ..Q::dnssec(&name, t)
            });
        }
        for t in [A, DNSKEY, NSEC] {
            out.push(Q {
                edns: None,
                ..Q::dnssec(&name, t)
            });
        }
    }
    out
}

/// Whether `name` is at or below the cut `cut` of `apex` ("signed", "unsigned"...).
fn under(name: &str, cut: &str, apex: &str) -> bool {
    let c = absolute(cut, apex);
    name == c || name.ends_with(&format!(".{c}"))
}

/// What every DNSSEC answer must hold, checked on Knot's to show that the harness and the
/// zones are right; each violation as a line. Only responses that are complete (no TC) and
/// come from the parent's own data (not below a cut) are judged.
pub(crate) fn invariants(apex: &str, q: &Q, r: &Resp) -> Vec<String> {
    let mut out = Vec::new();
    let dnssec_ok = q.edns.is_some_and(|(_, d)| d);
    if q.edns.is_some() && r.dnssec_ok != dnssec_ok {
        out.push(format!("DO {} not echoed", dnssec_ok));
    }
    if r.tc {
        return out;
    }
    let below_cut = CHILDREN
        .iter()
        .chain(&["ext"])
        .any(|c| under(&q.name, c, apex) && !(q.name == absolute(c, apex) && q.qtype == DS));
    let dnssec_types = [RRSIG, NSEC, NSEC3];
    if !dnssec_ok {
        if !matches!(q.qtype, RRSIG | NSEC | NSEC3 | ANY) {
            for (i, s) in r.sections.iter().enumerate() {
                for rr in s.iter().filter(|rr| dnssec_types.contains(&rr.rtype)) {
                    out.push(format!("{} has {rr} with DO=0", SECTION_NAMES[i]));
                }
            }
        }
        return out;
    }
    if below_cut {
        return out;
    }
    // Every authoritative RRset in the answer and authority is signed; not the synthesised
    // CNAME of a DNAME (RFC 6672 §5.3.1), not RRSIGs, not NS at a cut.
    let dname_in_answer = r.answer().iter().any(|rr| rr.rtype == DNAME);
    for (i, s) in r.sections[..2].iter().enumerate() {
        let sets: BTreeSet<(String, u16, u16)> = s.iter().map(Rr::rrset).collect();
        for (owner, t, _) in sets.iter().filter(|(_, t, _)| *t != RRSIG) {
            let exempt = (*t == CNAME && dname_in_answer)
                || (*t == NS && i == 1 && owner != apex)
                || CHILDREN.iter().any(|c| under(owner, c, apex));
            if !exempt && !sets.contains(&(owner.clone(), RRSIG, *t)) {
                out.push(format!(
                    "{} {owner} {} without its RRSIG",
                    SECTION_NAMES[i],
                    type_name(*t)
                ));
            }
        }
    }
    // A denial has its proof.
    let negative = r.rcode == 3
        || (r.rcode == 0
            && r.aa
            && r.answer().is_empty()
            && r.authority().iter().any(|rr| rr.rtype == SOA));
    if negative
        && !r
            .authority()
            .iter()
            .any(|rr| matches!(rr.rtype, NSEC | NSEC3))
    {
        out.push("denial without NSEC or NSEC3".into());
    }
    out
}

/// Totals of one differential run.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) sent: usize,
    pub(crate) same: usize,
    pub(crate) allowed: Vec<(&'static str, usize)>,
    pub(crate) failures: Vec<String>,
}

/// A difference both servers are right about, with the RFC that says so (the same two as
/// tests/knot_diff, for the same reasons).
struct Allowed {
    name: &'static str,
    applies: fn(&Q, &Resp, &Resp, &[Diff]) -> bool,
}

const ALLOWED: &[Allowed] = &[
    Allowed {
        name: "ANY answered with other RRsets (RFC 8482 §4.1, §4.4: one RRset or a subset, \
               each with its RRSIG when DO=1)",
        applies: |q, k, o, diffs| {
            let dnssec_ok = q.edns.is_some_and(|(_, d)| d);
            let sets: BTreeSet<(String, u16, u16)> = o.answer().iter().map(Rr::rrset).collect();
            q.qtype == ANY
                && !k.answer().is_empty()
                && !o.answer().is_empty()
                && diffs.iter().all(|d| matches!(d, Diff::Section(0 | 2, ..)))
                // At the query name, or at a name Knot's answer reached too (the end of a
                // CNAME or DNAME chain, whose ANY is answered there).
                && o.answer().iter().all(|rr| {
                    rr.name == q.name.to_ascii_lowercase()
                        || k.answer().iter().any(|kr| kr.name == rr.name)
                })
                // Every RRset signed, but for a CNAME synthesized from a DNAME (RFC 6672 §5.3.1).
                && (!dnssec_ok
                    || sets
                        .iter()
                        .filter(|(_, t, _)| *t != RRSIG)
                        .filter(|(_, t, _)| !(*t == CNAME && sets.iter().any(|s| s.1 == DNAME)))
                        .all(|(n, t, _)| sets.contains(&(n.clone(), RRSIG, *t))))
        },
    },
    Allowed {
        name: "what a truncated response holds (RFC 2181 §9; the TCP retry is compared)",
        applies: |_, k, o, diffs| {
            k.tc && o.tc && o.is_empty() && diffs.iter().all(|d| matches!(d, Diff::Section(..)))
        },
    },
];

/// Asks `queries` of Knot and of the server under test and compares; UDP responses with TC
/// set are asked again over TCP, as a client would, and compared too.
pub(crate) fn differential(
    apex: &str,
    queries: &[Q],
    knot: &Client,
    ours: &Client,
    tally: &mut Tally,
) {
    if tally.allowed.is_empty() {
        tally.allowed = ALLOWED.iter().map(|a| (a.name, 0)).collect();
    }
    let verbose = std::env::var_os("DNSSEC_VERBOSE").is_some();
    for q in queries {
        let mut q = q.clone();
        loop {
            let k = knot.ask(&q);
            let o = ours.ask(&q);
            tally.sent += 1;
            if verbose {
                println!("QUERY {q}\n  knot: {}\n  ours: {}", show(&k), show(&o));
            }
            let diffs = differences(&k, &o);
            let allowed = match (&k, &o) {
                (Ok(k), Ok(o)) if !diffs.is_empty() => {
                    ALLOWED.iter().position(|a| (a.applies)(&q, k, o, &diffs))
                }
                _ => None,
            };
            if diffs.is_empty() {
                tally.same += 1;
            } else if let Some(i) = allowed {
                tally.allowed[i].1 += 1;
            } else {
                let mut s = format!("DIFF [{apex}] {q}");
                for line in diffs.iter().flat_map(|d| d.lines("shardns")) {
                    let _ = write!(s, "\n    {line}");
                }
                tally.failures.push(s);
            }
            let truncated = matches!(&k, Ok(r) if r.tc) || matches!(&o, Ok(r) if r.tc);
            if q.tcp || !truncated {
                break;
            }
            q.tcp = true;
        }
    }
}
