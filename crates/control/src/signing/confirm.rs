//! signing::confirm -- the parent serves the DS of a new KSK or CSK: the confirmation that
//! moves a double-DS rollover past its DS step, made by the operator (`shardns key
//! submitted`) or by the parent's DS check (`crate::parent`), the same way: the new key's
//! times first, then the old key's end ([`roll::tick`]), each key file written atomically.

use super::state::StateFile;
use shardns_dnssec::keys::KeyMeta;
use shardns_dnssec::roll;
use shardns_dnssec::KeyStore;
use shardns_wire::Name;
use std::path::Path;

/// What a confirmation changed: the new key's times, and the old key's if one is replaced.
#[derive(Debug, Clone)]
pub struct Confirmed {
    /// The new key, published now, signing from its `activate`.
    pub new: KeyMeta,
    /// The key it replaces, with its end set.
    pub old: Option<KeyMeta>,
}

/// Confirms at `now` that the parent serves the DS of `apex`'s new key `tag` (absent: the
/// only one waiting), with the timings of the zone's last signing. Errors say why (no key
/// waits, the zone was never signed, a key file that cannot be written).
pub fn confirm_submitted(
    apex: &Name,
    key_dir: &Path,
    tag: Option<u16>,
    now: u64,
) -> Result<Confirmed, String> {
    let store = KeyStore::open(key_dir).map_err(|e| e.to_string())?;
    let mut keys = store.load(apex).map_err(|e| e.to_string())?;
    let t = StateFile::new(key_dir, apex).timings()?.ok_or_else(|| {
        format!(
            "{apex} was not signed by this version of the server yet (no timings in {}): \
             start the server, then roll",
            key_dir.join("state").display()
        )
    })?;
    let mut metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let new = roll::confirm_ds(&mut metas, tag, &t, now).map_err(|e| format!("{apex}: {e}"))?;
    // The new key first: a crash before the old key's end is written is repaired by the
    // next signing (roll::tick).
    keys[new].meta = metas[new].clone();
    store.save(&keys[new]).map_err(|e| e.to_string())?;
    let tick = roll::tick(&mut metas, &t, now);
    for &i in &tick.changed {
        keys[i].meta = metas[i].clone();
        store.save(&keys[i]).map_err(|e| e.to_string())?;
    }
    Ok(Confirmed {
        new: metas[new].clone(),
        old: tick.changed.first().map(|&i| metas[i].clone()),
    })
}
