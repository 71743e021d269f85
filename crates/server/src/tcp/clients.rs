//! tcp::clients -- open TCP connections per client address over all workers
//! (`limits.tcp_connections_per_client`), in a fixed table of atomic words.

use shardns_sys::seed::keyed_hash;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A connection whose client has no slot in [`ClientCounts`] (limit off, no address, or no
/// room): it is not counted.
pub(crate) const UNTRACKED: u32 = u32::MAX;
/// Slots looked at for one address.
const PROBE: usize = 8;
/// Low bits of a slot word: the connection count; the rest: the address's tag.
const COUNT_BITS: u32 = 16;
pub(super) const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// Open TCP connections per client address, over all workers, for
/// `limits.tcp_connections_per_client`. A fixed table of atomic words, each holding an
/// address's 48-bit tag and its connection count, touched only when a connection is
/// accepted or closed (never per query) and without a lock. An address probes [`PROBE`]
/// slots from its (seeded) hash; a slot whose count is 0 is free. The table has room for
/// several times `tcp_connections` addresses, so it is seldom crowded; an address that
/// finds no room is not counted (it is let in), and two addresses with the same tag (a
/// 2^-48 chance) share a count.
pub(crate) struct ClientCounts {
    pub(super) slots: Box<[AtomicU64]>,
    mask: usize,
    seed: u64,
    limit: u64,
}

impl ClientCounts {
    /// A table for `limit` connections per address (0: no limit, no table) and up to
    /// `connections` open connections in all.
    pub(crate) fn new(limit: usize, connections: usize, seed: u64) -> Self {
        let size = if limit == 0 {
            0
        } else {
            connections
                .saturating_mul(4)
                .clamp(1024, 1 << 22)
                .next_power_of_two()
        };
        Self {
            slots: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask: size.saturating_sub(1),
            seed,
            limit: (limit as u64).min(COUNT_MASK),
        }
    }

    fn tag(&self, ip: IpAddr) -> u64 {
        let bits = match ip {
            IpAddr::V4(a) => u128::from(u32::from(a)) | 4 << 120,
            IpAddr::V6(a) => u128::from(a),
        };
        let h = keyed_hash(self.seed, &[(bits >> 64) as u64, bits as u64]);
        // The top 48 bits are the tag (never 0); the slot index comes from the rest.
        h | 1 << 63
    }

    /// Counts a new connection from `ip`: `Ok(slot)` (or `Ok(UNTRACKED)`) if it may be
    /// kept, `Err(slot)` if its address already has `limit` connections open (`slot` is the
    /// address's, so the caller can find one of them to close instead).
    pub(crate) fn acquire(&self, ip: Option<IpAddr>) -> Result<u32, u32> {
        let Some(ip) = ip.filter(|_| self.limit > 0) else {
            return Ok(UNTRACKED);
        };
        let h = self.tag(ip);
        let tag = h >> COUNT_BITS;
        let start = h as usize;
        // A few rounds: another worker may claim or change a slot under us.
        for _ in 0..4 {
            // The address's own slot, if it has one.
            for i in 0..PROBE {
                let idx = (start + i) & self.mask;
                let slot = &self.slots[idx];
                let mut v = slot.load(Relaxed);
                while v >> COUNT_BITS == tag && v & COUNT_MASK > 0 {
                    if v & COUNT_MASK >= self.limit {
                        return Err(idx as u32);
                    }
                    match slot.compare_exchange_weak(v, v + 1, Relaxed, Relaxed) {
                        Ok(_) => return Ok(idx as u32),
                        Err(now) => v = now,
                    }
                }
            }
            // Else a free slot.
            let mut raced = false;
            for i in 0..PROBE {
                let idx = (start + i) & self.mask;
                let slot = &self.slots[idx];
                let v = slot.load(Relaxed);
                if v & COUNT_MASK == 0 {
                    match slot.compare_exchange(v, tag << COUNT_BITS | 1, Relaxed, Relaxed) {
                        Ok(_) => return Ok(idx as u32),
                        Err(_) => {
                            raced = true;
                            break;
                        }
                    }
                }
            }
            if !raced {
                break;
            }
        }
        Ok(UNTRACKED)
    }

    /// Counts one more connection in `slot` (as [`ClientCounts::acquire`] returned it) past
    /// the limit: the client gives up one of its connections on another worker for it.
    pub(crate) fn acquire_over_limit(&self, slot: u32) -> u32 {
        match self.slots.get(slot as usize) {
            Some(s) => {
                s.fetch_add(1, Relaxed);
                slot
            }
            None => UNTRACKED,
        }
    }

    /// Uncounts a connection counted by [`ClientCounts::acquire`] (nothing for
    /// [`UNTRACKED`]).
    pub(crate) fn release(&self, slot: u32) {
        if let Some(s) = self.slots.get(slot as usize) {
            s.fetch_sub(1, Relaxed);
        }
    }

    /// Open connections counted for `ip` (tests and diagnostics).
    #[cfg(test)]
    pub(super) fn count(&self, ip: IpAddr) -> u64 {
        let h = self.tag(ip);
        (0..PROBE)
            .map(|i| self.slots[(h as usize + i) & self.mask].load(Relaxed))
            .filter(|v| v >> COUNT_BITS == h >> COUNT_BITS)
            .map(|v| v & COUNT_MASK)
            .sum()
    }
}
