//! control -- the control plane: reloads (SIGHUP or `shardns reload`), statistics for
//! `shardns stats`, and the Unix control socket they travel over.
//!
//! Owns the `Reloader` (re-reads the config and zones, swaps the zone set in, frees the
//! old one) and `reload_now` here; the commands a connection carries and the control
//! thread that serves them in `commands`; the socket itself in `socket` (`ControlSocket`:
//! bound at start, removed at shutdown; [`request`], the client side). Where the socket is
//! by default is the config's business (`Config::control_socket_path`).
//!
//! Protocol: the client connects, writes one command line (`reload`, `stats`, `status`,
//! `zone status|refresh|retransfer|notify|flush [ZONE...]`, the transaction's `zone
//! begin|set|unset|diff|commit|abort ZONE ...`) and reads the reply to the end: a first
//! line `ok` or `error`, then text. `zone refresh` and `retransfer` set a flag the secondary
//! thread reads (as a NOTIFY does); `zone status` and `notify` run on the main thread. Every reload
//! runs on the main thread, where the zones were first loaded: a socket request is queued
//! and the thread woken with a SIGHUP. Zones built by one thread come from one malloc
//! arena, so what a reload frees is reused by the next (docs/BENCHMARKS.md has the
//! measurements).
//!
//! A control socket that cannot be made (its directory is missing or not private, another
//! server answers on it, something other than a stale socket is at its path, the path is
//! too long) does not stop the server: it says so in the log and serves without one;
//! SIGHUP still reloads. Both ends talk only to a socket of their own user or root
//! (`socket` says how).

mod commands;
mod publish;
mod socket;

pub use crate::request::{MainAction, ReloadRequest};
pub use publish::{publish, serve_outside, serve_touched};
pub use socket::request;
pub use socket::ControlSocket;

use crate::notify::{Job, Notifier};
use crate::zones::{specs, LoadReport, ZoneLibrary};
use crate::{Host, Setup};
use shardns_config::Config;
use shardns_wire::Name;
use shardns_zone::{Zone, ZoneSet};
use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, error, info, warn};

/// Rebuilds the zone set from the config and swaps it in.
pub struct Reloader {
    /// Where the configuration comes from.
    pub setup: Setup,
    /// The configuration in force.
    pub config: Config,
    /// The zones read from files, and what to watch for changes.
    pub library: ZoneLibrary,
    /// Replaced zone sets some worker still held when we last looked.
    pub retired: Vec<Arc<ZoneSet>>,
    /// Replaced zones a transfer or a NOTIFY still held: freed here once they let go, not
    /// on the worker that finishes the transfer (freeing a big zone there pauses it).
    pub retired_zones: Vec<Arc<Zone>>,
    /// Tells secondaries about new serials.
    pub notifier: Notifier,
    /// Signs zones again before their signatures expire.
    pub resigner: crate::signing::Resigner,
    /// Checks (and pushes) the parent's DS while a rollover waits for it.
    pub parent: crate::parent::DsChecker,
    /// Makes the catalogs this server produces (RFC 9432).
    pub producer: crate::catalog::Producer,
    /// Writes zones changed by updates back to their files.
    pub flusher: crate::zonefile::Flusher,
}

impl Reloader {
    /// Re-reads the zones whose files changed (told by inotify, or found by `stat` where it
    /// cannot tell) and the config file and zone list if they changed, or only the zones in
    /// `only` (changed or not, from the files the server has for them: the config is not
    /// read again, so a named reload costs what it reads), then publishes the new zone set.
    /// Returns a summary, and whether everything read loaded.
    pub fn reload(&mut self, shared: &dyn Host, only: Option<&[Name]>) -> (bool, String) {
        let mut text = String::new();
        let started = std::time::Instant::now();
        let (report, config) = match only {
            Some(names) => {
                let (report, unknown) = self.library.reload_named(names);
                for n in unknown {
                    warn!("reload: zone {n} is not configured");
                    let _ = writeln!(text, "zone {n} is not configured");
                }
                (report, None)
            }
            None => {
                if self.library.config_changed() {
                    match self.reload_config(shared) {
                        Ok((report, config)) => (report, Some(config)),
                        Err(e) => return (false, e),
                    }
                } else {
                    // Neither the config nor the zone list changed: only the zones that did
                    // are looked at.
                    (self.library.refresh(), None)
                }
            }
        };
        for w in &report.warnings {
            warn!("{w}");
        }
        for f in &report.failures {
            let what = if f.kept_previous {
                "keeping its previous version"
            } else {
                "not served"
            };
            error!("zone {} failed to load, {what}:", f.name);
            for d in f.error.diagnostics() {
                error!("{d}");
            }
            let _ = writeln!(text, "zone {} failed to load, {what}:\n{}", f.name, f.error);
        }
        for (zone, at) in &report.resign {
            self.resigner.schedule(zone.clone(), *at);
            self.parent.signed(zone);
        }
        let zones = self.library.len();
        if let Some(config) = &config {
            shared
                .plane()
                .transfer_acl
                .store(Arc::new(crate::TransferAcl::new(config)));
            shared.plane().updates.configure(config);
            self.parent.configure(config);
        }
        let old = shared.plane().zones.swap(Arc::new(report.set));
        shared.wake_workers();
        self.library.back_with_huge_pages();
        // Each new version's changes into its zone's journal, before secondaries ask.
        let library = &self.library;
        crate::journal::record_all(
            &shared.plane().journals,
            config.as_ref().unwrap_or(&self.config),
            |apex| library.file_of(apex),
            Some(&*old),
            &report.added,
        );
        publish::flush_full_journals(self, shared);
        // Only the zones read now can have a new serial.
        let notify = config.as_ref().unwrap_or(&self.config).notify_index();
        if !notify.is_empty() {
            for zone in &report.added {
                let apex = zone.apex();
                let changed = old
                    .get(apex)
                    .is_none_or(|was| was.serial() != zone.serial());
                let targets = notify.targets(&apex.to_name());
                if changed && !targets.is_empty() {
                    self.notifier.announce(Job {
                        zone: Arc::clone(zone),
                        targets: targets.to_vec(),
                    });
                }
            }
        }
        self.retire(old, report.replaced);
        shared.plane().stats.zones.store(zones as u64, Relaxed);
        shared
            .plane()
            .stats
            .zone_load_errors
            .fetch_add(report.failures.len() as u64, Relaxed);
        let ok = report.failures.is_empty();
        if ok {
            shared.plane().stats.reloads_ok.fetch_add(1, Relaxed);
        } else {
            shared.plane().stats.reloads_failed.fetch_add(1, Relaxed);
        }
        let found = match (&report.full_pass, only, &config) {
            (_, Some(_), _) => "named".to_string(),
            (Some(why), _, _) => format!("every file stat'ed: {why}"),
            (None, _, Some(_)) => "config read, changes from inotify".to_string(),
            (None, _, None) => "config unchanged, changes from inotify".to_string(),
        };
        let summary = format!(
            "reloaded {} of {} zones in {:.3} s ({} unchanged, {} removed, {} failed, {} still failing); serving {zones} zones; {} files stat'ed ({found})",
            report.loaded,
            report.loaded + report.unchanged + report.failures.len(),
            started.elapsed().as_secs_f64(),
            report.unchanged,
            report.removed,
            report.failures.len(),
            report.still_failing,
            report.checked,
        );
        info!("{summary}");
        if let Some(config) = config {
            self.config = config;
            // A zone added to or removed from a produced catalog, or a catalog added.
            let made = self.producer.changes(&self.config, shardns_sys::unix_now());
            serve_outside(self, shared, made);
        }
        let _ = writeln!(text, "{summary}");
        (ok, text)
    }
}

impl Reloader {
    /// The config file and zone list read again (they changed), then the zones they list
    /// (but the members of a catalog); on error, the reply text (everything is kept).
    fn reload_config(&mut self, shared: &dyn Host) -> Result<(LoadReport, Config), String> {
        // The config or zone list as they are before they are read.
        let config_file = self
            .setup
            .config_path
            .as_ref()
            .map(|p| self.library.stamp_config_file(p));
        let config = self.config_for_reload(shared)?;
        let zone_list = config
            .server
            .zone_list
            .as_ref()
            .map(|p| self.library.stamp_config_file(p));
        let specs = match specs(&config, self.setup.default_zone) {
            Ok(s) => s,
            Err(e) => {
                error!("reload: {e}");
                shared.plane().stats.reloads_failed.fetch_add(1, Relaxed);
                return Err(format!("{e}\n"));
            }
        };
        // A zone a catalog brought while we ran stays the catalog's: a file for it
        // would be overwritten by the next transfer (a restart gives it to the
        // file).
        let specs: Vec<_> = specs
            .into_iter()
            .filter(|s| {
                let member = shared
                    .plane()
                    .secondary
                    .as_ref()
                    .is_some_and(|i| i.is_catalog_member(s.name.as_ref()));
                if member {
                    warn!(
                        "reload: zone {} is a member of a catalog; its file is not read while it is (a restart reads it, and the catalog leaves it)",
                        s.name
                    );
                }
                !member
            })
            .collect();
        let report = self.library.load(&specs);
        self.library
            .config_read(config_file.into_iter().chain(zone_list).collect());
        Ok((report, config))
    }

    /// The config file read again, with a warning for what a reload does not apply; on
    /// error, the reply text (everything is kept).
    fn config_for_reload(&self, shared: &dyn Host) -> Result<Config, String> {
        let mut config = self.setup.config().map_err(|e| {
            error!("reload: {e}; keeping the current configuration and zones");
            shared.plane().stats.reloads_failed.fetch_add(1, Relaxed);
            format!("config: {e}\nkept the current configuration and zones\n")
        })?;
        if config.listen_addrs() != self.config.listen_addrs()
            || config.worker_count() != self.config.worker_count()
            || !same_limits(&config.limits, &self.config.limits)
            || config.stats != self.config.stats
            || config.control_socket_path() != self.config.control_socket_path()
            || config.log != self.config.log
            || config.resolver != self.config.resolver
            || config.rrl != self.config.rrl
        {
            warn!("reload: only zones are reloaded; changes to [server], [limits], [log], [stats], [resolver] and [rrl] need a restart");
        }
        crate::secondary::warn_if_changed(&self.config, &config);
        for w in config.warnings() {
            warn!("reload: {w}");
        }
        // Whether the example zone stands in for missing zones follows the running role.
        config.resolver.recursion = self.config.resolver.recursion;
        Ok(config)
    }

    /// Frees a replaced zone set here, on the main thread, once every worker has moved
    /// to the new one: freeing a large zone on a worker would pause its queries.
    pub fn retire(&mut self, old: Arc<ZoneSet>, replaced: Vec<Arc<Zone>>) {
        self.let_go(old, replaced);
        // The old zones' memory is free now; hand what malloc can of it back to the system,
        // or the resident size keeps the larger of old and new zone after every reload.
        shardns_sys::release_free_memory();
    }

    /// [`Reloader::retire`] for the versions an update batch or a transfer replaced: their
    /// memory handed back when there is enough of it (`release_free_memory_if_worth_it`).
    /// A batch frees the pages its versions copied, which the next batch allocates again:
    /// trimming after each one gave them back only to fault them in again (a signed zone's
    /// updates spent 7 % of their CPU in `malloc_trim` and more in page faults, BENCHMARKS
    /// "Dynamic update").
    pub fn retire_touched(&mut self, old: Arc<ZoneSet>, replaced: Vec<Arc<Zone>>) {
        self.let_go(old, replaced);
        shardns_sys::release_free_memory_if_worth_it();
    }

    fn let_go(&mut self, old: Arc<ZoneSet>, replaced: Vec<Arc<Zone>>) {
        let started = std::time::Instant::now();
        while Arc::strong_count(&old) > 1 && started.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_micros(200));
        }
        debug!(
            "workers released the old zone set after {:?}",
            started.elapsed()
        );
        // Only the zones this reload replaced or dropped: the others are still served.
        self.retired_zones.extend(replaced);
        self.retired.push(old);
        self.retired.retain(|z| Arc::strong_count(z) > 1);
        // With the old set dropped, a replaced zone is held by this list and by whatever
        // transfer or NOTIFY still reads it: one only this list holds is freed here.
        self.retired_zones.retain(|z| Arc::strong_count(z) > 1);
        if !self.retired.is_empty() {
            warn!(
                "{} replaced zone sets are still in use by a worker",
                self.retired.len()
            );
        }
    }
}

/// Whether `[limits]` is the same but for the update rate (which a reload applies).
fn same_limits(a: &shardns_config::Limits, b: &shardns_config::Limits) -> bool {
    let mut a = a.clone();
    a.updates_per_second = b.updates_per_second;
    a.updates_burst = b.updates_burst;
    a == *b
}

/// Reloads once for a SIGHUP and for every socket request queued before it started.
pub fn reload_now(reloader: &mut Reloader, shared: &dyn Host, requests: &Receiver<ReloadRequest>) {
    let (waiting, zone_commands): (Vec<ReloadRequest>, Vec<ReloadRequest>) = requests
        .try_iter()
        .partition(|r| r.action == MainAction::Reload);
    let only_zone_commands = waiting.is_empty() && !zone_commands.is_empty();
    for request in zone_commands {
        let outcome = match request.action {
            MainAction::Notify => reloader.notify_zones(shared, &request.zones),
            MainAction::Flush => reloader.flush_zones(&request.zones),
            _ => reloader.zone_status(shared, &request.zones),
        };
        let _ = request.reply.send(outcome);
    }
    if only_zone_commands {
        // The SIGHUP came with zone commands only: nothing to reload.
        return;
    }
    // Everything that changed if any waiting request asks for it (a SIGHUP from outside
    // comes with no request); then the zones named (`shardns reload ZONE`, the re-signing
    // timer), read whether they changed or not.
    let full = waiting.is_empty() || waiting.iter().any(|r| r.zones.is_empty());
    let named: Vec<Name> = waiting
        .iter()
        .flat_map(|r| r.zones.iter().cloned())
        .collect();
    let mut outcome = (true, String::new());
    if full {
        outcome = reloader.reload(shared, None);
    }
    if !named.is_empty() {
        let (ok, text) = reloader.reload(shared, Some(&named));
        outcome.0 &= ok;
        outcome.1.push_str(&text);
    }
    for request in waiting {
        // The client may have gone (timeout); the reload stands either way.
        let _ = request.reply.send(outcome.clone());
    }
}

impl Reloader {
    /// Writes the zones named to their files (`zonefile::Flusher`, `zone flush`); the
    /// reply text.
    pub fn flush_zones(&mut self, zones: &[Name]) -> (bool, String) {
        let mut ok = true;
        let mut text = String::new();
        for apex in zones {
            self.flusher.written(apex);
            match self.library.write_back(apex) {
                Ok(Some(path)) => {
                    info!("zone {apex}: written to {}", path.display());
                    let _ = writeln!(text, "zone {apex}: written to {}", path.display());
                }
                Ok(None) => {
                    let _ = writeln!(text, "zone {apex}: its file is up to date");
                }
                Err(e) => {
                    ok = false;
                    warn!("zone {apex}: {e}");
                    let _ = writeln!(text, "zone {apex}: {e}");
                }
            }
        }
        (ok, text)
    }
}
