//! logging -- the `tracing` subscriber: an env-filter over plain text lines on stderr.
//!
//! Disabled levels cost one branch at the call site (tracing's per-callsite interest cache),
//! before any argument is formatted. Query logging is a separate switch the workers test
//! before building a log line (target `shardns::query`).

use crate::config::{Config, Overrides};
use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Checks that `filter` is a valid filter (`info`, `warn,shardns::query=info`...).
pub(crate) fn check_filter(filter: &str) -> Result<(), String> {
    EnvFilter::try_new(filter)
        .map(drop)
        .map_err(|e| format!("bad log filter {filter:?}: {e}"))
}

/// The filter to use: `--log-level`, else `RUST_LOG`, else `[log] level`, else `info`.
pub fn filter_for(overrides: &Overrides, config_file: Option<&Config>) -> String {
    overrides
        .log_level
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok().filter(|s| !s.is_empty()))
        .or_else(|| config_file.and_then(|c| c.log.level.clone()))
        .unwrap_or_else(|| "info".to_string())
}

/// Installs the global subscriber (stderr, colours only on a terminal).
pub fn init(filter: &str) -> Result<(), String> {
    let filter =
        EnvFilter::try_new(filter).map_err(|e| format!("bad log filter {filter:?}: {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .map_err(|e| format!("cannot install the logger: {e}"))
}
