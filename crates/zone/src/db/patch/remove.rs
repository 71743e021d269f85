//! Names a patch left with no records and no names below them, taken out: of the hash
//! table (linear probing's deletion) and of the node array (the last node moved into the
//! hole, which keeps every node after its parent).

use super::{is_wildcard, PatchWork};
use crate::db::store::Arrays;
use crate::db::{flags, NodeId};
use shardns_wire::name::hash_ci;
use std::collections::HashMap;

/// Removes the nodes of `emptied` (existing names now without records) that have no
/// children, then their empty ancestors left without children. Returns the nodes moved
/// (from, to), in order; `None` if a removal cannot keep every node after its parent (the
/// caller builds the zone in full).
pub(super) fn remove_empty(
    zone: &mut Arrays,
    emptied: &[NodeId],
    work: &mut PatchWork,
) -> Option<Vec<(NodeId, NodeId)>> {
    // The emptied names and their empty ancestors below the apex: their children counted in
    // one pass over every node.
    let mut children: HashMap<NodeId, u32> = HashMap::new();
    for &id in emptied {
        let mut id = id;
        while id != 0 && zone.nodes[id as usize].nrrsets == 0 {
            if children.insert(id, 0).is_some() {
                break;
            }
            id = zone.nodes[id as usize].parent;
        }
    }
    work.parents_scanned = true;
    for n in &zone.nodes {
        if let Some(c) = children.get_mut(&n.parent) {
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
        let node = zone.nodes[id as usize];
        let parent = node.parent;
        if is_wildcard(zone.name_wire(id)) {
            zone.nodes[parent as usize].flags &= !flags::WILDCARD_CHILD;
        }
        if let Some(c) = children.get_mut(&parent) {
            *c -= 1;
            if *c == 0 && parent != 0 && zone.nodes[parent as usize].nrrsets == 0 {
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
        if id != last && zone.nodes[last as usize].parent >= id {
            return None;
        }
        table_remove(zone, id);
        if id != last {
            let slot = table_slot(zone, last);
            zone.table[slot] = id + 1;
            zone.nodes[id as usize] = zone.nodes[last as usize];
            moved.push((last, id));
        }
        zone.nodes.pop();
        work.nodes_removed += 1;
    }
    Some(moved)
}

fn node_hash(zone: &Arrays, id: NodeId) -> u64 {
    hash_ci(zone.name_wire(id))
}

/// The table slot that holds node `id`.
fn table_slot(zone: &Arrays, id: NodeId) -> usize {
    let mask = zone.table.len() - 1;
    let mut i = node_hash(zone, id) as usize & mask;
    while zone.table[i] != id + 1 {
        debug_assert!(zone.table[i] != 0, "node {id} is in the table");
        i = (i + 1) & mask;
    }
    i
}

/// Takes node `id` out of the table: linear probing's deletion, moving back each entry
/// after it that its probe would otherwise no longer reach.
fn table_remove(zone: &mut Arrays, id: NodeId) {
    let mask = zone.table.len() - 1;
    let mut hole = table_slot(zone, id);
    zone.table[hole] = 0;
    let mut j = hole;
    loop {
        j = (j + 1) & mask;
        let slot = zone.table[j];
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
            zone.table[hole] = slot;
            zone.table[j] = 0;
            hole = j;
        }
    }
}
