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

#[path = "../benches/common/mod.rs"]
mod common;

use common::{name, warm, NAMES};
use shardns_resolver::CacheAnswer;
use shardns_wire::{Class, MessageWriter, Name, RType};

fn main() {
    let hits: usize = std::env::args()
        .nth(1)
        .map_or(100_000, |a| a.parse().expect("N: a number of hits"));
    let resolver = warm();
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
