//! The NSEC chain patched (RFC 4034 §4): a name that becomes authoritative gets an NSEC
//! and its predecessor's next pointer moves to it; a name that stops being one loses its
//! NSEC and its predecessor points past it; a name whose types change gets a new bitmap.
//! The predecessors are found in the zone's NSEC owners in canonical order (its denial
//! index), by a binary search.

use super::chain::{Edit, Link, Old};
use super::state::{Kind, View};
use super::{Out, ResignError};
use crate::db::NodeId;
use crate::db::Zone;
use shardns_dnssec::chain::write_bitmap;
use shardns_wire::{Name, NameRef, RType};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// The zone's NSEC owners in canonical order.
struct Owners<'z> {
    zone: &'z Zone,
    ids: &'z [NodeId],
}

impl Old for Owners<'_> {
    type Key = Name;
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn cmp_at(&self, i: usize, k: &Name) -> Ordering {
        self.zone
            .node(self.ids[i])
            .name()
            .canonical_cmp(&k.as_ref())
    }
    fn cmp(a: &Name, b: &Name) -> Ordering {
        a.as_ref().canonical_cmp(&b.as_ref())
    }
}

impl Owners<'_> {
    /// The index of node `id` (named `name`) in the chain, if it is there.
    fn index(&self, id: NodeId, name: NameRef<'_>) -> Option<usize> {
        let i = self
            .ids
            .partition_point(|&o| self.zone.node(o).name().canonical_cmp(&name).is_lt());
        (self.ids.get(i) == Some(&id)).then_some(i)
    }
}

/// The types of an NSEC bitmap: at a cut only NS and DS are the zone's; RRSIG and NSEC
/// always (the NSEC itself is signed).
pub(super) fn nsec_types(kind: Kind, mut types: Vec<RType>, extra: &[RType]) -> Vec<RType> {
    if kind == Kind::Cut {
        types.retain(|&t| t == RType::NS || t == RType::DS);
    }
    types.extend_from_slice(extra);
    types.sort_unstable();
    types.dedup();
    types
}

/// The bitmap of the NSEC rdata `rdata` (after the next name).
fn old_bitmap(rdata: &[u8]) -> &[u8] {
    NameRef::from_wire_prefix(rdata).map_or(&[], |(_, n)| &rdata[n..])
}

/// Adds to `out` the NSEC records (and RRSIGs) the touched names change.
pub(super) fn patch(view: &View<'_>, out: &mut Out<'_>, ttl: u32) -> Result<(), ResignError> {
    let zone = view.zone;
    let ids: &[NodeId] = &zone.denial.as_ref().ok_or(ResignError::NotSigned)?.nsec;
    let old = Owners { zone, ids };
    // Each touched name: its index in the old chain, its bitmap if in the new one.
    let mut removed = HashSet::new();
    let mut added: Vec<(Name, Vec<u8>)> = Vec::new();
    let mut bitmaps: HashMap<Link, Vec<u8>> = HashMap::new();
    for k in &view.order {
        let t = &view.touched[k];
        let name = t.name.as_ref();
        let at = t
            .node
            .filter(|&id| zone.node(id).rrset(RType::NSEC).is_some())
            .and_then(|id| old.index(id, name));
        let kind = view.kind(name, true);
        let bitmap = matches!(kind, Kind::Apex | Kind::Normal | Kind::Cut).then(|| {
            let types = nsec_types(kind, view.types(name, true), &[RType::RRSIG, RType::NSEC]);
            let mut b = Vec::new();
            write_bitmap(&types, &mut b);
            b
        });
        match (at, bitmap) {
            (Some(i), Some(b)) => {
                bitmaps.insert(Link::Old(i), b);
            }
            (Some(i), None) => {
                removed.insert(i);
            }
            (None, Some(b)) => added.push((t.name.clone(), b)),
            (None, None) => {}
        }
    }
    added.sort_by(|a, b| a.0.as_ref().canonical_cmp(&b.0.as_ref()));
    for (j, (_, b)) in added.iter_mut().enumerate() {
        bitmaps.insert(Link::Added(j), std::mem::take(b));
    }
    let edit = Edit {
        old: &old,
        removed,
        added: added.into_iter().map(|(n, _)| n).collect(),
    };
    let key = |l: Link| -> Name {
        match l {
            Link::Old(i) => zone.node(ids[i]).name().to_name(),
            Link::Added(j) => edit.added[j].clone(),
        }
    };
    // The records to write: the touched names in the new chain and the predecessors of
    // the names that come and go.
    let mut writes: Vec<Link> = bitmaps.keys().copied().collect();
    let moved: Vec<Name> = edit
        .removed
        .iter()
        .map(|&i| key(Link::Old(i)))
        .chain(edit.added.iter().cloned())
        .collect();
    writes.extend(moved.iter().map(|n| edit.prev(n)));
    writes.sort_unstable_by_key(|l| match l {
        Link::Old(i) => (0, *i),
        Link::Added(j) => (1, *j),
    });
    writes.dedup();
    for link in writes {
        let owner = key(link);
        let node = match link {
            Link::Old(i) => Some(zone.node(ids[i])),
            Link::Added(_) => None,
        };
        let next = key(edit.next(&owner));
        let mut rdata = next.as_wire().to_vec();
        match bitmaps.get(&link) {
            Some(b) => rdata.extend_from_slice(b),
            None => {
                let set = node.and_then(|n| n.rrset(RType::NSEC));
                let old = set.and_then(|s| s.rdatas().next()).unwrap_or(&[]);
                rdata.extend_from_slice(old_bitmap(old));
            }
        }
        out.denial(&owner, RType::NSEC, ttl, rdata, node)?;
    }
    for &i in &edit.removed {
        out.remove_denial(zone.node(ids[i]), RType::NSEC);
    }
    Ok(())
}
