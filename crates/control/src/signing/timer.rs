//! signing::timer -- signatures made anew before they expire: a thread of the control plane
//! keeps, for every signed zone, when it is due (`signature_refresh` before its signatures
//! expire, or the next key event of a rollover if sooner) and, when zones fall due, asks the main thread to read them again by name, the
//! way `shardns reload ZONE` does (a queued request and a SIGHUP). The reload signs them
//! with fresh signatures and a new serial, swaps them in with `ZoneSet::update`, and sends
//! NOTIFY; it then tells this thread when each is due next. A zone whose re-signing failed
//! keeps its previous version and is tried again a little later.

use crate::request::{MainAction, ReloadRequest};
use shardns_wire::Name;
use std::collections::HashMap;
use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;
use tracing::{debug, info, warn};

/// The handle the control plane schedules re-signing through; the thread ends when it is
/// dropped.
pub struct Resigner {
    tx: Sender<(Name, u64)>,
}

impl Resigner {
    /// Starts the thread; due zones are asked for on `reloads`.
    pub fn start(reloads: Sender<ReloadRequest>) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("shardns-resign".into())
            .spawn(move || run(&rx, &reloads))?;
        Ok(Self { tx })
    }

    /// Sign `zone` again at `at` (seconds since 1970), replacing an earlier schedule.
    pub fn schedule(&self, zone: Name, at: u64) {
        let _ = self.tx.send((zone, at));
    }
}

fn run(rx: &Receiver<(Name, u64)>, reloads: &Sender<ReloadRequest>) {
    let mut due: HashMap<Name, u64> = HashMap::new();
    loop {
        let now = shardns_sys::unix_now();
        let wait = due.values().min().map_or(Duration::from_secs(3600), |&at| {
            Duration::from_secs(at.saturating_sub(now))
        });
        match rx.recv_timeout(wait) {
            Ok((zone, at)) => {
                debug!("zone {zone}: signed again at {at}");
                due.insert(zone, at);
                continue;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let now = shardns_sys::unix_now();
        let ready: Vec<Name> = due
            .iter()
            .filter(|&(_, &at)| at <= now)
            .map(|(z, _)| z.clone())
            .collect();
        if ready.is_empty() {
            continue;
        }
        for z in &ready {
            due.remove(z);
        }
        info!(
            "signatures of {} zone(s) due for refresh: signing again ({})",
            ready.len(),
            ready
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        );
        let (reply, outcome) = mpsc::sync_channel(1);
        let request = ReloadRequest {
            zones: ready,
            reply,
            action: MainAction::Reload,
        };
        if reloads.send(request).is_err() {
            return; // the main thread has stopped
        }
        if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGHUP) {
            warn!("cannot wake the main thread to sign again: {e}");
        }
        // One at a time: the reload tells us the next times before it replies.
        if outcome.recv().is_err() {
            return;
        }
    }
}
