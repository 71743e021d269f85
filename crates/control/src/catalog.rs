//! catalog -- the producer of catalog zones (RFC 9432): a `[[zone]]` with
//! `catalog = "produce"` is a catalog generated from the zones that name it in
//! `catalog_member` (with their `catalog_group`), made on the main thread at start and
//! after each reload that read the config, and served like a transferred zone (outside the
//! zone files: `reload::serve_outside`, so it is journaled, transferred by AXFR/IXFR and
//! announced by NOTIFY like any other).
//!
//! A catalog is made anew only when its member list changed; its serial is then the
//! current time (seconds since the epoch, the usual date-like serial), or one more than the
//! serial before if that is not newer, so consumers see every change and a restart never
//! moves the serial backwards.

use shardns_config::{CatalogRole, Config};
use shardns_wire::Name;
use shardns_zone::{catalog, load_zone_text, ScanOptions, Zone, ZoneChange};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use tracing::{error, info};

/// A catalog's members, each with its group, in canonical order.
type Members = Vec<(Name, Option<String>)>;

/// The catalogs made so far: their member lists and serials.
#[derive(Debug, Default)]
pub struct Producer {
    made: HashMap<Name, (Members, u32)>,
}

impl Producer {
    /// The catalogs `config` asks for whose member lists changed since last time (made
    /// anew), and those it no longer asks for (removed).
    pub fn changes(&mut self, config: &Config, now: u64) -> Vec<ZoneChange> {
        let mut changes = Vec::new();
        let catalogs: Vec<&Name> = config
            .zones
            .iter()
            .filter(|z| z.catalog == Some(CatalogRole::Produce))
            .map(|z| &z.name)
            .collect();
        let gone: Vec<Name> = self
            .made
            .keys()
            .filter(|n| !catalogs.contains(n))
            .cloned()
            .collect();
        for name in gone {
            info!("catalog {name}: no longer produced");
            self.made.remove(&name);
            changes.push(ZoneChange::Remove(name));
        }
        for cat in catalogs {
            let mut members: Members = config
                .zones
                .iter()
                .filter(|z| z.catalog_member.as_ref() == Some(cat))
                .map(|z| (z.name.clone(), z.catalog_group.clone()))
                .collect();
            members.sort_by(|a, b| a.0.as_ref().canonical_cmp(&b.0.as_ref()));
            members.dedup_by(|a, b| a.0 == b.0);
            let before = self.made.get(cat);
            if before.is_some_and(|(m, _)| *m == members) {
                continue;
            }
            let clock = now as u32;
            let serial = match before {
                Some((_, s)) if !shardns_zone::xfr::is_newer(clock, *s) => s.wrapping_add(1),
                _ => clock,
            };
            match make(cat, serial, &members) {
                Ok(zone) => {
                    info!(
                        "catalog {cat}: produced with {} member zones, serial {serial}",
                        members.len()
                    );
                    self.made.insert(cat.clone(), (members, serial));
                    changes.push(ZoneChange::Put(Arc::new(zone)));
                }
                Err(e) => error!("catalog {cat}: cannot be produced: {e}"),
            }
        }
        changes
    }
}

/// The catalog at `apex` listing `members`.
fn make(apex: &Name, serial: u32, members: &[(Name, Option<String>)]) -> Result<Zone, String> {
    let text = catalog::produce(apex.as_ref(), serial, members);
    let label = format!("<catalog {apex}>");
    load_zone_text(
        text.as_bytes(),
        Path::new(&label),
        &ScanOptions::new(apex.clone()),
    )
    .map(|(z, _)| z)
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn serial_moves_only_when_members_change() {
        let base = "[[zone]]\nname = \"cat.\"\ncatalog = \"produce\"\n\
                    [[zone]]\nname = \"a.test.\"\nfile = \"a\"\ncatalog_member = \"cat.\"\n";
        let mut p = Producer::default();
        let put = |c: Vec<ZoneChange>| match c.as_slice() {
            [ZoneChange::Put(z)] => Arc::clone(z),
            other => panic!("{other:?}"),
        };
        let z = put(p.changes(&config(base), 1000));
        assert_eq!(z.serial(), 1000);
        assert!(p.changes(&config(base), 2000).is_empty());
        let two = format!(
            "{base}[[zone]]\nname = \"b.test.\"\nfile = \"b\"\ncatalog_member = \"cat.\"\ncatalog_group = \"blue\"\n"
        );
        // The clock behind the last serial: one more.
        let z = put(p.changes(&config(&two), 999));
        assert_eq!(z.serial(), 1001);
        let c = catalog::interpret(&z).unwrap();
        assert_eq!(c.members.len(), 2);
        assert!(c.members.iter().any(|m| m.group.as_deref() == Some("blue")));
        let z = put(p.changes(&config(base), 5000));
        assert_eq!(z.serial(), 5000);
        let none = "[[zone]]\nname = \"a.test.\"\nfile = \"a\"\n";
        assert!(matches!(
            p.changes(&config(none), 6000).as_slice(),
            [ZoneChange::Remove(n)] if n.to_string() == "cat."
        ));
    }
}
