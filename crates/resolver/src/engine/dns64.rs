//! DNS64 (RFC 6147) as the engine runs it: a client's AAAA question whose answer has no
//! AAAA records is followed by an A question for the same name, and answered with AAAA
//! records synthesized from the A records; a PTR question for a reverse name under the
//! prefix is answered from the IPv4 address's in-addr.arpa name, behind a CNAME (§5.3.1);
//! `ipv4only.arpa.` is answered locally (RFC 8880 §7.2).
//!
//! Owns: the follow-up tasks (`Engine::dns64`: follow-up task -> the client's task and
//! what it waits to complete), and [`Ask`], what a client's query asks for (DNS64 or
//! not). The address arithmetic is `crate::dns64`'s.

use std::sync::Arc;

use shardns_wire::{Class, Name, NameRef, RType, Record};

use super::{Engine, TaskId};
use crate::dns64::{
    final_name, ipv4only_answer, ptr_target, synthesize, wants_synthesis, IPV4ONLY,
};
use crate::reply::Resolution;

/// What a client's query asks for beyond its question ([`Engine::resolve_for`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ask {
    /// The client set CD: nothing is validated (RFC 4035 §3.2.2).
    pub cd: bool,
    /// The client set DO (DNS64 leaves a signed denial alone unless `break_dnssec`).
    pub dnssec_ok: bool,
    /// DNS64 applies to this client ([`crate::Resolver::ask`]).
    pub dns64: bool,
}

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

    /// Runs a follow-up question whose answer completes `client`'s. With serve-stale on it
    /// has the client's timers (RFC 8767): the failure-recheck (a stale answer at once) and
    /// the client-response timer, so a stale A record is found as a stale AAAA would be.
    fn follow_up(&mut self, client: TaskId, name: Name, rtype: RType, follow: Follow, now: u64) {
        let sub = self.start(name.as_ref(), rtype, false, now);
        // In the table before it runs: it may finish at once (from the cache).
        self.dns64.insert(sub, Waiting { client, follow });
        if self.resolver.config.serve_stale && self.stale_instead(sub, now) {
            return;
        }
        self.run(sub, now);
    }

    /// The question of a client's AAAA task that DNS64 may complete: its name and whether
    /// the client set DO, if DNS64 applies to the client and it did not set CD (RFC 6147
    /// §5.5: it validates for itself).
    pub(super) fn dns64_question(&mut self, id: TaskId) -> Option<(Name, bool)> {
        let slot = self.task_mut(id)?;
        if !slot.dns64 {
            return None;
        }
        let (qname, qtype, _) = slot.task.question();
        (qtype == RType::AAAA && !slot.cd).then(|| (qname.to_name(), slot.dnssec_ok))
    }

    /// A client's answer (a task's end, or a stale answer before it): DNS64's turn, then
    /// to the client unless a follow-up still runs.
    pub(super) fn answer_client(
        &mut self,
        id: TaskId,
        aaaa: Option<(Name, bool)>,
        answer: Resolution,
        now: u64,
    ) {
        if let Some((id, answer)) = self.dns64_finish(id, aaaa, answer, now) {
            self.emit_done(id, answer);
        }
    }

    /// A task ended with `answer`: what goes to which client, or `None` while a follow-up
    /// runs. `aaaa`: the task's name if it is a client's AAAA question DNS64 may complete.
    pub(super) fn dns64_finish(
        &mut self,
        id: TaskId,
        aaaa: Option<(Name, bool)>,
        answer: Resolution,
        now: u64,
    ) -> Option<(TaskId, Resolution)> {
        if let Some(w) = self.dns64.remove(&id) {
            let done = match w.follow {
                Follow::Aaaa(orig) => {
                    let cfg = &self.resolver.config;
                    synthesize(&cfg.dns64_prefix, &cfg.dns64_options, &orig, &answer)
                        .unwrap_or(orig)
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
        let Some((qname, dnssec_ok)) = aaaa else {
            return Some((id, answer));
        };
        let mut answer = answer;
        let cfg = &self.resolver.config;
        let (exclude, options) = (&cfg.dns64_exclude, &cfg.dns64_options);
        if !wants_synthesis(&mut answer, qname.as_ref(), exclude, options, dnssec_ok) {
            return Some((id, answer));
        }
        let target = final_name(qname.as_ref(), &answer);
        self.follow_up(id, target, RType::A, Follow::Aaaa(answer), now);
        None
    }
}
