//! rpz::resolved -- the triggers checked on a resolution's data ([`Rpz::check_resolved`]):
//! QNAME triggers on the names of the answer's CNAME chain, IP triggers on its addresses,
//! NSDNAME and NSIP triggers on the name servers above its names ([`NameServer`]), and
//! which zones' QNAME triggers wait for them ([`Rpz::waits_from`]).

use std::net::IpAddr;
use std::sync::Arc;

use shardns_wire::{Name, NameRef};

use super::shards::Names;
use super::{Hit, Override, PolicyZone, Rpz, Stored, Trigger};

/// The action of `name` in a pair of exact and wildcard tables: an exact name first, then
/// the wildcard closest to it. Only the label counts some trigger has are looked up.
pub(super) fn name_match(exact: &Names, wildcards: &Names, name: NameRef<'_>) -> Option<Stored> {
    let mut labels = name.label_count();
    if exact.may_hold(labels) {
        if let Some(a) = exact.get(name) {
            return Some(a);
        }
    }
    if !wildcards.is_empty() {
        let mut up = name.parent();
        while let Some(n) = up {
            labels -= 1;
            if wildcards.may_hold(labels) {
                if let Some(a) = wildcards.get(n) {
                    return Some(a);
                }
            }
            up = n.parent();
        }
    }
    None
}

/// A name server of a zone above a name of an answer, for the NSDNAME and NSIP triggers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameServer {
    /// Its name (the NS record's target).
    pub name: Name,
    /// Its addresses known.
    pub addresses: Vec<IpAddr>,
    /// The index, in the chain given to [`Rpz::check_resolved`], of the name whose zone
    /// it serves: a policy it meets applies at that name.
    pub at: usize,
}

impl PolicyZone {
    /// The IP, NSDNAME or NSIP trigger the name at index `at` of an answer's chain meets,
    /// in that order: the longest prefix holding one of `addresses` (given for the last
    /// name, which owns them), the first of its `servers` whose name matches, the longest
    /// prefix holding one of their addresses.
    fn find_data(
        &self,
        at: usize,
        addresses: Option<&[IpAddr]>,
        servers: &[NameServer],
    ) -> Option<(Trigger, Stored)> {
        let ip = addresses
            .unwrap_or_default()
            .iter()
            .filter_map(|&ip| self.answer_ips.longest(ip))
            .max_by_key(|&(len, _)| len);
        if let Some((_, a)) = ip {
            return Some((Trigger::Ip, a));
        }
        if !self.has_ns_triggers() {
            return None;
        }
        let mine = || servers.iter().filter(|s| s.at == at);
        let by_name =
            mine().find_map(|s| name_match(&self.ns_names, &self.ns_wildcards, s.name.as_ref()));
        if let Some(a) = by_name {
            return Some((Trigger::Nsdname, a));
        }
        let by_ip = mine()
            .flat_map(|s| s.addresses.iter())
            .filter_map(|&ip| self.ns_ips.longest(ip))
            .reduce(|best, x| if x.0 > best.0 { x } else { best });
        by_ip.map(|(_, a)| (Trigger::Nsip, a))
    }
}

impl Rpz {
    /// The index of the first zone after the first one with triggers on the resolution's
    /// data (NSDNAME, NSIP; IP-answer if `addresses`, the question can have an address in
    /// its answer), else the number of zones. The QNAME and client-IP triggers of the
    /// zones from there on are checked after the resolution ([`Rpz::check_resolved`]),
    /// so that an earlier zone's data trigger takes precedence over them (BIND: the first
    /// zone with a match decides, whatever the kind of trigger).
    pub fn waits_from(&self, addresses: bool) -> usize {
        let data =
            |z: &Arc<PolicyZone>| z.has_ns_triggers() || addresses && !z.answer_ips.is_empty();
        self.zones
            .iter()
            .position(data)
            .map_or(self.zones.len(), |i| i + 1)
    }

    /// The policies a resolved answer meets, BIND's way: the names of its chain (the query
    /// name, then each CNAME target) in turn, and for each the zones in order; in a zone,
    /// a QNAME trigger (for the query name, in the zones from `deferred` on only, with
    /// the client-IP trigger of `client` before it: the others were checked before the
    /// resolution), then IP (the last name's `addresses`), NSDNAME and NSIP (the
    /// `servers` of that name, in the order they are to be preferred). The hit's `at` is
    /// the index in `chain` of the name its action applies at. As [`Rpz::check`]
    /// otherwise.
    pub fn check_resolved<'a>(
        &'a self,
        chain: &[NameRef<'_>],
        addresses: &[IpAddr],
        servers: &[NameServer],
        (client, deferred): (Option<IpAddr>, usize),
        each: &mut dyn FnMut(&Hit<'a>),
    ) -> Option<Hit<'a>> {
        let last = chain.len().checked_sub(1)?;
        for (at, &name) in chain.iter().enumerate() {
            let hit = self.first(chain, each, |i, z| {
                let named = match at {
                    0 if i >= deferred => z.find(name, client),
                    0 => None,
                    _ => name_match(&z.qnames, &z.wildcards, name).map(|a| (Trigger::Qname, a)),
                };
                named
                    .or_else(|| z.find_data(at, (at == last).then_some(addresses), servers))
                    .map(|(t, a)| (t, a, at))
            });
            if hit.is_some() {
                return hit;
            }
        }
        None
    }

    /// Whether a query for `qname` from `client` met a QNAME or client-IP trigger in an
    /// applied zone before index `end` (checked before the cache): the query got that
    /// policy's answer, or, reaching the resolution's end, a PASSTHRU, which ends every
    /// check. Not counted (the check before the cache counted it).
    pub fn decided_before(&self, qname: NameRef<'_>, client: Option<IpAddr>, end: usize) -> bool {
        self.zones
            .iter()
            .take(end)
            .filter(|z| z.policy != Override::Disabled)
            .any(|z| z.find(qname, client).is_some())
    }
}
