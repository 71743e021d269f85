//! rate::run -- one rate run: [`run_rate`] checks the configuration, shares the queries, the
//! rate and the sockets or connections out between the worker threads (a `Plan` each), opens
//! every socket or connection before the clock starts, runs the workers while gathering their
//! seconds, and sums their counts and latencies into the [`RateReport`].

use super::seconds::{SecondMsg, Seconds};
use super::worker::{rate_worker, Plan, WorkerOut};
use super::{RateConfig, RateReport, DEFAULT_CONNECTIONS, DEFAULT_TICK};
use crate::account::Meter;
use crate::engine::{self, Counters, TcpSet, UdpSet};
use crate::hist::Histogram;
use crate::queries::QueryList;
use crate::report::{LatencySummary, Tally};
use crate::Error;
use std::net::UdpSocket;
use std::sync::{mpsc, Barrier};
use std::time::Instant;

/// Queries in flight one UDP socket should carry at most (its ID space is 65,536).
const IN_FLIGHT_PER_SOCKET: f64 = 50_000.0;

/// Runs a fixed-rate test.
pub fn run_rate(cfg: &RateConfig, queries: &QueryList) -> Result<RateReport, Error> {
    if cfg.qps.is_nan() || cfg.qps <= 0.0 || cfg.duration.is_zero() || cfg.timeout.is_zero() {
        return Err(Error::Config(
            "qps, duration and timeout must be positive".into(),
        ));
    }
    let total = (cfg.qps * cfg.duration.as_secs_f64()).round() as u64;
    if total == 0 {
        return Err(Error::Config(
            "qps x duration is less than one query".into(),
        ));
    }
    let threads = cfg
        .threads
        .unwrap_or(if cfg.qps > 150_000.0 { 2 } else { 1 })
        .max(1);
    let mut connections = cfg.connections.unwrap_or(DEFAULT_CONNECTIONS).max(threads);
    if !cfg.tcp {
        let need = (cfg.qps * cfg.timeout.as_secs_f64() / IN_FLIGHT_PER_SOCKET).ceil() as usize;
        connections = connections.max(need);
    }
    let mut rng = cfg
        .seed
        .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
    let duration = cfg.duration.as_nanos() as u64;
    let timeout = cfg.timeout.as_nanos() as u64;
    let tick = cfg.tick.unwrap_or(DEFAULT_TICK).as_nanos() as u64;
    let plans: Vec<(Plan, usize, usize)> = (0..threads)
        .map(|t| {
            let share = total / threads as u64 + u64::from((t as u64) < total % threads as u64);
            let conns = connections / threads + usize::from(t < connections % threads);
            let plan = Plan {
                rate: cfg.qps * share as f64 / total as f64,
                total: share,
                duration,
                timeout,
                tick,
            };
            (plan, conns, rng.usize(..queries.len()))
        })
        .collect();

    // Open every socket or connection before the clock starts.
    enum Conns {
        Udp(Vec<UdpSocket>),
        Tcp(TcpSet),
    }
    let mut opened = Vec::with_capacity(threads);
    for &(_, conns, _) in &plans {
        opened.push(if cfg.tcp {
            Conns::Tcp(TcpSet::connect(cfg.server, conns)?)
        } else {
            Conns::Udp(
                (0..conns)
                    .map(|_| engine::udp_socket(cfg.server))
                    .collect::<Result<_, _>>()?,
            )
        });
    }

    let barrier = Barrier::new(threads + 1);
    let (tx, rx) = mpsc::channel::<SecondMsg>();
    let meter = Meter::start(&cfg.pids)?;
    let mut seconds = Seconds::new(threads, &cfg.pids, cfg.progress);
    let (outs, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = opened
            .into_iter()
            .zip(&plans)
            .enumerate()
            .map(|(t, (conns, &(plan, _, start)))| {
                let tx = tx.clone();
                let barrier = &barrier;
                scope.spawn(move || match conns {
                    Conns::Udp(socks) => {
                        let mut set = UdpSet::new(&socks);
                        rate_worker(&mut set, queries, start, plan, barrier, &tx, t)
                    }
                    Conns::Tcp(mut set) => {
                        rate_worker(&mut set, queries, start, plan, barrier, &tx, t)
                    }
                })
            })
            .collect();
        drop(tx);
        barrier.wait();
        let start = Instant::now();
        seconds.start(start);
        while let Ok(msg) = rx.recv() {
            seconds.add(msg);
        }
        let outs: Vec<WorkerOut> = handles
            .into_iter()
            .map(|h| h.join().expect("rate worker panicked"))
            .collect();
        (outs, start.elapsed().as_secs_f64())
    });
    seconds.flush_all();

    let mut hist = Histogram::new();
    let mut c = Counters::default();
    for o in &outs {
        hist.merge(&o.hist);
        c.add(&o.counters);
    }
    let usage = meter.finish(elapsed, c.sent, c.answered);
    let window = cfg.duration.as_secs_f64();
    let in_window: u64 = seconds
        .rows
        .iter()
        .filter(|r| r.t_s as f64 <= window.ceil())
        .map(|r| r.received)
        .sum();
    Ok(RateReport {
        mode: "rate",
        server: cfg.server.to_string(),
        transport: if cfg.tcp { "tcp" } else { "udp" },
        family: if cfg.server.is_ipv4() { "IPv4" } else { "IPv6" },
        qps_target: cfg.qps,
        duration_s: window,
        timeout_ms: cfg.timeout.as_secs_f64() * 1e3,
        connections,
        threads,
        tick_ms: tick as f64 / 1e6,
        burst: (cfg.qps / threads as f64 * tick as f64 / 1e9).max(1.0),
        sent_qps: c.sent as f64 / window,
        answered_qps: in_window as f64 / window,
        elapsed_s: elapsed,
        tally: Tally::from_counters(&c),
        latency: LatencySummary::from_histogram(&hist),
        seconds: seconds.rows,
        server_usage: usage.server,
        tool: usage.tool,
        steal_pct: usage.steal_pct,
    })
}
