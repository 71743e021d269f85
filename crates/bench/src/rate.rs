//! Rate mode (open loop, like Flamethrower): a fixed query rate for a duration, over UDP or
//! pipelined TCP, with one line per second (sent, received, min/avg/max and p99 latency) and
//! totals of every response code and of timeouts.
//!
//! Sending follows a schedule, not the answers: query k is due at k / rate seconds. A worker
//! wakes when the next few queries are due (or an answer arrives, or a query expires), sends
//! what is due in batches, and never waits for an answer before sending.

use crate::account::{self, Meter, ServerUsage, ToolUsage};
use crate::engine::{self, Clock, Counters, TcpSet, Transport, UdpSet, Worker};
use crate::hist::Histogram;
use crate::queries::QueryList;
use crate::report::{self, group, opt_ms, LatencySummary, Tally};
use crate::sys::{self, SEND_BATCH};
use crate::{Error, Progress};
use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{mpsc, Barrier};
use std::time::{Duration, Instant};

/// UDP sockets or TCP connections when not given.
pub const DEFAULT_CONNECTIONS: usize = 4;

/// Queries a worker sends at most per loop turn before it reads answers again.
const MAX_PER_TURN: usize = 8 * SEND_BATCH;

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

/// How late after the window a worker may still send queries that were due inside it.
const LATE_GRACE: u64 = 50_000_000;

/// Queries in flight one UDP socket should carry at most (its ID space is 65,536).
const IN_FLIGHT_PER_SOCKET: f64 = 50_000.0;

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

/// What a worker reports when one of its seconds ends.
struct SecondMsg {
    thread: usize,
    second: u64,
    sent: u64,
    received: u64,
    timeouts: u64,
    hist: Histogram,
}

struct WorkerOut {
    counters: Counters,
    hist: Histogram,
}

/// One worker's share of the schedule.
#[derive(Clone, Copy)]
struct Plan {
    /// Queries per second.
    rate: f64,
    /// Queries to send in all.
    total: u64,
    duration: u64,
    timeout: u64,
    /// Shortest sleep between sending turns, ns.
    tick: u64,
}

impl Plan {
    /// Queries due by `now` (the first is due at 0).
    fn due_by(&self, now: u64) -> u64 {
        ((now as f64 * self.rate / 1e9) as u64 + 1).min(self.total)
    }

    /// When `count` queries will be due.
    fn time_of(&self, count: u64) -> u64 {
        ((count.saturating_sub(1)) as f64 * 1e9 / self.rate).ceil() as u64
    }
}

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

/// Collects the workers' seconds; a second is complete (printed, with a server sample) once
/// every worker has moved past it.
struct Seconds<'a> {
    marks: Vec<u64>,
    pending: Vec<(u64, u64, u64, Histogram)>,
    rows: Vec<RateSecond>,
    pids: &'a [u32],
    progress: Progress,
    last_cpu: Option<(Instant, u64)>,
    ticks: f64,
}

impl<'a> Seconds<'a> {
    fn new(threads: usize, pids: &'a [u32], progress: Progress) -> Self {
        Self {
            marks: vec![0; threads],
            pending: Vec::new(),
            rows: Vec::new(),
            pids,
            progress,
            last_cpu: None,
            ticks: sys::clock_ticks_per_second() as f64,
        }
    }

    fn start(&mut self, at: Instant) {
        if !self.pids.is_empty() {
            self.last_cpu = account::sample_pids(self.pids)
                .ok()
                .map(|s| (at, s.cpu_ticks));
        }
    }

    fn add(&mut self, m: SecondMsg) {
        let i = m.second as usize;
        while self.pending.len() <= i {
            self.pending.push((0, 0, 0, Histogram::new()));
        }
        let p = &mut self.pending[i];
        p.0 += m.sent;
        p.1 += m.received;
        p.2 += m.timeouts;
        p.3.merge(&m.hist);
        self.marks[m.thread] = self.marks[m.thread].max(m.second + 1);
        let done = self.marks.iter().copied().min().unwrap_or(0);
        while (self.rows.len() as u64) < done {
            self.complete(true);
        }
    }

    fn flush_all(&mut self) {
        while self.rows.len() < self.pending.len() {
            self.complete(false);
        }
    }

    fn complete(&mut self, sample: bool) {
        let i = self.rows.len();
        let (sent, received, timeouts, hist) = match self.pending.get_mut(i) {
            Some(p) => (p.0, p.1, p.2, std::mem::take(&mut p.3)),
            None => (0, 0, 0, Histogram::new()),
        };
        let (mut cpu, mut rss) = (None, None);
        if sample && !self.pids.is_empty() {
            if let Ok(s) = account::sample_pids(self.pids) {
                let now = Instant::now();
                if let Some((at, ticks)) = self.last_cpu {
                    let wall = now.duration_since(at).as_secs_f64();
                    if wall > 0.0 {
                        cpu = Some(
                            s.cpu_ticks.saturating_sub(ticks) as f64 / self.ticks * 100.0 / wall,
                        );
                    }
                }
                self.last_cpu = Some((now, s.cpu_ticks));
                rss = Some(s.rss_kib);
            }
        }
        let l = LatencySummary::from_histogram(&hist);
        let row = RateSecond {
            t_s: i as u64 + 1,
            sent,
            received,
            timeouts,
            min_ms: l.min_ms,
            avg_ms: l.mean_ms,
            p99_ms: l.p99_ms,
            max_ms: l.max_ms,
            server_cpu_pct: cpu,
            server_rss_kib: rss,
        };
        self.progress.line(&row.line());
        self.rows.push(row);
    }
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

/// One worker: follows its share of the schedule on its own sockets or connections.
fn rate_worker<'q, T: Transport<'q>>(
    t: &mut T,
    q: &'q QueryList,
    start: usize,
    plan: Plan,
    barrier: &Barrier,
    tx: &mpsc::Sender<SecondMsg>,
    thread: usize,
) -> WorkerOut {
    sys::tight_timer_slack();
    let mut hist = Histogram::new();
    let mut pfds: Vec<libc::pollfd> = Vec::with_capacity(16);
    let mut second = 0u64;
    let mut sec = SecondMsg {
        thread,
        second: 0,
        sent: 0,
        received: 0,
        timeouts: 0,
        hist: Histogram::new(),
    };
    let tick = plan.tick;
    barrier.wait();
    let mut w = Worker {
        q,
        pos: start,
        clock: Clock::start(),
        c: Counters::default(),
    };
    let mut now = 0u64;
    let safety_end = plan.duration + plan.timeout + 2_000_000_000;
    loop {
        let s = now / 1_000_000_000;
        if s != second {
            let next = SecondMsg {
                thread,
                second: s,
                sent: 0,
                received: 0,
                timeouts: 0,
                hist: Histogram::new(),
            };
            let _ = tx.send(std::mem::replace(&mut sec, next));
            second = s;
        }
        // A worker woken late at the end still sends what was due before the end (bounded).
        let sending = w.c.sent < plan.total && now < plan.duration + LATE_GRACE;
        // `behind`: more is due now; `blocked`: every socket is full (wait for room).
        let (mut behind, mut blocked) = (false, false);
        if sending {
            let due = (plan.due_by(now) - w.c.sent).min(MAX_PER_TURN as u64) as usize;
            if due > 0 {
                let n = t.send(&mut w, due) as u64;
                w.c.sent += n;
                sec.sent += n;
                blocked = n < due as u64;
                behind = !blocked && plan.due_by(now) > w.c.sent;
            }
        }
        // Answers after sending, so the queries leave on time and their send time is fresh.
        let sec_ref = &mut sec;
        let hist_ref = &mut hist;
        t.receive(&pfds, &mut w, &mut |slot, at| {
            let lat = at.saturating_sub(slot.sent);
            hist_ref.record(lat);
            sec_ref.hist.record(lat);
            sec_ref.received += 1;
        });
        let lost = &mut w.c.lost;
        let timeouts = &mut sec.timeouts;
        let next_expiry = t.expire(now, plan.timeout, &mut |_| {
            *lost += 1;
            *timeouts += 1;
        });
        if (!sending && t.in_flight() == 0) || now > safety_end {
            break;
        }
        let mut wake = next_expiry
            .unwrap_or(u64::MAX)
            .min((second + 1) * 1_000_000_000);
        if sending && blocked {
            wake = wake.min(now + 1_000_000);
        } else if sending {
            // Sleep at least one tick: what falls due meanwhile goes out as one batch.
            let next = plan.time_of(w.c.sent + 1).max(now + tick);
            wake = wake.min(next);
        }
        let wait = if behind { 0 } else { wake.saturating_sub(now) };
        t.poll_fds(&mut pfds);
        let _ = sys::poll(&mut pfds, Duration::from_nanos(wait));
        // The turn's clock read (a send call reads it once more, after itself).
        now = w.clock.now();
    }
    // Only after the safety limit can queries still be in flight: they count as lost.
    let lost = &mut w.c.lost;
    t.expire(u64::MAX / 2, 0, &mut |_| *lost += 1);
    let _ = tx.send(sec);
    WorkerOut {
        counters: w.c,
        hist,
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
