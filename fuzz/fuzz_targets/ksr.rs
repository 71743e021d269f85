#![no_main]
//! Fuzz target `ksr`: see `shardns_fuzz::ksr` (fuzz/src/offline.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::ksr(data));
