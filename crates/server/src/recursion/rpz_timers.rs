//! recursion::rpz_timers -- when a transferred policy zone is refreshed, retried and
//! expired: the SOA's REFRESH, RETRY and EXPIRE (RFC 1035 §3.3.13) as a secondary zone
//! has them, within the secondary zones' bounds; `refresh` in the zone's table, when set,
//! in place of the SOA's REFRESH. Pure: the times are passed in.
//!
//! Owns: [`Schedule`], one per zone, kept by the transfer thread (`rpz_xfr`).

use shardns_control::secondary::{MIN_EXPIRE, MIN_REFRESH, MIN_RETRY};
use shardns_wire::NameRef;
use std::time::{Duration, Instant};

/// Longest REFRESH or RETRY taken from a SOA (a day, as the secondary zones').
const MAX_INTERVAL: u32 = 86_400;
/// Before the first SOA is known: the wait after a failed first transfer.
const FIRST_RETRY: u32 = 60;

/// REFRESH, RETRY and EXPIRE, in seconds, within bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Timers {
    pub(super) refresh: u32,
    pub(super) retry: u32,
    pub(super) expire: u32,
}

impl Timers {
    /// From a SOA record's RDATA (MNAME, RNAME, then SERIAL REFRESH RETRY EXPIRE MINIMUM).
    pub(super) fn of_soa(rdata: &[u8]) -> Option<Self> {
        let mut at = 0;
        for _ in 0..2 {
            let (_, len) = NameRef::from_wire_prefix(rdata.get(at..)?).ok()?;
            at += len;
        }
        let field = |i: usize| {
            let b = rdata.get(at + 4 * i..at + 4 * i + 4)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        Some(Self {
            refresh: field(1)?.clamp(MIN_REFRESH, MAX_INTERVAL),
            retry: field(2)?.clamp(MIN_RETRY, MAX_INTERVAL),
            expire: field(3)?.max(MIN_EXPIRE),
        })
    }
}

fn secs(s: u32) -> Duration {
    Duration::from_secs(u64::from(s))
}

/// One zone's timers: when it is next asked for its serial, and when it expires.
#[derive(Debug)]
pub(super) struct Schedule {
    /// `refresh` of the zone's table: the interval in place of the SOA's REFRESH.
    fixed: Option<u32>,
    timers: Option<Timers>,
    due: Instant,
    /// The last time a primary answered (a transfer, or the same serial).
    last_ok: Option<Instant>,
    expired: bool,
}

impl Schedule {
    /// Due at once.
    pub(super) fn new(fixed: Option<u32>, now: Instant) -> Self {
        Self {
            fixed,
            timers: None,
            due: now,
            last_ok: None,
            expired: false,
        }
    }

    pub(super) fn is_due(&self, now: Instant) -> bool {
        now >= self.due
    }

    /// A primary answered (`timers`: the SOA of the version it sent, if any): next
    /// refresh after REFRESH, and EXPIRE counts from now.
    pub(super) fn answered(&mut self, timers: Option<Timers>, now: Instant) {
        if timers.is_some() {
            self.timers = timers;
        }
        self.last_ok = Some(now);
        self.expired = false;
        let refresh = self
            .fixed
            .or(self.timers.map(|t| t.refresh))
            .unwrap_or(FIRST_RETRY);
        self.due = now + secs(refresh.max(1));
    }

    /// No primary answered: again after RETRY.
    pub(super) fn failed(&mut self, now: Instant) {
        let retry = self.timers.map_or(FIRST_RETRY, |t| t.retry);
        self.due = now + secs(retry);
    }

    /// True once, when EXPIRE has passed since a primary last answered: the zone's policy
    /// is to be dropped (until a transfer brings it back).
    pub(super) fn expires(&mut self, now: Instant) -> bool {
        let (Some(t), Some(ok)) = (self.timers, self.last_ok) else {
            return false;
        };
        if self.expired || now < ok + secs(t.expire) {
            return false;
        }
        self.expired = true;
        true
    }

    /// When the thread must look at this zone again: its refresh, or its expiry.
    pub(super) fn next(&self) -> Instant {
        match (self.timers, self.last_ok, self.expired) {
            (Some(t), Some(ok), false) => self.due.min(ok + secs(t.expire)),
            _ => self.due,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SOA RDATA `ns. admin. 1 REFRESH RETRY EXPIRE 60`.
    fn soa(refresh: u32, retry: u32, expire: u32) -> Vec<u8> {
        let mut r = b"\x02ns\x00\x05admin\x00".to_vec();
        for v in [1, refresh, retry, expire, 60] {
            r.extend_from_slice(&u32::to_be_bytes(v));
        }
        r
    }

    #[test]
    fn timers_come_from_the_soa_within_bounds() {
        let t = Timers::of_soa(&soa(3600, 600, 86400 * 7)).unwrap();
        assert_eq!((t.refresh, t.retry, t.expire), (3600, 600, 86400 * 7));
        let t = Timers::of_soa(&soa(0, 0, 0)).unwrap();
        assert_eq!(
            (t.refresh, t.retry, t.expire),
            (MIN_REFRESH, MIN_RETRY, MIN_EXPIRE)
        );
        let t = Timers::of_soa(&soa(10_000_000, 10_000_000, 1)).unwrap();
        assert_eq!((t.refresh, t.retry), (MAX_INTERVAL, MAX_INTERVAL));
        assert_eq!(Timers::of_soa(&soa(1, 1, 1)[..20]), None, "cut short");
        assert_eq!(Timers::of_soa(b"\x05ab"), None);
    }

    #[test]
    fn refresh_retry_and_expire_follow_the_soa() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut s = Schedule::new(None, t0);
        assert!(s.is_due(t0));
        // Nothing known yet: a failure waits FIRST_RETRY, and nothing expires.
        s.failed(t0);
        assert_eq!(s.next(), at(60));
        assert!(!s.expires(at(10_000)));
        let timers = Timers::of_soa(&soa(10, 3, 30));
        s.answered(timers, at(60));
        assert_eq!(s.next(), at(70), "REFRESH");
        assert!(!s.is_due(at(69)) && s.is_due(at(70)));
        // The primaries stop answering: RETRY, until EXPIRE from the last answer.
        s.failed(at(70));
        assert_eq!(s.next(), at(73));
        s.failed(at(88));
        assert_eq!(s.next(), at(90), "the expiry comes first");
        assert!(!s.expires(at(89)));
        assert!(s.expires(at(90)));
        assert!(!s.expires(at(91)), "once");
        assert_eq!(s.next(), s.due);
        // An answer again: the zone is back, EXPIRE counts anew.
        s.answered(None, at(100));
        assert_eq!(s.next(), at(110), "the SOA's timers kept");
        assert!(s.expires(at(130)));
    }

    #[test]
    fn a_fixed_refresh_replaces_the_soas() {
        let t0 = Instant::now();
        let mut s = Schedule::new(Some(3600), t0);
        s.answered(Timers::of_soa(&soa(10, 3, 30)), t0);
        assert_eq!(s.due, t0 + Duration::from_secs(3600));
        // EXPIRE still applies.
        assert_eq!(s.next(), t0 + Duration::from_secs(30));
        s.failed(t0);
        assert_eq!(s.next(), t0 + Duration::from_secs(3));
    }
}
