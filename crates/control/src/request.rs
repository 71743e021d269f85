//! request -- what the control socket and the timers (re-signing, zone-file writes) ask of
//! the main thread, which alone changes the zone set (`reload::reload_now` answers them).

use shardns_wire::Name;
use std::collections::HashMap;
use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::time::Duration;
use tracing::warn;

/// A reload asked for on the control socket: the outcome goes back on `reply`.
pub struct ReloadRequest {
    /// The zones to read again (empty: every zone whose file changed).
    pub zones: Vec<Name>,
    /// Where the outcome goes: whether everything loaded, and the text for the client.
    pub reply: SyncSender<(bool, String)>,
    /// What is asked of the main thread (a reload, or a zone command that needs it).
    pub action: MainAction,
}

/// What a control request asks of the main thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MainAction {
    /// `reload [ZONE...]`.
    Reload,
    /// `zone notify ZONE...`: a NOTIFY to the zones' secondaries now.
    Notify,
    /// `zone status [ZONE...]`.
    Status,
    /// The zones changed by updates written to their files now (`zonefile::Flusher`).
    Flush,
}

/// A thread that asks the main thread for an action on zones as each falls due (a queued
/// request and a SIGHUP, one request at a time: the main thread answers before the next),
/// for the re-signing timer and the zone-file writer. It ends when the handle is dropped.
pub struct Timer {
    tx: Sender<(Name, u64)>,
}

impl Timer {
    /// Starts the thread `name`: zones due are asked `action` on `reloads`, after
    /// `on_due` (a log line) is called with them.
    pub fn start(
        name: &str,
        action: MainAction,
        reloads: Sender<ReloadRequest>,
        on_due: fn(&[Name]),
    ) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&rx, &reloads, action, on_due))?;
        Ok(Self { tx })
    }

    /// `zone` is due at `at` (seconds since 1970), replacing an earlier time.
    pub fn schedule(&self, zone: Name, at: u64) {
        let _ = self.tx.send((zone, at));
    }
}

fn run(
    rx: &Receiver<(Name, u64)>,
    reloads: &Sender<ReloadRequest>,
    action: MainAction,
    on_due: fn(&[Name]),
) {
    let mut due: HashMap<Name, u64> = HashMap::new();
    loop {
        let now = shardns_sys::unix_now();
        let wait = due.values().min().map_or(Duration::from_secs(3600), |&at| {
            Duration::from_secs(at.saturating_sub(now))
        });
        match rx.recv_timeout(wait) {
            Ok((zone, at)) => {
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
        on_due(&ready);
        let (reply, outcome) = mpsc::sync_channel(1);
        let request = ReloadRequest {
            zones: ready,
            reply,
            action,
        };
        if reloads.send(request).is_err() {
            return; // the main thread has stopped
        }
        if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGHUP) {
            warn!("cannot wake the main thread ({action:?} of due zones): {e}");
        }
        if outcome.recv().is_err() {
            return;
        }
    }
}
