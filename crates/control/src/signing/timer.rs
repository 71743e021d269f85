//! signing::timer -- signatures made anew before they expire: a thread of the control plane
//! keeps, for every signed zone, when it is due (`signature_refresh` before its signatures
//! expire, or the next key event of a rollover if sooner) and, when zones fall due, asks the main thread to read them again by name, the
//! way `shardns reload ZONE` does (a queued request and a SIGHUP). The reload signs them
//! with fresh signatures and a new serial, swaps them in with `ZoneSet::update`, and sends
//! NOTIFY; it then tells this thread when each is due next. A zone whose re-signing failed
//! keeps its previous version and is tried again a little later.

use crate::request::{MainAction, ReloadRequest, Timer};
use shardns_wire::Name;
use std::io;
use std::sync::mpsc::Sender;
use tracing::{debug, info};

/// The handle the control plane schedules re-signing through; the thread ends when it is
/// dropped.
pub struct Resigner {
    timer: Timer,
}

impl Resigner {
    /// Starts the thread; due zones are asked for on `reloads`.
    pub fn start(reloads: Sender<ReloadRequest>) -> io::Result<Self> {
        let timer = Timer::start("shardns-resign", MainAction::Reload, reloads, |ready| {
            info!(
                "signatures of {} zone(s) due for refresh: signing again ({})",
                ready.len(),
                ready
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        })?;
        Ok(Self { timer })
    }

    /// Sign `zone` again at `at` (seconds since 1970), replacing an earlier schedule.
    pub fn schedule(&self, zone: Name, at: u64) {
        debug!("zone {zone}: signed again at {at}");
        self.timer.schedule(zone, at);
    }
}
