//! One client query's resolution: iteration from the closest known zone cut, as a state
//! machine over parsed responses.
//!
//! Owns: [`Task`], a stack of frames (the client's question at the bottom, name-server
//! address sub-resolutions above it), and the rules for reading a response: answer, CNAME
//! and DNAME chains, referrals with in-bailiwick glue, NXDOMAIN and NODATA, lame servers,
//! QNAME minimisation (RFC 9156, relaxed), forward and stub zones, server selection by SRTT
//! (skipping servers held down as unresponsive), giving up a zone cut (going back to the
//! parent only when the cut's servers were lame, never twice to the same servers), and the
//! limits (chain length, referrals, queries, sub-resolution depth, loops).
//! The [`crate::Engine`] validates responses (source, ID, question), handles TC and EDNS
//! fallback, and coalesces identical queries before anything reaches a task.
//! Never: sockets, clocks, randomness of its own (a per-task salt comes from the engine).

use std::net::{IpAddr, SocketAddr};

use shardns_wire::{rdata, NameBuf, NameRef, RType, Rcode, Record};

use crate::answer::{Answer, Ede};
use crate::cache::{negative_ttl, Lookup, Probe, Rank, Soa};
use crate::msg::{Response, Rr};
use crate::servers::Usable;
use crate::Resolver;

/// What the engine should do for a task next.
// A `Request` carries its names inline (no allocation per upstream query); a step is moved
// once or twice, so the size difference costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this query, then wait for its response or timeout.
    Send(Request),
    /// The resolution is over.
    Done(Answer),
}

/// One upstream query a task wants sent. Names are inline: nothing on the heap.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) server: SocketAddr,
    pub(crate) qname: NameBuf,
    pub(crate) qtype: RType,
    /// Recursion desired: set for forwarders only.
    pub(crate) rd: bool,
    /// The zone cut the query is sent into (part of the coalescing key).
    pub(crate) zone: NameBuf,
}

/// Why a query produced no usable response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    Timeout,
    /// The driver could not send, or the server refused the connection.
    Network,
}

/// Counters shared by all frames of a task.
#[derive(Debug, Default)]
struct Budget {
    queries: u32,
    referrals: u32,
    /// Set when a task-wide limit is passed: the whole resolution fails.
    exhausted: Option<Ede>,
}

/// One resolution. The engine reuses finished tasks ([`Task::reset`]): frames and their
/// buffers keep their capacity, so a resolution on a warm engine allocates little beyond
/// the records it caches and returns.
pub(crate) struct Task {
    /// The frames in use are `frames[..depth]`; those above are kept for reuse.
    frames: Vec<Frame>,
    depth: usize,
    budget: Budget,
    /// Per-task salt for the random SRTT of unknown servers.
    salt: u64,
    failed: Option<Ede>,
}

impl Task {
    pub(crate) fn new(qname: NameRef<'_>, qtype: RType, salt: u64) -> Self {
        let mut task = Self {
            frames: Vec::new(),
            depth: 0,
            budget: Budget::default(),
            salt,
            failed: None,
        };
        task.reset(qname, qtype, salt);
        task
    }

    /// Starts the task over for another question, keeping its buffers.
    pub(crate) fn reset(&mut self, qname: NameRef<'_>, qtype: RType, salt: u64) {
        self.depth = 0;
        self.budget = Budget::default();
        self.salt = salt;
        self.failed = None;
        self.push_frame(qname, qtype, usize::MAX);
    }

    /// Drops the records a finished task still holds (kept buffers stay allocated).
    pub(crate) fn recycle(&mut self) {
        self.depth = 0;
        for f in &mut self.frames {
            f.chain.clear();
            f.outcome = None;
            f.abandoned = None;
        }
    }

    fn push_frame(&mut self, qname: NameRef<'_>, qtype: RType, parent_ns: usize) {
        match self.frames.get_mut(self.depth) {
            Some(f) => f.reset(qname, qtype, parent_ns),
            None => self.frames.push(Frame::new(qname, qtype, parent_ns)),
        }
        self.depth += 1;
    }

    fn top(&mut self) -> Option<&mut Frame> {
        self.frames[..self.depth].last_mut()
    }

    /// Advances until a query must be sent or the resolution is over.
    pub(crate) fn step(&mut self, res: &Resolver, now: u64) -> Step {
        let cfg = &res.config;
        loop {
            if let Some(ede) = self.failed.or(self.budget.exhausted) {
                return Step::Done(Answer::servfail(ede));
            }
            let depth = self.depth;
            let Some(frame) = self.frames[..depth].last_mut() else {
                return Step::Done(Answer::servfail(Ede::new(Ede::OTHER, "internal error")));
            };
            match frame.advance(res, self.salt, now) {
                Advance::Send(req) => {
                    if self.budget.queries >= cfg.max_queries {
                        self.failed = Some(Ede::new(Ede::OTHER, "too many upstream queries"));
                        continue;
                    }
                    self.budget.queries += 1;
                    return Step::Send(req);
                }
                Advance::Need(ns, rtype) => {
                    let name = frame.servers[ns].name.clone();
                    let name = name.as_ref();
                    let looping = self.frames[..depth].iter().any(|f| {
                        f.qtype == rtype && (f.origin.as_ref() == name || f.qname.as_ref() == name)
                    });
                    if looping || depth > usize::from(cfg.max_depth) {
                        // This server's address cannot be found from here; try the others.
                        self.frames[depth - 1].servers[ns].resolving = false;
                        continue;
                    }
                    self.push_frame(name, rtype, ns);
                }
                Advance::Done(outcome) => {
                    if depth == 1 {
                        let mut answer = self.frames[0].answer(outcome);
                        // Clients may keep the records no longer than we would.
                        for r in answer.answers.iter_mut().chain(answer.authority.iter_mut()) {
                            r.ttl = r.ttl.min(cfg.max_ttl);
                        }
                        return Step::Done(answer);
                    }
                    // The sub-resolution is over: its addresses go to the parent's server.
                    self.depth -= 1;
                    let (lower, upper) = self.frames.split_at_mut(depth - 1);
                    let (Some(parent), Some(sub)) = (lower.last_mut(), upper.first()) else {
                        continue;
                    };
                    let i = sub.parent_ns;
                    parent.servers[i].resolving = false;
                    if matches!(outcome, Outcome::Answer) {
                        for r in &sub.chain {
                            if r.owner.as_ref() != sub.qname.as_ref() {
                                continue;
                            }
                            if let Some(ip) = ip_of(r.rtype, &r.rdata) {
                                let a = SocketAddr::new(ip, cfg.upstream_port);
                                if cfg.family_ok(&a) {
                                    parent.add_addr(i, a);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The engine sent the task's query to `server` (which may differ from the one the task
    /// asked for when the query was coalesced with another task's).
    pub(crate) fn sent_to(&mut self, asked: SocketAddr, server: SocketAddr) {
        if let Some(f) = self.top() {
            f.redirect(asked, server);
        }
    }

    /// A validated response to the task's outstanding query.
    pub(crate) fn on_response(
        &mut self,
        res: &Resolver,
        server: SocketAddr,
        msg: &Response,
        now: u64,
    ) {
        let budget = &mut self.budget;
        if let Some(f) = self.frames[..self.depth].last_mut() {
            // A broken chain fails this frame only: in a sub-resolution, the parent then
            // tries its other name servers.
            if let Err(ede) = f.on_response(res, budget, server, msg, now) {
                f.outcome = Some(Outcome::Fail(ede));
            }
        }
    }

    /// The task's outstanding query failed.
    pub(crate) fn on_failure(&mut self, server: SocketAddr, why: Failure) {
        if let Some(f) = self.top() {
            f.on_failure(server, why);
        }
    }

    /// The engine re-sent the query (over TCP or without EDNS): one more query spent.
    pub(crate) fn count_query(&mut self) {
        self.budget.queries += 1;
    }

    /// Upstream queries spent so far.
    pub(crate) fn queries(&self) -> u32 {
        self.budget.queries
    }
}

// Large for the same reason as `Step`.
#[allow(clippy::large_enum_variant)]
enum Advance {
    Send(Request),
    /// Resolve an address of this frame's name server `servers[i]`, of this type.
    Need(usize, RType),
    Done(Outcome),
}

#[derive(Clone, Debug)]
enum Outcome {
    /// The chain ends in the RRset asked for.
    Answer,
    NxDomain(Option<Record>),
    NoData(Option<Record>),
    Fail(Ede),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Look in the cache, then find the closest zone cut.
    Start,
    /// Pick a server and send.
    Select,
    /// A query is out.
    Waiting,
}

/// A name server of the current zone. Its addresses are in [`Frame::addrs`].
struct Ns {
    name: NameBuf,
    /// How many addresses it has in `Frame::addrs`.
    addrs: u16,
    /// Address types not looked up yet: bit 0 A, bit 1 AAAA (looked up in that order).
    to_resolve: u8,
    resolving: bool,
}

/// An address of name server `servers[ns]`.
#[derive(Clone, Copy)]
struct Addr {
    ns: u16,
    addr: SocketAddr,
}

struct Tried {
    addr: SocketAddr,
    tries: u8,
    dead: bool,
}

/// A zone cut given up, with what was learned there.
struct Abandoned {
    zone: NameBuf,
    /// Every address of its servers (all had failed, were used up or held down).
    dead: Vec<SocketAddr>,
    timeouts: u32,
    network_errors: u32,
    lame: u32,
    held: bool,
}

/// What was sent and is awaited.
struct Sent {
    server: SocketAddr,
    qname: NameBuf,
    qtype: RType,
}

/// Resolution of one (name, type): the client's, or a name server's address.
struct Frame {
    /// The name first asked (loop detection).
    origin: NameBuf,
    /// The name now being resolved (moves along CNAME/DNAME chains).
    qname: NameBuf,
    qtype: RType,
    /// In a sub-resolution: the parent's name server this resolves.
    parent_ns: usize,
    /// Answer records so far: the chain, then the final RRset.
    chain: Vec<Record>,
    /// CNAME/DNAME hops taken.
    hops: u8,
    state: State,
    outcome: Option<Outcome>,
    zone: NameBuf,
    forward: bool,
    servers: Vec<Ns>,
    /// The servers' addresses, in the order found.
    addrs: Vec<Addr>,
    tried: Vec<Tried>,
    /// Labels of the minimised QNAME, or 0 for the full name.
    qmin_labels: usize,
    qmin_steps: u8,
    timeouts: u32,
    network_errors: u32,
    lame: u32,
    /// An address was skipped as held down (unresponsive, see `servers`).
    held: bool,
    /// The cached cut this frame gave up on, so that the parent's referral back to it does
    /// not lead to the same servers again.
    abandoned: Option<Box<Abandoned>>,
    sent: Option<Sent>,
    /// The zone came from a cached NS RRset (not hints or configuration).
    from_cached_cut: bool,
    /// Only cached cuts with a shorter wire name than this are used.
    ceiling: usize,
}

/// A name in an inline buffer.
fn name_buf(name: NameRef<'_>) -> NameBuf {
    let mut b = NameBuf::new();
    b.set(name);
    b
}

impl Frame {
    fn new(qname: NameRef<'_>, qtype: RType, parent_ns: usize) -> Self {
        Self {
            origin: name_buf(qname),
            qname: name_buf(qname),
            qtype,
            parent_ns,
            chain: Vec::new(),
            hops: 0,
            state: State::Start,
            outcome: None,
            zone: NameBuf::new(),
            forward: false,
            servers: Vec::new(),
            addrs: Vec::new(),
            tried: Vec::new(),
            qmin_labels: 0,
            qmin_steps: 0,
            timeouts: 0,
            network_errors: 0,
            lame: 0,
            held: false,
            abandoned: None,
            sent: None,
            from_cached_cut: false,
            ceiling: usize::MAX,
        }
    }

    /// Makes this (spare) frame a new one, keeping its buffers.
    fn reset(&mut self, qname: NameRef<'_>, qtype: RType, parent_ns: usize) {
        self.origin.set(qname);
        self.qname.set(qname);
        self.qtype = qtype;
        self.parent_ns = parent_ns;
        self.chain.clear();
        self.hops = 0;
        self.state = State::Start;
        self.outcome = None;
        self.zone = NameBuf::new();
        self.forward = false;
        self.servers.clear();
        self.addrs.clear();
        self.tried.clear();
        self.qmin_labels = 0;
        self.qmin_steps = 0;
        self.timeouts = 0;
        self.network_errors = 0;
        self.lame = 0;
        self.held = false;
        self.abandoned = None;
        self.sent = None;
        self.from_cached_cut = false;
        self.ceiling = usize::MAX;
    }

    fn advance(&mut self, res: &Resolver, salt: u64, now: u64) -> Advance {
        loop {
            // The frame is done with once its outcome is taken.
            if let Some(o) = self.outcome.take() {
                return Advance::Done(o);
            }
            match self.state {
                State::Start => {
                    if let Err(ede) = self.try_cache(res, now) {
                        self.outcome = Some(Outcome::Fail(ede));
                        continue;
                    }
                    if self.outcome.is_none() && self.state == State::Start {
                        self.find_cut(res, now);
                        self.state = State::Select;
                    }
                }
                State::Select => {
                    self.skip_cached_qmin_steps(res, now);
                    if let Some(server) = self.pick(res, salt, now) {
                        let (qname, qtype) = self.next_question();
                        self.sent = Some(Sent {
                            server,
                            qname: qname.clone(),
                            qtype,
                        });
                        self.state = State::Waiting;
                        return Advance::Send(Request {
                            server,
                            qname,
                            qtype,
                            rd: self.forward,
                            zone: self.zone.clone(),
                        });
                    }
                    if let Some((i, t)) = self.unresolved_ns() {
                        self.servers[i].resolving = true;
                        return Advance::Need(i, t);
                    }
                    if self.from_cached_cut && !self.only_unreachable() {
                        // A cached cut whose servers were lame or had no address: the
                        // delegation may have changed, so try from the cut above. Servers
                        // that merely do not answer would not answer after the parent's
                        // referral either (and the hold-down already knows them).
                        self.abandoned = Some(Box::new(Abandoned {
                            zone: self.zone.clone(),
                            dead: self.addrs.iter().map(|a| a.addr).collect(),
                            timeouts: self.timeouts,
                            network_errors: self.network_errors,
                            lame: self.lame,
                            held: self.held,
                        }));
                        self.ceiling = self.zone.as_ref().len();
                        self.state = State::Start;
                        continue;
                    }
                    self.outcome = Some(Outcome::Fail(self.failure_ede()));
                }
                State::Waiting => {
                    // Not reached: the engine does not step a waiting task. Treat as lost.
                    self.state = State::Select;
                    self.sent = None;
                }
            }
        }
    }

    /// Answers from the cache where it can, following cached CNAMEs. Leaves `state` at
    /// `Start` (and no outcome) when iteration is needed for `qname`.
    fn try_cache(&mut self, res: &Resolver, now: u64) -> Result<(), Ede> {
        loop {
            match res
                .cache
                .lookup(self.qname.as_ref(), self.qtype, Rank::Answer, now)
            {
                Lookup::Miss => return Ok(()),
                Lookup::Positive(rrset) => {
                    self.chain.extend(rrset);
                    self.outcome = Some(Outcome::Answer);
                    return Ok(());
                }
                Lookup::NxDomain(soa) => {
                    self.outcome = Some(Outcome::NxDomain(soa));
                    return Ok(());
                }
                Lookup::NoData(soa) => {
                    self.outcome = Some(Outcome::NoData(soa));
                    return Ok(());
                }
                Lookup::Cname(recs) => {
                    let Some(target) = recs.last().and_then(|r| NameRef::from_wire(&r.rdata).ok())
                    else {
                        return Ok(());
                    };
                    self.hop(res, target)?;
                    self.chain.extend(recs);
                }
            }
        }
    }

    /// Moves along a CNAME/DNAME to `target`, enforcing the chain limit and loop check.
    fn hop(&mut self, res: &Resolver, target: NameRef<'_>) -> Result<(), Ede> {
        if self.hops >= res.config.max_chain {
            return Err(Ede::new(Ede::OTHER, "CNAME chain too long"));
        }
        let seen = target == self.origin.as_ref()
            || self
                .chain
                .iter()
                .any(|r| matches!(r.rtype, RType::CNAME) && r.owner.as_ref() == target);
        if seen || target == self.qname.as_ref() {
            return Err(Ede::new(Ede::OTHER, "CNAME loop"));
        }
        self.hops += 1;
        self.qname.set(target);
        Ok(())
    }

    /// Finds where to start: a forward zone, a cached zone cut, a stub zone, or the root
    /// hints, whichever is deepest (a configured forward zone always wins over the cache).
    /// Cached cuts at or above `ceiling` (set when a cached cut proved useless) are skipped.
    fn find_cut(&mut self, res: &Resolver, now: u64) {
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
    fn enter_cut(&mut self, zone: NameRef<'_>, res: &Resolver, now: u64) {
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
    fn add_addr(&mut self, i: usize, addr: SocketAddr) {
        let ns = i as u16;
        if !self.addrs.iter().any(|a| a.ns == ns && a.addr == addr) {
            self.addrs.push(Addr { ns, addr });
            self.servers[i].addrs += 1;
        }
    }

    /// Adds the addresses of `servers[i]` the cache holds (glue included).
    fn add_cached_addrs(&mut self, i: usize, res: &Resolver, now: u64) {
        let cfg = &res.config;
        let ns = i as u16;
        let addrs = &mut self.addrs;
        let mut found = 0;
        res.cache.visit(
            self.servers[i].name.as_ref(),
            &[RType::A, RType::AAAA],
            Rank::Additional,
            now,
            |t, _, rd| {
                if let Some(ip) = ip_of(t, rd) {
                    let addr = SocketAddr::new(ip, cfg.upstream_port);
                    if cfg.family_ok(&addr) {
                        addrs.push(Addr { ns, addr });
                        found += 1;
                    }
                }
            },
        );
        self.servers[i].addrs += found;
    }

    /// True if every failure in this zone was a server not answering (timeouts, network
    /// errors, hold-downs), none a wrong answer, and some server had an address.
    fn only_unreachable(&self) -> bool {
        self.lame == 0 && !self.addrs.is_empty()
    }

    /// Starts over at the (new) `qname`: cache first, then the closest cut.
    fn restart(&mut self) {
        self.state = State::Start;
        self.ceiling = usize::MAX;
    }

    fn start_qmin(&mut self, res: &Resolver) {
        self.qmin_steps = 0;
        self.qmin_labels = if res.config.qname_minimisation && !self.forward {
            self.zone.as_ref().label_count() + 1
        } else {
            0
        };
    }

    /// Takes the minimisation steps whose answers are cached already (another resolution
    /// asked them): a name that exists without a cut there needs no query to find that out
    /// again. Without this, names under a child zone served by its parent's own servers
    /// (the child's NODATA instead of a referral) cost one more query each.
    fn skip_cached_qmin_steps(&mut self, res: &Resolver, now: u64) {
        let total = self.qname.as_ref().label_count();
        while self.qmin_labels != 0 && self.qmin_labels < total {
            let name = self.qname.as_ref().suffix(self.qmin_labels);
            match res.cache.probe(name, RType::A, Rank::AuthAnswer, now) {
                Probe::Miss => return,
                Probe::Exists => self.qmin_step_done(res),
                // As for an NXDOMAIN answer to the minimised query.
                Probe::NxDomain => self.qmin_labels = 0,
            }
        }
    }

    /// A minimised question found the name existing without a cut: one label more, or the
    /// full name once the steps are used up.
    fn qmin_step_done(&mut self, res: &Resolver) {
        self.qmin_steps += 1;
        if self.qmin_steps >= res.config.qname_minimisation_steps {
            self.qmin_labels = 0;
        } else {
            self.qmin_labels += 1;
        }
    }

    /// The question to send: the minimised name (type A) or the full one.
    fn next_question(&self) -> (NameBuf, RType) {
        let total = self.qname.as_ref().label_count();
        if self.qmin_labels == 0 || self.qmin_labels >= total {
            return (self.qname.clone(), self.qtype);
        }
        (
            name_buf(self.qname.as_ref().suffix(self.qmin_labels)),
            RType::A,
        )
    }

    /// The best server address to try: fewest tries in this zone first, then lowest SRTT
    /// (unknown servers get a small pseudo-random SRTT, so they are tried early). Addresses
    /// held down as unresponsive are skipped; one whose hold-down expired is taken only if
    /// this query gets to be its probe.
    fn pick(&mut self, res: &Resolver, salt: u64, now: u64) -> Option<SocketAddr> {
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

    fn redirect(&mut self, asked: SocketAddr, server: SocketAddr) {
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
    fn unresolved_ns(&mut self) -> Option<(usize, RType)> {
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

    fn failure_ede(&self) -> Ede {
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

    fn answered(&mut self, server: SocketAddr) {
        if let Some(t) = self.tried.iter_mut().find(|t| t.addr == server) {
            t.tries = t.tries.saturating_sub(1);
        }
    }

    fn mark_dead(&mut self, server: SocketAddr) {
        match self.tried.iter_mut().find(|t| t.addr == server) {
            Some(t) => t.dead = true,
            None => self.tried.push(Tried {
                addr: server,
                tries: 1,
                dead: true,
            }),
        }
    }

    fn on_failure(&mut self, server: SocketAddr, why: Failure) {
        if self.state != State::Waiting {
            return;
        }
        self.sent = None;
        self.state = State::Select;
        match why {
            Failure::Timeout => self.timeouts += 1,
            Failure::Network => {
                self.network_errors += 1;
                self.mark_dead(server);
            }
        }
    }

    fn on_response(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        server: SocketAddr,
        msg: &Response,
        now: u64,
    ) -> Result<(), Ede> {
        if self.state != State::Waiting {
            return Ok(());
        }
        let Some(sent) = self.sent.take() else {
            return Ok(());
        };
        self.state = State::Select;
        let rcode = msg.rcode();
        if rcode != Rcode::NOERROR && rcode != Rcode::NXDOMAIN {
            self.lame += 1;
            self.mark_dead(server);
            return Ok(());
        }
        // The server answered: that try is not held against it. Without this, QNAME
        // minimisation (several questions to one zone's servers) used up a zone with a
        // single server address after `tries_per_server` answers.
        self.answered(server);
        if self.forward {
            return self.forward_response(res, msg, now);
        }
        if sent.qname.as_ref() != self.qname.as_ref() || sent.qtype != self.qtype {
            return self.minimised_response(res, budget, server, &sent, msg, now);
        }
        self.full_response(res, budget, server, msg, now)
    }

    /// A response to a minimised query (RFC 9156): a referral moves down; NXDOMAIN makes us
    /// ask the full name (relaxed mode, for servers that deny empty non-terminals); any
    /// other authoritative NOERROR means no cut here, so one more label is added.
    fn minimised_response(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        server: SocketAddr,
        sent: &Sent,
        msg: &Response,
        now: u64,
    ) -> Result<(), Ede> {
        if let Some(cut) = find_referral(msg, self.zone.as_ref(), sent.qname.as_ref()) {
            return self.take_referral(res, budget, msg, cut, now);
        }
        if msg.rcode() == Rcode::NXDOMAIN {
            self.qmin_labels = 0;
            return Ok(());
        }
        if !msg.header.aa() {
            self.lame += 1;
            self.mark_dead(server);
            return Ok(());
        }
        // The name exists in this zone: cache what answers the minimised question (the
        // RRset, or NODATA), so other resolutions skip this step.
        let rrset = msg
            .answers()
            .filter(|r| r.owner == sent.qname.as_ref() && r.rtype == sent.qtype);
        if rrset.clone().next().is_none() {
            if msg.answers_empty() {
                let soa = find_soa(msg, self.zone.as_ref(), sent.qname.as_ref());
                res.cache.insert_negative(
                    sent.qname.as_ref(),
                    Some(sent.qtype),
                    soa.map(Soa::from),
                    Rank::AuthAnswer,
                    now,
                );
            }
        } else {
            cache_rrset(res, rrset, Rank::AuthAnswer, now);
        }
        self.qmin_step_done(res);
        Ok(())
    }

    fn full_response(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        server: SocketAddr,
        msg: &Response,
        now: u64,
    ) -> Result<(), Ede> {
        let aa = msg.header.aa();
        let rank = if aa { Rank::AuthAnswer } else { Rank::Answer };
        let zone = self.zone.clone();
        let moved = self.follow_chain(res, msg, Some(zone.as_ref()), rank, now)?;
        if aa {
            // The zone's own NS RRset replaces the parent's referral copy.
            let apex_ns = msg
                .authority()
                .filter(|r| r.rtype == RType::NS && r.owner == zone.as_ref());
            cache_rrset(res, apex_ns, Rank::AuthAuthority, now);
        }
        if self.outcome.is_some() {
            return Ok(());
        }
        if !self.qname.as_ref().ends_with(&zone.as_ref()) {
            // The chain left this zone: resolve the target from its own closest cut.
            self.restart();
            return Ok(());
        }
        let soa = find_soa(msg, zone.as_ref(), self.qname.as_ref());
        if msg.rcode() == Rcode::NXDOMAIN {
            res.cache
                .insert_negative(self.qname.as_ref(), None, soa.map(Soa::from), rank, now);
            self.outcome = Some(Outcome::NxDomain(soa.map(Rr::to_record)));
            return Ok(());
        }
        if let Some(cut) = find_referral(msg, zone.as_ref(), self.qname.as_ref()) {
            return self.take_referral(res, budget, msg, cut, now);
        }
        if soa.is_some() || (aa && !moved) {
            res.cache.insert_negative(
                self.qname.as_ref(),
                Some(self.qtype),
                soa.map(Soa::from),
                rank,
                now,
            );
            self.outcome = Some(Outcome::NoData(soa.map(Rr::to_record)));
            return Ok(());
        }
        if moved {
            // The server gave the chain but not its end: ask for the target.
            self.restart();
            return Ok(());
        }
        self.lame += 1;
        self.mark_dead(server);
        Ok(())
    }

    /// A forwarder's answer: trusted for the whole chain, not only for its zone.
    fn forward_response(&mut self, res: &Resolver, msg: &Response, now: u64) -> Result<(), Ede> {
        let rank = if msg.header.aa() {
            Rank::AuthAnswer
        } else {
            Rank::Answer
        };
        let moved = self.follow_chain(res, msg, None, rank, now)?;
        if self.outcome.is_some() {
            return Ok(());
        }
        let soa = find_soa(msg, NameRef::ROOT, self.qname.as_ref());
        if msg.rcode() == Rcode::NXDOMAIN {
            res.cache
                .insert_negative(self.qname.as_ref(), None, soa.map(Soa::from), rank, now);
            self.outcome = Some(Outcome::NxDomain(soa.map(Rr::to_record)));
        } else if moved && soa.is_none() && !self.qname.as_ref().ends_with(&self.zone.as_ref()) {
            self.restart();
        } else {
            res.cache.insert_negative(
                self.qname.as_ref(),
                Some(self.qtype),
                soa.map(Soa::from),
                rank,
                now,
            );
            self.outcome = Some(Outcome::NoData(soa.map(Rr::to_record)));
        }
        Ok(())
    }

    /// Follows the answer section from `qname` through CNAMEs and DNAMEs to the RRset asked
    /// for, accepting only records inside `bailiwick` (all records when `None`). Caches what
    /// it accepts. Sets the outcome when the chain ends in the answer; returns whether the
    /// name moved.
    fn follow_chain(
        &mut self,
        res: &Resolver,
        msg: &Response,
        bailiwick: Option<NameRef<'_>>,
        rank: Rank,
        now: u64,
    ) -> Result<bool, Ede> {
        let inside = |n: NameRef<'_>| bailiwick.is_none_or(|z| n.ends_with(&z));
        let mut moved = false;
        loop {
            let name = self.qname.clone();
            if !inside(name.as_ref()) {
                return Ok(moved);
            }
            let name_ref = name.as_ref();
            // A DNAME above the name rewrites it (RFC 6672 §3). Nothing exists below a DNAME
            // (§2.4), so a CNAME at the name in the same answer is the synthesised one: the
            // DNAME is taken first, also for CNAME queries, so it is never lost.
            let dname = msg.answers().find(|r| {
                r.rtype == RType::DNAME
                    && self.qtype != RType::DNAME
                    && r.owner != name_ref
                    && name_ref.ends_with(&r.owner)
                    && inside(r.owner)
            });
            if let Some(d) = dname {
                let target = substitute(name_ref, &d)
                    .ok_or(Ede::new(Ede::OTHER, "DNAME substitution failed"))?;
                let ttl = d.ttl;
                self.hop(res, target.as_ref())?;
                res.cache
                    .insert_rrset(d.owner, RType::DNAME, rank, d.ttl, [d.rdata], now);
                res.cache.insert_synth(
                    name_ref,
                    (d.owner, d.rdata, d.ttl),
                    target.as_ref(),
                    rank,
                    now,
                );
                if !self.chain.iter().any(|r| d.is(r)) {
                    self.chain.push(d.to_record());
                }
                self.chain.push(Record {
                    owner: name_ref.to_name(),
                    rtype: RType::CNAME,
                    class: d.class,
                    ttl,
                    rdata: target.as_ref().as_wire().to_vec(),
                });
                moved = true;
                if self.qtype == RType::CNAME {
                    // The CNAME at the name is what was asked for: no restart at its target
                    // (RFC 1034 §3.6.2), as for a CNAME that is not synthesised.
                    self.outcome = Some(Outcome::Answer);
                    return Ok(moved);
                }
                continue;
            }
            let qtype = self.qtype;
            let rrset = msg.answers().filter(|r| {
                r.owner == name_ref
                    && (r.rtype == qtype || (qtype == RType::ANY && r.rtype != RType::CNAME))
            });
            if rrset.clone().next().is_some() {
                if qtype == RType::ANY {
                    for t in distinct_types(rrset.clone()) {
                        cache_rrset(res, rrset.clone().filter(|r| r.rtype == t), rank, now);
                    }
                } else {
                    cache_rrset(res, rrset.clone(), rank, now);
                }
                self.chain.extend(rrset.map(Rr::to_record));
                self.outcome = Some(Outcome::Answer);
                return Ok(moved);
            }
            if self.qtype == RType::CNAME {
                return Ok(moved);
            }
            let Some(c) = msg
                .answers()
                .find(|r| r.rtype == RType::CNAME && r.owner == name_ref)
            else {
                return Ok(moved);
            };
            let Ok(target) = NameRef::from_wire(c.rdata) else {
                return Ok(moved);
            };
            self.hop(res, target)?;
            cache_rrset(res, std::iter::once(c), rank, now);
            self.chain.push(c.to_record());
            moved = true;
        }
    }

    /// Follows a referral to `cut`: caches the NS RRset and the glue that lies inside the
    /// queried zone (glue outside it could be a poisoning attempt and is dropped), and moves
    /// this frame to the child zone.
    fn take_referral(
        &mut self,
        res: &Resolver,
        budget: &mut Budget,
        msg: &Response,
        cut: NameRef<'_>,
        now: u64,
    ) -> Result<(), Ede> {
        budget.referrals += 1;
        if budget.referrals > res.config.max_referrals {
            budget.exhausted = Some(Ede::new(Ede::OTHER, "too many referrals"));
            return Ok(());
        }
        let ns = msg
            .authority()
            .filter(|r| r.rtype == RType::NS && r.owner == cut);
        cache_rrset(res, ns.clone(), Rank::Referral, now);
        self.servers.clear();
        for r in ns {
            if let Ok(n) = NameRef::from_wire(r.rdata) {
                push_ns(&mut self.servers, n);
            }
        }
        let zone = self.zone.clone();
        let in_zone = |ns: &Ns| ns.name.as_ref().ends_with(&zone.as_ref());
        for t in [RType::A, RType::AAAA] {
            for ns in self.servers.iter().filter(|ns| in_zone(ns)) {
                let glue = msg
                    .additional()
                    .filter(|r| r.rtype == t && r.owner == ns.name.as_ref());
                cache_rrset(res, glue, Rank::Additional, now);
            }
        }
        self.enter_cut(cut, res, now);
        // Addresses come from the cache, where better data (an authoritative answer) wins
        // over this glue; the glue itself is used only if the cache kept nothing.
        for i in 0..self.servers.len() {
            if self.servers[i].addrs > 0 || !in_zone(&self.servers[i]) {
                continue;
            }
            for g in msg.additional() {
                if g.owner != self.servers[i].name.as_ref() {
                    continue;
                }
                if let Some(ip) = ip_of(g.rtype, g.rdata) {
                    let a = SocketAddr::new(ip, res.config.upstream_port);
                    if res.config.family_ok(&a) {
                        self.add_addr(i, a);
                    }
                }
            }
        }
        Ok(())
    }

    /// The client answer for this (bottom) frame.
    fn answer(&mut self, outcome: Outcome) -> Answer {
        let answers = core::mem::take(&mut self.chain);
        let (rcode, authority, ede) = match outcome {
            Outcome::Answer => (Rcode::NOERROR, Vec::new(), None),
            Outcome::NxDomain(soa) => (
                Rcode::NXDOMAIN,
                soa.into_iter().map(negative_soa).collect(),
                None,
            ),
            Outcome::NoData(soa) => (
                Rcode::NOERROR,
                soa.into_iter().map(negative_soa).collect(),
                None,
            ),
            Outcome::Fail(ede) => return Answer::servfail(ede),
        };
        Answer {
            rcode,
            answers,
            authority,
            ede,
        }
    }
}

/// The SOA of a negative answer, with the TTL the answer may be cached for (RFC 2308 §3).
fn negative_soa(mut soa: Record) -> Record {
    soa.ttl = negative_ttl(&soa);
    soa
}

/// A referral to a zone strictly below `zone` that contains `name`: the deepest NS owner.
fn find_referral<'m>(
    msg: &'m Response,
    zone: NameRef<'_>,
    name: NameRef<'_>,
) -> Option<NameRef<'m>> {
    msg.authority()
        .filter(|r| {
            r.rtype == RType::NS
                && r.owner.len() > zone.len()
                && r.owner.ends_with(&zone)
                && name.ends_with(&r.owner)
        })
        .max_by_key(|r| r.owner.len())
        .map(|r| r.owner)
}

/// The SOA in the authority section of a negative answer, if it belongs: its owner lies
/// inside `zone` and above (or at) `name`.
fn find_soa<'m>(msg: &'m Response, zone: NameRef<'_>, name: NameRef<'_>) -> Option<Rr<'m>> {
    msg.authority()
        .find(|r| r.rtype == RType::SOA && r.owner.ends_with(&zone) && name.ends_with(&r.owner))
}

/// RFC 6672 §2.2: replaces the DNAME owner suffix of `name` with the DNAME target.
fn substitute(name: NameRef<'_>, dname: &Rr<'_>) -> Option<NameBuf> {
    let target = rdata::target_name(RType::DNAME, dname.rdata)?;
    let prefix_len = name.len() - dname.owner.len();
    let mut buf = NameBuf::new();
    buf.set_concat(&name.as_wire()[..prefix_len], target).ok()?;
    Some(buf)
}

/// Caches the records of one RRset (same owner and type), with their lowest TTL.
fn cache_rrset<'m>(
    res: &Resolver,
    rrset: impl Iterator<Item = Rr<'m>> + Clone,
    rank: Rank,
    now: u64,
) {
    let Some(first) = rrset.clone().next() else {
        return;
    };
    let ttl = rrset.clone().map(|r| r.ttl).min().unwrap_or(0);
    res.cache.insert_rrset(
        first.owner,
        first.rtype,
        rank,
        ttl,
        rrset.map(|r| r.rdata),
        now,
    );
}

/// Adds a name server (once) to a zone's list, without addresses yet.
fn push_ns(servers: &mut Vec<Ns>, name: NameRef<'_>) {
    if !servers.iter().any(|s| s.name.as_ref() == name) {
        servers.push(Ns {
            name: name_buf(name),
            addrs: 0,
            to_resolve: 0,
            resolving: false,
        });
    }
}

fn distinct_types<'m>(rrs: impl Iterator<Item = Rr<'m>>) -> Vec<RType> {
    let mut v: Vec<RType> = rrs.map(|r| r.rtype).collect();
    v.sort();
    v.dedup();
    v
}

fn ip_of(rtype: RType, rdata: &[u8]) -> Option<IpAddr> {
    match rtype {
        RType::A => <[u8; 4]>::try_from(rdata).ok().map(IpAddr::from),
        RType::AAAA => <[u8; 16]>::try_from(rdata).ok().map(IpAddr::from),
        _ => None,
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
