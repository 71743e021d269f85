#![no_main]
//! Fuzz target `parse_message`: see `shardns_fuzz::parse_message` (fuzz/src/lib.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::parse_message(data));
