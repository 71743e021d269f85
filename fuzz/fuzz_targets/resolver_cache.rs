#![no_main]
//! Fuzz target `resolver_cache`: see `shardns_fuzz::resolver_cache` (fuzz/src/) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::resolver_cache(data));
