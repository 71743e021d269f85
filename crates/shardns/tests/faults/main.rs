//! End-to-end fault injection: zone files broken under a running server (garbage,
//! truncated mid-record, deleted, replaced by a FIFO or a directory) and reloaded by SIGHUP
//! and `shardns reload`; logs that cannot be written (standard error on /dev/full or on a
//! pipe nobody reads) with query logging on; and a resolver whose upstream servers, fakes
//! run by this test on 127.0.0.30-34, answer garbage, answer too late or never answer.
//! Each time the server must keep answering, report the fault, and never crash.
//!
//! Never: any address outside 127.0.0.0/8 and ::1, unbounded waits, processes left running.
//!
//! Each kind of fault has a module of its own, with its tests: `zone_files` (zone files broken
//! under the server), `logs` (standard error that cannot be written), `upstream` (the
//! resolver against misbehaving upstream servers) and `upstream_fakes` (those servers). This
//! file holds what they share.

#[path = "../common/mod.rs"]
mod common;
mod logs;
mod upstream;
mod upstream_fakes;
mod zone_files;

/// A deterministic byte generator (xorshift64).
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
