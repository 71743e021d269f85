//! What is compared between the two resolvers' replies to one query: RCODE, AD, the answer
//! section's data (TTLs aside, RRSIGs aside), the answer section's RRSIGs (whole: covered
//! type, algorithm, labels, original TTL, validity, key tag, signer and signature), the
//! authority section's records, whole but for TTLs (the SOA of a negative answer, its RRSIGs
//! and the NSEC/NSEC3 proofs of a denial or a wildcard expansion with theirs), and the EDE
//! codes. The additional section is not compared.

use crate::ask::Reply;
use crate::wire::{rcode_name, type_name, Rr, RRSIG};
use std::collections::BTreeSet;

/// One kind of difference, with what each side had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Diff {
    Outcome(String, String),
    Rcode(u16, u16),
    Ad(bool, bool),
    /// Answer records (no RRSIGs): only shardns, only Unbound.
    Answer(Vec<String>, Vec<String>),
    /// RRSIGs of the answer (TTLs aside): only shardns, only Unbound.
    Rrsigs(Vec<String>, Vec<String>),
    /// Authority records (TTLs aside): only shardns, only Unbound.
    Authority(Vec<String>, Vec<String>),
    Ede(Vec<u16>, Vec<u16>),
}

impl Diff {
    /// A short name for tallies.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Diff::Outcome(..) => "outcome",
            Diff::Rcode(..) => "rcode",
            Diff::Ad(..) => "AD",
            Diff::Answer(..) => "answer",
            Diff::Rrsigs(..) => "RRSIGs",
            Diff::Authority(..) => "authority",
            Diff::Ede(..) => "EDE",
        }
    }
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let both = |f: &mut std::fmt::Formatter<'_>, what: &str, s: &[String], u: &[String]| {
            write!(
                f,
                "{what}: only shardns [{}], only unbound [{}]",
                s.join(", "),
                u.join(", ")
            )
        };
        match self {
            Diff::Outcome(s, u) => write!(f, "shardns {s} / unbound {u}"),
            Diff::Rcode(s, u) => write!(
                f,
                "rcode: shardns {} / unbound {}",
                rcode_name(*s),
                rcode_name(*u)
            ),
            Diff::Ad(s, u) => write!(f, "AD: shardns {s} / unbound {u}"),
            Diff::Answer(s, u) => both(f, "answer", s, u),
            Diff::Rrsigs(s, u) => both(f, "answer RRSIGs", s, u),
            Diff::Authority(s, u) => both(f, "authority", s, u),
            Diff::Ede(s, u) => write!(f, "EDE: shardns {s:?} / unbound {u:?}"),
        }
    }
}

fn data(r: &Reply) -> BTreeSet<Rr> {
    r.resp
        .answer()
        .iter()
        .filter(|rr| rr.rtype != RRSIG)
        .map(|rr| rr.with_ttl(0))
        .collect()
}

/// An RRSIG for people to read: owner, covered type, key tag, signer (and the start of the
/// signature in `Rr`'s form).
#[derive(Clone)]
struct Sig(Rr);

impl std::fmt::Display for Sig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.0.covered().map_or("?".into(), type_name);
        write!(f, "{}/RRSIG({t}): {}", self.0.name, self.0.rdata)
    }
}

impl PartialEq for Sig {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Sig {}
impl PartialOrd for Sig {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Sig {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

fn signatures(r: &Reply) -> BTreeSet<Sig> {
    r.resp
        .answer()
        .iter()
        .filter(|rr| rr.rtype == RRSIG)
        .map(|rr| Sig(rr.with_ttl(0)))
        .collect()
}

fn authority(r: &Reply) -> BTreeSet<Rr> {
    r.resp.authority().iter().map(|rr| rr.with_ttl(0)).collect()
}

fn split<T: Ord + Clone + ToString>(
    s: &BTreeSet<T>,
    u: &BTreeSet<T>,
) -> (Vec<String>, Vec<String>) {
    (
        s.difference(u).map(ToString::to_string).collect(),
        u.difference(s).map(ToString::to_string).collect(),
    )
}

/// How shardns's reply `s` differs from Unbound's `u`.
pub(crate) fn differences(s: &Result<Reply, String>, u: &Result<Reply, String>) -> Vec<Diff> {
    let (s, u) = match (s, u) {
        (Ok(s), Ok(u)) => (s, u),
        (Err(a), Err(b)) if a == b => return Vec::new(),
        _ => {
            let show = |r: &Result<Reply, String>| match r {
                Ok(r) => rcode_name(r.resp.rcode),
                Err(e) => format!("error ({e})"),
            };
            return vec![Diff::Outcome(show(s), show(u))];
        }
    };
    let mut out = Vec::new();
    if s.resp.rcode != u.resp.rcode {
        out.push(Diff::Rcode(s.resp.rcode, u.resp.rcode));
    }
    if s.resp.ad != u.resp.ad {
        out.push(Diff::Ad(s.resp.ad, u.resp.ad));
    }
    let (sd, ud) = (data(s), data(u));
    if sd != ud {
        let (a, b) = split(&sd, &ud);
        out.push(Diff::Answer(a, b));
    }
    let (ss, us) = (signatures(s), signatures(u));
    if ss != us {
        let (a, b) = split(&ss, &us);
        out.push(Diff::Rrsigs(a, b));
    }
    let (sa, ua) = (authority(s), authority(u));
    if sa != ua {
        let (a, b) = split(&sa, &ua);
        out.push(Diff::Authority(a, b));
    }
    if s.ede != u.ede {
        out.push(Diff::Ede(s.ede.clone(), u.ede.clone()));
    }
    out
}
