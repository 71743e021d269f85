//! control -- the control plane: reloads (SIGHUP or `shardns reload`), statistics for
//! `shardns stats`, and the Unix control socket they travel over.
//!
//! Owns the `Reloader` (re-reads the config and zones, swaps the zone set in, frees the
//! old one), the control socket (`ControlSocket`: bound at start, served on a thread of
//! its own, removed at shutdown) and both ends of its protocol ([`request`] is the client
//! side). Where the socket is by default is the config's business
//! (`Config::control_socket_path`).
//!
//! Protocol: the client connects, writes one command line (`reload`, `stats`, `status`,
//! `zone status|refresh|retransfer|notify [ZONE...]`) and reads the reply to the end: a first
//! line `ok` or `error`, then text. `zone refresh` and `retransfer` set a flag the secondary
//! thread reads (as a NOTIFY does); `zone status` and `notify` run on the main thread. Every reload
//! runs on the main thread, where the zones were first loaded: a socket request is queued
//! and the thread woken with a SIGHUP. Zones built by one thread come from one malloc
//! arena, so what a reload frees is reused by the next (docs/BENCHMARKS.md has the
//! measurements).
//!
//! A control socket that cannot be made (its directory is missing, another server answers
//! on it, the path is too long) does not stop the server: it says so in the log and serves
//! without one; SIGHUP still reloads.

use crate::config::Config;
use crate::notify::{Job, Notifier};
use crate::stats::render_prometheus;
use crate::zones::{specs, ZoneLibrary};
use crate::{Setup, Shared};
use shardns_wire::Name;
use shardns_zone::{Zone, ZoneSet};
use std::fmt::{self, Write as _};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, error, info, warn};

/// Rebuilds the zone set from the config and swaps it in.
pub(crate) struct Reloader {
    pub(crate) setup: Setup,
    pub(crate) config: Config,
    pub(crate) library: ZoneLibrary,
    /// Replaced zone sets some worker still held when we last looked.
    pub(crate) retired: Vec<Arc<ZoneSet>>,
    /// Replaced zones a transfer or a NOTIFY still held: freed here once they let go, not
    /// on the worker that finishes the transfer (freeing a big zone there pauses it).
    pub(crate) retired_zones: Vec<Arc<Zone>>,
    /// Tells secondaries about new serials.
    pub(crate) notifier: Notifier,
    /// Signs zones again before their signatures expire.
    pub(crate) resigner: crate::signing::Resigner,
    /// Makes the catalogs this server produces (RFC 9432).
    pub(crate) producer: crate::catalog::Producer,
}

impl Reloader {
    /// Re-reads the zones whose files changed (told by inotify, or found by `stat` where it
    /// cannot tell) and the config file and zone list if they changed, or only the zones in
    /// `only` (changed or not, from the files the server has for them: the config is not
    /// read again, so a named reload costs what it reads), then publishes the new zone set.
    /// Returns a summary, and whether everything read loaded.
    pub(crate) fn reload(&mut self, shared: &Shared, only: Option<&[Name]>) -> (bool, String) {
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
                    // The config or zone list as they are before they are read.
                    let config_file = self
                        .setup
                        .config_path
                        .as_ref()
                        .map(|p| self.library.stamp_config_file(p));
                    let config = match self.config_for_reload(shared) {
                        Ok(c) => c,
                        Err(e) => return (false, e),
                    };
                    let zone_list = config
                        .server
                        .zone_list
                        .as_ref()
                        .map(|p| self.library.stamp_config_file(p));
                    let specs = match specs(&config, self.setup.default_zone) {
                        Ok(s) => s,
                        Err(e) => {
                            error!("reload: {e}");
                            shared.control.reloads_failed.fetch_add(1, Relaxed);
                            return (false, format!("{e}\n"));
                        }
                    };
                    // A zone a catalog brought while we ran stays the catalog's: a file for it
                    // would be overwritten by the next transfer (a restart gives it to the
                    // file).
                    let specs: Vec<_> = specs
                        .into_iter()
                        .filter(|s| {
                            let member = shared
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
                    (report, Some(config))
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
            for d in &f.error.errors {
                error!("{d}");
            }
            let _ = writeln!(text, "zone {} failed to load, {what}:\n{}", f.name, f.error);
        }
        for (zone, at) in &report.resign {
            self.resigner.schedule(zone.clone(), *at);
        }
        let zones = self.library.len();
        if let Some(config) = &config {
            shared
                .transfer_acl
                .store(Arc::new(crate::transfers::TransferAcl::new(config)));
        }
        let old = shared.zones.swap(Arc::new(report.set));
        shared.wake_workers();
        self.library.back_with_huge_pages();
        // Each new version's changes into its zone's journal, before secondaries ask.
        let library = &self.library;
        crate::journal::record_all(
            &shared.journals,
            config.as_ref().unwrap_or(&self.config),
            |apex| library.file_of(apex),
            Some(&*old),
            &report.added,
        );
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
        shared.control.zones.store(zones as u64, Relaxed);
        shared
            .control
            .zone_load_errors
            .fetch_add(report.failures.len() as u64, Relaxed);
        let ok = report.failures.is_empty();
        if ok {
            shared.control.reloads_ok.fetch_add(1, Relaxed);
        } else {
            shared.control.reloads_failed.fetch_add(1, Relaxed);
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
            let made = self
                .producer
                .changes(&self.config, crate::dispatch::unix_now());
            crate::secondary::serve_outside(self, shared, made);
        }
        let _ = writeln!(text, "{summary}");
        (ok, text)
    }
}

impl Reloader {
    /// The config file read again, with a warning for what a reload does not apply; on
    /// error, the reply text (everything is kept).
    fn config_for_reload(&self, shared: &Shared) -> Result<Config, String> {
        let mut config = self.setup.config().map_err(|e| {
            error!("reload: {e}; keeping the current configuration and zones");
            shared.control.reloads_failed.fetch_add(1, Relaxed);
            format!("config: {e}\nkept the current configuration and zones\n")
        })?;
        if config.listen_addrs() != self.config.listen_addrs()
            || config.worker_count() != self.config.worker_count()
            || config.limits != self.config.limits
            || config.stats != self.config.stats
            || config.control_socket_path() != self.config.control_socket_path()
            || config.log != self.config.log
            || config.resolver != self.config.resolver
            || config.rrl != self.config.rrl
        {
            warn!("reload: only zones are reloaded; changes to [server], [limits], [log], [stats], [resolver] and [rrl] need a restart");
        }
        crate::secondary::warn_if_changed(&self.config, &config);
        // Whether the example zone stands in for missing zones follows the running role.
        config.resolver.recursion = self.config.resolver.recursion;
        Ok(config)
    }

    /// Frees a replaced zone set here, on the main thread, once every worker has moved
    /// to the new one: freeing a large zone on a worker would pause its queries.
    pub(crate) fn retire(&mut self, old: Arc<ZoneSet>, replaced: Vec<Arc<Zone>>) {
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
        // The old zones' memory is free now; hand what malloc can of it back to the system,
        // or the resident size keeps the larger of old and new zone after every reload.
        crate::sys::release_free_memory();
        if !self.retired.is_empty() {
            warn!(
                "{} replaced zone sets are still in use by a worker",
                self.retired.len()
            );
        }
    }
}

/// The control socket as the server opened it at start: the listener (until the control
/// thread takes it), or none if it could not be made.
pub(crate) struct ControlSocket {
    path: PathBuf,
    listener: Option<UnixListener>,
    /// We made the socket file, so it is ours to remove at shutdown (a failed bind must
    /// not remove another server's socket).
    bound: bool,
}

impl ControlSocket {
    /// Binds the control socket at `path`. If that fails, the server goes on without one: a
    /// warning says why, and that `shardns reload` and `stats` cannot reach it.
    pub(crate) fn open(path: PathBuf) -> Self {
        match bind(&path) {
            Ok(listener) => Self {
                path,
                listener: Some(listener),
                bound: true,
            },
            Err(e) => {
                warn!(
                    "no control socket: {}: {e}; serving without it (shardns reload and shardns stats cannot reach this server; SIGHUP still reloads)",
                    path.display()
                );
                Self {
                    path,
                    listener: None,
                    bound: false,
                }
            }
        }
    }

    /// Starts the control thread on the socket (none without a socket).
    pub(crate) fn start(
        &mut self,
        shared: Arc<Shared>,
        reloads: Sender<ReloadRequest>,
    ) -> io::Result<()> {
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        std::thread::Builder::new()
            .name("shardns-control".into())
            .spawn(move || serve(listener, shared, reloads))?;
        Ok(())
    }

    /// At shutdown: unblocks the control thread's accept so it sees the shutdown flag, then
    /// removes the socket file, if it is ours.
    pub(crate) fn close(&self) {
        if self.bound {
            let _ = UnixStream::connect(&self.path);
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl fmt::Display for ControlSocket {
    /// For the ready line: `control socket PATH`, or `no control socket`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bound {
            write!(f, "control socket {}", self.path.display())
        } else {
            f.write_str("no control socket")
        }
    }
}

/// Binds the control socket (mode 0600). A stale socket file is replaced; one that a
/// running server answers on is an error.
fn bind(path: &Path) -> io::Result<UnixListener> {
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                "another shardns answers on this control socket (set server.control_socket or --control)",
            ));
        }
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(listener)
}

/// A reload asked for on the control socket: the outcome goes back on `reply`.
pub(crate) struct ReloadRequest {
    /// The zones to read again (empty: every zone whose file changed).
    pub(crate) zones: Vec<Name>,
    pub(crate) reply: SyncSender<(bool, String)>,
    /// What is asked of the main thread (a reload, or a zone command that needs it).
    pub(crate) action: MainAction,
}

/// What a control request asks of the main thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MainAction {
    /// `reload [ZONE...]`.
    Reload,
    /// `zone notify ZONE...`: a NOTIFY to the zones' secondaries now.
    Notify,
    /// `zone status [ZONE...]`.
    Status,
}

/// Reloads once for a SIGHUP and for every socket request queued before it started.
pub(crate) fn reload_now(
    reloader: &mut Reloader,
    shared: &Shared,
    requests: &Receiver<ReloadRequest>,
) {
    let (waiting, zone_commands): (Vec<ReloadRequest>, Vec<ReloadRequest>) = requests
        .try_iter()
        .partition(|r| r.action == MainAction::Reload);
    let only_zone_commands = waiting.is_empty() && !zone_commands.is_empty();
    for request in zone_commands {
        let outcome = match request.action {
            MainAction::Notify => reloader.notify_zones(shared, &request.zones),
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

/// Serves control connections until shutdown (one at a time; each is short).
fn serve(listener: UnixListener, shared: Arc<Shared>, reloads: Sender<ReloadRequest>) {
    for stream in listener.incoming() {
        if shared.shutdown.load(Relaxed) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Err(e) = handle(stream, &shared, &reloads) {
            warn!("control socket: {e}");
        }
    }
}

fn handle(stream: UnixStream, shared: &Shared, reloads: &Sender<ReloadRequest>) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    BufReader::new((&stream).take(256)).read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let command = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    // `zone ACTION ZONE...`: the names follow the action.
    let names = if command == "zone" {
        args.get(1..).unwrap_or_default()
    } else {
        &args[..]
    };
    let zones: Result<Vec<Name>, String> = names
        .iter()
        .map(|z| z.parse::<Name>().map_err(|e| format!("zone {z:?}: {e}")))
        .collect();
    let on_main = |zones: Vec<Name>, action: MainAction| {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        // A request the main thread never takes (it is stopping) is dropped with its
        // queue, which ends the wait.
        let sent = reloads
            .send(ReloadRequest {
                zones,
                reply: tx,
                action,
            })
            .is_ok();
        match signal_hook::low_level::raise(signal_hook::consts::SIGHUP) {
            Err(e) => (false, format!("cannot wake the main thread: {e}\n")),
            Ok(()) => match rx.recv() {
                Ok(outcome) if sent => outcome,
                _ => (false, "the server is stopping\n".to_string()),
            },
        }
    };
    let (ok, body) = match (command, zones) {
        ("reload", Err(e)) | ("zone", Err(e)) => (false, format!("{e}\n")),
        ("reload", Ok(zones)) => {
            info!("reload requested on the control socket");
            on_main(zones, MainAction::Reload)
        }
        ("zone", Ok(_)) => zone_command(&args, shared, on_main),
        ("stats", _) => (
            true,
            render_prometheus(
                &shared.worker_stats(),
                &shared.control,
                shared.started.elapsed().as_secs_f64(),
            ),
        ),
        ("status", _) => (true, format!("running, {} workers\n", shared.stats.len())),
        (other, _) => (
            false,
            format!("unknown command {other:?} (expected reload, stats, status or zone)\n"),
        ),
    };
    let mut w = &stream;
    w.write_all(if ok { b"ok\n" } else { b"error\n" })?;
    w.write_all(body.as_bytes())?;
    Ok(())
}

/// `zone status|refresh|retransfer|notify [ZONE...]` (`args` after `zone`).
fn zone_command(
    args: &[&str],
    shared: &Shared,
    on_main: impl Fn(Vec<Name>, MainAction) -> (bool, String),
) -> (bool, String) {
    let names: Vec<Name> = args
        .iter()
        .skip(1)
        .filter_map(|z| z.parse::<Name>().ok())
        .collect();
    match args.first().copied() {
        Some("status") => on_main(names, MainAction::Status),
        Some("notify") if !names.is_empty() => on_main(names, MainAction::Notify),
        Some(action @ ("refresh" | "retransfer")) if !names.is_empty() => {
            let axfr = action == "retransfer";
            let mut text = String::new();
            let mut ok = true;
            for name in &names {
                let queued = shared
                    .secondary
                    .as_ref()
                    .is_some_and(|inbox| inbox.request_refresh(name.as_ref(), axfr));
                if queued {
                    info!("zone {name}: {action} asked for on the control socket");
                    let _ = writeln!(
                        text,
                        "zone {name}: {action} queued (see the log, or shardns zone status {name})"
                    );
                } else {
                    ok = false;
                    let _ = writeln!(text, "zone {name} is not a secondary zone");
                }
            }
            (ok, text)
        }
        _ => (
            false,
            "expected zone status [ZONE...], or zone refresh|retransfer|notify ZONE...\n".into(),
        ),
    }
}

/// Seconds from now to `t` as text: `in N s` or `N s ago`.
fn relative(t: std::time::SystemTime) -> String {
    let now = std::time::SystemTime::now();
    match t.duration_since(now) {
        Ok(d) => format!("in {} s", d.as_secs()),
        Err(e) => format!("{} s ago", e.duration().as_secs()),
    }
}

impl Reloader {
    /// `zone notify`: a NOTIFY of each zone's current version to its secondaries now.
    fn notify_zones(&self, shared: &Shared, names: &[Name]) -> (bool, String) {
        let zones = shared.zones.load();
        let index = self.config.notify_index();
        let mut text = String::new();
        let mut ok = true;
        for name in names {
            let Some(zone) = zones.get(name.as_ref()).filter(|z| !z.is_unavailable()) else {
                ok = false;
                let _ = writeln!(text, "zone {name} is not served");
                continue;
            };
            let targets = index.targets(name);
            if targets.is_empty() {
                ok = false;
                let _ = writeln!(text, "zone {name} has no secondaries to notify");
                continue;
            }
            info!("zone {name}: NOTIFY asked for on the control socket");
            let list: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            let _ = writeln!(
                text,
                "zone {name}: NOTIFY of serial {} queued to {}",
                zone.serial(),
                list.join(", ")
            );
            self.notifier.announce(Job {
                zone: Arc::clone(zone),
                targets: targets.to_vec(),
            });
        }
        (ok, text)
    }

    /// `zone status`: serial, role, refresh times, expiry, source and journal of each zone
    /// named (every zone served, by name, if none is).
    fn zone_status(&self, shared: &Shared, names: &[Name]) -> (bool, String) {
        let zones = shared.zones.load();
        let mut list: Vec<Name> = if names.is_empty() {
            zones.zones().map(|z| z.apex().to_name()).collect()
        } else {
            names.to_vec()
        };
        if names.is_empty() {
            list.sort();
        }
        let mut text = String::new();
        let mut ok = true;
        for name in &list {
            let Some(zone) = zones.get(name.as_ref()) else {
                ok = false;
                let _ = writeln!(text, "zone: {name}\nstate: not configured\n");
                continue;
            };
            let _ = writeln!(text, "zone: {name}");
            let secondary = shared
                .secondary
                .as_ref()
                .and_then(|i| i.status(name.as_ref()));
            match &secondary {
                None => {
                    let _ = writeln!(text, "role: primary\nserial: {}", zone.serial());
                    let source = self
                        .library
                        .file_of(name)
                        .map_or_else(|| "embedded".to_string(), |p| p.display().to_string());
                    let _ = writeln!(text, "source: {source}");
                }
                Some(s) => {
                    let state = match (s.serving, s.serial) {
                        (true, _) => "serving",
                        (false, Some(_)) => "expired (SERVFAIL)",
                        (false, None) => "never transferred (SERVFAIL)",
                    };
                    let _ = writeln!(text, "role: secondary");
                    match s.serial {
                        Some(serial) => {
                            let _ = writeln!(text, "serial: {serial} ({state})");
                        }
                        None => {
                            let _ = writeln!(text, "serial: none ({state})");
                        }
                    }
                    let primaries = s
                        .primaries
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    if let Some(cat) = &s.catalog {
                        let _ = writeln!(text, "catalog: {cat}");
                    }
                    let _ = writeln!(
                        text,
                        "source: {} (primaries {primaries})",
                        s.source.map_or("none yet".to_string(), |a| a.to_string())
                    );
                    if let Some(t) = s.last_refresh {
                        let _ = writeln!(text, "last refresh: {}", relative(t));
                    }
                    if let Some(t) = s.next_check {
                        let _ = writeln!(text, "next refresh: {}", relative(t));
                    }
                    if let Some(t) = s.expire_at {
                        let _ = writeln!(text, "expires: {}", relative(t));
                    }
                    if s.failures > 0 {
                        let _ = writeln!(
                            text,
                            "failures: {} in a row, last: {}",
                            s.failures,
                            s.last_error.as_deref().unwrap_or("-")
                        );
                    }
                }
            }
            let file = self
                .library
                .file_of(name)
                .or_else(|| crate::journal::config_file(&self.config, name));
            let journaled = crate::journal::settings(&self.config, name, file).is_some();
            match shared.journals.history(name.as_ref()) {
                Some(h) if h.depth() > 0 => {
                    let _ = writeln!(
                        text,
                        "journal: {} versions, serial {} to {}, {} octets",
                        h.depth(),
                        h.first_serial().unwrap_or_default(),
                        h.last_serial().unwrap_or_default(),
                        h.bytes()
                    );
                }
                _ if journaled => {
                    let _ = writeln!(text, "journal: empty");
                }
                _ => {
                    let _ = writeln!(text, "journal: none");
                }
            }
            text.push('\n');
        }
        (ok, text)
    }
}

/// Sends `command` to the server on `path`; returns whether it succeeded, and its text.
pub fn request(path: &Path, command: &str) -> io::Result<(bool, String)> {
    let mut stream = UnixStream::connect(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot connect to the control socket {}: {e} (is a shardns running with the \
                 same --listen, --config or --control? A server that could not make its control \
                 socket says so in its log, and still reloads on SIGHUP)",
                path.display()
            ),
        )
    })?;
    stream.write_all(command.as_bytes())?;
    stream.write_all(b"\n")?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let (status, body) = reply.split_once('\n').unwrap_or((reply.as_str(), ""));
    match status {
        "ok" => Ok((true, body.to_string())),
        "error" => Ok((false, body.to_string())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected reply {reply:?}"),
        )),
    }
}
