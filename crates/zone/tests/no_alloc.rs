//! The answer path must not touch the heap: a counting global allocator
//! sees zero allocations across thousands of answers of every kind.

use shardns_testkit::{query, CountingAlloc, Edns};
use shardns_wire::{Name, RType};
use shardns_zone::scan::{scan_text, ScanOptions};
use shardns_zone::{respond_to_message, Transport, Zone, ZoneSet};
use std::path::Path;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

const ZONE: &str = include_str!("data/rfc4592.zone");
const EDNS: Option<Edns> = Some(Edns {
    udp_size: 4096,
    version: 0,
    dnssec_ok: true,
});

#[test]
fn answering_allocates_nothing() {
    let origin: Name = "example.".parse().unwrap();
    let scanned = scan_text(
        ZONE.as_bytes(),
        Path::new("rfc4592.zone"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    let (zone, _) = Zone::build(origin, scanned).unwrap();
    let zones = ZoneSet::new(vec![zone]);
    let queries = [
        query(1, "host1.example.", RType::A, None),
        query(2, "HOST3.example.", RType::MX, EDNS),
        query(3, "host3.example.", RType::A, None),
        query(4, "foo.bar.example.", RType::TXT, EDNS),
        query(5, "_telnet._tcp.host1.example.", RType::SRV, None),
        query(6, "host.subdel.example.", RType::A, EDNS),
        query(7, "example.", RType::ANY, None),
        query(8, "example.org.", RType::A, None),
        vec![0u8; 12],
        vec![1, 2, 3],
    ];
    let mut out = vec![0u8; 65535];
    let (answered, allocations) = GLOBAL.count(|| {
        let mut answered = 0;
        for _ in 0..1000 {
            for q in &queries {
                for t in [Transport::Udp, Transport::Tcp] {
                    if respond_to_message(&zones, q, t, &mut out).is_some() {
                        answered += 1;
                    }
                }
            }
        }
        answered
    });
    assert_eq!(allocations, 0, "heap allocations on the answer path");
    assert_eq!(answered, 18_000);
    // A batch's lookups started together (a worker's UDP batch) allocate nothing either.
    let (hinted, allocations) = GLOBAL.count(|| {
        let hinted = std::cell::Cell::new(0usize);
        for _ in 0..1000 {
            zones.prefetch(queries.iter().map(Vec::as_slice), |_| {
                hinted.set(hinted.get() + 1)
            });
        }
        hinted.get()
    });
    assert_eq!(allocations, 0, "heap allocations staging a batch");
    assert!(hinted > 0);
}

#[test]
fn signed_answers_allocate_nothing() {
    let mut zones = Vec::new();
    for (text, name) in [
        (include_str!("data/signed-nsec.zone"), "signed-nsec.zone"),
        (include_str!("data/signed-nsec3.zone"), "signed-nsec3.zone"),
    ] {
        // Both files are example.: each is a zone set of its own.
        let origin: Name = "example.".parse().unwrap();
        let scanned = scan_text(
            text.as_bytes(),
            Path::new(name),
            &ScanOptions::new(origin.clone()),
        )
        .unwrap();
        let (zone, _) = Zone::build(origin, scanned).unwrap();
        assert!(zone.is_signed());
        zones.push(ZoneSet::new(vec![zone]));
    }
    // Every kind of DNSSEC answer: signed data, name errors (two NSEC3 hashes each), no
    // data, empty non-terminals, wildcard answers and no data, referrals with and without
    // DS, CNAME and DNAME, truncation.
    let queries = [
        query(1, "www.example.", RType::A, EDNS),
        query(2, "nx.example.", RType::A, EDNS),
        query(3, "www.example.", RType::MX, EDNS),
        query(4, "c.ent.example.", RType::A, EDNS),
        query(5, "x.wild.example.", RType::A, EDNS),
        query(6, "x.wild.example.", RType::MX, EDNS),
        query(7, "www.sub.example.", RType::A, EDNS),
        query(8, "www.secure.example.", RType::A, EDNS),
        query(9, "sub.example.", RType::DS, EDNS),
        query(10, "walias.example.", RType::A, EDNS),
        query(11, "a.dn.example.", RType::A, EDNS),
        query(12, "example.", RType::DNSKEY, EDNS),
        query(13, "example.", RType::MX, EDNS),
        query(
            14,
            "nx.example.",
            RType::A,
            Some(Edns {
                udp_size: 512,
                version: 0,
                dnssec_ok: true,
            }),
        ),
    ];
    let mut out = vec![0u8; 65535];
    let (answered, allocations) = GLOBAL.count(|| {
        let mut answered = 0;
        for _ in 0..500 {
            for zones in &zones {
                for q in &queries {
                    for t in [Transport::Udp, Transport::Tcp] {
                        if respond_to_message(zones, q, t, &mut out).is_some() {
                            answered += 1;
                        }
                    }
                }
            }
        }
        answered
    });
    assert_eq!(allocations, 0, "heap allocations on the signed answer path");
    assert_eq!(answered, 500 * 2 * 14 * 2);
}
