//! [`ZoneSet`]: the zones a server answers for, and which of them a query name falls in.

use super::Zone;
use shardns_wire::NameRef;
use std::collections::HashMap;
use std::sync::Arc;

/// The zones a server answers for. Zones are shared, so a reload can keep an unchanged or
/// failed zone's previous version without copying it.
#[derive(Debug, Default, Clone)]
pub struct ZoneSet {
    zones: Vec<Arc<Zone>>,
    /// Apex hash -> zone indices.
    by_apex: HashMap<u64, Vec<u32>>,
    /// Label counts that some apex has, so lookups only hash suffixes that can match.
    apex_labels: Vec<usize>,
}

impl ZoneSet {
    /// A set of zones; a later zone with the same apex replaces an earlier one.
    pub fn new(zones: Vec<Zone>) -> Self {
        Self::from_shared(zones.into_iter().map(Arc::new).collect())
    }

    /// A set of shared zones; a later zone with the same apex replaces an earlier one.
    pub fn from_shared(zones: Vec<Arc<Zone>>) -> Self {
        let mut kept: Vec<Arc<Zone>> = Vec::with_capacity(zones.len());
        for z in zones {
            if let Some(i) = kept.iter().position(|k| k.apex == z.apex) {
                kept[i] = z;
            } else {
                kept.push(z);
            }
        }
        let mut by_apex: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut apex_labels = Vec::new();
        for (i, z) in kept.iter().enumerate() {
            by_apex
                .entry(z.apex().hash_ci())
                .or_default()
                .push(i as u32);
            apex_labels.push(z.apex().label_count());
        }
        apex_labels.sort_unstable();
        apex_labels.dedup();
        Self {
            zones: kept,
            by_apex,
            apex_labels,
        }
    }

    /// The zone with the longest apex that `qname` is at or below: one hash lookup per
    /// distinct apex depth, never a scan over the zones.
    pub fn find(&self, qname: NameRef<'_>) -> Option<&Zone> {
        let labels = qname.label_count();
        for &depth in self.apex_labels.iter().rev() {
            if depth > labels {
                continue;
            }
            let suffix = qname.suffix(depth);
            if let Some(ids) = self.by_apex.get(&suffix.hash_ci()) {
                for &i in ids {
                    let z = &self.zones[i as usize];
                    if z.apex().eq_ci(&suffix) {
                        return Some(z);
                    }
                }
            }
        }
        None
    }

    /// The zones.
    pub fn zones(&self) -> &[Arc<Zone>] {
        &self.zones
    }

    /// The zone with exactly this apex.
    pub fn get(&self, apex: NameRef<'_>) -> Option<&Arc<Zone>> {
        self.by_apex
            .get(&apex.hash_ci())?
            .iter()
            .map(|&i| &self.zones[i as usize])
            .find(|z| z.apex().eq_ci(&apex))
    }
}
