//! recursion::answer -- a client's answer finished in the output buffer: the header, the OPT
//! record (and where it went), AD, a finished resolution's response ([`write_answer`]);
//! and the answers made before the cache (local data, a response policy's), whose question
//! is kept alone when they did not fit. Also the client's admission: the ACL, or the local
//! zones and access rules (`super::local`).

use super::local::{self, Step};
use super::{Pending, RecursionShared};
use crate::extras::EdnsPolicy;
use crate::stats::WorkerStats;
use shardns_resolver::{client_response_limit, finish_client_response, Ede, Resolution, OPT_ROOM};
use shardns_wire::message::Header;
use shardns_wire::writer::Checkpoint;
use shardns_wire::{Class, MessageWriter, NameRef, RType, Rcode, Section};
use shardns_zone::{OptAt, Written};
use std::net::SocketAddr;

impl RecursionShared {
    /// What becomes of a query from `peer` before the cache: with local zones, access
    /// rules or views configured, `local`'s step; else the ACL and RD (a query without RD
    /// is refused, uncounted, as before local zones).
    pub(super) fn admit(
        &self,
        peer: Option<SocketAddr>,
        rd: bool,
        qname: NameRef<'_>,
        qtype: RType,
        w: &mut MessageWriter<'_>,
        stats: &WorkerStats,
    ) -> Step {
        // A UDP query's peer is decoded whenever recursion is on: no peer, no answer.
        let Some(client) = peer.map(|p| p.ip()) else {
            stats.resolver_refused.add(1);
            return Step::Refuse;
        };
        match self.resolver.config().local.as_deref() {
            None if !rd => Step::Refuse,
            None if !self.allowed(client) => {
                stats.resolver_refused.add(1);
                Step::Refuse
            }
            None => Step::Go { rd, snoop: false },
            Some(l) => local::step(l, client, rd, qname, qtype, w, stats),
        }
    }
}

/// An answer made before the cache: `(rcode, truncated)` after what `w` holds (rolled
/// back to the question if it did not fit), finished.
pub(super) fn early(
    mut w: MessageWriter<'_>,
    after_question: Checkpoint,
    qh: &Header,
    (rcode, truncated): (Rcode, bool),
    limit: usize,
    edns: Option<(u16, bool)>,
) -> (usize, OptAt) {
    if truncated {
        w.rollback(after_question);
    }
    finish(w, qh, rcode, truncated, limit, edns, None)
}

/// What was written of an answer made at once (`(len, opt)` as [`finish`] gives them).
pub(super) fn written(
    (len, opt): (usize, OptAt),
    rcode: Rcode,
    qtype: RType,
    truncated: bool,
) -> Written {
    Written {
        len,
        rcode,
        qtype: Some(qtype),
        truncated,
        wildcard: None,
        opt,
    }
}

/// [`finish_client_response`], saying where the OPT record went: where the writer was.
pub(super) fn finish(
    w: MessageWriter<'_>,
    qh: &Header,
    rcode: Rcode,
    truncated: bool,
    limit: usize,
    edns: Option<(u16, bool)>,
    ede: Option<&Ede>,
) -> (usize, OptAt) {
    let at = w.len() as u16;
    let (len, opt_written) = finish_client_response(w, qh, rcode, truncated, limit, edns, ede);
    let opt = if edns.is_some() && opt_written {
        OptAt::At(at)
    } else {
        OptAt::Absent
    };
    (len, opt)
}

/// Sets AD in a finished response's header: every RRset of the answer was validated
/// secure and the client set DO or AD (RFC 4035 §3.2.3, RFC 6840 §5.8).
pub(super) fn set_ad(response: &mut [u8]) {
    if let Some(flags) = response.get_mut(3) {
        *flags |= 0x20;
    }
}

/// Writes a finished resolution's response for its client.
/// `(tcp, tc)`: the client's transport is a stream; the answer is an empty one with TC (a
/// TCP-only policy over UDP).
pub(super) fn write_answer(
    buf: &mut [u8],
    p: &Pending,
    answer: &Resolution,
    (tcp, tc): (bool, bool),
    policy: &EdnsPolicy,
) -> Written {
    let full = client_response_limit(tcp, p.edns, buf.len());
    // Room for the query's NSID and cookie options (none for most queries).
    let limit = full.saturating_sub(p.extras.room(policy));
    let mut w = MessageWriter::new(buf, limit);
    let _ = w.put_question(p.qname.as_ref(), p.qtype, Class::IN);
    let after_question = w.checkpoint();
    if p.edns.is_some() {
        w.set_limit(limit.saturating_sub(OPT_ROOM));
    }
    let dnssec_ok = p.edns.is_some_and(|(_, dnssec_ok)| dnssec_ok);
    let cname = p.rewrite.iter().flatten().try_for_each(|r| {
        let owner = r.owner.as_ref();
        w.put_record(Section::Answer, owner, r.rtype, Class::IN, r.ttl, &r.rdata)
    });
    let truncated = tc || cname.is_err() || answer.write(&mut w, dnssec_ok).is_err();
    if truncated {
        w.rollback(after_question);
    }
    let mut qh = Header {
        id: p.id,
        ..Header::default()
    };
    qh.set_rd(p.rd);
    qh.set_cd(p.cd);
    let (len, opt) = finish(
        w,
        &qh,
        answer.rcode,
        truncated,
        limit,
        p.edns,
        answer.ede.as_ref(),
    );
    if answer.secure && p.wants_ad && p.rewrite.is_none() {
        set_ad(buf);
    }
    let mut written = Written {
        len,
        rcode: answer.rcode,
        qtype: Some(p.qtype),
        truncated,
        wildcard: None,
        opt,
    };
    if !p.extras.is_empty() {
        written.len = p.extras.apply(buf, &written, full, policy);
    }
    written
}
