//! What the resolver knows about upstream server addresses: smoothed round-trip time
//! (SRTT), whether they understand EDNS, and whether they answer at all.
//!
//! Owns: a table shared by all workers, sharded like the cache (16 `Mutex`es by address),
//! consulted only on the cache-miss path. SRTT follows the classic 7/8 smoothing; a timeout
//! doubles it. Old knowledge decays: the SRTT halves for every `srtt_half_life_ms` without a
//! new sample, so a server that was slow once gets tried again. Unknown servers are given a
//! small random SRTT so each is tried early (BIND's approach).
//!
//! Hold-down (what Unbound's infrastructure cache does for servers that stopped answering):
//! after `hold_after` timeouts in a row with no answer in between, an address is not used
//! until a hold-down expires; each further timeout doubles the hold-down, up to a bound. When
//! it expires, one query (the probe) may go out while the others still skip the address; any
//! answer ends the hold-down. Only timeouts of queries sent after the previous timeout was
//! seen count, so a burst of queries lost in one outage counts once, not once per query.
//!
//! QNAME minimisation memory (RFC 9156 §2.3): a server that answered a minimised question
//! badly (an error rcode, NOERROR without AA, a referral upwards, or an NXDOMAIN that the
//! full name then contradicted) is asked full names for `NO_QMIN_MS`, so the names after
//! the first do not each pay the failed minimised query again. Kept per address, since
//! the breakage belongs to the server's software, whatever zone it serves.
//! Never: clocks or I/O.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;

const SHARDS: usize = 16;
/// Entries per shard before old ones are dropped.
const MAX_PER_SHARD: usize = 4096;
/// Highest SRTT kept, in milliseconds.
const MAX_SRTT: u32 = 30_000;
/// How long a server that failed an EDNS query is sent plain DNS.
const NO_EDNS_MS: u64 = 3_600_000;
/// How long a server that answered a minimised question badly is asked full names (RFC
/// 9156 §2.3): long enough to spare the names after the first, short enough that a fixed
/// server is minimised to again.
const NO_QMIN_MS: u64 = 900_000;
/// Entries unused for this long are dropped when a shard is full.
const STALE_MS: u64 = 3_600_000;

#[derive(Clone, Copy, Debug, Default)]
struct Info {
    srtt_ms: u32,
    updated: u64,
    no_edns_until: u64,
    /// Timeouts in a row (counted once per outage, see the module documentation).
    timeouts: u8,
    /// When the last counted timeout was seen; 0 after an answer.
    last_timeout: u64,
    /// Not used before this time (a hold-down, or a probe in flight).
    held_until: u64,
    /// Asked full names, not minimised ones, before this time.
    no_qmin_until: u64,
}

/// How unresponsive servers are held down (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HoldPolicy {
    /// Timeouts in a row before the first hold-down; 0 disables holding down.
    pub(crate) after: u8,
    /// The first hold-down, in milliseconds; it doubles with each further timeout.
    pub(crate) base_ms: u64,
    /// The longest hold-down.
    pub(crate) max_ms: u64,
}

/// Whether an address may be used now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Usable {
    Yes,
    /// Held down: skip it.
    Held,
    /// Its hold-down expired: one query may probe it ([`ServerTable::claim_probe`]).
    Probe,
}

/// Per-address SRTT, EDNS and hold-down knowledge.
pub(crate) struct ServerTable {
    shards: Box<[Mutex<HashMap<SocketAddr, Info>>]>,
    half_life_ms: u64,
    hold: HoldPolicy,
}

impl ServerTable {
    pub(crate) fn new(half_life_ms: u64, hold: HoldPolicy) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            half_life_ms: half_life_ms.max(1),
            hold,
        }
    }

    fn shard(&self, addr: &SocketAddr) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, Info>> {
        let h = match addr.ip() {
            std::net::IpAddr::V4(a) => u32::from(a) as u64,
            std::net::IpAddr::V6(a) => {
                let x = u128::from(a);
                (x as u64) ^ ((x >> 64) as u64)
            }
        } ^ u64::from(addr.port());
        let i = (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60) as usize % SHARDS;
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The decayed SRTT, or `None` for a server never heard from.
    pub(crate) fn srtt(&self, addr: &SocketAddr, now: u64) -> Option<u32> {
        let info = *self.shard(addr).get(addr)?;
        Some(self.decayed(&info, now))
    }

    /// The decayed SRTT (`None` for a server never heard from) and whether the address may
    /// be used now; one lock.
    pub(crate) fn status(&self, addr: &SocketAddr, now: u64) -> (Option<u32>, Usable) {
        let Some(info) = self.shard(addr).get(addr).copied() else {
            return (None, Usable::Yes);
        };
        let usable = if info.held_until > now {
            Usable::Held
        } else if self.hold.after > 0 && info.timeouts >= self.hold.after {
            Usable::Probe
        } else {
            Usable::Yes
        };
        (Some(self.decayed(&info, now)), usable)
    }

    /// Takes the one probe of an address whose hold-down expired: others skip it for
    /// `probe_ms` (until the probe's answer or timeout decides). False if the address is
    /// held (another worker took the probe first).
    pub(crate) fn claim_probe(&self, addr: SocketAddr, now: u64, probe_ms: u64) -> bool {
        let mut g = self.shard(&addr);
        let Some(info) = g.get_mut(&addr) else {
            return true;
        };
        if info.held_until > now {
            return false;
        }
        if self.hold.after > 0 && info.timeouts >= self.hold.after {
            info.held_until = now + probe_ms;
        }
        true
    }

    fn decayed(&self, info: &Info, now: u64) -> u32 {
        let halvings = now.saturating_sub(info.updated) / self.half_life_ms;
        info.srtt_ms
            .checked_shr(halvings.min(31) as u32)
            .unwrap_or(0)
    }

    /// A response came back after `rtt_ms`: the server answers, so any hold-down ends.
    pub(crate) fn record_rtt(&self, addr: SocketAddr, rtt_ms: u64, now: u64) {
        let rtt = rtt_ms.min(u64::from(MAX_SRTT)) as u32;
        self.update(addr, now, |info, known, decayed| {
            info.srtt_ms = if known {
                ((u64::from(decayed) * 7 + u64::from(rtt)) / 8) as u32
            } else {
                rtt
            };
            info.timeouts = 0;
            info.last_timeout = 0;
            info.held_until = 0;
        });
    }

    /// A query sent at `sent_at` timed out after `timeout_ms`: the SRTT at least doubles,
    /// and the server may be held down. A query sent before the last counted timeout was
    /// seen was lost in the same outage and changes nothing.
    pub(crate) fn record_timeout(&self, addr: SocketAddr, timeout_ms: u64, sent_at: u64, now: u64) {
        let t = timeout_ms.min(u64::from(MAX_SRTT)) as u32;
        let hold = self.hold;
        self.update(addr, now, |info, _, decayed| {
            if sent_at < info.last_timeout {
                return;
            }
            info.last_timeout = now;
            info.srtt_ms = decayed.max(t / 2).saturating_mul(2).min(MAX_SRTT);
            info.timeouts = info.timeouts.saturating_add(1);
            if hold.after > 0 && info.timeouts >= hold.after {
                let doublings = u32::from(info.timeouts - hold.after).min(20);
                let ms = hold.base_ms.saturating_mul(1 << doublings).min(hold.max_ms);
                info.held_until = now + ms;
            }
        });
    }

    /// Applies `f(info, known before, decayed srtt)` to the address's entry (made if new).
    fn update(&self, addr: SocketAddr, now: u64, f: impl FnOnce(&mut Info, bool, u32)) {
        let mut g = self.shard(&addr);
        if g.len() >= MAX_PER_SHARD && !g.contains_key(&addr) {
            g.retain(|_, i| now.saturating_sub(i.updated) < STALE_MS || i.held_until > now);
            if g.len() >= MAX_PER_SHARD {
                g.clear();
            }
        }
        let old = g.get(&addr).copied();
        let decayed = old.map_or(0, |i| self.decayed(&i, now));
        let mut info = old.unwrap_or_default();
        // Decay is measured from `updated`, which becomes `now`.
        info.srtt_ms = decayed;
        f(&mut info, old.is_some(), decayed);
        info.updated = now;
        g.insert(addr, info);
    }

    /// True unless the server recently failed an EDNS query.
    pub(crate) fn edns_ok(&self, addr: &SocketAddr, now: u64) -> bool {
        self.shard(addr)
            .get(addr)
            .is_none_or(|i| i.no_edns_until <= now)
    }

    /// False while the server is asked full names only (see the module documentation).
    pub(crate) fn qmin_ok(&self, addr: &SocketAddr, now: u64) -> bool {
        self.shard(addr)
            .get(addr)
            .is_none_or(|i| i.no_qmin_until <= now)
    }

    /// The server answered a minimised question badly: ask it full names for a while.
    pub(crate) fn set_no_qmin(&self, addr: SocketAddr, now: u64) {
        self.update(addr, now, |info, _, _| {
            info.no_qmin_until = now + NO_QMIN_MS
        });
    }

    /// The server answered FORMERR or NOTIMP to EDNS: send it plain DNS for a while.
    pub(crate) fn set_no_edns(&self, addr: SocketAddr, now: u64) {
        let mut g = self.shard(&addr);
        let e = g.entry(addr).or_insert(Info {
            updated: now,
            ..Info::default()
        });
        e.no_edns_until = now + NO_EDNS_MS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: HoldPolicy = HoldPolicy {
        after: 2,
        base_ms: 5_000,
        max_ms: 20_000,
    };

    #[test]
    fn srtt_smooths_decays_and_penalises_timeouts() {
        let t = ServerTable::new(1000, HOLD);
        let a: SocketAddr = "192.0.2.1:53".parse().unwrap();
        assert_eq!(t.srtt(&a, 0), None);
        t.record_rtt(a, 80, 0);
        assert_eq!(t.srtt(&a, 0), Some(80));
        t.record_rtt(a, 160, 0);
        assert_eq!(t.srtt(&a, 0), Some(90));
        assert_eq!(t.srtt(&a, 1000), Some(45));
        assert_eq!(t.srtt(&a, 2500), Some(22));
        t.record_timeout(a, 800, 0, 0);
        assert_eq!(t.srtt(&a, 0), Some(800));
        t.record_timeout(a, 800, 0, 0);
        assert_eq!(t.srtt(&a, 0), Some(1600));
    }

    #[test]
    fn timeouts_in_a_row_hold_a_server_down_with_backoff() {
        let t = ServerTable::new(600_000, HOLD);
        let a: SocketAddr = "192.0.2.9:53".parse().unwrap();
        assert_eq!(t.status(&a, 0).1, Usable::Yes);
        t.record_timeout(a, 800, 0, 800);
        assert_eq!(
            t.status(&a, 800).1,
            Usable::Yes,
            "one timeout is not enough"
        );
        // Queries sent before that timeout was seen belong to the same outage.
        t.record_timeout(a, 800, 10, 810);
        t.record_timeout(a, 800, 799, 1_599);
        assert_eq!(t.status(&a, 1_600).1, Usable::Yes);
        // A retry sent after it times out too: held down for 5 s.
        t.record_timeout(a, 2_800, 800, 3_600);
        assert_eq!(t.status(&a, 3_600).1, Usable::Held);
        assert_eq!(t.status(&a, 8_599).1, Usable::Held);
        // Then one probe may go; others keep skipping the address meanwhile.
        assert_eq!(t.status(&a, 8_600).1, Usable::Probe);
        assert!(t.claim_probe(a, 8_600, 3_000));
        assert!(!t.claim_probe(a, 8_601, 3_000));
        assert_eq!(t.status(&a, 8_601).1, Usable::Held);
        // The probe times out: the hold-down doubles, up to the bound.
        t.record_timeout(a, 3_000, 8_600, 11_600);
        assert_eq!(t.status(&a, 21_599).1, Usable::Held);
        assert_eq!(t.status(&a, 21_600).1, Usable::Probe);
        for i in 0..10u64 {
            let at = 100_000 * (i + 1);
            assert!(t.claim_probe(a, at, 3_000));
            t.record_timeout(a, 3_000, at, at + 3_000);
        }
        let at = 100_000 * 10 + 3_000;
        assert_eq!(t.status(&a, at + 19_999).1, Usable::Held);
        assert_eq!(t.status(&a, at + 20_000).1, Usable::Probe);
        // An answer ends it at once.
        t.record_rtt(a, 20, at + 20_000);
        assert_eq!(
            t.status(&a, at + 20_000),
            (Some(t.srtt(&a, at + 20_000).unwrap()), Usable::Yes)
        );
        t.record_timeout(a, 800, at + 20_000, at + 20_800);
        assert_eq!(t.status(&a, at + 20_800).1, Usable::Yes);
    }

    #[test]
    fn edns_flag() {
        let t = ServerTable::new(1000, HOLD);
        let a: SocketAddr = "[2001:db8::1]:53".parse().unwrap();
        assert!(t.edns_ok(&a, 0));
        t.set_no_edns(a, 0);
        assert!(!t.edns_ok(&a, 10));
        assert!(t.edns_ok(&a, NO_EDNS_MS));
    }

    #[test]
    fn qmin_memory_expires_and_keeps_the_srtt() {
        let t = ServerTable::new(600_000, HOLD);
        let a: SocketAddr = "192.0.2.7:53".parse().unwrap();
        assert!(t.qmin_ok(&a, 0));
        t.record_rtt(a, 40, 0);
        t.set_no_qmin(a, 1_000);
        assert!(!t.qmin_ok(&a, 1_000));
        assert!(!t.qmin_ok(&a, 1_000 + NO_QMIN_MS - 1));
        assert!(t.qmin_ok(&a, 1_000 + NO_QMIN_MS));
        assert_eq!(t.srtt(&a, 1_000), Some(40));
        assert_eq!(t.status(&a, 1_000).1, Usable::Yes);
        // Other addresses are not affected.
        assert!(t.qmin_ok(&"192.0.2.8:53".parse().unwrap(), 1_000));
    }
}
