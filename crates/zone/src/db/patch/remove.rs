//! Names a patch left with no records and no names below them, taken out: of the hash
//! table (linear probing's deletion) and of the node array (the last node moved into the
//! hole, which keeps every node after its parent).

use super::{is_wildcard, PatchWork};
use crate::db::store::Split;
use crate::db::{flags, NodeId};
use shardns_wire::name::hash_ci;
use std::collections::HashMap;

/// Removes the nodes of `emptied` (existing names now without records) that have no
/// children, then their empty ancestors left without children. Returns the nodes moved
/// (from, to), in order; `None` if a removal cannot keep every node after its parent (the
/// caller builds the zone in full).
pub(super) fn remove_empty(
    zone: &mut Split,
    emptied: &[NodeId],
    work: &mut PatchWork,
) -> Option<Vec<(NodeId, NodeId)>> {
    // The emptied names and their empty ancestors below the apex: their children counted in
    // one pass over every node.
    let mut children: HashMap<NodeId, u32> = HashMap::new();
    for &id in emptied {
        let mut id = id;
        while id != 0 && zone.nodes.get(id as usize).nrrsets == 0 {
            if children.insert(id, 0).is_some() {
                break;
            }
            id = zone.nodes.get(id as usize).parent;
        }
    }
    work.parents_scanned = true;
    for i in 0..zone.nodes.len() {
        if let Some(c) = children.get_mut(&zone.nodes.get(i).parent) {
            *c += 1;
        }
    }
    let mut todo: Vec<NodeId> = emptied
        .iter()
        .copied()
        .filter(|id| *id != 0 && children.get(id) == Some(&0))
        .collect();
    todo.sort_unstable();
    todo.dedup();
    let mut gone = Vec::new();
    while let Some(id) = todo.pop() {
        gone.push(id);
        let node = zone.nodes.get(id as usize);
        let parent = node.parent;
        if is_wildcard(zone.name_wire(id)) {
            let mut p = zone.nodes.get(parent as usize);
            p.flags &= !flags::WILDCARD_CHILD;
            zone.nodes.set(parent as usize, p);
        }
        if let Some(c) = children.get_mut(&parent) {
            *c -= 1;
            if *c == 0 && parent != 0 && zone.nodes.get(parent as usize).nrrsets == 0 {
                todo.push(parent);
            }
        }
    }
    // Out of the table and the array, the highest index first: the nodes above it that
    // remain are not going, so the last node is one that stays (or the one going).
    gone.sort_unstable_by(|a, b| b.cmp(a));
    let mut moved = Vec::new();
    for id in gone {
        let last = zone.nodes.len() as NodeId - 1;
        if id != last && zone.nodes.get(last as usize).parent >= id {
            return None;
        }
        table_remove(zone, id);
        // Its name stays in the array, unread.
        zone.dead += usize::from(zone.nodes.get(id as usize).name_len);
        if id != last {
            let slot = table_slot(zone, last);
            zone.table.set(slot, id + 1);
            zone.nodes.set(id as usize, zone.nodes.get(last as usize));
            moved.push((last, id));
        }
        zone.nodes.pop();
        work.nodes_removed += 1;
    }
    Some(moved)
}

fn node_hash(zone: &Split, id: NodeId) -> u64 {
    hash_ci(zone.name_wire(id))
}

/// The table slot that holds node `id`.
fn table_slot(zone: &Split, id: NodeId) -> usize {
    let mask = zone.table.len() - 1;
    let mut i = node_hash(zone, id) as usize & mask;
    while zone.table.get(i) != id + 1 {
        debug_assert!(zone.table.get(i) != 0, "node {id} is in the table");
        i = (i + 1) & mask;
    }
    i
}

/// Takes node `id` out of the table: linear probing's deletion, moving back each entry
/// after it that its probe would otherwise no longer reach.
fn table_remove(zone: &mut Split, id: NodeId) {
    let mask = zone.table.len() - 1;
    let mut hole = table_slot(zone, id);
    zone.table.set(hole, 0);
    let mut j = hole;
    loop {
        j = (j + 1) & mask;
        let slot = zone.table.get(j);
        if slot == 0 {
            return;
        }
        let home = node_hash(zone, slot - 1) as usize & mask;
        // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
        let reachable = if hole <= j {
            home > hole && home <= j
        } else {
            home > hole || home <= j
        };
        if !reachable {
            zone.table.set(hole, slot);
            zone.table.set(j, 0);
            hole = j;
        }
    }
}
