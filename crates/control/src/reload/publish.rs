//! reload::publish -- on the main thread: the versions the secondary thread sent (and
//! other zones not read from files) swapped into the zone set, journaled, announced.

use super::Reloader;
use crate::journal::Touched;
use crate::secondary::Transferred;
use crate::Host;
use shardns_wire::Name;
use shardns_zone::{Zone, ZoneChange};
use std::collections::HashSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use tracing::{info, warn};

/// On the main thread (SIGUSR1): serves the versions the secondary thread sent, tells our
/// own secondaries about new serials (chains), and retires what they replaced.
pub fn publish(reloader: &mut Reloader, shared: &dyn Host, rx: &Receiver<Transferred>) {
    let (changes, touched) = merge(rx.try_iter());
    if changes.is_empty() {
        return;
    }
    serve_touched(reloader, shared, changes, Some(&touched));
}

/// The batches the secondary thread sent, in order, as one: their changes, and the names
/// each zone's last version may differ at from the version served before the first (the
/// union of the batches' names; a zone any batch changed without names is left out:
/// diffed whole).
fn merge(batches: impl Iterator<Item = Transferred>) -> (Vec<ZoneChange>, Touched) {
    let (mut changes, mut touched) = (Vec::new(), Touched::new());
    let mut whole = HashSet::new();
    for (batch, names) in batches {
        for change in &batch {
            let apex = match change {
                ZoneChange::Put(z) => z.apex().to_name(),
                ZoneChange::Remove(n) => n.clone(),
            };
            match names.get(&apex) {
                Some(n) if !whole.contains(&apex) => {
                    touched.entry(apex).or_default().extend(n.iter().cloned());
                }
                _ => {
                    touched.remove(&apex);
                    whole.insert(apex);
                }
            }
        }
        changes.extend(batch);
    }
    (changes, touched)
}

/// Serves `changes` to zones not read from files (transferred, stand-ins, removed members
/// of a catalog, produced catalogs): swaps the set, records the journals, tells our own
/// secondaries about new serials, and retires what was replaced.
pub fn serve_outside(reloader: &mut Reloader, shared: &dyn Host, changes: Vec<ZoneChange>) {
    serve_touched(reloader, shared, changes, None);
}

/// [`serve_outside`] for versions whose changes are known by owner name (dynamic updates):
/// a zone in `touched` has its journal's diff made at those names alone.
pub fn serve_touched(
    reloader: &mut Reloader,
    shared: &dyn Host,
    changes: Vec<ZoneChange>,
    touched: Option<&Touched>,
) {
    if changes.is_empty() {
        return;
    }
    let removed: Vec<Name> = changes
        .iter()
        .filter_map(|c| match c {
            ZoneChange::Remove(n) => Some(n.clone()),
            ZoneChange::Put(_) => None,
        })
        .collect();
    let puts: Vec<Arc<Zone>> = changes
        .iter()
        .filter_map(|c| match c {
            ZoneChange::Put(z) => Some(Arc::clone(z)),
            ZoneChange::Remove(_) => None,
        })
        .collect();
    let set = reloader.library.apply_outside(changes);
    let old = shared.plane().zones.swap(Arc::new(set));
    shared.wake_workers();
    // Into the journal before our own secondaries are told (chains take IXFR from it).
    let config = &reloader.config;
    crate::journal::record_all_touched(
        &shared.plane().journals,
        config,
        |apex| crate::journal::config_file(config, apex),
        Some(&*old),
        &puts,
        touched,
    );
    flush_full_journals(reloader, shared);
    // After the journals were recorded: a member added and removed again within one batch
    // keeps no history either.
    for apex in &removed {
        shared.plane().journals.forget(apex);
    }
    let replaced: Vec<Arc<Zone>> = puts
        .iter()
        .map(|z| z.apex())
        .chain(removed.iter().map(|n| n.as_ref()))
        .filter_map(|apex| old.get(apex).cloned())
        .collect();
    let notify = reloader.config.notify_index();
    if !notify.is_empty() {
        for zone in puts.iter().filter(|z| !z.is_unavailable()) {
            let targets = notify.targets(&zone.apex().to_name());
            let changed = old
                .get(zone.apex())
                .is_none_or(|was| was.is_unavailable() || was.serial() != zone.serial());
            if changed && !targets.is_empty() {
                reloader.notifier.announce(crate::notify::Job {
                    zone: Arc::clone(zone),
                    targets: targets.to_vec(),
                });
            }
        }
    }
    reloader.retire_touched(old, replaced);
    shared
        .plane()
        .stats
        .zones
        .store(reloader.library.len() as u64, Relaxed);
}

/// The updatable zones whose journal went past its limits (`journal::Journals::take_full`):
/// each zone file written with the served version, then the journal trimmed, so that no
/// version leaves the journal before it is in the file. With `zonefile_sync = "never"`, or
/// a file an operator changed, the journal keeps them (past its limits) and says so.
pub(super) fn flush_full_journals(reloader: &mut Reloader, shared: &dyn Host) {
    let journals = &shared.plane().journals;
    for apex in journals.take_full() {
        let file = crate::journal::config_file(&reloader.config, &apex);
        let Some(settings) = crate::journal::settings(&reloader.config, &apex, file) else {
            continue;
        };
        let never = reloader
            .config
            .zone_table(&apex)
            .is_some_and(|z| z.zonefile_sync.is_none());
        if never {
            warn!(
                "zone {apex}: journal past its limits (journal_max_size {}), but zonefile_sync = \"never\": it keeps every change until `shardns zone flush {apex}` writes the zone file",
                settings.max_size
            );
            continue;
        }
        reloader.flusher.written(&apex);
        match reloader.library.write_back(&apex) {
            Ok(Some(path)) => info!("zone {apex}: written to {} (journal full)", path.display()),
            Ok(None) => {}
            Err(e) => {
                warn!("zone {apex}: {e}; its journal keeps every change past its limits");
                continue;
            }
        }
        crate::journal::trim(journals, &apex, &settings);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(apex: &str) -> ZoneChange {
        ZoneChange::Put(Arc::new(Zone::unavailable(apex.parse().unwrap())))
    }

    fn names(apex: &str, names: &[&str]) -> Touched {
        let names = names.iter().map(|n| n.parse().unwrap()).collect();
        [(apex.parse().unwrap(), names)].into_iter().collect()
    }

    /// Versions of a zone signed incrementally, one after the other: the union of their
    /// names. A version in the run without names (signed whole, an expiry, a removal)
    /// leaves the zone to the whole diff, whatever comes after it.
    #[test]
    fn batches_merge_their_names_and_a_version_without_leaves_the_zone_whole() {
        let batches = vec![
            (vec![put("a.")], names("a.", &["x.a."])),
            (vec![put("b.")], Touched::new()),
            (vec![put("a.")], names("a.", &["y.a."])),
            (vec![put("b.")], names("b.", &["x.b."])),
            (vec![put("c.")], names("c.", &["x.c."])),
            (
                vec![ZoneChange::Remove("c.".parse().unwrap())],
                Touched::new(),
            ),
        ];
        let (changes, touched) = merge(batches.into_iter());
        assert_eq!(changes.len(), 6);
        let a: Name = "a.".parse().unwrap();
        let want: Vec<Name> = vec!["x.a.".parse().unwrap(), "y.a.".parse().unwrap()];
        assert_eq!(touched.get(&a), Some(&want));
        assert_eq!(touched.len(), 1, "{touched:?}");
    }
}
