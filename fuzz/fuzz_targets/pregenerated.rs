#![no_main]
//! Fuzz target `pregenerated`: see `shardns_fuzz::pregenerated` (fuzz/src/offline.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::pregenerated(data));
