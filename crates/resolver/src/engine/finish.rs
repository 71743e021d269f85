//! The end of a task: the answer it ends with becomes the client's answer, after
//! serve-stale (`stale`) and DNS64 (`dns64`) had their say, and is counted.

use shardns_wire::Rcode;

use super::{Engine, Event, TaskId};
use crate::reply::Resolution;

impl Engine {
    /// The task is over with `answer` (or a deadline): release it and answer its client,
    /// unless the client was answered already (stale) or has none (prefetch), or a DNS64
    /// follow-up is still to run.
    pub(super) fn finish_task(&mut self, id: TaskId, answer: Resolution, now: u64) {
        let Some(slot) = self.task_mut(id) else {
            return;
        };
        let answered = slot.answered;
        let answer = self.stale_on_failure(id, answer, now);
        let aaaa = self.dns64_question(id);
        self.release_task(id.index);
        if answered {
            return;
        }
        self.answer_client(id, aaaa, answer, now);
    }

    /// Counts and hands over a client's answer.
    pub(super) fn emit_done(&mut self, id: TaskId, answer: Resolution) {
        if answer.rcode == Rcode::SERVFAIL {
            self.stats.servfails += 1;
            if answer.ede.is_some_and(|e| (1..=12).contains(&e.code)) {
                self.stats.bogus += 1;
            }
        }
        if answer.secure {
            self.stats.secure += 1;
        }
        self.events.push_back(Event::Done(id, answer));
    }
}
