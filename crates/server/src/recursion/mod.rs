//! recursion -- one worker's side of the resolver role: it drives that worker's
//! `shardns_resolver::Engine` with real sockets.
//!
//! Owns: the worker's [`Recursion`] (engine, pending client queries keyed by `TaskId`,
//! upstream sockets keyed by `QueryId`, the millisecond clock the engine sees). Shared
//! between workers: only the [`RecursionShared`] (the `Resolver` with its sharded cache, and
//! the ACL), in an `Arc`.
//!
//! The order for a client query: `dispatch` asks the zones first; only a query for a name
//! outside them (`Reply::NotOurs`) reaches [`Recursion::query`]. With local zones, access
//! rules or views configured (`resolver.local_zone` and the rest), `local` applies them
//! first: the query may be dropped, refused or answered from local data there. A query with
//! RD from an allowed client is answered from the cache straight into the
//! worker's output buffer (no allocation, one shard lock per name) or becomes a resolution;
//! its answer is delivered when the engine reports `Event::Done`. A worker keeps at most
//! `resolver.max_pending` client queries waiting; a cache miss beyond that is answered
//! SERVFAIL at once (and counted).
//! With response policy zones configured, `rpz` checks the query before the cache and
//! writes the policy's answer (a policy CNAME's target is then answered as a query);
//! `rpz_answer` checks a finished resolution's data (CNAME targets, addresses, servers).
//! The upstream sockets are `upstream`'s.
//! Never: blocking calls, `unsafe`, locks other than the cache's shard locks.

mod answer;
mod local;
pub(crate) mod rpz;
mod rpz_answer;
mod rpz_timers;
mod rpz_xfr;
mod upstream;

use answer::{finish, set_ad, write_answer};
pub(crate) use local::build as build_local;
use local::Step;
use rpz::{Policy, PolicyLog};
use upstream::Upstream;
pub(crate) use upstream::KIND_UPSTREAM;

use crate::dnstap::PolicyHit;
use crate::extras::{EdnsPolicy, Extras};
use crate::origin::Origin;
use crate::stats::WorkerStats;
use shardns_config::AclEntry;
use shardns_resolver::{
    client_response_limit, CacheAnswer, Ede, Engine, Event, QueryId, Resolver, TaskId, OPT_ROOM,
};
use shardns_sys::Epoll;
use shardns_wire::{Class, MessageWriter, Name, NameRef, Query, RType, Rcode, Record};
use shardns_zone::Written;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

/// Largest upstream response read.
const UPSTREAM_MAX: usize = 65535;
/// Datagrams read from one upstream socket per wake-up.
const UPSTREAM_ROUNDS: usize = 8;

/// What every worker's resolver side shares: the resolver (cache, config), the ACL and
/// the per-worker limits.
pub(crate) struct RecursionShared {
    pub(crate) resolver: Arc<Resolver>,
    /// The response policy zones (`None`: none configured at start).
    pub(crate) rpz: Option<rpz::Policies>,
    /// The NOTIFY inbox of the policy zones transferred from primaries, if any.
    pub(crate) rpz_xfr: Option<Arc<rpz_xfr::XfrInbox>>,
    pub(crate) allow: Vec<AclEntry>,
    /// Client queries waiting for a resolution, per worker (`resolver.max_pending`).
    pub(crate) max_pending: usize,
    /// Largest UDP response to a client (`limits.udp_max_response`).
    pub(crate) udp_max: usize,
}

impl RecursionShared {
    fn allowed(&self, ip: IpAddr) -> bool {
        // A handful of configured prefixes: a scan is cheapest.
        self.allow.iter().any(|a| a.contains(ip))
    }
}

/// The resolver role every worker shares (`[resolver] recursion = true`), else `None`:
/// the resolver's configuration (policy zones read), the ACL and the per-worker limits.
pub(crate) fn shared(
    config: &shardns_config::Config,
    setup: &shardns_control::Setup,
) -> Result<Option<Arc<RecursionShared>>, crate::Error> {
    if !config.resolver.recursion {
        return Ok(None);
    }
    let rc = crate::resolver_config(config, setup)?;
    let rpz = rpz::load(&config.resolver.rpz)?;
    tracing::info!(
        "recursion on: {} root servers, {} forward zones, {} ACL entries, {} policy zones",
        rc.hints.servers.len(),
        rc.forward_zones.len(),
        config.resolver.allow.len(),
        config.resolver.rpz.len()
    );
    let shared = Arc::new(RecursionShared {
        resolver: Arc::new(Resolver::new(rc)),
        rpz,
        rpz_xfr: rpz_xfr::inbox(&config.resolver.rpz, &config.keys),
        allow: config.resolver.allow.clone(),
        max_pending: config.resolver.max_pending,
        udp_max: config.limits.udp_max_response,
    });
    rpz_xfr::start(&shared).map_err(crate::io_error("starting the policy zone transfer thread"))?;
    Ok(Some(shared))
}

/// What [`Recursion::query`] did with a query for a name outside our zones.
pub(crate) enum Handling {
    /// Not for recursion (no RD, client not allowed, not class IN, a `refuse` local zone):
    /// refuse it.
    Refused,
    /// Answered from the cache: the response is in the output buffer.
    Written(Written),
    /// Resolving; the answer follows later.
    Pending,
    /// Send nothing (client access `deny`, a `deny` local zone, a response policy's
    /// DROP).
    Dropped,
}

/// A client waiting for a resolution.
struct Pending {
    /// Where the query came from: where its answer goes.
    origin: Origin,
    /// The response policy that changed the answer, for dnstap.
    hit: Option<PolicyHit>,
    id: u16,
    rd: bool,
    cd: bool,
    qname: Name,
    qtype: RType,
    /// The client's EDNS: (UDP payload size, DO bit).
    edns: Option<(u16, bool)>,
    /// The client set DO or AD: a secure answer gets AD (RFC 6840 §5.8).
    wants_ad: bool,
    /// The EDNS options its answer carries (NSID, cookie, padding).
    extras: Extras,
    /// A response policy's rewrite: the records the answer starts with (a CNAME chain
    /// ending in the policy's CNAME), whose last target is what is being resolved.
    rewrite: Option<Vec<Record>>,
}

/// One worker's resolver driver.
pub(crate) struct Recursion {
    shared: Arc<RecursionShared>,
    engine: Engine,
    base: Instant,
    pending: HashMap<TaskId, Pending>,
    upstreams: Vec<Option<Upstream>>,
    free: Vec<u32>,
    by_query: HashMap<QueryId, u32>,
    next_generation: u32,
    read_buf: Box<[u8]>,
    write_buf: Box<[u8]>,
    /// DNSSEC validation is on (the `shardns_dnssec_*` counters count).
    validating: bool,
    bogus_log: BogusLog,
    policy_log: PolicyLog,
    /// The last query's response policy hit, for dnstap ([`Recursion::take_hit`]).
    tap_hit: Option<PolicyHit>,
}

/// Seconds during which a bogus (name, EDE code) is logged once.
const BOGUS_LOG_INTERVAL_MS: u64 = 60_000;
/// Most bogus answers logged per worker per interval; the rest are counted, and the count
/// is logged when the interval ends.
const BOGUS_LOG_MAX: usize = 64;

/// Logs bogus answers: once per (name, EDE code) per interval and worker, at most
/// [`BOGUS_LOG_MAX`] lines per interval, so that a broken zone queried hard cannot flood
/// the log.
#[derive(Default)]
struct BogusLog {
    since_ms: u64,
    seen: std::collections::HashSet<(Name, u16)>,
    suppressed: u64,
}

impl BogusLog {
    fn note(&mut self, qname: &Name, qtype: RType, ede: Option<&Ede>, now_ms: u64) {
        if now_ms.saturating_sub(self.since_ms) >= BOGUS_LOG_INTERVAL_MS {
            if self.suppressed > 0 {
                tracing::warn!(
                    "DNSSEC: {} more bogus answers in the last {} s not logged",
                    self.suppressed,
                    BOGUS_LOG_INTERVAL_MS / 1000
                );
            }
            self.since_ms = now_ms;
            self.seen.clear();
            self.suppressed = 0;
        }
        let code = ede.map_or(Ede::DNSSEC_BOGUS, |e| e.code);
        let key = (qname.clone(), code);
        if self.seen.contains(&key) {
            return;
        }
        if self.seen.len() >= BOGUS_LOG_MAX {
            self.suppressed += 1;
            return;
        }
        tracing::warn!(
            "DNSSEC: bogus answer for {} {}: EDE {} ({}); SERVFAIL for {} s",
            qname,
            qtype,
            code,
            ede.map_or("DNSSEC bogus", |e| e.text),
            BOGUS_LOG_INTERVAL_MS / 1000
        );
        self.seen.insert(key);
    }
}

/// Whether a SERVFAIL with EDE `code` is a DNSSEC verdict (bogus), RFC 8914 codes 1-12.
fn dnssec_ede(code: Option<u16>) -> bool {
    code.is_some_and(|c| (Ede::UNSUPPORTED_DNSKEY_ALGORITHM..=Ede::NSEC_MISSING).contains(&c))
}

/// The cache-hit path; on a miss, in the question's failure-recheck window, its stale
/// answer written the same way (RFC 8767, EDE 3): not a resolution that would only do that.
fn cache_or_stale(
    resolver: &Resolver,
    name: NameRef<'_>,
    qtype: RType,
    clock: u64,
    (cd, dnssec_ok): (bool, bool),
    w: &mut MessageWriter<'_>,
) -> CacheAnswer {
    match resolver
        .cache()
        .answer_query(name, qtype, clock, cd, dnssec_ok, w)
    {
        CacheAnswer::Miss { locks } => resolver
            .answer_stale(name, qtype, clock, (cd, dnssec_ok), w)
            .plus_locks(locks),
        hit => hit,
    }
}

/// True for a stale answer's EDE (RFC 8767, RFC 8914: stale answer, stale NXDOMAIN).
fn stale(ede: Option<&Ede>) -> bool {
    ede.is_some_and(|e| e.code == Ede::STALE_ANSWER || e.code == Ede::STALE_NXDOMAIN)
}

/// Counts one answer's DNSSEC verdict (validation on, CD clear).
fn count_verdict(stats: &WorkerStats, rcode: Rcode, secure: bool, ede: Option<u16>) {
    if secure {
        stats.dnssec_secure.add(1);
    } else if rcode == Rcode::SERVFAIL && dnssec_ede(ede) {
        stats.dnssec_bogus.add(1);
    } else {
        stats.dnssec_insecure.add(1);
    }
}

/// Hands a finished answer to its client's way out: its origin, the response's summary, its
/// question's name and the frame (the response from octet 2 on, `Written::len` octets;
/// octets 0-1 are for the TCP length prefix, written by the taker).
pub(crate) type Deliver<'a> =
    &'a mut dyn FnMut(Origin, Written, &Name, Option<&PolicyHit>, &mut [u8]);

impl Recursion {
    pub(crate) fn new(shared: Arc<RecursionShared>, seed: [u8; 32], base: Instant) -> Self {
        let mut engine = Engine::new(Arc::clone(&shared.resolver), seed);
        // DNSSEC signature validity is judged against the wall clock as it reads when a
        // resolution is validated, not as it read at start: NTP may step a bad boot clock.
        engine.set_wall_clock(Box::new(shardns_sys::unix_now_ms));
        let validating = shared.resolver.config().validation;
        Self {
            validating,
            bogus_log: BogusLog::default(),
            policy_log: PolicyLog::default(),
            tap_hit: None,
            shared,
            engine,
            base,
            pending: HashMap::new(),
            upstreams: Vec::new(),
            free: Vec::new(),
            by_query: HashMap::new(),
            next_generation: 0,
            read_buf: vec![0; UPSTREAM_MAX].into_boxed_slice(),
            write_buf: vec![0; 2 + 65535].into_boxed_slice(),
        }
    }

    /// The engine's clock: milliseconds since the worker started.
    pub(crate) fn clock(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.base).as_millis() as u64
    }

    /// Milliseconds until the engine's next timer (None: no timer).
    pub(crate) fn timeout_ms(&mut self, now: Instant) -> Option<u64> {
        let at = self.engine.poll_timeout()?;
        Some(at.saturating_sub(self.clock(now)))
    }

    /// Handles a query for a name outside our zones (`shardns_zone::Reply::NotOurs`: a
    /// QUERY with a supported EDNS version and question type), from `origin` (its peer
    /// checked against the ACL; kept for a later answer). `out` is the response buffer (its length bounds a TCP answer; a
    /// UDP answer stays within the client's EDNS size).
    pub(crate) fn query(
        &mut self,
        query: &Query<'_>,
        origin: Origin,
        out: &mut [u8],
        now: Instant,
        stats: &WorkerStats,
        extras: Extras,
    ) -> Handling {
        let qtype = query.qtype();
        let qname = query.qname();
        if query.qclass() != Class::IN {
            return Handling::Refused;
        }
        let mut qh = *query.header();
        let edns = query.edns().map(|e| (e.udp_size, e.dnssec_ok));
        let dnssec_ok = edns.is_some_and(|(_, dnssec_ok)| dnssec_ok);
        let wants_ad = qh.ad() || dnssec_ok;
        let limit = client_response_limit(origin.is_stream(), edns, out.len());
        let clock = self.clock(now);
        // Every answer goes straight into the output buffer.
        let mut w = MessageWriter::new(out, limit);
        let _ = w.put_question(qname, qtype, Class::IN);
        let after_question = w.checkpoint();
        if edns.is_some() {
            w.set_limit(limit.saturating_sub(OPT_ROOM));
        }
        let snoop = match self
            .shared
            .admit(origin.peer, qh.rd(), qname, qtype, &mut w, stats)
        {
            Step::Go { rd, snoop } => {
                qh.set_rd(rd);
                snoop
            }
            Step::Refuse => return Handling::Refused,
            Step::Drop => return Handling::Dropped,
            Step::Answered {
                rcode,
                truncated,
                aa,
            } => {
                let done = answer::early(w, after_question, &qh, (rcode, truncated), limit, edns);
                // Local data is ours: authoritative, as Unbound marks it.
                out[2] |= u8::from(aa) << 2;
                return Handling::Written(answer::written(done, rcode, qtype, truncated));
            }
        };
        let qh = &qh;
        // Response policy zones, when configured: before the cache (one branch when not).
        let (mut rewrite, mut by_address) = (None, false);
        if self.shared.rpz.is_some() {
            let (client, q) = (origin.peer.map(|p| p.ip()), (qname, qtype));
            let (policy, check_answer) = self.policy(q, client, origin.is_stream(), &mut w, clock);
            by_address = check_answer;
            match policy {
                Policy::None => {}
                Policy::Drop => return Handling::Dropped,
                Policy::Answer(rcode, truncated) => {
                    let done =
                        answer::early(w, after_question, qh, (rcode, truncated), limit, edns);
                    return Handling::Written(answer::written(done, rcode, qtype, truncated));
                }
                Policy::Cname(target, ttl) => rewrite = Some((target, ttl)),
            }
        }
        // A policy's CNAME target is what the cache and the engine answer.
        let name = rewrite.as_ref().map_or(qname, |(t, _)| t.as_ref());
        let resolver = &self.shared.resolver;
        let rd = query.header().rd();
        let ask = resolver.ask(origin.peer.map(|p| p.ip()), rd, qh.cd(), dnssec_ok);
        let cached = if resolver.dns64_owns(qtype, ask.dns64) || by_address {
            // DNS64 may synthesize, a policy may rewrite by address: the engine answers
            // (from the cache where it can).
            CacheAnswer::Miss { locks: 0 }
        } else {
            cache_or_stale(resolver, name, qtype, clock, (qh.cd(), dnssec_ok), &mut w)
        };
        let cached = self.recheck(cached, qtype, rewrite.is_some(), &mut w, after_question);
        match cached {
            CacheAnswer::Hit {
                rcode,
                truncated,
                locks,
                secure,
                ede,
                prefetch,
            } => {
                self.hit(stats, (qname, qtype), prefetch, ede.as_ref(), clock);
                if self.validating && !qh.cd() {
                    count_verdict(stats, rcode, secure, ede.as_ref().map(|e| e.code));
                }
                stats.resolver_cache_locks.add(u64::from(locks));
                stats.request_locks.add(u64::from(locks));
                if truncated {
                    w.rollback(after_question);
                }
                let (len, opt) = finish(w, qh, rcode, truncated, limit, edns, ede.as_ref());
                // A policy's rewrite is not the zone owner's data: no AD.
                if secure && wants_ad && rewrite.is_none() {
                    set_ad(out);
                }
                Handling::Written(Written {
                    len,
                    rcode,
                    qtype: Some(qtype),
                    truncated,
                    wildcard: None,
                    opt,
                })
            }
            CacheAnswer::Miss { locks } => {
                stats.resolver_cache_misses.add(1);
                stats.request_locks.add(u64::from(locks));
                // A non-recursive query (allow_snoop) is answered from the cache only.
                if snoop || self.pending.len() >= self.shared.max_pending {
                    // Overloaded: fail fast rather than queue without bound.
                    stats.resolver_pending_limited.add(u64::from(!snoop));
                    w.rollback(after_question);
                    let (len, opt) = finish(w, qh, Rcode::SERVFAIL, false, limit, edns, None);
                    return Handling::Written(answer::written(
                        (len, opt),
                        Rcode::SERVFAIL,
                        qtype,
                        false,
                    ));
                }
                let task = self.engine.resolve_for(name, qtype, ask, clock);
                self.pending.insert(
                    task,
                    Pending {
                        origin,
                        id: qh.id,
                        rd: qh.rd(),
                        cd: qh.cd(),
                        qname: qname.to_name(),
                        qtype,
                        edns,
                        wants_ad,
                        extras,
                        rewrite: rewrite
                            .map(|(t, ttl)| vec![rpz_answer::cname(qname, t.as_ref(), ttl)]),
                        hit: self.tap_hit.take(),
                    },
                );
                Handling::Pending
            }
        }
    }

    /// A cache hit counted (a stale one too), and its name refreshed when it is popular and
    /// about to expire (prefetch: the client gets the cached answer, the refresh has none).
    fn hit(
        &mut self,
        stats: &WorkerStats,
        (qname, qtype): (NameRef<'_>, RType),
        prefetch: bool,
        ede: Option<&Ede>,
        clock: u64,
    ) {
        stats.resolver_cache_hits.add(1);
        stats.resolver_stale.add(u64::from(stale(ede)));
        if prefetch {
            stats.resolver_prefetches.add(1);
            self.engine.prefetch(qname, qtype, clock);
        }
    }

    /// Fires due timers, then acts on every event the engine has: sends upstream queries,
    /// closes their sockets, and hands finished answers to `deliver` (with the EDNS options
    /// `policy` gives the ones whose queries asked for them), which sends them the way every
    /// answer leaves (`dispatch::Exit::send`: statistics, RRL over UDP, query log, dnstap).
    pub(crate) fn drive(
        &mut self,
        now: Instant,
        epoll: &Epoll,
        stats: &WorkerStats,
        policy: &EdnsPolicy,
        deliver: Deliver<'_>,
    ) {
        let clock = self.clock(now);
        self.engine.handle_timeout(clock);
        // Bounded by the engine's per-resolution query limits; the cap is a safety net.
        for _ in 0..1_000_000 {
            let Some(ev) = self.engine.poll() else { break };
            match ev {
                Event::Transmit(t) => {
                    stats.resolver_upstream_queries.add(1);
                    if self
                        .open_upstream(t.query, t.server, t.tcp, t.source_port, t.payload(), epoll)
                        .is_err()
                    {
                        self.engine.handle_send_error(t.query, clock);
                    }
                }
                Event::Close(q) => {
                    if let Some(slot) = self.by_query.remove(&q) {
                        // Dropping the socket closes it and takes it out of the epoll set.
                        self.upstreams[slot as usize] = None;
                        self.free.push(slot);
                    }
                }
                Event::Done(task, answer) => {
                    let Some(p) = self.pending.remove(&task) else {
                        continue;
                    };
                    // IP-answer policies: the answer may be replaced, dropped or redirected.
                    let Some((p, answer, tc)) = self.answer_policy(p, answer, clock) else {
                        continue;
                    };
                    if answer.rcode == Rcode::SERVFAIL {
                        stats.resolver_servfails.add(1);
                    }
                    stats
                        .resolver_stale
                        .add(u64::from(stale(answer.ede.as_ref())));
                    if self.validating && !p.cd {
                        let code = answer.ede.as_ref().map(|e| e.code);
                        count_verdict(stats, answer.rcode, answer.secure, code);
                        if answer.rcode == Rcode::SERVFAIL && dnssec_ede(code) {
                            self.bogus_log
                                .note(&p.qname, p.qtype, answer.ede.as_ref(), clock);
                        }
                    }
                    let tcp = p.origin.is_stream();
                    let end = if tcp {
                        self.write_buf.len()
                    } else {
                        (2 + self.shared.udp_max).min(self.write_buf.len())
                    };
                    let buf = &mut self.write_buf[2..end];
                    let w = write_answer(buf, &p, &answer, (tcp, tc), policy);
                    deliver(
                        p.origin,
                        w,
                        &p.qname,
                        p.hit.as_ref(),
                        &mut self.write_buf[..],
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
