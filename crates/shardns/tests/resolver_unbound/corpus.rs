//! The zone data (`tests/interop/*.zone`, read the simple way) and the query corpus made
//! from it: every owner, empty non-terminal, missing child, wildcard expansion, DNAME rewrite
//! and RDATA target times a set of types, in a fixed-seed shuffled order.

use crate::topology::{AUTHS, SILENT};
use hickory_proto::rr::RecordType;
use std::collections::BTreeSet;
use std::path::Path;

/// Types asked of every name that exists (or is an empty non-terminal).
const TYPES: &[RecordType] = &[
    RecordType::A,
    RecordType::AAAA,
    RecordType::MX,
    RecordType::TXT,
    RecordType::NS,
    RecordType::SOA,
    RecordType::CNAME,
];
/// Types asked of names that do not exist, and of names under unreachable zones.
const FEW_TYPES: &[RecordType] = &[RecordType::A, RecordType::TXT];

/// Order of the queries: a fixed-seed shuffle, so caches fill in a mixed but repeatable order.
const SEED: u64 = 0x1e7e_0b0d_0000_0005;

/// One record of a zone file: lower-case absolute owner, TTL, type, RDATA text.
#[derive(Clone, Debug)]
pub(crate) struct Rr {
    pub(crate) owner: String,
    pub(crate) ttl: u32,
    pub(crate) rtype: String,
    pub(crate) rdata: String,
}

pub(crate) struct Zone {
    pub(crate) apex: String,
    pub(crate) records: Vec<Rr>,
}

/// Every zone file once (`test.zone` is served twice), read with the simple format they keep:
/// `owner TTL IN TYPE RDATA`, absolute names, `;` comments.
pub(crate) fn load_zones(data: &Path) -> Vec<Zone> {
    let mut seen = BTreeSet::new();
    let mut zones = Vec::new();
    for (_, list) in AUTHS {
        for (apex, file) in *list {
            if !seen.insert(*apex) {
                continue;
            }
            let text = std::fs::read_to_string(data.join(file)).unwrap();
            let records = text
                .lines()
                .map(|l| l.split(';').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    assert!(f.len() >= 5 && f[2] == "IN", "{file}: bad line {l:?}");
                    Rr {
                        owner: f[0].to_ascii_lowercase(),
                        ttl: f[1].parse().unwrap(),
                        rtype: f[3].to_string(),
                        rdata: f[4..].join(" "),
                    }
                })
                .collect();
            zones.push(Zone {
                apex: apex.to_string(),
                records,
            });
        }
    }
    zones
}

/// One query of the corpus.
#[derive(Clone, Debug)]
pub(crate) struct Query {
    pub(crate) name: String,
    pub(crate) qtype: RecordType,
}

/// `name` is `zone` or below it (both absolute, lower case).
pub(crate) fn under(name: &str, zone: &str) -> bool {
    zone == "." || name == zone || name.ends_with(&format!(".{zone}"))
}

pub(crate) fn parent(name: &str) -> Option<&str> {
    if name == "." {
        return None;
    }
    Some(match name.split_once('.') {
        Some((_, "")) | None => ".",
        Some((_, rest)) => rest,
    })
}

/// Names whose zone has no server that answers: asked only with [`FEW_TYPES`].
fn unreachable(zones: &[Zone], name: &str) -> bool {
    zones.iter().any(|z| {
        z.records.iter().any(|r| {
            r.rtype == "NS"
                && r.owner != z.apex
                && under(name, &r.owner)
                && !zones.iter().any(|c| c.apex == r.owner)
        })
    })
}

/// Names under a delegation whose every name server address is the silent one: each query
/// there costs both resolvers their full timeouts, so the corpus holds few of them.
pub(crate) fn silent(zones: &[Zone], name: &str) -> bool {
    let recs = || zones.iter().flat_map(|z| &z.records);
    recs().any(|cut| {
        cut.rtype == "NS"
            && under(name, &cut.owner)
            && !zones.iter().any(|c| c.apex == cut.owner)
            && recs()
                .filter(|ns| ns.rtype == "NS" && ns.owner == cut.owner)
                .all(|ns| {
                    let host = ns.rdata.to_ascii_lowercase();
                    recs()
                        .filter(|a| a.rtype == "A" && a.owner == host)
                        .all(|a| a.rdata == SILENT)
                })
    })
}

/// The corpus, generated from the zone data, in a fixed-seed shuffled order.
pub(crate) fn corpus(zones: &[Zone]) -> Vec<Query> {
    let mut exist = BTreeSet::new();
    let mut missing = BTreeSet::new();
    let all: Vec<&Rr> = zones.iter().flat_map(|z| &z.records).collect();
    for z in zones {
        for r in &z.records {
            if let Some(base) = r.owner.strip_prefix("*.") {
                // Wildcard expansions, one and two labels deep.
                exist.insert(format!("w1.{base}"));
                exist.insert(format!("a.b.{base}"));
            } else {
                exist.insert(r.owner.clone());
                missing.insert(format!("nx.{}", r.owner));
            }
            // Empty non-terminals between the owner and the apex.
            let mut p = parent(&r.owner);
            while let Some(n) = p {
                if !under(n, &z.apex) || n == z.apex {
                    break;
                }
                exist.insert(n.to_string());
                p = parent(n);
            }
            // RDATA targets: CNAME, MX, NS names.
            let target = match r.rtype.as_str() {
                "CNAME" | "NS" => r.rdata.clone(),
                "MX" => r.rdata.split_whitespace().nth(1).unwrap_or("").to_string(),
                _ => String::new(),
            };
            if target.ends_with('.') && target != "." {
                exist.insert(target.to_ascii_lowercase());
            }
        }
    }
    // DNAME rewrites of every name under the target, and a missing name under the owner.
    for r in all.iter().filter(|r| r.rtype == "DNAME") {
        let target = r.rdata.to_ascii_lowercase();
        let rewritten: Vec<String> = exist
            .iter()
            .filter(|n| **n != target && under(n, &target) && !silent(zones, n))
            .map(|n| {
                let prefix = &n[..n.len() - target.len()];
                format!("{prefix}{}", r.owner)
            })
            .collect();
        exist.extend(rewritten);
        missing.insert(format!("nx.{}", r.owner));
    }
    // Names under delegations nobody serves.
    for r in all
        .iter()
        .filter(|r| r.rtype == "NS" && !zones.iter().any(|z| z.apex == r.owner))
    {
        exist.insert(format!("www.{}", r.owner));
    }
    missing.retain(|n| !exist.contains(n) && !silent(zones, n));
    let mut queries = Vec::new();
    for n in &exist {
        let types = if unreachable(zones, n) {
            FEW_TYPES
        } else {
            TYPES
        };
        for &t in types {
            queries.push(Query {
                name: n.clone(),
                qtype: t,
            });
        }
    }
    for n in &missing {
        for &t in FEW_TYPES {
            queries.push(Query {
                name: n.clone(),
                qtype: t,
            });
        }
    }
    // Fisher-Yates with a xorshift generator.
    let mut x = SEED;
    for i in (1..queries.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        queries.swap(i, (x % (i as u64 + 1)) as usize);
    }
    // The slow ones (silent servers) first, so their timeouts overlap with everything else.
    queries.sort_by_key(|q| !silent(zones, &q.name));
    queries
}
