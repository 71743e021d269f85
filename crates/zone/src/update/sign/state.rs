//! The names a change touches, before and after, and what each name is in either version
//! (apex, authoritative, a zone cut, occluded, empty): read from the touched names' own
//! RRsets and, for the rest, from the zone, by hash lookups up the names' ancestors.

use crate::db::{NodeId, NodeRef, Zone};
use crate::update::ChangeRecord;
use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::{Name, NameRef, RType};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One name's RRsets, the DNSSEC records left out: type -> (TTL, rdata as stored).
pub(super) type Sets = BTreeMap<RType, (u32, Vec<Vec<u8>>)>;

/// Types whose records are the signer's everywhere: never data of the unsigned zone.
pub(super) fn is_dnssec(rtype: RType) -> bool {
    matches!(rtype, RType::RRSIG | RType::NSEC | RType::NSEC3)
}

/// What a name is in one version of the zone (as the full signer classifies it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Apex,
    /// Authoritative data, not a cut.
    Normal,
    /// NS below the apex: only DS is signed.
    Cut,
    /// Below a cut or a DNAME: no RRSIG, no NSEC.
    Occluded,
    /// No data (an empty non-terminal, or no name at all).
    Empty,
}

impl Kind {
    /// Whether an RRset of `rtype` at a name of this kind is signed.
    pub(super) fn signs(self, rtype: RType) -> bool {
        match self {
            Kind::Apex | Kind::Normal => true,
            Kind::Cut => rtype == RType::DS,
            Kind::Occluded | Kind::Empty => false,
        }
    }
}

/// A name the change touches.
pub(super) struct Touched {
    /// As the zone stores it, or as the change first writes it.
    pub(super) name: Name,
    pub(super) node: Option<NodeId>,
    pub(super) old: Sets,
    pub(super) new: Sets,
}

/// The zone and the touched names.
pub(super) struct View<'z> {
    pub(super) zone: &'z Zone,
    pub(super) touched: HashMap<Vec<u8>, Touched>,
    /// Lower-cased touched names, in the change's order.
    pub(super) order: Vec<Vec<u8>>,
    /// Children of some nodes, from one pass over the zone's nodes (made when needed).
    children: Option<HashMap<NodeId, Vec<NodeId>>>,
}

/// A name lower-cased: the key of [`View::touched`].
pub(super) fn key(name: NameRef<'_>) -> Vec<u8> {
    let mut lower = [0u8; MAX_NAME_LEN];
    let n = name.lowercase_into(&mut lower);
    lower[..n].to_vec()
}

/// A node's RRsets without the DNSSEC records.
pub(super) fn node_sets(node: NodeRef<'_>) -> Sets {
    node.rrsets()
        .filter(|s| !is_dnssec(s.rtype))
        .map(|s| (s.rtype, (s.ttl, s.rdatas().map(<[u8]>::to_vec).collect())))
        .collect()
}

/// Whether two RRsets are the same: TTL and records (in any order).
pub(super) fn same_set(a: Option<&(u32, Vec<Vec<u8>>)>, b: Option<&(u32, Vec<Vec<u8>>)>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let (mut x, mut y) = (a.1.clone(), b.1.clone());
            x.sort();
            y.sort();
            a.0 == b.0 && x == y
        }
        _ => false,
    }
}

impl<'z> View<'z> {
    /// The touched names of `deleted` and `added` (the signer's records already left out),
    /// their RRsets before and after.
    pub(super) fn new(zone: &'z Zone, deleted: &[ChangeRecord], added: &[ChangeRecord]) -> Self {
        let mut view = View {
            zone,
            touched: HashMap::new(),
            order: Vec::new(),
            children: None,
        };
        for (owner, rtype, _, data) in deleted {
            let t = view.entry(owner.as_ref());
            if let Some(set) = t.new.get_mut(rtype) {
                if let Some(i) = set.1.iter().position(|d| d == data) {
                    set.1.remove(i);
                }
                if set.1.is_empty() {
                    t.new.remove(rtype);
                }
            }
        }
        for (owner, rtype, ttl, data) in added {
            let t = view.entry(owner.as_ref());
            let set = t.new.entry(*rtype).or_insert((*ttl, Vec::new()));
            set.0 = *ttl;
            if !set.1.contains(data) {
                set.1.push(data.clone());
            }
        }
        view
    }

    fn entry(&mut self, name: NameRef<'_>) -> &mut Touched {
        let k = key(name);
        if !self.touched.contains_key(&k) {
            let node = self.zone.find(name);
            let old = node.map(node_sets).unwrap_or_default();
            let t = Touched {
                name: node.map_or_else(|| name.to_name(), |n| n.name().to_name()),
                node: node.map(|n| n.id()),
                new: old.clone(),
                old,
            };
            self.order.push(k.clone());
            self.touched.insert(k.clone(), t);
        }
        self.touched.get_mut(&k).expect("inserted above")
    }

    /// The types at `name` in the new version (`new`) or the old one, DNSSEC types left out.
    pub(super) fn types(&self, name: NameRef<'_>, new: bool) -> Vec<RType> {
        if let Some(t) = self.touched.get(&key(name)) {
            let sets = if new { &t.new } else { &t.old };
            return sets.keys().copied().collect();
        }
        self.zone.find(name).map_or_else(Vec::new, |n| {
            n.rrsets()
                .map(|s| s.rtype)
                .filter(|&t| !is_dnssec(t))
                .collect()
        })
    }

    /// Whether a name holding `types` hides the names below it (a cut or a DNAME).
    fn occludes(&self, name: NameRef<'_>, types: &[RType]) -> bool {
        types.contains(&RType::DNAME)
            || (types.contains(&RType::NS) && !name.eq_ci(&self.zone.apex()))
    }

    /// What `name` is in the new version (`new`) or the old one.
    pub(super) fn kind(&self, name: NameRef<'_>, new: bool) -> Kind {
        let apex = self.zone.apex();
        let mut up = name.parent().filter(|_| !name.eq_ci(&apex));
        while let Some(p) = up.filter(|p| p.ends_with(&apex)) {
            if self.occludes(p, &self.types(p, new)) {
                return Kind::Occluded;
            }
            up = p.parent().filter(|_| !p.eq_ci(&apex));
        }
        let types = self.types(name, new);
        if name.eq_ci(&apex) {
            Kind::Apex
        } else if types.is_empty() {
            Kind::Empty
        } else if types.contains(&RType::NS) {
            Kind::Cut
        } else {
            Kind::Normal
        }
    }

    /// A cut or a DNAME made or unmade at an existing name changes every name below it
    /// (occluded, or no longer): those names are touched too, unchanged, so that their
    /// signatures and chain records follow what they now are. Finding them takes the
    /// children of every node (one pass over the zone's parent links); the work then
    /// follows the names below.
    pub(super) fn touch_occluded(&mut self) {
        let zone = self.zone;
        let mut stack = Vec::new();
        for t in self.touched.values() {
            let (Some(id), name) = (t.node, t.name.as_ref()) else {
                continue;
            };
            let old: Vec<RType> = t.old.keys().copied().collect();
            let new: Vec<RType> = t.new.keys().copied().collect();
            if self.occludes(name, &old) != self.occludes(name, &new) {
                stack.push(id);
            }
        }
        if stack.is_empty() {
            return;
        }
        self.scan_children(true);
        while let Some(id) = stack.pop() {
            for &c in self.children(id).to_vec().iter() {
                self.entry(zone.node(c).name());
                stack.push(c);
            }
        }
    }

    /// Finds the children of every node (`all`), or of the touched names' nodes and their
    /// ancestors, in one pass over the zone's nodes, once: a read of each node's parent
    /// link, no more.
    pub(super) fn scan_children(&mut self, all: bool) {
        if self.children.is_some() {
            return;
        }
        let mut wanted: HashSet<NodeId> = HashSet::new();
        let apex = self.zone.apex();
        for t in self.touched.values() {
            let mut up = Some(t.name.as_ref());
            while let Some(n) = up.filter(|n| n.ends_with(&apex)) {
                if let Some(node) = self.zone.find(n) {
                    wanted.insert(node.id());
                }
                up = n.parent().filter(|_| !n.eq_ci(&apex));
            }
        }
        // A sorted list, not a hash set: a few comparisons per node, no hashing.
        let mut wanted: Vec<NodeId> = wanted.into_iter().collect();
        wanted.sort_unstable();
        let mut map: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
        for id in 0..self.zone.node_count() as NodeId {
            if let Some(p) = self.zone.node(id).parent() {
                if all || wanted.binary_search(&p.id()).is_ok() {
                    map.entry(p.id()).or_default().push(id);
                }
            }
        }
        self.children = Some(map);
    }

    /// The children of `id` found by [`scan_children`](Self::scan_children).
    pub(super) fn children(&self, id: NodeId) -> &[NodeId] {
        self.children
            .as_ref()
            .and_then(|m| m.get(&id))
            .map_or(&[], Vec::as_slice)
    }
}
