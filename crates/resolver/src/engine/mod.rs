//! One worker's resolutions: tasks, timers, events, and the checks on responses.
//!
//! Owns: [`Engine`] (one per worker, never shared) and what the driver sees of it
//! ([`Event`], [`Transmit`], [`TaskId`], [`QueryId`], [`EngineStats`]), the task table, the
//! timer heap, and the checks a response must pass before any task sees it (source address
//! and port, ID, QR, opcode, question). It keeps one response buffer and the tasks of
//! finished resolutions for reuse, so that a warm engine allocates little per resolution
//! (`tests/miss_alloc.rs` bounds it). It also handles what is per query rather than per
//! task: TC (re-send over TCP) and EDNS fallback (FORMERR/NOTIMP without OPT to an EDNS
//! query: re-send without EDNS, remember the server). The outstanding upstream queries
//! themselves are in `upstream`.
//! Never: sockets, threads, clocks of its own; the driver moves bytes and time in and out
//! (the monotonic `now` of every call, and the wall clock for signature validity, as a
//! time or as a clock to read: [`Engine::set_unix_time`], [`Engine::set_wall_clock`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shardns_wire::{Class, Header, NameRef, Opcode, RType, Rcode};

use crate::iterate::{Failure, Step, Task};
use crate::msg::Response;
use crate::reply::{Ede, Resolution};
use crate::Resolver;

mod dns64;
pub use dns64::Ask;
mod finish;
mod stale;
mod upstream;

use upstream::{CoalesceKey, OutstandingQuery};

/// Room for the largest upstream query: header, a 255-octet name, type, class, and OPT.
const QUERY_BUF: usize = 12 + 255 + 4 + 11;
/// Finished tasks kept for reuse (their buffers stay allocated).
const SPARE_TASKS: usize = 64;

/// Identifies a client query's resolution within its [`Engine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskId {
    index: u32,
    generation: u32,
}

/// Identifies one upstream query within its [`Engine`]; the driver maps it to the socket
/// it sent the query from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueryId {
    index: u32,
    generation: u32,
}

/// A query to send upstream.
#[derive(Clone)]
pub struct Transmit {
    /// Hand this back with the response ([`Engine::handle_response`]).
    pub query: QueryId,
    /// Where to send it; only a response from exactly this address and port is accepted.
    pub server: SocketAddr,
    /// Send over TCP (the server truncated the UDP answer); prefix the 2-octet length.
    pub tcp: bool,
    /// A random source port to bind a fresh socket to (over UDP). If it is taken, let the
    /// kernel pick (port 0); never reuse one socket for two upstream queries.
    pub source_port: u16,
    /// The random DNS message ID chosen for this query.
    pub id: u16,
    len: u16,
    buf: [u8; QUERY_BUF],
}

impl Transmit {
    /// The DNS message to send (without the TCP length prefix).
    pub fn payload(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

impl core::fmt::Debug for Transmit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Transmit")
            .field("query", &self.query)
            .field("server", &self.server)
            .field("tcp", &self.tcp)
            .field("id", &self.id)
            .field("len", &self.len)
            .finish()
    }
}

/// Something the driver must act on; drain with [`Engine::poll`].
// A `Transmit` carries its query inline (no allocation per upstream query); events are
// few and short-lived, so the size difference costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Event {
    /// Send a query.
    Transmit(Transmit),
    /// The query is finished (answered, timed out, failed or abandoned): close its socket
    /// and forget the [`QueryId`]; later datagrams for it are ignored anyway.
    Close(QueryId),
    /// A resolution is over: answer the client.
    Done(TaskId, Resolution),
}

/// Counters of one engine (one worker); the server sums them across workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineStats {
    /// Resolutions started.
    pub tasks: u64,
    /// OutstandingQuery queries sent (re-sends over TCP or without EDNS included).
    pub queries_sent: u64,
    /// Queries a task wanted that joined an identical outstanding query instead.
    pub coalesced: u64,
    /// Responses with the wrong source, ID or question, or unparseable UDP responses.
    pub rejected: u64,
    /// OutstandingQuery queries that timed out.
    pub timeouts: u64,
    /// Truncated UDP answers re-asked over TCP.
    pub tcp_retries: u64,
    /// Queries re-sent without EDNS.
    pub edns_fallbacks: u64,
    /// Resolutions that ended in SERVFAIL.
    pub servfails: u64,
    /// DNSSEC signature checks made (all resolutions).
    pub signature_checks: u64,
    /// Resolutions whose answer was validated secure.
    pub secure: u64,
    /// Resolutions whose answer was bogus (SERVFAIL with a DNSSEC EDE).
    pub bogus: u64,
    /// Clients answered from expired data (serve-stale, RFC 8767).
    pub stale_answers: u64,
    /// Background refreshes started (prefetch).
    pub prefetches: u64,
}

struct TaskSlot {
    generation: u32,
    task: Task,
    waiting: Option<QueryId>,
    /// The client has its answer already (stale, or none wanted: a prefetch); the task
    /// goes on only to refresh the cache, and ends without [`Event::Done`].
    answered: bool,
    /// The client set CD.
    cd: bool,
    /// The client gets DNS64 ([`Ask::dns64`]).
    dns64: bool,
    /// The client set DO.
    dnssec_ok: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKind {
    Query,
    Task,
    /// Serve-stale's client-response timer (RFC 8767 §5).
    Stale,
}

/// One worker's resolution engine. See the crate documentation for the driver loop.
pub struct Engine {
    resolver: Arc<Resolver>,
    rng: StdRng,
    tasks: Vec<Option<TaskSlot>>,
    free_tasks: Vec<u32>,
    /// Finished tasks, reset and reused by the next resolutions.
    spare_tasks: Vec<Task>,
    queries: Vec<Option<OutstandingQuery>>,
    free_queries: Vec<u32>,
    next_generation: u32,
    inflight: HashMap<CoalesceKey, QueryId>,
    timers: BinaryHeap<Reverse<(u64, TimerKind, u32, u32)>>,
    events: VecDeque<Event>,
    stats: EngineStats,
    /// Reused for every response (see `msg`).
    response: Response,
    /// Unix time in milliseconds at the engine's clock 0 (for RRSIG validity), once known.
    unix_offset_ms: Option<i64>,
    /// Where the wall clock is read when a validating task steps, if the driver gave one.
    wall_clock: Option<WallClock>,
    /// DNS64 follow-up tasks and the client tasks they complete.
    dns64: HashMap<TaskId, dns64::Waiting>,
}

/// Reads the wall clock: milliseconds since 1970 (the driver's `SystemTime::now`, or a test's
/// clock). See [`Engine::set_wall_clock`].
pub type WallClock = Box<dyn Fn() -> u64 + Send>;

/// A change of the wall clock against the engine's clock larger than this is a step (NTP
/// correcting a bad clock, a resume from suspend), not drift.
const CLOCK_STEP_MS: u64 = 60_000;

impl Engine {
    /// An engine for one worker. `seed` must be secret and unpredictable (e.g. from
    /// `getrandom` in the driver): query IDs and source ports come from it.
    pub fn new(resolver: Arc<Resolver>, seed: [u8; 32]) -> Self {
        Self {
            resolver,
            rng: StdRng::from_seed(seed),
            tasks: Vec::new(),
            free_tasks: Vec::new(),
            spare_tasks: Vec::new(),
            queries: Vec::new(),
            free_queries: Vec::new(),
            next_generation: 0,
            inflight: HashMap::new(),
            timers: BinaryHeap::new(),
            events: VecDeque::new(),
            stats: EngineStats::default(),
            response: Response::default(),
            unix_offset_ms: None,
            wall_clock: None,
            dns64: HashMap::new(),
        }
    }

    /// Tells the engine the wall-clock time: `unix_ms` (milliseconds since 1970) is `now`
    /// on the driver's clock. DNSSEC validation checks signature validity against it (the
    /// engine's clock counting on from there) unless a wall clock is given
    /// ([`Engine::set_wall_clock`]). A time that moved more than a minute against the
    /// engine's clock since it was last told is a step: the bogus verdicts judged against
    /// the old time are forgotten (for every engine of the resolver).
    pub fn set_unix_time(&mut self, now: u64, unix_ms: u64) {
        let offset = (unix_ms as i64).wrapping_sub(now as i64);
        if let Some(old) = self.unix_offset_ms {
            if old.abs_diff(offset) > CLOCK_STEP_MS {
                self.resolver.forget_clock_verdicts();
            }
        }
        self.unix_offset_ms = Some(offset);
    }

    /// Gives the engine the wall clock itself: it is read each time a validating task
    /// steps, so that signatures are judged against the time of validation, and a step
    /// (an NTP correction of a bad boot clock) is seen at once (as by
    /// [`Engine::set_unix_time`]). A server passes `SystemTime::now`; tests a fake clock.
    pub fn set_wall_clock(&mut self, clock: WallClock) {
        self.wall_clock = Some(clock);
    }

    /// The unix time (seconds) for validation at `now` on the engine's clock.
    fn unix_now(&mut self, now: u64) -> u32 {
        if !self.resolver.config.validation {
            return 0;
        }
        if let Some(clock) = &self.wall_clock {
            let wall = clock();
            self.set_unix_time(now, wall);
        }
        let ms = self
            .unix_offset_ms
            .unwrap_or(0)
            .wrapping_add(now as i64)
            .max(0);
        // RRSIG times are seconds modulo 2^32 (RFC 4034 §3.1.5): the truncation is meant.
        (ms / 1000) as u32
    }

    /// The shared resolver (cache, configuration).
    pub fn resolver(&self) -> &Arc<Resolver> {
        &self.resolver
    }

    /// Starts resolving (`qname`, `qtype`, class IN). The answer comes as
    /// [`Event::Done`] — possibly at once, if the cache can answer. With validation on
    /// ([`crate::Config::validation`]) the answer is validated.
    pub fn resolve(&mut self, qname: NameRef<'_>, qtype: RType, now: u64) -> TaskId {
        self.resolve_cd(qname, qtype, false, now)
    }

    /// [`Engine::resolve`] for a client query whose CD bit is `cd`: with CD set nothing is
    /// validated (RFC 4035 §3.2.2) and the data is returned as it came.
    /// DNS64 applies if it is on (every client, as the configuration's client list is not
    /// checked here: [`Engine::resolve_for`] is for that).
    pub fn resolve_cd(&mut self, qname: NameRef<'_>, qtype: RType, cd: bool, now: u64) -> TaskId {
        let dns64 = self.resolver.config.dns64;
        let ask = Ask {
            cd,
            dnssec_ok: false,
            dns64,
        };
        self.resolve_for(qname, qtype, ask, now)
    }

    /// [`Engine::resolve`] for a client query with its flags and whether DNS64 applies.
    pub fn resolve_for(&mut self, qname: NameRef<'_>, qtype: RType, ask: Ask, now: u64) -> TaskId {
        let id = self.start(qname, qtype, ask.cd, now);
        if let Some(slot) = self.task_mut(id) {
            slot.dns64 = ask.dns64;
            slot.dnssec_ok = ask.dnssec_ok;
        }
        if ask.dns64 && self.dns64_start(id, ask.cd, now) {
            return id;
        }
        if self.resolver.config.serve_stale && self.stale_instead(id, now) {
            return id;
        }
        self.run(id, now);
        id
    }

    /// Makes a task (not run yet) with its deadline.
    fn start(&mut self, qname: NameRef<'_>, qtype: RType, cd: bool, now: u64) -> TaskId {
        self.stats.tasks += 1;
        let generation = self.generation();
        let salt = self.rng.next_u64();
        let validate = self.resolver.config.validation && !cd;
        let task = match self.spare_tasks.pop() {
            Some(mut task) => {
                task.reset(qname, qtype, salt, validate);
                task
            }
            None => Task::new(qname, qtype, salt, validate),
        };
        let slot = TaskSlot {
            generation,
            task,
            waiting: None,
            answered: false,
            cd,
            dns64: false,
            dnssec_ok: false,
        };
        let index = match self.free_tasks.pop() {
            Some(i) => {
                self.tasks[i as usize] = Some(slot);
                i
            }
            None => {
                self.tasks.push(Some(slot));
                (self.tasks.len() - 1) as u32
            }
        };
        let id = TaskId { index, generation };
        let deadline = now + self.resolver.config.max_resolution_ms;
        self.timers
            .push(Reverse((deadline, TimerKind::Task, index, generation)));
        id
    }

    /// The next thing the driver must do, if any.
    pub fn poll(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`Engine::handle_timeout`] must next be called.
    pub fn poll_timeout(&mut self) -> Option<u64> {
        while let Some(&Reverse((at, kind, index, generation))) = self.timers.peek() {
            if self.timer_live(kind, index, generation) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }

    /// Fires every timer due at `now`: query timeouts (the task tries another server) and
    /// resolution deadlines (SERVFAIL).
    pub fn handle_timeout(&mut self, now: u64) {
        while let Some(&Reverse((at, kind, index, generation))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if !self.timer_live(kind, index, generation) {
                continue;
            }
            match kind {
                TimerKind::Query => {
                    let q = QueryId { index, generation };
                    self.stats.timeouts += 1;
                    if let Some(up) = self.finish_query(q) {
                        self.resolver
                            .servers
                            .record_timeout(up.server, up.timeout, up.sent_at, now);
                        self.fail_waiters(q, &up, Failure::Timeout, now);
                    }
                }
                TimerKind::Task => {
                    let id = TaskId { index, generation };
                    self.finish_task(
                        id,
                        Resolution::servfail(Ede::new(
                            Ede::NO_REACHABLE_AUTHORITY,
                            "resolution timed out",
                        )),
                        now,
                    );
                }
                TimerKind::Stale => self.client_timeout(TaskId { index, generation }, now),
            }
        }
    }

    /// A datagram (or TCP message, without its length prefix) arrived on the socket of
    /// `query`, from `from`. Responses that do not match the query are ignored, and the
    /// query stays outstanding. Returns false for such a rejected response (counted in
    /// [`EngineStats::rejected`]), so the caller reads on for the real one; true when the
    /// response was taken, or its query was already over.
    pub fn handle_response(
        &mut self,
        query: QueryId,
        from: SocketAddr,
        bytes: &[u8],
        now: u64,
    ) -> bool {
        let Some(up) = self.query(query) else {
            return true;
        };
        let (server, id, tcp) = (up.server, up.id, up.tcp);
        if from != server {
            self.stats.rejected += 1;
            return false;
        }
        let header = match Header::parse(bytes) {
            Ok(h) if h.id == id && h.qr() && h.opcode() == Opcode::QUERY => h,
            _ => {
                self.stats.rejected += 1;
                return false;
            }
        };
        // The engine's one response buffer, taken out while tasks read it.
        let mut msg = core::mem::take(&mut self.response);
        let taken = self.handle_parsed(query, bytes, &mut msg, tcp, header, now);
        self.response = msg;
        taken
    }

    fn handle_parsed(
        &mut self,
        query: QueryId,
        bytes: &[u8],
        msg: &mut Response,
        tcp: bool,
        header: Header,
        now: u64,
    ) -> bool {
        match msg.parse(bytes) {
            Ok(()) => {}
            Err(_) if tcp => {
                // TCP cannot be spoofed blindly: a broken answer is the server's fault.
                if let Some(up) = self.finish_query(query) {
                    self.fail_waiters(query, &up, Failure::Network, now);
                }
                return true;
            }
            Err(_) => {
                self.stats.rejected += 1;
                return false;
            }
        }
        let mut questions = msg.questions();
        let question_ok = match (questions.next(), questions.next(), self.query(query)) {
            (Some(q), None, Some(up)) => {
                q.owner == up.key.qname.as_ref() && q.rtype == up.key.qtype && q.class == Class::IN
            }
            _ => false,
        };
        if !question_ok {
            self.stats.rejected += 1;
            return false;
        }
        let Some(up) = self.finish_query(query) else {
            return true;
        };
        self.resolver
            .servers
            .record_rtt(up.server, now.saturating_sub(up.sent_at), now);
        if header.tc() && !up.tcp {
            self.stats.tcp_retries += 1;
            self.resend(up, true, true, now);
            return true;
        }
        let rcode = msg.rcode();
        if up.edns && (rcode == Rcode::FORMERR || rcode == Rcode::NOTIMP) && msg.opt().is_none() {
            self.stats.edns_fallbacks += 1;
            self.resolver.servers.set_no_edns(up.server, now);
            let tcp = up.tcp;
            self.resend(up, tcp, false, now);
            return true;
        }
        let resolver = Arc::clone(&self.resolver);
        for w in up.waiters.iter() {
            if let Some(slot) = self.task_mut(w) {
                if slot.waiting == Some(query) {
                    slot.waiting = None;
                    slot.task.on_response(&resolver, up.server, msg, now);
                    self.run(w, now);
                }
            }
        }
        true
    }

    /// Sending `query` failed, or its server refused the connection (ICMP unreachable,
    /// TCP RST): the tasks waiting on it try other servers at once.
    pub fn handle_send_error(&mut self, query: QueryId, now: u64) {
        if let Some(up) = self.finish_query(query) {
            self.fail_waiters(query, &up, Failure::Network, now);
        }
    }

    /// Abandons a resolution (the client went away). No [`Event::Done`] follows.
    pub fn cancel(&mut self, task: TaskId) {
        if self.task_mut(task).is_some() {
            self.release_task(task.index);
        }
    }

    /// This engine's counters.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Resolutions in progress.
    pub fn active_tasks(&self) -> usize {
        self.tasks.len() - self.free_tasks.len()
    }

    /// OutstandingQuery queries outstanding.
    pub fn outstanding_queries(&self) -> usize {
        self.queries.len() - self.free_queries.len()
    }

    /// OutstandingQuery queries a task has spent so far (for tests and diagnostics).
    pub fn task_queries(&self, task: TaskId) -> Option<u32> {
        let slot = self.tasks.get(task.index as usize)?.as_ref()?;
        (slot.generation == task.generation).then(|| slot.task.queries())
    }

    fn generation(&mut self) -> u32 {
        self.next_generation = self.next_generation.wrapping_add(1);
        self.next_generation
    }

    fn timer_live(&self, kind: TimerKind, index: u32, generation: u32) -> bool {
        match kind {
            TimerKind::Query => self.query(QueryId { index, generation }).is_some(),
            TimerKind::Task | TimerKind::Stale => self
                .tasks
                .get(index as usize)
                .and_then(Option::as_ref)
                .is_some_and(|s| s.generation == generation),
        }
    }

    fn query(&self, q: QueryId) -> Option<&OutstandingQuery> {
        self.queries
            .get(q.index as usize)?
            .as_ref()
            .filter(|u| u.generation == q.generation)
    }

    fn task_mut(&mut self, t: TaskId) -> Option<&mut TaskSlot> {
        self.tasks
            .get_mut(t.index as usize)?
            .as_mut()
            .filter(|s| s.generation == t.generation)
    }

    /// Steps a task until it sends a query or finishes.
    fn run(&mut self, id: TaskId, now: u64) {
        let resolver = Arc::clone(&self.resolver);
        let unix_now = self.unix_now(now);
        let Some(slot) = self.task_mut(id) else {
            return;
        };
        match slot.task.step(&resolver, now, unix_now) {
            Step::Send(req) => {
                let asked = req.server;
                let q = self.submit(id, req, now);
                if let Some(slot) = self.task_mut(id) {
                    slot.waiting = Some(q.0);
                    slot.task.sent_to(asked, q.1);
                }
            }
            Step::Done(answer) => self.finish_task(id, answer, now),
        }
    }

    /// Frees a task's slot and keeps the task for reuse.
    fn release_task(&mut self, index: u32) {
        if let Some(slot) = self.tasks[index as usize].take() {
            self.free_tasks.push(index);
            self.stats.signature_checks += u64::from(slot.task.signature_checks());
            if self.spare_tasks.len() < SPARE_TASKS {
                let mut task = slot.task;
                task.recycle();
                self.spare_tasks.push(task);
            }
        }
    }
}
