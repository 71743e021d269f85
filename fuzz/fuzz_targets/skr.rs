#![no_main]
//! Fuzz target `skr`: see `shardns_fuzz::skr` (fuzz/src/offline.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::skr(data));
