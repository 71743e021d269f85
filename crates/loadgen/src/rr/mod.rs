//! DNS_RR mode (closed loop), as in the netperf studies of named: N synchronous streams, each
//! with exactly one query outstanding, each starting at a random point of the query list and
//! cycling through it; a sweep over stream counts, each point run several times.
//!
//! Streams are not threads: each worker thread multiplexes its streams over a few connected
//! UDP sockets, finds the stream of a response by its ID (and checks the question), and
//! expires lost queries from a send-ordered FIFO. A stream whose query is answered or times
//! out sends its next query in the next loop turn; under load a turn starts after a short
//! coalescing sleep (a fraction of the round trip), and all its queries leave as one batch on
//! one socket after another (a stream is not tied to a socket).
//!
//! This module owns the public types (the sweep's configuration and its report) and the
//! report's text table; the work is in two submodules:
//! - `sweep`: [`run_rr`], the sweep over stream counts: each run's sockets, threads and start
//!   points, and the runs of a stream count combined into its point;
//! - `worker`: one worker thread of a run, its streams' loop of send and receive turns.

use crate::account::{ServerUsage, ToolUsage};
use crate::report::{self, group, opt_ms, LatencySummary, Tally};
use crate::Progress;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::Duration;

mod sweep;
mod worker;

pub use sweep::run_rr;

/// UDP sockets per run when not given (as dnsperf's `-c 4`): a server with several
/// SO_REUSEPORT workers spreads clients by source port, so one socket would reach one worker.
pub const DEFAULT_SOCKETS: usize = 4;

/// A DNS_RR sweep.
#[derive(Clone, Debug)]
pub struct RrConfig {
    /// The server under test.
    pub server: SocketAddr,
    /// Stream counts to run, in order.
    pub streams: Vec<usize>,
    /// Length of each run.
    pub duration: Duration,
    /// Runs per stream count; rounds are interleaved (every point once, then again).
    pub runs: usize,
    /// A query unanswered for this long is lost, and its stream sends the next one.
    pub timeout: Duration,
    /// Worker threads (default 1; never more than streams).
    pub threads: Option<usize>,
    /// UDP sockets per run (default [`DEFAULT_SOCKETS`], at most one per stream).
    pub sockets: Option<usize>,
    /// Server processes whose CPU time and memory to sample.
    pub pids: Vec<u32>,
    /// Seed of the random start points (default: random).
    pub seed: Option<u64>,
    /// Where to print a line after each run.
    pub progress: Progress,
}

impl RrConfig {
    /// A sweep with defaults: 10 s runs, 3 runs, 1 s timeout.
    pub fn new(server: SocketAddr, streams: Vec<usize>) -> Self {
        Self {
            server,
            streams,
            duration: Duration::from_secs(10),
            runs: 3,
            timeout: Duration::from_secs(1),
            threads: None,
            sockets: None,
            pids: Vec::new(),
            seed: None,
            progress: Progress::Quiet,
        }
    }
}

/// One run at one stream count.
#[derive(Clone, Debug, Serialize)]
pub struct RrRun {
    /// Answers received within the run's duration, per second.
    pub ops_per_s: f64,
    /// Wall time from the first query to the last answer or timeout.
    pub elapsed_s: f64,
    /// Latency of every answer of the run.
    pub latency: LatencySummary,
    /// What became of the queries.
    pub tally: Tally,
    /// Server CPU and memory (with `pids`).
    pub server_usage: Option<ServerUsage>,
    /// This tool's CPU.
    pub tool: ToolUsage,
    /// Share of the machine's CPU time stolen by the hypervisor during the run.
    pub steal_pct: Option<f64>,
}

/// One stream count of the sweep: its runs and their combination.
#[derive(Clone, Debug, Serialize)]
pub struct RrPoint {
    /// Number of streams.
    pub streams: usize,
    /// Median of the runs' ops/s (the table's figure).
    pub ops_per_s: f64,
    /// Latency over all runs of this point.
    pub latency: LatencySummary,
    /// Totals over all runs.
    pub tally: Tally,
    /// Server usage summed over the runs.
    pub server_usage: Option<ServerUsage>,
    /// Tool usage summed over the runs.
    pub tool: ToolUsage,
    /// Mean steal over the runs.
    pub steal_pct: Option<f64>,
    /// Worker threads and UDP sockets used.
    pub threads: usize,
    /// UDP sockets used.
    pub sockets: usize,
    /// Each run.
    pub runs: Vec<RrRun>,
}

/// The highest point of the sweep.
#[derive(Clone, Debug, Serialize)]
pub struct RrPeak {
    /// Streams at the peak.
    pub streams: usize,
    /// Median ops/s there.
    pub ops_per_s: f64,
}

/// The result of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct RrReport {
    /// Always "rr".
    pub mode: &'static str,
    /// The server under test.
    pub server: String,
    /// Queries in the list.
    pub queries: usize,
    /// Length of each run.
    pub duration_s: f64,
    /// Runs per point.
    pub runs: usize,
    /// Timeout.
    pub timeout_ms: f64,
    /// One entry per stream count, in the order run.
    pub points: Vec<RrPoint>,
    /// The point with the highest median ops/s.
    pub peak: Option<RrPeak>,
}

impl RrReport {
    /// The sweep as a table, then the peak.
    pub fn table(&self) -> String {
        let with_server = self.points.iter().any(|p| p.server_usage.is_some());
        let mut head: Vec<&str> = vec![
            "streams", "ops/s", "runs", "mean ms", "p50 ms", "p99 ms", "p99.9 ms", "lost",
        ];
        if with_server {
            head.extend(["srv q/CPU-s", "srv CPU-s/1k", "srv CPU%"]);
        }
        head.extend(["tool CPU%", "tool us/q", "steal%"]);
        let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
        for p in &self.points {
            let runs: Vec<String> = p
                .runs
                .iter()
                .map(|r| format!("{:.0}", r.ops_per_s))
                .collect();
            let mut row = vec![
                p.streams.to_string(),
                group(p.ops_per_s),
                runs.join("/"),
                opt_ms(p.latency.mean_ms),
                opt_ms(p.latency.p50_ms),
                opt_ms(p.latency.p99_ms),
                opt_ms(p.latency.p999_ms),
                p.tally.lost.to_string(),
            ];
            if with_server {
                match &p.server_usage {
                    Some(s) => row.extend([
                        group(s.queries_per_cpu_s),
                        format!("{:.4}", s.cpu_s_per_1k_answers),
                        format!("{:.0}", s.cpu_pct),
                    ]),
                    None => row.extend(["-".into(), "-".into(), "-".into()]),
                }
            }
            row.extend([
                format!("{:.0}", p.tool.cpu_pct),
                format!("{:.2}", p.tool.cpu_us_per_query),
                p.steal_pct.map_or("-".into(), |s| format!("{s:.0}")),
            ]);
            rows.push(row);
        }
        let mut out = format!(
            "DNS_RR {}: {} queries, {} s x {} runs per point, timeout {} ms\n",
            self.server, self.queries, self.duration_s, self.runs, self.timeout_ms
        );
        out.push_str(&report::table(&rows));
        if let Some(peak) = &self.peak {
            out.push_str(&format!(
                "peak: {} ops/s at {} streams\n",
                group(peak.ops_per_s),
                peak.streams
            ));
        }
        if let Some(p) = self.points.iter().find(|p| p.server_usage.is_some()) {
            let s = p.server_usage.as_ref().expect("checked");
            let last = self
                .points
                .iter()
                .rev()
                .find_map(|p| p.server_usage.as_ref())
                .unwrap_or(s);
            out.push_str(&format!(
                "server memory: {} KiB at start, {} KiB at end\n",
                group(s.rss_start_kib as f64),
                group(last.rss_end_kib as f64)
            ));
        }
        let total = self.points.iter().fold(Tally::default(), |mut t, p| {
            t.sent += p.tally.sent;
            t.lost += p.tally.lost;
            t
        });
        let odd: Vec<String> = self
            .points
            .iter()
            .filter(|p| {
                p.tally.mismatched
                    + p.tally.unexpected
                    + p.tally.send_errors
                    + p.tally.recv_errors
                    + p.tally.truncated
                    > 0
            })
            .map(|p| format!("{} streams: {}", p.streams, p.tally.rcode_line()))
            .collect();
        out.push_str(&format!(
            "queries sent {}, lost {}\n",
            group(total.sent as f64),
            group(total.lost as f64)
        ));
        for line in odd {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}
