//! The answer path must not touch the heap (LESSONS.md rule 3): a counting global allocator
//! sees zero allocations across thousands of answers of every kind.

use shardns_wire::{Class, Header, MessageWriter, Name, RType};
use shardns_zone::scan::{scan_text, ScanOptions};
use shardns_zone::{respond, Transport, Zone, ZoneSet};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ZONE: &str = include_str!("data/rfc4592.zone");

fn query(name: &str, qtype: RType, edns: bool) -> Vec<u8> {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    let n: Name = name.parse().unwrap();
    w.put_question(n.as_ref(), qtype, Class::IN).unwrap();
    if edns {
        w.put_opt(4096, 0, 0, true, &[]).unwrap();
    }
    w.finish(&Header::default()).to_vec()
}

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
        query("host1.example.", RType::A, false),
        query("HOST3.example.", RType::MX, true),
        query("host3.example.", RType::A, false),
        query("foo.bar.example.", RType::TXT, true),
        query("_telnet._tcp.host1.example.", RType::SRV, false),
        query("host.subdel.example.", RType::A, true),
        query("example.", RType::ANY, false),
        query("example.org.", RType::A, false),
        vec![0u8; 12],
        vec![1, 2, 3],
    ];
    let mut out = vec![0u8; 65535];
    COUNTING.store(true, Ordering::SeqCst);
    let mut answered = 0;
    for _ in 0..1000 {
        for q in &queries {
            for t in [Transport::Udp, Transport::Tcp] {
                if respond(&zones, q, t, &mut out).is_some() {
                    answered += 1;
                }
            }
        }
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(
        ALLOCS.load(Ordering::SeqCst),
        0,
        "heap allocations on the answer path"
    );
    assert_eq!(answered, 18_000);
}
