//! logging -- the `tracing` subscriber: an env-filter over plain text lines on stderr.
//!
//! Disabled levels cost one branch at the call site (tracing's per-callsite interest cache),
//! before any argument is formatted. Query logging is a separate switch the workers test
//! before building a log line (target `shardns::query`).
//!
//! A log line that cannot be written (standard error on a full disk, or a pipe whose
//! reader has gone) is dropped: logging never stops or crashes the server.

use crate::config::{Config, Overrides};
use std::io::{self, IsTerminal, Write};
use tracing_subscriber::EnvFilter;

/// Checks that `filter` is a valid filter (`info`, `warn,shardns::query=info`...).
pub(crate) fn check_filter(filter: &str) -> Result<(), String> {
    parse_filter(filter).map(drop)
}

/// Parses a filter, each comma-separated directive trimmed first. tracing-subscriber 0.3
/// scans a directive trimmed but slices the untrimmed text at the offsets it found: with a
/// space after a comma, `warn, shardns::query=info` was refused ("error parsing level
/// filter"), and a space before a non-ASCII character panicked (`"\tÚ[=0"` as `[log]
/// level` stopped `shardns serve` and `check` with a panic; found by the `config` fuzz
/// target).
fn parse_filter(filter: &str) -> Result<EnvFilter, String> {
    let trimmed: Vec<&str> = filter.split(',').map(str::trim).collect();
    EnvFilter::try_new(trimmed.join(",")).map_err(|e| format!("bad log filter {filter:?}: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_around_directives_do_not_change_or_break_them() {
        let spaced = parse_filter(" warn , shardns::query=info ")
            .unwrap()
            .to_string();
        let plain = parse_filter("warn,shardns::query=info")
            .unwrap()
            .to_string();
        assert_eq!(spaced, plain);
        assert!(plain.contains("shardns::query=info"), "{plain}");
        // These panicked inside tracing-subscriber before the directives were trimmed.
        for f in ["\t\u{da}[=0x", " \u{e9}=info", "info,\t\u{1f600}[x]=debug"] {
            let _ = check_filter(f);
        }
        assert!(check_filter("shardns=[{").is_err());
    }
}
