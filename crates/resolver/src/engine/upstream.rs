//! One engine's outstanding upstream queries: sending, coalescing, re-sending, timeouts.
//!
//! Owns: [`OutstandingQuery`] (server, transport, EDNS, random ID, send time, timeout and
//! the tasks waiting on it), the coalescing key (two tasks asking the same question of the
//! same zone share one query), composing the query message with a random ID and source
//! port, the timeout from the server's SRTT, and telling the driver to close a finished
//! query's socket.

use std::cmp::Reverse;
use std::net::SocketAddr;

use rand::Rng;
use shardns_wire::{Class, Header, MessageWriter, NameBuf, NameRef, RType};

use super::{Engine, Event, QueryId, TaskId, TimerKind, Transmit, QUERY_BUF};
use crate::iterate::{Failure, UpstreamQuery};

/// What makes two upstream queries the same. Names are inline (no allocation per query)
/// and compared without regard to case.
#[derive(Clone)]
pub(super) struct CoalesceKey {
    pub(super) qname: NameBuf,
    pub(super) qtype: RType,
    zone: NameBuf,
    rd: bool,
}

impl PartialEq for CoalesceKey {
    fn eq(&self, other: &Self) -> bool {
        self.qtype == other.qtype
            && self.rd == other.rd
            && self.qname.as_ref() == other.qname.as_ref()
            && self.zone.as_ref() == other.zone.as_ref()
    }
}

impl Eq for CoalesceKey {}

impl std::hash::Hash for CoalesceKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.qname.as_ref().hash(state);
        self.qtype.hash(state);
        self.zone.as_ref().hash(state);
        self.rd.hash(state);
    }
}

/// The tasks waiting on one upstream query: nearly always one, kept inline.
#[derive(Clone)]
pub(super) struct Waiters {
    first: TaskId,
    more: Vec<TaskId>,
}

impl Waiters {
    fn one(task: TaskId) -> Self {
        Self {
            first: task,
            more: Vec::new(),
        }
    }

    fn push(&mut self, task: TaskId) {
        self.more.push(task);
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = TaskId> + '_ {
        std::iter::once(self.first).chain(self.more.iter().copied())
    }
}

/// An upstream query sent and not yet finished.
pub(super) struct OutstandingQuery {
    pub(super) generation: u32,
    pub(super) key: CoalesceKey,
    pub(super) server: SocketAddr,
    pub(super) tcp: bool,
    pub(super) edns: bool,
    pub(super) id: u16,
    pub(super) sent_at: u64,
    pub(super) timeout: u64,
    pub(super) waiters: Waiters,
}

impl Engine {
    /// Sends `req` for task `id`, or joins an identical outstanding query. Returns the
    /// query and the server it goes to.
    pub(super) fn submit(
        &mut self,
        id: TaskId,
        req: UpstreamQuery,
        now: u64,
    ) -> (QueryId, SocketAddr) {
        let key = CoalesceKey {
            qname: req.qname,
            qtype: req.qtype,
            zone: req.zone,
            rd: req.rd,
        };
        if let Some(&q) = self.inflight.get(&key) {
            if let Some(Some(up)) = self.queries.get_mut(q.index as usize) {
                if up.generation == q.generation {
                    up.waiters.push(id);
                    self.stats.coalesced += 1;
                    return (q, up.server);
                }
            }
        }
        let edns = self.resolver.config.edns && self.resolver.servers.edns_ok(&req.server, now);
        let q = self.send(key, req.server, false, edns, Waiters::one(id), now);
        (q, req.server)
    }

    /// Re-sends a finished query's question to the same server, for the same waiters.
    pub(super) fn resend(&mut self, up: OutstandingQuery, tcp: bool, edns: bool, now: u64) {
        let mut live = up.waiters.iter().filter(|&w| self.task_mut(w).is_some());
        let Some(first) = live.next() else {
            return;
        };
        let mut waiters = Waiters::one(first);
        for w in live {
            waiters.push(w);
        }
        let q = self.send(up.key, up.server, tcp, edns, waiters.clone(), now);
        for w in waiters.iter() {
            if let Some(slot) = self.task_mut(w) {
                slot.waiting = Some(q);
                slot.task.count_query();
            }
        }
    }

    fn send(
        &mut self,
        key: CoalesceKey,
        server: SocketAddr,
        tcp: bool,
        edns: bool,
        waiters: Waiters,
        now: u64,
    ) -> QueryId {
        let id = self.rng.next_u32() as u16;
        let source_port = 1024 + (self.rng.next_u32() % (65536 - 1024)) as u16;
        let timeout = self.timeout_for(&server, tcp, now);
        let mut t = Transmit {
            query: QueryId {
                index: 0,
                generation: 0,
            },
            server,
            tcp,
            source_port,
            id,
            len: 0,
            buf: [0; QUERY_BUF],
        };
        t.len = compose_query(
            &mut t.buf,
            id,
            key.qname.as_ref(),
            key.qtype,
            key.rd,
            edns.then_some(self.resolver.config.edns_udp_size),
            self.resolver.config.validation,
        ) as u16;
        let generation = self.generation();
        let up = OutstandingQuery {
            generation,
            key: key.clone(),
            server,
            tcp,
            edns,
            id,
            sent_at: now,
            timeout,
            waiters,
        };
        let index = match self.free_queries.pop() {
            Some(i) => {
                self.queries[i as usize] = Some(up);
                i
            }
            None => {
                self.queries.push(Some(up));
                (self.queries.len() - 1) as u32
            }
        };
        let q = QueryId { index, generation };
        t.query = q;
        self.inflight.insert(key, q);
        self.timers.push(Reverse((
            now + timeout,
            TimerKind::Query,
            index,
            generation,
        )));
        self.stats.queries_sent += 1;
        self.events.push_back(Event::Transmit(t));
        q
    }

    /// A timeout from the server's SRTT: about three round trips, within the configured
    /// bounds; servers never heard from get the initial timeout. TCP gets double.
    fn timeout_for(&self, server: &SocketAddr, tcp: bool, now: u64) -> u64 {
        let cfg = &self.resolver.config;
        let base = match self.resolver.servers.srtt(server, now) {
            Some(srtt) => (u64::from(srtt) * 3 + 50).clamp(cfg.min_timeout_ms, cfg.max_timeout_ms),
            None => cfg.initial_timeout_ms,
        };
        if tcp {
            (base * 2).min(cfg.max_timeout_ms.max(base))
        } else {
            base
        }
    }

    /// Removes an outstanding query and tells the driver to close its socket.
    pub(super) fn finish_query(&mut self, q: QueryId) -> Option<OutstandingQuery> {
        self.query(q)?;
        let up = self.queries[q.index as usize].take()?;
        self.free_queries.push(q.index);
        if self.inflight.get(&up.key) == Some(&q) {
            self.inflight.remove(&up.key);
        }
        self.events.push_back(Event::Close(q));
        Some(up)
    }

    pub(super) fn fail_waiters(
        &mut self,
        q: QueryId,
        up: &OutstandingQuery,
        why: Failure,
        now: u64,
    ) {
        for w in up.waiters.iter() {
            if let Some(slot) = self.task_mut(w) {
                if slot.waiting == Some(q) {
                    slot.waiting = None;
                    slot.task.on_failure(up.server, why);
                    self.run(w, now);
                }
            }
        }
    }
}

/// Writes an upstream query; returns its length.
fn compose_query(
    buf: &mut [u8; QUERY_BUF],
    id: u16,
    qname: NameRef<'_>,
    qtype: RType,
    rd: bool,
    edns: Option<u16>,
    dnssec_ok: bool,
) -> usize {
    let mut w = MessageWriter::new(buf, QUERY_BUF);
    // The buffer holds the longest name and an OPT record, so these cannot fail.
    let _ = w.put_question(qname, qtype, Class::IN);
    if let Some(size) = edns {
        // DO when validating: the servers send RRSIGs and denial proofs (RFC 3225).
        let _ = w.put_opt(size, 0, 0, dnssec_ok, &[]);
    }
    let mut h = Header {
        id,
        ..Header::default()
    };
    h.set_rd(rd);
    w.finish(&h).len()
}
