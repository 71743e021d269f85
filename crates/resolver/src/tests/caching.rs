//! What resolution leaves in the cache: negative answers with their SOA TTLs, trust ranks,
//! TTL caps, the memory bound, and a cache shared between workers.

use std::sync::Arc;

use shardns_wire::{RType, Rcode};

use super::sim::*;
use crate::{CacheAnswer, Config, Resolver};

#[test]
fn nxdomain_is_cached_with_soa_ttl() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("nope.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NXDOMAIN);
    assert_eq!(a.authority.len(), 1);
    assert_eq!(a.authority[0].rtype, RType::SOA);
    // SOA TTL 3600, MINIMUM 300: the negative TTL is 300.
    assert_eq!(a.authority[0].ttl, 300);
    let res = sim.resolver();
    let (r, m) = cache_answer(&res, "nope.example.test.", RType::MX, sim.now + 100_000);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NXDOMAIN,
            ..
        }
    ));
    assert_eq!(m.authority[0].ttl, 200);
    let (r, _) = cache_answer(&res, "nope.example.test.", RType::A, sim.now + 300_001);
    assert!(matches!(r, CacheAnswer::Miss { .. }));
    let mark = sim.log.len();
    assert_eq!(
        sim.resolve("nope.example.test.", RType::A).rcode,
        Rcode::NXDOMAIN
    );
    assert_eq!(sim.log.len(), mark, "answered from the negative cache");
}

#[test]
fn nodata_is_cached_with_soa() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(a.answers.is_empty());
    assert_eq!(a.authority[0].rtype, RType::SOA);
    let (r, m) = cache_answer(
        &sim.resolver(),
        "www.example.test.",
        RType::AAAA,
        sim.now + 1000,
    );
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            ..
        }
    ));
    assert!(m.answers.is_empty());
    assert_eq!(m.authority[0].ttl, 299);
}

#[test]
fn glue_does_not_overwrite_an_authoritative_answer() {
    // The example.test servers' names: the tld's glue says 10.0.3.1, the zone itself
    // says 10.0.3.1 and 10.0.3.11.
    let mut net = world();
    // sub.test's delegation carries a glue record for ns1.example.test with another address.
    let tld = net.servers.get_mut(&addr("10.0.1.1")).unwrap();
    tld.zones[0]
        .records
        .extend(records("ns1.example.test. 86400 A 10.0.3.66"));
    let mut sim = Sim::new(net, config());
    let a = sim.resolve("ns1.example.test.", RType::A);
    let mut got = rdata_a(&a);
    got.sort();
    assert_eq!(got, [[10, 0, 3, 1], [10, 0, 3, 11]]);
    let mark = sim.log.len();
    // A referral through the tld now carries glue for ns1.example.test (rank: additional).
    let a = sim.resolve("www.sub.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 90]]);
    let (_, m) = cache_answer(&sim.resolver(), "ns1.example.test.", RType::A, sim.now);
    let mut cached: Vec<Vec<u8>> = m.answers.iter().map(|r| r.rdata.clone()).collect();
    cached.sort();
    assert_eq!(cached, [vec![10, 0, 3, 1], vec![10, 0, 3, 11]]);
    assert!(!sim.log[mark..]
        .iter()
        .any(|s| s.server == addr("10.0.3.66")));
}

#[test]
fn cache_stays_within_its_memory_bound() {
    let mut net = world();
    let mut text = String::new();
    for i in 0..400 {
        text.push_str(&format!(
            "n{i}.example.test. 300 TXT some-text-to-take-room-{i}\n"
        ));
    }
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.servers.get_mut(&addr(ip)).unwrap().zones[0]
            .records
            .extend(records(&text));
    }
    let bound = 64 * 1024;
    let mut sim = Sim::new(
        net,
        Config {
            cache_bytes: bound,
            ..config()
        },
    );
    for i in 0..400 {
        let a = sim.resolve(&format!("n{i}.example.test."), RType::TXT);
        assert_eq!(a.answers.len(), 1);
    }
    let s = sim.resolver().cache().stats();
    assert!(s.bytes <= bound, "{s:?}");
    assert!(s.evictions > 0);
}

#[test]
fn shared_cache_serves_another_worker() {
    let resolver = Arc::new(Resolver::new(config()));
    let mut w1 = Sim::with_resolver(world(), Arc::clone(&resolver));
    let mut w2 = Sim::with_resolver(world(), Arc::clone(&resolver));
    w1.resolve("www.example.test.", RType::A);
    w2.now = w1.now;
    let a = w2.resolve("www.example.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    assert!(w2.log.is_empty());
    // The second worker's other names start from the cached example.test cut.
    w2.resolve("nope2.example.test.", RType::A);
    assert_eq!(w2.log.len(), 1);
}

#[test]
fn ttl_caps_apply_to_cache_and_answers() {
    let mut sim = Sim::new(
        world(),
        Config {
            min_ttl: 400,
            max_ttl: 500,
            max_negative_ttl: 60,
            ..config()
        },
    );
    // www.other.test has TTL 600: the answer and the cache say 500.
    let a = sim.resolve("www.other.test.", RType::A);
    assert_eq!(a.answers[0].ttl, 500);
    let res = sim.resolver();
    let (_, m) = cache_answer(&res, "www.other.test.", RType::A, sim.now);
    assert_eq!(m.answers[0].ttl, 500);
    // www.example.test has TTL 300: cached for 400.
    sim.resolve("www.example.test.", RType::A);
    let (r, _) = cache_answer(&res, "www.example.test.", RType::A, sim.now + 350_000);
    assert!(matches!(r, CacheAnswer::Hit { .. }));
    // Negative TTL 300 from the SOA, capped at 60.
    sim.resolve("nope.example.test.", RType::A);
    let (r, _) = cache_answer(&res, "nope.example.test.", RType::A, sim.now + 61_000);
    assert!(matches!(r, CacheAnswer::Miss { .. }));
}
