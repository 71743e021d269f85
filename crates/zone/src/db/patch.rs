//! A new version of a zone from an old one and a set of record changes (an IXFR's
//! differences), without building the zone again: the old version's arrays are copied as
//! they are (one `memcpy` each), the RRsets of the changed names are appended and their
//! nodes pointed at them, new names are appended and put in the hash table. Only the
//! changed names are merged, checked and flagged, so the work apart from the copy is
//! O(changes), not O(zone); the old RRsets of a changed name stay in the arrays unused until
//! the next full build.
//!
//! A name left with no records stays as an empty non-terminal if names lie below it (one
//! pass over the nodes' parents tells), and goes otherwise: out of the hash table, and out of
//! the node array by moving the last node into its place. That keeps the invariant the move
//! needs: every node's index is greater than its parent's (nodes are interned parents
//! first), so the last node has no children and no other node holds its index. That removal
//! is the submodule `remove`'s.
//!
//! A zone signed with NSEC keeps its denial index, the NSEC owners in canonical order,
//! patched: the names that lost their NSEC taken out, those that gained one put in, each
//! found by a binary search (the signer's warnings about the chain are not repeated).
//!
//! The RRsets a patch replaces stay in the arrays, unused; once they are more than half of
//! those in use, the next IXFR builds the zone in full, which leaves none.
//!
//! What it does not do (the caller then builds the zone in full, [`Zone::build`]): zones
//! signed with NSEC3 (their index holds the hash of every name), a zone that becomes signed
//! or unsigned, a change that
//! makes or unmakes a zone cut or a DNAME at an existing name (the flags of every name below
//! it change), and a removal whose move would put a node before its parent.

mod remove;

use super::build::node_checks;
use super::build::set_key;
use super::denial::Denial;
use super::store::{Node, Paged, RRsetEntry, Split, Store, Zone, SET_SIZE};
use super::{flags, NodeId, NONE};
use crate::error::Error;
use crate::scan::Diag;
use remove::remove_empty;
use shardns_wire::name::{hash_ci, MAX_NAME_LEN};
use shardns_wire::{rdata, NameRef, RType};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::PathBuf;

/// What a patch did, to check that its work follows the changes and not the zone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PatchWork {
    /// Existing names whose RRsets were merged again.
    pub nodes_changed: u32,
    /// Names added (with their missing ancestors).
    pub nodes_added: u32,
    /// RRsets written.
    pub rrsets_written: u32,
    /// Names removed (left with no records and no names below them).
    pub nodes_removed: u32,
    /// The hash table had to grow (rehashing every name: O(zone), rare).
    pub table_grown: bool,
    /// A name was left with no records: one pass over every node's parent to count the
    /// names below it (a read, O(zone); nothing is merged or built).
    pub parents_scanned: bool,
    /// What patches left unused was copied out (O(zone) copies, once every sixteenth of
    /// the zone's size in changes).
    pub compacted: bool,
}

/// The changes at one owner name.
struct Owner<'a> {
    name: NameRef<'a>,
    /// (type, rdata as the old version holds it).
    deleted: Vec<(RType, &'a [u8])>,
    /// (type, TTL, rdata).
    added: Vec<(RType, u32, &'a [u8])>,
}

/// One name's new RRsets: (set key, TTL, records).
type Sets<'a> = Vec<(u32, u32, Vec<&'a [u8]>)>;

/// One changed name: its node if it exists, its name, its new RRsets.
type Change<'a> = (Option<NodeId>, NameRef<'a>, Sets<'a>);

/// Flags a node has because of its own records (the rest come from its ancestors or
/// children).
const OWN: u8 = flags::DELEGATION | flags::DNAME | flags::CNAME | flags::NSEC3_ONLY;

impl Zone {
    /// The zone with the records `deleted` (owner, type, rdata as stored here) removed, the
    /// records `added` (owner, type, TTL, rdata) added and the apex SOA replaced by `soa`
    /// (TTL, rdata). `Ok(None)` when the change is one this cannot do (see the module
    /// documentation): build the zone in full instead. The errors are those
    /// [`Zone::build`] would find in the changed names (CNAME beside other data, an SOA
    /// away from the apex, rdata that does not parse), the warnings its TTL warnings.
    #[allow(clippy::type_complexity)]
    pub(crate) fn patch<'a>(
        &'a self,
        deleted: impl IntoIterator<Item = (NameRef<'a>, RType, &'a [u8])>,
        added: impl IntoIterator<Item = (NameRef<'a>, RType, u32, &'a [u8])>,
        soa: (u32, &'a [u8]),
    ) -> Result<Option<(Zone, Vec<Diag>, PatchWork)>, Error> {
        self.patch_with(deleted, added, soa, true)
    }

    /// [`Zone::patch`], the result left split when `pack` is false (a version patched again
    /// soon, as dynamic updates do, is not packed only to be unpacked:
    /// [`Zone::pack_small`] packs it).
    #[allow(clippy::type_complexity)]
    pub(crate) fn patch_with<'a>(
        &'a self,
        deleted: impl IntoIterator<Item = (NameRef<'a>, RType, &'a [u8])>,
        added: impl IntoIterator<Item = (NameRef<'a>, RType, u32, &'a [u8])>,
        soa: (u32, &'a [u8]),
        pack: bool,
    ) -> Result<Option<(Zone, Vec<Diag>, PatchWork)>, Error> {
        // A signed zone with NSEC keeps its denial index patched too; NSEC3 (an index of
        // hashes over every name) takes the full build.
        let signed = self.denial.is_some();
        if self.unavailable
            || self.denial.as_ref().is_some_and(|d| d.nsec3.is_some())
            || (signed && self.apex_node().rrset(RType::NSEC3PARAM).is_some())
        {
            return Ok(None);
        }
        let label = PathBuf::from(format!("<IXFR of {}>", self.apex));
        let diag = |message: String| Diag {
            file: label.clone(),
            line: 0,
            message,
        };

        // 1. The changes grouped by owner (case-insensitively).
        let Some(owners) = self.group_changes(deleted, added, soa, signed) else {
            return Ok(None);
        };

        // 2. Each changed name's new RRsets, as `Builder` merges them.
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let (changes, extra_nodes) = self.merge_changes(&owners, &diag, &mut errors, &mut warnings);

        // 3. The arrays: the old version's pages shared, each copied when first written (a
        //    packed zone's copied; the result is packed again if small, see the end).
        let mut work = PatchWork::default();
        let mut a = self.to_split();
        if (a.nodes.len() + extra_nodes) * 2 > a.table.len() {
            let mut size = a.table.len().max(16);
            while (a.nodes.len() + extra_nodes) * 2 > size {
                size *= 2;
            }
            a.table = Paged::from_vec(vec![0; size], true);
            for id in 0..a.nodes.len() as NodeId {
                let h = hash_ci(a.name_wire(id));
                a.insert_slot(h, id);
            }
            work.table_grown = true;
        }

        // 4. The changed names' RRsets appended, their nodes pointed at them.
        let first_new = a.nodes.len() as NodeId;
        let Some(nsec_changes) =
            self.write_changes(&mut a, &changes, first_new, &diag, &mut errors, &mut work)
        else {
            return Ok(None);
        };
        inherit_flags(&mut a, first_new);
        work.nodes_added = a.nodes.len() as u32 - first_new;
        let mut zone = Zone {
            apex: self.apex.clone(),
            store: Store::Split(Box::new(a)),
            soa_ttl: self.soa_ttl,
            soa_minimum: self.soa_minimum,
            denial: None,
            unavailable: false,
        };

        // 5. Names left with no records: those without names below them go (and so does an
        //    empty ancestor left with none).
        let emptied: Vec<NodeId> = changes
            .iter()
            .filter(|c| c.2.is_empty())
            .filter_map(|c| c.0)
            .collect();
        let mut nsec = self
            .denial
            .as_ref()
            .map(|d| nsec_order(&zone, &d.nsec, &nsec_changes));
        if !emptied.is_empty() {
            let Some(moved) = remove_empty(zone.split_mut(), &emptied, &mut work) else {
                return Ok(None);
            };
            if let Some(nsec) = &mut nsec {
                renumber(&zone, nsec, &moved);
            }
        }
        if let Some(nsec) = nsec {
            // Still signed (the apex SOA has a signature), as the full build decides.
            let apex = zone.apex_node();
            if apex
                .rrset(RType::SOA)
                .is_none_or(|soa| apex.signatures(&soa).is_none())
            {
                return Ok(None);
            }
            zone.denial = Some(Box::new(Denial { nsec, nsec3: None }));
        }

        // 6. The apex: one SOA (its TTL and MINIMUM for negative answers), some NS.
        apex_checks(&mut zone, &diag, &mut errors);
        if errors.is_empty() {
            // What patches left unused is copied out once it is a sixteenth of the zone,
            // which bounds what a long run of updates adds to its memory.
            let a = zone.split_mut();
            if a.dead > a.size() / 16 {
                *a = a.compacted();
                work.compacted = true;
            }
            // A small zone is served packed, as a full build would leave it.
            if pack {
                zone.pack();
            }
            Ok(Some((zone, warnings, work)))
        } else {
            Err(Error::Invalid { errors })
        }
    }

    /// Step 1 of [`Zone::patch`]: the changes grouped by owner (case-insensitively), the
    /// apex SOA replaced among them. `None` when an added record may make the zone signed
    /// or change its chain (then it is built in full).
    #[inline]
    fn group_changes<'a>(
        &'a self,
        deleted: impl IntoIterator<Item = (NameRef<'a>, RType, &'a [u8])>,
        added: impl IntoIterator<Item = (NameRef<'a>, RType, u32, &'a [u8])>,
        soa: (u32, &'a [u8]),
        signed: bool,
    ) -> Option<HashMap<Vec<u8>, Owner<'a>>> {
        let mut owners: HashMap<Vec<u8>, Owner<'a>> = HashMap::new();
        fn group<'o, 'a>(
            owners: &'o mut HashMap<Vec<u8>, Owner<'a>>,
            name: NameRef<'a>,
        ) -> &'o mut Owner<'a> {
            let mut lower = [0u8; MAX_NAME_LEN];
            let n = name.lowercase_into(&mut lower);
            owners.entry(lower[..n].to_vec()).or_insert(Owner {
                name,
                deleted: Vec::new(),
                added: Vec::new(),
            })
        }
        let old_soa = self
            .apex_node()
            .rrset(RType::SOA)
            .expect("a built zone has an SOA");
        let old_soa_data = old_soa
            .rdatas()
            .next()
            .expect("an SOA RRset has one record");
        let apex_name = self.apex_node().name();
        group(&mut owners, apex_name)
            .deleted
            .push((RType::SOA, old_soa_data));
        group(&mut owners, apex_name)
            .added
            .push((RType::SOA, soa.0, soa.1));
        for (name, rtype, data) in deleted {
            group(&mut owners, name).deleted.push((rtype, data));
        }
        for (name, rtype, ttl, data) in added {
            if (rtype == RType::RRSIG && !signed) || rtype == RType::NSEC3PARAM {
                // The zone may become signed, or change its chain: its denial index is
                // built over every name.
                return None;
            }
            group(&mut owners, name).added.push((rtype, ttl, data));
        }
        Some(owners)
    }

    /// Step 2 of [`Zone::patch`]: each changed name's new RRsets, as `Builder` merges them:
    /// by set key, the records in order (the old version's first), the first record's TTL;
    /// parents before children. Also how many names they add.
    #[inline]
    fn merge_changes<'a>(
        &'a self,
        owners: &HashMap<Vec<u8>, Owner<'a>>,
        diag: &impl Fn(String) -> Diag,
        errors: &mut Vec<Diag>,
        warnings: &mut Vec<Diag>,
    ) -> (Vec<Change<'a>>, usize) {
        let mut changes: Vec<Change<'a>> = Vec::new();
        let mut extra_nodes = 0usize;
        let mut recs: Vec<(u32, u32, &'a [u8])> = Vec::new();
        for owner in owners.values() {
            let node = self.find(owner.name);
            recs.clear();
            if let Some(node) = node {
                for set in node.rrsets() {
                    for data in set.rdatas() {
                        if owner
                            .deleted
                            .iter()
                            .any(|&(t, d)| t == set.rtype && d == data)
                        {
                            continue;
                        }
                        recs.push((set_key(set.rtype, data), set.ttl, data));
                    }
                }
            }
            for &(rtype, ttl, data) in &owner.added {
                if let Err(e) = rdata::validate(rtype, data) {
                    errors.push(diag(format!("{} {rtype}: {e}", owner.name)));
                    continue;
                }
                recs.push((set_key(rtype, data), ttl, data));
            }
            recs.sort_by_key(|r| r.0);
            let mut sets: Sets<'a> = Vec::new();
            for &(key, ttl, data) in &recs {
                match sets.last_mut() {
                    Some((k, set_ttl, records)) if *k == key => {
                        if records.contains(&data) {
                            continue;
                        }
                        if ttl != *set_ttl {
                            warnings.push(diag(format!(
                                "{} {}: TTL {ttl} differs from the RRset's TTL {set_ttl}; using {set_ttl} (RFC 2181 §5.2)",
                                owner.name,
                                key_type(key)
                            )));
                        }
                        if records.len() == usize::from(u16::MAX) {
                            errors.push(diag(format!(
                                "{}: too many {} records at one name",
                                owner.name,
                                key_type(key)
                            )));
                            continue;
                        }
                        records.push(data);
                    }
                    _ => sets.push((key, ttl, vec![data])),
                }
            }
            if sets.is_empty() && node.is_none() {
                continue;
            }
            if node.is_none() {
                let mut name = owner.name;
                while self.find(name).is_none() {
                    extra_nodes += 1;
                    name = name.parent().expect("the apex exists");
                }
            }
            changes.push((node.map(|n| n.id()), owner.name, sets));
        }
        // Parents before children, so that a new node finds its parent's flags set.
        changes.sort_by_key(|c| (c.1.label_count(), c.0));
        (changes, extra_nodes)
    }

    /// Step 4 of [`Zone::patch`]: the changed names' RRsets appended to `a`, their nodes
    /// (new ones from `first_new` on) pointed at them and checked. Returns the nodes whose
    /// NSEC came or went (node, had one, has one), for the denial index; `None` when a cut
    /// or a DNAME is made or unmade above existing names (then the zone is built in full).
    #[inline]
    fn write_changes(
        &self,
        a: &mut Split,
        changes: &[Change<'_>],
        first_new: NodeId,
        diag: &impl Fn(String) -> Diag,
        errors: &mut Vec<Diag>,
        work: &mut PatchWork,
    ) -> Option<Vec<(NodeId, bool, bool)>> {
        // (node, had an NSEC, has one), for the denial index.
        let mut nsec_changes: Vec<(NodeId, bool, bool)> = Vec::new();
        let mut scratch = Vec::new();
        for (id, name, sets) in changes {
            let had_nsec = id.is_some_and(|id| self.node(id).rrset(RType::NSEC).is_some());
            let has_nsec = sets.iter().any(|s| s.0 == set_key(RType::NSEC, &[]));
            let id = match id {
                Some(id) => {
                    work.nodes_changed += 1;
                    *id
                }
                None => intern(a, self.apex.as_wire().len(), *name),
            };
            if had_nsec != has_nsec {
                nsec_changes.push((id, had_nsec, has_nsec));
            }
            let mut node = a.nodes.get(id as usize);
            // The RRsets replaced stay in the arrays, unread.
            for i in node.rrsets..node.rrsets + u32::from(node.nrrsets) {
                a.dead += SET_SIZE + a.set_len(i);
            }
            let start = a.rrsets.len();
            let mut entries = Vec::with_capacity(sets.len());
            for (key, ttl, records) in sets {
                scratch.clear();
                for d in records {
                    scratch.extend_from_slice(&(d.len() as u16).to_be_bytes());
                    scratch.extend_from_slice(d);
                }
                entries.push(RRsetEntry {
                    rtype: key_type(*key),
                    count: records.len() as u16,
                    ttl: *ttl,
                    rdata: a.rdata.push_item(&scratch),
                });
            }
            entries.iter().for_each(|&e| a.rrsets.push(e));
            work.rrsets_written += sets.len() as u32;
            let (f, problems) = node_checks(&entries, id == 0);
            for p in problems.into_iter().flatten() {
                errors.push(diag(format!("{name}: {p}")));
            }
            if id < first_new && (node.flags ^ f) & (flags::DELEGATION | flags::DNAME) != 0 {
                // A cut or a DNAME made or unmade above existing names.
                return None;
            }
            node.rrsets = start as u32;
            node.nrrsets = sets.len() as u16;
            node.flags = node.flags & !OWN | f;
            a.nodes.set(id as usize, node);
        }
        Some(nsec_changes)
    }
}

/// Step 4 of [`Zone::patch`], continued: the new nodes' (from `first_new` on) inherited
/// flags, parents first (a node is interned after its parent), and their parents' wildcard
/// flag.
#[inline]
fn inherit_flags(a: &mut Split, first_new: NodeId) {
    for id in first_new as usize..a.nodes.len() {
        let mut node = a.nodes.get(id);
        let mut p = a.nodes.get(node.parent as usize);
        if p.flags & (flags::DELEGATION | flags::BELOW_CUT) != 0 {
            node.flags |= flags::BELOW_CUT;
        }
        if p.flags & (flags::DNAME | flags::BELOW_DNAME) != 0 {
            node.flags |= flags::BELOW_DNAME;
        }
        a.nodes.set(id, node);
        p.flags &= !flags::NSEC3_ONLY;
        if is_wildcard(a.name_wire(id as NodeId)) {
            p.flags |= flags::WILDCARD_CHILD;
        }
        a.nodes.set(node.parent as usize, p);
    }
}

/// Step 6 of [`Zone::patch`]: the apex has one SOA (its TTL and MINIMUM kept for negative
/// answers) and some NS.
#[inline]
fn apex_checks(zone: &mut Zone, diag: &impl Fn(String) -> Diag, errors: &mut Vec<Diag>) {
    let soa = zone.apex_node().rrset(RType::SOA).map(|s| {
        let data = s.rdatas().next().unwrap_or(&[]);
        let minimum = data.len().checked_sub(4).map_or(0, |i| {
            u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]])
        });
        (s.len(), s.ttl, minimum)
    });
    match soa {
        Some((1, ttl, minimum)) => {
            zone.soa_ttl = ttl;
            zone.soa_minimum = minimum;
        }
        _ => errors.push(diag(format!("{}: more than one SOA record", zone.apex))),
    }
    if zone.apex_node().rrset(RType::NS).is_none() {
        errors.push(diag(format!(
            "{}: no NS records at the zone apex",
            zone.apex
        )));
    }
}

fn key_type(key: u32) -> RType {
    if key & 1 == 1 {
        RType::RRSIG
    } else {
        RType((key >> 1) as u16)
    }
}

/// True if the leftmost label of a name in wire form is `*` (RFC 4592).
fn is_wildcard(wire: &[u8]) -> bool {
    wire.starts_with(&[1, b'*'])
}

/// The node for `name`, added with its missing ancestors (the apex, `apex_len` octets long,
/// always exists).
fn intern(zone: &mut Split, apex_len: usize, name: NameRef<'_>) -> NodeId {
    let h = name.hash_ci();
    if let Some(id) = zone.find_hashed(name, h) {
        return id;
    }
    let parent = match name.parent() {
        Some(p) if name.len() > apex_len => intern(zone, apex_len, p),
        _ => NONE,
    };
    let id = zone.nodes.len() as NodeId;
    zone.nodes.push(Node {
        name: zone.names.push_item(name.as_wire()),
        rrsets: zone.rrsets.len() as u32,
        parent,
        hash: (h >> 32) as u32,
        nrrsets: 0,
        name_len: name.len() as u8,
        flags: 0,
    });
    zone.insert_slot(h, id);
    id
}

/// The NSEC owners in canonical order after the changes: `old` (the old version's, whose
/// indices are the same in `zone` before any removal) without the nodes that lost their
/// NSEC, with those that gained one, each found by a binary search.
fn nsec_order(zone: &Zone, old: &[NodeId], changes: &[(NodeId, bool, bool)]) -> Vec<NodeId> {
    let name_cmp = |a: NodeId, b: NodeId| zone.node(a).name().canonical_cmp(&zone.node(b).name());
    let at = |id: NodeId| old.partition_point(|&o| name_cmp(o, id) == Ordering::Less);
    let mut lost: Vec<usize> = changes.iter().filter(|c| c.1).map(|c| at(c.0)).collect();
    lost.sort_unstable();
    let mut gained: Vec<(usize, NodeId)> = changes
        .iter()
        .filter(|c| c.2)
        .map(|c| (at(c.0), c.0))
        .collect();
    gained.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| name_cmp(a.1, b.1)));
    let mut out = Vec::with_capacity(old.len() + gained.len());
    let mut lost = lost.into_iter().peekable();
    let mut copy = |out: &mut Vec<NodeId>, mut from: usize, to: usize| {
        while let Some(&l) = lost.peek().filter(|&&l| l < to) {
            out.extend_from_slice(&old[from..l]);
            from = l + 1;
            lost.next();
        }
        out.extend_from_slice(&old[from.min(to)..to]);
    };
    let mut done = 0;
    for (pos, id) in gained {
        copy(&mut out, done, pos);
        done = done.max(pos);
        out.push(id);
    }
    copy(&mut out, done, old.len());
    out
}

/// Puts the new indices of the nodes a removal moved into the NSEC order (found by name; the
/// other entries' indices did not change).
fn renumber(zone: &Zone, nsec: &mut [NodeId], moved: &[(NodeId, NodeId)]) {
    // Each moved node's index before the removals -> its index now.
    let mut now: HashMap<NodeId, NodeId> = HashMap::new();
    let mut before: HashMap<NodeId, NodeId> = HashMap::new();
    for &(from, to) in moved {
        let first = before.remove(&from).unwrap_or(from);
        now.insert(first, to);
        before.insert(to, first);
    }
    let current = |id: NodeId| now.get(&id).copied().unwrap_or(id);
    for &id in now.values() {
        if zone.node(id).rrset(RType::NSEC).is_none() {
            continue;
        }
        let name = zone.node(id).name();
        let i = nsec.partition_point(|&o| {
            zone.node(current(o)).name().canonical_cmp(&name) == Ordering::Less
        });
        nsec[i] = id;
    }
}
