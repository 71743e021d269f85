//! Times the zone-file scanner on one file (the load-time benchmark's zone, for instance).
//!
//! ```text
//! python3 shared/peers/gen/gen_big_zone.py /tmp/zones
//! cargo run --release -p shardns-zone --example scan_big -- /tmp/zones/big.test.zone big.test. 2 5
//! ```
//! Arguments: file, origin, threads (default 2), runs (default 5). Prints each run's time,
//! its CPU time (user + system, all threads; other load on the machine inflates wall time
//! but not this), the record count, and the peak resident memory of the process.

use shardns_zone::scan::{scan_file, ScanOptions};
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(origin)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: scan_big FILE ORIGIN [THREADS] [RUNS]");
        std::process::exit(2);
    };
    let threads = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let runs = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(5);
    let mut opts = ScanOptions::new(origin.parse().expect("origin"));
    opts.threads = threads;
    let mut best = f64::MAX;
    for run in 0..runs {
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let scanned = match scan_file(Path::new(file), &opts) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu;
        best = best.min(secs);
        let records: usize = scanned.chunks.iter().map(|c| c.items.len()).sum();
        let bytes: usize = scanned.chunks.iter().map(|c| c.bytes.len()).sum();
        println!(
            "run {run}: {secs:.3} s ({cpu:.2} s CPU), {records} records in {} chunks, {} MiB of names and rdata, {} warnings",
            scanned.chunks.len(),
            bytes >> 20,
            scanned.warnings.len()
        );
    }
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .unwrap_or_default();
    println!("best {best:.3} s with {threads} threads; {hwm}");
}

/// User + system CPU time of this process so far, from /proc (0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses: utime and stime are 12 and 13.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    // Clock ticks are 100 per second on Linux.
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}
