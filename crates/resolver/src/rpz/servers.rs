//! rpz::servers -- the name servers the NSDNAME and NSIP triggers are checked against:
//! for each name of an answer's chain, the NS records the cache holds at that name and at
//! each of its ancestors (the delegations the resolution followed, at any level below the
//! top `min_ns_dots` labels, as BIND walks them), and the cached addresses of each server.

use std::net::IpAddr;

use shardns_wire::{NameRef, RType};

use super::NameServer;
use crate::cache::{Cache, Rank};

/// BIND's `min-ns-dots` default: the name servers of names of fewer labels than this plus
/// one (the top-level domains) are not checked.
pub const MIN_NS_DOTS: usize = 1;

/// The name servers above each name of `chain` (index `at` in it), the closest zone cut
/// first, each NS set's names in order, with the addresses the cache has for them (glue
/// included). Only cached data is read: the resolution has just walked the delegations, so
/// their NS sets and glue are there; a name resolved through a forwarder has none.
pub fn name_servers(
    cache: &Cache,
    chain: &[NameRef<'_>],
    now: u64,
    min_ns_dots: usize,
) -> Vec<NameServer> {
    let mut out: Vec<NameServer> = Vec::new();
    for (at, name) in chain.iter().enumerate() {
        let mut up = Some(*name);
        while let Some(n) = up.filter(|n| n.label_count() > min_ns_dots) {
            let mut names = Vec::new();
            cache.visit(n, &[RType::NS], Rank::Referral, now, |_, _, rdata| {
                if let Ok(ns) = NameRef::from_wire(rdata) {
                    names.push(ns.to_name());
                }
            });
            // The lexically smallest name first (BIND's preference among NSDNAME hits).
            names.sort_by_key(|n| n.to_string().to_ascii_lowercase());
            for ns in names {
                if out.iter().any(|s| s.name == ns && s.at == at) {
                    continue;
                }
                let mut addresses = Vec::new();
                let types = [RType::A, RType::AAAA];
                cache.visit(ns.as_ref(), &types, Rank::Additional, now, |_, _, rd| {
                    let ip = match rd.len() {
                        4 => <[u8; 4]>::try_from(rd).ok().map(IpAddr::from),
                        16 => <[u8; 16]>::try_from(rd).ok().map(IpAddr::from),
                        _ => None,
                    };
                    addresses.extend(ip);
                });
                out.push(NameServer {
                    name: ns,
                    addresses,
                    at,
                });
            }
            up = n.parent();
        }
    }
    out
}
