//! The warm cache that the `cache_hit` bench and the `cache_hits` example (callgrind) both
//! measure: 10,000 names `hostN.bench.test. A` resolved once through the real engine against a
//! fake server that is authoritative for everything. Shared by path, so the two always measure
//! the same cache.

use std::sync::Arc;

use shardns_resolver::{Config, Engine, Event, Hints, Resolver};
use shardns_wire::{Class, Name, RType, Section};

/// Names in the cache.
pub(crate) const NAMES: usize = 10_000;

/// Name `i` of the cache.
pub(crate) fn name(i: usize) -> Name {
    format!("host{i}.bench.test.").parse().unwrap()
}

/// The fake server: an A record for whatever it is asked.
fn respond(query: &[u8]) -> Vec<u8> {
    shardns_testkit::reply(query, true, |question, w, _| {
        let i = question.qname.as_ref().len() as u8;
        w.put_record(
            Section::Answer,
            question.qname.as_ref(),
            RType::A,
            Class::IN,
            86_400,
            &[10, 0, 0, i],
        )
        .unwrap();
    })
}

/// A resolver whose cache holds all `NAMES` names, resolved at time 0.
pub(crate) fn warm() -> Arc<Resolver> {
    let mut config = Config::default();
    // Validation on, but the fake root is unsigned: no trust anchor, so every answer is
    // insecure (the hit path still checks each set's security).
    config.trust_anchors = shardns_resolver::TrustAnchors::none();
    config.hints = Hints::parse(". NS a.root.\na.root. A 127.0.0.1@5300\n").unwrap();
    config.qname_minimisation = false;
    config.ipv6 = false;
    // SHARDNS_BENCH_PREFETCH=1: the hit path with its prefetch check on (no set comes
    // due: TTLs of a day).
    config.prefetch = std::env::var_os("SHARDNS_BENCH_PREFETCH").is_some();
    let resolver = Arc::new(Resolver::new(config));
    let mut engine = Engine::new(Arc::clone(&resolver), [3; 32]);
    for i in 0..NAMES {
        engine.resolve(name(i).as_ref(), RType::A, 0);
        while let Some(ev) = engine.poll() {
            if let Event::Transmit(t) = ev {
                engine.handle_response(t.query, t.server, &respond(t.payload()), 1);
            }
        }
    }
    resolver
}
