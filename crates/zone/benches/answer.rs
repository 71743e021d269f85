//! Lookup + render without I/O: answers per second on one core, and heap allocations per
//! answer (divan's AllocProfiler must show 0). Run: `cargo bench -p shardns-zone --bench answer`.

use shardns_testkit::{query, Edns};
use shardns_wire::{Name, RType};
use shardns_zone::scan::{scan_text, ScanOptions};
use shardns_zone::update::Change;
use shardns_zone::{respond_to_message, Transport, Zone, ZoneSet};
use std::path::Path;

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
}

/// The peers' benchmark zone shape: 1,000 hosts plus the usual apex records.
fn bench_zone(hosts: usize) -> ZoneSet {
    ZoneSet::new(vec![bench_zone_alone(hosts)])
}

fn bench_zone_alone(hosts: usize) -> Zone {
    let mut text = String::from(
        "$TTL 86400\n@ SOA ns1 hostmaster 1 3600 600 864000 300\n@ NS ns1\n@ NS ns2\n@ MX 10 mail\n\
         ns1 A 192.0.2.1\nns2 A 192.0.2.2\nmail A 192.0.2.3\nmail AAAA 2001:db8::3\nwww CNAME host0001\n\
         *.wild TXT \"wildcard\"\n",
    );
    for i in 0..hosts {
        text.push_str(&format!(
            "host{i:04} A 10.{}.{}.{}\n",
            i >> 16 & 255,
            i >> 8 & 255,
            i & 255
        ));
    }
    let origin: Name = "bench.test.".parse().unwrap();
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("bench.zone"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    Zone::build(origin, scanned).unwrap().0
}

const EDNS: Option<Edns> = Some(Edns {
    udp_size: 1232,
    version: 0,
    dnssec_ok: false,
});

fn run(bencher: divan::Bencher<'_, '_>, queries: Vec<Vec<u8>>) {
    run_on(bencher, &bench_zone(1000), queries);
}

/// [`bench_zone`] after one dynamic update (a TXT added at the apex): the version an
/// update leaves, in paged arrays, not packed into one allocation.
fn updated_zone(hosts: usize) -> ZoneSet {
    let base = &bench_zone_alone(hosts);
    let apex = base.apex().to_name();
    let soa = base.apex_node().rrset(RType::SOA).unwrap();
    let old: Vec<u8> = soa.rdatas().next().unwrap().to_vec();
    let mut new = old.clone();
    let at = new.len() - 20;
    new[at..at + 4].copy_from_slice(&2u32.to_be_bytes());
    let change = Change {
        deleted: Vec::new(),
        added: vec![(apex, RType::TXT, 300, b"\x05hello".to_vec())],
        old_soa: (soa.ttl, old),
        soa: (soa.ttl, new),
    };
    let (zone, _) = change.apply_split(base).unwrap();
    assert!(!zone.is_packed());
    ZoneSet::new(vec![zone])
}

/// [`a_1000_names`] on the zone an update left split ([`updated_zone`]).
#[divan::bench]
fn a_1000_names_split(bencher: divan::Bencher<'_, '_>) {
    run_on(
        bencher,
        &updated_zone(1000),
        (0..1000)
            .map(|i| query(1, &format!("host{i:04}.bench.test."), RType::A, None))
            .collect(),
    );
}

/// The documents' workload: A queries cycling over 1,000 existing names.
#[divan::bench]
fn a_1000_names(bencher: divan::Bencher<'_, '_>) {
    run(
        bencher,
        (0..1000)
            .map(|i| query(1, &format!("host{i:04}.bench.test."), RType::A, None))
            .collect(),
    );
}

/// Same with EDNS (OPT parsed and echoed).
#[divan::bench]
fn a_1000_names_edns(bencher: divan::Bencher<'_, '_>) {
    run(
        bencher,
        (0..1000)
            .map(|i| query(1, &format!("host{i:04}.bench.test."), RType::A, EDNS))
            .collect(),
    );
}

/// Negative answers (SOA in authority).
#[divan::bench]
fn nxdomain(bencher: divan::Bencher<'_, '_>) {
    run(
        bencher,
        (0..1000)
            .map(|i| query(1, &format!("missing{i}.bench.test."), RType::A, None))
            .collect(),
    );
}

/// MX with additional addresses, CNAME, wildcard synthesis.
#[divan::bench]
fn mixed(bencher: divan::Bencher<'_, '_>) {
    run(
        bencher,
        vec![
            query(1, "bench.test.", RType::MX, None),
            query(1, "www.bench.test.", RType::A, None),
            query(1, "x.wild.bench.test.", RType::TXT, None),
            query(1, "host0001.bench.test.", RType::AAAA, None),
        ],
    );
}

/// A signed zone and names to ask it: `bench/gen_zones.py`'s NSEC3 `bench.test.` (1,000
/// names, `python3 bench/gen_zones.py /tmp/shardns-bench-zones signed`) when it is there,
/// else the tests' small NSEC3 `example.`.
fn nsec3_zone() -> (ZoneSet, &'static str) {
    let big = Path::new("/tmp/shardns-bench-zones/bench.test.nsec3.zone");
    let (text, origin, file) = match std::fs::read(big) {
        Ok(t) => (t, "bench.test.", big),
        Err(_) => (
            include_bytes!("../tests/data/signed-nsec3.zone").to_vec(),
            "example.",
            Path::new("signed-nsec3.zone"),
        ),
    };
    let origin: Name = origin.parse().unwrap();
    let scanned = scan_text(&text, file, &ScanOptions::new(origin.clone())).unwrap();
    let zone = Zone::build(origin, scanned).unwrap().0;
    assert!(zone.is_signed());
    let apex = if file == big {
        "bench.test."
    } else {
        "example."
    };
    (ZoneSet::new(vec![zone]), apex)
}

const DO: Option<Edns> = Some(Edns {
    udp_size: 1232,
    version: 0,
    dnssec_ok: true,
});

fn run_on(bencher: divan::Bencher<'_, '_>, zones: &ZoneSet, queries: Vec<Vec<u8>>) {
    let mut out = vec![0u8; 65535];
    let mut i = 0usize;
    bencher
        .counter(divan::counter::ItemsCount::new(1usize))
        .bench_local(|| {
            i = (i + 1) % queries.len();
            divan::black_box(respond_to_message(
                zones,
                divan::black_box(&queries[i]),
                Transport::Udp,
                &mut out,
            ));
        });
}

/// NSEC3 name errors with DO (the `nsec3nx` workload): one SHA-1 of the next closer name,
/// three NSEC3 and four RRSIGs written.
#[divan::bench]
fn nsec3_nxdomain_do(bencher: divan::Bencher<'_, '_>) {
    let (zones, apex) = nsec3_zone();
    let queries = (0..1000)
        .map(|i| query(1, &format!("nx{i:04}.{apex}"), RType::A, DO))
        .collect();
    run_on(bencher, &zones, queries);
}

/// 100,000 small zones (12 records each, like bench/many_zones.py's) in one set.
fn many_zones(n: usize) -> ZoneSet {
    let zones = (0..n)
        .map(|i| {
            let origin: Name = format!("z{i:06}.test.").parse().unwrap();
            let text = format!(
                "$TTL 3600\n@ SOA ns1 host 1 3600 600 86400 300\n@ NS ns1\n@ NS ns2\n@ MX 10 mail\n\
                 @ A 192.0.2.1\n@ TXT \"zone {i}\"\nns1 A 192.0.2.2\nns2 A 192.0.2.3\nmail A 192.0.2.4\n\
                 mail AAAA 2001:db8::4\nwww A 192.0.2.5\nftp CNAME www\n"
            );
            let scanned = scan_text(
                text.as_bytes(),
                Path::new("z.zone"),
                &ScanOptions::new(origin.clone()),
            )
            .unwrap();
            Zone::build(origin, scanned).unwrap().0
        })
        .collect();
    ZoneSet::new(zones)
}

/// `www` A queries to `spread` of the `n` zones of [`many_zones`] (at least 1,000 queries),
/// in a fixed pseudo-random walk, so consecutive queries do not go to neighbouring zones.
fn spread_queries(n: usize, spread: usize) -> Vec<Vec<u8>> {
    (0..spread.max(1000))
        .map(|j| {
            let z = (j.wrapping_mul(7919) % spread) * (n / spread);
            query(1, &format!("www.z{z:06}.test."), RType::A, None)
        })
        .collect()
}

/// The cost of a large zone set on the answer path, without the kernel's: `www` A queries
/// to one zone of 100,000 (all in the CPU's caches), and spread over 10,000 of them or all
/// 100,000 (each answer's zone data mostly out of the caches, as on a hosting server).
#[divan::bench(args = [1, 10_000, 100_000])]
fn zones_100k_queried(bencher: divan::Bencher<'_, '_>, spread: usize) {
    let n = 100_000;
    let zones = many_zones(n);
    let queries = spread_queries(n, spread);
    let mut out = vec![0u8; 65535];
    let mut i = 0usize;
    bencher
        .counter(divan::counter::ItemsCount::new(1usize))
        .bench_local(|| {
            i = (i + 1) % queries.len();
            divan::black_box(respond_to_message(
                &zones,
                divan::black_box(&queries[i]),
                Transport::Udp,
                &mut out,
            ));
        });
}

/// Asks the CPU for the cache line at `p` without waiting for it (the server's own is
/// `sys::prefetch`; benches cannot reach it).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 only hints the cache: it reads nothing the program sees and never
    // faults, whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A worker's batch (16 datagrams, as from one recvmmsg) answered one query after the
/// other, with (`STAGED`) or without `ZoneSet::prefetch` over the batch first: `www` A
/// queries to one zone of 100,000 (cached) or spread over all 100,000 (cold). Counts
/// answers, so the figure compares with `zones_100k_queried`'s.
#[divan::bench(args = [1, 100_000], consts = [false, true])]
fn zones_100k_batch16<const STAGED: bool>(bencher: divan::Bencher<'_, '_>, spread: usize) {
    const BATCH: usize = 16;
    let n = 100_000;
    let zones = many_zones(n);
    let queries = spread_queries(n, spread);
    let batches: Vec<&[Vec<u8>]> = queries.chunks_exact(BATCH).collect();
    let mut out = vec![0u8; 65535];
    let mut i = 0usize;
    bencher
        .counter(divan::counter::ItemsCount::new(BATCH))
        .bench_local(|| {
            i = (i + 1) % batches.len();
            let batch = divan::black_box(batches[i]);
            if STAGED {
                zones.prefetch(batch.iter().map(Vec::as_slice), prefetch);
            }
            for q in batch {
                divan::black_box(respond_to_message(&zones, q, Transport::Udp, &mut out));
            }
        });
}
