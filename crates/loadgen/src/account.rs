//! Who used the CPU: the target server's CPU time and memory (from /proc/PID), the tool's own
//! CPU time (getrusage), and the machine's steal time (/proc/stat).
//!
//! The hypervisor on these machines steals 0-40 % of the CPU, so queries per server CPU-second
//! is the figure that compares runs; the tool's own CPU tells whether the generator or the
//! server was the bottleneck.

use crate::sys;
use crate::Error;
use serde::Serialize;
use std::time::Duration;

/// A reading of the target processes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProcSample {
    /// utime + stime of all threads of all the processes, in clock ticks.
    pub(crate) cpu_ticks: u64,
    /// VmRSS summed over the processes, KiB.
    pub(crate) rss_kib: u64,
}

/// Reads /proc/PID/stat and /proc/PID/status of each of `pids`.
pub(crate) fn sample_pids(pids: &[u32]) -> Result<ProcSample, Error> {
    let mut total = ProcSample::default();
    for &pid in pids {
        let io = |e| Error::Io {
            what: format!("/proc/{pid}"),
            error: e,
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(io)?;
        total.cpu_ticks += parse_stat_cpu(&stat)
            .ok_or_else(|| Error::Config(format!("cannot parse /proc/{pid}/stat")))?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(io)?;
        total.rss_kib += parse_vm_rss(&status).unwrap_or(0);
    }
    Ok(total)
}

/// utime + stime (fields 14 and 15) of a /proc/PID/stat line; the process-level file sums all
/// threads. The command name (field 2) may hold spaces and parentheses, so fields are counted
/// from its last ')'.
fn parse_stat_cpu(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some(utime + stime)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The whole machine's (total, steal) jiffies from the first line of /proc/stat.
pub(crate) fn machine_steal() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest fields are already in user).
    let total: u64 = v.iter().take(8).sum();
    Some((total, *v.get(7)?))
}

/// CPU use of the server under test over one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerUsage {
    /// CPU-seconds (user + system, all threads) the server used during the run.
    pub cpu_s: f64,
    /// Server CPU-seconds per 1,000 answers.
    pub cpu_s_per_1k_answers: f64,
    /// Answers per server CPU-second: the figure that survives hypervisor steal.
    pub queries_per_cpu_s: f64,
    /// Server CPU use as a percentage of one core.
    pub cpu_pct: f64,
    /// Resident memory at the start of the run, KiB.
    pub rss_start_kib: u64,
    /// Resident memory at the end of the run, KiB.
    pub rss_end_kib: u64,
}

/// CPU use of this tool over one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ToolUsage {
    /// CPU-seconds (user + system, all threads) the tool used.
    pub cpu_s: f64,
    /// The tool's CPU use as a percentage of one core.
    pub cpu_pct: f64,
    /// Tool CPU microseconds per query sent.
    pub cpu_us_per_query: f64,
    /// Tool CPU microseconds per answer received (what a comparison with another tool at the
    /// same rate should divide by: queries the server dropped cost a sender little).
    pub cpu_us_per_answer: f64,
}

/// Readings at the start of a run, turned into usage figures at its end.
pub(crate) struct Meter {
    pids: Vec<u32>,
    server: Option<ProcSample>,
    tool: Duration,
    steal: Option<(u64, u64)>,
    ticks: u64,
}

/// What a [`Meter`] measured.
pub(crate) struct Usage {
    pub(crate) server: Option<ServerUsage>,
    pub(crate) tool: ToolUsage,
    pub(crate) steal_pct: Option<f64>,
}

impl Meter {
    pub(crate) fn start(pids: &[u32]) -> Result<Self, Error> {
        let server = if pids.is_empty() {
            None
        } else {
            Some(sample_pids(pids)?)
        };
        Ok(Self {
            pids: pids.to_vec(),
            server,
            tool: sys::self_cpu_time(),
            steal: machine_steal(),
            ticks: sys::clock_ticks_per_second(),
        })
    }

    /// Usage since `start`, over `wall` seconds, for `sent` queries and `answers` answers.
    pub(crate) fn finish(&self, wall: f64, sent: u64, answers: u64) -> Usage {
        let tool_cpu = (sys::self_cpu_time().saturating_sub(self.tool)).as_secs_f64();
        let tool = ToolUsage {
            cpu_s: tool_cpu,
            cpu_pct: pct(tool_cpu, wall),
            cpu_us_per_query: per(tool_cpu, sent),
            cpu_us_per_answer: per(tool_cpu, answers),
        };
        let server = self.server.and_then(|start| {
            let end = sample_pids(&self.pids).ok()?;
            let cpu = end.cpu_ticks.saturating_sub(start.cpu_ticks) as f64 / self.ticks as f64;
            Some(ServerUsage {
                cpu_s: cpu,
                cpu_s_per_1k_answers: if answers > 0 {
                    cpu * 1000.0 / answers as f64
                } else {
                    0.0
                },
                queries_per_cpu_s: if cpu > 0.0 { answers as f64 / cpu } else { 0.0 },
                cpu_pct: pct(cpu, wall),
                rss_start_kib: start.rss_kib,
                rss_end_kib: end.rss_kib,
            })
        });
        let steal_pct = match (self.steal, machine_steal()) {
            (Some((t0, s0)), Some((t1, s1))) if t1 > t0 => {
                Some((s1 - s0) as f64 * 100.0 / (t1 - t0) as f64)
            }
            _ => None,
        };
        Usage {
            server,
            tool,
            steal_pct,
        }
    }
}

/// Microseconds of `cpu` seconds per one of `n`.
fn per(cpu: f64, n: u64) -> f64 {
    if n > 0 {
        cpu * 1e6 / n as f64
    } else {
        0.0
    }
}

fn pct(cpu: f64, wall: f64) -> f64 {
    if wall > 0.0 {
        cpu * 100.0 / wall
    } else {
        0.0
    }
}

/// Sums the usage of several runs (a sweep point): CPU adds, memory spans first to last.
pub(crate) fn sum_server(runs: &[&ServerUsage], wall: f64, answers: u64) -> ServerUsage {
    let cpu: f64 = runs.iter().map(|u| u.cpu_s).sum();
    ServerUsage {
        cpu_s: cpu,
        cpu_s_per_1k_answers: if answers > 0 {
            cpu * 1000.0 / answers as f64
        } else {
            0.0
        },
        queries_per_cpu_s: if cpu > 0.0 { answers as f64 / cpu } else { 0.0 },
        cpu_pct: pct(cpu, wall),
        rss_start_kib: runs.first().map_or(0, |u| u.rss_start_kib),
        rss_end_kib: runs.last().map_or(0, |u| u.rss_end_kib),
    }
}

/// Sums the tool usage of several runs.
pub(crate) fn sum_tool(runs: &[&ToolUsage], wall: f64, sent: u64, answers: u64) -> ToolUsage {
    let cpu: f64 = runs.iter().map(|u| u.cpu_s).sum();
    ToolUsage {
        cpu_s: cpu,
        cpu_pct: pct(cpu, wall),
        cpu_us_per_query: per(cpu, sent),
        cpu_us_per_answer: per(cpu, answers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let stat =
            "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0 99 1000 200";
        assert_eq!(parse_stat_cpu(stat), Some(325));
        let status = "Name:\tknotd\nVmPeak:\t  9000 kB\nVmRSS:\t    8904 kB\nThreads:\t4\n";
        assert_eq!(parse_vm_rss(status), Some(8904));
    }

    #[test]
    fn samples_own_process() {
        let me = std::process::id();
        let s = sample_pids(&[me]).unwrap();
        assert!(s.rss_kib > 0);
        assert!(sample_pids(&[u32::MAX]).is_err());
        assert!(machine_steal().is_some());
    }
}
