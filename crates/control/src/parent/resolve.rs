//! parent::resolve -- the parent's servers found by resolving (`parent_agents = "resolve"`,
//! as BIND 9.20's `checkds yes` does without `parental-agents`): the zone cut above ours
//! (the SOA a resolver gives for the name above our apex, one label up at a time while it
//! gives none), that zone's NS set, and each name server's A and AAAA records, all asked of
//! the zone's `parent_resolvers` (RD set, each in turn until one answers) anew at each
//! check, so a change of the parent's servers is seen at the next one. The DS itself is then
//! asked of every server found, directly, as of listed ones.
//!
//! Any failure fails the whole lookup (a resolver that does not answer, SERVFAIL, a name
//! server without an address): the check says why and tries again later, so a rollover
//! never goes on with the DS seen at only part of the parent's servers. Loopback
//! addresses are kept: the resolvers are the operator's own, and so is what they say.

use super::{query, Ids};
use shardns_wire::{Message, Name, RType, Rcode};
use std::net::{IpAddr, SocketAddr};

/// The port the parent's name servers are asked on (an address record carries none).
const DNS_PORT: u16 = 53;

/// The parent's servers as found: its zone and their addresses (sorted, each once).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Found {
    pub zone: Name,
    pub servers: Vec<SocketAddr>,
}

/// The parent's servers of `apex`, asked of `resolvers`.
pub(super) fn parent_servers(
    resolvers: &[SocketAddr],
    apex: &Name,
    ids: &mut Ids,
) -> Result<Found, String> {
    find(
        &mut |qname, qtype| through(resolvers, qname, qtype, ids),
        apex,
    )
}

/// `qname`/`qtype` asked of each resolver in turn until one answers NOERROR or NXDOMAIN;
/// the error names what each said.
fn through(
    resolvers: &[SocketAddr],
    qname: &Name,
    qtype: RType,
    ids: &mut Ids,
) -> Result<Message, String> {
    let mut said = Vec::new();
    for &r in resolvers {
        match query::ask_resolver(r, qname, qtype, ids.next()) {
            Ok(m) if matches!(m.rcode(), Rcode::NOERROR | Rcode::NXDOMAIN) => return Ok(m),
            Ok(m) => said.push(format!("{r}: {qname} {qtype} answered {}", m.rcode())),
            Err(e) => said.push(format!("{r}: {qname} {qtype}: {e}")),
        }
    }
    Err(said.join("; "))
}

/// The lookup, its questions answered by `ask` (a resolver's NOERROR or NXDOMAIN answer).
pub(super) fn find(
    ask: &mut dyn FnMut(&Name, RType) -> Result<Message, String>,
    apex: &Name,
) -> Result<Found, String> {
    let zone = zone_cut(ask, apex)?;
    let m = ask(&zone, RType::NS)?;
    let mut names: Vec<Name> = Vec::new();
    for r in m.answers.iter().filter(|r| r.rtype == RType::NS) {
        if !r.owner.as_ref().eq_ci(&zone.as_ref()) {
            continue;
        }
        let n = Name::from_wire(&r.rdata).map_err(|e| format!("NS of {zone}: {e}"))?;
        if !names.iter().any(|k| k.as_ref().eq_ci(&n.as_ref())) {
            names.push(n);
        }
    }
    if names.is_empty() {
        return Err(format!("no NS records for {zone} ({})", m.rcode()));
    }
    let mut servers = Vec::new();
    for n in &names {
        let before = servers.len();
        for qtype in [RType::A, RType::AAAA] {
            servers.extend(addresses(&ask(n, qtype)?, qtype));
        }
        if servers.len() == before {
            return Err(format!("name server {n} of {zone} has no address"));
        }
    }
    servers.sort();
    servers.dedup();
    Ok(Found { zone, servers })
}

/// The zone that holds `apex`'s delegation: the owner of the SOA answered for the name
/// above `apex` (that name is a zone's apex), or of the SOA in the authority section of a
/// negative answer (the zone the name is in); with neither (a CNAME there, a resolver that
/// keeps the SOA back), the same one label up.
fn zone_cut(
    ask: &mut dyn FnMut(&Name, RType) -> Result<Message, String>,
    apex: &Name,
) -> Result<Name, String> {
    let mut name = apex.as_ref().parent().ok_or("the root has no parent")?;
    loop {
        let m = ask(&name.to_name(), RType::SOA)?;
        let apex_soa = m
            .answers
            .iter()
            .find(|r| r.rtype == RType::SOA && r.owner.as_ref().eq_ci(&name));
        let enclosing = m
            .authority
            .iter()
            .find(|r| r.rtype == RType::SOA && name.ends_with(&r.owner.as_ref()));
        if let Some(soa) = apex_soa.or(enclosing) {
            return Ok(soa.owner.clone());
        }
        name = name
            .parent()
            .ok_or_else(|| format!("no SOA found above {apex}"))?;
    }
}

/// The addresses of an answer's `qtype` records (A or AAAA), port 53; none that no query
/// can go to (unspecified, multicast, broadcast).
fn addresses(m: &Message, qtype: RType) -> Vec<SocketAddr> {
    m.answers
        .iter()
        .filter(|r| r.rtype == qtype)
        .filter_map(|r| match (qtype, r.rdata.len()) {
            (RType::A, 4) => Some(IpAddr::from(<[u8; 4]>::try_from(&r.rdata[..]).ok()?)),
            (RType::AAAA, 16) => Some(IpAddr::from(<[u8; 16]>::try_from(&r.rdata[..]).ok()?)),
            _ => None,
        })
        .filter(|ip| {
            !ip.is_unspecified()
                && !ip.is_multicast()
                && *ip != IpAddr::from(std::net::Ipv4Addr::BROADCAST)
        })
        .map(|ip| SocketAddr::new(ip, DNS_PORT))
        .collect()
}
