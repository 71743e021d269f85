//! The written allow-list: difference classes that are not bugs, each with the reason both
//! resolvers are right and the test that recognises it.

use crate::ask::Reply;
use crate::corpus::{silent, under, Query, Zone};
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

/// A difference class that is not a bug, with the reason both answers are acceptable.
pub(crate) struct Allowed {
    pub(crate) name: &'static str,
    pub(crate) why: &'static str,
    /// (zones, query, shardns's reply, Unbound's reply) -> whether the class covers it.
    pub(crate) applies: fn(&[Zone], &Query, &Reply, &Reply) -> bool,
}

/// The written allow-list. Each class must say why both resolvers are right.
pub(crate) const ALLOWED: &[Allowed] = &[
    Allowed {
        name: "unbound-silent-zone",
        why: "a zone whose only server never answers: shardns gives SERVFAIL (EDE 22) after \
              two timeouts (~3.3 s), then at once while the server is held down; Unbound backs off exponentially from silent servers \
              and does not answer the client for a long time (its documented timeout \
              behaviour, NLnetLabs/unbound#620). No RFC sets a time to SERVFAIL.",
        applies: |zones, q, s, u| {
            silent(zones, &q.name) && s.rcode == Some(ResponseCode::ServFail) && u.rcode.is_none()
        },
    },
    Allowed {
        name: "dname-cname-query",
        why: "a CNAME query below a DNAME: both answer the DNAME and the CNAME synthesised at \
              QNAME, which is the CNAME asked for (RFC 1034 §3.6.2: no restart for QTYPE \
              CNAME). When Unbound resolves it from the network (not from its cache), it also \
              goes on at the CNAME's target (RFC 6672 §3.1's server algorithm read literally) \
              and appends the CNAME/DNAME records found there; from its cache it answers as \
              shardns does.",
        applies: |_, q, s, u| {
            let key = |a: &(String, RecordType, String, u32)| (a.0.clone(), a.1, a.2.clone());
            let theirs: Vec<_> = u.answers.iter().map(key).collect();
            q.qtype == RecordType::CNAME
                && s.rcode == Some(ResponseCode::NoError)
                && u.rcode == Some(ResponseCode::NoError)
                && s.answers.iter().any(|a| a.1 == RecordType::DNAME)
                && s.answers.iter().all(|a| theirs.contains(&key(a)))
                && u.answers.iter().all(|a| {
                    s.answers.iter().any(|b| key(a) == key(b))
                        || (a.0 != q.name && matches!(a.1, RecordType::CNAME | RecordType::DNAME))
                })
        },
    },
    Allowed {
        name: "servfail-partial-chain",
        why: "both SERVFAIL; Unbound keeps the CNAME/DNAME records it followed before the \
              failure in the answer section, shardns sends none. A SERVFAIL answer section has \
              no defined meaning (RFC 1035 §4.1.1) and clients do not use it.",
        applies: |_, _, s, u| {
            s.rcode == Some(ResponseCode::ServFail)
                && u.rcode == Some(ResponseCode::ServFail)
                && s.answers.is_empty()
                && u.answers
                    .iter()
                    .all(|a| matches!(a.1, RecordType::CNAME | RecordType::DNAME))
        },
    },
    Allowed {
        name: "dname-cname-query-lame-target",
        why: "as dname-cname-query, where the synthesised CNAME's target is in upref.test., \
              whose only server answers everything with an upward referral: shardns answers \
              the DNAME and the CNAME asked for (RFC 1034 §3.6.2), Unbound goes on at the \
              target, finds only lame servers there and answers SERVFAIL.",
        applies: |_, q, s, u| {
            q.qtype == RecordType::CNAME
                && s.rcode == Some(ResponseCode::NoError)
                && u.rcode == Some(ResponseCode::ServFail)
                && s.answers.iter().any(|a| a.1 == RecordType::DNAME)
                && s.answers
                    .iter()
                    .filter(|a| a.1 == RecordType::CNAME)
                    .all(|a| a.0 == q.name && under(&a.2.to_ascii_lowercase(), "upref.test."))
        },
    },
];
