//! The questions: every zone of the hierarchy times a set of names and types (positive
//! answers, NXDOMAIN, NODATA, wildcard expansion and wildcard NODATA, a CNAME, an empty
//! non-terminal, DS and DNSKEY, RRSIG), each asked three ways: DO, plain, and DO with CD.

use crate::wire::{A, AAAA, DNSKEY, DS, MX, NS, RRSIG, SOA, SRV, TXT};

/// The zones below `val.`, as served (see `make-zones.sh` for what each one is).
pub(crate) const LEAVES: &[&str] = &[
    "nsec",
    "nsec3",
    "optout",
    "iter",
    "unsigned",
    "expired",
    "future",
    "badds",
    "nosig",
    "forged",
    "badnsec3",
    "alg253",
    "keytrap",
    "rsasha1",
    "nsec3rsasha1",
    "badsoa",
];

/// How a question is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum How {
    /// EDNS with DO.
    Do,
    /// EDNS without DO.
    Plain,
    /// EDNS with DO, and CD.
    Cd,
}

impl How {
    pub(crate) fn name(self) -> &'static str {
        match self {
            How::Do => "+do",
            How::Plain => "",
            How::Cd => "+do+cd",
        }
    }
}

/// One query of the corpus.
#[derive(Clone, Debug)]
pub(crate) struct Query {
    pub(crate) name: String,
    pub(crate) qtype: u16,
    pub(crate) how: How,
}

/// Names (relative, "@" the apex) and types asked in every leaf zone.
const LEAF_QUESTIONS: &[(&str, u16)] = &[
    ("@", SOA),
    ("@", NS),
    ("@", DNSKEY),
    ("@", DS),
    ("@", MX),
    ("www", A),
    ("www", AAAA),
    ("www", TXT),
    ("www", MX),
    ("www", RRSIG),
    ("nothere", A),
    ("host.wild", A),
    ("host.wild", AAAA),
    ("cname", A),
    ("b.ent", A),
    ("a.b.ent", A),
];

/// Questions about the root, the TLD and the Opt-Out zone's insecure child.
const OTHER_QUESTIONS: &[(&str, u16)] = &[
    (".", SOA),
    (".", DNSKEY),
    (".", NS),
    ("nothere.", A),
    ("val.", SOA),
    ("val.", DNSKEY),
    ("val.", DS),
    ("www.val.", A),
    ("www.val.", TXT),
    ("nothere.val.", A),
    ("insec.optout.val.", DS),
    ("insec.optout.val.", SOA),
    ("www.insec.optout.val.", A),
    ("nothere.insec.optout.val.", A),
];

fn absolute(rel: &str, apex: &str) -> String {
    if rel == "@" {
        apex.to_string()
    } else {
        format!("{rel}.{apex}")
    }
}

/// Every question, each asked with DO, then without, then with DO and CD, in that order
/// (the later ones are mostly cache hits, as in real use).
pub(crate) fn corpus() -> Vec<Query> {
    let mut questions: Vec<(String, u16)> = OTHER_QUESTIONS
        .iter()
        .map(|(n, t)| (n.to_string(), *t))
        .collect();
    for leaf in LEAVES {
        let apex = format!("{leaf}.val.");
        for (rel, t) in LEAF_QUESTIONS {
            questions.push((absolute(rel, &apex), *t));
        }
    }
    let mut out = Vec::new();
    for how in [How::Do, How::Plain, How::Cd] {
        for (name, qtype) in &questions {
            out.push(Query {
                name: name.clone(),
                qtype: *qtype,
                how,
            });
        }
    }
    out
}

/// Questions asked after the corpus, whose answers lie inside NSEC ranges the corpus
/// proved (in `nsec.val.`): both resolvers answer them from their validated NSEC ranges
/// (RFC 8198, Unbound's `aggressive-nsec: yes`), shardns without an upstream query.
/// NXDOMAIN next to `nothere`, NODATA at `www`, and at the empty non-terminal `b.ent`.
pub(crate) fn aggressive() -> Vec<Query> {
    let q = |name: &str, qtype, how| Query {
        name: name.to_string(),
        qtype,
        how,
    };
    vec![
        q("nothere2.nsec.val.", A, How::Do),
        q("nothere3.nsec.val.", AAAA, How::Do),
        q("nothere4.nsec.val.", TXT, How::Plain),
        q("www.nsec.val.", SRV, How::Do),
        q("www.nsec.val.", NS, How::Plain),
        q("b.ent.nsec.val.", TXT, How::Do),
    ]
}
