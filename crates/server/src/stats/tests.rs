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
