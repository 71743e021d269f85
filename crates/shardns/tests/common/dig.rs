//! `dig` and `kdig` run against a server under test, one try with a short timeout.

use std::net::SocketAddr;
use std::process::{Command, Output};

/// Runs `dig` against the server with one try and a short timeout; returns stdout.
pub fn dig(server: SocketAddr, args: &[&str]) -> String {
    let out = Command::new("dig")
        .arg(format!("@{}", server.ip()))
        .arg("-p")
        .arg(server.port().to_string())
        .args(["+time=3", "+tries=1"])
        .args(args)
        .output()
        .expect("run dig");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `kdig` likewise.
pub fn kdig(server: SocketAddr, args: &[&str]) -> String {
    String::from_utf8_lossy(&kdig_output(server, args).stdout).into_owned()
}

/// Runs `kdig` likewise; its whole output (it reports a failed transfer's RCODE on
/// standard error).
pub fn kdig_output(server: SocketAddr, args: &[&str]) -> Output {
    Command::new("kdig")
        .arg(format!("@{}", server.ip()))
        .arg("-p")
        .arg(server.port().to_string())
        .args(["+time=3", "+retry=0"])
        .args(args)
        .output()
        .expect("run kdig")
}

/// Lines of `dig +short` output, sorted.
pub fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v
}

/// `kdig -y KEY APEX IXFR=SERIAL` from `server`: the output, and its records (no comments,
/// no TSIG), in order.
pub fn ixfr_records(
    server: SocketAddr,
    key: &str,
    apex: &str,
    serial: u32,
) -> (String, Vec<String>) {
    let out = kdig(
        server,
        &["-y", key, apex, &format!("IXFR={serial}"), "+nocomments"],
    );
    let records = out
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty() && !l.contains("TSIG"))
        .map(str::to_string)
        .collect();
    (out, records)
}
