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

/// What the local zones add to every resolver query when only Unbound's default zones are
/// configured (the default): the client's access (two `allow` prefixes) and the lookup of a
/// name under no local zone (one hash lookup of its top-level label), or a default zone's
/// answer (`N.10.in-addr.arpa.`, NXDOMAIN with the SOA written).
/// `-`: the question written and nothing looked up (the baseline).
#[divan::bench(args = ["-", "example.", "10.in-addr.arpa."], sample_count = 100, sample_size = 1000)]
fn local_lookup(bencher: divan::Bencher<'_, '_>, suffix: &str) {
    use shardns_resolver::local::{Access, Local, LocalConfig, Prefix};
    let mut config = LocalConfig::default();
    config.global.defaults = true;
    config.access = ["127.0.0.0", "::1"]
        .iter()
        .zip([8, 128])
        .map(|(a, len)| {
            let p = Prefix {
                addr: a.parse().unwrap(),
                len,
            };
            (p, Access::Allow)
        })
        .collect();
    let local = Local::new(&config).unwrap();
    let baseline = suffix == "-";
    let suffix = if baseline { "example." } else { suffix };
    let names: Vec<Name> = (0..NAMES)
        .map(|i| format!("{}.host.{suffix}", i % 256).parse().unwrap())
        .collect();
    let client: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let mut i = 0usize;
    bencher.bench_local(|| {
        i = (i + 7919) % NAMES;
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(names[i].as_ref(), RType::A, Class::IN)
            .unwrap();
        if baseline {
            return divan::black_box(w.len());
        }
        let access = local.access(client);
        let a = local.answer(Some(client), names[i].as_ref(), RType::A, &mut w);
        divan::black_box((access, a.verdict));
        divan::black_box(w.len())
    });
}
