//! rr::worker -- one worker thread of a DNS_RR run: its streams, the sockets they share, and
//! the loop of turns (send every ready stream's next query as one batch, expire lost
//! queries, sleep or coalesce, read the answers) until the run's duration is over and the
//! last query is answered or lost.

use crate::engine::{self, handle_response, Clock, Counters};
use crate::hist::Histogram;
use crate::queries::QueryList;
use crate::sys::{self, RecvBatch, SendBatch, BATCH, SEND_BATCH};
use crate::track::Tracker;
use std::os::fd::RawFd;
use std::sync::Barrier;
use std::time::Duration;

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

pub(super) struct WorkerOut {
    pub(super) counters: Counters,
    pub(super) hist: Histogram,
    pub(super) in_window: u64,
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
pub(super) fn rr_worker(
    q: &QueryList,
    socks: &[(RawFd, &[u32])],
    duration: u64,
    timeout: u64,
    barrier: &Barrier,
) -> WorkerOut {
    let mut w = Turns::new(q, socks);
    barrier.wait();
    let mut clock = Clock::start();
    let mut now = 0u64;
    loop {
        let sending = now < duration;
        if !sending {
            w.ready.clear();
        }
        // Answers were read since the turn's clock reading: the sends start from a fresh one.
        if !w.ready.is_empty() {
            clock.now();
        }
        w.send(&mut clock);
        let wake = w.expire(now, timeout, sending, duration);
        let in_flight: usize = w.trackers.iter().map(Tracker::in_flight).sum();
        if !sending && in_flight == 0 {
            break;
        }
        w.poll(now, wake, sending, in_flight);
        // The one clock read of this turn: the send time of the next queries. Answers carry
        // their kernel arrival time.
        now = clock.now();
        let sending = now < duration;
        w.read(&clock, now, duration, sending);
    }
    WorkerOut {
        counters: w.c,
        hist: w.hist,
        in_window: w.in_window,
    }
}

/// A worker's state from turn to turn; each step of a turn is a method.
struct Turns<'q> {
    q: &'q QueryList,
    /// Queries in the list.
    nq: u32,
    /// Sockets.
    n: usize,
    fds: Vec<RawFd>,
    trackers: Vec<Tracker>,
    /// Position in the list of each stream of this worker, and the streams ready to send
    /// (every stream is either ready or in flight on one of the sockets).
    pos: Vec<u32>,
    ready: Vec<u32>,
    want_write: Vec<bool>,
    next_sock: usize,
    batch: SendBatch<'q>,
    rb: RecvBatch,
    pfds: Vec<libc::pollfd>,
    ids: [u16; SEND_BATCH],
    batch_streams: [u32; SEND_BATCH],
    c: Counters,
    hist: Histogram,
    in_window: u64,
    /// Smoothed round trip (ns), for the coalescing tick.
    rtt: u64,
}

impl<'q> Turns<'q> {
    fn new(q: &'q QueryList, socks: &[(RawFd, &[u32])]) -> Self {
        let n = socks.len();
        let pos: Vec<u32> = socks.iter().flat_map(|s| s.1.iter().copied()).collect();
        let streams = pos.len();
        Turns {
            q,
            nq: q.len() as u32,
            n,
            fds: socks.iter().map(|s| s.0).collect(),
            trackers: socks.iter().map(|_| Tracker::new()).collect(),
            pos,
            ready: (0..streams as u32).rev().collect(),
            want_write: vec![false; n],
            next_sock: 0,
            batch: SendBatch::new(),
            rb: RecvBatch::new(),
            pfds: Vec::with_capacity(n),
            ids: [0u16; SEND_BATCH],
            batch_streams: [0u32; SEND_BATCH],
            c: Counters::default(),
            hist: Histogram::new(),
            in_window: 0,
            rtt: 0,
        }
    }

    /// Every ready stream sends its next query: batches go to the sockets in turn, and a
    /// socket whose buffer is full (or whose ID space is) waits for the next turn.
    #[inline]
    fn send(&mut self, clock: &mut Clock) {
        let Turns {
            q,
            n,
            fds,
            trackers,
            pos,
            ready,
            want_write,
            next_sock,
            batch,
            ids,
            batch_streams,
            c,
            ..
        } = self;
        let n = *n;
        let mut tried = 0;
        while !ready.is_empty() && tried < n {
            let si = *next_sock;
            *next_sock = (*next_sock + 1) % n;
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
            let sent = engine::send_batch(batch, fds[si], &ids[..m], tracker, clock, c, |k| {
                ready.push(batch_streams[k])
            });
            c.sent += sent as u64;
            if sent < m {
                want_write[si] = true;
            } else {
                // This socket took all it was offered: what is left may go on the next.
                tried = 0;
            }
        }
    }

    /// Lost queries: the stream moves on to its next query. Returns when to wake at the
    /// latest: the next expiry, or the end of the sending window.
    #[inline]
    fn expire(&mut self, now: u64, timeout: u64, sending: bool, duration: u64) -> u64 {
        let nq = self.nq;
        let mut wake = if sending { duration } else { u64::MAX };
        for tracker in &mut self.trackers {
            let ready = &mut self.ready;
            let pos = &mut self.pos;
            let lost = &mut self.c.lost;
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
        wake
    }

    /// Waits for answers (or room to send) until `wake` at the latest, not at all if a
    /// stream can send; with many streams waiting, a short coalescing sleep instead.
    #[inline]
    fn poll(&mut self, now: u64, wake: u64, sending: bool, in_flight: usize) {
        let can_send = sending && !self.ready.is_empty() && self.want_write.iter().any(|&w| !w);
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
        let coalesce_ns = (self.rtt / COALESCE_DIV).min(COALESCE);
        let coalesce = wait > 0 && in_flight >= COALESCE_MIN && coalesce_ns >= MIN_COALESCE;
        let pfds = &mut self.pfds;
        pfds.clear();
        pfds.extend(
            self.fds
                .iter()
                .zip(&self.want_write)
                .map(|(&fd, &w)| libc::pollfd {
                    fd,
                    events: if coalesce { 0 } else { libc::POLLIN }
                        | if w { libc::POLLOUT } else { 0 },
                    revents: 0,
                }),
        );
        if coalesce {
            wait = wait.min(coalesce_ns);
        }
        let _ = sys::poll(pfds, Duration::from_nanos(wait));
        if coalesce {
            // Read every socket that has queries out (the others can only hold strays, read
            // when the socket is next used); a turn's queries often went out on one of them.
            for (p, t) in pfds.iter_mut().zip(&self.trackers) {
                if t.in_flight() > 0 {
                    p.revents |= libc::POLLIN;
                }
            }
        }
    }

    /// Reads the answers the poll found (at `now`), and sends their streams on to their
    /// next queries while `sending`.
    #[inline]
    fn read(&mut self, clock: &Clock, now: u64, duration: u64, sending: bool) {
        let Turns {
            q,
            nq,
            n,
            fds,
            trackers,
            pos,
            ready,
            want_write,
            rb,
            pfds,
            c,
            hist,
            in_window,
            rtt,
            ..
        } = self;
        let nq = *nq;
        for si in 0..*n {
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
                    let Some(slot) = handle_response(rb.get(i), &mut trackers[si], q, c) else {
                        continue;
                    };
                    let at = clock.arrival(rb.arrival(i), now);
                    let lat = at.saturating_sub(slot.sent);
                    *rtt = *rtt - *rtt / 16 + lat / 16;
                    hist.record(lat);
                    if at <= duration {
                        *in_window += 1;
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
}
