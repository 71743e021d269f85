//! The I/O shared by both modes: sockets, counters, response matching, and the UDP and TCP
//! transports of the rate mode.
//!
//! Never on the per-query path: allocation, a clock read, or a system call per query. The
//! caller reads the clock once per loop turn (ns since the run's start); a UDP send reads it
//! once more per sendmmsg call, so each call's queries carry the time just before it.
//!
//! This module owns what every transport uses: the counters, matching a response to its
//! query, and the run's clock. The rest is in submodules:
//! - `transport`: what the rate mode needs of a transport (`Transport`), the worker state a
//!   transport works with (`Worker`), and the round robin both transports send by;
//! - `udp`: connected UDP sockets, the batched send both modes use, and the rate mode's
//!   `UdpSet`;
//! - `tcp`: the rate mode's pipelined TCP connections (`TcpSet`).

use crate::queries::QueryList;
use crate::sys;
use crate::track::{Slot, Tracker};

mod tcp;
mod transport;
mod udp;

pub(crate) use tcp::TcpSet;
pub(crate) use transport::{Transport, Worker};
pub(crate) use udp::{send_batch, udp_socket, UdpSet};

/// Socket buffer size asked for (the kernel may cap it).
const SOCKET_BUFFER: usize = 4 << 20;

/// Counts of one worker (summed over workers and runs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) sent: u64,
    pub(crate) answered: u64,
    pub(crate) lost: u64,
    /// Responses whose ID was in flight but whose question was another query's.
    pub(crate) mismatched: u64,
    /// Responses with an ID not in flight (late after a timeout, duplicates) or not responses.
    pub(crate) unexpected: u64,
    pub(crate) send_errors: u64,
    pub(crate) recv_errors: u64,
    pub(crate) truncated: u64,
    /// Answers by the header's four RCODE bits.
    pub(crate) rcodes: [u64; 16],
}

impl Counters {
    pub(crate) fn add(&mut self, o: &Self) {
        self.sent += o.sent;
        self.answered += o.answered;
        self.lost += o.lost;
        self.mismatched += o.mismatched;
        self.unexpected += o.unexpected;
        self.send_errors += o.send_errors;
        self.recv_errors += o.recv_errors;
        self.truncated += o.truncated;
        for (a, b) in self.rcodes.iter_mut().zip(o.rcodes) {
            *a += b;
        }
    }
}

/// Matches a response to its query in flight: the ID must be in flight on `tracker`, and the
/// question must be the query's. Counts the answer's RCODE.
#[inline]
pub(crate) fn handle_response(
    msg: &[u8],
    tracker: &mut Tracker,
    q: &QueryList,
    c: &mut Counters,
) -> Option<Slot> {
    if msg.len() < 12 {
        c.unexpected += 1;
        return None;
    }
    let id = u16::from_be_bytes([msg[0], msg[1]]);
    let flags = u16::from_be_bytes([msg[2], msg[3]]);
    if flags & 0x8000 == 0 {
        c.unexpected += 1;
        return None;
    }
    let mut mismatch = false;
    let slot = tracker.take(id, |s| {
        mismatch = !q.matches(s.query as usize, msg);
        !mismatch
    });
    match slot {
        Some(s) => {
            c.answered += 1;
            c.rcodes[(flags & 0x0f) as usize] += 1;
            if flags & 0x0200 != 0 {
                c.truncated += 1;
            }
            Some(s)
        }
        None => {
            if mismatch {
                c.mismatched += 1;
            } else {
                c.unexpected += 1;
            }
            None
        }
    }
}

/// The run's clock: CLOCK_REALTIME (the clock of the kernel's arrival times) in ns since the
/// run's start, never going backwards. Read once per loop turn.
pub(crate) struct Clock {
    base: u64,
    last: u64,
}

impl Clock {
    pub(crate) fn start() -> Self {
        Self {
            base: sys::realtime_ns(),
            last: 0,
        }
    }

    /// Now, in ns since the start.
    #[inline]
    pub(crate) fn now(&mut self) -> u64 {
        self.last = sys::realtime_ns().saturating_sub(self.base).max(self.last);
        self.last
    }

    /// The time of the last [`Clock::now`].
    #[inline]
    pub(crate) fn last(&self) -> u64 {
        self.last
    }

    /// A kernel arrival time (ns since the epoch) in ns since the start; `fallback` if absent.
    #[inline]
    pub(crate) fn arrival(&self, at: Option<u64>, fallback: u64) -> u64 {
        at.map_or(fallback, |t| t.saturating_sub(self.base))
    }
}
