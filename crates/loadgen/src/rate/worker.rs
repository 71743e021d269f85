//! rate::worker -- one worker thread of a rate run: its share of the schedule (`Plan`: query
//! k is due at k / rate) and the loop that follows it on its own sockets or connections:
//! send what is due, read the answers, expire lost queries, sleep at least a tick.

use super::seconds::SecondMsg;
use crate::engine::{Clock, Counters, Transport, Worker};
use crate::hist::Histogram;
use crate::queries::QueryList;
use crate::sys::{self, SEND_BATCH};
use std::sync::{mpsc, Barrier};
use std::time::Duration;

/// Queries a worker sends at most per loop turn before it reads answers again.
const MAX_PER_TURN: usize = 8 * SEND_BATCH;

/// How late after the window a worker may still send queries that were due inside it.
const LATE_GRACE: u64 = 50_000_000;

pub(super) struct WorkerOut {
    pub(super) counters: Counters,
    pub(super) hist: Histogram,
}

/// One worker's share of the schedule.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    /// Queries per second.
    pub(super) rate: f64,
    /// Queries to send in all.
    pub(super) total: u64,
    pub(super) duration: u64,
    pub(super) timeout: u64,
    /// Shortest sleep between sending turns, ns.
    pub(super) tick: u64,
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

/// One worker: follows its share of the schedule on its own sockets or connections.
pub(super) fn rate_worker<'q, T: Transport<'q>>(
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
