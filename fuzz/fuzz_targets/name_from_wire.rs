#![no_main]
//! Fuzz target `name_from_wire`: see `shardns_fuzz::name_from_wire` (fuzz/src/lib.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::name_from_wire(data));
