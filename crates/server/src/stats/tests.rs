//! Tests of the stats module: slots, totals, the Prometheus text.

use super::slots::*;
use super::totals::Totals;
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
    a.queries[0].add(3);
    b.queries[3].add(2);
    a.answered(Some(RType::A), Rcode::NOERROR, false);
    a.answered(Some(RType::A), Rcode::NXDOMAIN, true);
    b.answered(Some(RType(999)), Rcode::FORMERR, false);
    b.answered(None, Rcode::BADVERS, false);
    b.dropped.add(1);
    a.tcp_open.set(4);
    b.tcp_open.set(1);
    let t = Totals::sum([&a, &b]);
    assert_eq!(t.queries, [3, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0]);
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
    a.queries[1].add(10);
    a.request_locks.add(0);
    a.answered(Some(RType::MX), Rcode::NOERROR, false);
    let text = render_prometheus(&[&a], &ControlStats::default(), 1.5);
    assert!(text.contains("shardns_queries_total{transport=\"udp\",ip=\"6\"} 10\n"));
    assert!(text.contains("shardns_queries_by_type_total{type=\"MX\"} 1\n"));
    assert!(text.contains("shardns_responses_total{rcode=\"NOERROR\"} 1\n"));
    assert!(text.contains("shardns_request_locks_total 0\n"));
    assert!(text.contains("shardns_request_locks_per_query 0\n"));
    assert!(text.contains("shardns_request_allocations_total 0\n"));
    assert!(text.contains("shardns_request_allocations_per_query 0\n"));
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

/// The whole exposition with every counter distinct and non-zero, two workers and every
/// control-plane number set: byte for byte the text in `prometheus_golden.txt` (written
/// before `render_prometheus` was split into one helper per family group).
#[test]
fn prometheus_text_is_byte_identical() {
    let workers = [WorkerStats::default(), WorkerStats::default()];
    let mut n = 0u64;
    let mut next = || {
        n += 1;
        n
    };
    for w in &workers {
        w.queries.iter().for_each(|c| c.add(next()));
        w.qtypes.iter().for_each(|c| c.add(next()));
        w.rcodes.iter().for_each(|c| c.add(next()));
        w.truncated.add(next());
        w.dropped.add(next());
        w.malformed.add(next());
        w.request_locks.add(next());
        w.request_allocations.add(next());
        w.udp_recv_calls.add(next());
        w.udp_send_calls.add(next());
        w.wakeups.add(next());
        w.tcp_accepted.add(next());
        w.tcp_refused.add(next());
        w.tcp_evicted.add(next());
        w.tcp_client_evicted.add(next());
        w.tcp_idle_closed.add(next());
        w.tcp_open.add(next());
        w.resolver_cache_hits.add(next());
        w.resolver_cache_misses.add(next());
        w.resolver_cache_locks.add(next());
        w.resolver_upstream_queries.add(next());
        w.resolver_servfails.add(next());
        w.resolver_refused.add(next());
        w.dnssec_secure.add(next());
        w.dnssec_insecure.add(next());
        w.dnssec_bogus.add(next());
        w.resolver_pending_limited.add(next());
        w.tcp_refused_client.add(next());
        w.tcp_read_timeout_closed.add(next());
        w.tcp_query_limit_closed.add(next());
        w.rrl_dropped.add(next());
        w.rrl_slipped.add(next());
        w.xdp_kernel.iter().for_each(|c| c.add(next()));
        w.xfr.iter().for_each(|c| c.add(next()));
        w.xfr_messages.add(next());
        w.tls_handshakes.iter().for_each(|c| c.add(next()));
        w.bad_cookies.add(next());
        w.dnstap.iter().for_each(|c| c.add(next()));
        w.quic_connections.iter().for_each(|c| c.add(next()));
        w.https.iter().for_each(|c| c.add(next()));
        // Apart from `next`'s sequence, so the counters before them keep their values.
        for (i, c) in w.proxy_errors.iter().enumerate() {
            c.add(10 * (i as u64 + 1));
        }
        w.resolver_dropped.add(7);
        w.resolver_local.add(9);
        w.resolver_stale.add(11);
        w.resolver_prefetches.add(13);
    }
    let control = ControlStats::default();
    control.reloads_ok.store(next(), Relaxed);
    control.reloads_failed.store(next(), Relaxed);
    control.zones.store(next(), Relaxed);
    control.zone_load_errors.store(next(), Relaxed);
    control.notify_sent.store(next(), Relaxed);
    control.notify_acked.store(next(), Relaxed);
    control.notify_failed.store(next(), Relaxed);
    control.xfr_in_axfr.store(next(), Relaxed);
    control.xfr_in_ixfr.store(next(), Relaxed);
    control.xfr_in_failed.store(next(), Relaxed);
    control.xfr_in_bytes.store(next(), Relaxed);
    control.notify_in_accepted.store(next(), Relaxed);
    control.notify_in_refused.store(next(), Relaxed);
    control.secondary_unavailable.store(next(), Relaxed);
    control.secondary_expired.store(next(), Relaxed);
    control.catalog_members.store(next(), Relaxed);
    control.catalog_rejected.store(next(), Relaxed);
    control.dnstap_lost.store(next(), Relaxed);
    control.updates_accepted.store(next(), Relaxed);
    control.updates_refused.store(next(), Relaxed);
    control.updates_prerequisite.store(next(), Relaxed);
    control.updates_rate_limited.store(next(), Relaxed);
    control.updates_other.store(next(), Relaxed);
    control.updates_queue_full.store(next(), Relaxed);
    control.updates_forwarded.answered.store(next(), Relaxed);
    control.updates_forwarded.failed.store(next(), Relaxed);
    control.updates_forwarded.overflow.store(next(), Relaxed);
    let text = render_prometheus(&[&workers[0], &workers[1]], &control, 1234.5678);
    assert_eq!(text, include_str!("prometheus_golden.txt"));
}
