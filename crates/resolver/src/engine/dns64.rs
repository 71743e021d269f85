//! DNS64 (RFC 6147) as the engine runs it: a client's AAAA question whose answer has no
//! AAAA records is followed by an A question for the same name, and answered with AAAA
//! records synthesized from the A records; a PTR question for a reverse name under the
//! prefix is answered from the IPv4 address's in-addr.arpa name, behind a CNAME (§5.3.1);
//! `ipv4only.arpa.` is answered locally (RFC 8880 §7.2).
//!
//! Owns: the follow-up tasks (`Engine::dns64`: follow-up task -> the client's task and
//! what it waits to complete). The address arithmetic is `crate::dns64`'s.

use std::sync::Arc;

use shardns_wire::{Class, Name, NameRef, RType, Record};

use super::{Engine, TaskId};
use crate::dns64::{
    final_name, ipv4only_answer, ptr_target, synthesize, wants_synthesis, IPV4ONLY,
};
use crate::reply::Resolution;

/// What a follow-up task completes.
pub(super) enum Follow {
    /// The client's AAAA answer, without AAAA records: synthesize from the A records.
    Aaaa(Resolution),
    /// The CNAME from the client's ip6.arpa name to the in-addr.arpa one.
    Ptr(Record),
}

pub(super) struct Waiting {
    client: TaskId,
    follow: Follow,
}

/// TTL of the synthesized ip6.arpa CNAME (RFC 6147 §5.3.1 leaves it open).
const PTR_CNAME_TTL: u32 = 600;

impl Engine {
    /// At the start of a client's resolution: `ipv4only.arpa.` is answered at once, a PTR
    /// question under the prefix's reverse zone becomes one for the in-addr.arpa name.
    /// Returns true if the task was taken over (it is over; a Done comes for it).
    pub(super) fn dns64_start(&mut self, id: TaskId, cd: bool, now: u64) -> bool {
        let resolver = Arc::clone(&self.resolver);
        let prefix = resolver.config.dns64_prefix;
        let Some(slot) = self.task_mut(id) else {
            return false;
        };
        let (qname, qtype, _) = slot.task.question();
        if qname == NameRef::from_validated(IPV4ONLY) {
            let answer = ipv4only_answer(&prefix, qtype);
            self.release_task(id.index);
            self.emit_done(id, answer);
            return true;
        }
        if qtype != RType::PTR || cd {
            return false;
        }
        let Some(target) = ptr_target(&prefix, qname) else {
            return false;
        };
        let cname = Record {
            owner: qname.to_name(),
            rtype: RType::CNAME,
            class: Class::IN,
            ttl: PTR_CNAME_TTL,
            rdata: target.as_wire().to_vec(),
        };
        self.release_task(id.index);
        self.follow_up(id, target, RType::PTR, Follow::Ptr(cname), now);
        true
    }

    fn follow_up(&mut self, client: TaskId, name: Name, rtype: RType, follow: Follow, now: u64) {
        let sub = self.start(name.as_ref(), rtype, false, now);
        // In the table before it runs: it may finish at once (from the cache).
        self.dns64.insert(sub, Waiting { client, follow });
        self.run(sub, now);
    }

    /// The question of a client's AAAA task that DNS64 may complete: its name, if DNS64 is
    /// on and the client did not set CD (RFC 6147 §5.5: it validates for itself).
    pub(super) fn dns64_question(&mut self, id: TaskId) -> Option<Name> {
        if !self.resolver.config.dns64 {
            return None;
        }
        let slot = self.task_mut(id)?;
        let (qname, qtype, _) = slot.task.question();
        (qtype == RType::AAAA && !slot.cd).then(|| qname.to_name())
    }

    /// A task ended with `answer`: what goes to which client, or `None` while a follow-up
    /// runs. `aaaa`: the task's name if it is a client's AAAA question DNS64 may complete.
    pub(super) fn dns64_finish(
        &mut self,
        id: TaskId,
        aaaa: Option<Name>,
        answer: Resolution,
        now: u64,
    ) -> Option<(TaskId, Resolution)> {
        if let Some(w) = self.dns64.remove(&id) {
            let done = match w.follow {
                Follow::Aaaa(orig) => {
                    let prefix = &self.resolver.config.dns64_prefix;
                    synthesize(prefix, &orig, &answer).unwrap_or(orig)
                }
                Follow::Ptr(cname) => {
                    let mut a = answer;
                    a.answers.insert(0, cname);
                    a.secure = false;
                    a.dnssec_answer.clear();
                    a.dnssec_authority.clear();
                    a
                }
            };
            return Some((w.client, done));
        }
        let Some(qname) = aaaa else {
            return Some((id, answer));
        };
        let mut answer = answer;
        if !wants_synthesis(&mut answer, &self.resolver.config.dns64_exclude) {
            return Some((id, answer));
        }
        let target = final_name(qname.as_ref(), &answer);
        self.follow_up(id, target, RType::A, Follow::Aaaa(answer), now);
        None
    }
}
