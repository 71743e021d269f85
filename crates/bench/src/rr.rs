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

use crate::account::{self, Meter, ServerUsage, ToolUsage};
use crate::engine::{self, handle_response, Clock, Counters};
use crate::hist::Histogram;
use crate::queries::QueryList;
use crate::report::{self, group, opt_ms, LatencySummary, Tally};
use crate::sys::{self, RecvBatch, SendBatch, BATCH, SEND_BATCH};
use crate::track::Tracker;
use crate::{Error, Progress};
use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// UDP sockets per run when not given (as dnsperf's `-c 4`): a server with several
/// SO_REUSEPORT workers spreads clients by source port, so one socket would reach one worker.
pub const DEFAULT_SOCKETS: usize = 4;

/// Streams waiting for answers from which the next sleep coalesces arrivals.
const COALESCE_MIN: usize = 16;
/// The coalescing sleep is the smoothed round trip divided by this. A sleep and wake-up costs
/// 10-30 us of CPU in these VMs, so the answers taken per wake-up set most of what a query
/// costs above the kernel's fixed path: at 200 streams, 1/20 of the round trip (the old tick)
/// took ~18 answers per wake-up, 1/8 takes ~55 (2026-11-25, `vs_dnsperf.py --modes rr`:
/// 1.89 -> 1.56 us per answer with the streams shared by the sockets, 1.39 at 1/4).
const COALESCE_DIV: u64 = 8;
/// The longest coalescing sleep.
const COALESCE: u64 = 200_000;
/// Shorter sleeps save nothing over waking per answer.
const MIN_COALESCE: u64 = 10_000;

/// Streams one socket may carry (its 16-bit ID space, with room to spare).
const STREAMS_PER_SOCKET: usize = 50_000;

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

struct WorkerOut {
    counters: Counters,
    hist: Histogram,
    in_window: u64,
}

/// One worker: its sockets, and the start points of its streams (grouped by socket only to
/// share streams out between threads).
///
/// A stream is not tied to a socket: each turn, every ready stream's next query goes into one
/// batch, sent on the worker's sockets in turn (up to [`SEND_BATCH`] per call, the next call
/// on the next socket), so the queries of a turn leave in as few calls and as large UDP GSO
/// groups as possible. The kernel's cost per datagram falls steeply with the group's size
/// (see [`SEND_BATCH`]); with the streams split four ways the groups of a turn were a quarter
/// as large. Over the turns every socket (source port) still carries its share.
fn rr_worker(
    q: &QueryList,
    socks: &[(RawFd, &[u32])],
    duration: u64,
    timeout: u64,
    barrier: &Barrier,
) -> WorkerOut {
    let n = socks.len();
    let nq = q.len() as u32;
    let fds: Vec<RawFd> = socks.iter().map(|s| s.0).collect();
    let mut trackers: Vec<Tracker> = socks.iter().map(|_| Tracker::new()).collect();
    // Position in the list of each stream of this worker, and the streams ready to send
    // (every stream is either ready or in flight on one of the sockets).
    let mut pos: Vec<u32> = socks.iter().flat_map(|s| s.1.iter().copied()).collect();
    let streams = pos.len();
    let mut ready: Vec<u32> = (0..streams as u32).rev().collect();
    let mut want_write = vec![false; n];
    let mut next_sock = 0usize;
    let mut batch = SendBatch::new();
    let mut rb = RecvBatch::new();
    let mut pfds: Vec<libc::pollfd> = Vec::with_capacity(n);
    let mut ids = [0u16; SEND_BATCH];
    let mut batch_streams = [0u32; SEND_BATCH];
    let mut c = Counters::default();
    let mut hist = Histogram::new();
    let mut in_window = 0u64;

    // Smoothed round trip (ns), for the coalescing tick.
    let mut rtt = 0u64;
    barrier.wait();
    let mut clock = Clock::start();
    let mut now = 0u64;
    loop {
        let sending = now < duration;
        if !sending {
            ready.clear();
        }
        // Answers were read since the turn's clock reading: the sends start from a fresh one.
        if !ready.is_empty() {
            clock.now();
        }
        // Every ready stream sends its next query: batches go to the sockets in turn, and a
        // socket whose buffer is full (or whose ID space is) waits for the next turn.
        let mut tried = 0;
        while !ready.is_empty() && tried < n {
            let si = next_sock;
            next_sock = (next_sock + 1) % n;
            tried += 1;
            if want_write[si] {
                continue;
            }
            let tracker = &mut trackers[si];
            let mut m = 0;
            while m < SEND_BATCH {
                let Some(&st) = ready.last() else { break };
                let qi = pos[st as usize];
                let Some(id) = tracker.reserve(qi, st) else {
                    break;
                };
                ready.pop();
                batch.push(id, q.body(qi as usize));
                ids[m] = id;
                batch_streams[m] = st;
                m += 1;
            }
            if m == 0 {
                continue;
            }
            // Unsent queries' streams are ready again; refused or unreachable ones time out
            // and count as lost.
            let sent = engine::send_batch(
                &mut batch,
                fds[si],
                &ids[..m],
                tracker,
                &mut clock,
                &mut c,
                |k| ready.push(batch_streams[k]),
            );
            c.sent += sent as u64;
            if sent < m {
                want_write[si] = true;
            } else {
                // This socket took all it was offered: what is left may go on the next.
                tried = 0;
            }
        }
        // Lost queries: the stream moves on to its next query.
        let mut wake = if sending { duration } else { u64::MAX };
        for tracker in &mut trackers {
            let ready = &mut ready;
            let pos = &mut pos;
            let lost = &mut c.lost;
            let next = tracker.expire(now, timeout, |s| {
                *lost += 1;
                if sending {
                    let p = &mut pos[s.stream as usize];
                    *p = if *p + 1 == nq { 0 } else { *p + 1 };
                    ready.push(s.stream);
                }
            });
            if let Some(d) = next {
                wake = wake.min(d);
            }
        }
        let in_flight: usize = trackers.iter().map(Tracker::in_flight).sum();
        if !sending && in_flight == 0 {
            break;
        }
        let can_send = sending && !ready.is_empty() && want_write.iter().any(|&w| !w);
        let mut wait = if can_send {
            0
        } else {
            wake.saturating_sub(now)
        };
        // With many streams waiting, coalesce: sleep a short tick without waking per answer,
        // then take all that arrived in one go (and send the next queries as one batch). The
        // tick is at most 1/8 of the smoothed round trip, so a stream's cycle grows by at most
        // 12.5 % (6 % on average) while the server has idle time, and not at all while it has
        // a queue; latency figures are unaffected (they use kernel arrival times).
        let coalesce_ns = (rtt / COALESCE_DIV).min(COALESCE);
        let coalesce = wait > 0 && in_flight >= COALESCE_MIN && coalesce_ns >= MIN_COALESCE;
        pfds.clear();
        pfds.extend(fds.iter().zip(&want_write).map(|(&fd, &w)| libc::pollfd {
            fd,
            events: if coalesce { 0 } else { libc::POLLIN } | if w { libc::POLLOUT } else { 0 },
            revents: 0,
        }));
        if coalesce {
            wait = wait.min(coalesce_ns);
        }
        let _ = sys::poll(&mut pfds, Duration::from_nanos(wait));
        if coalesce {
            // Read every socket that has queries out (the others can only hold strays, read
            // when the socket is next used); a turn's queries often went out on one of them.
            for (p, t) in pfds.iter_mut().zip(&trackers) {
                if t.in_flight() > 0 {
                    p.revents |= libc::POLLIN;
                }
            }
        }
        // The one clock read of this turn: the send time of the next queries. Answers carry
        // their kernel arrival time.
        now = clock.now();
        let sending = now < duration;
        for si in 0..n {
            let p = pfds[si];
            if p.revents & libc::POLLOUT != 0 {
                want_write[si] = false;
            }
            if !sys::readable(&p) {
                continue;
            }
            for _ in 0..16 {
                let k = rb.recv(fds[si]).unwrap_or_else(|_| {
                    c.recv_errors += 1;
                    0
                });
                for i in 0..k {
                    let Some(slot) = handle_response(rb.get(i), &mut trackers[si], q, &mut c)
                    else {
                        continue;
                    };
                    let at = clock.arrival(rb.arrival(i), now);
                    let lat = at.saturating_sub(slot.sent);
                    rtt = rtt - rtt / 16 + lat / 16;
                    hist.record(lat);
                    if at <= duration {
                        in_window += 1;
                    }
                    if sending {
                        let p = &mut pos[slot.stream as usize];
                        *p = if *p + 1 == nq { 0 } else { *p + 1 };
                        ready.push(slot.stream);
                    }
                }
                if k < BATCH {
                    break;
                }
            }
        }
    }
    WorkerOut {
        counters: c,
        hist,
        in_window,
    }
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
