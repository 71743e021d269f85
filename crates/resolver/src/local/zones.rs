//! One set of local zones and their data, and the lookup of the closest enclosing zone.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

/// FNV-1a: the keys are a few dozen octets at most and come from the configuration, so
/// SipHash's protection buys nothing here and costs most of a lookup.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Most distinct top-level labels checked by a scan before the hash lookup.
const MAX_TOPS: usize = 16;

/// Zones and data, keyed by lower-cased wire name.
#[derive(Debug, Default)]
pub(crate) struct LocalZones {
    zones: Vec<Zone>,
    names: HashMap<Box<[u8]>, Entry, BuildHasherDefault<Fnv>>,
    /// The top-level labels (lower case, with their length octet) of every zone, if few: a
    /// name whose top label is none of them is under no zone but the root's, found by a
    /// scan of a few short slices instead of lower-casing and hashing the name.
    tops: Option<Vec<Box<[u8]>>>,
    /// The root zone, if one is configured.
    root: Option<u32>,
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
        out.index_tops();
        Ok(out)
    }

    fn index_tops(&mut self) {
        let mut tops: Vec<Box<[u8]>> = Vec::new();
        for z in &self.zones {
            let wire = key(z.apex.as_ref());
            let Some(at) = top_label(&wire) else {
                continue; // the root zone
            };
            if !tops.iter().any(|t| **t == wire[at..wire.len() - 1]) {
                tops.push(wire[at..wire.len() - 1].into());
            }
        }
        self.tops = (tops.len() <= MAX_TOPS).then_some(tops);
        self.root = self.names.get(&[0u8][..]).and_then(|e| e.zone);
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
        if let Some(tops) = &self.tops {
            let wire = qname.as_wire();
            let top = top_label(wire).map(|at| &wire[at..wire.len() - 1]);
            let known = |t: &[u8]| {
                tops.iter()
                    .any(|k| k.len() == t.len() && k.eq_ignore_ascii_case(t))
            };
            if !top.is_some_and(known) {
                return self.root.map(|i| &self.zones[i as usize]);
            }
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

/// Where the last label before the root starts in a wire name; `None` for the root.
fn top_label(wire: &[u8]) -> Option<usize> {
    let mut at = 0;
    let mut last = None;
    while let Some(&len) = wire.get(at).filter(|&&l| l != 0) {
        last = Some(at);
        at += 1 + usize::from(len);
    }
    last
}

/// The MINIMUM field of SOA rdata (its last four octets).
fn soa_minimum(rdata: &[u8]) -> Option<u32> {
    let tail: [u8; 4] = rdata.get(rdata.len().checked_sub(4)?..)?.try_into().ok()?;
    Some(u32::from_be_bytes(tail))
}
