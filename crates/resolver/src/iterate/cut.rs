//! Where a frame's iteration starts, and the servers of the zone it is in.
//!
//! Owns: choosing the closest zone cut (a forward zone, a cached NS RRset, a stub zone or
//! the root hints, whichever is deepest; a forward zone always wins), entering a zone with
//! its name servers and the addresses the cache holds for them (glue included; loopback
//! ones refused unless `allow_loopback_upstreams`), and remembering a cut given up earlier
//! in the resolution so its servers stay given up.

use std::net::SocketAddr;

use shardns_wire::{NameRef, RType};

use super::{ip_of, name_buf, push_ns, Addr, Frame, Ns, Tried};
use crate::cache::Rank;
use crate::Resolver;

impl Frame {
    /// Finds where to start: a forward zone, a cached zone cut, a stub zone, or the root
    /// hints, whichever is deepest (a configured forward zone always wins over the cache).
    /// Cached cuts at or above `ceiling` (set when a cached cut proved useless) are skipped.
    pub(super) fn find_cut(&mut self, res: &Resolver, now: u64) {
        let cfg = &res.config;
        let configured = cfg.zone_servers_for(self.qname.as_ref());
        if let Some((z, true)) = configured {
            self.set_static(z.zone.as_ref(), &z.servers, res, true);
            return;
        }
        // Cached cuts must lie strictly below a stub zone's apex, and are never the root
        // (the hints are the root's servers).
        let floor = configured.map_or(2, |(z, _)| z.zone.as_ref().len() + 1);
        let qname = self.qname.clone();
        // The parent side of a cut is authoritative for DS (RFC 4035 §3.1.4.1).
        let mut cur = match self.qtype {
            RType::DS => qname.as_ref().parent(),
            _ => Some(qname.as_ref()),
        };
        while let Some(name) = cur {
            if name.len() < floor {
                break;
            }
            if name.len() < self.ceiling {
                self.servers.clear();
                let servers = &mut self.servers;
                res.cache
                    .visit(name, &[RType::NS], Rank::Additional, now, |_, _, rd| {
                        if let Ok(n) = NameRef::from_wire(rd) {
                            push_ns(servers, n);
                        }
                    });
                if !self.servers.is_empty() {
                    self.enter_cut(name, res, now);
                    self.from_cached_cut = true;
                    return;
                }
            }
            cur = name.parent();
        }
        match configured {
            Some((z, _)) => self.set_static(z.zone.as_ref(), &z.servers, res, false),
            None => {
                self.servers.clear();
                self.reset_zone(NameRef::ROOT, false, res);
                for (name, addrs) in &cfg.hints.servers {
                    let i = self.servers.len();
                    self.servers.push(Ns {
                        name: name_buf(name.as_ref()),
                        addrs: 0,
                        to_resolve: 0,
                        resolving: false,
                    });
                    for &a in addrs.iter().filter(|a| cfg.family_ok(a)) {
                        self.add_addr(i, a);
                    }
                    if self.servers[i].addrs == 0 {
                        self.add_cached_addrs(i, res, now);
                    }
                }
            }
        }
    }

    /// Forgets the current zone's addresses, tries and counters and enters `zone` (the
    /// caller sets up `servers`).
    fn reset_zone(&mut self, zone: NameRef<'_>, forward: bool, res: &Resolver) {
        self.zone.set(zone);
        self.forward = forward;
        self.from_cached_cut = false;
        self.addrs.clear();
        self.tried.clear();
        self.timeouts = 0;
        self.network_errors = 0;
        self.lame = 0;
        self.held = false;
        self.qmin_suspect = None;
        self.start_qmin(res);
    }

    fn set_static(
        &mut self,
        zone: NameRef<'_>,
        servers: &[SocketAddr],
        res: &Resolver,
        forward: bool,
    ) {
        self.servers.clear();
        self.reset_zone(zone, forward, res);
        self.servers.push(Ns {
            name: name_buf(zone),
            addrs: 0,
            to_resolve: 0,
            resolving: false,
        });
        for &a in servers.iter().filter(|a| res.config.family_ok(a)) {
            self.add_addr(0, a);
        }
    }

    /// Enters zone `zone`, served by the name servers now in `servers` (names only), with
    /// their addresses from the cache.
    pub(super) fn enter_cut(&mut self, zone: NameRef<'_>, res: &Resolver, now: u64) {
        let cfg = &res.config;
        self.reset_zone(zone, false, res);
        let to_resolve = u8::from(cfg.ipv4) | (u8::from(cfg.ipv6) << 1);
        for i in 0..self.servers.len() {
            let ns = &mut self.servers[i];
            ns.addrs = 0;
            ns.to_resolve = to_resolve;
            ns.resolving = false;
            self.add_cached_addrs(i, res, now);
        }
        if let Some(a) = self.abandoned.as_deref() {
            if a.zone.as_ref() == self.zone.as_ref() {
                // Back at a cut given up earlier in this resolution (the parent referred us
                // to it again): its servers stay given up; new ones may still be tried.
                for &addr in &a.dead {
                    self.tried.push(Tried {
                        addr,
                        tries: 0,
                        dead: true,
                    });
                }
                (self.timeouts, self.network_errors, self.lame) =
                    (a.timeouts, a.network_errors, a.lame);
                self.held = a.held;
            }
        }
    }

    /// Adds an address of `servers[i]` (once).
    pub(super) fn add_addr(&mut self, i: usize, addr: SocketAddr) {
        let ns = i as u16;
        if !self.addrs.iter().any(|a| a.ns == ns && a.addr == addr) {
            self.addrs.push(Addr { ns, addr });
            self.servers[i].addrs += 1;
        }
    }

    /// Adds the addresses of `servers[i]` the cache holds (glue included): learned from
    /// DNS data, so not loopback ones unless allowed. A server with an address refused so
    /// is not looked up (either type): the lookup would go through the very zone that has
    /// no usable server, in a loop of referrals, for a name the data puts on loopback.
    fn add_cached_addrs(&mut self, i: usize, res: &Resolver, now: u64) {
        let cfg = &res.config;
        let ns = i as u16;
        let addrs = &mut self.addrs;
        let mut found = 0;
        let mut refused = false;
        res.cache.visit(
            self.servers[i].name.as_ref(),
            &[RType::A, RType::AAAA],
            Rank::Additional,
            now,
            |t, _, rd| {
                if let Some(ip) = ip_of(t, rd) {
                    let addr = SocketAddr::new(ip, cfg.upstream_port);
                    if cfg.learned_ok(&addr) {
                        addrs.push(Addr { ns, addr });
                        found += 1;
                    } else if cfg.family_ok(&addr) {
                        refused = true;
                    }
                }
            },
        );
        self.servers[i].addrs += found;
        if refused && found == 0 {
            self.servers[i].to_resolve = 0;
        }
    }
}
