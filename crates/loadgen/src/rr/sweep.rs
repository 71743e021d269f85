//! rr::sweep -- the sweep over stream counts: [`run_rr`] runs every stream count once per
//! round, `rr_once` sets up one run (its sockets, the streams' random start points, the
//! worker threads, the CPU meter) and sums its workers up, and `point` combines a stream
//! count's runs into the table's row (median ops/s, merged latency, summed usage).

use super::worker::{rr_worker, WorkerOut};
use super::{RrConfig, RrPeak, RrPoint, RrReport, RrRun, DEFAULT_SOCKETS};
use crate::account::{self, Meter, ServerUsage, ToolUsage};
use crate::engine::{self, Counters};
use crate::hist::Histogram;
use crate::queries::QueryList;
use crate::report::{group, opt_ms, LatencySummary, Tally};
use crate::Error;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Barrier;
use std::time::Instant;

/// Streams one socket may carry (its 16-bit ID space, with room to spare).
const STREAMS_PER_SOCKET: usize = 50_000;

/// Runs a DNS_RR sweep.
pub fn run_rr(cfg: &RrConfig, queries: &QueryList) -> Result<RrReport, Error> {
    if cfg.streams.is_empty() || cfg.streams.contains(&0) {
        return Err(Error::Config("stream counts must be at least 1".into()));
    }
    if cfg.runs == 0 || cfg.duration.is_zero() || cfg.timeout.is_zero() {
        return Err(Error::Config(
            "runs, duration and timeout must be positive".into(),
        ));
    }
    let mut rng = cfg
        .seed
        .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
    let mut results: Vec<Vec<(RrRun, Histogram, Counters)>> = vec![Vec::new(); cfg.streams.len()];
    let mut shape = vec![(0, 0); cfg.streams.len()];
    for round in 0..cfg.runs {
        for (i, &streams) in cfg.streams.iter().enumerate() {
            let (run, hist, counters, threads, sockets) = rr_once(cfg, queries, streams, &mut rng)?;
            cfg.progress.line(&format!(
                "rr: {streams} streams, run {}/{}: {} ops/s, p50 {} ms, p99 {} ms, lost {}",
                round + 1,
                cfg.runs,
                group(run.ops_per_s),
                opt_ms(run.latency.p50_ms),
                opt_ms(run.latency.p99_ms),
                run.tally.lost
            ));
            shape[i] = (threads, sockets);
            results[i].push((run, hist, counters));
        }
    }
    let points: Vec<RrPoint> = cfg
        .streams
        .iter()
        .zip(results)
        .zip(shape)
        .map(|((&streams, runs), (threads, sockets))| point(streams, runs, threads, sockets))
        .collect();
    let peak = points
        .iter()
        .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
        .map(|p| RrPeak {
            streams: p.streams,
            ops_per_s: p.ops_per_s,
        });
    Ok(RrReport {
        mode: "rr",
        server: cfg.server.to_string(),
        queries: queries.len(),
        duration_s: cfg.duration.as_secs_f64(),
        runs: cfg.runs,
        timeout_ms: cfg.timeout.as_secs_f64() * 1e3,
        points,
        peak,
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn point(
    streams: usize,
    runs: Vec<(RrRun, Histogram, Counters)>,
    threads: usize,
    sockets: usize,
) -> RrPoint {
    let mut hist = Histogram::new();
    let mut counters = Counters::default();
    for (_, h, c) in &runs {
        hist.merge(h);
        counters.add(c);
    }
    let runs: Vec<RrRun> = runs.into_iter().map(|(r, _, _)| r).collect();
    let wall: f64 = runs.iter().map(|r| r.elapsed_s).sum();
    let server_runs: Vec<&ServerUsage> = runs
        .iter()
        .filter_map(|r| r.server_usage.as_ref())
        .collect();
    let server = (!server_runs.is_empty())
        .then(|| account::sum_server(&server_runs, wall, counters.answered));
    let tool_runs: Vec<&ToolUsage> = runs.iter().map(|r| &r.tool).collect();
    let steal: Vec<f64> = runs.iter().filter_map(|r| r.steal_pct).collect();
    RrPoint {
        streams,
        ops_per_s: median(&mut runs.iter().map(|r| r.ops_per_s).collect::<Vec<_>>()),
        latency: LatencySummary::from_histogram(&hist),
        tally: Tally::from_counters(&counters),
        server_usage: server,
        tool: account::sum_tool(&tool_runs, wall, counters.sent, counters.answered),
        steal_pct: (!steal.is_empty()).then(|| steal.iter().sum::<f64>() / steal.len() as f64),
        threads,
        sockets,
        runs,
    }
}

type RunResult = (RrRun, Histogram, Counters, usize, usize);

/// One run at one stream count.
fn rr_once(
    cfg: &RrConfig,
    q: &QueryList,
    streams: usize,
    rng: &mut fastrand::Rng,
) -> Result<RunResult, Error> {
    let threads = cfg.threads.unwrap_or(1).clamp(1, streams);
    let min_sockets = streams.div_ceil(STREAMS_PER_SOCKET).max(threads);
    let nsock = cfg
        .sockets
        .unwrap_or(DEFAULT_SOCKETS)
        .clamp(min_sockets, streams.max(min_sockets));
    let sockets: Vec<UdpSocket> = (0..nsock)
        .map(|_| engine::udp_socket(cfg.server))
        .collect::<Result<_, _>>()?;
    // Streams are dealt out to sockets, s % nsock, and socket i belongs to thread i % threads;
    // within a thread a stream's queries may leave on any of its sockets.
    let mut starts: Vec<Vec<u32>> = vec![Vec::new(); nsock];
    for s in 0..streams {
        starts[s % nsock].push(rng.u32(..q.len() as u32));
    }
    let duration = cfg.duration.as_nanos() as u64;
    let timeout = cfg.timeout.as_nanos() as u64;
    let barrier = Barrier::new(threads + 1);
    let meter = Meter::start(&cfg.pids)?;
    let (outs, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<(RawFd, &[u32])> = (t..nsock)
                    .step_by(threads)
                    .map(|i| (sockets[i].as_raw_fd(), starts[i].as_slice()))
                    .collect();
                let barrier = &barrier;
                scope.spawn(move || rr_worker(q, &mine, duration, timeout, barrier))
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let outs: Vec<WorkerOut> = handles
            .into_iter()
            .map(|h| h.join().expect("rr worker panicked"))
            .collect();
        (outs, start.elapsed().as_secs_f64())
    });
    let mut hist = Histogram::new();
    let mut c = Counters::default();
    let mut in_window = 0;
    for o in &outs {
        hist.merge(&o.hist);
        c.add(&o.counters);
        in_window += o.in_window;
    }
    let usage = meter.finish(elapsed, c.sent, c.answered);
    drop(sockets);
    let run = RrRun {
        ops_per_s: in_window as f64 / cfg.duration.as_secs_f64(),
        elapsed_s: elapsed,
        latency: LatencySummary::from_histogram(&hist),
        tally: Tally::from_counters(&c),
        server_usage: usage.server,
        tool: usage.tool,
        steal_pct: usage.steal_pct,
    };
    Ok((run, hist, c, threads, nsock))
}
