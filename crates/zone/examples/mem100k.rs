//! Resident memory of 100,000 small zones (diagnostic).
use shardns_wire::Name;
use shardns_zone::scan::{scan_text, ScanOptions};
use shardns_zone::{Zone, ZoneSet};
use std::path::Path;

fn rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    println!("start {}", rss());
    let zones: Vec<Zone> = (0..100_000)
        .map(|i| {
            let origin: Name = format!("z{i:06}.test.").parse().unwrap();
            let text = format!(
                "$TTL 3600\n@ SOA ns1 host 1 3600 600 86400 300\n@ NS ns1\n@ NS ns2\n@ MX 10 mail\n\
                 @ A 192.0.2.1\n@ TXT \"zone {i}\"\nns1 A 192.0.2.2\nns2 A 192.0.2.3\nmail A 192.0.2.4\n\
                 mail AAAA 2001:db8::4\nwww A 192.0.2.5\nftp CNAME www\n"
            );
            let scanned =
                scan_text(text.as_bytes(), Path::new("z.zone"), &ScanOptions::new(origin.clone())).unwrap();
            Zone::build(origin, scanned).unwrap().0
        })
        .collect();
    println!("zones {}", rss());
    let set = ZoneSet::new(zones);
    println!("set {} ({} zones)", rss(), set.len());
}
