//! Server selection within a zone, and what a zone's failures add up to.
//!
//! Owns: picking the next address (fewest tries, then lowest SRTT; unknown servers get a
//! small pseudo-random SRTT; held-down addresses skipped, one probe let through), the
//! per-zone record of tries, dead addresses, timeouts and network errors, the name servers
//! whose addresses must be resolved first, and the Extended DNS Error a zone fails with.

use std::net::{IpAddr, SocketAddr};

use shardns_wire::RType;

use super::{Addr, Failure, Frame, FrameState, Tried};
use crate::reply::Ede;
use crate::servers::Usable;
use crate::Resolver;

impl Frame {
    /// The best server address to try: fewest tries in this zone first, then lowest SRTT
    /// (unknown servers get a small pseudo-random SRTT, so they are tried early). Addresses
    /// held down as unresponsive are skipped; one whose hold-down expired is taken only if
    /// this query gets to be its probe.
    pub(super) fn pick(&mut self, res: &Resolver, salt: u64, now: u64) -> Option<SocketAddr> {
        let max_tries = res.config.tries_per_server.max(1);
        loop {
            let mut best: Option<((u8, u32), SocketAddr, bool)> = None;
            for &Addr { addr, .. } in &self.addrs {
                let tries = match self.tried.iter().find(|t| t.addr == addr) {
                    Some(t) if t.dead || t.tries >= max_tries => continue,
                    Some(t) => t.tries,
                    None => 0,
                };
                let (srtt, usable) = res.servers.status(&addr, now);
                if usable == Usable::Held {
                    self.held = true;
                    continue;
                }
                let key = (tries, srtt.unwrap_or_else(|| unknown_srtt(&addr, salt)));
                if best.as_ref().is_none_or(|(k, _, _)| key < *k) {
                    best = Some((key, addr, usable == Usable::Probe));
                }
            }
            let (_, addr, probe) = best?;
            let probe_ms = res.config.max_timeout_ms.max(res.config.initial_timeout_ms);
            if probe && !res.servers.claim_probe(addr, now, probe_ms) {
                // Another task took the probe: the address counts as held for this one.
                self.held = true;
                self.mark_dead(addr);
                continue;
            }
            match self.tried.iter_mut().find(|t| t.addr == addr) {
                Some(t) => t.tries += 1,
                None => self.tried.push(Tried {
                    addr,
                    tries: 1,
                    dead: false,
                }),
            }
            return Some(addr);
        }
    }

    pub(super) fn redirect(&mut self, asked: SocketAddr, server: SocketAddr) {
        if asked == server {
            return;
        }
        if let Some(t) = self.tried.iter_mut().find(|t| t.addr == asked) {
            t.tries = t.tries.saturating_sub(1);
        }
        match self.tried.iter_mut().find(|t| t.addr == server) {
            Some(t) => t.tries += 1,
            None => self.tried.push(Tried {
                addr: server,
                tries: 1,
                dead: false,
            }),
        }
        if let Some(s) = &mut self.sent {
            s.server = server;
        }
    }

    /// A name server with no address yet whose address lookup may still help.
    pub(super) fn unresolved_ns(&mut self) -> Option<(usize, RType)> {
        for (i, ns) in self.servers.iter_mut().enumerate() {
            if ns.resolving || ns.addrs > 0 || ns.to_resolve == 0 {
                continue;
            }
            let t = if ns.to_resolve & 1 != 0 {
                RType::A
            } else {
                RType::AAAA
            };
            // Clears the lowest bit: the type just taken.
            ns.to_resolve &= ns.to_resolve - 1;
            return Some((i, t));
        }
        None
    }

    /// True if every failure in this zone was a server not answering (timeouts, network
    /// errors, hold-downs), none a wrong answer, and some server had an address.
    pub(super) fn only_unreachable(&self) -> bool {
        self.lame == 0 && !self.addrs.is_empty()
    }

    pub(super) fn failure_ede(&self) -> Ede {
        if self.held && self.timeouts == 0 && self.network_errors == 0 && self.lame == 0 {
            Ede::new(
                Ede::NO_REACHABLE_AUTHORITY,
                "all servers held down as unresponsive",
            )
        } else if self.network_errors > 0 && self.timeouts == 0 && self.lame == 0 {
            Ede::new(Ede::NETWORK_ERROR, "could not reach the servers")
        } else if self.addrs.is_empty() {
            Ede::new(Ede::NO_REACHABLE_AUTHORITY, "no usable name server address")
        } else if self.lame > 0 && self.timeouts == 0 {
            Ede::new(
                Ede::NO_REACHABLE_AUTHORITY,
                "all servers failed or are lame",
            )
        } else {
            Ede::new(Ede::NO_REACHABLE_AUTHORITY, "all servers timed out")
        }
    }

    pub(super) fn answered(&mut self, server: SocketAddr) {
        if let Some(t) = self.tried.iter_mut().find(|t| t.addr == server) {
            t.tries = t.tries.saturating_sub(1);
        }
    }

    pub(super) fn mark_dead(&mut self, server: SocketAddr) {
        match self.tried.iter_mut().find(|t| t.addr == server) {
            Some(t) => t.dead = true,
            None => self.tried.push(Tried {
                addr: server,
                tries: 1,
                dead: true,
            }),
        }
    }

    pub(super) fn on_failure(&mut self, server: SocketAddr, why: Failure) {
        if self.state != FrameState::Waiting {
            return;
        }
        self.sent = None;
        self.state = FrameState::Select;
        match why {
            Failure::Timeout => self.timeouts += 1,
            Failure::Network => {
                self.network_errors += 1;
                self.mark_dead(server);
            }
        }
    }
}

/// A small pseudo-random SRTT (0..32 ms) for a server never heard from.
fn unknown_srtt(addr: &SocketAddr, salt: u64) -> u32 {
    let ip = match addr.ip() {
        IpAddr::V4(a) => u64::from(u32::from(a)),
        IpAddr::V6(a) => {
            let x = u128::from(a);
            (x as u64) ^ ((x >> 64) as u64)
        }
    };
    let h = (ip ^ u64::from(addr.port()) ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 59) as u32
}
