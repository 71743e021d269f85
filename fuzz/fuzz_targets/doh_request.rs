#![no_main]
//! Fuzz target `doh_request`: see `shardns_fuzz::doh_request` (fuzz/src/) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::doh_request(data));
