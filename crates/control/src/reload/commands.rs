//! control::commands -- the control thread: one connection at a time, one command line
//! each, answered here (`stats`, `status`, `zone refresh|retransfer`, the transactions'
//! `zone begin|set|unset|diff|abort`, `Plane::zone_transaction`) or on the main thread
//! (`reload`, `zone status|notify`, through a [`ReloadRequest`] and a SIGHUP; a transaction's
//! `zone commit` through the update queue, whose answer it waits for).

use super::{MainAction, ReloadRequest, Reloader};
use crate::notify::Job;
use crate::Host;
use shardns_wire::Name;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// The longest command line read.
const MAX_LINE: u64 = 64 * 1024;

/// Serves control connections until shutdown (one at a time; each is short).
pub(super) fn serve(listener: UnixListener, shared: Arc<dyn Host>, reloads: Sender<ReloadRequest>) {
    for stream in listener.incoming() {
        if shared.plane().shutdown.load(Relaxed) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Err(e) = handle(stream, &*shared, &reloads) {
            warn!("control socket: {e}");
        }
    }
}

fn handle(
    stream: UnixStream,
    shared: &dyn Host,
    reloads: &Sender<ReloadRequest>,
) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    // Room for a record's text (`zone set`: a long TXT, a DNSKEY).
    BufReader::new((&stream).take(MAX_LINE)).read_line(&mut line)?;
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
    let txn = (command == "zone")
        .then(|| {
            shared
                .plane()
                .zone_transaction(line.trim_start().strip_prefix("zone").unwrap_or_default())
        })
        .flatten();
    let (ok, body) = match (command, zones) {
        ("reload", Ok(zones)) => {
            info!("reload requested on the control socket");
            on_main(zones, MainAction::Reload)
        }
        // A transaction's command (its words are not all zone names).
        ("zone", _) if txn.is_some() => txn.unwrap_or_default(),
        ("reload", Err(e)) | ("zone", Err(e)) => (false, format!("{e}\n")),
        ("zone", Ok(_)) => zone_command(&args, shared, on_main),
        ("stats", _) => (true, shared.stats_text()),
        ("status", _) => (true, format!("running, {} workers\n", shared.workers())),
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

/// `zone status|refresh|retransfer|notify|flush [ZONE...]` (`args` after `zone`).
fn zone_command(
    args: &[&str],
    shared: &dyn Host,
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
        Some("flush") if !names.is_empty() => on_main(names, MainAction::Flush),
        Some(action @ ("refresh" | "retransfer")) if !names.is_empty() => {
            let axfr = action == "retransfer";
            let mut text = String::new();
            let mut ok = true;
            for name in &names {
                let queued = shared
                    .plane()
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
            "expected zone status [ZONE...], zone refresh|retransfer|notify|flush ZONE..., or zone \
             begin|set|unset|diff|commit|abort ZONE ...\n"
                .into(),
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
    pub(super) fn notify_zones(&self, shared: &dyn Host, names: &[Name]) -> (bool, String) {
        let zones = shared.plane().zones.load();
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
    pub(super) fn zone_status(&self, shared: &dyn Host, names: &[Name]) -> (bool, String) {
        let zones = shared.plane().zones.load();
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
                .plane()
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
                    if let Some((serial, due)) = s.signed {
                        let _ = writeln!(
                            text,
                            "signed: serial {serial} (the serial above is the primary's), signed again {}",
                            relative(due)
                        );
                    }
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
            match shared.plane().journals.history(name.as_ref()) {
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
            if let Some(n) = shared.plane().updates.transactions.pending(name) {
                let _ = writeln!(text, "transaction: open, {n} changes");
            }
            text.push('\n');
        }
        (ok, text)
    }
}
