#![no_main]
//! Fuzz target `xfr_in`: see `shardns_fuzz::xfr_in` (fuzz/src/xfr_in.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::xfr_in(data));
