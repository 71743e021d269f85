//! stats -- per-worker counters, summed only when someone reads them, and their Prometheus
//! text form.
//!
//! Each worker writes only its own [`WorkerStats`] (cache-line aligned, so two workers never
//! share a line) with a Relaxed load and store: one writer per counter needs no atomic
//! read-modify-write. Readers (the control thread, the HTTP thread) load every worker's
//! counters and add them up. Never: locks, or anything shared between workers on the
//! request path.

use shardns_wire::{RType, Rcode};
use std::fmt::Write as _;
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

/// Query types counted on their own; everything else is `other`.
pub(crate) const QTYPES: [RType; 18] = [
    RType::A,
    RType::NS,
    RType::CNAME,
    RType::SOA,
    RType::PTR,
    RType::MX,
    RType::TXT,
    RType::AAAA,
    RType::SRV,
    RType::NAPTR,
    RType::DS,
    RType::DNSKEY,
    RType::SVCB,
    RType::HTTPS,
    RType::CAA,
    RType::ANY,
    RType::AXFR,
    RType::IXFR,
];
/// The slot after the named types counts all other types.
const QTYPE_OTHER: usize = QTYPES.len();
const QTYPE_SLOTS: usize = QTYPE_OTHER + 1;

/// The counter slot for a query type (`QTYPE_OTHER` for the rest).
#[inline]
fn qtype_index(t: RType) -> usize {
    match t.0 {
        1 => 0,
        2 => 1,
        5 => 2,
        6 => 3,
        12 => 4,
        15 => 5,
        16 => 6,
        28 => 7,
        33 => 8,
        35 => 9,
        43 => 10,
        48 => 11,
        64 => 12,
        65 => 13,
        257 => 14,
        255 => 15,
        252 => 16,
        251 => 17,
        _ => QTYPE_OTHER,
    }
}

fn qtype_label(slot: usize) -> String {
    if slot == QTYPE_OTHER {
        "other".to_string()
    } else {
        QTYPES[slot].to_string()
    }
}

/// RCODE slots: 0..=15 on their own, then every extended RCODE together.
const RCODE_SLOTS: usize = 17;

#[inline]
fn rcode_index(r: Rcode) -> usize {
    (r.0 as usize).min(RCODE_SLOTS - 1)
}

fn rcode_label(slot: usize) -> String {
    if slot == RCODE_SLOTS - 1 {
        "other".to_string()
    } else {
        Rcode(slot as u16).to_string()
    }
}

/// How a query arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Udp4 = 0,
    Udp6 = 1,
    Tcp4 = 2,
    Tcp6 = 3,
    /// UDP read from an AF_XDP socket (`server.xdp_interface`).
    Xdp4 = 4,
    Xdp6 = 5,
}

const VIAS: usize = 6;
const VIA_LABELS: [(&str, &str); VIAS] = [
    ("udp", "4"),
    ("udp", "6"),
    ("tcp", "4"),
    ("tcp", "6"),
    ("xdp", "4"),
    ("xdp", "6"),
];

impl Via {
    pub(crate) fn udp(v6: bool) -> Self {
        if v6 {
            Self::Udp6
        } else {
            Self::Udp4
        }
    }
    pub(crate) fn xdp(v6: bool) -> Self {
        if v6 {
            Self::Xdp6
        } else {
            Self::Xdp4
        }
    }
    pub(crate) fn tcp(v6: bool) -> Self {
        if v6 {
            Self::Tcp6
        } else {
            Self::Tcp4
        }
    }
    pub(crate) fn name(self) -> &'static str {
        VIA_LABELS[self as usize].0
    }
}

/// One worker's counters. Aligned to 128 bytes (two cache lines, as adjacent-line
/// prefetchers pair them) so no two workers' counters share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct WorkerStats {
    /// Queries received, by transport (including dropped and malformed ones).
    pub(crate) queries: [Counter; VIAS],
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
    /// Lock acquisitions on the request path (stderr lock of query logging, and heap
    /// allocations, which may take the allocator's arena lock).
    pub(crate) lock_acquisitions: Counter,
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
    /// Recursive queries refused because the client is not in `resolver.allow`.
    pub(crate) resolver_refused: Counter,
    /// Cache misses answered SERVFAIL because `resolver.max_pending` resolutions were in
    /// flight on the worker.
    pub(crate) resolver_pending_limited: Counter,
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
}

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

/// Server-wide numbers kept by the control thread.
#[derive(Debug, Default)]
pub(crate) struct ControlStats {
    pub(crate) reloads_ok: AtomicU64,
    pub(crate) reloads_failed: AtomicU64,
    pub(crate) zones: AtomicU64,
    pub(crate) zone_load_errors: AtomicU64,
    /// NOTIFY messages sent (retries included), answered, and given up on.
    pub(crate) notify_sent: AtomicU64,
    pub(crate) notify_acked: AtomicU64,
    pub(crate) notify_failed: AtomicU64,
}

/// Every counter summed over the workers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) queries: [u64; VIAS],
    pub(crate) qtypes: [u64; QTYPE_SLOTS],
    pub(crate) rcodes: [u64; RCODE_SLOTS],
    pub(crate) truncated: u64,
    pub(crate) dropped: u64,
    pub(crate) malformed: u64,
    pub(crate) lock_acquisitions: u64,
    pub(crate) udp_recv_calls: u64,
    pub(crate) udp_send_calls: u64,
    pub(crate) wakeups: u64,
    pub(crate) tcp_accepted: u64,
    pub(crate) tcp_refused: u64,
    pub(crate) tcp_evicted: u64,
    pub(crate) tcp_idle_closed: u64,
    pub(crate) tcp_open: u64,
    pub(crate) resolver_cache_hits: u64,
    pub(crate) resolver_cache_misses: u64,
    pub(crate) resolver_cache_locks: u64,
    pub(crate) resolver_upstream_queries: u64,
    pub(crate) resolver_servfails: u64,
    pub(crate) resolver_refused: u64,
    pub(crate) resolver_pending_limited: u64,
    pub(crate) tcp_refused_client: u64,
    pub(crate) tcp_read_timeout_closed: u64,
    pub(crate) tcp_query_limit_closed: u64,
    pub(crate) rrl_dropped: u64,
    pub(crate) rrl_slipped: u64,
    pub(crate) xdp_kernel: [u64; 4],
    pub(crate) xfr: [u64; 4],
    pub(crate) xfr_messages: u64,
}

fn sum_into<const N: usize>(acc: &mut [u64; N], c: &[Counter; N]) {
    for (a, c) in acc.iter_mut().zip(c) {
        *a += c.get();
    }
}

impl Totals {
    /// Adds one worker's counters.
    pub(crate) fn add(&mut self, w: &WorkerStats) {
        sum_into(&mut self.queries, &w.queries);
        sum_into(&mut self.qtypes, &w.qtypes);
        sum_into(&mut self.rcodes, &w.rcodes);
        self.truncated += w.truncated.get();
        self.dropped += w.dropped.get();
        self.malformed += w.malformed.get();
        self.lock_acquisitions += w.lock_acquisitions.get();
        self.udp_recv_calls += w.udp_recv_calls.get();
        self.udp_send_calls += w.udp_send_calls.get();
        self.wakeups += w.wakeups.get();
        self.tcp_accepted += w.tcp_accepted.get();
        self.tcp_refused += w.tcp_refused.get();
        self.tcp_evicted += w.tcp_evicted.get();
        self.tcp_idle_closed += w.tcp_idle_closed.get();
        self.tcp_open += w.tcp_open.get();
        self.resolver_cache_hits += w.resolver_cache_hits.get();
        self.resolver_cache_misses += w.resolver_cache_misses.get();
        self.resolver_cache_locks += w.resolver_cache_locks.get();
        self.resolver_upstream_queries += w.resolver_upstream_queries.get();
        self.resolver_servfails += w.resolver_servfails.get();
        self.resolver_refused += w.resolver_refused.get();
        self.resolver_pending_limited += w.resolver_pending_limited.get();
        self.tcp_refused_client += w.tcp_refused_client.get();
        self.tcp_read_timeout_closed += w.tcp_read_timeout_closed.get();
        self.tcp_query_limit_closed += w.tcp_query_limit_closed.get();
        self.rrl_dropped += w.rrl_dropped.get();
        self.rrl_slipped += w.rrl_slipped.get();
        sum_into(&mut self.xdp_kernel, &w.xdp_kernel);
        sum_into(&mut self.xfr, &w.xfr);
        self.xfr_messages += w.xfr_messages.get();
    }

    /// Sums every worker's counters.
    pub(crate) fn sum<'a>(workers: impl IntoIterator<Item = &'a WorkerStats>) -> Self {
        let mut t = Self::default();
        for w in workers {
            t.add(w);
        }
        t
    }

    pub(crate) fn queries_total(&self) -> u64 {
        self.queries.iter().sum()
    }
}

/// A counter family with one label: one sample per (label value, count).
fn labelled(s: &mut String, name: &str, help: &str, label: &str, values: &[(&str, u64)]) {
    let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter");
    for (value, n) in values {
        let _ = writeln!(s, "{name}{{{label}=\"{value}\"}} {n}");
    }
}

/// Prometheus text exposition (format 0.0.4) of the summed counters, per-worker query
/// counts and the control-plane numbers.
pub(crate) fn render_prometheus(
    workers: &[&WorkerStats],
    control: &ControlStats,
    uptime_secs: f64,
) -> String {
    let t = Totals::sum(workers.iter().copied());
    let mut s = String::with_capacity(8192);
    let head = |s: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };

    head(
        &mut s,
        "shardns_queries_total",
        "counter",
        "Queries received, by transport and IP version.",
    );
    for (i, (proto, ip)) in VIA_LABELS.iter().enumerate() {
        let _ = writeln!(
            s,
            "shardns_queries_total{{transport=\"{proto}\",ip=\"{ip}\"}} {}",
            t.queries[i]
        );
    }
    head(
        &mut s,
        "shardns_queries_by_type_total",
        "counter",
        "Answered queries, by question type.",
    );
    for (i, n) in t.qtypes.iter().enumerate() {
        let _ = writeln!(
            s,
            "shardns_queries_by_type_total{{type=\"{}\"}} {n}",
            qtype_label(i)
        );
    }
    head(
        &mut s,
        "shardns_responses_total",
        "counter",
        "Responses sent, by RCODE.",
    );
    for (i, n) in t.rcodes.iter().enumerate() {
        let _ = writeln!(
            s,
            "shardns_responses_total{{rcode=\"{}\"}} {n}",
            rcode_label(i)
        );
    }
    let singles: [(&str, &str, u64); 8] = [
        ("shardns_truncated_total", "Responses with the TC bit set.", t.truncated),
        ("shardns_dropped_total", "Queries that got no response.", t.dropped),
        ("shardns_malformed_total", "Queries that could not be parsed.", t.malformed),
        (
            "shardns_lock_acquisitions_total",
            "Lock acquisitions on the request path (query logging's output lock, heap allocations).",
            t.lock_acquisitions,
        ),
        ("shardns_udp_recv_calls_total", "recvmmsg calls.", t.udp_recv_calls),
        ("shardns_udp_send_calls_total", "sendmmsg calls.", t.udp_send_calls),
        ("shardns_event_loop_wakeups_total", "Returns from epoll_wait (one per event-loop iteration).", t.wakeups),
        ("shardns_tcp_connections_accepted_total", "TCP connections accepted.", t.tcp_accepted),
    ];
    for (name, help, v) in singles {
        head(&mut s, name, "counter", help);
        let _ = writeln!(s, "{name} {v}");
    }
    labelled(
        &mut s,
        "shardns_tcp_connections_refused_total",
        "TCP connections closed at once because of a limit: the connection limits, or the client's own.",
        "reason",
        &[("limit", t.tcp_refused), ("client", t.tcp_refused_client)],
    );
    labelled(
        &mut s,
        "shardns_tcp_connections_closed_total",
        "TCP connections closed by the server, by reason.",
        "reason",
        &[
            ("idle", t.tcp_idle_closed),
            ("evicted", t.tcp_evicted),
            ("read_timeout", t.tcp_read_timeout_closed),
            ("query_limit", t.tcp_query_limit_closed),
        ],
    );
    labelled(
        &mut s,
        "shardns_rrl_limited_total",
        "UDP responses limited by response rate limiting: dropped, or slipped (sent truncated).",
        "action",
        &[("dropped", t.rrl_dropped), ("slipped", t.rrl_slipped)],
    );
    labelled(
        &mut s,
        "shardns_xdp_kernel_total",
        "The kernel's counters of the AF_XDP sockets (server.xdp_interface), read at most once a second: frames dropped, dropped because the RX ring was full, fill ring found empty, invalid TX descriptors.",
        "event",
        &[
            ("rx_dropped", t.xdp_kernel[0]),
            ("rx_ring_full", t.xdp_kernel[1]),
            ("fill_ring_empty", t.xdp_kernel[2]),
            ("tx_invalid", t.xdp_kernel[3]),
        ],
    );
    labelled(
        &mut s,
        "shardns_xfr_total",
        "Outgoing zone transfers (AXFR, IXFR): started, done, aborted (connection closed first, or a record too large), and transfer queries refused (NOTAUTH, NOTIMP, REFUSED, FORMERR).",
        "event",
        &[
            ("started", t.xfr[XFR_STARTED]),
            ("done", t.xfr[XFR_DONE]),
            ("aborted", t.xfr[XFR_ABORTED]),
            ("refused", t.xfr[XFR_REFUSED]),
        ],
    );
    head(
        &mut s,
        "shardns_xfr_messages_total",
        "counter",
        "Messages sent by outgoing zone transfers.",
    );
    let _ = writeln!(s, "shardns_xfr_messages_total {}", t.xfr_messages);
    head(
        &mut s,
        "shardns_tcp_connections_open",
        "gauge",
        "TCP connections open now.",
    );
    let _ = writeln!(s, "shardns_tcp_connections_open {}", t.tcp_open);

    let q = t.queries_total();
    let per_query = |n: u64| if q == 0 { 0.0 } else { n as f64 / q as f64 };
    head(
        &mut s,
        "shardns_lock_acquisitions_per_query",
        "gauge",
        "Lock acquisitions on the request path per query.",
    );
    let _ = writeln!(
        s,
        "shardns_lock_acquisitions_per_query {}",
        per_query(t.lock_acquisitions)
    );
    head(
        &mut s,
        "shardns_udp_queries_per_recv_call",
        "gauge",
        "UDP datagrams per recvmmsg call (batching).",
    );
    let udp = t.queries[0] + t.queries[1];
    let per_call = if t.udp_recv_calls == 0 {
        0.0
    } else {
        udp as f64 / t.udp_recv_calls as f64
    };
    let _ = writeln!(s, "shardns_udp_queries_per_recv_call {per_call}");

    let resolver: [(&str, &str, u64); 7] = [
        (
            "shardns_resolver_cache_hits_total",
            "Recursive queries answered from the cache.",
            t.resolver_cache_hits,
        ),
        (
            "shardns_resolver_cache_misses_total",
            "Recursive queries that started a resolution.",
            t.resolver_cache_misses,
        ),
        (
            "shardns_resolver_cache_locks_total",
            "Cache shard locks taken by queries answered from the cache.",
            t.resolver_cache_locks,
        ),
        (
            "shardns_resolver_upstream_queries_total",
            "Queries sent to upstream servers.",
            t.resolver_upstream_queries,
        ),
        (
            "shardns_resolver_servfails_total",
            "Resolutions that ended in SERVFAIL.",
            t.resolver_servfails,
        ),
        (
            "shardns_resolver_refused_total",
            "Recursive queries refused by the recursion ACL.",
            t.resolver_refused,
        ),
        (
            "shardns_resolver_pending_limited_total",
            "Cache misses answered SERVFAIL because the worker had resolver.max_pending resolutions in flight.",
            t.resolver_pending_limited,
        ),
    ];
    for (name, help, v) in resolver {
        head(&mut s, name, "counter", help);
        let _ = writeln!(s, "{name} {v}");
    }
    head(
        &mut s,
        "shardns_resolver_cache_locks_per_hit",
        "gauge",
        "Cache shard locks per query answered from the cache.",
    );
    let per_hit = if t.resolver_cache_hits == 0 {
        0.0
    } else {
        t.resolver_cache_locks as f64 / t.resolver_cache_hits as f64
    };
    let _ = writeln!(s, "shardns_resolver_cache_locks_per_hit {per_hit}");

    head(
        &mut s,
        "shardns_worker_queries_total",
        "counter",
        "Queries received, by worker.",
    );
    for (i, w) in workers.iter().enumerate() {
        let n: u64 = w.queries.iter().map(Counter::get).sum();
        let _ = writeln!(s, "shardns_worker_queries_total{{worker=\"{i}\"}} {n}");
    }
    head(&mut s, "shardns_workers", "gauge", "Worker threads.");
    let _ = writeln!(s, "shardns_workers {}", workers.len());
    head(&mut s, "shardns_zones", "gauge", "Zones being served.");
    let _ = writeln!(s, "shardns_zones {}", control.zones.load(Relaxed));
    head(
        &mut s,
        "shardns_reloads_total",
        "counter",
        "Reloads, by result (failed: at least one zone kept its previous version).",
    );
    let _ = writeln!(
        s,
        "shardns_reloads_total{{result=\"ok\"}} {}",
        control.reloads_ok.load(Relaxed)
    );
    let _ = writeln!(
        s,
        "shardns_reloads_total{{result=\"failed\"}} {}",
        control.reloads_failed.load(Relaxed)
    );
    head(
        &mut s,
        "shardns_zone_load_errors_total",
        "counter",
        "Zone loads that failed.",
    );
    let _ = writeln!(
        s,
        "shardns_zone_load_errors_total {}",
        control.zone_load_errors.load(Relaxed)
    );
    labelled(
        &mut s,
        "shardns_notify_total",
        "NOTIFY messages to secondaries: sent (retries included), answered, given up after five tries.",
        "result",
        &[
            ("sent", control.notify_sent.load(Relaxed)),
            ("answered", control.notify_acked.load(Relaxed)),
            ("failed", control.notify_failed.load(Relaxed)),
        ],
    );
    head(
        &mut s,
        "shardns_uptime_seconds",
        "gauge",
        "Seconds since the server started.",
    );
    let _ = writeln!(s, "shardns_uptime_seconds {uptime_secs:.3}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qtype_slots_are_distinct_and_labelled() {
        for (i, t) in QTYPES.iter().enumerate() {
            assert_eq!(qtype_index(*t), i, "{t}");
        }
        assert_eq!(qtype_index(RType(65280)), QTYPE_OTHER);
        assert_eq!(qtype_label(QTYPE_OTHER), "other");
        assert_eq!(qtype_label(7), "AAAA");
        assert_eq!(rcode_label(3), "NXDOMAIN");
        assert_eq!(rcode_index(Rcode::BADVERS), RCODE_SLOTS - 1);
    }

    #[test]
    fn totals_sum_every_worker() {
        let a = WorkerStats::default();
        let b = WorkerStats::default();
        a.queries[Via::Udp4 as usize].add(3);
        b.queries[Via::Tcp6 as usize].add(2);
        a.answered(Some(RType::A), Rcode::NOERROR, false);
        a.answered(Some(RType::A), Rcode::NXDOMAIN, true);
        b.answered(Some(RType(999)), Rcode::FORMERR, false);
        b.answered(None, Rcode::BADVERS, false);
        b.dropped.add(1);
        a.tcp_open.set(4);
        b.tcp_open.set(1);
        let t = Totals::sum([&a, &b]);
        assert_eq!(t.queries, [3, 0, 0, 2, 0, 0]);
        assert_eq!(t.queries_total(), 5);
        assert_eq!(t.qtypes[0], 2);
        assert_eq!(t.qtypes[QTYPE_OTHER], 1);
        assert_eq!(t.rcodes[0], 1);
        assert_eq!(t.rcodes[3], 1);
        assert_eq!(t.rcodes[1], 1);
        assert_eq!(t.rcodes[RCODE_SLOTS - 1], 1);
        assert_eq!(
            (t.truncated, t.malformed, t.dropped, t.tcp_open),
            (1, 1, 1, 5)
        );
    }

    #[test]
    fn workers_do_not_share_cache_lines() {
        assert_eq!(align_of::<WorkerStats>(), 128);
        assert_eq!(size_of::<WorkerStats>() % 128, 0);
    }

    #[test]
    fn prometheus_text_has_every_family() {
        let a = WorkerStats::default();
        a.queries[Via::Udp6 as usize].add(10);
        a.lock_acquisitions.add(0);
        a.answered(Some(RType::MX), Rcode::NOERROR, false);
        let text = render_prometheus(&[&a], &ControlStats::default(), 1.5);
        assert!(text.contains("shardns_queries_total{transport=\"udp\",ip=\"6\"} 10\n"));
        assert!(text.contains("shardns_queries_by_type_total{type=\"MX\"} 1\n"));
        assert!(text.contains("shardns_responses_total{rcode=\"NOERROR\"} 1\n"));
        assert!(text.contains("shardns_lock_acquisitions_total 0\n"));
        assert!(text.contains("shardns_lock_acquisitions_per_query 0\n"));
        assert!(text.contains("shardns_worker_queries_total{worker=\"0\"} 10\n"));
        a.rrl_dropped.add(3);
        a.rrl_slipped.add(2);
        a.tcp_refused_client.add(1);
        let text = render_prometheus(
            &[&a, &WorkerStats::default()],
            &ControlStats::default(),
            1.5,
        );
        assert!(text.contains("shardns_rrl_limited_total{action=\"dropped\"} 3\n"));
        assert!(text.contains("shardns_rrl_limited_total{action=\"slipped\"} 2\n"));
        assert!(text.contains("shardns_tcp_connections_refused_total{reason=\"client\"} 1\n"));
        assert!(text.contains("shardns_tcp_connections_refused_total{reason=\"limit\"} 0\n"));
        a.xdp_kernel[1].set(7);
        let text = render_prometheus(&[&a, &a], &ControlStats::default(), 1.5);
        assert!(text.contains("shardns_xdp_kernel_total{event=\"rx_ring_full\"} 14\n"));
        assert!(text.contains("shardns_xdp_kernel_total{event=\"rx_dropped\"} 0\n"));
        // Every sample line belongs to a family announced by a TYPE line.
        let families: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(families.contains(&name), "{name}");
        }
    }
}
