//! What the resolver knows about upstream server addresses: smoothed round-trip time
//! (SRTT) and whether they understand EDNS.
//!
//! Owns: a table shared by all workers, sharded like the cache (16 `Mutex`es by address),
//! consulted only on the cache-miss path. SRTT follows the classic 7/8 smoothing; a timeout
//! doubles it. Old knowledge decays: the SRTT halves for every `srtt_half_life_ms` without a
//! new sample, so a server that was slow once gets tried again. Unknown servers are given a
//! small random SRTT so each is tried early (BIND's approach).
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
/// Entries unused for this long are dropped when a shard is full.
const STALE_MS: u64 = 3_600_000;

#[derive(Clone, Copy, Debug)]
struct Info {
    srtt_ms: u32,
    updated: u64,
    no_edns_until: u64,
}

/// Per-address SRTT and EDNS knowledge.
pub(crate) struct ServerTable {
    shards: Box<[Mutex<HashMap<SocketAddr, Info>>]>,
    half_life_ms: u64,
}

impl ServerTable {
    pub(crate) fn new(half_life_ms: u64) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            half_life_ms: half_life_ms.max(1),
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

    fn decayed(&self, info: &Info, now: u64) -> u32 {
        let halvings = now.saturating_sub(info.updated) / self.half_life_ms;
        info.srtt_ms
            .checked_shr(halvings.min(31) as u32)
            .unwrap_or(0)
    }

    /// A response came back after `rtt_ms`.
    pub(crate) fn record_rtt(&self, addr: SocketAddr, rtt_ms: u64, now: u64) {
        let rtt = rtt_ms.min(u64::from(MAX_SRTT)) as u32;
        self.update(addr, now, |old, decayed| match old {
            Some(_) => ((u64::from(decayed) * 7 + u64::from(rtt)) / 8) as u32,
            None => rtt,
        });
    }

    /// A query timed out after `timeout_ms`: the SRTT at least doubles.
    pub(crate) fn record_timeout(&self, addr: SocketAddr, timeout_ms: u64, now: u64) {
        let t = timeout_ms.min(u64::from(MAX_SRTT)) as u32;
        self.update(addr, now, |_, decayed| {
            decayed.max(t / 2).saturating_mul(2).min(MAX_SRTT)
        });
    }

    fn update(&self, addr: SocketAddr, now: u64, f: impl FnOnce(Option<Info>, u32) -> u32) {
        let mut g = self.shard(&addr);
        if g.len() >= MAX_PER_SHARD && !g.contains_key(&addr) {
            g.retain(|_, i| now.saturating_sub(i.updated) < STALE_MS);
            if g.len() >= MAX_PER_SHARD {
                g.clear();
            }
        }
        let old = g.get(&addr).copied();
        let decayed = old.map_or(0, |i| self.decayed(&i, now));
        let srtt = f(old, decayed);
        g.insert(
            addr,
            Info {
                srtt_ms: srtt,
                updated: now,
                no_edns_until: old.map_or(0, |i| i.no_edns_until),
            },
        );
    }

    /// True unless the server recently failed an EDNS query.
    pub(crate) fn edns_ok(&self, addr: &SocketAddr, now: u64) -> bool {
        self.shard(addr)
            .get(addr)
            .is_none_or(|i| i.no_edns_until <= now)
    }

    /// The server answered FORMERR or NOTIMP to EDNS: send it plain DNS for a while.
    pub(crate) fn set_no_edns(&self, addr: SocketAddr, now: u64) {
        let mut g = self.shard(&addr);
        let e = g.entry(addr).or_insert(Info {
            srtt_ms: 0,
            updated: now,
            no_edns_until: 0,
        });
        e.no_edns_until = now + NO_EDNS_MS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srtt_smooths_decays_and_penalises_timeouts() {
        let t = ServerTable::new(1000);
        let a: SocketAddr = "192.0.2.1:53".parse().unwrap();
        assert_eq!(t.srtt(&a, 0), None);
        t.record_rtt(a, 80, 0);
        assert_eq!(t.srtt(&a, 0), Some(80));
        t.record_rtt(a, 160, 0);
        assert_eq!(t.srtt(&a, 0), Some(90));
        assert_eq!(t.srtt(&a, 1000), Some(45));
        assert_eq!(t.srtt(&a, 2500), Some(22));
        t.record_timeout(a, 800, 0);
        assert_eq!(t.srtt(&a, 0), Some(800));
        t.record_timeout(a, 800, 0);
        assert_eq!(t.srtt(&a, 0), Some(1600));
    }

    #[test]
    fn edns_flag() {
        let t = ServerTable::new(1000);
        let a: SocketAddr = "[2001:db8::1]:53".parse().unwrap();
        assert!(t.edns_ok(&a, 0));
        t.set_no_edns(a, 0);
        assert!(!t.edns_ok(&a, 10));
        assert!(t.edns_ok(&a, NO_EDNS_MS));
    }
}
