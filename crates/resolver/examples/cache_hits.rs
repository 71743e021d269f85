//! A driver for instruction counts of the cache-hit path: warms a cache with 10,000 names as
//! the `cache_hit` bench does, then renders `N` cached answers (first argument, default
//! 100,000) and prints how many it rendered. Under `valgrind --tool=callgrind`, the
//! difference between two runs with different `N`, divided by the difference in `N`, is
//! the instructions per hit (repeatable, unlike timings on a busy machine):
//!
//! ```sh
//! cargo build --release -p shardns-resolver --example cache_hits
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p target/release/examples/cache_hits 100000
//! ```

use std::sync::Arc;

use shardns_resolver::{CacheAnswer, Config, Engine, Event, Hints, Resolver};
use shardns_wire::{Class, MessageWriter, Name, RType, Section};

const NAMES: usize = 10_000;

fn name(i: usize) -> Name {
    format!("host{i}.bench.test.").parse().unwrap()
}

/// An authoritative server for everything: `hostN.bench.test. A`.
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

fn main() {
    let hits: usize = std::env::args()
        .nth(1)
        .map_or(100_000, |a| a.parse().expect("N: a number of hits"));
    let mut config = Config::default();
    config.hints = Hints::parse(". NS a.root.\na.root. A 127.0.0.1@5300\n").unwrap();
    config.qname_minimisation = false;
    config.ipv6 = false;
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
    let names: Vec<Name> = (0..NAMES).map(name).collect();
    let cache = resolver.cache();
    let mut buf = [0u8; 512];
    let mut answered = 0usize;
    let mut i = 0usize;
    for n in 0..hits {
        i = (i + 7919) % NAMES;
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(names[i].as_ref(), RType::A, Class::IN)
            .unwrap();
        // The clock moves, as it does in a server (TTLs are counted down on every hit).
        let now = 10 + n as u64;
        if let CacheAnswer::Hit { .. } = cache.answer(names[i].as_ref(), RType::A, now, &mut w) {
            answered += 1;
        }
        std::hint::black_box(w.len());
    }
    println!("{answered} hits of {hits}");
}
