//! worker::conn -- the worker's TCP connections: accept (with the per-worker, total and
//! per-client limits checked there), readiness, the idle and read timeouts, eviction and
//! close. What is read and written on a connection is `stream`'s.

use super::proxy::is_proxy;
use super::stream::{answer_frames, flush_output, transfer_ended, FrameCtx, OUTPUT_HIGH_WATER};
use super::{
    conn_token, Worker, ACCEPT_BURST, BUFFER_POOL_MAX, KIND_LISTENER, KIND_SHIFT, TLS_ROUNDS,
};
use crate::stats::{WorkerStats, TLS_TIMEOUT};
use crate::tcp::{Conn, INPUT_INITIAL};
use shardns_sys as sys;
use shardns_sys::{self, BROKEN, READABLE, WRITABLE};
use shardns_zone::ZoneSet;
use std::io::{self, Read};
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

impl Worker {
    pub(super) fn accept(&mut self, index: usize, now: Instant, stats: &WorkerStats) {
        for _ in 0..ACCEPT_BURST {
            let Some((listener, v6)) = self.listeners.get(index) else {
                return;
            };
            let v6 = *v6;
            let tls = index >= self.tls_from;
            let https = index >= self.https_from;
            let (stream, peer) = match sys::accept_nonblocking(listener) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    // Out of descriptors or memory: make room, or stop accepting until a
                    // connection closes (the listener would otherwise wake us forever).
                    if !self.evict_oldest(stats) {
                        request_log!(
                            stats,
                            WARN,
                            worker = self.id,
                            "cannot accept TCP connections: {e}; pausing until one closes"
                        );
                        self.pause_listeners();
                        return;
                    }
                    continue;
                }
                Err(e) => {
                    request_log!(stats, DEBUG, worker = self.id, "accept: {e}");
                    continue;
                }
            };
            // The client's own limit first, so that a client at its limit makes room with
            // its own longest-idle connection (RFC 7766 §6.2.3), never with someone else's.
            let Some(client_slot) = self.admit_client(peer.map(|p| p.ip()), stats) else {
                stats.tcp_refused_client.add(1);
                continue;
            };
            let at_limit = self.conns.len() >= self.opts.tcp_per_worker
                || self.shared.tcp_open.load(Relaxed) >= self.opts.tcp_total;
            if at_limit && !self.evict_oldest(stats) {
                self.shared.tcp_clients.release(client_slot);
                stats.tcp_refused.add(1);
                continue;
            }
            let input = match self.buffer_pool.pop() {
                Some(b) => b,
                None => {
                    stats.request_allocations.add(1);
                    vec![0; INPUT_INITIAL]
                }
            };
            let fd = stream.as_raw_fd();
            let mut conn = Conn::new(stream, peer, v6, input, now);
            conn.client_slot = client_slot;
            conn.proxy_header = peer.is_some_and(|p| is_proxy(&self.opts.proxy_from, p.ip()));
            if tls {
                match self.shared.tls.as_ref().map(|t| t.accept(https)) {
                    Some(Ok(server)) => conn.tls = Some(Box::new(server)),
                    _ => {
                        self.shared.tcp_clients.release(client_slot);
                        continue;
                    }
                }
            }
            if https {
                conn.https = Some(Box::new(crate::https_conn::HttpsConn::new(
                    self.opts.https_streams,
                    self.opts.https_resets_per_second,
                    now,
                )));
            }
            let (slot, generation, allocated) = self.conns.insert(conn);
            if allocated {
                stats.request_allocations.add(1);
            }
            if let Err(e) = self.epoll.add(fd, conn_token(slot, generation), READABLE) {
                request_log!(stats, DEBUG, worker = self.id, "epoll add: {e}");
                if let Some(c) = self.conns.remove(slot) {
                    self.shared.tcp_clients.release(c.client_slot);
                }
                continue;
            }
            if let Some(c) = self.conns.get_mut(slot, generation) {
                c.interest = READABLE;
            }
            self.shared.tcp_open.fetch_add(1, Relaxed);
            stats.tcp_accepted.add(1);
            stats.tcp_open.set(self.conns.len() as u64);
            if tls {
                if let Some((s, g)) = self.handshakes.push(slot, generation, now) {
                    self.close_if_handshaking(s, g, stats);
                }
            }
        }
    }

    /// Closes connection (`slot`, `generation`) if it is still in its TLS handshake.
    fn close_if_handshaking(&mut self, slot: u32, generation: u32, stats: &WorkerStats) {
        let handshaking = self
            .conns
            .get_mut(slot, generation)
            .and_then(|c| c.tls.as_ref())
            .is_some_and(|t| t.is_handshaking());
        if handshaking {
            stats.tls_handshakes[TLS_TIMEOUT].add(1);
            self.close(slot, stats);
        }
    }

    /// Counts a new connection against its client's limit: its slot in the client counts,
    /// or `None` to refuse it. A client at its limit keeps the new connection and gives up
    /// its least recently active one on this worker (RFC 7766 §6.2.3 lets a server close
    /// idle connections; Knot and NSD serve such a client). SO_REUSEPORT spreads a
    /// client's connections over the workers, so if none is here, the new one is counted
    /// past the limit and the next worker is asked to close one (`take_eviction`); a busy
    /// mailbox refuses it instead.
    fn admit_client(&mut self, ip: Option<IpAddr>, stats: &WorkerStats) -> Option<u32> {
        let slot = match self.shared.tcp_clients.acquire(ip) {
            Ok(slot) => return Some(slot),
            Err(slot) => slot,
        };
        if let Some(victim) = self.conns.oldest_of_client(slot) {
            stats.tcp_client_evicted.add(1);
            self.close(victim, stats);
            return self.shared.tcp_clients.acquire(ip).ok();
        }
        let workers = self.shared.evictions.len();
        if workers < 2 || !self.post_eviction((self.id + 1) % workers, slot, self.id) {
            return None;
        }
        Some(self.shared.tcp_clients.acquire_over_limit(slot))
    }

    /// Asks worker `to` to close a connection of the client counted in `slot` (for a new
    /// one worker `origin` accepted); false if its mailbox is taken.
    fn post_eviction(&self, to: usize, slot: u32, origin: usize) -> bool {
        let request = (u64::from(slot) << 32) | (origin as u64 + 1);
        let posted = self.shared.evictions[to]
            .compare_exchange(0, request, Relaxed, Relaxed)
            .is_ok();
        if posted {
            self.shared.wakers[to].wake();
        }
        posted
    }

    /// Acts on this worker's eviction mailbox: closes the named client's least recently
    /// active connection here, or passes the request to the next worker (until it would
    /// come back to the worker that posted it).
    pub(super) fn take_eviction(&mut self, stats: &WorkerStats) {
        let request = self.shared.evictions[self.id].swap(0, Relaxed);
        if request == 0 {
            return;
        }
        let slot = (request >> 32) as u32;
        let origin = (request & 0xffff_ffff) as usize - 1;
        if let Some(victim) = self.conns.oldest_of_client(slot) {
            stats.tcp_client_evicted.add(1);
            self.close(victim, stats);
            return;
        }
        let next = (self.id + 1) % self.shared.evictions.len();
        if next != origin {
            // A busy mailbox drops it: the client keeps one connection past its limit
            // until one closes.
            let _ = self.post_eviction(next, slot, origin);
        }
    }

    pub(super) fn conn_ready(
        &mut self,
        slot: u32,
        generation: u32,
        ready: u32,
        zones: &ZoneSet,
        now: Instant,
        stats: &WorkerStats,
    ) {
        if !self.proxy_header_read(slot, generation, ready, stats) {
            return;
        }
        let log_queries = self.opts.log_queries;
        let max_queries = self.opts.tcp_max_queries;
        let Some(conn) = self.conns.get_mut(slot, generation) else {
            return;
        };
        let queries_before = conn.queries;
        if ready & BROKEN != 0 {
            self.close(slot, stats);
            return;
        }
        let mut active = false;
        let mut failed = false;
        if ready & WRITABLE != 0 && conn.unsent() > 0 {
            match flush_output(conn) {
                Ok(progress) => active |= progress,
                Err(_) => failed = true,
            }
        }
        let tls = conn.tls.is_some();
        // TLS: plaintext rustls holds beyond what the input buffer took is answered in
        // further rounds (epoll does not report it: the socket has nothing new).
        for round in 0..TLS_ROUNDS {
            let mut more = false;
            if tls && !failed && conn.unsent() < OUTPUT_HIGH_WATER {
                match super::tls::receive(conn, round == 0 && ready & READABLE != 0, stats) {
                    Ok(r) => {
                        active |= r.active;
                        more = r.more;
                        if conn.unsent() > 0 && flush_output(conn).is_err() {
                            failed = true;
                        }
                    }
                    Err(_) => failed = true,
                }
            } else if !tls
                && !failed
                && ready & READABLE != 0
                && !conn.peer_closed
                && conn.unsent() < OUTPUT_HIGH_WATER
            {
                let (spare, grew) = conn.input.spare();
                if grew {
                    stats.request_allocations.add(1);
                }
                match (&conn.stream).read(spare) {
                    Ok(0) => conn.peer_closed = true,
                    Ok(n) => {
                        conn.input.filled(n);
                        active = true;
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) => {}
                    Err(_) => failed = true,
                }
            }
            if !failed {
                let ctx = FrameCtx {
                    slot,
                    generation,
                    max_queries,
                };
                let mut dispatch =
                    self.roles
                        .dispatcher(zones, (&self.shared, self.id), stats, log_queries, now);
                let answered = if conn.https.is_some() {
                    super::https::drive(conn, &mut dispatch, &mut self.staging, ctx, now, stats)
                        .and_then(|a| flush_output(conn).map(|_| a))
                } else {
                    answer_frames(conn, &mut self.staging, &mut dispatch, ctx, stats)
                };
                match answered {
                    Ok(streamed) => active |= streamed,
                    Err(_) => failed = true,
                }
            }
            if failed || !more || conn.transfer.is_some() || conn.queries >= max_queries {
                break;
            }
        }
        // DoH after its GOAWAY: once that is sent, our side is shut down, and the client's
        // data is read and dropped until it closes (see `crate::https_conn::HttpsConn::closing`).
        let shut_now = conn
            .https
            .as_ref()
            .is_some_and(|h| h.closing && !h.shut && conn.unsent() == 0);
        if shut_now && !failed {
            super::tls::close_notify(conn);
            // Best effort, as at close: what the socket did not take is not retried.
            conn.output.clear();
            conn.sent = 0;
            let _ = conn.stream.shutdown(std::net::Shutdown::Write);
            if let Some(h) = conn.https.as_mut() {
                h.shut = true;
            }
        }
        if failed || (conn.peer_closed && conn.unsent() == 0 && conn.transfer.is_none()) {
            self.close(slot, stats);
            return;
        }
        // A transfer with nothing unsent still has messages to write: EPOLLOUT (level
        // triggered) brings the connection back on the next turn of the loop.
        let want = if conn.unsent() > 0 || conn.transfer.is_some() {
            WRITABLE
        } else {
            0
        } | if !conn.peer_closed && conn.unsent() < OUTPUT_HIGH_WATER {
            READABLE
        } else {
            0
        };
        if want != conn.interest {
            if self
                .epoll
                .modify(conn.stream.as_raw_fd(), conn_token(slot, generation), want)
                .is_err()
            {
                self.close(slot, stats);
                return;
            }
            conn.interest = want;
        }
        // The read timeout runs from the first byte of a query (or the end of the one
        // before it) until the query is whole.
        let receiving = conn.receiving() && !conn.peer_closed;
        let progressed = conn.queries != queries_before;
        let in_partial = conn.in_partial();
        if receiving && (progressed || !in_partial) {
            self.conns.set_partial(slot, now);
        } else if !receiving && in_partial {
            self.conns.clear_partial(slot);
        }
        if active {
            self.conns.touch(slot, now);
        }
    }

    /// A connection from a proxy reads nothing else before its PROXY header (TLS comes after
    /// it): false while the header is still coming, or when it was bad (the connection
    /// closed).
    fn proxy_header_read(
        &mut self,
        slot: u32,
        generation: u32,
        ready: u32,
        stats: &WorkerStats,
    ) -> bool {
        let Some(conn) = self.conns.get_mut(slot, generation) else {
            return true;
        };
        if !conn.proxy_header {
            return true;
        }
        if ready & READABLE == 0 {
            if ready & BROKEN != 0 {
                self.close(slot, stats);
            }
            return false;
        }
        match super::proxy::read_header(conn, stats) {
            Ok(done) => done,
            Err(_) => {
                self.close(slot, stats);
                false
            }
        }
    }

    /// Closes connections that have been receiving one query for longer than the read
    /// timeout, then those idle for longer than the idle timeout (oldest first, each).
    pub(super) fn expire(&mut self, now: Instant, stats: &WorkerStats) {
        while let Some((slot, generation)) = self.handshakes.due(now) {
            self.close_if_handshaking(slot, generation, stats);
        }
        while let Some((slot, since)) = self.conns.oldest_partial() {
            if now.saturating_duration_since(since) < self.opts.tcp_read_timeout {
                break;
            }
            stats.tcp_read_timeout_closed.add(1);
            self.close(slot, stats);
        }
        while let Some((slot, last)) = self.conns.oldest() {
            if now.saturating_duration_since(last) < self.opts.tcp_idle_timeout {
                break;
            }
            stats.tcp_idle_closed.add(1);
            self.close(slot, stats);
        }
    }

    /// Closes the least recently active connection; false if there is none.
    pub(super) fn evict_oldest(&mut self, stats: &WorkerStats) -> bool {
        match self.conns.oldest() {
            Some((slot, _)) => {
                stats.tcp_evicted.add(1);
                self.close(slot, stats);
                true
            }
            None => false,
        }
    }

    pub(super) fn close(&mut self, slot: u32, stats: &WorkerStats) {
        // Closing the descriptor also takes it out of the epoll set.
        if let Some(mut conn) = self.conns.remove(slot) {
            if let Some(t) = &conn.transfer {
                transfer_ended(conn.peer, t, stats);
            }
            super::tls::close_notify(&mut conn);
            let buf = conn.input.into_inner();
            if buf.len() == INPUT_INITIAL && self.buffer_pool.len() < BUFFER_POOL_MAX {
                self.buffer_pool.push(buf);
            }
            self.shared.tcp_clients.release(conn.client_slot);
            self.shared.tcp_open.fetch_sub(1, Relaxed);
            stats.tcp_open.set(self.conns.len() as u64);
            if self.listeners_paused {
                self.resume_listeners();
            }
        }
    }

    pub(super) fn pause_listeners(&mut self) {
        for (i, (l, _)) in self.listeners.iter().enumerate() {
            let _ = self
                .epoll
                .modify(l.as_raw_fd(), (KIND_LISTENER << KIND_SHIFT) | i as u64, 0);
        }
        self.listeners_paused = true;
    }

    pub(super) fn resume_listeners(&mut self) {
        for (i, (l, _)) in self.listeners.iter().enumerate() {
            let _ = self.epoll.modify(
                l.as_raw_fd(),
                (KIND_LISTENER << KIND_SHIFT) | i as u64,
                READABLE,
            );
        }
        self.listeners_paused = false;
    }

    /// Shutdown: one last try to send what is buffered, then close everything.
    pub(super) fn close_all(&mut self, stats: &WorkerStats) {
        for slot in self.conns.occupied() {
            if let Some(conn) = self.conns.remove(slot) {
                let mut conn = conn;
                let _ = flush_output(&mut conn);
                if let Some(t) = &conn.transfer {
                    transfer_ended(conn.peer, t, stats);
                }
                self.shared.tcp_clients.release(conn.client_slot);
                self.shared.tcp_open.fetch_sub(1, Relaxed);
            }
        }
        stats.tcp_open.set(0);
    }
}
