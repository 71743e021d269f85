//! engine::transport -- the rate mode's side of a transport: the `Transport` trait (send,
//! poll entries, receive, expire), the `Worker` state each call works with (query list and
//! position, clock, counters), and the helpers both transports share: the round robin they
//! send by and the expiry over several trackers.

use super::{Clock, Counters};
use crate::queries::QueryList;
use crate::track::{Slot, Tracker};

/// What a rate worker's transport works with on every call: the query list and the walk's
/// position in it, the run's clock and the worker's counters (one argument, not four).
pub(crate) struct Worker<'q> {
    pub(crate) q: &'q QueryList,
    /// The next query's index in `q`.
    pub(crate) pos: usize,
    pub(crate) clock: Clock,
    pub(crate) c: Counters,
}

impl<'q> Worker<'q> {
    /// Reserves IDs on `tracker` for up to `want` queries from the walk's position on and
    /// hands each to `put` (the tracker, index in the batch, ID, body): how both transports
    /// fill a batch.
    /// Returns how many; fewer when the tracker has no free ID.
    #[inline]
    pub(super) fn reserve(
        &self,
        tracker: &mut Tracker,
        want: usize,
        mut put: impl FnMut(&mut Tracker, usize, u16, &'q [u8]),
    ) -> usize {
        let mut m = 0;
        while m < want {
            let qi = (self.pos + m) % self.q.len();
            let Some(id) = tracker.reserve(qi as u32, 0) else {
                break;
            };
            put(tracker, m, id, self.q.body(qi));
            m += 1;
        }
        m
    }

    /// Moves the walk past `k` queries.
    #[inline]
    pub(super) fn advance(&mut self, k: usize) {
        self.pos = (self.pos + k) % self.q.len();
    }
}

/// The round robin both transports send by: each member (socket or connection) in turn is
/// offered up to `batch` of the `n` queries, until all left or every member in a row took
/// fewer than offered. `send(member, want)` returns how many it sent, `None` if it could
/// take none (closed or full). Returns how many left.
#[inline]
pub(super) fn round_robin(
    next: &mut usize,
    members: usize,
    n: usize,
    batch: usize,
    mut send: impl FnMut(usize, usize) -> Option<usize>,
) -> usize {
    let mut total = 0;
    let mut full = 0;
    while total < n && full < members {
        let i = *next;
        *next = (i + 1) % members;
        let want = (n - total).min(batch);
        match send(i, want) {
            Some(sent) => {
                total += sent;
                if sent < want {
                    full += 1;
                } else {
                    full = 0;
                }
            }
            None => full += 1,
        }
    }
    total
}

/// The earliest next expiry over `trackers`, after expiring what is older than `timeout`.
pub(super) fn expire_all<'t>(
    trackers: impl Iterator<Item = &'t mut Tracker>,
    now: u64,
    timeout: u64,
    lost: &mut dyn FnMut(&Slot),
) -> Option<u64> {
    trackers
        .filter_map(|t| t.expire(now, timeout, &mut *lost))
        .min()
}

/// What a transport calls with each matched response: its slot and arrival time.
pub(crate) type OnAnswer<'a> = dyn FnMut(&Slot, u64) + 'a;

/// What the rate mode needs of a transport.
pub(crate) trait Transport<'q> {
    /// Sends up to `n` queries from the worker's list position on (advancing it); returns how
    /// many left. Fewer means every socket or connection is full for now. The worker's clock
    /// was read at the start of the turn; a transport may read it again once per system call.
    fn send(&mut self, w: &mut Worker<'q>, n: usize) -> usize;
    /// Fills `out` with one poll entry per socket or connection, for the sleep between turns.
    fn poll_fds(&self, out: &mut Vec<libc::pollfd>);
    /// Reads what has arrived (`ready`: the sleep's poll result); calls `answer` with each
    /// matched response's slot and arrival time.
    fn receive(&mut self, ready: &[libc::pollfd], w: &mut Worker<'q>, answer: &mut OnAnswer<'_>);
    /// Expires queries older than `timeout`; returns the next expiry time.
    fn expire(&mut self, now: u64, timeout: u64, lost: &mut dyn FnMut(&Slot)) -> Option<u64>;
    fn in_flight(&self) -> usize;
}
