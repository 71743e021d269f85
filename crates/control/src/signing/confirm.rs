//! signing::confirm -- the parent serves the DS of a new KSK or CSK: the confirmation that
//! moves a double-DS rollover past its DS step, made by the operator (`shardns key
//! submitted`) or by the parent's DS check (`crate::parent`), the same way: the new key's
//! times first, then the old key's end ([`roll::tick`]), each key file written atomically.
//! In an algorithm rollover the old keys' withdrawal also waits for the parent to drop the
//! old algorithm's DS: seen by the DS check, or taken as done by the operator's
//! confirmation.

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

/// The operator confirms at `now` that the parent serves the DS of `apex`'s new key `tag`
/// (absent: the only one waiting), with the timings of the zone's last signing
/// (`shardns key submitted`). In an algorithm rollover the operator replaced the DS set
/// (the old algorithm's DS removed, as the docs ask), so this confirms the old DS gone
/// too; with no key waiting for its DS, it confirms that alone for a rollover whose new DS
/// the DS check confirmed. Errors say why (no key waits, the zone was never signed, a key
/// file that cannot be written).
pub fn confirm_submitted(
    apex: &Name,
    key_dir: &Path,
    tag: Option<u16>,
    now: u64,
) -> Result<Confirmed, String> {
    confirm(apex, key_dir, tag, now, true)
}

/// The parent's DS check saw the DS of `apex`'s new key `tag` at every server: as
/// [`confirm_submitted`], but an algorithm rollover's old keys then wait for the check to
/// see their DS gone ([`confirm_old_ds_gone`]).
pub(crate) fn confirm_checked(
    apex: &Name,
    key_dir: &Path,
    tag: u16,
    now: u64,
) -> Result<Confirmed, String> {
    confirm(apex, key_dir, Some(tag), now, false)
}

/// The parent's DS check saw no DS of the old algorithm at any server: the old keys of
/// `apex`'s algorithm rollover are withdrawn after the parent's DS TTL and propagation
/// ([`roll::algorithm::confirm_old_ds_gone`]); returns them as written.
pub(crate) fn confirm_old_ds_gone(
    apex: &Name,
    key_dir: &Path,
    now: u64,
) -> Result<Vec<KeyMeta>, String> {
    let (store, mut keys, t) = open_keys(apex, key_dir)?;
    let mut metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let changed = roll::algorithm::confirm_old_ds_gone(&mut metas, &t, now)
        .map_err(|e| format!("{apex}: {e}"))?;
    save_changed(&store, &mut keys, &metas, &changed)?;
    Ok(changed.iter().map(|&i| metas[i].clone()).collect())
}

/// A zone's key store, its keys and the timings of its last signing.
pub type Opened = (KeyStore, Vec<shardns_dnssec::StoredKey>, roll::RollTimings);

/// Opens `apex`'s keys in `key_dir` with the timings its last signing recorded, for a
/// change of their times (a confirmation here, `shardns key rollover`); an error if the
/// zone was never signed.
pub fn open_keys(apex: &Name, key_dir: &Path) -> Result<Opened, String> {
    let store = KeyStore::open(key_dir).map_err(|e| e.to_string())?;
    let keys = store.load(apex).map_err(|e| e.to_string())?;
    let t = StateFile::new(key_dir, apex).timings()?.ok_or_else(|| {
        format!(
            "{apex} was not signed by this version of the server yet (no timings in {}): \
             start the server, then roll",
            key_dir.join("state").display()
        )
    })?;
    Ok((store, keys, t))
}

/// Writes the keys of `changed` (indexes into `keys`) with their new times from `metas`.
pub fn save_changed(
    store: &KeyStore,
    keys: &mut [shardns_dnssec::StoredKey],
    metas: &[KeyMeta],
    changed: &[usize],
) -> Result<(), String> {
    for &i in changed {
        keys[i].meta = metas[i].clone();
        store.save(&keys[i]).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn confirm(
    apex: &Name,
    key_dir: &Path,
    tag: Option<u16>,
    now: u64,
    by_hand: bool,
) -> Result<Confirmed, String> {
    let (store, mut keys, t) = open_keys(apex, key_dir)?;
    let mut metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let new = match roll::confirm_ds(&mut metas, tag, &t, now) {
        Ok(new) => new,
        Err(e) => {
            // By hand, nothing waiting for its DS: an algorithm rollover may wait for its
            // old DS to go, which the operator confirms the same way.
            let gone = by_hand && tag.is_none();
            let Some(old) = gone
                .then(|| roll::algorithm::confirm_old_ds_gone(&mut metas, &t, now).ok())
                .flatten()
            else {
                return Err(format!("{apex}: {e}"));
            };
            save_changed(&store, &mut keys, &metas, &old)?;
            let alg = metas[old[0]].algorithm;
            let new = metas
                .iter()
                .find(|m| m.algorithm != alg && m.ds_publish.is_some() && m.delete.is_none())
                .unwrap_or(&metas[old[0]]);
            return Ok(Confirmed {
                new: new.clone(),
                old: Some(metas[old[0]].clone()),
            });
        }
    };
    // The new key first: a crash before the old key's end is written is repaired by the
    // next signing (roll::tick).
    save_changed(&store, &mut keys, &metas, &[new])?;
    let mut changed = roll::tick(&mut metas, &t, now).changed;
    if by_hand {
        // An algorithm rollover's old DS is gone too (a KSK's has no such step: Err).
        changed
            .extend(roll::algorithm::confirm_old_ds_gone(&mut metas, &t, now).unwrap_or_default());
        changed.sort_unstable();
        changed.dedup();
    }
    save_changed(&store, &mut keys, &metas, &changed)?;
    Ok(Confirmed {
        new: metas[new].clone(),
        old: changed.first().map(|&i| metas[i].clone()),
    })
}
