//! stats::prometheus -- the Prometheus text exposition (format 0.0.4) of the summed
//! counters, per-worker query counts and the control-plane numbers.

use super::slots::{qtype_label, rcode_label};
use super::totals::Totals;
use super::{
    ControlStats, Counter, WorkerStats, DNSTAP_DROPPED, DNSTAP_SENT, HTTPS_CALM, HTTPS_REJECTED,
    QUIC_ACCEPTED, QUIC_REFUSED, QUIC_RETRIED, TLS_DONE, TLS_FAILED, TLS_TIMEOUT, XFR_ABORTED,
    XFR_DONE, XFR_REFUSED, XFR_STARTED,
};
use crate::origin::SLOT_LABELS as QUERY_PATH_LABELS;
use shardns_wire::proxy::ProxyError;
use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

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
    queries(&mut s, &t);
    connections(&mut s, &t);
    protocols(&mut s, &t, control);
    ratios(&mut s, &t);
    resolver(&mut s, &t);
    workers_and_zones(&mut s, workers, control);
    secondary(&mut s, control);
    updates(&mut s, control);
    head(
        &mut s,
        "shardns_uptime_seconds",
        "gauge",
        "Seconds since the server started.",
    );
    let _ = writeln!(&mut s, "shardns_uptime_seconds {uptime_secs:.3}");
    s
}

/// The `# HELP` and `# TYPE` lines of a family.
fn head(s: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Queries by transport and IP version, by question type; responses by RCODE.
fn queries(s: &mut String, t: &Totals) {
    head(
        s,
        "shardns_queries_total",
        "counter",
        "Queries received, by transport and IP version.",
    );
    for (i, (proto, ip)) in QUERY_PATH_LABELS.iter().enumerate() {
        let _ = writeln!(
            s,
            "shardns_queries_total{{transport=\"{proto}\",ip=\"{ip}\"}} {}",
            t.queries[i]
        );
    }
    head(
        s,
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
        s,
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
}

/// Single counters of the request path and the sockets; TCP connections refused and closed, RRL, the AF_XDP kernel counters.
fn connections(s: &mut String, t: &Totals) {
    let singles: [(&str, &str, u64); 9] = [
        (
            "shardns_truncated_total",
            "Responses with the TC bit set.",
            t.truncated,
        ),
        (
            "shardns_dropped_total",
            "Queries that got no response.",
            t.dropped,
        ),
        (
            "shardns_malformed_total",
            "Queries that could not be parsed.",
            t.malformed,
        ),
        (
            "shardns_request_locks_total",
            "Locks taken on the request path (the log's output lock, resolver cache shards).",
            t.request_locks,
        ),
        (
            "shardns_request_allocations_total",
            "Heap allocations on the request path (TCP buffers and connection table growth).",
            t.request_allocations,
        ),
        (
            "shardns_udp_recv_calls_total",
            "recvmmsg calls.",
            t.udp_recv_calls,
        ),
        (
            "shardns_udp_send_calls_total",
            "sendmmsg calls.",
            t.udp_send_calls,
        ),
        (
            "shardns_event_loop_wakeups_total",
            "Returns from epoll_wait (one per event-loop iteration).",
            t.wakeups,
        ),
        (
            "shardns_tcp_connections_accepted_total",
            "TCP connections accepted.",
            t.tcp_accepted,
        ),
    ];
    for (name, help, v) in singles {
        head(s, name, "counter", help);
        let _ = writeln!(s, "{name} {v}");
    }
    labelled(
        s,
        "shardns_tcp_connections_refused_total",
        "TCP connections closed at once because of a limit: the connection limits, or the client's own.",
        "reason",
        &[("limit", t.tcp_refused), ("client", t.tcp_refused_client)],
    );
    labelled(
        s,
        "shardns_tcp_connections_closed_total",
        "TCP connections closed by the server, by reason.",
        "reason",
        &[
            ("idle", t.tcp_idle_closed),
            ("evicted", t.tcp_evicted),
            ("client_evicted", t.tcp_client_evicted),
            ("read_timeout", t.tcp_read_timeout_closed),
            ("query_limit", t.tcp_query_limit_closed),
        ],
    );
    labelled(
        s,
        "shardns_rrl_limited_total",
        "UDP responses limited by response rate limiting: dropped, or slipped (sent truncated).",
        "action",
        &[("dropped", t.rrl_dropped), ("slipped", t.rrl_slipped)],
    );
    labelled(
        s,
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
}

/// Zone transfers out, TLS handshakes, cookies, dnstap, QUIC, DoH; transfer messages and open TCP connections.
fn protocols(s: &mut String, t: &Totals, control: &ControlStats) {
    labelled(
        s,
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
    labelled(
        s,
        "shardns_tls_handshakes_total",
        "DNS-over-TLS handshakes: done, failed (not TLS, nothing in common, an alert), timed out (limits.tls_handshake_timeout_ms).",
        "result",
        &[
            ("done", t.tls_handshakes[TLS_DONE]),
            ("failed", t.tls_handshakes[TLS_FAILED]),
            ("timeout", t.tls_handshakes[TLS_TIMEOUT]),
        ],
    );
    head(
        s,
        "shardns_bad_cookies_total",
        "counter",
        "Queries answered BADCOOKIE: a server cookie that is not ours, over UDP (RFC 7873).",
    );
    let _ = writeln!(s, "shardns_bad_cookies_total {}", t.bad_cookies);
    labelled(
        s,
        "shardns_dnstap_frames_total",
        "dnstap frames: sent to the writer thread, dropped by a worker (no free buffer: the writer is behind), lost by the writer (no reader, a failed write).",
        "result",
        &[
            ("sent", t.dnstap[DNSTAP_SENT]),
            ("dropped", t.dnstap[DNSTAP_DROPPED]),
            ("lost", control.dnstap_lost.load(Relaxed)),
        ],
    );
    labelled(
        s,
        "shardns_quic_connections_total",
        "New DNS-over-QUIC connections: accepted, retried (asked to prove their address first), refused (at the limit).",
        "result",
        &[
            ("accepted", t.quic_connections[QUIC_ACCEPTED]),
            ("retried", t.quic_connections[QUIC_RETRIED]),
            ("refused", t.quic_connections[QUIC_REFUSED]),
        ],
    );
    labelled(
        s,
        "shardns_https_events_total",
        "DNS over HTTPS: requests answered with an HTTP error (rejected), connections closed with GOAWAY ENHANCE_YOUR_CALM (calm).",
        "event",
        &[
            ("rejected", t.https[HTTPS_REJECTED]),
            ("calm", t.https[HTTPS_CALM]),
        ],
    );
    let reasons = ProxyError::ALL.map(|e| (e.reason(), t.proxy_errors[e.index()]));
    labelled(
        s,
        "shardns_proxy_errors_total",
        "PROXY protocol headers refused from server.proxy_protocol_from addresses (the datagram or connection dropped), by reason.",
        "reason",
        &reasons,
    );
    head(
        s,
        "shardns_xfr_messages_total",
        "counter",
        "Messages sent by outgoing zone transfers.",
    );
    let _ = writeln!(s, "shardns_xfr_messages_total {}", t.xfr_messages);
    head(
        s,
        "shardns_tcp_connections_open",
        "gauge",
        "TCP connections open now.",
    );
    let _ = writeln!(s, "shardns_tcp_connections_open {}", t.tcp_open);
}

/// Gauges per query and per recvmmsg call.
fn ratios(s: &mut String, t: &Totals) {
    let q = t.queries_total();
    let per_query = |n: u64| if q == 0 { 0.0 } else { n as f64 / q as f64 };
    for (name, help, n) in [
        (
            "shardns_request_locks_per_query",
            "Locks taken on the request path per query.",
            t.request_locks,
        ),
        (
            "shardns_request_allocations_per_query",
            "Heap allocations on the request path per query.",
            t.request_allocations,
        ),
    ] {
        head(s, name, "gauge", help);
        let _ = writeln!(s, "{name} {}", per_query(n));
    }
    head(
        s,
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
}

/// The resolver role and DNSSEC validation.
fn resolver(s: &mut String, t: &Totals) {
    let resolver: [(&str, &str, u64); 14] = [
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
            "shardns_dnssec_secure_total",
            "Recursive answers (CD clear) that DNSSEC validation found secure.",
            t.dnssec_secure,
        ),
        (
            "shardns_dnssec_insecure_total",
            "Recursive answers (CD clear) that DNSSEC validation found insecure.",
            t.dnssec_insecure,
        ),
        (
            "shardns_dnssec_bogus_total",
            "Recursive answers (CD clear) that DNSSEC validation found bogus (SERVFAIL).",
            t.dnssec_bogus,
        ),
        (
            "shardns_resolver_refused_total",
            "Recursive queries refused by the client access rules (resolver.allow, resolver.access_control).",
            t.resolver_refused,
        ),
        (
            "shardns_resolver_pending_limited_total",
            "Cache misses answered SERVFAIL because the worker had resolver.max_pending resolutions in flight.",
            t.resolver_pending_limited,
        ),
        (
            "shardns_resolver_dropped_total",
            "Resolver queries dropped unanswered by resolver.access_control or a deny local zone.",
            t.resolver_dropped,
        ),
        (
            "shardns_resolver_local_total",
            "Resolver queries answered from local zones and data.",
            t.resolver_local,
        ),
        (
            "shardns_resolver_stale_answers_total",
            "Answers served stale (RFC 8767, EDE 3 or 19) because the upstreams failed.",
            t.resolver_stale,
        ),
        (
            "shardns_resolver_prefetches_total",
            "Prefetches started: popular cached names refreshed before they expire.",
            t.resolver_prefetches,
        ),
    ];
    for (name, help, v) in resolver {
        head(s, name, "counter", help);
        let _ = writeln!(s, "{name} {v}");
    }
    head(
        s,
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
}

/// Queries per worker, workers, zones, reloads, zone load errors.
fn workers_and_zones(s: &mut String, workers: &[&WorkerStats], control: &ControlStats) {
    head(
        s,
        "shardns_worker_queries_total",
        "counter",
        "Queries received, by worker.",
    );
    for (i, w) in workers.iter().enumerate() {
        let n: u64 = w.queries.iter().map(Counter::get).sum();
        let _ = writeln!(s, "shardns_worker_queries_total{{worker=\"{i}\"}} {n}");
    }
    head(s, "shardns_workers", "gauge", "Worker threads.");
    let _ = writeln!(s, "shardns_workers {}", workers.len());
    head(s, "shardns_zones", "gauge", "Zones being served.");
    let _ = writeln!(s, "shardns_zones {}", control.zones.load(Relaxed));
    head(
        s,
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
        s,
        "shardns_zone_load_errors_total",
        "counter",
        "Zone loads that failed.",
    );
    let _ = writeln!(
        s,
        "shardns_zone_load_errors_total {}",
        control.zone_load_errors.load(Relaxed)
    );
}

/// NOTIFY, incoming transfers, secondary zones and catalogs (the control plane).
fn secondary(s: &mut String, control: &ControlStats) {
    labelled(
        s,
        "shardns_notify_total",
        "NOTIFY messages to secondaries: sent (retries included), answered, given up after five tries.",
        "result",
        &[
            ("sent", control.notify_sent.load(Relaxed)),
            ("answered", control.notify_acked.load(Relaxed)),
            ("failed", control.notify_failed.load(Relaxed)),
        ],
    );
    labelled(
        s,
        "shardns_xfr_in_total",
        "Incoming zone transfers of secondary zones: the whole zone (AXFR, or an IXFR answered in AXFR form), incremental (IXFR differences), failed (the version served is kept).",
        "result",
        &[
            ("axfr", control.xfr_in_axfr.load(Relaxed)),
            ("ixfr", control.xfr_in_ixfr.load(Relaxed)),
            ("failed", control.xfr_in_failed.load(Relaxed)),
        ],
    );
    head(
        s,
        "shardns_xfr_in_bytes_total",
        "counter",
        "Octets of the messages of incoming zone transfers (failed ones included).",
    );
    let _ = writeln!(
        s,
        "shardns_xfr_in_bytes_total {}",
        control.xfr_in_bytes.load(Relaxed)
    );
    labelled(
        s,
        "shardns_notify_in_total",
        "NOTIFY messages received: accepted (from a primary of a secondary zone; a refresh follows), refused.",
        "result",
        &[
            ("accepted", control.notify_in_accepted.load(Relaxed)),
            ("refused", control.notify_in_refused.load(Relaxed)),
        ],
    );
    head(
        s,
        "shardns_secondary_zones_unavailable",
        "gauge",
        "Secondary zones answered with SERVFAIL now: expired, or never transferred.",
    );
    let _ = writeln!(
        s,
        "shardns_secondary_zones_unavailable {}",
        control.secondary_unavailable.load(Relaxed)
    );
    head(
        s,
        "shardns_secondary_expired_total",
        "counter",
        "Times a secondary zone expired (EXPIRE passed without a successful refresh).",
    );
    let _ = writeln!(
        s,
        "shardns_secondary_expired_total {}",
        control.secondary_expired.load(Relaxed)
    );
    head(
        s,
        "shardns_catalog_member_zones",
        "gauge",
        "Member zones brought by consumed catalog zones (RFC 9432).",
    );
    let _ = writeln!(
        s,
        "shardns_catalog_member_zones {}",
        control.catalog_members.load(Relaxed)
    );
    head(
        s,
        "shardns_catalog_rejected_total",
        "counter",
        "Catalog zone versions not used (bad or missing version, a member listed twice).",
    );
    let _ = writeln!(
        s,
        "shardns_catalog_rejected_total {}",
        control.catalog_rejected.load(Relaxed)
    );
}

/// Dynamic updates (RFC 2136) by outcome.
fn updates(s: &mut String, control: &ControlStats) {
    let forwarded = &control.updates_forwarded;
    labelled(
        s,
        "shardns_updates_total",
        "Dynamic updates (RFC 2136) answered: accepted (NOERROR), refused (REFUSED or NOTAUTH: no grant, no or a bad TSIG, not a primary zone here), prerequisite (YXDOMAIN, YXRRSET, NXDOMAIN, NXRRSET), rate_limited (over limits.updates_per_second, REFUSED), other (FORMERR, NOTZONE, SERVFAIL), queue_full (REFUSED by a worker: the main thread's queue was full), forwarded (a secondary zone's, relayed with its primary's answer), forward_failed (no primary answered, or too many forwards waiting: SERVFAIL).",
        "result",
        &[
            ("accepted", control.updates_accepted.load(Relaxed)),
            ("refused", control.updates_refused.load(Relaxed)),
            ("prerequisite", control.updates_prerequisite.load(Relaxed)),
            ("rate_limited", control.updates_rate_limited.load(Relaxed)),
            ("other", control.updates_other.load(Relaxed)),
            ("queue_full", control.updates_queue_full.load(Relaxed)),
            ("forwarded", forwarded.answered.load(Relaxed)),
            (
                "forward_failed",
                forwarded.failed.load(Relaxed) + forwarded.overflow.load(Relaxed),
            ),
        ],
    );
}
