#![no_main]
//! Fuzz target `catalog`: see `shardns_fuzz::catalog` (fuzz/src/) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::catalog(data));
