#![no_main]
//! Fuzz target `proxy_header`: see `shardns_fuzz::proxy_header` (fuzz/src/proxy.rs) for what it checks.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardns_fuzz::proxy_header(data));
