#![no_main]
//! Fuzz target `journal`: see `shardns_fuzz::journal` (fuzz/src/journal.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::journal(data));
