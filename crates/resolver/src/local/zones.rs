//! One set of local zones and their data, and the lookup of the closest enclosing zone.

use std::collections::HashMap;

use shardns_wire::{Name, NameRef, RType};

use super::{defaults, LocalRecord, ZoneKind, ZoneSetConfig};

/// One local zone.
#[derive(Debug)]
pub(crate) struct Zone {
    pub(crate) apex: Name,
    pub(crate) kind: ZoneKind,
    /// The apex SOA for negative answers: TTL cut to the SOA's minimum (RFC 2308 §3), rdata.
    pub(crate) soa: Option<(u32, Box<[u8]>)>,
}

/// One RRset of local data.
#[derive(Debug)]
pub(crate) struct Set {
    pub(crate) rtype: RType,
    pub(crate) ttl: u32,
    pub(crate) rdatas: Vec<Box<[u8]>>,
}

/// What a lower-cased name is in the table.
#[derive(Debug, Default)]
struct Entry {
    /// The zone with this apex (index into `zones`).
    zone: Option<u32>,
    /// Some zone's apex is below this name: the walk goes on.
    above_zone: bool,
    /// Local data at this name; `Some(empty)`: an empty non-terminal of local data.
    sets: Option<Vec<Set>>,
}

/// Zones and data, keyed by lower-cased wire name.
#[derive(Debug, Default)]
pub(crate) struct LocalZones {
    zones: Vec<Zone>,
    names: HashMap<Box<[u8]>, Entry>,
}

fn key(name: NameRef<'_>) -> Box<[u8]> {
    name.as_wire().iter().map(u8::to_ascii_lowercase).collect()
}

impl LocalZones {
    pub(crate) fn build(config: &ZoneSetConfig) -> Result<Self, String> {
        let mut zones: Vec<(Name, ZoneKind)> = Vec::new();
        for (name, kind) in &config.zones {
            // A later line for the same apex replaces the earlier one.
            zones.retain(|(n, _)| !n.as_ref().eq_ci(&name.as_ref()));
            zones.push((name.clone(), *kind));
        }
        let mut data = config.data.clone();
        if config.defaults {
            for (apex, kind, records) in defaults::zones() {
                if zones.iter().any(|(n, _)| n.as_ref().eq_ci(&apex.as_ref())) {
                    continue; // named here: any type, nodefault included, replaces it
                }
                zones.push((apex, kind));
                data.extend(records);
            }
        }
        zones.retain(|(_, k)| *k != ZoneKind::NoDefault);
        let mut out = Self::default();
        for (apex, kind) in zones {
            out.add_zone(apex, kind);
        }
        // Local data outside every zone makes a transparent zone at its owner.
        for r in &data {
            if out.find(r.owner.as_ref()).is_none() {
                out.add_zone(r.owner.clone(), ZoneKind::Transparent);
            }
        }
        for r in &data {
            out.add_record(r)?;
        }
        Ok(out)
    }

    pub(crate) fn zone_count(&self) -> usize {
        self.zones.len()
    }

    fn add_zone(&mut self, apex: Name, kind: ZoneKind) {
        let index = self.zones.len() as u32;
        self.names.entry(key(apex.as_ref())).or_default().zone = Some(index);
        let mut up = apex.as_ref().parent();
        while let Some(n) = up {
            self.names.entry(key(n)).or_default().above_zone = true;
            up = n.parent();
        }
        self.zones.push(Zone {
            apex,
            kind,
            soa: None,
        });
    }

    fn add_record(&mut self, r: &LocalRecord) -> Result<(), String> {
        let zone = self.find(r.owner.as_ref()).expect("a zone was made for it");
        let zi = self.names[&key(zone.apex.as_ref())].zone.expect("apex") as usize;
        let apex = self.zones[zi].apex.clone();
        let kind = self.zones[zi].kind;
        let at_apex = r.owner.as_ref().eq_ci(&apex.as_ref());
        if kind.redirects() && !at_apex {
            return Err(format!(
                "local data {} is below redirect zone {apex}: only the apex's data is used",
                r.owner
            ));
        }
        if r.rtype == RType::SOA && at_apex {
            let ttl = soa_minimum(&r.rdata).map_or(r.ttl, |m| m.min(r.ttl));
            self.zones[zi].soa = Some((ttl, r.rdata.clone().into_boxed_slice()));
        }
        // Empty non-terminals between the owner and the apex exist (NODATA, not NXDOMAIN).
        let mut up = r.owner.as_ref().parent();
        while let Some(n) = up.filter(|n| n.ends_with(&apex.as_ref()) && !n.eq_ci(&apex.as_ref())) {
            self.names
                .entry(key(n))
                .or_default()
                .sets
                .get_or_insert_with(Vec::new);
            up = n.parent();
        }
        let sets = self
            .names
            .entry(key(r.owner.as_ref()))
            .or_default()
            .sets
            .get_or_insert_with(Vec::new);
        let cname = sets.iter().any(|s| s.rtype == RType::CNAME);
        if (r.rtype == RType::CNAME && sets.iter().any(|s| s.rtype != RType::CNAME))
            || (cname && r.rtype != RType::CNAME)
        {
            return Err(format!("local data {}: a CNAME beside other data", r.owner));
        }
        match sets.iter_mut().find(|s| s.rtype == r.rtype) {
            Some(s) => {
                if r.rtype == RType::CNAME {
                    return Err(format!("local data {}: two CNAME records", r.owner));
                }
                // An RRset has one TTL (RFC 2181 §5.2): the first record's.
                if !s.rdatas.iter().any(|d| **d == *r.rdata) {
                    s.rdatas.push(r.rdata.clone().into_boxed_slice());
                }
            }
            None => sets.push(Set {
                rtype: r.rtype,
                ttl: r.ttl,
                rdatas: vec![r.rdata.clone().into_boxed_slice()],
            }),
        }
        Ok(())
    }

    /// The closest zone at or above `qname`: the walk goes down from the top label while
    /// the names are zones or above one.
    pub(crate) fn find(&self, qname: NameRef<'_>) -> Option<&Zone> {
        if self.zones.is_empty() {
            return None;
        }
        let mut lower = [0u8; 255];
        let len = qname.lowercase_into(&mut lower);
        let wire = &lower[..len];
        // Label starts, top label last.
        let mut starts = [0u8; 128];
        let mut n = 0;
        let mut at = 0;
        while at < len && wire[at] != 0 {
            starts[n] = at as u8;
            n += 1;
            at += 1 + usize::from(wire[at]);
        }
        let mut best = self.names.get(&wire[len - 1..]).and_then(|e| e.zone);
        for &s in starts[..n].iter().rev() {
            let Some(e) = self.names.get(&wire[usize::from(s)..]) else {
                break;
            };
            if e.zone.is_some() {
                best = e.zone;
            }
            if !e.above_zone {
                break;
            }
        }
        best.map(|i| &self.zones[i as usize])
    }

    /// Local data at `name` (any case): `None` if the name has none, `Some(empty)` for an
    /// empty non-terminal.
    pub(crate) fn sets(&self, name: NameRef<'_>) -> Option<&[Set]> {
        let mut lower = [0u8; 255];
        let len = name.lowercase_into(&mut lower);
        self.names.get(&lower[..len])?.sets.as_deref()
    }
}

/// The MINIMUM field of SOA rdata (its last four octets).
fn soa_minimum(rdata: &[u8]) -> Option<u32> {
    let tail: [u8; 4] = rdata.get(rdata.len().checked_sub(4)?..)?.try_into().ok()?;
    Some(u32::from_be_bytes(tail))
}
