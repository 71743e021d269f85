//! update::limit -- an update flood from one requester is cut short: a token bucket per
//! requester (the TSIG key that signed the update and verified, else the client's /32 for
//! IPv4 or /64 for IPv6), `limits.updates_per_second` tokens a second up to
//! `limits.updates_burst`, checked on the main thread before the update is read further
//! (by the TSIG verdict the job carries, so that a forged signature cannot spend a key's
//! tokens: it spends its address's). An update with no token left is answered REFUSED (signed with the
//! key, if it verified) and counted (`shardns_updates_total{result="rate_limited"}`).
//! The operator's transactions are not limited.
//!
//! The buckets live as long as the server; full ones are swept out once there are more
//! than [`SWEEP_AT`] (once a second at most), and past [`MAX_BUCKETS`] new requesters
//! share one bucket, so a flood from many addresses holds a bounded table.

use super::Job;
use shardns_config::Config;
use shardns_wire::{Name, Query, Rcode};
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

/// Buckets held before the full ones are swept out.
const SWEEP_AT: usize = 4096;

/// Buckets at most: past it (after a sweep), a new requester shares one overflow bucket.
const MAX_BUCKETS: usize = 65_536;

/// Who an update's tokens are taken from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Requester {
    Key(Name),
    /// The address with its host bits cleared (/32, /64).
    Net(IpAddr),
    /// Everyone once the table is full.
    Overflow,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The token buckets.
#[derive(Debug)]
pub struct RateLimiter {
    /// Tokens a second; 0: no limit.
    rate: f64,
    burst: f64,
    buckets: HashMap<Requester, Bucket>,
    /// The last sweep (at most one a second).
    swept: Option<Instant>,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::new(0, 0)
    }
}

impl RateLimiter {
    /// `rate` updates a second per requester, `burst` at once (0: no limit).
    pub fn new(rate: u32, burst: u32) -> Self {
        Self {
            rate: f64::from(rate),
            burst: f64::from(burst.max(1)),
            buckets: HashMap::new(),
            swept: None,
        }
    }

    /// Takes the rate from `config.limits` (at start and at every reload; the buckets stay).
    pub fn configure(&mut self, config: &Config) {
        self.rate = f64::from(config.limits.updates_per_second);
        self.burst = f64::from(config.limits.updates_burst.max(1));
    }

    /// Whether the requester (`key` if the update's TSIG verified, else `peer`) may have
    /// one more update at `now`; takes its token if so.
    fn allow(&mut self, key: Option<&Name>, peer: IpAddr, now: Instant) -> bool {
        if self.rate <= 0.0 {
            return true;
        }
        let mut who = match key {
            Some(k) => Requester::Key(k.clone()),
            None => Requester::Net(prefix(peer)),
        };
        if self.buckets.len() >= SWEEP_AT && !self.buckets.contains_key(&who) {
            let due = self
                .swept
                .is_none_or(|s| now.saturating_duration_since(s).as_secs() >= 1);
            if due {
                self.sweep(now);
            }
            if self.buckets.len() >= MAX_BUCKETS {
                who = Requester::Overflow;
            }
        }
        let (rate, burst) = (self.rate, self.burst);
        let b = self.buckets.entry(who).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Drops the buckets that are full again (their requester has been quiet).
    fn sweep(&mut self, now: Instant) {
        self.swept = Some(now);
        let (rate, burst) = (self.rate, self.burst);
        self.buckets.retain(|_, b| {
            b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * rate < burst
        });
    }

    /// The REFUSED answer to `job` if its requester is over the limit (`None`: go on; so
    /// for the operator's jobs and for a message that does not read, which the normal path
    /// answers). The requester is the key of the job's TSIG verdict (not verified again).
    pub(super) fn over(&mut self, job: &Job, unix_now: u64, now: Instant) -> Option<Vec<u8>> {
        if job.operator || self.rate <= 0.0 {
            return None;
        }
        Query::parse(&job.message).ok()?;
        let key = job.tsig.key().map(|(k, _)| &k.name);
        if self.allow(key, job.peer, now) {
            return None;
        }
        super::answer_signed_if_known(&job.message, &job.tsig, Rcode::REFUSED, unix_now)
    }
}

/// The address with its host bits cleared: /32 for IPv4 (and IPv4-mapped), /64 for IPv6.
fn prefix(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(a) => IpAddr::V4(a),
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(a) & !((1u128 << 64) - 1)).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_then_the_rate_per_requester() {
        let mut l = RateLimiter::new(10, 20);
        let t0 = Instant::now();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let taken = (0..30).filter(|_| l.allow(None, a, t0)).count();
        assert_eq!(taken, 20, "the burst, then nothing");
        // Another address has its own bucket.
        assert!(l.allow(None, b, t0));
        // A key has its own too, whatever the address.
        let key: Name = "upd.".parse().unwrap();
        assert_eq!((0..25).filter(|_| l.allow(Some(&key), a, t0)).count(), 20);
        // Half a second later: five more.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!((0..10).filter(|_| l.allow(None, a, t1)).count(), 5);
        // Refilled up to the burst, not more.
        let t2 = t1 + Duration::from_secs(100);
        assert_eq!((0..50).filter(|_| l.allow(None, a, t2)).count(), 20);
    }

    #[test]
    fn ipv6_shares_a_slash_64_and_zero_is_no_limit() {
        let mut l = RateLimiter::new(1, 2);
        let t = Instant::now();
        let x: IpAddr = "2001:db8::1".parse().unwrap();
        let y: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        let z: IpAddr = "2001:db8:0:1::1".parse().unwrap();
        assert!(l.allow(None, x, t) && l.allow(None, y, t));
        assert!(!l.allow(None, x, t), "x and y share 2001:db8::/64");
        assert!(l.allow(None, z, t), "another /64");
        let mapped: IpAddr = "::ffff:192.0.2.9".parse().unwrap();
        assert_eq!(prefix(mapped), "192.0.2.9".parse::<IpAddr>().unwrap());
        let mut off = RateLimiter::new(0, 0);
        assert!((0..10_000).all(|_| off.allow(None, x, t)));
    }

    /// The requester is the key the job's verdict names, not verified again: two addresses
    /// share a key's bucket; the REFUSED is signed with the carried key.
    #[test]
    fn the_key_of_the_carried_verdict_is_the_requester() {
        use crate::update::Tsig;
        use shardns_wire::tsig::{self, Algorithm, Key};
        let k = Key {
            name: "upd.".parse().unwrap(),
            algorithm: Algorithm::HmacSha256,
            secret: b"0123456789abcdef0123456789abcdef".to_vec(),
        };
        let mut msg = vec![0x12, 0x34, 5 << 3, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(b"\x01t\x00\x00\x06\x00\x01");
        let len = msg.len();
        msg.resize(len + 200, 0);
        // Signed with another secret: only the carried verdict says it is `upd.`.
        let other = Key {
            secret: b"another secret, another secret!!".to_vec(),
            ..k.clone()
        };
        let len = tsig::sign_request(&mut msg, len, &other, 1000);
        msg.truncate(len);
        let sig = tsig::read(&msg).unwrap().unwrap();
        let job = |peer: &str| Job {
            message: msg.clone(),
            peer: peer.parse().unwrap(),
            operator: false,
            tsig: Tsig::signed(sig.clone(), Ok(k.clone())),
            reply: Box::new(|_| {}),
        };
        let mut l = RateLimiter::new(1, 1);
        let t = Instant::now();
        assert!(l.over(&job("192.0.2.1"), 1000, t).is_none());
        let refused = l
            .over(&job("198.51.100.1"), 1000, t)
            .expect("the key's bucket");
        assert_eq!(refused[3] & 0x0f, 5, "REFUSED");
        let answer_sig = tsig::read(&refused).unwrap().expect("signed");
        assert_eq!(answer_sig.key, k.name);
        // Unsigned from a third address: its own bucket.
        let unsigned = Job {
            tsig: Tsig::Unsigned,
            ..job("203.0.113.1")
        };
        assert!(l.over(&unsigned, 1000, t).is_none());
    }

    #[test]
    fn the_table_stays_bounded() {
        let mut l = RateLimiter::new(1, 1);
        let t = Instant::now();
        for i in 0..(MAX_BUCKETS as u32 + 10_000) {
            let a = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            l.allow(None, a, t);
        }
        assert!(l.buckets.len() <= MAX_BUCKETS + 1, "{}", l.buckets.len());
        // Later, a sweep drops the full buckets.
        let later = t + Duration::from_secs(10);
        l.allow(None, "198.51.100.1".parse().unwrap(), later);
        assert!(l.buckets.len() < 10, "{}", l.buckets.len());
    }
}
