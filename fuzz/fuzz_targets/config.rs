#![no_main]
//! Fuzz target `config`: see `shardns_fuzz::config` (fuzz/src/) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::config(data));
