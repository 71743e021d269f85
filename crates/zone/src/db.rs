//! The immutable zone snapshot and the set of zones a server answers for.

use crate::scan::{Diag, LoadError, Scanned};
use shardns_wire::{Name, NameRef};

/// One zone, built once per load and then only read.
#[derive(Debug)]
pub struct Zone {
    apex: Name,
}

impl Zone {
    /// Builds a zone from scanned records, running the semantic checks.
    pub fn build(apex: Name, scanned: Scanned) -> Result<(Zone, Vec<Diag>), LoadError> {
        Ok((Zone { apex }, scanned.warnings))
    }
    /// The apex name.
    pub fn apex(&self) -> NameRef<'_> {
        self.apex.as_ref()
    }
}

/// The zones a server answers for.
#[derive(Debug, Default)]
pub struct ZoneSet {
    zones: Vec<Zone>,
}

impl ZoneSet {
    /// A set of zones (a later zone with the same apex replaces an earlier one).
    pub fn new(zones: Vec<Zone>) -> Self {
        Self { zones }
    }
    /// The zone with the longest apex that `qname` is at or below.
    pub fn find(&self, qname: NameRef<'_>) -> Option<&Zone> {
        self.zones.iter().filter(|z| qname.ends_with(&z.apex())).max_by_key(|z| z.apex().len())
    }
    /// The zones.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }
}
