//! The counting allocator sees what it must, so a zero-allocation test can fail.

use shardns_testkit::CountingAlloc;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

#[test]
fn counts_allocations_only_while_on() {
    let (v, n) = GLOBAL.count(|| std::hint::black_box(vec![1u8; 100]));
    assert_eq!(n, 1);
    let (_, n) = GLOBAL.count(|| {
        let mut v = v;
        v.reserve(10_000);
        v
    });
    assert_eq!(n, 1, "a reallocation counts");
    let ((), n) = GLOBAL.count(|| ());
    assert_eq!(n, 0);
}

#[test]
fn other_threads_are_not_counted() {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::black_box(vec![0u8; 64]);
            }
        })
    };
    let ((), n) = GLOBAL.count(|| std::thread::sleep(std::time::Duration::from_millis(20)));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    busy.join().unwrap();
    assert_eq!(n, 0, "another thread's allocations were counted");
}
