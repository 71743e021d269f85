//! One client query's resolution as the engine sees it: [`Task`].
//!
//! Owns: the stack of frames (the client's question at the bottom, sub-resolutions of
//! name-server addresses above it), the task-wide limits (upstream queries, referrals,
//! sub-resolution depth, loops between sub-resolutions), handing a finished
//! sub-resolution's addresses to the frame that needed them, and the client's answer.

use std::net::SocketAddr;

use shardns_wire::{NameRef, RType};

use super::frame::Advance;
use super::secure::{judge, learn, Judged};
use super::{ip_of, Budget, Failure, Frame, FrameOutcome, Step};
use crate::msg::Response;
use crate::reply::{Ede, Resolution};
use crate::validate::{self, Security};
use crate::Resolver;

/// Deepest stack of frames validation may build (each DS or DNSKEY question is one).
const MAX_FRAMES: usize = 48;

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
    /// Signature checks and NSEC3 hashes spent (KeyTrap limits).
    checks: validate::Budget,
}

impl Task {
    pub(crate) fn new(qname: NameRef<'_>, qtype: RType, salt: u64, validate: bool) -> Self {
        let mut task = Self {
            frames: Vec::new(),
            depth: 0,
            budget: Budget::default(),
            salt,
            failed: None,
            checks: validate::Budget::default(),
        };
        task.reset(qname, qtype, salt, validate);
        task
    }

    /// Starts the task over for another question, keeping its buffers. `validate`: the
    /// answer is to be validated (validation on, CD clear).
    pub(crate) fn reset(&mut self, qname: NameRef<'_>, qtype: RType, salt: u64, validate: bool) {
        self.depth = 0;
        self.budget = Budget::default();
        self.checks = validate::Budget::default();
        self.salt = salt;
        self.failed = None;
        self.push_frame(qname, qtype, usize::MAX);
        self.frames[0].validating = validate;
    }

    /// Makes the task a prefetch: the cached answer to its question is not used.
    pub(crate) fn refresh(&mut self) {
        self.frames[0].refresh = true;
    }

    /// The client's question, and whether its answer is validated (validation on, CD
    /// clear).
    pub(crate) fn question(&self) -> (NameRef<'_>, RType, bool) {
        let f = &self.frames[0];
        (f.origin.as_ref(), f.qtype, f.validating)
    }

    /// Drops the records a finished task still holds (kept buffers stay allocated).
    pub(crate) fn recycle(&mut self) {
        self.depth = 0;
        for f in &mut self.frames {
            f.chain.clear();
            f.outcome = None;
            f.abandoned = None;
            f.ev.clear();
            f.shown.clear();
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

    /// Advances until a query must be sent or the resolution is over. `unix_now`: seconds
    /// since 1970, for signature validity.
    pub(crate) fn step(&mut self, res: &Resolver, now: u64, unix_now: u32) -> Step {
        let cfg = &res.config;
        let limits = validate::Limits {
            unix_now,
            skew_min: cfg.signature_skew_min,
            skew_max: cfg.signature_skew_max,
            max_validations: cfg.max_validations,
            max_key_collisions: cfg.max_key_collisions,
            max_nsec3_hashes: cfg.max_nsec3_hashes,
            max_nsec3_iterations: cfg.max_nsec3_iterations,
        };
        loop {
            if let Some(ede) = self.failed.or(self.budget.exhausted) {
                return Step::Done(Resolution::servfail(ede));
            }
            let depth = self.depth;
            let Some(frame) = self.frames[..depth].last_mut() else {
                return Step::Done(Resolution::servfail(Ede::new(Ede::OTHER, "internal error")));
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
                    let frame = &self.frames[depth - 1];
                    let mut verdict = None;
                    if frame.key_frame
                        || (frame.validating && !matches!(outcome, FrameOutcome::Fail(_)))
                    {
                        let v = match judge(res, frame, &outcome, &limits, &mut self.checks, now) {
                            Judged::Need(zone, t) => {
                                let again = self.frames[..depth].iter().any(|f| {
                                    f.key_frame
                                        && f.qtype == t
                                        && f.origin.as_ref() == zone.as_ref()
                                });
                                if !again && depth < MAX_FRAMES {
                                    // Judged again once the keys are known.
                                    self.frames[depth - 1].outcome = Some(outcome);
                                    self.push_frame(zone.as_ref(), t, usize::MAX);
                                    let top = &mut self.frames[depth];
                                    top.validating = true;
                                    top.key_frame = true;
                                    continue;
                                }
                                // The keys cannot be had from here (a loop, or too deep).
                                judge_fail(Ede::DNSKEY_MISSING)
                            }
                            Judged::Verdict(v) => v,
                        };
                        learn(res, &self.frames[depth - 1], &outcome, v, now);
                        verdict = Some(v);
                    }
                    if self.frames[depth - 1].key_frame && depth > 1 {
                        // What it proved is in the key cache: the frame below judges again.
                        self.depth -= 1;
                        continue;
                    }
                    if depth == 1 {
                        if let Some(v) = verdict {
                            if v.sec == Security::Bogus {
                                return Step::Done(Resolution::servfail(Ede::bogus(v.ede)));
                            }
                        }
                        let mut answer = self.frames[0].answer(outcome);
                        answer.secure = verdict.is_some_and(|v| v.sec == Security::Secure);
                        // Clients may keep the records no longer than we would.
                        for r in answer
                            .answers
                            .iter_mut()
                            .chain(answer.authority.iter_mut())
                            .chain(answer.dnssec_answer.iter_mut())
                            .chain(answer.dnssec_authority.iter_mut())
                        {
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
                    if matches!(outcome, FrameOutcome::Answer) {
                        for r in &sub.chain {
                            if r.owner.as_ref() != sub.qname.as_ref() {
                                continue;
                            }
                            if let Some(ip) = ip_of(r.rtype, &r.rdata) {
                                let a = SocketAddr::new(ip, cfg.upstream_port);
                                if cfg.learned_ok(&a) {
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
                f.outcome = Some(FrameOutcome::Fail(ede));
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

    /// DNSSEC signature checks spent so far.
    pub(crate) fn signature_checks(&self) -> u32 {
        self.checks.validations
    }

    /// Upstream queries spent so far.
    pub(crate) fn queries(&self) -> u32 {
        self.budget.queries
    }
}

fn judge_fail(code: u16) -> super::secure::Verdict {
    super::secure::Verdict::bogus(code)
}
