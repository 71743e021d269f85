#![no_main]
//! Fuzz target `tsig`: see `shardns_fuzz::tsig` (fuzz/src/tsig.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::tsig(data));
