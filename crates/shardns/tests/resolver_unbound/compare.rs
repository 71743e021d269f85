//! Comparing two replies: RCODE, the answer section without TTLs, the SOA owner of a
//! negative answer, RA set and AA clear, and TTLs no larger than the zone data gives.

use crate::ask::Reply;
use crate::corpus::{under, Zone};
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

/// The largest TTL the zones give `owner`/`rtype`: the record itself, a wildcard that
/// synthesises it, or the DNAME a CNAME is synthesised from. `None`: no zone has it.
fn zone_ttl(zones: &[Zone], owner: &str, rtype: RecordType) -> Option<u32> {
    let t = rtype.to_string();
    let recs = || zones.iter().flat_map(|z| &z.records);
    let exact = recs()
        .filter(|r| r.rtype == t && r.owner == owner)
        .map(|r| r.ttl)
        .max();
    exact
        .or_else(|| {
            recs()
                .filter(|r| r.rtype == t)
                .filter_map(|r| Some((r, r.owner.strip_prefix("*.")?)))
                .filter(|(_, base)| owner != *base && under(owner, base))
                .map(|(r, _)| r.ttl)
                .max()
        })
        .or_else(|| {
            (rtype == RecordType::CNAME)
                .then(|| {
                    recs()
                        .filter(|r| {
                            r.rtype == "DNAME" && owner != r.owner && under(owner, &r.owner)
                        })
                        .map(|r| r.ttl)
                        .max()
                })
                .flatten()
        })
}

/// How two replies differ (empty: the same).
pub(crate) fn differences(zones: &[Zone], s: &Reply, u: &Reply) -> Vec<String> {
    let mut d = Vec::new();
    if s.rcode != u.rcode {
        d.push("rcode".to_string());
    }
    let strip = |r: &Reply| -> Vec<(String, RecordType, String)> {
        r.answers
            .iter()
            .map(|(o, t, rd, _)| (o.clone(), *t, rd.clone()))
            .collect()
    };
    if strip(s) != strip(u) {
        d.push("answer".to_string());
    }
    let negative = |r: &Reply| {
        r.answers.is_empty()
            && matches!(
                r.rcode,
                Some(ResponseCode::NoError) | Some(ResponseCode::NXDomain)
            )
    };
    if negative(s) && negative(u) && s.soa != u.soa {
        d.push("negative SOA".to_string());
    }
    for (who, r) in [("shardns", s), ("unbound", u)] {
        if r.rcode.is_some() && (r.aa || !r.ra) {
            d.push(format!("{who} flags (AA set or RA clear)"));
        }
        for (o, t, _, ttl) in &r.answers {
            match zone_ttl(zones, o, *t) {
                Some(max) if *ttl <= max => {}
                Some(max) => d.push(format!("{who} TTL {ttl} of {o} {t} above the zone's {max}")),
                None => d.push(format!("{who} {o} {t} is in no zone")),
            }
        }
    }
    d
}
