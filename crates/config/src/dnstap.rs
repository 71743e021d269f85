//! config::dnstap -- the `[dnstap]` table: where the dnstap log goes and what it holds.

use serde::Deserialize;
use std::path::PathBuf;

/// `[dnstap]`: a log of queries and responses in dnstap's format (protobuf in Frame
/// Streams), off unless `socket` or `file` is set (or `--dnstap-socket`, `--dnstap-file`).
/// Read at start only: a reload does not change it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct DnstapConfig {
    /// A Unix socket a dnstap reader listens on (bidirectional Frame Streams: READY,
    /// ACCEPT, START; reconnected when the reader goes away).
    pub socket: Option<PathBuf>,
    /// A file to write (created or truncated; unidirectional Frame Streams). Not with
    /// `socket`.
    pub file: Option<PathBuf>,
    /// Log queries (AUTH_QUERY messages).
    pub queries: bool,
    /// Log responses (AUTH_RESPONSE messages).
    pub responses: bool,
    /// The `identity` field of every message (absent: the host name).
    pub identity: Option<String>,
}

impl Default for DnstapConfig {
    fn default() -> Self {
        Self {
            socket: None,
            file: None,
            queries: true,
            responses: true,
            identity: None,
        }
    }
}

impl DnstapConfig {
    /// True when a destination is set.
    pub fn enabled(&self) -> bool {
        self.socket.is_some() || self.file.is_some()
    }
}
