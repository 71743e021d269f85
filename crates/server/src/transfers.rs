//! transfers -- the policy for outgoing zone transfers: who may transfer which zone, and
//! what a worker does with an AXFR or IXFR query (the messages themselves come from
//! `shardns_zone::xfr`).
//!
//! An IXFR from a serial the zone's journal reaches back to is answered in incremental
//! form ([`crate::journal`]: the changes since, condensed): over TCP streamed as a
//! [`Transfer`], over UDP in one message if it fits, else our SOA alone (RFC 1995 §2).
//! Without such a journal an IXFR gets the whole zone in AXFR form (RFC 1995 §4).
//!
//! Transfers are authorised by client address (`allow_transfer`, default nobody) and, for
//! a zone with a `transfer_key`, by a TSIG signature with that key (RFC 8945); a signed
//! request's answer is signed, every message of it. Over TCP an allowed AXFR, or an IXFR from an older serial, becomes a
//! [`Transfer`] the connection streams as the client reads; everything else is one message:
//! FORMERR (IXFR without the client's SOA), NOTIMP (AXFR over UDP, as Knot DNS answers),
//! NOTAUTH (not a zone apex served here, as BIND and Knot answer), REFUSED (not allowed),
//! or our SOA alone (IXFR from a current client, and every allowed IXFR over UDP, RFC 1995 §2).
//!
//! Only queries `shardns_zone::respond` classifies as transfers reach this module (through
//! `dispatch`), so it costs nothing per ordinary query.

use shardns_control::journal::Journals;
use shardns_control::signed::tsig_refusal;
use shardns_control::TransferAcl;
use shardns_wire::tsig::{self, Signer};
use shardns_wire::{Query, RType, Rcode, Transport};
use shardns_zone::xfr::{self, Read, Request, Transfer};
use shardns_zone::{OptAt, Written, Zone, ZoneSet};
use std::net::IpAddr;
use std::sync::Arc;

/// What the policy makes of a transfer query.
pub(crate) enum TransferAnswer {
    /// Send this one message (already written to `out`).
    Reply(Written),
    /// Stream this transfer (TCP only).
    Stream(Box<Transfer>),
}

/// Decides `query`, a query [`shardns_zone::respond`] classified as a transfer (AXFR or
/// IXFR, class IN). Replies are written into `out`, which must hold 512 octets (over UDP,
/// pass the client's limit). `now` (seconds since the epoch) checks and makes TSIG
/// signatures.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decide(
    zones: &ZoneSet,
    acl: &TransferAcl,
    journals: &Journals,
    query: &Query<'_>,
    peer: Option<IpAddr>,
    tcp: bool,
    now: u64,
    out: &mut [u8],
) -> TransferAnswer {
    let (req, rcode) = match xfr::request(query) {
        // `respond` classifies only class-IN AXFR and IXFR queries as transfers, so this is
        // not expected; were the two ever to disagree, the query is refused, not a panic.
        Read::NotTransfer => {
            let transport = if tcp { Transport::Tcp } else { Transport::Udp };
            return TransferAnswer::Reply(shardns_zone::refuse(query, transport, out));
        }
        Read::Malformed(req) => (req, Rcode::FORMERR),
        Read::Transfer(req) => {
            let zone = zones.get(req.qname.as_ref());
            match zone {
                _ if !tcp && req.qtype == RType::AXFR => (req, Rcode::NOTIMP),
                None => (req, Rcode::NOTAUTH),
                Some(z) if !peer.is_some_and(|ip| acl.allows(z.apex(), ip)) => {
                    (req, Rcode::REFUSED)
                }
                // A secondary zone with nothing to serve (expired, never transferred).
                Some(z) if z.is_unavailable() => (req, Rcode::SERVFAIL),
                Some(z) => {
                    // A signed request must verify (else NOTAUTH and the TSIG error, RFC 8945
                    // §5.2); a zone with a transfer key takes only requests signed with it.
                    let signer = match tsig::read(query.bytes()) {
                        Err(_) => return reply(&req, Rcode::FORMERR, None, None, now, out),
                        Ok(None) => None,
                        Ok(Some(sig)) => match tsig::verify(query.bytes(), &sig, acl.keys(), now) {
                            Ok(key) => Some(Signer::new(key, &sig)),
                            Err(failure) => {
                                let w =
                                    tsig_refusal(&sig, &failure, now, out, |rcode, o| match reply(
                                        &req, rcode, None, None, now, o,
                                    ) {
                                        TransferAnswer::Reply(w) => w,
                                        TransferAnswer::Stream(_) => unreachable!("one message"),
                                    });
                                return TransferAnswer::Reply(w);
                            }
                        },
                    };
                    let required = acl.policy(z.apex()).1;
                    if required.is_some_and(|k| {
                        signer
                            .as_ref()
                            .is_none_or(|s| !s.key().as_ref().eq_ci(&k.as_ref()))
                    }) {
                        return reply(&req, Rcode::REFUSED, None, signer, now, out);
                    }
                    let current = req
                        .client_serial
                        .is_some_and(|s| xfr::is_current(s, z.serial()));
                    // The changes since the client's serial, if the journal has them.
                    let diff = match req.client_serial {
                        Some(s) if req.qtype == RType::IXFR && !current => journals
                            .history(z.apex())
                            .and_then(|h| h.since(s, z.serial())),
                        _ => None,
                    };
                    if let Some(diff) = diff {
                        let mut t = Transfer::incremental(Arc::clone(z), req, diff);
                        if let Some(s) = signer.clone() {
                            t.sign_with(s);
                        }
                        t.set_time(now);
                        if tcp {
                            return TransferAnswer::Stream(Box::new(t));
                        }
                        // UDP: the whole answer in one message, else our SOA alone.
                        if let Some(len) = t.next_message(out) {
                            if t.is_done() && !t.failed() {
                                return TransferAnswer::Reply(Written {
                                    len,
                                    rcode: Rcode::NOERROR,
                                    qtype: Some(RType::IXFR),
                                    truncated: false,
                                    wildcard: None,
                                    opt: OptAt::Unknown,
                                });
                            }
                        }
                        let req = t.request().clone();
                        return reply(&req, Rcode::NOERROR, Some(z), signer, now, out);
                    }
                    if req.qtype == RType::AXFR || (tcp && !current) {
                        let mut t = Transfer::new(Arc::clone(z), req);
                        if let Some(s) = signer {
                            t.sign_with(s);
                        }
                        t.set_time(now);
                        return TransferAnswer::Stream(Box::new(t));
                    }
                    return reply(&req, Rcode::NOERROR, Some(z), signer, now, out);
                }
            }
        }
    };
    reply(&req, rcode, None, None, now, out)
}

/// A one-message answer, signed if `signer` is given.
fn reply(
    req: &Request,
    rcode: Rcode,
    soa: Option<&Arc<Zone>>,
    signer: Option<Signer>,
    now: u64,
    out: &mut [u8],
) -> TransferAnswer {
    let limit = signer.as_ref().map_or(out.len(), |s| s.limit(out.len()));
    let (mut len, truncated) = xfr::reply(req, rcode, soa.map(|z| &**z), &mut out[..limit]);
    if let Some(mut s) = signer {
        len = s.sign(out, len, now);
    }
    TransferAnswer::Reply(Written {
        len,
        rcode,
        qtype: Some(req.qtype),
        truncated,
        wildcard: None,
        // Written in `zone::xfr`, which does not say.
        opt: OptAt::Unknown,
    })
}
