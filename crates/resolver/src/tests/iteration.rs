//! Iteration: from the root hints down through referrals, CNAME and DNAME chains across
//! zones, forward zones and stub zones.

use shardns_wire::{RType, Rcode};

use super::sim::*;
use crate::{CacheAnswer, Config, Resolution, ZoneServers};

#[test]
fn full_iteration_from_hints_with_qname_minimisation() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    let q = sim.queries_since(0);
    assert_eq!(q[0], (addr("10.0.0.1"), "test.".into(), RType::A));
    assert_eq!(q[1], (addr("10.0.1.1"), "example.test.".into(), RType::A));
    assert_eq!((q[2].1.as_str(), q[2].2), ("www.example.test.", RType::A));
    assert!(q[2].0.ip().to_string().starts_with("10.0.3."));
    assert_eq!(q.len(), 3);
    assert!(sim.log.iter().all(|s| s.edns && !s.rd && !s.tcp));
    // Cached now: the hit path answers with the TTL counted down.
    let res = sim.resolver();
    let (r, m) = cache_answer(&res, "www.example.test.", RType::A, sim.now + 100_000);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            truncated: false,
            locks: 1,
            ..
        }
    ));
    assert_eq!(m.answers[0].ttl, 200);
    // A second resolution needs no upstream query.
    let mark = sim.log.len();
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    assert_eq!(sim.log.len(), mark);
}

#[test]
fn cname_across_zones_with_out_of_bailiwick_name_server() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("alias.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    let types: Vec<RType> = a.answers.iter().map(|r| r.rtype).collect();
    assert_eq!(types, [RType::CNAME, RType::A]);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 100]]);
    // other.test's server had only out-of-bailiwick glue (6.6.6.6, offered by the test.
    // servers for a name under org.), which was dropped: its address came from a
    // sub-resolution via org.
    assert!(!sim
        .log
        .iter()
        .any(|s| s.server.ip().to_string() == "6.6.6.6"));
    assert!(sim.log.iter().any(|s| s.server == addr("10.0.2.1")));
    assert!(sim
        .log
        .iter()
        .any(|s| s.server == addr("10.0.4.1") && s.qname == n("ns.hosting.org.")));
    // The whole chain is served from the cache afterwards.
    let (r, m) = cache_answer(&sim.resolver(), "alias.example.test.", RType::A, sim.now);
    assert!(matches!(r, CacheAnswer::Hit { locks: 2, .. }));
    assert_eq!(m.answers.len(), 2);
}

#[test]
fn dname_substitution() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.old.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    let types: Vec<RType> = a.answers.iter().map(|r| r.rtype).collect();
    assert_eq!(types, [RType::DNAME, RType::CNAME, RType::A]);
    assert_eq!(a.answers[1].rdata, n("www.new.other.test.").as_wire());
    assert_eq!(rdata_a(&a), [[192, 0, 2, 101]]);
    let (r, m) = cache_answer(&sim.resolver(), "www.old.example.test.", RType::A, sim.now);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            ..
        }
    ));
    assert_eq!(m.answers.len(), 3);
}

/// Found by the differential test against Unbound: a CNAME query below a DNAME took the
/// synthesised CNAME as a plain one (the DNAME was lost, also for later queries answered from
/// the cache), and the cache rendered a synthesised CNAME wrongly for CNAME queries. The
/// CNAME at the name is the answer: its target is not asked about (RFC 1034 §3.6.2).
#[test]
fn cname_query_below_a_dname() {
    let mut sim = Sim::new(world(), config());
    let types = |a: &Resolution| a.answers.iter().map(|r| r.rtype).collect::<Vec<_>>();
    let a = sim.resolve("www.old.example.test.", RType::CNAME);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(types(&a), [RType::DNAME, RType::CNAME]);
    assert_eq!(a.answers[0].owner, n("old.example.test."));
    assert_eq!(a.answers[1].rdata, n("www.new.other.test.").as_wire());
    assert!(a.authority.is_empty(), "an answer, not NODATA: {a:?}");
    assert!(sim.log.iter().all(|s| s.qname != n("www.new.other.test.")));
    // Again, from the cache: the same two records, and nothing sent.
    let mark = sim.log.len();
    let a = sim.resolve("www.old.example.test.", RType::CNAME);
    assert_eq!(types(&a), [RType::DNAME, RType::CNAME]);
    assert_eq!(sim.log.len(), mark);
    let (_, m) = cache_answer(
        &sim.resolver(),
        "www.old.example.test.",
        RType::CNAME,
        sim.now,
    );
    assert_eq!(m.answers.len(), 2);
    assert_eq!(m.answers[0].rtype, RType::DNAME);
    // An A query after it still carries the DNAME.
    let a = sim.resolve("www.old.example.test.", RType::A);
    assert_eq!(types(&a), [RType::DNAME, RType::CNAME, RType::A]);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 101]]);
    assert!(sim.log.len() > mark, "the target's A was fetched");
}

#[test]
fn forward_zone_sends_everything_with_rd() {
    let mut net = world();
    let fwd = net.add(
        "10.0.7.1",
        vec![zone("fwd.example.", "www.fwd.example. 300 A 192.0.2.170")],
    );
    fwd.behaviour.recursive = true;
    let cfg = Config {
        forward_zones: vec![ZoneServers {
            zone: n("fwd.example."),
            servers: vec![addr("10.0.7.1")],
        }],
        ..config()
    };
    let mut sim = Sim::new(net, cfg);
    let a = sim.resolve("www.fwd.example.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 170]]);
    assert_eq!(sim.log.len(), 1);
    assert!(sim.log[0].rd && sim.log[0].qname == n("www.fwd.example."));
    let a = sim.resolve("nx.fwd.example.", RType::A);
    assert_eq!(a.rcode, Rcode::NXDOMAIN);
    assert_eq!(sim.log.len(), 2);
}

#[test]
fn stub_zone_iterates_below_given_servers() {
    let mut net = world();
    net.add(
        "10.0.8.1",
        vec![zone(
            "stub.example.",
            "deep.stub.example. 3600 NS ns.deep.stub.example.
             ns.deep.stub.example. 3600 A 10.0.8.2",
        )],
    );
    net.add(
        "10.0.8.2",
        vec![zone(
            "deep.stub.example.",
            "www.deep.stub.example. 300 A 192.0.2.180",
        )],
    );
    let cfg = Config {
        stub_zones: vec![ZoneServers {
            zone: n("stub.example."),
            servers: vec![addr("10.0.8.1")],
        }],
        ..config()
    };
    let mut sim = Sim::new(net, cfg);
    let a = sim.resolve("www.deep.stub.example.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 180]]);
    let q = sim.queries_since(0);
    assert_eq!(
        q,
        [
            (addr("10.0.8.1"), "deep.stub.example.".to_string(), RType::A),
            (
                addr("10.0.8.2"),
                "www.deep.stub.example.".to_string(),
                RType::A
            ),
        ]
    );
    assert!(!sim.log.iter().any(|s| s.rd));
}
