//! xfr -- outgoing zone transfers: who may transfer which zone, and the decision a worker
//! takes on an AXFR or IXFR query (the messages themselves come from `shardns_zone::xfr`).
//!
//! Transfers are authorised by client address only (`allow_transfer`, no TSIG yet); the
//! default is nobody. Over TCP an allowed AXFR, or an IXFR from an older serial, becomes a
//! [`Transfer`] the connection streams as the client reads; everything else is one message:
//! FORMERR (IXFR without the client's SOA), NOTIMP (AXFR over UDP, as Knot DNS answers),
//! NOTAUTH (not a zone apex served here, as BIND and Knot answer), REFUSED (not allowed),
//! or our SOA alone (IXFR from a current client, and every allowed IXFR over UDP, RFC 1995 §2).
//!
//! Only queries the normal answer path refused reach this module, so it costs nothing per
//! ordinary query.

use crate::config::{AclEntry, Config};
use shardns_wire::{Name, NameRef, RType, Rcode};
use shardns_zone::xfr::{self, Read, Transfer};
use shardns_zone::{Outcome, ZoneSet};
use std::net::IpAddr;
use std::sync::Arc;

/// The transfer ACL of every configured zone (and of the embedded one), replaced as a
/// whole on reload.
#[derive(Debug, Default)]
pub(crate) struct TransferAcl {
    zones: Vec<(Name, Vec<AclEntry>)>,
    default: Vec<AclEntry>,
}

impl TransferAcl {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            zones: config
                .zones
                .iter()
                .map(|z| (z.name.clone(), config.transfer_acl(&z.name).to_vec()))
                .collect(),
            default: config.server.allow_transfer.clone(),
        }
    }

    /// True if some client may transfer some zone.
    pub(crate) fn allows_anyone(&self) -> bool {
        !self.default.is_empty() || self.zones.iter().any(|(_, acl)| !acl.is_empty())
    }

    /// True if `ip` may transfer the zone at `apex`.
    pub(crate) fn allows(&self, apex: NameRef<'_>, ip: IpAddr) -> bool {
        self.zones
            .iter()
            .find(|(name, _)| name.as_ref().eq_ci(&apex))
            .map_or(&self.default, |(_, acl)| acl)
            .iter()
            .any(|a| a.contains(ip))
    }
}

/// What to do with a transfer query.
pub(crate) enum Decision {
    /// Send this one message (already written to `out`).
    Reply(Outcome),
    /// Stream this transfer (TCP only).
    Transfer(Box<Transfer>),
}

/// Decides `query`, a query [`shardns_zone::respond`] answered REFUSED with type AXFR or
/// IXFR. `None`: not a transfer after all (e.g. class CH): keep the REFUSED. Replies are
/// written into `out`, which must hold 512 octets (over UDP, pass the client's limit).
pub(crate) fn decide(
    zones: &ZoneSet,
    acl: &TransferAcl,
    query: &[u8],
    peer: Option<IpAddr>,
    tcp: bool,
    out: &mut [u8],
) -> Option<Decision> {
    let (req, rcode, soa) = match xfr::request(query) {
        Read::NotTransfer => return None,
        Read::Malformed(req) => (req, Rcode::FORMERR, None),
        Read::Transfer(req) => {
            let zone = zones.get(req.qname.as_ref());
            match zone {
                _ if !tcp && req.qtype == RType::AXFR => (req, Rcode::NOTIMP, None),
                None => (req, Rcode::NOTAUTH, None),
                Some(z) if !peer.is_some_and(|ip| acl.allows(z.apex(), ip)) => {
                    (req, Rcode::REFUSED, None)
                }
                Some(z) => {
                    let current = req
                        .client_serial
                        .is_some_and(|s| xfr::is_current(s, z.serial()));
                    if req.qtype == RType::AXFR || (tcp && !current) {
                        let zone = Arc::clone(z);
                        return Some(Decision::Transfer(Box::new(Transfer::new(zone, req))));
                    }
                    (req, Rcode::NOERROR, Some(Arc::clone(z)))
                }
            }
        }
    };
    let (len, truncated) = xfr::reply(&req, rcode, soa.as_deref(), out);
    Some(Decision::Reply(Outcome {
        len,
        rcode,
        qtype: Some(req.qtype),
        truncated,
        wildcard: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn acl_by_zone_with_the_servers_default() {
        let mut c = Config::default();
        c.server.allow_transfer = vec!["10.0.0.0/8".parse().unwrap()];
        let mut z = crate::config::ZoneConfig::new("a.test".parse().unwrap(), "f".into());
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
