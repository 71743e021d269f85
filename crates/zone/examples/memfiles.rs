//! Resident memory of zones read from files the way the server reads a zone list, one
//! after another in one thread (scan_file, build), kept in a vector as the server's loader
//! keeps its results (diagnostic). `memfiles DIR N`: DIR/zNNNNNN.test.zone as
//! `bench/many_zones.py` writes them. glibc's view of the heap: run it under gdb with a
//! breakpoint on `_exit`, then `call (int)malloc_info(0, (void*)stderr)`.
use shardns_wire::Name;
use shardns_zone::scan::{scan_file, ScanOptions};
use shardns_zone::{Zone, ZoneSet};
use std::path::PathBuf;

fn rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM") || l.starts_with("VmData"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).expect("usage: memfiles DIR N"));
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    println!("start {}", rss());
    let zones: Vec<Result<(Zone, Vec<_>), _>> = (0..n)
        .map(|i| {
            let origin: Name = format!("z{i:06}.test.").parse().unwrap();
            let opts = ScanOptions {
                threads: 1,
                ..ScanOptions::new(origin.clone())
            };
            let scanned = scan_file(&dir.join(format!("z{i:06}.test.zone")), &opts).unwrap();
            Zone::build(origin, scanned)
        })
        .collect();
    println!("zones {}", rss());
    let set = ZoneSet::new(zones.into_iter().map(|r| r.unwrap().0).collect());
    println!("set {} ({} zones)", rss(), set.len());
}
