//! request -- what the control socket and the re-signing timer ask of the main thread,
//! which alone reloads (`reload::reload_now` answers them).

use shardns_wire::Name;
use std::sync::mpsc::SyncSender;

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
