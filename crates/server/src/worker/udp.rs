//! worker::udp -- UDP sockets: datagrams read and written in batches (recvmmsg/sendmmsg),
//! each query answered in place in the batch's response slot by `dispatch`, after the
//! batch's zone lookups were started together (`ZoneSet::prefetch`).

use super::proxy;
use super::{Worker, UDP_ROUNDS};
use crate::dispatch::Action;
use crate::origin::{Origin, Via};
use crate::stats::WorkerStats;
use shardns_sys as sys;
use shardns_sys::{self, UdpBatch};
use shardns_zone::ZoneSet;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

impl Worker {
    /// Answers what socket `index` holds, up to `UDP_ROUNDS` batches, then lets the loop
    /// look at other sockets.
    pub(super) fn serve_udp(
        &mut self,
        index: usize,
        zones: &ZoneSet,
        batch: &mut UdpBatch,
        now: Instant,
        stats: &WorkerStats,
    ) {
        let Some((fd, v6)) = self.udp.get(index).map(|(s, v6)| (s.as_raw_fd(), *v6)) else {
            return;
        };
        // Every query of the socket's: only the peer differs.
        let from = Origin::new(Via::Udp { socket: index }, v6, None);
        let slot = from.slot();
        // The peer's address is decoded only when something needs it: logs, the resolver's
        // ACL, RRL, a transfer ACL (an allowed IXFR over UDP gets the SOA), or NOTIFY to a
        // secondary (taken from its primaries only), or an UPDATE (answered later).
        // PROXY protocol: every datagram's peer is needed, to tell the proxies' apart.
        let proxy_from = &self.opts.proxy_from[..];
        let proxied = !proxy_from.is_empty();
        let want_peer = proxied
            || self.opts.log_queries
            || self.roles.recursion.is_some()
            || self.roles.rrl.is_some()
            || self.shared.plane.transfer_acl.load().allows_anyone()
            || self.shared.plane.secondary.is_some()
            || self.shared.plane.updates.enabled()
            || self.roles.tap.is_some();
        // A cookie is made from the client's address: decoded too for a query with an
        // additional section (one byte test), when cookies are on.
        let cookies = self.shared.edns.load().cookies.is_some();
        let udp_max = self.opts.udp_max_response;
        let mut dispatch = self.roles.dispatcher(
            zones,
            (&self.shared, self.id),
            stats,
            self.opts.log_queries,
            now,
        );
        for _ in 0..UDP_ROUNDS {
            stats.udp_recv_calls.add(1);
            let n = match batch.recv(fd) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    request_log!(stats, DEBUG, worker = self.id, "recvmmsg: {e}");
                    break;
                }
            };
            stats.queries[slot].add(n as u64);
            if n > 1 && zones.len() > 1 {
                // With many zones, a query's zone is likely out of the CPU caches: start
                // every query's lookup before answering any, so their misses overlap.
                zones.prefetch((0..n).filter_map(|i| batch.query(i)), sys::prefetch);
            }
            for i in 0..n {
                let slot = batch.queued();
                let peer = if want_peer || (cookies && batch.has_additional(i)) {
                    batch.peer(i)
                } else {
                    None
                };
                let (query, out) = batch.query_and_response(i, slot);
                let cap = udp_max.min(out.len());
                let out = &mut out[..cap];
                let Some(query) = query else {
                    // Longer than any query we read: cut by the kernel, so unparseable.
                    stats.malformed.add(1);
                    stats.dropped.add(1);
                    continue;
                };
                let origin = Origin { peer, ..from };
                // One test of a flag unless proxies are configured: the rest is out of line.
                let (query, origin) = if proxied {
                    match proxy::datagram(query, origin, proxy_from, stats) {
                        Some(x) => x,
                        None => continue,
                    }
                } else {
                    (query, origin)
                };
                if let Action::Send(w) = dispatch.handle(query, origin, out) {
                    batch.queue(i, w.len);
                }
            }
            let queued = batch.queued();
            let mut from = 0;
            while from < queued {
                stats.udp_send_calls.add(1);
                match batch.send(fd, from) {
                    Ok(k) => from += k.max(1),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        // The socket's send buffer is full: drop the rest of this batch.
                        stats.dropped.add((queued - from) as u64);
                        break;
                    }
                    Err(e) => {
                        // This datagram cannot be sent (e.g. an unreachable address): skip it.
                        request_log!(stats, DEBUG, worker = self.id, "sendmmsg: {e}");
                        stats.dropped.add(1);
                        from += 1;
                    }
                }
            }
            if n < batch.capacity() {
                break;
            }
        }
    }
}
