//! The prerequisite section (RFC 2136 §2.4, §3.2), checked against the zone as it is
//! before any change.

use super::{canonical, in_zone, refuse, Refusal, Rr};
use crate::db::Zone;
use shardns_wire::{Class, NameRef, RType, Rcode};

/// Whether a name has at least one record (§2.4.4: "in use"; an empty non-terminal is
/// not).
fn in_use(zone: &Zone, name: NameRef<'_>) -> bool {
    zone.find(name).is_some_and(|n| !n.is_empty())
}

/// The RRset `name`/`rtype` in canonical form, sorted (every set of the type: the RRSIGs
/// of each covered type are a set of their own in the zone).
fn rrset(zone: &Zone, name: NameRef<'_>, rtype: RType) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = zone
        .find(name)
        .into_iter()
        .flat_map(|n| n.rrsets().filter(move |s| s.rtype == rtype))
        .flat_map(|s| s.rdatas().map(move |d| canonical(rtype, d)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Checks every prerequisite, in order (§3.2.5); the first that fails gives the rcode.
pub(super) fn check(zone: &Zone, prereqs: &[Rr]) -> Result<(), Refusal> {
    // §3.2.3: the value-dependent form, gathered by (owner, type) and compared at the end.
    let mut temp: Vec<(&Rr, Vec<Vec<u8>>)> = Vec::new();
    for rr in prereqs {
        let name = rr.owner.as_ref();
        let what = || format!("prerequisite {} {} {}", rr.owner, rr.class, rr.rtype);
        if rr.ttl != 0 {
            return Err(refuse(Rcode::FORMERR, format!("{}: TTL not 0", what())));
        }
        if !in_zone(zone, name) {
            return Err(refuse(
                Rcode::NOTZONE,
                format!("{}: outside the zone", what()),
            ));
        }
        match rr.class {
            Class::ANY | Class::NONE if !rr.rdata.is_empty() => {
                return Err(refuse(
                    Rcode::FORMERR,
                    format!("{}: RDLENGTH not 0", what()),
                ));
            }
            // §2.4.4: name is in use.
            Class::ANY if rr.rtype == RType::ANY => {
                if !in_use(zone, name) {
                    return Err(refuse(Rcode::NXDOMAIN, format!("{}: no such name", what())));
                }
            }
            // §2.4.1: RRset exists (value independent).
            Class::ANY => {
                if rrset(zone, name, rr.rtype).is_empty() {
                    return Err(refuse(Rcode::NXRRSET, format!("{}: no such RRset", what())));
                }
            }
            // §2.4.5: name is not in use.
            Class::NONE if rr.rtype == RType::ANY => {
                if in_use(zone, name) {
                    return Err(refuse(Rcode::YXDOMAIN, format!("{}: name in use", what())));
                }
            }
            // §2.4.3: RRset does not exist.
            Class::NONE => {
                if !rrset(zone, name, rr.rtype).is_empty() {
                    return Err(refuse(Rcode::YXRRSET, format!("{}: RRset exists", what())));
                }
            }
            // §2.4.2: RRset exists (value dependent).
            Class::IN => {
                let data = canonical(rr.rtype, &rr.rdata);
                match temp
                    .iter_mut()
                    .find(|(t, _)| t.rtype == rr.rtype && t.owner.as_ref().eq_ci(&name))
                {
                    Some((_, set)) => set.push(data),
                    None => temp.push((rr, vec![data])),
                }
            }
            _ => {
                return Err(refuse(Rcode::FORMERR, format!("{}: bad class", what())));
            }
        }
    }
    for (rr, mut set) in temp {
        set.sort();
        set.dedup();
        if rrset(zone, rr.owner.as_ref(), rr.rtype) != set {
            return Err(refuse(
                Rcode::NXRRSET,
                format!(
                    "prerequisite {} {}: the RRset differs from the one given",
                    rr.owner, rr.rtype
                ),
            ));
        }
    }
    Ok(())
}
