//! A fixed-size log-linear latency histogram (nanoseconds, ~1.6 % relative bucket width).
//!
//! Recording is a few integer operations and never allocates; histograms of threads and runs
//! merge by adding counts. Exact min, max and sum are kept beside the buckets.

/// Sub-buckets per power of two: 2^6 = 64, so a bucket spans at most 1/64 of its value.
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Largest exponent kept; values from 2^(SUB_BITS + MAX_EXP + 1) ns (about 37 min) on share the last bucket.
const MAX_EXP: u32 = 35;
const BUCKETS: usize = (SUB as usize) * (MAX_EXP as usize + 2);

/// Latency histogram in nanoseconds.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

fn index(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let e = (msb - SUB_BITS).min(MAX_EXP);
    let m = (v >> e).min(2 * SUB - 1);
    (SUB * e as u64 + m) as usize
}

/// The smallest and largest value that map to bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < 2 * SUB {
        return (i, i);
    }
    let e = i / SUB - 1;
    let m = i % SUB + SUB;
    (m << e, ((m + 1) << e) - 1)
}

impl Histogram {
    pub(crate) fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub(crate) fn record(&mut self, ns: u64) {
        self.counts[index(ns)] += 1;
        self.count += 1;
        self.sum += ns as u128;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    pub(crate) fn merge(&mut self, other: &Self) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    pub(crate) fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    pub(crate) fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    pub(crate) fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The value below which a fraction `q` of the samples lie (the bucket's midpoint,
    /// clamped to the exact min and max).
    pub(crate) fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bounds(i);
                return Some((lo + (hi - lo) / 2).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_tight() {
        let mut prev_hi = None;
        for i in 0..BUCKETS - 1 {
            let (lo, hi) = bounds(i);
            if let Some(p) = prev_hi {
                assert_eq!(lo, p + 1, "bucket {i}");
            }
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            assert!(hi - lo <= lo / SUB + 1);
            prev_hi = Some(hi);
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_within_bucket_error() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        assert!((p50 / 50_000_000.0 - 1.0).abs() < 0.02, "{p50}");
        let p99 = h.quantile(0.99).unwrap() as f64;
        assert!((p99 / 99_000_000.0 - 1.0).abs() < 0.02, "{p99}");
        assert_eq!(h.min(), Some(1000));
        assert_eq!(h.max(), Some(100_000_000));
        let top = h.quantile(1.0).unwrap();
        assert!((98_500_000..=100_000_000).contains(&top), "{top}");
        let mut g = Histogram::new();
        g.merge(&h);
        assert_eq!(g.count(), 100_000);
        assert_eq!(Histogram::new().quantile(0.5), None);
    }
}
