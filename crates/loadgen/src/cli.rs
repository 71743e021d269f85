//! `shardns bench rr|rate`: flags to configs, reports to a table, JSON and plots.

use crate::{
    plot, run_rate, run_rr, Error, Progress, QueryList, QueryOptions, RateConfig, RrConfig,
};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "shardns bench",
    about = "DNS load generator: DNS_RR stream sweeps (closed loop) and fixed-rate runs (open loop)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// DNS_RR: N synchronous streams, one query outstanding each; sweep over N, repeated.
    Rr(RrArgs),
    /// A fixed query rate for a duration (open loop, like Flamethrower), UDP or TCP.
    Rate(RateArgs),
}

#[derive(Args, Debug)]
struct Common {
    /// Server address: 127.0.0.1:5300, [::1]:5300, or an IP for port 53.
    #[arg(short, long, value_parser = parse_server)]
    server: SocketAddr,
    /// Query file in dnsperf's format: `name type` per line, `#` comments.
    #[arg(short = 'd', long)]
    queries: PathBuf,
    /// Length of each run: seconds, or with a unit (500ms, 10s, 2m).
    #[arg(short = 'l', long, default_value = "10", value_parser = parse_duration)]
    duration: Duration,
    /// A query unanswered this long is lost (same units as --duration).
    #[arg(short, long, default_value = "1", value_parser = parse_duration)]
    timeout: Duration,
    /// Worker threads (default 1; rate mode uses 2 above 150k q/s).
    #[arg(long)]
    threads: Option<usize>,
    /// PID of the server (repeat for several processes): sample its CPU time and memory.
    #[arg(long = "pid")]
    pids: Vec<u32>,
    /// Print the report as JSON on standard output (progress goes to standard error).
    #[arg(long)]
    json: bool,
    /// Draw the report into this file: .png or .svg.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Seed for the random start points in the query list.
    #[arg(long)]
    seed: Option<u64>,
    /// Add an EDNS0 OPT record (UDP size 1232) to every query.
    #[arg(long)]
    edns: bool,
    /// Clear the RD bit (dnsperf sets it by default).
    #[arg(long)]
    no_rd: bool,
}

#[derive(Args, Debug)]
struct RrArgs {
    #[command(flatten)]
    common: Common,
    /// Stream counts: a range `1..16`, a list `1,2,4,8,16`, or both `1..4,8,16`.
    #[arg(long, default_value = "1..16", value_parser = |s: &str| parse_streams(s).map(StreamList))]
    streams: StreamList,
    /// Runs per stream count (rounds are interleaved).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// UDP sockets the streams share (default 4, at most one per stream).
    #[arg(long)]
    sockets: Option<usize>,
}

/// Parsed `--streams` (a newtype, so clap takes the list as one value).
#[derive(Clone, Debug)]
struct StreamList(Vec<usize>);

#[derive(Args, Debug)]
struct RateArgs {
    #[command(flatten)]
    common: Common,
    /// Queries per second to send.
    #[arg(short = 'Q', long)]
    qps: f64,
    /// Pipelined TCP instead of UDP.
    #[arg(long)]
    tcp: bool,
    /// TCP connections, or UDP sockets (default 4).
    #[arg(short, long)]
    connections: Option<usize>,
    /// Shortest sleep between sending turns (default 1ms): what falls due meanwhile goes out
    /// as one batch. Shorter spreads the queries more evenly at more CPU per query.
    #[arg(long, value_parser = parse_duration)]
    tick: Option<Duration>,
}

/// Runs `shardns bench ...`; `args[0]` is the program name. Returns the exit code: 0 on
/// success (and for --help), 1 if the run failed, 2 for bad arguments.
pub fn run_cli(args: Vec<OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shardns bench: {e}");
            1
        }
    }
}

fn run(cli: Cli) -> Result<(), Error> {
    match cli.cmd {
        Cmd::Rr(a) => {
            let c = &a.common;
            let queries = load_queries(c)?;
            let cfg = RrConfig {
                server: c.server,
                streams: a.streams.0.clone(),
                duration: c.duration,
                runs: a.runs,
                timeout: c.timeout,
                threads: c.threads,
                sockets: a.sockets,
                pids: c.pids.clone(),
                seed: c.seed,
                progress: Progress::Stderr,
            };
            let report = run_rr(&cfg, &queries)?;
            if c.json {
                println!("{}", to_json(&report)?);
            } else {
                print!("{}", report.table());
            }
            if let Some(path) = &c.plot {
                plot::rr(&report, path)?;
                eprintln!("plot written to {}", path.display());
            }
        }
        Cmd::Rate(a) => {
            let c = &a.common;
            let queries = load_queries(c)?;
            let cfg = RateConfig {
                server: c.server,
                qps: a.qps,
                duration: c.duration,
                tcp: a.tcp,
                connections: a.connections,
                timeout: c.timeout,
                threads: c.threads,
                tick: a.tick,
                pids: c.pids.clone(),
                seed: c.seed,
                progress: if c.json {
                    Progress::Stderr
                } else {
                    Progress::Stdout
                },
            };
            let report = run_rate(&cfg, &queries)?;
            if c.json {
                println!("{}", to_json(&report)?);
            } else {
                print!("{}", report.table());
            }
            if let Some(path) = &c.plot {
                plot::rate(&report, path)?;
                eprintln!("plot written to {}", path.display());
            }
        }
    }
    Ok(())
}

fn load_queries(c: &Common) -> Result<QueryList, Error> {
    let opts = QueryOptions {
        recursion_desired: !c.no_rd,
        edns_udp_size: c.edns.then_some(1232),
    };
    QueryList::from_file(&c.queries, opts)
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, Error> {
    serde_json::to_string_pretty(v).map_err(|e| Error::Config(format!("JSON: {e}")))
}

fn parse_server(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    s.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, 53))
        .map_err(|_| format!("{s:?} is not an address such as 127.0.0.1:5300 or [::1]:5300"))
}

/// Parses a duration: plain seconds (`10`, `2.5`) or with a unit (`500ms`, `10s`, `2m`).
fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (10, 2.5s, 500ms, 100us)"))?;
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("{s:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// Parses stream counts: `1..16` (inclusive), `1,2,4,8,16`, or a mix (`1..4,8,16`).
pub fn parse_streams(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("{t:?} is not a stream count (1 or more)"))
        };
        match part.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b.trim_start_matches('='))?);
                if a > b || b - a > 10_000 {
                    return Err(format!("bad range {part:?}"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err("no stream counts".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_durations() {
        assert_eq!(parse_streams("1..4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_streams("1,2,4,8,16").unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(parse_streams("1..3, 8").unwrap(), vec![1, 2, 3, 8]);
        assert!(parse_streams("0,1").is_err());
        assert!(parse_streams("4..2").is_err());
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("-1").is_err());
        assert_eq!(parse_server("[::1]:5300").unwrap().port(), 5300);
        assert_eq!(parse_server("127.0.0.1").unwrap().port(), 53);
    }

    #[test]
    fn cli_parses_examples() {
        let args = |s: &str| s.split_whitespace().map(OsString::from).collect::<Vec<_>>();
        let c = Cli::try_parse_from(args(
            "shardns-bench rr --server 127.0.0.1:5300 --queries names.txt --streams 1,2,4,8,16 --duration 10 --runs 3 --json --plot sweep.png",
        ))
        .unwrap();
        match c.cmd {
            Cmd::Rr(a) => {
                assert_eq!(a.streams.0, vec![1, 2, 4, 8, 16]);
                assert!(a.common.json);
            }
            Cmd::Rate(_) => panic!("wrong subcommand"),
        }
        let c = Cli::try_parse_from(args(
            "shardns-bench rate --server [::1]:5300 --queries names.txt --qps 10000 --duration 10 --tcp --pid 1 --pid 2 --tick 250us",
        ))
        .unwrap();
        match c.cmd {
            Cmd::Rate(a) => {
                assert!(a.tcp);
                assert_eq!(a.tick, Some(Duration::from_micros(250)));
                assert_eq!(a.common.pids, vec![1, 2]);
                assert!(a.common.server.is_ipv6());
            }
            Cmd::Rr(_) => panic!("wrong subcommand"),
        }
        assert_eq!(run_cli(args("shardns-bench --help")), 0);
        assert_eq!(run_cli(args("shardns-bench rr")), 2);
    }
}
