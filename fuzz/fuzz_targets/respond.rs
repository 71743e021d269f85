#![no_main]
//! Fuzz target `respond`: see `shardns_fuzz::respond` (fuzz/src/lib.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::respond(data));
