//! engine::udp -- UDP: a connected non-blocking socket with arrival timestamps, the batched
//! send (sendmmsg) both modes use, and the rate mode's `UdpSet` of several sockets.

use super::transport::{expire_all, round_robin, OnAnswer, Transport, Worker};
use super::{handle_response, Clock, Counters, SOCKET_BUFFER};
use crate::sys::{self, RecvBatch, SendBatch, BATCH, SEND_BATCH};
use crate::track::{Slot, Tracker};
use crate::Error;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Sends `batch`, whose queries hold the IDs `ids` (by batch index), on `fd` in one system
/// call, and settles each ID on `tracker`: committed if it left, else cancelled and handed to
/// `unsent` (its batch index). The UDP send of both modes; returns how many left.
///
/// Every datagram of the call is stamped with the clock read just before it. On loopback the
/// call delivers each datagram into the server's socket in turn, so for the last of 128 this
/// overstates the latency by tens of microseconds; it can never understate it. (Spreading
/// the stamps over the call, t0 + (t1 - t0) * j / n, was tried: a call preempted halfway
/// stretches t1, and answers came out "before" their queries.)
#[inline]
pub(crate) fn send_batch(
    batch: &mut SendBatch<'_>,
    fd: RawFd,
    ids: &[u16],
    tracker: &mut Tracker,
    clock: &mut Clock,
    c: &mut Counters,
    mut unsent: impl FnMut(usize),
) -> usize {
    let m = ids.len();
    let t0 = clock.last();
    let sent = match batch.send(fd) {
        Ok(s) => s,
        Err(_) => {
            // A hard error (e.g. ICMP refused): count the batch as sent; it times out.
            c.send_errors += m as u64;
            m
        }
    };
    // One clock read per system call: the next call's start.
    clock.now();
    let order = batch.order();
    for &i in &order[..sent] {
        tracker.commit(ids[i as usize], t0);
    }
    for &i in &order[sent..m] {
        tracker.cancel(ids[i as usize]);
        unsent(i as usize);
    }
    batch.clear();
    sent
}

/// A non-blocking UDP socket connected to `server`, bound to the wildcard of its family.
pub(crate) fn udp_socket(server: SocketAddr) -> Result<UdpSocket, Error> {
    let io = |e| Error::Io {
        what: format!("UDP socket to {server}"),
        error: e,
    };
    let bind: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(bind).map_err(io)?;
    s.connect(server).map_err(io)?;
    s.set_nonblocking(true).map_err(io)?;
    sys::set_buffer_sizes(s.as_raw_fd(), SOCKET_BUFFER);
    sys::enable_rx_timestamps(s.as_raw_fd()).map_err(io)?;
    Ok(s)
}

/// Several connected UDP sockets, each with its own ID space; batches go round-robin.
///
/// Arrivals do not wake the worker: the kernel stamps each datagram's arrival time, so the
/// worker drains its sockets once per turn (its pacing tick) and the latency stays exact.
pub(crate) struct UdpSet<'q> {
    fds: Vec<RawFd>,
    trackers: Vec<Tracker>,
    want_write: Vec<bool>,
    next: usize,
    send: SendBatch<'q>,
    recv: RecvBatch,
    probe: Vec<libc::pollfd>,
}

impl UdpSet<'_> {
    pub(crate) fn new(sockets: &[UdpSocket]) -> Self {
        Self {
            fds: sockets.iter().map(|s| s.as_raw_fd()).collect(),
            trackers: sockets.iter().map(|_| Tracker::new()).collect(),
            want_write: vec![false; sockets.len()],
            next: 0,
            send: SendBatch::new(),
            recv: RecvBatch::new(),
            probe: Vec::with_capacity(sockets.len()),
        }
    }
}

impl<'q> Transport<'q> for UdpSet<'q> {
    fn send(&mut self, w: &mut Worker<'q>, n: usize) -> usize {
        let mut ids = [0u16; SEND_BATCH];
        round_robin(&mut self.next, self.fds.len(), n, SEND_BATCH, |si, want| {
            let tracker = &mut self.trackers[si];
            let m = w.reserve(tracker, want, |_, m, id, body| {
                self.send.push(id, body);
                ids[m] = id;
            });
            let sent = send_batch(
                &mut self.send,
                self.fds[si],
                &ids[..m],
                tracker,
                &mut w.clock,
                &mut w.c,
                |_| {},
            );
            // After a partial send (socket buffer full) the walk through the list skips the
            // unsent queries' positions: the count, hence the rate, stays exact.
            w.advance(sent);
            self.want_write[si] = sent < want;
            Some(sent)
        })
    }

    fn poll_fds(&self, out: &mut Vec<libc::pollfd>) {
        out.clear();
        out.extend(
            self.fds
                .iter()
                .zip(&self.want_write)
                .map(|(&fd, &w)| libc::pollfd {
                    fd,
                    events: if w { libc::POLLOUT } else { 0 },
                    revents: 0,
                }),
        );
    }

    fn receive(&mut self, ready: &[libc::pollfd], w: &mut Worker<'q>, answer: &mut OnAnswer<'_>) {
        let (q, clock, c) = (w.q, &w.clock, &mut w.c);
        for (si, p) in ready.iter().enumerate() {
            if p.revents & libc::POLLOUT != 0 {
                self.want_write[si] = false;
            }
        }
        // One socket: just try it. Several: one zero-timeout poll says which hold data.
        self.probe.clear();
        self.probe
            .extend(self.fds.iter().map(|&fd| sys::pollfd(fd, false)));
        if self.fds.len() > 1 {
            let _ = sys::poll(&mut self.probe, Duration::ZERO);
        } else {
            self.probe[0].revents = libc::POLLIN;
        }
        let now = clock.last();
        for si in 0..self.fds.len() {
            if !sys::readable(&self.probe[si]) {
                continue;
            }
            // Bounded: at most 16 batches per socket per turn, then the sender gets its turn.
            for _ in 0..16 {
                let n = match self.recv.recv(self.fds[si]) {
                    Ok(n) => n,
                    Err(_) => {
                        c.recv_errors += 1;
                        0
                    }
                };
                for i in 0..n {
                    if let Some(slot) =
                        handle_response(self.recv.get(i), &mut self.trackers[si], q, c)
                    {
                        answer(&slot, clock.arrival(self.recv.arrival(i), now));
                    }
                }
                if n < BATCH {
                    break;
                }
            }
        }
    }

    fn expire(&mut self, now: u64, timeout: u64, lost: &mut dyn FnMut(&Slot)) -> Option<u64> {
        expire_all(self.trackers.iter_mut(), now, timeout, lost)
    }

    fn in_flight(&self) -> usize {
        self.trackers.iter().map(Tracker::in_flight).sum()
    }
}
