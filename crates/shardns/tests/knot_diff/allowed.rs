//! The intended differences: each entry a way Knot's response and ours may differ with both
//! right, the RFC that says so, and the test that recognises it.

use crate::queries::Q;
use crate::responses::{Diff, Resp, Rr};
use crate::{ANY, CNAME, DNAME};
use std::collections::BTreeSet;

/// A difference both servers are right about, with the RFC that says so.
pub(crate) struct Allowed {
    pub(crate) name: &'static str,
    pub(crate) reason: &'static str,
    /// Whether this entry covers the difference between Knot's response and ours.
    pub(crate) applies: fn(&Q, &Resp, &Resp, &[Diff]) -> bool,
}

pub(crate) const ALLOWED: &[Allowed] = &[
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
