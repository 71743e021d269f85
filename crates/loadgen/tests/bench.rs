//! End-to-end tests of both modes against the in-process responder (tests/common).

mod common;

use common::{Behaviour, Responder, Stats};
use shardns_bench::{run_rate, run_rr, QueryList, QueryOptions, RateConfig, RrConfig};
use shardns_wire::RType;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

fn names(n: usize) -> QueryList {
    let text: String = (0..n)
        .map(|i| format!("host{i:04}.bench.test A\n"))
        .collect();
    QueryList::parse(&text, QueryOptions::default()).unwrap()
}

fn rr_config(r: &Responder, streams: Vec<usize>, ms: u64) -> RrConfig {
    let mut cfg = RrConfig::new(r.udp, streams);
    cfg.duration = Duration::from_millis(ms);
    cfg.runs = 1;
    cfg.seed = Some(7);
    cfg
}

#[test]
fn streams_keep_exactly_one_query_outstanding() {
    let r = Responder::start(Behaviour {
        delay: Duration::from_millis(3),
        ..Default::default()
    });
    let q = names(100);
    for n in [1usize, 4, 16] {
        r.stats.reset_max();
        let report = run_rr(&rr_config(&r, vec![n], 500), &q).unwrap();
        let p = &report.points[0];
        assert_eq!(
            r.stats.max_in_flight(),
            n as i64,
            "{n} streams: max queries in flight at the responder"
        );
        assert_eq!(p.tally.lost, 0);
        assert_eq!(p.tally.sent, p.tally.answered);
        // Closed loop: n streams x (1 query per 3 ms) at most.
        let bound = n as f64 / 0.003;
        assert!(
            p.ops_per_s <= bound * 1.02 && p.ops_per_s >= bound * 0.5,
            "{n} streams: {} ops/s",
            p.ops_per_s
        );
    }
}

#[test]
fn sweep_reports_points_and_peak() {
    let r = Responder::start(Behaviour {
        delay: Duration::from_millis(2),
        ..Default::default()
    });
    let mut cfg = rr_config(&r, vec![1, 2, 4], 300);
    cfg.runs = 2;
    cfg.pids = vec![std::process::id()];
    let report = run_rr(&cfg, &names(50)).unwrap();
    assert_eq!(report.points.len(), 3);
    assert!(report.points.iter().all(|p| p.runs.len() == 2));
    let peak = report.peak.as_ref().unwrap();
    assert_eq!(peak.streams, 4, "more streams, more ops with a fixed delay");
    // The responder runs in this process, so its CPU and memory are this process's.
    let s = report.points[2].server_usage.as_ref().unwrap();
    assert!(s.rss_end_kib > 0 && s.queries_per_cpu_s > 0.0, "{s:?}");
    let table = report.table();
    assert!(
        table.contains("peak:") && table.contains("srv q/CPU-s"),
        "{table}"
    );
}

#[test]
fn rate_is_within_two_percent() {
    let r = Responder::start(Behaviour::default());
    let mut cfg = RateConfig::new(r.udp, 5000.0, Duration::from_secs(5));
    cfg.seed = Some(1);
    let report = run_rate(&cfg, &names(1000)).unwrap();
    let asked = 25_000.0;
    assert!(
        (report.tally.sent as f64 / asked - 1.0).abs() <= 0.02,
        "sent {}",
        report.tally.sent
    );
    assert!(
        (report.sent_qps / 5000.0 - 1.0).abs() <= 0.02,
        "{} q/s",
        report.sent_qps
    );
    for s in report.seconds.iter().take(5) {
        assert!(
            (s.sent as f64 / 5000.0 - 1.0).abs() <= 0.02,
            "second {}: sent {}",
            s.t_s,
            s.sent
        );
    }
    assert_eq!(report.tally.answered, report.tally.sent);
    assert_eq!(report.tally.lost, 0);
    assert_eq!(Stats::get(&r.stats.received), report.tally.sent);
    assert_eq!(report.tally.rcode("NOERROR"), report.tally.sent);
}

#[test]
fn latency_matches_injected_delay() {
    let r = Responder::start(Behaviour {
        delay: Duration::from_millis(20),
        ..Default::default()
    });
    let q = names(100);
    let report = run_rr(&rr_config(&r, vec![4], 1000), &q).unwrap();
    let l = &report.points[0].latency;
    let p50 = l.p50_ms.unwrap();
    assert!((20.0..=30.0).contains(&p50), "rr p50 {p50} ms");
    assert!(l.min_ms.unwrap() >= 20.0, "{l:?}");
    let ops = report.points[0].ops_per_s;
    assert!(
        (120.0..=200.0).contains(&ops),
        "4 streams x 20 ms: {ops} ops/s"
    );

    let cfg = RateConfig::new(r.udp, 200.0, Duration::from_secs(1));
    let report = run_rate(&cfg, &q).unwrap();
    let p50 = report.latency.p50_ms.unwrap();
    assert!((20.0..=30.0).contains(&p50), "rate p50 {p50} ms");
    assert!(report.seconds[0].min_ms.unwrap() >= 20.0);
}

#[test]
fn latency_is_not_understated_in_large_batches() {
    // 20k q/s with a 5 ms tick: bursts of 100 queries, one GSO send call each. Every query of
    // a call is stamped with the time before the call, so none can look faster than the
    // responder's hold time.
    let r = Responder::start(Behaviour {
        delay: Duration::from_millis(5),
        ..Default::default()
    });
    let mut cfg = RateConfig::new(r.udp, 20_000.0, Duration::from_secs(1));
    cfg.tick = Some(Duration::from_millis(5));
    let report = run_rate(&cfg, &names(1000)).unwrap();
    let l = &report.latency;
    assert!(report.tally.answered > 15_000, "{:?}", report.tally);
    assert!(l.min_ms.unwrap() >= 5.0, "{l:?}");
    let p50 = l.p50_ms.unwrap();
    assert!((5.0..=15.0).contains(&p50), "p50 {p50} ms");
}

#[test]
fn rcodes_are_tallied() {
    let r = Responder::start(Behaviour::default());
    let list = ["nx1.test", "sf1.test", "rf1.test", "ok1.test", "nx2.test"];
    let q = QueryList::from_pairs(list.iter().map(|n| (*n, RType::A)), QueryOptions::default())
        .unwrap();
    let mut cfg = RateConfig::new(r.udp, 1000.0, Duration::from_secs(1));
    cfg.threads = Some(1);
    let report = run_rate(&cfg, &q).unwrap();
    let t = &report.tally;
    assert_eq!(t.sent, 1000);
    assert_eq!(t.rcode("NXDOMAIN"), 400);
    assert_eq!(t.rcode("SERVFAIL"), 200);
    assert_eq!(t.rcode("REFUSED"), 200);
    assert_eq!(t.rcode("NOERROR"), 200);
    assert!(
        report.table().contains("NXDOMAIN 400"),
        "{}",
        report.table()
    );
}

#[test]
fn timeouts_are_counted() {
    let r = Responder::start(Behaviour {
        drop_every: Some(10),
        ..Default::default()
    });
    let q = names(100);
    let mut cfg = rr_config(&r, vec![4], 600);
    cfg.timeout = Duration::from_millis(100);
    let report = run_rr(&cfg, &q).unwrap();
    let t = &report.points[0].tally;
    let dropped = Stats::get(&r.stats.dropped);
    assert!(dropped > 0);
    assert_eq!(t.lost, dropped, "rr: lost vs dropped");
    assert_eq!(t.sent, t.answered + t.lost);

    let before = Stats::get(&r.stats.dropped);
    let mut cfg = RateConfig::new(r.udp, 2000.0, Duration::from_secs(1));
    cfg.timeout = Duration::from_millis(100);
    let report = run_rate(&cfg, &q).unwrap();
    let dropped = Stats::get(&r.stats.dropped) - before;
    assert_eq!(report.tally.lost, dropped, "rate: lost vs dropped");
    assert_eq!(
        report.seconds.iter().map(|s| s.timeouts).sum::<u64>(),
        dropped
    );
    assert_eq!(report.tally.sent, report.tally.answered + report.tally.lost);
}

#[test]
fn tcp_rate_mode() {
    let r = Responder::start(Behaviour::default());
    let list = ["nx1.test", "ok1.test"];
    let q = QueryList::from_pairs(
        list.iter().map(|n| (*n, RType::AAAA)),
        QueryOptions::default(),
    )
    .unwrap();
    let mut cfg = RateConfig::new(r.tcp, 2000.0, Duration::from_secs(2));
    cfg.tcp = true;
    cfg.connections = Some(2);
    let report = run_rate(&cfg, &q).unwrap();
    let t = &report.tally;
    assert_eq!(report.transport, "tcp");
    assert!(
        (t.sent as f64 / 4000.0 - 1.0).abs() <= 0.02,
        "sent {}",
        t.sent
    );
    assert_eq!(t.answered, t.sent);
    assert_eq!(t.lost, 0);
    assert_eq!(Stats::get(&r.stats.tcp_received), t.sent);
    assert_eq!(t.rcode("NXDOMAIN") + t.rcode("NOERROR"), t.sent);
    assert!(t.rcode("NXDOMAIN").abs_diff(t.sent / 2) <= 2);
}

#[test]
fn ipv6_follows_the_server_address() {
    let Ok(r) = Responder::start_on(IpAddr::V6(Ipv6Addr::LOCALHOST), Behaviour::default()) else {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    };
    let cfg = RateConfig::new(r.udp, 1000.0, Duration::from_millis(500));
    let report = run_rate(&cfg, &names(10)).unwrap();
    assert_eq!(report.family, "IPv6");
    assert_eq!(report.tally.answered, 500);
    let report = run_rr(&rr_config(&r, vec![2], 200), &names(10)).unwrap();
    assert!(report.points[0].tally.answered > 0);
}

#[test]
fn cli_writes_json_and_plots() {
    let r = Responder::start(Behaviour {
        delay: Duration::from_millis(1),
        ..Default::default()
    });
    let dir = std::env::temp_dir().join(format!("shardns-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let qfile = dir.join("names.txt");
    std::fs::write(
        &qfile,
        "# test names\nhost0001.bench.test A\nnx.bench.test AAAA\n",
    )
    .unwrap();
    let s = |v: &str| v.into();
    let rr_png = dir.join("sweep.png");
    let args: Vec<std::ffi::OsString> = vec![
        s("shardns bench"),
        s("rr"),
        s("--server"),
        r.udp.to_string().into(),
        s("--queries"),
        qfile.clone().into(),
        s("--streams"),
        s("1,2,4"),
        s("--duration"),
        s("200ms"),
        s("--runs"),
        s("2"),
        s("--json"),
        s("--plot"),
        rr_png.clone().into(),
    ];
    assert_eq!(shardns_bench::run_cli(args), 0);
    let png = std::fs::read(&rr_png).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let rate_svg = dir.join("rate.svg");
    let args: Vec<std::ffi::OsString> = vec![
        s("shardns bench"),
        s("rate"),
        s("--server"),
        r.udp.to_string().into(),
        s("--queries"),
        qfile.into(),
        s("--qps"),
        s("500"),
        s("--duration"),
        s("2"),
        s("--plot"),
        rate_svg.clone().into(),
    ];
    assert_eq!(shardns_bench::run_cli(args), 0);
    let svg = std::fs::read_to_string(&rate_svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("latency per second"));
    let _ = std::fs::remove_dir_all(&dir);
}
