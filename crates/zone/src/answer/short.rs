//! answer::short -- responses with no data from a zone: REFUSED, the answer to a NOTIFY,
//! NOTIMP and FORMERR with a bare header, and the whole answer of an authoritative-only
//! server for tests, benches and fuzzing.

use super::{respond, response_header, write, Body, OptAt, Reply, Written};
use crate::db::ZoneSet;
use shardns_wire::message::HEADER_LEN;
use shardns_wire::{Header, MessageWriter, Opcode, Query, QueryError, RType, Rcode, Transport};

/// REFUSED, with the question and our OPT: the answer to a query for a name outside our
/// zones (or a transfer nobody may take) when no other role takes it.
pub fn refuse(query: &Query<'_>, transport: Transport, out: &mut [u8]) -> Written {
    write(query, transport, out, |_| Body {
        rcode: Rcode::REFUSED,
        ..Body::default()
    })
}

/// The answer to a NOTIFY (RFC 1996 §4.7): the question again, opcode NOTIFY, AA when
/// `rcode` is NOERROR (the notice was taken), else `rcode` (REFUSED, NOTAUTH).
pub fn notify_answer(query: &Query<'_>, rcode: Rcode, out: &mut [u8]) -> Written {
    write(query, Transport::Tcp, out, |_| Body {
        rcode,
        aa: rcode == Rcode::NOERROR,
        ..Body::default()
    })
}

/// NOTIMP with a bare header: the answer to an opcode no role of the server takes (a
/// NOTIFY to a server without secondary zones).
pub fn not_implemented(query: &Query<'_>, out: &mut [u8]) -> Written {
    bare(response_header(query.header()), Rcode::NOTIMP, None, out)
}

/// The answer to bytes that are not a readable query: nothing for a response or a runt
/// (`None`), else a bare header with NOTIMP (an opcode we do not implement) or FORMERR.
pub fn reject(error: &QueryError, out: &mut [u8]) -> Option<Written> {
    let QueryError::Malformed { header, qtype } = error else {
        return None;
    };
    let rcode = if header.opcode() != Opcode::QUERY {
        Rcode::NOTIMP
    } else {
        Rcode::FORMERR
    };
    let qtype = if rcode == Rcode::NOTIMP { None } else { *qtype };
    Some(bare(response_header(header), rcode, qtype, out))
}

/// The whole answer a server with only the authoritative role gives to `message`: parse,
/// [`respond`], and [`refuse`] what another role would take. For tests, benches and fuzzing;
/// a server dispatches [`Reply`] itself.
pub fn respond_to_message(
    zones: &ZoneSet,
    message: &[u8],
    transport: Transport,
    out: &mut [u8],
) -> Option<Written> {
    // Borrowed, not moved out of the `Result`: the query (with its name) is not copied.
    let parsed = Query::parse(message);
    let query = match &parsed {
        Ok(q) => q,
        Err(e) => return reject(e, out),
    };
    Some(match respond(zones, query, transport, out) {
        Reply::Answer(w) | Reply::Error(w) => w,
        Reply::Transfer | Reply::NotOurs => refuse(query, transport, out),
        Reply::Notify | Reply::Update => not_implemented(query, out),
    })
}

/// A response with only a header (FORMERR, NOTIMP: the question may be unreadable).
pub(super) fn bare(mut h: Header, rcode: Rcode, qtype: Option<RType>, out: &mut [u8]) -> Written {
    h.set_rcode(rcode);
    let w = MessageWriter::new(out, HEADER_LEN);
    let len = w.finish(&h).len();
    Written {
        len,
        rcode,
        qtype,
        truncated: false,
        wildcard: None,
        opt: OptAt::Absent,
    }
}
