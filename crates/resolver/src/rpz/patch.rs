//! rpz::patch -- a policy zone's next version from an IXFR's changes
//! ([`PolicyZone::patched`]): only the triggers the changes touch are worked out again,
//! and the new version shares every shard of the name tables and every chunk of local
//! data it does not change with the old one (`shards`), so that updating a
//! million-trigger zone costs memory in proportion to the change, not to the zone.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::{NameRef, RType};

use super::build::{classify, special, IpKind, NameKind, Slot};
use super::{LocalData, LocalRecord, PolicyZone, Stored};
use crate::Error;

/// One record an IXFR deletes or adds, in the order the transfer gives them.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    /// Added (else deleted).
    pub add: bool,
    /// The record's owner, type, TTL and rdata (uncompressed).
    pub owner: NameRef<'a>,
    /// Its type.
    pub rtype: RType,
    /// Its TTL.
    pub ttl: u32,
    /// Its rdata, names uncompressed.
    pub rdata: &'a [u8],
}

/// A trigger touched by the changes: a name (lower-cased wire form, relative to the zone
/// and ended by the root) in a QNAME or NSDNAME table, or a prefix in the client-IP,
/// IP-answer or NSIP table.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Name { kind: NameKind, wire: Vec<u8> },
    Ip { kind: IpKind, ip: IpAddr, len: u8 },
}

/// The special CNAME targets, as the records they were read from.
const SPECIAL_TARGETS: [(Stored, &[u8]); 5] = [
    (Stored::NXDOMAIN, b"\x00"),
    (Stored::NODATA, b"\x01*\x00"),
    (Stored::PASSTHRU, b"\x0crpz-passthru\x00"),
    (Stored::DROP, b"\x08rpz-drop\x00"),
    (Stored::TCP_ONLY, b"\x0crpz-tcp-only\x00"),
];

impl PolicyZone {
    /// The next version of this zone: `changes` (an IXFR's deletions and additions, in
    /// order) made, its serial `serial`. An error (a deletion of a record the zone does
    /// not have, or a trigger left broken, as [`super::PolicyZoneBuilder`] would say) leaves
    /// this version as it is: the caller transfers the whole zone instead. The hit
    /// counters are shared with this version.
    pub fn patched<'c>(
        &self,
        changes: impl IntoIterator<Item = Change<'c>>,
        serial: u32,
    ) -> Result<PolicyZone, Error> {
        let mut work: HashMap<Key, Vec<LocalRecord>> = HashMap::new();
        for (i, c) in changes.into_iter().enumerate() {
            // Not a file: the change is named by its place in the transfer.
            let err = |message: String| Error::Policy {
                line: 0,
                message: format!("change {} of the IXFR: {message}", i + 1),
            };
            let key = match classify(self.name.as_ref(), c.owner, c.rtype).map_err(err)? {
                Slot::Apex | Slot::Skip => continue,
                Slot::Ip { kind, ip, len } => Key::Ip { kind, ip, len },
                Slot::Name { kind, key } => {
                    let mut lower = [0u8; MAX_NAME_LEN];
                    let n = key.as_ref().lowercase_into(&mut lower);
                    Key::Name {
                        kind,
                        wire: lower[..n].to_vec(),
                    }
                }
            };
            let records = work.entry(key).or_insert_with_key(|k| self.records_at(k));
            let at = records
                .iter()
                .position(|r| r.rtype == c.rtype && r.rdata.eq_ignore_ascii_case(c.rdata));
            match (c.add, at) {
                (true, Some(p)) => records[p].ttl = c.ttl,
                (true, None) => records.push(LocalRecord {
                    rtype: c.rtype,
                    ttl: c.ttl,
                    rdata: c.rdata.into(),
                }),
                (false, Some(p)) => {
                    records.remove(p);
                }
                (false, None) => {
                    return Err(err(format!(
                        "the change deletes {} {}, which is not in the zone",
                        c.owner, c.rtype
                    )))
                }
            }
        }
        let mut next = PolicyZone {
            name: self.name.clone(),
            policy: self.policy.clone(),
            log: self.log,
            serial,
            qnames: Default::default(),
            wildcards: Default::default(),
            clients: Arc::clone(&self.clients),
            answer_ips: Arc::clone(&self.answer_ips),
            ns_names: Default::default(),
            ns_wildcards: Default::default(),
            ns_ips: Arc::clone(&self.ns_ips),
            local: self.local.clone(),
            hits: Arc::clone(&self.hits),
        };
        // The changed names of each name table, in the order of `NameKind`.
        let mut names: [Vec<_>; 4] = Default::default();
        for (key, records) in &work {
            let action = match records.is_empty() {
                true => None,
                false => Some(next.push_action(records).map_err(|message| Error::Policy {
                    line: 0,
                    message: format!("{}: {message}", key_text(key)),
                })?),
            };
            match key {
                Key::Name { kind, wire } => {
                    names[*kind as usize].push((NameRef::from_validated(wire), action));
                }
                Key::Ip { kind, ip, len } => {
                    let table = Arc::make_mut(next.ip_table(*kind));
                    table.remove(*ip, *len);
                    if let Some(a) = action {
                        table.insert(*ip, *len, a);
                    }
                }
            }
        }
        let [qnames, wildcards, ns_names, ns_wildcards] = &names;
        next.qnames = self.qnames.with(qnames);
        next.wildcards = self.wildcards.with(wildcards);
        next.ns_names = self.ns_names.with(ns_names);
        next.ns_wildcards = self.ns_wildcards.with(ns_wildcards);
        Ok(next)
    }

    /// The records a trigger has now (a special action as its CNAME, TTL 0: a deletion
    /// matches by type and data).
    fn records_at(&self, key: &Key) -> Vec<LocalRecord> {
        let stored = match key {
            Key::Name { kind, wire } => {
                let table = match kind {
                    NameKind::Qname => &self.qnames,
                    NameKind::Wildcard => &self.wildcards,
                    NameKind::Ns => &self.ns_names,
                    NameKind::NsWildcard => &self.ns_wildcards,
                };
                table.get(NameRef::from_validated(wire))
            }
            Key::Ip { kind, ip, len } => {
                let table = match kind {
                    IpKind::Client => &self.clients,
                    IpKind::Answer => &self.answer_ips,
                    IpKind::Ns => &self.ns_ips,
                };
                table.get(*ip, *len)
            }
        };
        let Some(stored) = stored else {
            return Vec::new();
        };
        if let Some((_, target)) = SPECIAL_TARGETS.iter().find(|(s, _)| *s == stored) {
            return vec![LocalRecord {
                rtype: RType::CNAME,
                ttl: 0,
                rdata: (*target).into(),
            }];
        }
        self.local
            .get((stored.0 - Stored::LOCAL) as usize)
            .records
            .clone()
    }

    /// The action of a trigger with these records (a new local-data entry if they are
    /// not one special CNAME).
    fn push_action(&mut self, records: &[LocalRecord]) -> Result<Stored, String> {
        let specials = records
            .iter()
            .map(|r| special(r.rtype, &r.rdata))
            .collect::<Result<Vec<_>, _>>()?;
        match (records.len(), specials.iter().flatten().next()) {
            (1, Some(s)) => return Ok(*s),
            (_, Some(_)) => {
                return Err(
                    "a special CNAME (., *., rpz-*) and other records at one trigger".into(),
                )
            }
            _ => {}
        }
        if records.len() > 1 && records.iter().any(|r| r.rtype == RType::CNAME) {
            return Err("a CNAME and other records at one trigger".into());
        }
        let index = u32::try_from(self.local.len())
            .ok()
            .and_then(|i| i.checked_add(Stored::LOCAL))
            .ok_or("too many local-data triggers")?;
        self.local.push(LocalData {
            records: records.to_vec(),
        });
        Ok(Stored(index))
    }
}

/// A trigger in messages.
fn key_text(key: &Key) -> String {
    match key {
        Key::Name { kind, wire } => {
            let name = NameRef::from_validated(wire);
            if matches!(kind, NameKind::Wildcard | NameKind::NsWildcard) {
                format!("*.{name}")
            } else {
                name.to_string()
            }
        }
        Key::Ip { ip, len, .. } => format!("{ip}/{len}"),
    }
}
