//! rpz -- response policy zones (RPZ, draft-vixie-dnsop-dns-rpz, as BIND implements it):
//! which client queries are rewritten, and how.
//!
//! Owns: [`Rpz`] (the policy zones, in the order they are checked) and each
//! [`PolicyZone`]'s triggers and actions, built from a zone's records (`build`), the
//! per-zone hit counters, and [`LocalData::write`], the records of a local-data answer.
//! Triggers: QNAME (exact names and `*.name` wildcards; the query name, and the targets
//! of the CNAME chain after resolution), client IP
//! (`rpz-client-ip`), the addresses of an answer (`rpz-ip`), and the names (`rpz-nsdname`,
//! exact and wildcard) and addresses (`rpz-nsip`) of the name servers of the zones above
//! the answer's names ([`Rpz::check_resolved`]). Actions: NXDOMAIN (`CNAME .`), NODATA (`CNAME *.`), PASSTHRU
//! (`CNAME rpz-passthru.`), DROP (`CNAME rpz-drop.`), TCP-only (`CNAME rpz-tcp-only.`),
//! and local data (any other records; a CNAME to another name, which the caller resolves;
//! `CNAME *.suffix` puts the query name in front of `suffix`).
//! A zone's next version from an IXFR's changes is [`PolicyZone::patched`] (`patch`): the
//! tables are copy-on-write (`shards`), so the new version shares all but the shards the
//! changes touch with the one the workers read.
//!
//! Precedence (BIND's): zones in order, the first zone with a match decides; within a
//! zone a client-IP trigger before a QNAME trigger, the longest client prefix first, an
//! exact QNAME before a wildcard, and the wildcard closest to the name first, then IP,
//! NSDNAME, NSIP. The triggers that need the resolution's data (IP, NSDNAME, NSIP) are
//! checked after it, with the QNAME and client-IP triggers of the zones after the first
//! zone that has such triggers ([`Rpz::waits_from`]): the first zone with a match decides,
//! whatever the kind (BIND's `qname-wait-recurse`, either value). Along a CNAME chain the
//! names are taken in turn (the query name's servers before a target's QNAME trigger).
//! For IP and NSIP the longest prefix holding any address of the answer (of the name
//! servers), for NSDNAME the first name server given that matches.
//!
//! The lookups are what the answer path pays when RPZ is configured: per zone, one hash
//! lookup of the query name, then one per ancestor only if the zone has wildcards (each
//! only for a label count some trigger of the zone has), and
//! per distinct client prefix length one masked lookup only if the zone has client-IP
//! triggers. Triggers are kept compactly (names back to back in one buffer, a hash table of
//! 8-octet entries), so a million-entry zone costs tens of megabytes, not hundreds.
//! Never: I/O (the caller reads the zone file and passes its records in), locks; counters
//! are atomics written on hits only.

mod build;
mod local;
mod patch;
mod resolved;
mod servers;
mod shards;
mod table;

#[cfg(test)]
mod resolved_tests;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use shardns_wire::{Name, NameBuf, NameRef};

pub use build::PolicyZoneBuilder;
pub use local::LocalData;
use local::LocalRecord;
pub use patch::Change;
use resolved::name_match;
pub use resolved::NameServer;
pub use servers::{name_servers, MIN_NS_DOTS};
use shards::{Locals, Names};
use table::IpTable;

/// TTL of the CNAME a `cname NAME` zone override answers (BIND's `max-policy-ttl`
/// default, 5 minutes).
const OVERRIDE_TTL: u32 = 300;

/// A zone's `policy` override (BIND's `policy given|disabled|passthru|...`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Override {
    /// The zone's own actions.
    #[default]
    Given,
    /// Hits are counted (and logged) but not applied; the next zones are checked.
    Disabled,
    /// Every hit is this action.
    Passthru,
    /// Every hit answers NXDOMAIN.
    Nxdomain,
    /// Every hit answers NODATA.
    Nodata,
    /// Every hit is dropped.
    Drop,
    /// Every hit over UDP answers TC.
    TcpOnly,
    /// Every hit answers a CNAME to this name.
    Cname(Name),
}

/// Which kind of trigger matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The client's address (`rpz-client-ip`).
    ClientIp,
    /// The query name (exact or wildcard owner).
    Qname,
    /// An address in the answer (`rpz-ip`).
    Ip,
    /// The name of a name server of a zone above a name of the answer (`rpz-nsdname`).
    Nsdname,
    /// An address of such a name server (`rpz-nsip`).
    Nsip,
}

impl Trigger {
    /// Its name in logs.
    pub fn label(self) -> &'static str {
        match self {
            Self::ClientIp => "client-ip",
            Self::Qname => "qname",
            Self::Ip => "ip",
            Self::Nsdname => "nsdname",
            Self::Nsip => "nsip",
        }
    }
}

/// What a policy says to do with a query.
// The CNAME target is built in place (a wildcard target holds the query name), so that a
// hit allocates nothing; one value per hit, never stored.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Action<'a> {
    /// Answer NXDOMAIN.
    Nxdomain,
    /// Answer NOERROR with no records.
    Nodata,
    /// Answer as if there were no policy (and check no further zone).
    Passthru,
    /// Send no answer.
    Drop,
    /// Over UDP answer TC with no records; over TCP answer normally.
    TcpOnly,
    /// Answer with these records, owned by the query name.
    Data(&'a LocalData),
    /// Answer this CNAME (the query name to the name given), then what the target
    /// resolves to.
    Cname(NameBuf, u32),
}

/// Counter slots of a zone's hits, by action (see [`PolicyZone::hits`]).
pub const ACTION_LABELS: [&str; 8] = [
    "nxdomain",
    "nodata",
    "passthru",
    "drop",
    "tcp-only",
    "local-data",
    "cname",
    "disabled",
];

impl Action<'_> {
    fn slot(&self) -> usize {
        match self {
            Self::Nxdomain => 0,
            Self::Nodata => 1,
            Self::Passthru => 2,
            Self::Drop => 3,
            Self::TcpOnly => 4,
            Self::Data(_) => 5,
            Self::Cname(..) => 6,
        }
    }

    /// Its name in logs and counters.
    pub fn label(&self) -> &'static str {
        ACTION_LABELS[self.slot()]
    }
}

/// A stored action: the special ones, or an index into the zone's local data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stored(u32);

impl Stored {
    const NXDOMAIN: Self = Self(0);
    const NODATA: Self = Self(1);
    const PASSTHRU: Self = Self(2);
    const DROP: Self = Self(3);
    const TCP_ONLY: Self = Self(4);
    /// Local data `i` is `Stored(LOCAL + i)`.
    const LOCAL: u32 = 5;
}

/// One policy zone: its triggers, actions and counters.
pub struct PolicyZone {
    name: Name,
    policy: Override,
    log: bool,
    serial: u32,
    qnames: Names,
    wildcards: Names,
    /// Address triggers are few: an IXFR that changes some copies the table.
    clients: Arc<IpTable>,
    answer_ips: Arc<IpTable>,
    /// NSDNAME triggers: names (relative to `rpz-nsdname`) and wildcards.
    ns_names: Names,
    ns_wildcards: Names,
    /// NSIP triggers.
    ns_ips: Arc<IpTable>,
    local: Locals,
    /// Shared with the zone's later versions ([`PolicyZone::carry_hits`]).
    hits: Arc<[AtomicU64; ACTION_LABELS.len()]>,
}

impl core::fmt::Debug for PolicyZone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PolicyZone")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .field("serial", &self.serial)
            .field("qnames", &self.qnames.len())
            .field("wildcards", &self.wildcards.len())
            .field("client_ips", &self.clients.len())
            .field("answer_ips", &self.answer_ips.len())
            .field("ns_names", &(self.ns_names.len() + self.ns_wildcards.len()))
            .field("ns_ips", &self.ns_ips.len())
            .finish()
    }
}

impl PolicyZone {
    /// The zone's name.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// Whether its hits are logged.
    pub fn log(&self) -> bool {
        self.log
    }

    /// The serial of the SOA it was built from (0 without one).
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// Triggers: QNAME (exact, wildcard), client IP and answer IP.
    pub fn triggers(&self) -> (usize, usize, usize, usize) {
        (
            self.qnames.len(),
            self.wildcards.len(),
            self.clients.len(),
            self.answer_ips.len(),
        )
    }

    /// Name-server triggers: NSDNAME names and wildcards, NSIP prefixes.
    pub fn ns_triggers(&self) -> (usize, usize, usize) {
        (
            self.ns_names.len(),
            self.ns_wildcards.len(),
            self.ns_ips.len(),
        )
    }

    /// Whether it has NSDNAME or NSIP triggers.
    fn has_ns_triggers(&self) -> bool {
        !(self.ns_names.is_empty() && self.ns_wildcards.is_empty() && self.ns_ips.is_empty())
    }

    /// The address table of a kind of prefix trigger.
    fn ip_table(&mut self, kind: build::IpKind) -> &mut Arc<IpTable> {
        match kind {
            build::IpKind::Client => &mut self.clients,
            build::IpKind::Answer => &mut self.answer_ips,
            build::IpKind::Ns => &mut self.ns_ips,
        }
    }

    /// The name table of a kind of name trigger.
    fn name_table(&mut self, kind: build::NameKind) -> &mut Names {
        match kind {
            build::NameKind::Qname => &mut self.qnames,
            build::NameKind::Wildcard => &mut self.wildcards,
            build::NameKind::Ns => &mut self.ns_names,
            build::NameKind::NsWildcard => &mut self.ns_wildcards,
        }
    }

    /// Hits so far, by action, in the order of [`ACTION_LABELS`].
    pub fn hits(&self) -> [u64; ACTION_LABELS.len()] {
        core::array::from_fn(|i| self.hits[i].load(Relaxed))
    }

    /// Counts its hits with the counters of `old` (the version this one replaces), so
    /// that the counters neither go back nor lose the hits made while the two versions
    /// are both in use.
    pub fn carry_hits(&mut self, old: &PolicyZone) {
        self.hits = Arc::clone(&old.hits);
    }

    /// Octets held by the triggers and actions (for the memory figures; the shards and
    /// chunks shared with another version count in both).
    pub fn memory(&self) -> usize {
        let local: usize = self
            .local
            .iter()
            .map(|l| {
                size_of::<LocalData>()
                    + l.records
                        .iter()
                        .map(|r| size_of::<LocalRecord>() + r.rdata.len())
                        .sum::<usize>()
            })
            .sum();
        self.qnames.memory()
            + self.wildcards.memory()
            + self.clients.memory()
            + self.answer_ips.memory()
            + self.ns_names.memory()
            + self.ns_wildcards.memory()
            + self.ns_ips.memory()
            + local
    }

    /// The trigger matching this query, if any: client IP first, then QNAME.
    fn find(&self, qname: NameRef<'_>, client: Option<IpAddr>) -> Option<(Trigger, Stored)> {
        if let Some(ip) = client.filter(|_| !self.clients.is_empty()) {
            if let Some((_, a)) = self.clients.longest(ip) {
                return Some((Trigger::ClientIp, a));
            }
        }
        name_match(&self.qnames, &self.wildcards, qname).map(|a| (Trigger::Qname, a))
    }

    /// The action a stored one means for `qname`, after the zone's override.
    fn action(&self, stored: Stored, qname: NameRef<'_>) -> Action<'_> {
        match &self.policy {
            Override::Given | Override::Disabled => {}
            Override::Passthru => return Action::Passthru,
            Override::Nxdomain => return Action::Nxdomain,
            Override::Nodata => return Action::Nodata,
            Override::Drop => return Action::Drop,
            Override::TcpOnly => return Action::TcpOnly,
            Override::Cname(target) => {
                let mut buf = NameBuf::new();
                buf.set(target.as_ref());
                return Action::Cname(buf, OVERRIDE_TTL);
            }
        }
        match stored {
            Stored::NXDOMAIN => Action::Nxdomain,
            Stored::NODATA => Action::Nodata,
            Stored::PASSTHRU => Action::Passthru,
            Stored::DROP => Action::Drop,
            Stored::TCP_ONLY => Action::TcpOnly,
            Stored(i) => {
                let data = self.local.get((i - Stored::LOCAL) as usize);
                match data.cname() {
                    Some((target, ttl)) => cname_to(target, qname, ttl),
                    None => Action::Data(data),
                }
            }
        }
    }
}

/// The CNAME action to `target`; `*.suffix` puts `qname` in front of `suffix` (BIND's
/// wildcard target), and a name too long for that answers NXDOMAIN.
fn cname_to<'a>(target: NameRef<'_>, qname: NameRef<'_>, ttl: u32) -> Action<'a> {
    let mut buf = NameBuf::new();
    match target.parent().filter(|_| target.is_wildcard()) {
        Some(suffix) => {
            let wire = qname.as_wire();
            if buf.set_concat(&wire[..wire.len() - 1], suffix).is_err() {
                return Action::Nxdomain;
            }
        }
        None => buf.set(target),
    }
    Action::Cname(buf, ttl)
}

/// A policy hit: the zone (its index in [`Rpz::zones`]), the trigger, and what to do.
#[derive(Debug)]
pub struct Hit<'a> {
    /// Index of the zone that matched.
    pub zone: usize,
    /// For [`Rpz::check_resolved`], the index in its chain of the name the action applies
    /// at (0 otherwise).
    pub at: usize,
    /// What matched.
    pub trigger: Trigger,
    /// What to do (for a disabled zone, what would have been done; see `applied`).
    pub action: Action<'a>,
    /// False for a hit in a zone with `policy disabled`: only logged.
    pub applied: bool,
}

/// The policy zones, in the order they are checked.
#[derive(Debug, Default)]
pub struct Rpz {
    zones: Vec<Arc<PolicyZone>>,
    /// Some zone has IP-answer triggers: answers must be checked after resolution.
    answer_triggers: bool,
    /// Some zone has NSDNAME or NSIP triggers.
    ns_triggers: bool,
}

impl Rpz {
    /// Policy zones checked in this order.
    /// (Shared: a zone that did not change is kept from one set to the next.)
    pub fn new(zones: Vec<Arc<PolicyZone>>) -> Self {
        let answer_triggers = zones.iter().any(|z| !z.answer_ips.is_empty());
        let ns_triggers = zones.iter().any(|z| z.has_ns_triggers());
        Self {
            zones,
            answer_triggers,
            ns_triggers,
        }
    }

    /// Whether some zone has NSDNAME or NSIP triggers: then every answer's name servers
    /// are checked ([`Rpz::check_resolved`]) before it goes to the client.
    #[inline]
    pub fn has_ns_triggers(&self) -> bool {
        self.ns_triggers
    }

    /// Whether some zone has IP-answer (`rpz-ip`) triggers: then the addresses of an
    /// answer are checked ([`Rpz::check_resolved`]) before it goes to the client.
    #[inline]
    pub fn has_answer_triggers(&self) -> bool {
        self.answer_triggers
    }

    /// The zones.
    pub fn zones(&self) -> &[Arc<PolicyZone>] {
        &self.zones
    }

    /// The policies a query from `client` for `qname` meets, in order: disabled zones'
    /// hits (to log), then the one applied (if any). `each` sees every hit; the applied
    /// one, if any, is returned. Counted per zone and action.
    pub fn check<'a>(
        &'a self,
        qname: NameRef<'_>,
        client: Option<IpAddr>,
        each: &mut dyn FnMut(&Hit<'a>),
    ) -> Option<Hit<'a>> {
        self.check_before(qname, client, self.zones.len(), each)
    }

    /// [`Rpz::check`] in the zones before index `end` only: those whose precedence does
    /// not wait for the resolution ([`Rpz::waits_from`]).
    pub fn check_before<'a>(
        &'a self,
        qname: NameRef<'_>,
        client: Option<IpAddr>,
        end: usize,
        each: &mut dyn FnMut(&Hit<'a>),
    ) -> Option<Hit<'a>> {
        self.first(&[qname], each, |i, z| {
            z.find(qname, client)
                .filter(|_| i < end)
                .map(|(t, a)| (t, a, 0))
        })
    }

    /// The first zone's hit that applies, after `find` in each zone in order (which gives
    /// the index in `names` of the name the action is for).
    fn first<'a>(
        &'a self,
        names: &[NameRef<'_>],
        each: &mut dyn FnMut(&Hit<'a>),
        find: impl Fn(usize, &PolicyZone) -> Option<(Trigger, Stored, usize)>,
    ) -> Option<Hit<'a>> {
        for (i, z) in self.zones.iter().enumerate() {
            let Some((trigger, stored, at)) = find(i, z) else {
                continue;
            };
            let action = z.action(stored, names[at]);
            let applied = z.policy != Override::Disabled;
            let slot = if applied { action.slot() } else { 7 };
            z.hits[slot].fetch_add(1, Relaxed);
            let hit = Hit {
                zone: i,
                at,
                trigger,
                action,
                applied,
            };
            each(&hit);
            if applied {
                return Some(hit);
            }
        }
        None
    }
}
