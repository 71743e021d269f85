#![no_main]
//! Fuzz target `xfr`: see `shardns_fuzz::xfr` (fuzz/src/lib.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::xfr(data));
