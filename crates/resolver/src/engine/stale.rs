//! Serve-stale (RFC 8767) and prefetch as the engine runs them.
//!
//! Owns: [`Engine::prefetch`] (a background refresh with no client), the decisions of
//! serve-stale: the failure-recheck timer at the start of a resolution, the
//! client-response timer while it runs, and the stale answer when it fails. The stale
//! answer itself comes from the cache (`cache::stale`).

use std::cmp::Reverse;
use std::sync::Arc;

use shardns_wire::{NameRef, RType, Rcode};

use super::{Engine, TaskId, TimerKind};
use crate::reply::Resolution;

impl Engine {
    /// Refreshes (`qname`, `qtype`) in the background: resolved as for a client, without
    /// using the cached answer to the question, and cached; no [`crate::Event::Done`] comes of it.
    /// The server calls it when a cache hit reports `prefetch` ([`crate::CacheAnswer`]).
    pub fn prefetch(&mut self, qname: NameRef<'_>, qtype: RType, now: u64) -> TaskId {
        self.stats.prefetches += 1;
        let id = self.start(qname, qtype, false, now);
        if let Some(slot) = self.task_mut(id) {
            slot.answered = true;
            slot.task.refresh();
        }
        self.run(id, now);
        id
    }

    /// At the start of a resolution: a question that failed less than the failure-recheck
    /// time ago is answered stale at once, without asking (RFC 8767 §4); otherwise the
    /// client-response timer is armed. Returns true if the task was answered (and is over).
    pub(super) fn stale_instead(&mut self, id: TaskId, now: u64) -> bool {
        let resolver = Arc::clone(&self.resolver);
        let Some(slot) = self.task_mut(id) else {
            return false;
        };
        let (name, qtype, checking) = slot.task.question();
        let stale = if resolver.rechecking(name, qtype, now) {
            let ttl = resolver.config.serve_stale_reply_ttl;
            resolver.cache.stale_answer(name, qtype, now, ttl, checking)
        } else {
            None
        };
        if let Some(answer) = stale {
            self.stats.stale_answers += 1;
            // DNS64 sees a stale AAAA denial as a fresh one (and a stale A it synthesizes
            // from keeps its EDE 3).
            let aaaa = self.dns64_question(id);
            self.release_task(id.index);
            self.answer_client(id, aaaa, answer, now);
            return true;
        }
        let at = now + resolver.config.serve_stale_client_timeout_ms;
        self.timers
            .push(Reverse((at, TimerKind::Stale, id.index, id.generation)));
        false
    }

    /// The client-response timer fired with the task still running: the client gets the
    /// stale answer, if there is one, and the task goes on to refresh the cache.
    pub(super) fn client_timeout(&mut self, id: TaskId, now: u64) {
        let resolver = Arc::clone(&self.resolver);
        let Some(slot) = self.task_mut(id) else {
            return;
        };
        if slot.answered {
            return;
        }
        let (name, qtype, checking) = slot.task.question();
        let ttl = resolver.config.serve_stale_reply_ttl;
        let Some(answer) = resolver.cache.stale_answer(name, qtype, now, ttl, checking) else {
            return;
        };
        slot.answered = true;
        self.stats.stale_answers += 1;
        let aaaa = self.dns64_question(id);
        self.answer_client(id, aaaa, answer, now);
    }

    /// A resolution ended with `answer`: if it failed (not a DNSSEC verdict: bogus data is
    /// never covered up) and stale data is there, the stale answer instead, and the
    /// question is not asked again for the failure-recheck time.
    pub(super) fn stale_on_failure(
        &mut self,
        id: TaskId,
        answer: Resolution,
        now: u64,
    ) -> Resolution {
        let cfg = &self.resolver.config;
        let dnssec = answer.ede.is_some_and(|e| (1..=12).contains(&e.code));
        if !cfg.serve_stale || answer.rcode != Rcode::SERVFAIL || dnssec {
            return answer;
        }
        let resolver = Arc::clone(&self.resolver);
        let Some(slot) = self.task_mut(id) else {
            return answer;
        };
        let answered = slot.answered;
        let (name, qtype, checking) = slot.task.question();
        let ttl = resolver.config.serve_stale_reply_ttl;
        let Some(stale) = resolver.cache.stale_answer(name, qtype, now, ttl, checking) else {
            return answer;
        };
        resolver.note_failure(name, qtype, now + resolver.config.serve_stale_recheck_ms);
        if !answered {
            self.stats.stale_answers += 1;
        }
        stale
    }
}
