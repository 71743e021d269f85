//! rpz::build -- a policy zone from its records: each owner name read as a trigger
//! (QNAME, wildcard, `rpz-client-ip`, `rpz-ip` and `rpz-nsip` prefixes, `rpz-nsdname`
//! names and wildcards) and its records as an action.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use shardns_wire::{Name, NameBuf, NameRef, RType};

use std::sync::Arc;

use super::shards::{Locals, Names};
use super::{LocalData, LocalRecord, Override, PolicyZone, Stored};
use crate::Error;

/// Builds a [`PolicyZone`] record by record (in any order).
pub struct PolicyZoneBuilder {
    zone: PolicyZone,
}

/// The label under the zone that makes an owner a client-IP trigger.
const CLIENT_IP: &[u8] = b"rpz-client-ip";
/// The label that makes an owner an IP-answer trigger.
const ANSWER_IP: &[u8] = b"rpz-ip";
/// The label that makes an owner a name-server name trigger.
const NSDNAME: &[u8] = b"rpz-nsdname";
/// The label that makes an owner a name-server address trigger.
const NSIP: &[u8] = b"rpz-nsip";

impl PolicyZoneBuilder {
    /// An empty policy zone `name`, with its `policy` override; `log`: its hits are
    /// logged.
    pub fn new(name: Name, policy: Override, log: bool) -> Self {
        Self {
            zone: PolicyZone {
                name,
                policy,
                log,
                serial: 0,
                qnames: Names::default(),
                wildcards: Names::default(),
                clients: Arc::default(),
                answer_ips: Arc::default(),
                ns_names: Names::default(),
                ns_wildcards: Names::default(),
                ns_ips: Arc::default(),
                local: Locals::default(),
                hits: Default::default(),
            },
        }
    }

    /// Room for `records` more QNAME triggers (most records of a big policy zone are), so
    /// that the index does not grow by doubling, holding two copies at each step.
    /// Before the first record, it also sizes the shards of the QNAME table for them (see
    /// [`PolicyZone::patched`]: an update copies the shards it touches).
    pub fn reserve(&mut self, records: usize) {
        if self.zone.qnames.is_empty() {
            self.zone.qnames = Names::for_names(records);
        }
        self.zone.qnames.reserve(records);
    }

    /// Adds one record of the zone; `line` names it in errors. The apex's records (SOA,
    /// NS) are not policy; DNSSEC records are skipped.
    pub fn add(
        &mut self,
        owner: NameRef<'_>,
        rtype: RType,
        ttl: u32,
        rdata: &[u8],
        line: usize,
    ) -> Result<(), Error> {
        let err = |message: String| Error::Policy { line, message };
        let (ip_table, key) = match classify(self.zone.name.as_ref(), owner, rtype).map_err(err)? {
            Slot::Apex => {
                if rtype == RType::SOA && rdata.len() >= 20 {
                    let s = &rdata[rdata.len() - 20..];
                    self.zone.serial = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
                }
                return Ok(());
            }
            Slot::Skip => return Ok(()),
            Slot::Ip { kind, ip, len } => (Some((kind, ip, len)), None),
            Slot::Name { kind, key } => (None, Some((kind, key))),
        };
        let stored = self.stored_action(rtype, ttl, rdata).map_err(err)?;
        let old = match (ip_table, key) {
            (Some((kind, ip, len)), _) => {
                Arc::make_mut(self.zone.ip_table(kind)).insert(ip, len, stored)
            }
            (_, Some((kind, key))) => {
                // An owner seen before keeps its entry; local data merges into it.
                self.zone
                    .name_table(kind)
                    .get_or_insert(key.as_ref(), stored)
            }
            (None, None) => unreachable!("a trigger is a name or an address"),
        };
        self.merge(old, stored, rtype, ttl, rdata).map_err(err)
    }

    /// The action one record stands for; local data gets a new entry (merged with the
    /// owner's others by [`Self::merge`]).
    fn stored_action(&mut self, rtype: RType, ttl: u32, rdata: &[u8]) -> Result<Stored, String> {
        if let Some(s) = special(rtype, rdata)? {
            return Ok(s);
        }
        let index = u32::try_from(self.zone.local.len())
            .ok()
            .and_then(|i| i.checked_add(Stored::LOCAL))
            .ok_or("too many local-data triggers")?;
        self.zone.local.push(LocalData {
            records: vec![LocalRecord {
                rtype,
                ttl,
                rdata: rdata.into(),
            }],
        });
        Ok(Stored(index))
    }

    /// The owner already had `old` when `new` (from this record) came: local data merges
    /// (the new entry dropped), anything else conflicts.
    fn merge(
        &mut self,
        old: Option<Stored>,
        new: Stored,
        rtype: RType,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), String> {
        let Some(old) = old else { return Ok(()) };
        let is_local = |s: Stored| s.0 >= Stored::LOCAL;
        if !(is_local(old) && is_local(new)) {
            return Err("a special CNAME (., *., rpz-*) and other records at one trigger".into());
        }
        // The new entry is the last one pushed: take it back.
        self.zone.local.pop();
        let data = self.zone.local.get_mut((old.0 - Stored::LOCAL) as usize);
        if rtype == RType::CNAME || data.records.iter().any(|r| r.rtype == RType::CNAME) {
            return Err("a CNAME and other records at one trigger".into());
        }
        let record = LocalRecord {
            rtype,
            ttl,
            rdata: rdata.into(),
        };
        if !data.records.contains(&record) {
            data.records.push(record);
        }
        Ok(())
    }

    /// The policy zone, its tables trimmed to size.
    pub fn finish(mut self) -> PolicyZone {
        self.zone.qnames.shrink();
        self.zone.wildcards.shrink();
        self.zone.ns_names.shrink();
        self.zone.ns_wildcards.shrink();
        self.zone.local.shrink();
        self.zone
    }
}

/// The special action a record stands for (a CNAME to `.`, `*.` or `rpz-*.`), if it is one.
pub(super) fn special(rtype: RType, rdata: &[u8]) -> Result<Option<Stored>, String> {
    if rtype != RType::CNAME {
        return Ok(None);
    }
    let target = NameRef::from_wire(rdata).map_err(|e| format!("bad CNAME: {e}"))?;
    Ok(match target.as_wire() {
        [0] => Some(Stored::NXDOMAIN),
        [1, b'*', 0] => Some(Stored::NODATA),
        _ if target.label_count() == 1 => {
            let l = target.first_label();
            if l.eq_ignore_ascii_case(b"rpz-passthru") {
                Some(Stored::PASSTHRU)
            } else if l.eq_ignore_ascii_case(b"rpz-drop") {
                Some(Stored::DROP)
            } else if l.eq_ignore_ascii_case(b"rpz-tcp-only") {
                Some(Stored::TCP_ONLY)
            } else {
                None
            }
        }
        _ => None,
    })
}

/// What an owner name of a policy zone is.
// One value per record read, never stored: the name is kept inline, not boxed.
#[allow(clippy::large_enum_variant)]
pub(super) enum Slot {
    /// The apex (its SOA and NS are not policy).
    Apex,
    /// A DNSSEC record, skipped.
    Skip,
    /// A client-IP, IP-answer or NSIP trigger.
    Ip { kind: IpKind, ip: IpAddr, len: u8 },
    /// A QNAME or NSDNAME trigger: its name (relative to the zone, or for NSDNAME to
    /// `rpz-nsdname`; the `*.` taken off a wildcard).
    Name { kind: NameKind, key: NameBuf },
}

/// Which address table a prefix trigger goes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum IpKind {
    /// `rpz-client-ip`.
    Client,
    /// `rpz-ip`.
    Answer,
    /// `rpz-nsip`.
    Ns,
}

/// Which name table a name trigger goes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum NameKind {
    /// A QNAME trigger.
    Qname,
    /// A QNAME wildcard (`*.name`).
    Wildcard,
    /// An NSDNAME trigger (`name.rpz-nsdname`).
    Ns,
    /// An NSDNAME wildcard (`*.name.rpz-nsdname`).
    NsWildcard,
}

/// The trigger `owner` (of a record of type `rtype`) is in the policy zone `origin`.
pub(super) fn classify(
    origin: NameRef<'_>,
    owner: NameRef<'_>,
    rtype: RType,
) -> Result<Slot, String> {
    let Some(rel) = owner.strip_suffix(&origin) else {
        return Err(format!("{owner} is outside the policy zone {origin}"));
    };
    if rel == 0 {
        return Ok(Slot::Apex);
    }
    if matches!(
        rtype,
        RType::RRSIG | RType::NSEC | RType::NSEC3 | RType::NSEC3PARAM | RType::DNSKEY
    ) {
        return Ok(Slot::Skip);
    }
    let rel_wire = &owner.as_wire()[..owner.len() - origin.len()];
    let top = owner.suffix(origin.label_count() + 1).first_label();
    let ip_kind = [
        (CLIENT_IP, IpKind::Client),
        (ANSWER_IP, IpKind::Answer),
        (NSIP, IpKind::Ns),
    ]
    .into_iter()
    .find(|(l, _)| top.eq_ignore_ascii_case(l));
    if let Some((_, kind)) = ip_kind {
        let (ip, len) = ip_prefix(owner, rel - 1)?;
        return Ok(Slot::Ip { kind, ip, len });
    }
    let wildcard = owner.is_wildcard();
    let mut labels = if wildcard { &rel_wire[2..] } else { rel_wire };
    let ns = top.eq_ignore_ascii_case(NSDNAME);
    if ns {
        // The name server's name is what stands before `rpz-nsdname`.
        labels = &labels[..labels.len() - (NSDNAME.len() + 1)];
        if labels.is_empty() {
            return Err(format!("{owner}: an NSDNAME trigger without a name"));
        }
    }
    let kind = match (ns, wildcard) {
        (false, false) => NameKind::Qname,
        (false, true) => NameKind::Wildcard,
        (true, false) => NameKind::Ns,
        (true, true) => NameKind::NsWildcard,
    };
    let mut key = NameBuf::new();
    key.set_concat(labels, NameRef::from_validated(&[0]))
        .map_err(|e| e.to_string())?;
    Ok(Slot::Name { kind, key })
}

/// The prefix of a client-IP or IP-answer trigger whose first `n` labels are `LEN.ADDR...` (the
/// address's parts least significant first; IPv6 words in hex, `zz` for a run of
/// zeros): the address and the length in IPv6 terms.
pub(super) fn ip_prefix(owner: NameRef<'_>, n: usize) -> Result<(IpAddr, u8), String> {
    let labels: Vec<&[u8]> = owner.labels().take(n).collect();
    let bad = || format!("bad address trigger {owner}");
    let text = |l: &[u8]| std::str::from_utf8(l).map(str::to_owned).map_err(|_| bad());
    let (first, parts) = labels.split_first().ok_or_else(bad)?;
    let len: u8 = text(first)?.parse().map_err(|_| bad())?;
    let parts: Vec<String> = parts.iter().map(|l| text(l)).collect::<Result<_, _>>()?;
    let (ip, len) =
        if parts.len() == 4 && len <= 32 && parts.iter().all(|p| p.parse::<u8>().is_ok()) {
            let o: Vec<u8> = parts.iter().rev().map(|p| p.parse().unwrap_or(0)).collect();
            (IpAddr::V4(Ipv4Addr::new(o[0], o[1], o[2], o[3])), len + 96)
        } else if len <= 128 {
            let words: Vec<&str> = parts.iter().rev().map(|p| p.as_str()).collect();
            let text = words
                .iter()
                .map(|w| if w.eq_ignore_ascii_case("zz") { "" } else { w })
                .collect::<Vec<_>>()
                .join(":");
            let text = match (text.starts_with(':'), text.ends_with(':')) {
                (true, _) => format!(":{text}"),
                (_, true) => format!("{text}:"),
                _ => text,
            };
            let v6: Ipv6Addr = text.parse().map_err(|_| bad())?;
            (IpAddr::V6(v6), len)
        } else {
            return Err(bad());
        };
    let full = match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    };
    let host = if len == 0 {
        full
    } else {
        full & !(u128::MAX << (128 - u32::from(len)))
    };
    if host != 0 {
        return Err(format!(
            "{}: address bits set past the prefix length",
            bad()
        ));
    }
    Ok((ip, len))
}
