//! No allocation per query: a counting allocator over whole runs. Setup (sockets, ID tables,
//! buffers, threads, one histogram per second and per run) allocates; queries must not, so
//! the count stays far below the number of queries.

use shardns_bench::{run_rate, run_rr, QueryList, QueryOptions, RateConfig, RrConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// An echo responder that allocates nothing per query (unlike tests/common's).
fn echo() -> (
    std::net::SocketAddr,
    Arc<AtomicBool>,
    std::thread::JoinHandle<()>,
) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        let end = Instant::now() + Duration::from_secs(20);
        while !flag.load(Ordering::Relaxed) && Instant::now() < end {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                buf[2] |= 0x80;
                let _ = sock.send_to(&buf[..n], from);
            }
        }
    });
    (addr, stop, t)
}

#[test]
fn runs_do_not_allocate_per_query() {
    let (addr, stop, t) = echo();
    let text: String = (0..200)
        .map(|i| format!("host{i:04}.bench.test A\n"))
        .collect();
    let q = QueryList::parse(&text, QueryOptions::default()).unwrap();

    let mut cfg = RateConfig::new(addr, 20_000.0, Duration::from_secs(1));
    cfg.threads = Some(1);
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let report = run_rate(&cfg, &q).unwrap();
    let allocs = ALLOCATIONS.load(Ordering::SeqCst) - before;
    assert!(report.tally.answered > 15_000, "{:?}", report.tally);
    eprintln!(
        "rate: {allocs} allocations for {} queries",
        report.tally.sent
    );
    assert!(
        allocs < 500,
        "rate: {allocs} allocations for {} queries",
        report.tally.sent
    );

    let mut cfg = RrConfig::new(addr, vec![32]);
    cfg.duration = Duration::from_secs(1);
    cfg.runs = 1;
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let report = run_rr(&cfg, &q).unwrap();
    let allocs = ALLOCATIONS.load(Ordering::SeqCst) - before;
    let sent = report.points[0].tally.sent;
    assert!(sent > 5_000, "{sent}");
    eprintln!("rr: {allocs} allocations for {sent} queries");
    assert!(allocs < 500, "rr: {allocs} allocations for {sent} queries");

    stop.store(true, Ordering::SeqCst);
    t.join().unwrap();
}
