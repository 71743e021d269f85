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
