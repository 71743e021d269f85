//! Report pieces shared by both modes, and the plain-text tables.

use crate::engine::Counters;
use crate::hist::Histogram;
use serde::Serialize;
use shardns_wire::Rcode;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Latency figures in milliseconds (absent when nothing was answered).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencySummary {
    /// Answers measured.
    pub count: u64,
    /// Smallest latency.
    pub min_ms: Option<f64>,
    /// Mean latency.
    pub mean_ms: Option<f64>,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// Largest latency.
    pub max_ms: Option<f64>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl LatencySummary {
    pub(crate) fn from_histogram(h: &Histogram) -> Self {
        Self {
            count: h.count(),
            min_ms: h.min().map(ms),
            mean_ms: h.mean().map(|m| m / 1e6),
            p50_ms: h.quantile(0.5).map(ms),
            p99_ms: h.quantile(0.99).map(ms),
            p999_ms: h.quantile(0.999).map(ms),
            max_ms: h.max().map(ms),
        }
    }
}

/// Totals of one run or several: queries and what became of them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    /// Queries sent.
    pub sent: u64,
    /// Responses matched to a query in flight (any RCODE).
    pub answered: u64,
    /// Queries that timed out.
    pub lost: u64,
    /// Responses whose ID was in flight but whose question did not match.
    pub mismatched: u64,
    /// Responses matching nothing in flight (late after a timeout, duplicates).
    pub unexpected: u64,
    /// Answers with TC set.
    pub truncated: u64,
    /// Send failures (refused, connection lost).
    pub send_errors: u64,
    /// Receive failures.
    pub recv_errors: u64,
    /// Answers per response code (mnemonic, e.g. NOERROR), nonzero codes only.
    pub rcodes: BTreeMap<String, u64>,
}

impl Tally {
    pub(crate) fn from_counters(c: &Counters) -> Self {
        let rcodes = c
            .rcodes
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (Rcode(code as u16).to_string(), n))
            .collect();
        Self {
            sent: c.sent,
            answered: c.answered,
            lost: c.lost,
            mismatched: c.mismatched,
            unexpected: c.unexpected,
            truncated: c.truncated,
            send_errors: c.send_errors,
            recv_errors: c.recv_errors,
            rcodes,
        }
    }

    /// Answers with `rcode` (by mnemonic).
    pub fn rcode(&self, name: &str) -> u64 {
        self.rcodes.get(name).copied().unwrap_or(0)
    }

    /// One line: every RCODE total, then timeouts and anything odd.
    pub(crate) fn rcode_line(&self) -> String {
        let mut s = String::new();
        for (name, n) in &self.rcodes {
            let _ = write!(s, "{name} {}  ", group(*n as f64));
        }
        let _ = write!(s, "timeouts {}", group(self.lost as f64));
        for (what, n) in [
            ("truncated", self.truncated),
            ("mismatched", self.mismatched),
            ("unexpected", self.unexpected),
            ("send errors", self.send_errors),
            ("recv errors", self.recv_errors),
        ] {
            if n > 0 {
                let _ = write!(s, "  {what} {}", group(n as f64));
            }
        }
        s
    }
}

/// A number rounded to an integer with thousands separators: 123,456.
pub(crate) fn group(v: f64) -> String {
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    if n < 0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// An optional millisecond figure, 3 decimals, or "-".
pub(crate) fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// Right-aligned columns: `rows[0]` is the header.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| format!("{s:>w$}", w = width[c]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(group(1234567.4), "1,234,567");
        assert_eq!(group(999.0), "999");
        assert_eq!(group(-1000.0), "-1,000");
        let t = table(&[
            vec!["a".into(), "bbb".into()],
            vec!["1000".into(), "2".into()],
        ]);
        assert_eq!(t, "   a  bbb\n1000    2\n");
        let mut c = Counters::default();
        c.rcodes[3] = 5;
        c.lost = 2;
        let tally = Tally::from_counters(&c);
        assert_eq!(tally.rcode("NXDOMAIN"), 5);
        assert_eq!(tally.rcode_line(), "NXDOMAIN 5  timeouts 2");
    }
}
