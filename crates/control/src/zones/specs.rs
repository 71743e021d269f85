//! zones::specs -- the zones to serve: the config's `[[zone]]` tables, then its zone list.

use super::{EmbeddedZone, NameHash, ZoneSource, ZoneSpec};
use crate::signing::SignSpec;
use shardns_config::Config;
use shardns_config::ZoneConfig;
use shardns_wire::Name;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// The zones `config` asks for (its `[[zone]]` tables, then its `zone_list`); the embedded
/// zone if it asks for none. A name given twice is loaded once: a `[[zone]]` wins over the
/// list, a later list line over an earlier one.
pub fn specs(config: &Config, fallback: Option<EmbeddedZone>) -> Result<Vec<ZoneSpec>, String> {
    let listed = match &config.server.zone_list {
        Some(path) => read_zone_list(path, config.server.key_directory.is_some())?,
        None => Vec::new(),
    };
    if config.zones.is_empty() && listed.is_empty() {
        if config.resolver.recursion {
            // A resolver need not serve any zone; the example zone would only shadow names.
            return Ok(Vec::new());
        }
        let e = fallback.ok_or("no zones configured (add a [[zone]] table or --zone NAME=FILE)")?;
        let name = e
            .name
            .parse::<Name>()
            .map_err(|err| format!("embedded zone name {:?}: {err}", e.name))?;
        return Ok(vec![ZoneSpec {
            name,
            source: ZoneSource::Embedded(e),
            signing: None,
            journal: None,
        }]);
    }
    let mut specs: Vec<ZoneSpec> = Vec::with_capacity(config.zones.len() + listed.len());
    let mut at: HashMap<Name, usize, NameHash> =
        HashMap::with_capacity_and_hasher(specs.capacity(), NameHash);
    // Tables come after the list, so that they replace its lines. Secondary zones are the
    // secondary role's (`crate::secondary`), not read from files here, and replace a list
    // line of the same name too.
    let secondaries: HashSet<&Name, NameHash> = config
        .zones
        .iter()
        .filter(|z| z.is_secondary() || z.catalog == Some(shardns_config::CatalogRole::Produce))
        .map(|z| &z.name)
        .collect();
    let key_dir = config.server.key_directory.as_deref();
    let listed = listed
        .into_iter()
        .filter(|z| !secondaries.contains(&z.name))
        .map(|z| {
            let signing = SignSpec::of(&z, key_dir, &config.keystores).map(Arc::new);
            (z.name, z.file, signing, None)
        });
    // Produced catalogs are made, not read (`crate::catalog`).
    let made = |z: &&ZoneConfig| {
        z.is_secondary() || z.catalog == Some(shardns_config::CatalogRole::Produce)
    };
    let tables = config.zones.iter().filter(|z| !made(z)).map(|z| {
        let signing = SignSpec::of(z, key_dir, &config.keystores).map(Arc::new);
        // A zone that may be updated: its journal is replayed over its file.
        let journal = z
            .updatable()
            .then(|| crate::journal::settings(config, &z.name, Some(&z.file)))
            .flatten()
            .and_then(|s| s.path);
        (z.name.clone(), z.file.clone(), signing, journal)
    });
    for (name, file, signing, journal) in listed.chain(tables) {
        let spec = ZoneSpec {
            name,
            source: ZoneSource::File(file),
            signing,
            journal,
        };
        match at.get(&spec.name) {
            Some(&i) => specs[i] = spec,
            None => {
                at.insert(spec.name.clone(), specs.len());
                specs.push(spec);
            }
        }
    }
    Ok(specs)
}

/// Reads a zone list: `NAME FILE [FLAG...]` per line, `#` comments, blank lines; FILE
/// relative to the list's directory. The flags `dnssec`, `nsec3` and `nsec3_opt_out` sign
/// the zone as the `[[zone]]` keys of those names do (the other signing settings take
/// their defaults); they need a key directory (`has_key_dir`). Errors name `list:line`.
pub(super) fn read_zone_list(path: &Path, has_key_dir: bool) -> Result<Vec<ZoneConfig>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("zone list {}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new(""));
    let mut zones = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), i + 1);
        let mut words = line.split_whitespace();
        let (Some(name), Some(file)) = (words.next(), words.next()) else {
            return Err(format!("{}: expected NAME FILE, got {line:?}", at()));
        };
        let (mut dnssec, mut nsec3, mut opt_out) = (false, false, false);
        for flag in words {
            match flag {
                "dnssec" => dnssec = true,
                "nsec3" => nsec3 = true,
                "nsec3_opt_out" => opt_out = true,
                _ => {
                    return Err(format!(
                        "{}: unknown flag {flag:?} after NAME FILE (dnssec, nsec3, nsec3_opt_out)",
                        at()
                    ))
                }
            }
        }
        let dnssec = dnssec || nsec3 || opt_out;
        if dnssec && !has_key_dir {
            return Err(format!(
                "{}: signing zone {name} needs server.key_directory (or --key-dir)",
                at()
            ));
        }
        let name = name
            .parse::<Name>()
            .map_err(|e| format!("{}: zone name {name:?}: {e}", at()))?;
        let file = Path::new(file);
        let file = if file.is_relative() {
            base.join(file)
        } else {
            file.into()
        };
        let mut zone = ZoneConfig::new(name, file);
        zone.dnssec = dnssec;
        zone.nsec3 = nsec3;
        zone.nsec3_opt_out = opt_out;
        zones.push(zone);
    }
    Ok(zones)
}
