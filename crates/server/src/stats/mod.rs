//! stats -- per-worker counters, summed only when someone reads them, and their Prometheus
//! text form.
//!
//! Owns the workers' counters ([`Counter`], [`WorkerStats`]; the control plane's are
//! [`ControlStats`], in `shardns-control`) in this
//! file; `slots` maps query types, RCODEs and transports to counter slots and labels;
//! `totals` adds the workers' counters up; `prometheus` writes the text that
//! `shardns stats` and the HTTP endpoint serve.
//!
//! Each worker writes only its own [`WorkerStats`] (cache-line aligned, so two workers never
//! share a line) with a Relaxed load and store: one writer per counter needs no atomic
//! read-modify-write. Readers (the control thread, the HTTP thread) load every worker's
//! counters and add them up. Never: locks, or anything shared between workers on the
//! request path.

mod prometheus;
mod slots;
#[cfg(test)]
mod tests;
mod totals;

pub(crate) use prometheus::render_prometheus;

use crate::origin::SLOTS as QUERY_PATHS;
pub(crate) use shardns_control::ControlStats;
use shardns_wire::{RType, Rcode};
use slots::{qtype_index, rcode_index, QTYPE_SLOTS, RCODE_SLOTS};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A counter with a single writer (its worker) and any number of readers.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning worker calls this, so load + store loses nothing.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }
    /// Sets a gauge (single writer, as for `add`).
    #[inline]
    pub(crate) fn set(&self, n: u64) {
        self.0.store(n, Relaxed);
    }
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// One worker's counters. Aligned to 128 bytes (two cache lines, as adjacent-line
/// prefetchers pair them) so no two workers' counters share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct WorkerStats {
    /// Queries received, by transport (including dropped and malformed ones).
    pub(crate) queries: [Counter; QUERY_PATHS],
    /// Answered queries, by question type.
    pub(crate) qtypes: [Counter; QTYPE_SLOTS],
    /// Responses by RCODE.
    pub(crate) rcodes: [Counter; RCODE_SLOTS],
    /// Responses with TC set.
    pub(crate) truncated: Counter,
    /// Queries that got no response (ignored by the answering code, or the send failed).
    pub(crate) dropped: Counter,
    /// Queries that could not be parsed (FORMERR answers and datagrams too long to read).
    pub(crate) malformed: Counter,
    /// Locks taken on the request path: stderr's, by a logged request line or query-log
    /// line, and the resolver cache's shard locks. `shardns_request_locks_total`.
    pub(crate) request_locks: Counter,
    /// Heap allocations on the request path (the allocator may take its arena lock): a new
    /// TCP input buffer when the pool is empty, a connection table or TCP buffer that grew.
    /// `shardns_request_allocations_total`.
    pub(crate) request_allocations: Counter,
    /// recvmmsg calls.
    pub(crate) udp_recv_calls: Counter,
    /// sendmmsg calls.
    pub(crate) udp_send_calls: Counter,
    /// Returns from epoll_wait.
    pub(crate) wakeups: Counter,
    /// TCP connections accepted.
    pub(crate) tcp_accepted: Counter,
    /// TCP connections closed at once because a limit was reached.
    pub(crate) tcp_refused: Counter,
    /// TCP connections closed to make room for a new one (the least recently active).
    pub(crate) tcp_evicted: Counter,
    /// TCP connections closed to make room for a new one from the same client at its
    /// per-client limit (that client's least recently active).
    pub(crate) tcp_client_evicted: Counter,
    /// TCP connections closed after the idle timeout.
    pub(crate) tcp_idle_closed: Counter,
    /// TCP connections open now (a gauge).
    pub(crate) tcp_open: Counter,
    /// Recursive queries answered from the cache.
    pub(crate) resolver_cache_hits: Counter,
    /// Recursive queries the cache could not answer (each starts a resolution).
    pub(crate) resolver_cache_misses: Counter,
    /// Cache shard locks taken by queries answered from the cache.
    pub(crate) resolver_cache_locks: Counter,
    /// Queries sent to upstream servers.
    pub(crate) resolver_upstream_queries: Counter,
    /// Resolutions that ended in SERVFAIL.
    pub(crate) resolver_servfails: Counter,
    /// Recursive queries refused by the client access rules (`resolver.allow`,
    /// `resolver.access_control`).
    pub(crate) resolver_refused: Counter,
    /// Recursive answers (cache hits and resolutions, CD clear, validation on) whose
    /// every RRset DNSSEC validation found secure.
    pub(crate) dnssec_secure: Counter,
    /// Such answers found insecure (provably unsigned, or not all secure).
    pub(crate) dnssec_insecure: Counter,
    /// Such answers found bogus (SERVFAIL with a DNSSEC EDE).
    pub(crate) dnssec_bogus: Counter,
    /// Cache misses answered SERVFAIL because `resolver.max_pending` resolutions were in
    /// flight on the worker.
    pub(crate) resolver_pending_limited: Counter,
    /// Resolver queries dropped unanswered: `access_control` `deny` or `deny_non_local`,
    /// or a `deny` local zone.
    pub(crate) resolver_dropped: Counter,
    /// Resolver queries answered from local zones and data.
    pub(crate) resolver_local: Counter,
    /// Answers served stale (RFC 8767: expired cached data, EDE 3 or 19), from the
    /// cache-hit path or by a resolution whose upstreams failed.
    pub(crate) resolver_stale: Counter,
    /// Prefetches started: a popular cached name refreshed before it expires.
    pub(crate) resolver_prefetches: Counter,
    /// TCP connections closed at once because their client had
    /// `limits.tcp_connections_per_client` open.
    pub(crate) tcp_refused_client: Counter,
    /// TCP connections closed because a query took longer than `tcp_read_timeout_ms` to
    /// arrive.
    pub(crate) tcp_read_timeout_closed: Counter,
    /// TCP connections closed after `tcp_queries_per_connection` queries.
    pub(crate) tcp_query_limit_closed: Counter,
    /// UDP responses not sent because of response rate limiting.
    pub(crate) rrl_dropped: Counter,
    /// UDP responses sent truncated (TC=1) because of response rate limiting.
    pub(crate) rrl_slipped: Counter,
    /// The kernel's counters of this worker's AF_XDP socket (`server.xdp_interface`),
    /// copied at most once a second: frames dropped (invalid, or no room), dropped because
    /// the RX ring was full, times the fill ring was empty, invalid TX descriptors.
    pub(crate) xdp_kernel: [Counter; 4],
    /// Outgoing zone transfers, by event: started, done (the closing SOA went out),
    /// aborted (the connection closed first, or a record did not fit), refused (a transfer
    /// query answered NOTAUTH, NOTIMP, REFUSED or FORMERR).
    pub(crate) xfr: [Counter; 4],
    /// Messages sent by outgoing zone transfers.
    pub(crate) xfr_messages: Counter,
    /// DNS-over-TLS handshakes, by outcome: done, failed (not TLS, no common version or
    /// cipher, an alert), timed out (`limits.tls_handshake_timeout_ms`).
    pub(crate) tls_handshakes: [Counter; 3],
    /// Queries answered BADCOOKIE (a server cookie not ours, over UDP).
    pub(crate) bad_cookies: Counter,
    /// dnstap frames (`[dnstap]`): handed to the writer thread, dropped because it had
    /// no free buffer for this worker (the writer or its reader is behind).
    pub(crate) dnstap: [Counter; 2],
    /// DNS-over-QUIC connections, by what became of a new one: accepted, asked to prove
    /// its address first (a Retry, past half the limit), refused (at the limit).
    pub(crate) quic_connections: [Counter; 3],
    /// DNS over HTTPS: requests answered with an HTTP error (a bad path, method, media
    /// type, size or `dns` parameter), and connections closed with GOAWAY
    /// ENHANCE_YOUR_CALM (too many streams reset, or another HTTP/2 flood h2 caught).
    pub(crate) https: [Counter; 2],
    /// PROXY protocol headers refused, from a `server.proxy_protocol_from` address (the
    /// datagram or connection dropped), by `shardns_wire::proxy::ProxyError::index`.
    pub(crate) proxy_errors: [Counter; PROXY_REASONS],
}

/// Reasons of [`WorkerStats::proxy_errors`].
pub(crate) const PROXY_REASONS: usize = shardns_wire::proxy::ProxyError::ALL.len();

/// Indices of [`WorkerStats::https`].
pub(crate) const HTTPS_REJECTED: usize = 0;
pub(crate) const HTTPS_CALM: usize = 1;

/// Indices of [`WorkerStats::quic_connections`].
pub(crate) const QUIC_ACCEPTED: usize = 0;
pub(crate) const QUIC_RETRIED: usize = 1;
pub(crate) const QUIC_REFUSED: usize = 2;

/// Indices of [`WorkerStats::dnstap`].
pub(crate) const DNSTAP_SENT: usize = 0;
pub(crate) const DNSTAP_DROPPED: usize = 1;

/// Indices of [`WorkerStats::tls_handshakes`].
pub(crate) const TLS_DONE: usize = 0;
pub(crate) const TLS_FAILED: usize = 1;
pub(crate) const TLS_TIMEOUT: usize = 2;

/// Indices of [`WorkerStats::xfr`].
pub(crate) const XFR_STARTED: usize = 0;
pub(crate) const XFR_DONE: usize = 1;
pub(crate) const XFR_ABORTED: usize = 2;
pub(crate) const XFR_REFUSED: usize = 3;

impl WorkerStats {
    /// Counts one answered query.
    #[inline]
    pub(crate) fn answered(&self, qtype: Option<RType>, rcode: Rcode, truncated: bool) {
        if let Some(t) = qtype {
            self.qtypes[qtype_index(t)].add(1);
        }
        self.rcodes[rcode_index(rcode)].add(1);
        if rcode == Rcode::FORMERR {
            self.malformed.add(1);
        }
        if truncated {
            self.truncated.add(1);
        }
    }
}
