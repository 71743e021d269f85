#![no_main]
//! Fuzz target `update`: see `shardns_fuzz::update` (fuzz/src/update.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::update(data));
