//! answer::find -- what a name is in a zone (RFC 1034 §4.3.2, RFC 4592, RFC 6672): an exact
//! match, a referral, a DNAME redirection, a wildcard to synthesize from, or no such name.

use crate::db::{flags, NodeRef, Zone};
use shardns_wire::{NameBuf, NameRef, RType};

/// What a name is in a zone.
#[derive(Debug, Clone, Copy)]
pub enum Found<'z> {
    /// The name exists (possibly as an empty non-terminal).
    Exact(NodeRef<'z>),
    /// The name does not exist; this wildcard (`*.<closest encloser>`) is the source of
    /// synthesis (RFC 4592 §3.3.1).
    Wildcard(NodeRef<'z>),
    /// The name is at or below this zone cut.
    Referral(NodeRef<'z>),
    /// The name is below this node's DNAME (RFC 6672 §2.3).
    Dname(NodeRef<'z>),
    /// The name does not exist and no wildcard applies; this node is its closest encloser.
    NxDomain(NodeRef<'z>),
}

/// Looks `qname` (at or below the apex) up in `zone`. `qtype` matters only for DS, which is
/// answered from the parent side of a zone cut (RFC 4035 §3.1.4.1).
pub fn lookup<'z>(zone: &'z Zone, qname: NameRef<'_>, qtype: RType) -> Found<'z> {
    // Fast path: the name exists and nothing above it diverts the query.
    let exact = find_existing(zone, qname);
    if let Some(n) = exact {
        let f = n.flags();
        if f & (flags::BELOW_CUT | flags::BELOW_DNAME) == 0 {
            if f & flags::DELEGATION != 0 && qtype != RType::DS {
                return Found::Referral(n);
            }
            return Found::Exact(n);
        }
    }
    // Walk down from the apex, one label at a time, stopping at the first cut or DNAME.
    let wire = qname.as_wire();
    let mut starts = [0u8; 128];
    let mut total = 0;
    let mut pos = 0usize;
    while wire[pos] != 0 {
        starts[total] = pos as u8;
        total += 1;
        pos += 1 + wire[pos] as usize;
    }
    let apex_labels = zone.apex().label_count();
    if total < apex_labels {
        return Found::NxDomain(zone.apex_node());
    }
    let below = total - apex_labels;
    let mut cur = zone.apex_node();
    for depth in 1..=below {
        if cur.flags() & flags::DNAME != 0 {
            return Found::Dname(cur);
        }
        if depth == below && exact.is_none() {
            // The query's own name, looked up above: a name error's second lookup of it
            // (hashing the name, probing the table) is skipped.
            return wildcard_or_nxdomain(zone, cur);
        }
        let name = NameRef::from_wire_prefix(&wire[starts[below - depth] as usize..])
            .expect("suffix of a valid name")
            .0;
        match find_existing(zone, name) {
            None => return wildcard_or_nxdomain(zone, cur),
            Some(n) => {
                if n.flags() & flags::DELEGATION != 0 && !(depth == below && qtype == RType::DS) {
                    return Found::Referral(n);
                }
                cur = n;
            }
        }
    }
    Found::Exact(cur)
}

/// A node that exists for lookups: NSEC3 owner names do not (RFC 5155 §7.2.8).
fn find_existing<'z>(zone: &'z Zone, name: NameRef<'_>) -> Option<NodeRef<'z>> {
    zone.find(name)
        .filter(|n| n.flags() & flags::NSEC3_ONLY == 0)
}

fn wildcard_or_nxdomain<'z>(zone: &'z Zone, encloser: NodeRef<'z>) -> Found<'z> {
    if encloser.flags() & flags::WILDCARD_CHILD != 0 {
        let mut star = NameBuf::new();
        if star.set_concat(&[1, b'*'], encloser.name()).is_ok() {
            if let Some(w) = zone.find(star.as_ref()) {
                return Found::Wildcard(w);
            }
        }
    }
    Found::NxDomain(encloser)
}
