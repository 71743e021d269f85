//! The NSEC3 chain patched (RFC 5155 §7.1): the touched names and their ancestors (the
//! empty non-terminals a name makes or leaves) are hashed, those that join the chain get
//! an NSEC3 and their predecessor in hash order points to them, those that leave it lose
//! theirs, and the bitmaps that change are rewritten. With opt-out, unsigned delegations
//! (and the empty non-terminals only they make) stay out of the chain, as the full signer
//! leaves them. The predecessors are found in the zone's NSEC3 hashes in order (its denial
//! index), by a binary search.

use super::chain::{Edit, Link, Old};
use super::nsec::nsec_types;
use super::state::{key, Kind, View};
use super::{Out, ResignError};
use crate::db::NodeId;
use shardns_dnssec::chain::write_bitmap;
use shardns_dnssec::nsec3::{hash_label, HASH_LEN, LABEL_LEN, SHA1};
use shardns_dnssec::Nsec3Params;
use shardns_wire::{Name, NameRef, RType};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

type Hash = [u8; HASH_LEN];

/// The zone's NSEC3 hashes in order, with the node holding each record.
struct Hashes<'z>(&'z [(Hash, NodeId)]);

impl Old for Hashes<'_> {
    type Key = Hash;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn cmp_at(&self, i: usize, k: &Hash) -> Ordering {
        self.0[i].0.cmp(k)
    }
    fn cmp(a: &Hash, b: &Hash) -> Ordering {
        a.cmp(b)
    }
}

/// A name whose NSEC3 may change: a touched name or an ancestor of one.
struct Affected {
    name: Name,
    /// Its index in the old chain.
    old: Option<usize>,
    /// Its bitmap, if it is in the new chain.
    bitmap: Option<Vec<u8>>,
}

/// The touched names and their ancestors below the apex, deepest first.
fn affected_names(view: &View<'_>) -> Vec<Name> {
    let zone = view.zone;
    let apex = zone.apex();
    let mut seen = HashSet::new();
    let mut names = Vec::new();
    for k in &view.order {
        let mut cur = Some(view.touched[k].name.clone());
        while let Some(n) = cur {
            let r = n.as_ref();
            if !r.ends_with(&apex) || !seen.insert(key(r)) {
                break;
            }
            // Stored case for names the zone has.
            let stored = zone
                .find(r)
                .map_or_else(|| n.clone(), |node| node.name().to_name());
            cur = r.parent().filter(|_| !r.eq_ci(&apex)).map(|p| p.to_name());
            names.push(stored);
        }
    }
    names.sort_by_key(|n| std::cmp::Reverse(n.as_ref().label_count()));
    names
}

/// Which names are in the new chain, and their bitmaps: deepest first, so that an empty
/// non-terminal knows whether a name below it is in the chain.
fn membership(view: &mut View<'_>, names: &[Name], opt_out: bool) -> Vec<Affected> {
    let zone = view.zone;
    let chain = zone
        .denial
        .as_ref()
        .and_then(|d| d.nsec3.as_ref())
        .expect("checked: the zone has an NSEC3 chain");
    let index = |id: NodeId| chain.matching.get(id as usize).copied();
    let old_at = |name: NameRef<'_>| {
        zone.find(name)
            .and_then(|n| index(n.id()))
            .filter(|&i| i != u32::MAX)
            .map(|i| i as usize)
    };
    let keys: HashSet<Vec<u8>> = names.iter().map(|n| key(n.as_ref())).collect();
    // Affected children in the new chain, by their parent's key.
    let mut with_member: HashSet<Vec<u8>> = HashSet::new();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let r = name.as_ref();
        let kind = view.kind(r, true);
        let types = view.types(r, true);
        let has_ds = types.contains(&RType::DS);
        let bitmap_types = match kind {
            Kind::Apex | Kind::Normal => Some(nsec_types(kind, types, &[RType::RRSIG])),
            Kind::Cut if has_ds => Some(nsec_types(kind, types, &[RType::RRSIG])),
            Kind::Cut if !opt_out => Some(nsec_types(kind, types, &[])),
            Kind::Cut | Kind::Occluded => None,
            Kind::Empty => {
                let mut member = with_member.contains(&key(r));
                if !member {
                    if let Some(node) = zone.find(r) {
                        view.scan_children(false);
                        member = view.children(node.id()).iter().any(|&c| {
                            !keys.contains(&key(zone.node(c).name()))
                                && index(c).is_some_and(|i| i != u32::MAX)
                        });
                    }
                }
                member.then(Vec::new)
            }
        };
        let bitmap = bitmap_types.map(|t| {
            let mut b = Vec::new();
            write_bitmap(&t, &mut b);
            b
        });
        if bitmap.is_some() {
            if let Some(p) = r.parent() {
                with_member.insert(key(p));
            }
        }
        out.push(Affected {
            name: name.clone(),
            old: old_at(r),
            bitmap,
        });
    }
    out
}

/// The NSEC3 owner of `hash` in the zone at `apex` (its case).
fn owner(hash: &Hash, apex: NameRef<'_>) -> Name {
    let mut label = [0u8; LABEL_LEN];
    hash_label(hash, &mut label);
    let mut wire = Vec::with_capacity(1 + LABEL_LEN + apex.len());
    wire.push(LABEL_LEN as u8);
    wire.extend_from_slice(&label);
    wire.extend_from_slice(apex.as_wire());
    Name::from_wire(&wire).expect("a hash label below the apex is a name")
}

/// The bitmap of the NSEC3 rdata `rdata` (after the next hash).
fn old_bitmap(rdata: &[u8]) -> &[u8] {
    let salt = usize::from(rdata.get(4).copied().unwrap_or(0));
    let at = 5 + salt;
    let hash = usize::from(rdata.get(at).copied().unwrap_or(0));
    rdata.get(at + 1 + hash..).unwrap_or(&[])
}

/// Adds to `out` the NSEC3 records (and RRSIGs) the touched names change.
pub(super) fn patch(
    view: &mut View<'_>,
    out: &mut Out<'_>,
    ttl: u32,
    params: &Nsec3Params,
    opt_out: bool,
) -> Result<(), ResignError> {
    let names = affected_names(view);
    let affected = membership(view, &names, opt_out);
    let zone = view.zone;
    let chain = &zone
        .denial
        .as_ref()
        .and_then(|d| d.nsec3.as_ref())
        .ok_or(ResignError::NotSigned)?
        .chain;
    let old = Hashes(chain);
    let mut removed = HashSet::new();
    let mut added: Vec<(Hash, Name, Vec<u8>)> = Vec::new();
    let mut bitmaps: HashMap<Link, Vec<u8>> = HashMap::new();
    for a in affected {
        match (a.old, a.bitmap) {
            (Some(i), Some(b)) => {
                bitmaps.insert(Link::Old(i), b);
            }
            (Some(i), None) => {
                removed.insert(i);
            }
            (None, Some(b)) => {
                let mut h = [0u8; HASH_LEN];
                params.hash(a.name.as_ref(), &mut h);
                added.push((h, a.name, b));
            }
            (None, None) => {}
        }
    }
    added.sort_by_key(|a| a.0);
    if let Some(w) = added.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(ResignError::Nsec3Collision(w[0].1.clone(), w[1].1.clone()));
    }
    for (h, name, _) in &added {
        if let Ok(i) = chain.binary_search_by(|e| e.0.cmp(h)) {
            if !removed.contains(&i) {
                let other = zone.node(chain[i].1).name().to_name();
                return Err(ResignError::Nsec3Collision(name.clone(), other));
            }
        }
    }
    for (j, (_, _, b)) in added.iter_mut().enumerate() {
        bitmaps.insert(Link::Added(j), std::mem::take(b));
    }
    let edit = Edit {
        old: &old,
        removed,
        added: added.iter().map(|a| a.0).collect(),
    };
    let hash = |l: Link| -> Hash {
        match l {
            Link::Old(i) => chain[i].0,
            Link::Added(j) => edit.added[j],
        }
    };
    let mut writes: Vec<Link> = bitmaps.keys().copied().collect();
    let moved: Vec<Hash> = edit
        .removed
        .iter()
        .map(|&i| chain[i].0)
        .chain(edit.added.iter().copied())
        .collect();
    writes.extend(moved.iter().map(|h| edit.prev(h)));
    writes.sort_unstable_by_key(|l| match l {
        Link::Old(i) => (0, *i),
        Link::Added(j) => (1, *j),
    });
    writes.dedup();
    let apex = zone.apex_node().name();
    for link in writes {
        let (name, node) = match link {
            Link::Old(i) => {
                let node = zone.node(chain[i].1);
                (node.name().to_name(), Some(node))
            }
            Link::Added(j) => (owner(&edit.added[j], apex), None),
        };
        let mut rdata = vec![SHA1, u8::from(opt_out)];
        rdata.extend_from_slice(&params.iterations.to_be_bytes());
        rdata.push(params.salt.len() as u8);
        rdata.extend_from_slice(&params.salt);
        rdata.push(HASH_LEN as u8);
        rdata.extend_from_slice(&hash(edit.next(&hash(link))));
        match bitmaps.get(&link) {
            Some(b) => rdata.extend_from_slice(b),
            None => {
                let set = node.and_then(|n| n.rrset(RType::NSEC3));
                let old = set.and_then(|s| s.rdatas().next()).unwrap_or(&[]);
                rdata.extend_from_slice(old_bitmap(old));
            }
        }
        out.denial(&name, RType::NSEC3, ttl, rdata, node)?;
    }
    for &i in &edit.removed {
        out.remove_denial(zone.node(chain[i].1), RType::NSEC3);
    }
    Ok(())
}
