//! rrl -- response rate limiting (RRL) for UDP answers, one table per worker.
//!
//! Owns: [`Rrl`], one worker's fixed-size table of token buckets (this file), and in
//! `classify` the classification of a response into the bucket it is charged to and the
//! truncated form a slipped response is cut to. As in BIND's and Knot DNS's RRL, a bucket
//! is keyed by the client's address prefix (IPv4 /24 and IPv6 /56 by default) and the kind
//! of response:
//!
//! | class | responses | the name in the key |
//! |---|---|---|
//! | answer | NOERROR with answers, and any truncated (TC) response | the qname, plus the qtype |
//! | NXDOMAIN | NXDOMAIN | the zone (owner of the SOA in the authority section) |
//! | NODATA/referral | NOERROR without answers | the zone for NODATA, the zone cut for a referral (owner of the first authority record) |
//! | error | every other RCODE (REFUSED, SERVFAIL, FORMERR...) | none: one bucket per prefix |
//!
//! Keying NXDOMAIN and NODATA by zone means random names (a reflection attack's favourite)
//! all land in one bucket. A bucket holds `rate × window` responses and refills at `rate`
//! per second (kept in thousandths of a response against a millisecond clock, so the
//! refill is smooth); a response that finds it empty is *limited*: dropped, except every
//! `slip`-th limited response of the bucket, which is sent truncated (TC=1, the question
//! only), so that a real client at an address a flood is spoofing retries over TCP,
//! where it is answered. TCP is never
//! limited (the caller only asks for UDP). Answers that a resolution delivers later (the
//! resolver role) are not limited either: only clients in `resolver.allow` get them and
//! `resolver.max_pending` bounds them.
//!
//! The table is set-associative: a key hashes (with a per-worker secret seed, so a client
//! cannot aim at one set) to a set of [`WAYS`] entries; a new key takes an empty entry or
//! the set's least recently used one. An evicted bucket that was still limiting starts
//! again full, so the table should hold every prefix/name pair active within a window.
//!
//! Share-nothing: every worker has its own table, with no lock and no allocation after
//! start. With SO_REUSEPORT the kernel picks a UDP socket (so a worker) by hashing the
//! client's address and port, so one client socket always reaches the same worker and is
//! limited exactly; a client that spreads its queries over many source ports can reach
//! every worker and get up to `rate` per worker.
//!
//! Never: locks, allocation after [`Rrl::new`], system calls, linear scans.

mod classify;
#[cfg(test)]
mod tests;

use classify::{classify_keyed, slip_response, Class};
use shardns_config::RrlConfig;
use shardns_sys::seed::keyed_hash;
use shardns_wire::Rcode;
use std::net::IpAddr;
use std::time::Instant;

/// Entries per set: the candidates for a key, and for eviction.
const WAYS: usize = 4;
/// One response, in the bucket's unit (thousandths of a response).
const COST: u64 = 1000;

/// What to do with a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send it as it is.
    Send,
    /// Limited: send nothing.
    Drop,
    /// Limited: the response was cut to this many octets (header and question, TC set).
    Slip(usize),
}

/// What the token-bucket core decided, before the response is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Pass,
    Drop,
    Slip,
}

/// One bucket.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// The key's hash; 0 marks an empty entry.
    key: u64,
    /// Tokens left, in thousandths of a response.
    tokens: u64,
    /// Milliseconds (on the table's clock) of the last response charged here.
    last: u64,
    /// Limited responses since the bucket was last full (the slip cadence).
    limited: u32,
}

/// One worker's response rate limiter.
pub(crate) struct Rrl {
    table: Box<[Entry]>,
    /// Sets in the table, minus one (a power of two minus one).
    set_mask: usize,
    seed: u64,
    /// Refill: tokens (thousandths) per millisecond = responses per second.
    rate: u64,
    /// A full bucket, in thousandths.
    capacity: u64,
    slip: u32,
    ipv4_prefix: u8,
    ipv6_prefix: u8,
    base: Instant,
}

impl Rrl {
    /// A table for `config` (its size rounded up to a power of two, at least one set);
    /// `seed` is secret, `base` starts the clock.
    pub(crate) fn new(config: &RrlConfig, seed: u64, base: Instant) -> Self {
        let entries = config.table_size.max(WAYS).next_power_of_two();
        let rate = u64::from(config.rate.max(1));
        Self {
            table: vec![Entry::default(); entries].into_boxed_slice(),
            set_mask: entries / WAYS - 1,
            seed,
            rate,
            capacity: rate * u64::from(config.window.max(1)) * COST,
            slip: config.slip,
            ipv4_prefix: config.ipv4_prefix.min(32),
            ipv6_prefix: config.ipv6_prefix.min(128),
            base,
        }
    }

    /// The table's clock: milliseconds since `base`.
    #[inline]
    pub(crate) fn clock(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.base).as_millis() as u64
    }

    /// Decides whether the UDP response `resp` (whole, as built) to `peer` goes out;
    /// `rcode`, `truncated` and `wildcard` are what the answering code reported. On
    /// [`Verdict::Slip`] `resp` has been rewritten in place to the returned length.
    pub(crate) fn check(
        &mut self,
        peer: IpAddr,
        rcode: Rcode,
        truncated: bool,
        wildcard: Option<u8>,
        resp: &mut [u8],
        now_ms: u64,
    ) -> Verdict {
        let c = classify_keyed(resp, rcode, truncated, wildcard);
        let key = self.key(peer, c.class, c.name, c.qtype);
        match self.account(key, now_ms) {
            Decision::Pass => Verdict::Send,
            Decision::Drop => Verdict::Drop,
            Decision::Slip => Verdict::Slip(slip_response(resp, c.question_end)),
        }
    }

    /// The bucket key for a response class to a client prefix.
    fn key(&self, peer: IpAddr, class: Class, name: u64, qtype: u16) -> u64 {
        let (family, hi, lo) = prefix(peer, self.ipv4_prefix, self.ipv6_prefix);
        let kind = family | (class as u64) << 8 | u64::from(qtype) << 16;
        // 0 marks an empty entry.
        keyed_hash(self.seed, &[kind, hi, lo, name]) | 1
    }

    /// Charges one response to the bucket `key` at `now_ms`.
    fn account(&mut self, key: u64, now_ms: u64) -> Decision {
        let set = ((key >> 1) as usize & self.set_mask) * WAYS;
        let ways = &mut self.table[set..set + WAYS];
        let i = match ways.iter().position(|e| e.key == key) {
            Some(i) => i,
            None => {
                // An empty entry, else the least recently used one.
                let i = ways
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| if e.key == 0 { 0 } else { e.last + 1 })
                    .map_or(0, |(i, _)| i);
                ways[i] = Entry {
                    key,
                    tokens: self.capacity,
                    last: now_ms,
                    limited: 0,
                };
                i
            }
        };
        let e = &mut ways[i];
        let elapsed = now_ms.saturating_sub(e.last);
        if elapsed > 0 {
            e.tokens = e
                .tokens
                .saturating_add(elapsed.saturating_mul(self.rate))
                .min(self.capacity);
            e.last = now_ms;
        }
        if e.tokens == self.capacity {
            e.limited = 0;
        }
        if e.tokens >= COST {
            e.tokens -= COST;
            return Decision::Pass;
        }
        e.limited = e.limited.wrapping_add(1);
        if self.slip != 0 && e.limited.is_multiple_of(self.slip) {
            Decision::Slip
        } else {
            Decision::Drop
        }
    }
}

/// The client's network: (family, high 64 bits, low 64 bits) of the address with all but
/// the first `v4`/`v6` bits cleared.
fn prefix(ip: IpAddr, v4: u8, v6: u8) -> (u64, u64, u64) {
    match ip {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(v4)).unwrap_or(0);
            (4, u64::from(u32::from(a) & mask), 0)
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(v6)).unwrap_or(0);
            let x = u128::from(a) & mask;
            (6, (x >> 64) as u64, x as u64)
        }
    }
}
