//! zones::apply -- one pass of a load or reload: plan per zone, read what changed on every
//! core, record the results and their files' watches, drop the zones no longer listed.

use super::load::{load_one, parallel_map};
use super::watch::{Owner, Watch};
use super::{
    FileStamp, Held, LoadReport, NameHash, Scope, ZoneFailure, ZoneLibrary, ZoneSource, ZoneSpec,
    HUGE_PAGE, SCAN_THREADS,
};
use crate::journal::Read;
use crate::signing;
use shardns_wire::Name;
use shardns_zone::{Zone, ZoneChange};
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// What to do with one configured zone.
enum Plan {
    /// Unchanged: keep it.
    Keep,
    /// Read it (new, changed, or asked for by name).
    Load,
}

impl ZoneLibrary {
    pub(super) fn apply(&mut self, specs: &[ZoneSpec], scope: Scope) -> LoadReport {
        let full_pass = match scope {
            Scope::Named => None,
            _ => self.watch.full_pass().map(str::to_string),
        };
        let checked = AtomicUsize::new(0);
        let stat = |path: &Path| {
            checked.fetch_add(1, Relaxed);
            FileStamp::of(path)
        };
        let plans = self.plan(specs, scope, full_pass.is_some(), &stat);
        if scope != Scope::Named {
            // The events so far are dealt with by these plans; later ones wait in the queue.
            self.watch.zones_done();
        }
        let to_load: Vec<(&ZoneSpec, Option<FileStamp>)> = specs
            .iter()
            .zip(&plans)
            .filter(|(_, (p, _))| matches!(p, Plan::Load))
            .map(|(s, (_, stamp))| (s, *stamp))
            .collect();
        // The directories of the files about to be read are watched before they are read.
        if self.watch.watching() {
            for (spec, _) in &to_load {
                if let ZoneSource::File(path) = &spec.source {
                    self.watch.prepare(path);
                }
            }
        }
        // Named and changed-only reloads leave every other held zone as it is.
        let considered = if scope == Scope::All {
            specs.len()
        } else {
            self.held.len()
        };
        let unchanged = considered.saturating_sub(to_load.len());
        // Listed zones not held before this reload (specs name each zone once).
        let new_zones = to_load
            .iter()
            .filter(|(s, _)| !self.held.contains_key(&s.name))
            .count();
        // Many small zones: one per core, each on one thread; one big zone: both cores on it.
        let scan_threads = if to_load.len() == 1 { SCAN_THREADS } else { 1 };
        let work = self.reads(&to_load);
        let results = parallel_map(&work, |&(spec, read)| load_one(spec, scan_threads, read));

        let mut changes = Vec::new();
        let mut added = Vec::new();
        let mut replaced = Vec::new();
        let mut failures = Vec::new();
        let mut warnings = Vec::new();
        let mut resign = Vec::new();
        let mut loaded = 0;
        for ((spec, stamp), result) in to_load.into_iter().zip(results) {
            let mut new = false;
            let held = self.held.entry(spec.name.clone()).or_insert_with(|| {
                new = true;
                Held::new(spec.source.clone())
            });
            let owner = Owner::Zone(spec.name.clone());
            if self.watch.watching() && !new {
                for path in held.files() {
                    self.watch.untrack(&owner, path);
                }
            }
            if held.failed {
                self.failing -= 1;
            }
            held.failed = false;
            held.source = spec.source.clone();
            held.signing = spec.signing.clone();
            held.journal = spec.journal.clone();
            // The zone file as it was before it was read (a change while reading shows at
            // the next reload). A failed read is remembered too, so an unchanged broken
            // file is reported once.
            held.stamp = stamp;
            held.includes.clear();
            match result {
                Ok((zone, w, included, refresh_at)) => {
                    held.failures = 0;
                    resign.extend(refresh_at.map(|at| (spec.name.clone(), at)));
                    held.includes = included
                        .into_iter()
                        .map(|p| {
                            let stamp = stat(&p);
                            (p, stamp)
                        })
                        .collect();
                    let zone = Arc::new(zone);
                    if zone.arrays().iter().any(|&(_, len)| len >= HUGE_PAGE) {
                        self.huge_pending.push(Arc::clone(&zone));
                    }
                    replaced.extend(held.zone.replace(Arc::clone(&zone)));
                    held.unwritten = false;
                    added.push(Arc::clone(&zone));
                    changes.push(ZoneChange::Put(zone));
                    warnings.extend(w);
                    loaded += 1;
                }
                Err(error) => {
                    // A signed zone still served is tried again before its signatures
                    // run out: after a minute, then twice as long each time, up to a
                    // `signature_refresh`/8 (at most an hour).
                    if let (Some(s), Some(_)) = (&spec.signing, &held.zone) {
                        let retry = signing::retry_after(s, held.failures);
                        resign.push((spec.name.clone(), signing::unix_now() + retry));
                    }
                    held.failures = held.failures.saturating_add(1);
                    held.failed = true;
                    self.failing += 1;
                    failures.push(ZoneFailure {
                        name: spec.name.clone(),
                        error,
                        kept_previous: held.zone.is_some(),
                    })
                }
            }
            if self.watch.watching() {
                track(&mut self.watch, &mut self.polled, &spec.name, &owner, held);
            }
        }
        // Every held zone is listed (the usual reload) when as many are held as listed and
        // none listed is new: then nothing was removed, and no set of names is needed.
        let all_listed = self.held.len() == specs.len() && new_zones == 0;
        let removed = if scope == Scope::All && !all_listed {
            self.remove_unlisted(specs, &mut changes, &mut replaced)
        } else {
            0
        };
        self.set = self.set.update(changes);
        let checked = checked.into_inner() + std::mem::take(&mut self.checked);
        LoadReport {
            set: self.set.clone(),
            loaded,
            unchanged,
            removed,
            still_failing: self.failing,
            added,
            replaced,
            failures,
            warnings,
            checked,
            full_pass,
            resign,
        }
    }

    /// Why each zone is read: an updatable zone's journal is replayed over its file when
    /// the zone is read for the first time or its file is unchanged; a changed file wins
    /// (as Knot's default, [`crate::journal::replay`]).
    fn reads<'s>(
        &self,
        to_load: &[(&'s ZoneSpec, Option<FileStamp>)],
    ) -> Vec<(&'s ZoneSpec, Read)> {
        to_load
            .iter()
            .map(|&(spec, stamp)| {
                let read = match self.held.get(&spec.name) {
                    // Unchanged since a read that succeeded (a refused file stays refused).
                    Some(h)
                        if h.zone.is_some()
                            && !h.failed
                            && h.stamp.is_some()
                            && h.stamp == stamp =>
                    {
                        Read::Unchanged
                    }
                    Some(Held { zone: Some(z), .. }) => Read::Changed { served: z.serial() },
                    _ => Read::First,
                };
                (spec, read)
            })
            .collect()
    }

    /// Decides per zone, on every core: a `stat` for the zones read, and for those events
    /// cannot vouch for.
    fn plan(
        &self,
        specs: &[ZoneSpec],
        scope: Scope,
        full_pass: bool,
        stat: &(impl Fn(&Path) -> Option<FileStamp> + Sync),
    ) -> Vec<(Plan, Option<FileStamp>)> {
        parallel_map(specs, |spec| {
            let stamp = || match &spec.source {
                ZoneSource::File(path) => stat(path),
                ZoneSource::Embedded(_) => None,
            };
            match self.held.get(&spec.name) {
                _ if scope == Scope::Named => (Plan::Load, stamp()),
                None => (Plan::Load, stamp()),
                Some(h)
                    if h.source != spec.source
                        || h.signing != spec.signing
                        || h.journal != spec.journal =>
                {
                    (Plan::Load, stamp())
                }
                Some(h) if full_pass || self.polled.contains(&spec.name) => {
                    let now = stamp();
                    let changed =
                        h.stamp != now || h.includes.iter().any(|(path, was)| stat(path) != *was);
                    // An embedded zone, or files that have not changed since they were
                    // read (or last failed to read): nothing to do.
                    (if changed { Plan::Load } else { Plan::Keep }, now)
                }
                Some(_) if self.watch.is_dirty(&spec.name) => (Plan::Load, stamp()),
                Some(h) => (Plan::Keep, h.stamp),
            }
        })
    }

    /// Drops the held zones `specs` does not list; the number that were served.
    fn remove_unlisted(
        &mut self,
        specs: &[ZoneSpec],
        changes: &mut Vec<ZoneChange>,
        replaced: &mut Vec<Arc<Zone>>,
    ) -> usize {
        let mut removed = 0;
        let listed: HashSet<&Name, NameHash> = specs.iter().map(|s| &s.name).collect();
        let gone: Vec<Name> = self
            .held
            .keys()
            .filter(|n| !listed.contains(n))
            .cloned()
            .collect();
        for name in gone {
            let Some(held) = self.held.remove(&name) else {
                continue;
            };
            let owner = Owner::Zone(name.clone());
            for path in held.files() {
                self.watch.untrack(&owner, path);
            }
            self.polled.remove(&name);
            if held.failed {
                self.failing -= 1;
            }
            if let Some(zone) = held.zone {
                replaced.push(zone);
                removed += 1;
            }
            changes.push(ZoneChange::Remove(name));
        }
        removed
    }
}

/// Tracks the files `held` was read from (`name`'s) in `watch`: told of by events only if
/// every file it read is, else polled.
fn track(
    watch: &mut Watch,
    polled: &mut HashSet<Name, NameHash>,
    name: &Name,
    owner: &Owner,
    held: &Held,
) {
    // Told of by events only if every file it read is.
    let mut by_events = true;
    if let ZoneSource::File(path) = &held.source {
        by_events &= watch.track(owner, path, held.stamp.as_ref()).by_events;
    }
    for (path, stamp) in &held.includes {
        let t = watch.track(owner, path, stamp.as_ref());
        by_events &= t.by_events;
        if t.new_watch {
            // Watched after the read: a change in between shows next time.
            watch.mark(name);
        }
    }
    if by_events {
        polled.remove(name);
    } else if !polled.contains(name) {
        polled.insert(name.clone());
    }
}
