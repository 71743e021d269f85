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

use crate::journal::Journals;
use crate::signed::tsig_refusal;
use shardns_config::{AclEntry, Config};
use shardns_wire::tsig::{self, Key, Signer};
use shardns_wire::{Name, NameRef, Query, RType, Rcode, Transport};
use shardns_zone::xfr::{self, Read, Request, Transfer};
use shardns_zone::{OptAt, Written, Zone, ZoneSet};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The transfer ACL of every configured zone (and of the embedded one), replaced as a
/// whole on reload. A hash lookup per transfer query, whatever the number of zones.
#[derive(Debug, Default)]
pub(crate) struct TransferAcl {
    /// Per configured zone with a policy of its own, by the apex's hash (looked up without
    /// making a name): the apex, the addresses, and the TSIG key a transfer must carry.
    zones: HashMap<u64, Vec<Policy>>,
    default: Vec<AclEntry>,
    default_key: Option<Name>,
    /// Every `[[key]]`: a signed request is checked against these.
    keys: Vec<Key>,
    /// Some client may transfer some zone (read per UDP batch, so computed once).
    anyone: bool,
}

impl TransferAcl {
    pub(crate) fn new(config: &Config) -> Self {
        let default = config.server.allow_transfer.clone();
        let default_key = config.server.transfer_key.clone();
        let mut zones: HashMap<u64, Vec<Policy>> = HashMap::new();
        for z in &config.zones {
            if z.allow_transfer.is_none() && z.transfer_key.is_none() {
                continue;
            }
            let policy = Policy {
                apex: z.name.clone(),
                acl: z.allow_transfer.clone().unwrap_or_else(|| default.clone()),
                key: z.transfer_key.clone().or_else(|| default_key.clone()),
            };
            let same = zones.entry(z.name.as_ref().hash_ci()).or_default();
            // A later table for the same apex replaces the earlier one.
            same.retain(|p| p.apex != policy.apex);
            same.push(policy);
        }
        let anyone = !default.is_empty() || zones.values().flatten().any(|p| !p.acl.is_empty());
        Self {
            zones,
            default,
            default_key,
            keys: config.keys.iter().map(|k| k.0.clone()).collect(),
            anyone,
        }
    }

    /// The zone's addresses and required key: its own, else the server's defaults.
    fn policy(&self, apex: NameRef<'_>) -> (&[AclEntry], Option<&Name>) {
        let own = self
            .zones
            .get(&apex.hash_ci())
            .and_then(|same| same.iter().find(|p| p.apex.as_ref().eq_ci(&apex)));
        match own {
            Some(p) => (&p.acl, p.key.as_ref()),
            None => (&self.default, self.default_key.as_ref()),
        }
    }

    /// The key transfers of the zone at `apex` must be signed with, if any (NOTIFY of it
    /// is signed with it too).
    pub(crate) fn key_for(&self, apex: NameRef<'_>) -> Option<&Key> {
        let name = self.policy(apex).1?;
        self.keys
            .iter()
            .find(|k| k.name.as_ref().eq_ci(&name.as_ref()))
    }

    /// Every `[[key]]`, for checking signed queries.
    pub(crate) fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// True if some client may transfer some zone.
    pub(crate) fn allows_anyone(&self) -> bool {
        self.anyone
    }

    /// True if `ip` may transfer the zone at `apex`.
    pub(crate) fn allows(&self, apex: NameRef<'_>, ip: IpAddr) -> bool {
        self.policy(apex).0.iter().any(|a| a.contains(ip))
    }
}

/// One zone's own transfer policy.
#[derive(Debug)]
struct Policy {
    apex: Name,
    acl: Vec<AclEntry>,
    key: Option<Name>,
}

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
                        Ok(Some(sig)) => match tsig::verify(query.bytes(), &sig, &acl.keys, now) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_config::Config;

    #[test]
    fn acl_by_zone_with_the_servers_default() {
        let mut c = Config::default();
        c.server.allow_transfer = vec!["10.0.0.0/8".parse().unwrap()];
        let mut z = shardns_config::ZoneConfig::new("a.test".parse().unwrap(), "f".into());
        z.allow_transfer = Some(vec!["127.0.0.2".parse().unwrap()]);
        c.zones.push(z);
        let acl = TransferAcl::new(&c);
        let a: Name = "A.TEST.".parse().unwrap();
        let other: Name = "example.test.".parse().unwrap();
        assert!(acl.allows(a.as_ref(), "127.0.0.2".parse().unwrap()));
        assert!(!acl.allows(a.as_ref(), "10.1.2.3".parse().unwrap()));
        assert!(acl.allows(other.as_ref(), "10.1.2.3".parse().unwrap()));
        assert!(!acl.allows(other.as_ref(), "127.0.0.1".parse().unwrap()));
        assert!(acl.allows_anyone());
        assert!(!TransferAcl::default().allows(a.as_ref(), "127.0.0.1".parse().unwrap()));
        assert!(!TransferAcl::default().allows_anyone());
    }
}
