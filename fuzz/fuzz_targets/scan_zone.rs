#![no_main]
//! Fuzz target `scan_zone`: see `shardns_fuzz::scan_zone` (fuzz/src/lib.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::scan_zone(data));
