//! The cache-hit path without I/O: answers rendered per second from a warm cache of 10,000
//! names, on one and two threads (sharded locks: no contention), and heap allocations per
//! answer (divan's AllocProfiler must show 0).
//! Run: `cargo bench -p shardns-resolver --bench cache_hit`.

use std::sync::Arc;

use shardns_resolver::{CacheAnswer, Config, Engine, Event, Hints, Resolver};
use shardns_wire::{Class, MessageWriter, Name, RType, Section};

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

const NAMES: usize = 10_000;

fn main() {
    divan::main();
}

fn name(i: usize) -> Name {
    format!("host{i}.bench.test.").parse().unwrap()
}

/// An authoritative server for everything: `hostN.bench.test. A`, CNAME for odd N's alias.
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

fn warm() -> Arc<Resolver> {
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
    resolver
}

#[divan::bench(threads = [1, 2], sample_count = 100, sample_size = 1000)]
fn answer_hit(bencher: divan::Bencher<'_, '_>) {
    let resolver = warm();
    let names: Vec<Name> = (0..NAMES).map(name).collect();
    let mut i = 0usize;
    bencher.bench_local(|| {
        i = (i + 7919) % NAMES;
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(names[i].as_ref(), RType::A, Class::IN)
            .unwrap();
        let r = resolver
            .cache()
            .answer(names[i].as_ref(), RType::A, 10, &mut w);
        assert!(matches!(r, CacheAnswer::Hit { .. }));
        divan::black_box(w.len())
    });
}
