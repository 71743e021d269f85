//! Rate mode (open loop, like Flamethrower): a fixed query rate for a duration, over UDP or
//! pipelined TCP, with one line per second (sent, received, min/avg/max and p99 latency) and
//! totals of every response code and of timeouts.
//!
//! Sending follows a schedule, not the answers: query k is due at k / rate seconds. A worker
//! wakes when its next query is due but at least a pacing tick after its last turn (or
//! earlier, when a query expires or, over TCP, an answer arrives: UDP answers wait for the
//! next turn with their kernel arrival times), sends what fell due in batches, and never
//! waits for an answer before sending.
//!
//! This module owns the public types (the run's configuration, its seconds and its report)
//! and their text; the work is in three submodules:
//! - `run`: [`run_rate`]: the schedule shared out between worker threads, every socket or
//!   connection opened before the clock starts, the threads run and their totals summed;
//! - `worker`: one worker thread, the loop that follows its share of the schedule;
//! - `seconds`: the workers' per-second counts gathered into [`RateSecond`] rows, each
//!   completed (progress line, server sample with PIDs) once every worker has moved past it.

use crate::account::{ServerUsage, ToolUsage};
use crate::report::{self, group, opt_ms, LatencySummary, Tally};
use crate::Progress;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::Duration;

mod run;
mod seconds;
mod worker;

pub use run::run_rate;

/// UDP sockets or TCP connections when not given.
pub const DEFAULT_CONNECTIONS: usize = 4;

/// The pacing tick when not given: a worker sleeps at least this long between sending turns
/// and sends what fell due meanwhile as one batch (Flamethrower's default is the same: a
/// batch every millisecond). A sleep and wake-up is the dearest thing the tool does, dearer
/// than a query's whole kernel path (docs/bench-lab.md, "How it stays out of the way"), so
/// the tool sleeps once per tick, not once per few queries. The price is a burstier load: a
/// tick's queries reach the server at once, so the last of a burst waits while the server
/// answers the others, and the server wakes once per burst, so it spends less CPU per query
/// than under an even load. `--tick 100us` spreads the load ten times finer at about twice
/// the tool's CPU per query.
pub const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// A fixed-rate run.
#[derive(Clone, Debug)]
pub struct RateConfig {
    /// The server under test (IPv4 or IPv6 follows this address).
    pub server: SocketAddr,
    /// Queries per second to send.
    pub qps: f64,
    /// How long to send.
    pub duration: Duration,
    /// Use pipelined TCP instead of UDP.
    pub tcp: bool,
    /// TCP connections, or UDP sockets (default [`DEFAULT_CONNECTIONS`]).
    pub connections: Option<usize>,
    /// A query unanswered for this long is counted as a timeout.
    pub timeout: Duration,
    /// Worker threads (default: 1, or 2 above 150k queries/s).
    pub threads: Option<usize>,
    /// The shortest sleep between sending turns (default [`DEFAULT_TICK`]). Shorter spreads
    /// the queries more evenly and costs more CPU per query.
    pub tick: Option<Duration>,
    /// Server processes whose CPU time and memory to sample.
    pub pids: Vec<u32>,
    /// Seed of the random start points (default: random).
    pub seed: Option<u64>,
    /// Where to print the line of each second.
    pub progress: Progress,
}

impl RateConfig {
    /// A run with defaults: UDP, 1 s timeout.
    pub fn new(server: SocketAddr, qps: f64, duration: Duration) -> Self {
        Self {
            server,
            qps,
            duration,
            tcp: false,
            connections: None,
            timeout: Duration::from_secs(1),
            threads: None,
            tick: None,
            pids: Vec::new(),
            seed: None,
            progress: Progress::Quiet,
        }
    }
}

/// One second of a rate run. Sends count in the second they left, answers and timeouts in
/// the second they arrived or expired; seconds after the sending window hold late answers.
#[derive(Clone, Debug, Serialize)]
pub struct RateSecond {
    /// End of this second, seconds since the start.
    pub t_s: u64,
    /// Queries sent.
    pub sent: u64,
    /// Answers received.
    pub received: u64,
    /// Queries that timed out.
    pub timeouts: u64,
    /// Smallest latency of the answers.
    pub min_ms: Option<f64>,
    /// Mean latency.
    pub avg_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Largest latency.
    pub max_ms: Option<f64>,
    /// Server CPU use in this second, percent of one core (with `pids`).
    pub server_cpu_pct: Option<f64>,
    /// Server resident memory at the end of the second, KiB (with `pids`).
    pub server_rss_kib: Option<u64>,
}

/// The result of a rate run.
#[derive(Clone, Debug, Serialize)]
pub struct RateReport {
    /// Always "rate".
    pub mode: &'static str,
    /// The server under test.
    pub server: String,
    /// "udp" or "tcp".
    pub transport: &'static str,
    /// "IPv4" or "IPv6".
    pub family: &'static str,
    /// Queries per second asked for.
    pub qps_target: f64,
    /// Sending window.
    pub duration_s: f64,
    /// Timeout.
    pub timeout_ms: f64,
    /// UDP sockets or TCP connections.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// The pacing tick: each worker sends what fell due as one burst at most this often.
    pub tick_ms: f64,
    /// Queries per burst of one worker at the asked rate (at least 1).
    pub burst: f64,
    /// Queries sent per second of the window.
    pub sent_qps: f64,
    /// Answers per second of the window.
    pub answered_qps: f64,
    /// Wall time from the first query to the last answer or timeout.
    pub elapsed_s: f64,
    /// Totals: sent, answered, every RCODE, timeouts (`lost`).
    pub tally: Tally,
    /// Latency of every answer.
    pub latency: LatencySummary,
    /// Per second.
    pub seconds: Vec<RateSecond>,
    /// Server CPU and memory (with `pids`).
    pub server_usage: Option<ServerUsage>,
    /// This tool's CPU.
    pub tool: ToolUsage,
    /// Share of the machine's CPU time stolen by the hypervisor.
    pub steal_pct: Option<f64>,
}

impl RateSecond {
    /// The live line of this second.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{:>4}s  sent {:>9}  recv {:>9}  min/avg/max {}/{}/{} ms  p99 {} ms  timeouts {}",
            self.t_s,
            group(self.sent as f64),
            group(self.received as f64),
            opt_ms(self.min_ms),
            opt_ms(self.avg_ms),
            opt_ms(self.max_ms),
            opt_ms(self.p99_ms),
            group(self.timeouts as f64)
        );
        if let Some(c) = self.server_cpu_pct {
            s.push_str(&format!("  srv CPU {c:.0}%"));
        }
        if let Some(r) = self.server_rss_kib {
            s.push_str(&format!("  RSS {} KiB", group(r as f64)));
        }
        s
    }
}

impl RateReport {
    /// The totals after the per-second lines.
    pub fn table(&self) -> String {
        let mut out = format!(
            "rate {} over {} ({}), {} connection(s), {} thread(s): asked {} q/s for {} s, in bursts of ~{} every {} ms (--tick)\n",
            self.server,
            self.transport.to_uppercase(),
            self.family,
            self.connections,
            self.threads,
            group(self.qps_target),
            self.duration_s,
            group(self.burst),
            self.tick_ms
        );
        let l = &self.latency;
        let rows = vec![
            vec![
                "sent".into(),
                "answered".into(),
                "sent q/s".into(),
                "answered q/s".into(),
                "min ms".into(),
                "avg ms".into(),
                "p50 ms".into(),
                "p99 ms".into(),
                "p99.9 ms".into(),
                "max ms".into(),
            ],
            vec![
                group(self.tally.sent as f64),
                group(self.tally.answered as f64),
                group(self.sent_qps),
                group(self.answered_qps),
                opt_ms(l.min_ms),
                opt_ms(l.mean_ms),
                opt_ms(l.p50_ms),
                opt_ms(l.p99_ms),
                opt_ms(l.p999_ms),
                opt_ms(l.max_ms),
            ],
        ];
        out.push_str(&report::table(&rows));
        out.push_str(&format!("responses: {}\n", self.tally.rcode_line()));
        if let Some(s) = &self.server_usage {
            out.push_str(&format!(
                "server: {:.2} CPU-s ({:.0}% of a core), {:.4} CPU-s per 1k answers, {} queries per CPU-second; RSS {} -> {} KiB\n",
                s.cpu_s,
                s.cpu_pct,
                s.cpu_s_per_1k_answers,
                group(s.queries_per_cpu_s),
                group(s.rss_start_kib as f64),
                group(s.rss_end_kib as f64)
            ));
        }
        out.push_str(&format!(
            "tool: {:.2} CPU-s ({:.0}% of a core), {:.2} us per query sent, {:.2} us per answer{}\n",
            self.tool.cpu_s,
            self.tool.cpu_pct,
            self.tool.cpu_us_per_query,
            self.tool.cpu_us_per_answer,
            self.steal_pct
                .map_or(String::new(), |s| format!("; machine steal {s:.0}%"))
        ));
        out
    }
}
