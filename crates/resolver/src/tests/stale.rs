//! Serve-stale (RFC 8767) and prefetch: each timer and decision, on the simulated network.
//! `www.example.test. A` has a TTL of 300 s, `nope.example.test.` a negative TTL of 300 s;
//! example.test's servers are 10.0.3.1, 10.0.3.11 and 10.0.3.2.

use shardns_wire::{RType, Rcode};

use super::sim::*;
use crate::{CacheAnswer, Config, Ede};

const EXAMPLE_SERVERS: [&str; 3] = ["10.0.3.1", "10.0.3.11", "10.0.3.2"];

fn stale_config() -> Config {
    Config {
        serve_stale: true,
        ..config()
    }
}

/// example.test's servers answer REFUSED from now on (resolution fails at once).
fn refuse(sim: &mut Sim) {
    for ip in EXAMPLE_SERVERS {
        sim.net
            .servers
            .get_mut(&addr(ip))
            .unwrap()
            .behaviour
            .refused = true;
    }
}

fn ede(a: &crate::Resolution) -> Option<u16> {
    a.ede.map(|e| e.code)
}

#[test]
fn expired_answer_is_served_stale_when_servers_fail() {
    let mut sim = Sim::new(world(), stale_config());
    assert_eq!(
        rdata_a(&sim.resolve("www.example.test.", RType::A)),
        [[192, 0, 2, 80]]
    );
    sim.now += 301_000;
    refuse(&mut sim);
    let mark = sim.log.len();
    let a = sim.resolve("www.example.test.", RType::A);
    assert!(sim.log.len() > mark, "the servers were asked first");
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    assert_eq!(a.answers[0].ttl, 30, "RFC 8767's stale TTL");
    assert_eq!(ede(&a), Some(Ede::STALE_ANSWER));
    assert_eq!(sim.engine.stats().stale_answers, 1);
}

#[test]
fn nothing_stale_when_serve_stale_is_off() {
    let mut sim = Sim::new(world(), config());
    sim.resolve("www.example.test.", RType::A);
    sim.now += 301_000;
    refuse(&mut sim);
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_ne!(ede(&a), Some(Ede::STALE_ANSWER));
    assert_eq!(sim.engine.stats().stale_answers, 0);
}

#[test]
fn stale_data_is_kept_no_longer_than_the_stale_period() {
    let config = Config {
        serve_stale_max: 600,
        ..stale_config()
    };
    let mut sim = Sim::new(world(), config);
    sim.resolve("www.example.test.", RType::A);
    let t0 = sim.now;
    refuse(&mut sim);
    sim.now = t0 + 300_000 + 599_000;
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(
        ede(&a),
        Some(Ede::STALE_ANSWER),
        "599 s past expiry: served"
    );
    // Past the failure-recheck time and the stale period: SERVFAIL.
    sim.now = t0 + 300_000 + 601_000;
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert!(a.answers.is_empty());
}

#[test]
fn stale_nxdomain_carries_ede_19() {
    let mut sim = Sim::new(world(), stale_config());
    assert_eq!(
        sim.resolve("nope.example.test.", RType::A).rcode,
        Rcode::NXDOMAIN
    );
    sim.now += 301_000;
    refuse(&mut sim);
    let a = sim.resolve("nope.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NXDOMAIN);
    assert_eq!(ede(&a), Some(Ede::STALE_NXDOMAIN));
    assert_eq!(a.authority[0].rtype, RType::SOA);
    assert_eq!(a.authority[0].ttl, 30);
}

#[test]
fn a_failed_name_is_not_asked_again_for_the_recheck_time() {
    let mut sim = Sim::new(world(), stale_config());
    sim.resolve("www.example.test.", RType::A);
    sim.now += 301_000;
    refuse(&mut sim);
    assert_eq!(
        ede(&sim.resolve("www.example.test.", RType::A)),
        Some(Ede::STALE_ANSWER)
    );
    let failed_at = sim.now;
    sim.now = failed_at + 29_000;
    let mark = sim.log.len();
    let (a, took) = sim.resolve_timed("www.example.test.", RType::A);
    assert_eq!(ede(&a), Some(Ede::STALE_ANSWER));
    assert_eq!(
        sim.log.len(),
        mark,
        "within 30 s of the failure: nothing asked"
    );
    assert_eq!(took, 0);
    // Another type of the same name is not under the timer.
    sim.resolve("www.example.test.", RType::MX);
    assert!(sim.log.len() > mark);
    sim.now = failed_at + 31_000;
    let mark = sim.log.len();
    let a = sim.resolve("www.example.test.", RType::A);
    assert!(
        sim.log.len() > mark,
        "after 30 s the servers are asked again"
    );
    assert_eq!(ede(&a), Some(Ede::STALE_ANSWER));
}

#[test]
fn slow_resolution_gets_the_stale_answer_at_the_client_timeout_then_refreshes() {
    let config = Config {
        initial_timeout_ms: 4_000,
        min_timeout_ms: 4_000,
        max_timeout_ms: 4_000,
        ..stale_config()
    };
    let mut sim = Sim::new(world(), config);
    sim.resolve("www.example.test.", RType::A);
    sim.now += 301_000;
    for ip in EXAMPLE_SERVERS {
        sim.net.servers.get_mut(&addr(ip)).unwrap().latency = 2_500;
    }
    let (a, took) = sim.resolve_timed("www.example.test.", RType::A);
    assert_eq!(took, 1_800, "RFC 8767's client-response timer");
    assert_eq!(ede(&a), Some(Ede::STALE_ANSWER));
    assert!(sim.done.is_empty(), "one answer per client query");
    // The resolution went on and refreshed the cache.
    let (r, m) = cache_answer(&sim.resolver(), "www.example.test.", RType::A, sim.now);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            ..
        }
    ));
    assert!(m.answers[0].ttl > 290, "fresh TTL, not the stale one");
}

#[test]
fn a_quick_resolution_is_not_answered_stale() {
    let mut sim = Sim::new(world(), stale_config());
    sim.resolve("www.example.test.", RType::A);
    sim.now += 301_000;
    let (a, took) = sim.resolve_timed("www.example.test.", RType::A);
    assert!(took < 1_800);
    assert_eq!(a.ede, None);
    assert_eq!(a.answers[0].ttl, 300);
    assert_eq!(sim.engine.stats().stale_answers, 0);
}

fn prefetch_due(sim: &Sim, at: u64) -> Option<bool> {
    match cache_answer(&sim.resolver(), "www.example.test.", RType::A, at).0 {
        CacheAnswer::Hit { prefetch, .. } => Some(prefetch),
        CacheAnswer::Miss { .. } => None,
    }
}

#[test]
fn prefetch_is_due_once_in_the_last_tenth_of_the_ttl() {
    let config = Config {
        prefetch: true,
        ..config()
    };
    let mut sim = Sim::new(world(), config);
    sim.resolve("www.example.test.", RType::A);
    let t0 = sim.now;
    // TTL 300: the last 30 s.
    assert_eq!(prefetch_due(&sim, t0 + 200_000), Some(false));
    assert_eq!(prefetch_due(&sim, t0 + 269_000), Some(false));
    assert_eq!(prefetch_due(&sim, t0 + 271_000), Some(true));
    assert_eq!(
        prefetch_due(&sim, t0 + 272_000),
        Some(false),
        "reported once"
    );
    sim.now = t0 + 271_000;
    let mark = sim.log.len();
    let tasks = sim.engine.stats().tasks;
    sim.engine
        .prefetch(n("www.example.test.").as_ref(), RType::A, sim.now);
    sim.run();
    assert_eq!(sim.engine.stats().tasks, tasks + 1);
    assert_eq!(sim.engine.stats().prefetches, 1);
    let asked = sim.queries_since(mark);
    assert_eq!(asked.len(), 1, "one refresh: {asked:?}");
    assert_eq!(asked[0].1, "www.example.test.");
    assert!(sim.done.is_empty(), "a prefetch has no client");
    // The refreshed set has its whole TTL again, and its own prefetch window.
    let (_, m) = cache_answer(
        &sim.resolver(),
        "www.example.test.",
        RType::A,
        sim.now + 1_000,
    );
    assert!(m.answers[0].ttl >= 299);
    assert_eq!(prefetch_due(&sim, sim.now + 1_000), Some(false));
    assert_eq!(prefetch_due(&sim, sim.now + 271_000), Some(true));
}

#[test]
fn no_prefetch_when_off() {
    let mut sim = Sim::new(world(), config());
    sim.resolve("www.example.test.", RType::A);
    let t0 = sim.now;
    assert_eq!(prefetch_due(&sim, t0 + 290_000), Some(false));
    assert_eq!(prefetch_due(&sim, t0 + 299_500), Some(false));
}

#[test]
fn a_stale_chain_mixes_expired_and_fresh_sets() {
    let mut sim = Sim::new(world(), stale_config());
    let a = sim.resolve("alias.example.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 100]]);
    // The CNAME (300 s) has expired, its target's A (600 s) has not.
    sim.now += 400_000;
    refuse(&mut sim);
    let a = sim.resolve("alias.example.test.", RType::A);
    assert_eq!(ede(&a), Some(Ede::STALE_ANSWER));
    assert_eq!(a.answers[0].rtype, RType::CNAME);
    assert_eq!(a.answers[0].ttl, 30, "expired: the stale TTL");
    assert_eq!(rdata_a(&a), [[192, 0, 2, 100]]);
    let ttl = a.answers[1].ttl;
    assert!((195..=200).contains(&ttl), "fresh: its own TTL, {ttl}");
}

/// The worker's stale answer ([`crate::Resolver::answer_stale`]), written as a cache hit.
fn hit_path_stale(sim: &Sim, q: &str, qtype: RType) -> (CacheAnswer, shardns_wire::Message) {
    use shardns_wire::{Class, Header, MessageWriter};
    let mut buf = [0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096);
    w.put_question(n(q).as_ref(), qtype, Class::IN).unwrap();
    let r = sim
        .resolver()
        .answer_stale(n(q).as_ref(), qtype, sim.now, (false, false), &mut w);
    let msg = w.finish(&Header::default()).to_vec();
    (r, shardns_wire::Message::parse(&msg).unwrap())
}

fn hit_ede(a: &CacheAnswer) -> Option<u16> {
    match a {
        CacheAnswer::Hit { ede, .. } => ede.map(|e| e.code),
        CacheAnswer::Miss { .. } => None,
    }
}

/// Issue 30, second gap: in the failure-recheck window the worker answers stale from the
/// cache-hit path (no task): the same records, TTLs and EDE as the engine's stale answer;
/// outside the window, or for a question that did not fail, a miss (the engine decides,
/// with RFC 8767's timers).
#[test]
fn stale_answer_on_the_hit_path_in_the_recheck_window() {
    let mut sim = Sim::new(world(), stale_config());
    for q in [
        "www.example.test.",
        "nope.example.test.",
        "alias.example.test.",
    ] {
        sim.resolve(q, RType::A);
    }
    // www's A, nope's NXDOMAIN and alias's CNAME (300 s) expired; the CNAME's target not.
    sim.now += 400_000;
    refuse(&mut sim);
    let (a, _) = hit_path_stale(&sim, "www.example.test.", RType::A);
    assert_eq!(a, CacheAnswer::Miss { locks: 0 }, "not failed yet");
    for q in [
        "www.example.test.",
        "nope.example.test.",
        "alias.example.test.",
    ] {
        assert!(
            ede(&sim.resolve(q, RType::A)).is_some(),
            "{q} answered stale"
        );
    }
    let failed_at = sim.now;

    let (a, msg) = hit_path_stale(&sim, "www.example.test.", RType::A);
    assert!(
        matches!(
            a,
            CacheAnswer::Hit {
                rcode: Rcode::NOERROR,
                truncated: false,
                prefetch: false,
                ..
            }
        ),
        "{a:?}"
    );
    assert_eq!(hit_ede(&a), Some(Ede::STALE_ANSWER));
    assert_eq!(msg.answers.len(), 1);
    assert_eq!(msg.answers[0].ttl, 30, "RFC 8767's stale TTL");
    assert_eq!(&msg.answers[0].rdata[..], [192, 0, 2, 80]);

    let (a, msg) = hit_path_stale(&sim, "nope.example.test.", RType::A);
    assert!(
        matches!(
            a,
            CacheAnswer::Hit {
                rcode: Rcode::NXDOMAIN,
                ..
            }
        ),
        "{a:?}"
    );
    assert_eq!(hit_ede(&a), Some(Ede::STALE_NXDOMAIN));
    assert_eq!(msg.authority[0].rtype, RType::SOA);
    assert_eq!(msg.authority[0].ttl, 30);

    let (a, msg) = hit_path_stale(&sim, "alias.example.test.", RType::A);
    assert!(matches!(a, CacheAnswer::Hit { locks: 2, .. }), "{a:?}");
    assert_eq!(hit_ede(&a), Some(Ede::STALE_ANSWER));
    assert_eq!(msg.answers[0].rtype, RType::CNAME);
    assert_eq!(msg.answers[0].ttl, 30, "expired: the stale TTL");
    assert!(
        (195..=200).contains(&msg.answers[1].ttl),
        "fresh: its own TTL"
    );

    // The same answer as the engine's, which asks nothing either in the window.
    let mark = sim.log.len();
    let e = sim.resolve("www.example.test.", RType::A);
    assert_eq!(sim.log.len(), mark);
    assert_eq!(rdata_a(&e), [[192, 0, 2, 80]]);
    assert_eq!(e.answers[0].ttl, 30);

    // Another type of the name did not fail: a miss; so is everything once the window
    // (30 s) is over, and the engine asks again.
    assert!(matches!(
        hit_path_stale(&sim, "www.example.test.", RType::MX).0,
        CacheAnswer::Miss { .. }
    ));
    sim.now = failed_at + 31_000;
    assert!(matches!(
        hit_path_stale(&sim, "www.example.test.", RType::A).0,
        CacheAnswer::Miss { .. }
    ));
    // The live hit path never serves the expired set.
    assert!(matches!(
        cache_answer(&sim.resolver(), "www.example.test.", RType::A, sim.now).0,
        CacheAnswer::Miss { .. }
    ));
}

/// With serve-stale off the hit path has no stale answer, even for a failed question.
#[test]
fn no_stale_answer_on_the_hit_path_when_off() {
    let mut sim = Sim::new(world(), config());
    sim.resolve("www.example.test.", RType::A);
    sim.now += 301_000;
    refuse(&mut sim);
    assert_eq!(
        sim.resolve("www.example.test.", RType::A).rcode,
        Rcode::SERVFAIL
    );
    assert!(matches!(
        hit_path_stale(&sim, "www.example.test.", RType::A).0,
        CacheAnswer::Miss { .. }
    ));
}
