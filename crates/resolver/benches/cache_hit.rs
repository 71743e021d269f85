//! The cache-hit path without I/O: answers rendered per second from a warm cache of 10,000
//! names, on one and two threads (sharded locks: no contention), and heap allocations per
//! answer (divan's AllocProfiler must show 0).
//! Run: `cargo bench -p shardns-resolver --bench cache_hit`.

mod common;

use common::{name, warm, NAMES};
use shardns_resolver::CacheAnswer;
use shardns_wire::{Class, MessageWriter, Name, RType};

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
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
