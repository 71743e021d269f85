//! shardns-bench: the benchmark lab. A black-box DNS load generator that measures any server,
//! ours or another, the way the source studies did, and reports what they lacked.
//!
//! - [`run_rr`] ([`RrConfig`] -> [`RrReport`]): DNS_RR, closed loop. N synchronous streams,
//!   each with exactly one query outstanding, each starting at a random point of the query
//!   list and cycling through it; a sweep over stream counts, each point run several times;
//!   the table of (streams, ops/s), the peak, latency percentiles and lost queries.
//! - [`run_rate`] ([`RateConfig`] -> [`RateReport`]): open loop, like Flamethrower. A fixed
//!   query rate over UDP or pipelined TCP, IPv4 or IPv6; a line per second, totals per RCODE.
//! - Both sample the server's CPU time and memory from /proc when given its PIDs (queries per
//!   server CPU-second is the headline figure: hypervisor steal makes raw q/s swing 2x) and
//!   always report the tool's own CPU, so a reader can tell who was the bottleneck.
//! - [`plot`] draws the reports as PNG or SVG; [`run_cli`] is the `shardns-bench` binary, which
//!   `shardns bench rr|rate` runs (the server binary does not link this crate).
//!
//! The generator must never be the bottleneck: every query is encoded once up front and a send
//! only copies it next to its ID; sends and receives are batched (sendmmsg with UDP GSO,
//! recvmmsg); the clock is read once per loop turn and send call; the rate mode sleeps a 1 ms
//! tick (a wake-up costs more CPU than a query); streams are multiplexed over a few sockets
//! per thread and found by query ID. Never: a thread per stream, an allocation or a system
//! call per query.
//! Depends on `shardns-wire` only, never on the server or zone crates.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod account;
mod cli;
mod engine;
mod hist;
pub mod plot;
mod queries;
mod rate;
mod report;
mod rr;
#[allow(unsafe_code)]
mod sys;
mod track;

pub use account::{ServerUsage, ToolUsage};
pub use cli::{parse_streams, run_cli};
pub use queries::{QueryList, QueryOptions};
pub use rate::{run_rate, RateConfig, RateReport, RateSecond, DEFAULT_CONNECTIONS, DEFAULT_TICK};
pub use report::{LatencySummary, Tally};
pub use rr::{run_rr, RrConfig, RrPeak, RrPoint, RrReport, RrRun, DEFAULT_SOCKETS};

use std::fmt;

/// Where progress lines (one per rr run, one per second of a rate run) go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// Nowhere.
    Quiet,
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Progress {
    pub(crate) fn line(self, s: &str) {
        match self {
            Self::Quiet => {}
            Self::Stdout => println!("{s}"),
            Self::Stderr => eprintln!("{s}"),
        }
    }
}

/// Why a benchmark could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A file, socket or /proc entry failed.
    Io {
        /// What was being used.
        what: String,
        /// The system's error.
        error: std::io::Error,
    },
    /// A line of the query file is wrong.
    QueryFile {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// An option is out of range.
    Config(String),
    /// A plot could not be drawn or written.
    Plot(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { what, error } => write!(f, "{what}: {error}"),
            Self::QueryFile { path, line, msg } => write!(f, "{path}:{line}: {msg}"),
            Self::Config(msg) => f.write_str(msg),
            Self::Plot(msg) => write!(f, "plot: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}
