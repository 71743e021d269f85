//! config::notify_index -- whom to NOTIFY about each zone, looked up by hash
//! ([`crate::Config::notify_index`]).

use crate::Config;
use shardns_wire::Name;
use std::net::SocketAddr;

impl Config {
    /// Whom to NOTIFY about each zone, for many zones at once: a hash lookup per zone
    /// instead of [`Config::notify_targets`]' scan of the zone list.
    pub fn notify_index(&self) -> NotifyIndex<'_> {
        NotifyIndex {
            zones: self
                .zones
                .iter()
                .filter_map(|z| Some((&z.name, z.notify.as_deref()?)))
                .collect(),
            default: &self.server.notify,
        }
    }
}

/// Whom to NOTIFY about each zone ([`Config::notify_index`]).
#[derive(Debug)]
pub struct NotifyIndex<'c> {
    zones: std::collections::HashMap<&'c Name, &'c [SocketAddr]>,
    default: &'c [SocketAddr],
}

impl NotifyIndex<'_> {
    /// The zone's own `notify`, else the server's.
    pub fn targets(&self, apex: &Name) -> &[SocketAddr] {
        self.zones.get(apex).copied().unwrap_or(self.default)
    }

    /// True if no zone has anyone to notify (then nothing need be looked up at all).
    pub fn is_empty(&self) -> bool {
        self.default.is_empty() && self.zones.values().all(|t| t.is_empty())
    }
}
