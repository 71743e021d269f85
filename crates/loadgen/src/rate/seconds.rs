//! rate::seconds -- the run's seconds: each worker sends a `SecondMsg` when one of its seconds
//! ends; `Seconds` adds them up and completes a second (a [`RateSecond`] row with its
//! progress line and, given PIDs, the server's CPU and memory sampled then) once every worker
//! has moved past it. Seconds still open when the workers finish get no sample.

use super::RateSecond;
use crate::account;
use crate::hist::Histogram;
use crate::report::LatencySummary;
use crate::sys;
use crate::Progress;
use std::time::Instant;

/// What a worker reports when one of its seconds ends.
pub(super) struct SecondMsg {
    pub(super) thread: usize,
    pub(super) second: u64,
    pub(super) sent: u64,
    pub(super) received: u64,
    pub(super) timeouts: u64,
    pub(super) hist: Histogram,
}

/// Collects the workers' seconds; a second is complete (printed, with a server sample) once
/// every worker has moved past it.
pub(super) struct Seconds<'a> {
    marks: Vec<u64>,
    pending: Vec<(u64, u64, u64, Histogram)>,
    pub(super) rows: Vec<RateSecond>,
    pids: &'a [u32],
    progress: Progress,
    last_cpu: Option<(Instant, u64)>,
    ticks: f64,
}

impl<'a> Seconds<'a> {
    pub(super) fn new(threads: usize, pids: &'a [u32], progress: Progress) -> Self {
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

    pub(super) fn start(&mut self, at: Instant) {
        if !self.pids.is_empty() {
            self.last_cpu = account::sample_pids(self.pids)
                .ok()
                .map(|s| (at, s.cpu_ticks));
        }
    }

    pub(super) fn add(&mut self, m: SecondMsg) {
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

    pub(super) fn flush_all(&mut self) {
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
