//! The denial chain: the NSEC chain (RFC 4034 §4), one NSEC per authoritative name, or the
//! NSEC3 chain (RFC 5155 §7.1) with its empty non-terminals, hashed and sorted; their type
//! bitmaps ([`write_bitmap`]). Names and rdata go into the zone's record list.

use super::{offset, Kind, Node, SignError};
use crate::list::{RecordList, Rr};
use crate::nsec3::{hash_label, Nsec3Params, HASH_LEN, LABEL_LEN};
use shardns_wire::{Class, Name, NameRef, RType};
use std::collections::HashSet;

/// Appends a type bitmap (RFC 4034 §4.1.2) of `types`, sorted and without duplicates.
pub fn write_bitmap(types: &[RType], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < types.len() {
        let window = (types[i].0 >> 8) as u8;
        let start = out.len();
        out.extend_from_slice(&[window, 0]);
        out.resize(start + 2 + 32, 0);
        let mut len = 0;
        while i < types.len() && (types[i].0 >> 8) as u8 == window {
            let low = usize::from(types[i].0 & 0xff);
            out[start + 2 + low / 8] |= 0x80 >> (low % 8);
            len = low / 8 + 1;
            i += 1;
        }
        out[start + 1] = len as u8;
        out.truncate(start + 2 + len);
    }
}

/// The types of a node's bitmap, before RRSIG/NSEC are added.
fn node_types(items: &[Rr], node: &Node, types: &mut Vec<RType>) {
    types.clear();
    types.extend(
        items[node.start..node.end]
            .iter()
            .map(|r| r.rtype)
            .filter(|&t| node.kind != Kind::Cut || t == RType::NS || t == RType::DS),
    );
    types.dedup();
}

/// The NSEC chain: one NSEC per authoritative name, delegations included.
pub(super) fn nsec_chain(list: &mut RecordList, nodes: &[Node], class: Class, ttl: u32) -> Vec<Rr> {
    let names: Vec<&Node> = nodes.iter().filter(|n| n.kind != Kind::Occluded).collect();
    let mut out = RecordList::with_capacity(names.len(), 0);
    out.bytes = std::mem::take(&mut list.bytes);
    let mut types = Vec::new();
    let mut rdata = Vec::new();
    for (i, node) in names.iter().enumerate() {
        let next = names[(i + 1) % names.len()];
        node_types(&list.items, node, &mut types);
        types.extend([RType::RRSIG, RType::NSEC]);
        types.sort_unstable();
        types.dedup();
        rdata.clear();
        let next = list.items[next.start];
        rdata.extend_from_slice(out.owner(&next).as_wire());
        write_bitmap(&types, &mut rdata);
        let owner = list.items[node.start].owner;
        out.push(owner, RType::NSEC, class, ttl, &rdata);
    }
    list.bytes = out.bytes;
    out.items
}

/// The NSEC3 chain (RFC 5155 §7.1).
pub(super) fn nsec3_chain(
    apex: &Name,
    list: &mut RecordList,
    nodes: &[Node],
    params: &Nsec3Params,
    opt_out: bool,
    class: Class,
    ttl: u32,
) -> Result<Vec<Rr>, SignError> {
    // Names in the chain (offsets of their owners), with their bitmaps in one buffer.
    let mut names: Vec<(u32, u32, u32)> = Vec::new();
    let mut bitmaps: Vec<u8> = Vec::new();
    let mut types = Vec::new();
    for node in nodes {
        let has_ds = list.items[node.start..node.end]
            .iter()
            .any(|r| r.rtype == RType::DS);
        node_types(&list.items, node, &mut types);
        match node.kind {
            Kind::Occluded => continue,
            Kind::Cut if !has_ds && opt_out => continue,
            Kind::Cut if !has_ds => {}
            _ => types.push(RType::RRSIG),
        }
        types.sort_unstable();
        types.dedup();
        let start = offset(bitmaps.len());
        write_bitmap(&types, &mut bitmaps);
        names.push((list.items[node.start].owner, start, offset(bitmaps.len())));
    }
    // Empty non-terminals between those names and the apex.
    let mut ents: HashSet<Name> = HashSet::new();
    {
        let existing: HashSet<NameRef<'_>> = nodes
            .iter()
            .map(|n| list.owner(&list.items[n.start]))
            .collect();
        let apex_len = apex.as_wire().len();
        for &(at, _, _) in &names {
            let mut cur = owner_at(&list.bytes, at);
            while let Some(parent) = cur.parent() {
                if parent.len() <= apex_len || existing.contains(&parent) {
                    break;
                }
                if !ents.insert(parent.to_name()) {
                    break;
                }
                cur = parent;
            }
        }
    }
    let end = offset(bitmaps.len());
    for n in ents {
        let at = list.push_name(n.as_ref());
        names.push((at, end, end));
    }

    let mut hashed: Vec<([u8; HASH_LEN], usize)> = names
        .iter()
        .enumerate()
        .map(|(i, &(at, _, _))| {
            let mut h = [0u8; HASH_LEN];
            params.hash(owner_at(&list.bytes, at), &mut h);
            (h, i)
        })
        .collect();
    hashed.sort_unstable();
    if let Some(w) = hashed.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(SignError::Nsec3Collision(
            owner_at(&list.bytes, names[w[0].1].0).to_name(),
            owner_at(&list.bytes, names[w[1].1].0).to_name(),
        ));
    }
    let flags = u8::from(opt_out);
    let mut out = RecordList::with_capacity(hashed.len(), 0);
    out.bytes = std::mem::take(&mut list.bytes);
    let mut rdata = Vec::new();
    let mut owner = Vec::with_capacity(1 + LABEL_LEN + apex.as_wire().len());
    for (i, (hash, idx)) in hashed.iter().enumerate() {
        let next = &hashed[(i + 1) % hashed.len()].0;
        rdata.clear();
        rdata.extend_from_slice(&[crate::nsec3::SHA1, flags]);
        rdata.extend_from_slice(&params.iterations.to_be_bytes());
        rdata.push(params.salt.len() as u8);
        rdata.extend_from_slice(&params.salt);
        rdata.push(HASH_LEN as u8);
        rdata.extend_from_slice(next);
        let (_, a, b) = names[*idx];
        rdata.extend_from_slice(&bitmaps[a as usize..b as usize]);
        let mut label = [0u8; LABEL_LEN];
        hash_label(hash, &mut label);
        owner.clear();
        owner.push(LABEL_LEN as u8);
        owner.extend_from_slice(&label);
        owner.extend_from_slice(apex.as_wire());
        let name = NameRef::from_wire(&owner).map_err(|_| SignError::OutOfZone(apex.clone()))?;
        let at = out.push_name(name);
        out.push(at, RType::NSEC3, class, ttl, &rdata);
    }
    list.bytes = out.bytes;
    Ok(out.items)
}

/// The name at `at` in `bytes`.
fn owner_at(bytes: &[u8], at: u32) -> NameRef<'_> {
    NameRef::from_wire_prefix(&bytes[at as usize..])
        .expect("a record list holds valid names")
        .0
}
