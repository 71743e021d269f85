//! Times the zone-file scanner on one file (the load-time benchmark's zone, for instance).
//!
//! ```text
//! python3 bench/gen_zones.py /tmp/zones big
//! cargo run --release -p shardns-zone --example scan_big -- /tmp/zones/big.test.zone big.test. 2 5
//! ```
//! Arguments: file, origin, threads (default 2), runs (default 5), and `check` to compare
//! the threaded scan with a sequential one. Prints each run's time,
//! its CPU time (user + system, all threads; other load on the machine inflates wall time
//! but not this), the record count, and the peak resident memory of the process.

use shardns_zone::scan::{scan_file, scan_text, ScanOptions};
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
    // The scan alone, on text already in memory.
    let text = std::fs::read(file).expect("read");
    let t = Instant::now();
    let scanned = scan_text(&text, Path::new(file), &opts).expect("scan");
    println!(
        "scan_text alone: {:.3} s ({} chunks)",
        t.elapsed().as_secs_f64(),
        scanned.chunks.len()
    );
    if args.get(5).is_some_and(|a| a == "check") {
        // The threaded scan must give exactly the sequential scan's records.
        let mut one = opts.clone();
        one.threads = 1;
        let seq = scan_text(&text, Path::new(file), &one).expect("scan");
        let flat = |s: &shardns_zone::scan::Scanned| -> Vec<Flat> {
            s.chunks
                .iter()
                .flat_map(|c| {
                    c.items.iter().map(move |i| {
                        let owner = c.owner(i).as_wire().to_vec();
                        (owner, i.rtype.0, i.ttl, c.rdata(i).to_vec(), i.line)
                    })
                })
                .collect()
        };
        assert!(
            flat(&seq) == flat(&scanned),
            "threaded and sequential scans differ"
        );
        println!("check: threaded and sequential scans give the same records");
    }
    drop(scanned);
    drop(text);
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.to_string())
        })
        .unwrap_or_default();
    println!("best {best:.3} s with {threads} threads; {hwm}");
}

/// One record: owner and rdata in wire form, type, TTL, line.
type Flat = (Vec<u8>, u16, u32, Vec<u8>, u32);

/// User + system CPU time of this process so far, from /proc (0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses: utime and stime are 12 and 13.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // Clock ticks are 100 per second on Linux.
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}
