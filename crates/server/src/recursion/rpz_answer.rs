//! recursion::rpz_answer -- the response policies a finished resolution meets by its data
//! (BIND checks them once the answer is known): QNAME triggers on the targets of the
//! answer's CNAME chain, then IP triggers on its addresses, NSDNAME and NSIP triggers on
//! the name servers of the zones above its names (read from the cache the resolution just
//! filled), and the answer rewritten at the name the policy applies to, the CNAMEs before
//! it kept. Also which cache hits must take that way instead of the hit path.

use super::{Pending, Recursion};
use shardns_resolver::{
    policy_name_servers, CacheAnswer, Ede, PolicyAction, PolicyHit, Resolution, Rpz,
    POLICY_MIN_NS_DOTS,
};
use shardns_wire::writer::Checkpoint;
use shardns_wire::{Class, MessageWriter, Name, NameRef, RType, Rcode, Record};
use std::net::IpAddr;

/// An answer with `rcode` and no records.
fn empty(rcode: Rcode) -> Resolution {
    Resolution {
        rcode,
        answers: Vec::new(),
        authority: Vec::new(),
        dnssec_answer: Vec::new(),
        dnssec_authority: Vec::new(),
        ede: None,
        secure: false,
    }
}

/// A CNAME record from `owner` to `target`.
pub(super) fn cname(owner: NameRef<'_>, target: NameRef<'_>, ttl: u32) -> Record {
    Record {
        owner: owner.to_name(),
        rtype: RType::CNAME,
        class: Class::IN,
        ttl,
        rdata: target.as_wire().to_vec(),
    }
}

/// The names of an answer's CNAME chain: `qname`, then each target in turn (at most as
/// many as the answer has CNAMEs, so a loop ends).
fn chain(qname: &Name, answers: &[Record]) -> Vec<Name> {
    let mut names = vec![qname.clone()];
    for _ in answers.iter().filter(|r| r.rtype == RType::CNAME) {
        let last = names.last().unwrap_or(qname);
        let next = answers
            .iter()
            .filter(|r| r.rtype == RType::CNAME && r.owner == *last)
            .find_map(|r| NameRef::from_wire(&r.rdata).ok().map(|n| n.to_name()));
        match next {
            Some(n) if !names.contains(&n) => names.push(n),
            _ => break,
        }
    }
    names
}

/// The A and AAAA addresses `owner` has in an answer section.
fn addresses(answers: &[Record], owner: &Name) -> Vec<IpAddr> {
    answers
        .iter()
        .filter(|r| r.owner == *owner)
        .filter_map(|r| match (r.rtype, r.rdata.len()) {
            (RType::A, 4) => <[u8; 4]>::try_from(&r.rdata[..]).ok().map(IpAddr::from),
            (RType::AAAA, 16) => <[u8; 16]>::try_from(&r.rdata[..]).ok().map(IpAddr::from),
            _ => None,
        })
        .collect()
}

/// Whether a cache hit must be answered by the engine instead, so that its answer's data
/// is checked (its CNAME chain's targets against QNAME triggers): the hit followed a
/// CNAME (one shard lock per name of the chain), the question is not for the CNAME
/// itself, and the answer is not a stale one (those are answered as they are). A plain
/// hit pays one comparison.
fn must_recheck(cached: &CacheAnswer, qtype: RType, rewritten: bool) -> bool {
    matches!(cached, CacheAnswer::Hit { locks, ede, .. }
        if *locks > 1 && qtype != RType::CNAME && !rewritten && !stale(ede.as_ref()))
}

fn stale(ede: Option<&Ede>) -> bool {
    ede.is_some_and(|e| e.code == Ede::STALE_ANSWER || e.code == Ede::STALE_NXDOMAIN)
}

impl Recursion {
    /// A cache hit as the query path takes it: with policy zones, a hit that followed a
    /// CNAME is taken back (the writer rolled back to `after_question`) and becomes a miss,
    /// so that the engine answers it and its chain is checked ([`must_recheck`]).
    pub(super) fn recheck(
        &self,
        cached: CacheAnswer,
        qtype: RType,
        rewritten: bool,
        w: &mut MessageWriter<'_>,
        after_question: Checkpoint,
    ) -> CacheAnswer {
        if self.shared.rpz.is_none() || !must_recheck(&cached, qtype, rewritten) {
            return cached;
        }
        w.rollback(after_question);
        CacheAnswer::Miss { locks: 0 }
    }

    /// The policies a finished resolution meets by its data, when no policy rewrote the
    /// query already: the answer to send (and whether it is an empty one with TC), or
    /// `None` when the client gets nothing now (dropped, or a policy's CNAME target being
    /// resolved: the client is pending again). As in BIND and Unbound the policy applies
    /// at the name it matched (a CNAME target, the owner of the addresses, the name whose
    /// zone's servers matched): the CNAMEs that led there stay in the answer, and local
    /// data or a policy CNAME is owned by that name.
    pub(super) fn answer_policy(
        &mut self,
        mut p: Pending,
        answer: Resolution,
        clock: u64,
    ) -> Option<(Pending, Resolution, bool)> {
        let Some(policies) = &self.shared.rpz else {
            return Some((p, answer, false));
        };
        // Owned: the checks below borrow the worker mutably (its log, its engine).
        let set = policies.set.load_full();
        let rpz = &*set;
        let chained = answer.answers.iter().any(|r| r.rtype == RType::CNAME);
        let by_data = rpz.has_answer_triggers() || rpz.has_ns_triggers();
        // A failed resolution is not rewritten (BIND: no policy for a SERVFAIL).
        let failed = answer.rcode == Rcode::SERVFAIL;
        if p.rewrite.is_some() || failed || !(chained || by_data) {
            return Some((p, answer, false));
        }
        let names = chain(&p.qname, &answer.answers);
        let Some(found) = self.data_hit(rpz, &p, &names, &answer, clock) else {
            return Some((p, answer, false));
        };
        p.hit = Some(super::rpz::tap_hit(rpz, &found, p.origin.is_stream()));
        let (hit, at) = (found.action, found.at);
        let owner = names[at].as_ref();
        // The chain to the name the policy applies at.
        let before = || -> Vec<Record> {
            let kept = answer
                .answers
                .iter()
                .filter(|r| names[..at].contains(&r.owner));
            kept.cloned().collect()
        };
        let with = |rcode, answers| Resolution {
            answers,
            ..empty(rcode)
        };
        let qtype = p.qtype;
        let replaced = match hit {
            PolicyAction::Passthru => return Some((p, answer, false)),
            PolicyAction::TcpOnly if p.origin.is_stream() => return Some((p, answer, false)),
            PolicyAction::TcpOnly => return Some((p, empty(Rcode::NOERROR), true)),
            PolicyAction::Drop => return None,
            PolicyAction::Nxdomain => with(Rcode::NXDOMAIN, before()),
            PolicyAction::Nodata => with(Rcode::NOERROR, before()),
            PolicyAction::Data(data) => {
                let mut records = before();
                records.extend(data.records(owner, qtype));
                with(Rcode::NOERROR, records)
            }
            PolicyAction::Cname(target, ttl) => {
                let mut records = before();
                records.push(cname(owner, target.as_ref(), ttl));
                if qtype == RType::CNAME || qtype == RType::ANY {
                    return Some((p, with(Rcode::NOERROR, records), false));
                }
                // The target is the client's question now: DNS64 as for its own.
                let dnssec_ok = p.edns.is_some_and(|(_, d)| d);
                let resolver = &self.shared.resolver;
                let ask = resolver.ask(p.origin.peer.map(|a| a.ip()), p.rd, p.cd, dnssec_ok);
                let task = self.engine.resolve_for(target.as_ref(), qtype, ask, clock);
                p.rewrite = Some(records);
                self.pending.insert(task, p);
                return None;
            }
        };
        Some((p, replaced, false))
    }

    /// The policy an answer whose chain is `names` meets, and the index of the name it
    /// applies at (`Rpz::check_resolved`: the names in turn, zones in order; the query
    /// name's QNAME and client-IP triggers in the zones that waited for the resolution,
    /// the targets' QNAME triggers, IP triggers on the last name's addresses, NSDNAME and
    /// NSIP on the servers above each name). Hits are logged under the client's question.
    fn data_hit<'r>(
        &mut self,
        rpz: &'r Rpz,
        p: &Pending,
        names: &[Name],
        answer: &Resolution,
        clock: u64,
    ) -> Option<PolicyHit<'r>> {
        let (q, client) = ((p.qname.as_ref(), p.qtype), p.origin.peer.map(|a| a.ip()));
        let log = &mut self.policy_log;
        let note = &mut |h: &PolicyHit<'_>| log.note(rpz, h, q, client, clock);
        let deferred = rpz.waits_from(super::rpz::has_addresses(p.qtype));
        // A PASSTHRU met before the cache ends every check.
        if rpz.decided_before(p.qname.as_ref(), client, deferred) {
            return None;
        }
        let refs: Vec<NameRef<'_>> = names.iter().map(|n| n.as_ref()).collect();
        let last = names.last()?;
        let addrs = addresses(&answer.answers, last);
        let servers = match rpz.has_ns_triggers() {
            true => {
                let cache = self.shared.resolver.cache();
                policy_name_servers(cache, &refs, clock, POLICY_MIN_NS_DOTS)
            }
            false => Vec::new(),
        };
        rpz.check_resolved(&refs, &addrs, &servers, (client, deferred), note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn rr(owner: &str, rtype: RType, rdata: Vec<u8>) -> Record {
        Record {
            owner: n(owner),
            rtype,
            class: Class::IN,
            ttl: 60,
            rdata,
        }
    }

    #[test]
    fn a_chain_is_followed_in_order_and_a_loop_ends() {
        let c = |o: &str, t: &str| rr(o, RType::CNAME, n(t).as_ref().as_wire().to_vec());
        // Given out of order: the chain is still q -> a -> b.
        let answers = vec![
            c("a.example.", "b.example."),
            rr("b.example.", RType::A, vec![192, 0, 2, 1]),
            c("q.example.", "a.example."),
        ];
        let names = chain(&n("q.example."), &answers);
        assert_eq!(names, [n("q.example."), n("a.example."), n("b.example.")]);
        let ips = addresses(&answers, &n("b.example."));
        assert_eq!(ips, [IpAddr::from([192, 0, 2, 1])]);
        assert!(addresses(&answers, &n("a.example.")).is_empty());
        let looped = vec![c("q.example.", "a.example."), c("a.example.", "q.example.")];
        assert_eq!(chain(&n("q.example."), &looped).len(), 2);
    }

    #[test]
    fn only_chained_fresh_hits_are_rechecked() {
        let hit = |locks, ede| CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            truncated: false,
            locks,
            secure: false,
            ede,
            prefetch: false,
        };
        assert!(!must_recheck(&hit(1, None), RType::A, false));
        assert!(must_recheck(&hit(2, None), RType::A, false));
        assert!(!must_recheck(&hit(2, None), RType::CNAME, false));
        assert!(!must_recheck(&hit(2, None), RType::A, true));
        let stale = Some(Ede {
            code: Ede::STALE_ANSWER,
            text: "stale answer",
        });
        assert!(!must_recheck(&hit(3, stale), RType::A, false));
        assert!(!must_recheck(
            &CacheAnswer::Miss { locks: 2 },
            RType::A,
            false
        ));
    }
}
