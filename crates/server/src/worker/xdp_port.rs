//! worker::xdp_port -- the worker's AF_XDP socket (`server.xdp_interface`): UDP queries
//! arrive as raw frames on its RX ring, are answered by `dispatch` straight into the frame
//! and go back on the TX ring. Only the frame I/O differs from `udp`.

use super::{Worker, UDP_ROUNDS};
use crate::dispatch::Action;
use crate::origin::{Origin, Via};
use crate::stats::WorkerStats;
use crate::xdp::{self, Xsk};
use shardns_zone::ZoneSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A worker's AF_XDP socket and what answering its frames needs.
pub(super) struct XdpPort {
    pub(super) xsk: Xsk,
    /// Each UDP socket's local address: a resolver answer to an XDP query leaves through
    /// the socket bound to the address the query was sent to.
    sockets: Vec<SocketAddr>,
    /// The query is copied here so the response can be written over it in the frame.
    query: Box<[u8]>,
    /// When the kernel's counters for the socket were last copied into the statistics.
    counters_read: Option<Instant>,
}

impl XdpPort {
    /// `sockets`: the local address of each of the worker's UDP sockets, in order.
    pub(super) fn new(xsk: Xsk, sockets: Vec<SocketAddr>) -> Self {
        Self {
            xsk,
            sockets,
            query: vec![0; xdp::FRAME].into_boxed_slice(),
            counters_read: None,
        }
    }
}

impl Worker {
    /// Answers the frames on the AF_XDP socket's RX ring, each in place, in batches of
    /// `udp_batch`, like `serve_udp` does with a socket.
    pub(super) fn serve_xdp(&mut self, zones: &ZoneSet, now: Instant, stats: &WorkerStats) {
        let Some(mut port) = self.xdp.take() else {
            return;
        };
        let udp_max = self.opts.udp_max_response;
        let batch = self.opts.udp_batch.min(u32::MAX as usize) as u32;
        let mut dispatch = self.roles.dispatcher(
            zones,
            (&self.shared, self.id),
            stats,
            self.opts.log_queries,
            now,
        );
        for _ in 0..UDP_ROUNDS {
            let XdpPort {
                xsk,
                sockets,
                query,
                ..
            } = &mut port;
            let n = xsk.serve(batch, |frame, len| {
                let Some(q) = xdp::parse(&frame[..len]) else {
                    // The XDP program sent it, so it is UDP to us, but not well-formed.
                    stats.malformed.add(1);
                    stats.dropped.add(1);
                    return None;
                };
                // Counted before the socket is known (the slot does not depend on it).
                let slot = Origin::new(Via::Xdp { socket: 0 }, q.v6, None).slot();
                stats.queries[slot].add(1);
                let local = q.local(frame);
                let socket = sockets.iter().position(|a| {
                    *a == local
                        || (a.ip().is_unspecified()
                            && a.port() == local.port()
                            && a.is_ipv6() == local.is_ipv6())
                });
                let Some(socket) = socket else {
                    stats.dropped.add(1);
                    return None;
                };
                let origin = Origin::new(Via::Xdp { socket }, q.v6, Some(q.peer(frame)));
                let query = &mut query[..q.len];
                query.copy_from_slice(&frame[q.offset..q.offset + q.len]);
                let cap = udp_max.min(frame.len() - q.offset);
                let out = &mut frame[q.offset..q.offset + cap];
                match dispatch.handle(query, origin, out) {
                    Action::Send(w) => Some(q.reply(frame, w.len)),
                    _ => None,
                }
            });
            if n < batch {
                break;
            }
        }
        // The kernel's drop counters cost a system call: copied at most once a second.
        if port
            .counters_read
            .is_none_or(|t| now.saturating_duration_since(t) >= Duration::from_secs(1))
        {
            port.counters_read = Some(now);
            if let Ok(k) = port.xsk.stats() {
                let values = [k.rx_dropped, k.rx_ring_full, k.rx_fill_empty, k.tx_invalid];
                for (c, v) in stats.xdp_kernel.iter().zip(values) {
                    c.set(v);
                }
            }
        }
        self.xdp = Some(port);
    }
}
