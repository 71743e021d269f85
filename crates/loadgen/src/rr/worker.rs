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
