//! Times a whole zone load (scan + checks + database build) and reports resident memory.
//!
//! ```text
//! python3 bench/gen_zones.py /tmp/zones big
//! cargo run --release -p shardns-zone --example load -- /tmp/zones/big.test.zone big.test. 2
//! ```

use shardns_zone::scan::{scan_file, ScanOptions};
use shardns_zone::Zone;
use std::path::Path;
use std::time::Instant;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(origin)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: load FILE ORIGIN [THREADS]");
        std::process::exit(2);
    };
    let mut opts = ScanOptions::new(origin.parse().expect("origin"));
    opts.threads = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let t = Instant::now();
    let scanned = match scan_file(Path::new(file), &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let scan_secs = t.elapsed().as_secs_f64();
    match Zone::build(opts.origin.clone(), scanned) {
        Ok((zone, warnings)) => {
            let secs = t.elapsed().as_secs_f64();
            println!(
                "loaded {} records, {} names in {secs:.3} s (scan {scan_secs:.3} s, build {:.3} s; {} warnings); RSS {} MiB",
                zone.record_count(),
                zone.node_count(),
                secs - scan_secs,
                warnings.len(),
                rss_kib() / 1024
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
