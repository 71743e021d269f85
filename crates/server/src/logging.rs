//! logging -- the `tracing` subscriber: an env-filter over plain text lines on stderr.
//!
//! Disabled levels cost one branch at the call site (tracing's per-callsite interest cache),
//! before any argument is formatted. Query logging is a separate switch the workers test
//! before building a log line (target `shardns::query`).
//!
//! A log line that cannot be written (standard error on a full disk, or a pipe whose
//! reader has gone) is dropped: logging never stops or crashes the server.

use shardns_config::log_filter::parse_filter;
use shardns_config::{Config, Overrides};
use std::io::{self, IsTerminal, Write};

/// The filter to use: `--log-level`, else `RUST_LOG`, else `[log] level`, else `info`.
pub fn filter_for(overrides: &Overrides, config_file: Option<&Config>) -> String {
    overrides
        .log_level
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok().filter(|s| !s.is_empty()))
        .or_else(|| config_file.and_then(|c| c.log.level.clone()))
        .unwrap_or_else(|| "info".to_string())
}

/// Standard error for log lines, ignoring write errors. With a plain `io::stderr` writer,
/// tracing-subscriber reports a failed write with `eprintln!`, which panics when standard
/// error is unwritable: one line to /dev/full killed the thread that logged it.
struct LossyStderr;

impl Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = io::stderr().write_all(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Installs the global subscriber (stderr, colours only on a terminal).
pub fn init(filter: &str) -> Result<(), String> {
    let filter = parse_filter(filter)?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| LossyStderr)
        .with_ansi(io::stderr().is_terminal())
        .try_init()
        .map_err(|e| format!("cannot install the logger: {e}"))
}
