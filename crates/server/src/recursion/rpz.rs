//! recursion::rpz -- the server's side of response policy zones: the policy files read at
//! start and read again at a reload when they changed ([`Policies`], swapped whole), a
//! client query checked against them before the cache (an answer's data after
//! resolution is `rpz_answer`'s), the policy's answer written, and the hits logged
//! without flooding (and kept for dnstap: [`Recursion::take_hit`], `Pending::hit`).
//!
//! The policy decisions themselves (triggers, precedence, overrides, counters) are
//! `shardns_resolver::Rpz`'s; this module turns a decision into a response.

use super::{Recursion, RecursionShared};
use crate::dnstap::{self, PolicyHit as DnstapHit};
use crate::Error;
use arc_swap::ArcSwap;
use shardns_config::{PolicyOverride as ConfigOverride, RpzConfig};
use shardns_resolver::{
    PolicyAction, PolicyHit, PolicyOverride, PolicyTrigger, PolicyZone, PolicyZoneBuilder, Rpz,
};
use shardns_wire::{Class, MessageWriter, Name, NameBuf, NameRef, RType, Rcode, Section};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// What the policies decided for a query.
// The target is built in place: a hit allocates nothing. One value per hit, never stored.
#[allow(clippy::large_enum_variant)]
pub(super) enum Policy {
    /// No policy applies (or PASSTHRU): answer as usual.
    None,
    /// The answer is written (after the question): its RCODE, and whether it is a TC
    /// answer.
    Answer(Rcode, bool),
    /// Send nothing.
    Drop,
    /// A CNAME from the query name to this target is written; the target is answered
    /// next (from the cache or by resolution), with this TTL for the CNAME.
    Cname(NameBuf, u32),
}

/// A policy file's modification time and length when it was read.
type Stamp = (SystemTime, u64);
/// A policy zone's table and its file's stamp when it was read.
type Read = (RpzConfig, Option<Stamp>);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// The policy zones every worker reads, swapped whole at a reload (an `ArcSwap`: a
/// worker's read takes no lock), and what each was read from.
pub(crate) struct Policies {
    pub(super) set: ArcSwap<Rpz>,
    /// Per zone, in order: its table and its file's stamp when read. The main thread's.
    read: Mutex<Vec<Read>>,
}

/// Reads one policy zone's file; a zone transferred from primaries starts empty.
fn load_one(z: &RpzConfig) -> Result<PolicyZone, Error> {
    let what = |e: &dyn std::fmt::Display| {
        Error::Zones(format!("policy zone {} ({}): {e}", z.name, source(z)))
    };
    let mut b = PolicyZoneBuilder::new(z.name.clone(), policy(&z.policy), z.log);
    if z.primary_key.is_some() && z.primaries.is_empty() {
        return Err(what(&"primary_key is set, but the zone has no primaries"));
    }
    let file = match (&z.file, z.primaries.is_empty()) {
        (Some(file), true) => file,
        (None, false) => {
            tracing::info!("policy zone {}: empty until its first transfer", z.name);
            return Ok(b.finish());
        }
        _ => return Err(what(&"give either a file or primaries")),
    };
    let mut opts = shardns_zone::ScanOptions::new(z.name.clone());
    opts.threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut scanned = shardns_zone::scan::scan_file(file, &opts).map_err(|e| what(&e))?;
    // The text is not needed once scanned, and each chunk of records not once added: both
    // go as early as they can, so that loading a big zone peaks lower.
    drop(std::mem::take(&mut scanned.text));
    b.reserve(scanned.chunks.iter().map(|c| c.items.len()).sum());
    for chunk in std::mem::take(&mut scanned.chunks) {
        for item in &chunk.items {
            let (owner, rdata) = (chunk.owner(item), chunk.rdata(item));
            b.add(owner, item.rtype, item.ttl, rdata, item.line as usize)
                .map_err(|e| what(&e))?;
        }
    }
    let zone = b.finish();
    // What the scan and the growing tables freed goes back to the system.
    shardns_sys::release_free_memory();
    Ok(logged(zone))
}

/// Where a policy zone comes from, for messages.
fn source(z: &RpzConfig) -> String {
    match &z.file {
        Some(f) => f.display().to_string(),
        None => format!("primaries {:?}", z.primaries),
    }
}

/// `zone`, its figures logged.
pub(super) fn logged(zone: PolicyZone) -> PolicyZone {
    let (names, wildcards, clients, ips) = zone.triggers();
    let (ns_names, ns_wildcards, ns_ips) = zone.ns_triggers();
    tracing::info!(
        "policy zone {} serial {}: {names} names, {wildcards} wildcards, {clients} client \
         prefixes, {ips} answer prefixes, {} NSDNAME names and wildcards, {ns_ips} NSIP \
         prefixes, {} KiB",
        zone.name(),
        zone.serial(),
        ns_names + ns_wildcards,
        zone.memory() >> 10,
    );
    zone
}

/// The policy zones of `zones`, in order, with what each was read from; a zone of `old`
/// whose table is the same and whose file has the same stamp is kept, not read again, and
/// a zone read again takes over its previous version's counters.
fn build(zones: &[RpzConfig], old: Option<(&Rpz, &[Read])>) -> Result<(Rpz, Vec<Read>), Error> {
    let mut set = Vec::with_capacity(zones.len());
    let mut read = Vec::with_capacity(zones.len());
    for z in zones {
        let now = z.file.as_deref().and_then(stamp);
        let before = old.and_then(|(rpz, read)| {
            let i = read.iter().position(|(c, _)| c.name == z.name)?;
            Some((&rpz.zones()[i], &read[i]))
        });
        let zone = match before {
            // A transferred zone is the transfer thread's to replace.
            Some((zone, _)) if z.file.is_none() && !z.primaries.is_empty() => Arc::clone(zone),
            Some((zone, (c, Some(was)))) if c == z && now == Some(*was) => Arc::clone(zone),
            _ => {
                let mut zone = load_one(z)?;
                if let Some((previous, _)) = before {
                    zone.carry_hits(previous);
                }
                Arc::new(zone)
            }
        };
        set.push(zone);
        read.push((z.clone(), now));
    }
    Ok((Rpz::new(set), read))
}

impl Policies {
    /// The lock that keeps two swaps (a reload, a transfer) from crossing.
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Read>> {
        self.read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Reads the `[[resolver.rpz]]` zone files, in order. `None` when there are none, so that
/// the answer path pays nothing.
pub(crate) fn load(zones: &[RpzConfig]) -> Result<Option<Policies>, Error> {
    if zones.is_empty() {
        return Ok(None);
    }
    let (set, read) = build(zones, None)?;
    Ok(Some(Policies {
        set: ArcSwap::from_pointee(set),
        read: Mutex::new(read),
    }))
}

/// At a reload (SIGHUP, `shardns reload`), on the main thread: the policy zones whose
/// table or file changed are read again and the set swapped in whole while the workers
/// answer from the previous one; if one fails to load, the previous set stays. The old
/// and the new version of a changed zone are both held while it is read.
pub(crate) fn reload(zones: &[RpzConfig], shared: &crate::Shared) {
    let Some(rec) = shared.recursion.get() else {
        return;
    };
    let Some(p) = &rec.rpz else {
        if !zones.is_empty() {
            tracing::warn!("policy zones configured after the start are read at the next start");
        }
        return;
    };
    let mut read = p
        .read
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let old = p.set.load_full();
    match build(zones, Some((&old, &read))) {
        Ok((set, now)) => {
            let kept = set
                .zones()
                .iter()
                .zip(old.zones())
                .all(|(a, b)| Arc::ptr_eq(a, b));
            if kept && set.zones().len() == old.zones().len() {
                return;
            }
            tracing::info!("policy zones reloaded: {} zones", set.zones().len());
            p.set.store(Arc::new(set));
            *read = now;
        }
        Err(e) => tracing::error!("policy zones not reloaded, the previous ones stay: {e}"),
    }
}

/// Whether an answer to `qtype` can hold addresses (A, AAAA, ANY): IP-answer triggers
/// matter.
pub(super) fn has_addresses(qtype: RType) -> bool {
    matches!(qtype, RType::A | RType::AAAA | RType::ANY)
}

/// The resolver's form of a zone's `policy` override.
pub(super) fn policy(p: &ConfigOverride) -> PolicyOverride {
    match p {
        ConfigOverride::Disabled => PolicyOverride::Disabled,
        ConfigOverride::Passthru => PolicyOverride::Passthru,
        ConfigOverride::Nxdomain => PolicyOverride::Nxdomain,
        ConfigOverride::Nodata => PolicyOverride::Nodata,
        ConfigOverride::Drop => PolicyOverride::Drop,
        ConfigOverride::TcpOnly => PolicyOverride::TcpOnly,
        ConfigOverride::Cname(n) => PolicyOverride::Cname(n.clone()),
        _ => PolicyOverride::Given,
    }
}

/// The per-zone hit counters in the Prometheus text format, appended to `s`.
pub(crate) fn render_counters(s: &mut String, shared: Option<&RecursionShared>) {
    let Some(p) = shared.and_then(|r| r.rpz.as_ref()) else {
        return;
    };
    let rpz = p.set.load();
    let name = "shardns_rpz_hits_total";
    let _ = writeln!(
        s,
        "# HELP {name} Response policy zone hits, by zone and action (disabled: a hit in a \
         zone with policy disabled, not applied).\n# TYPE {name} counter"
    );
    for z in rpz.zones() {
        for (label, n) in shardns_resolver::POLICY_ACTION_LABELS.iter().zip(z.hits()) {
            let _ = writeln!(s, "{name}{{zone=\"{}\",action=\"{label}\"}} {n}", z.name());
        }
    }
}

/// Seconds during which a (zone, name) hit is logged once per worker.
const LOG_INTERVAL_MS: u64 = 60_000;
/// Most hits logged per worker per interval; the rest are counted, the count logged.
const LOG_MAX: usize = 64;

/// Logs policy hits: once per (zone, query name) per interval and worker, at most
/// [`LOG_MAX`] lines per interval, so that a blocked name queried hard cannot flood the
/// log (the counters count every hit).
#[derive(Default)]
pub(super) struct PolicyLog {
    since_ms: u64,
    seen: HashSet<(usize, Name)>,
    suppressed: u64,
}

impl PolicyLog {
    pub(super) fn note(
        &mut self,
        rpz: &Rpz,
        hit: &PolicyHit<'_>,
        q: (NameRef<'_>, RType),
        client: Option<IpAddr>,
        now_ms: u64,
    ) {
        let zone = &rpz.zones()[hit.zone];
        if !zone.log() {
            return;
        }
        if now_ms.saturating_sub(self.since_ms) >= LOG_INTERVAL_MS {
            if self.suppressed > 0 {
                tracing::info!(
                    "rpz: {} more policy hits in the last {} s not logged",
                    self.suppressed,
                    LOG_INTERVAL_MS / 1000
                );
            }
            self.since_ms = now_ms;
            self.seen.clear();
            self.suppressed = 0;
        }
        let key = (hit.zone, q.0.to_name());
        if self.seen.contains(&key) {
            return;
        }
        if self.seen.len() >= LOG_MAX {
            self.suppressed += 1;
            return;
        }
        tracing::info!(
            "rpz: client {} {} {}: {} trigger in {}: {}{}",
            client.map_or_else(|| "-".to_string(), |c| c.to_string()),
            q.0,
            q.1,
            hit.trigger.label(),
            zone.name(),
            hit.action.label(),
            if hit.applied {
                ""
            } else {
                " (policy disabled: not applied)"
            }
        );
        self.seen.insert(key);
    }
}

impl Recursion {
    /// Checks a query against the policy zones and writes the policy's answer after the
    /// question in `w`, if one applies; also says whether the answer must go through the
    /// engine to have its data checked (IP-answer triggers exist and `qtype` is A, AAAA or
    /// ANY; or NSDNAME/NSIP triggers exist: every question). `stream`: the query came over TCP (or another stream), where TCP-only
    /// is PASSTHRU.
    pub(super) fn policy(
        &mut self,
        q: (NameRef<'_>, RType),
        client: Option<IpAddr>,
        stream: bool,
        w: &mut MessageWriter<'_>,
        clock: u64,
    ) -> (Policy, bool) {
        self.tap_hit = None;
        let Some(p) = &self.shared.rpz else {
            return (Policy::None, false);
        };
        let rpz = &*p.set.load();
        let addressed = has_addresses(q.1);
        let by_address = rpz.has_ns_triggers() || rpz.has_answer_triggers() && addressed;
        // The zones after the first with data triggers are checked after the resolution.
        let end = rpz.waits_from(addressed);
        let log = &mut self.policy_log;
        let note = &mut |h: &PolicyHit<'_>| log.note(rpz, h, q, client, clock);
        let Some(hit) = rpz.check_before(q.0, client, end, note) else {
            return (Policy::None, by_address);
        };
        self.tap_hit = Some(tap_hit(rpz, &hit, stream));
        (Self::written(hit.action, q, stream, w), by_address)
    }

    /// The response policy hit of the query just handled, if any, for dnstap (taken: the
    /// next query starts without one).
    pub(crate) fn take_hit(&mut self) -> Option<DnstapHit> {
        self.tap_hit.take()
    }

    /// Writes a policy action's answer for a query.
    fn written(
        action: PolicyAction<'_>,
        (qname, qtype): (NameRef<'_>, RType),
        stream: bool,
        w: &mut MessageWriter<'_>,
    ) -> Policy {
        match action {
            PolicyAction::Passthru => Policy::None,
            PolicyAction::TcpOnly if stream => Policy::None,
            PolicyAction::TcpOnly => Policy::Answer(Rcode::NOERROR, true),
            PolicyAction::Drop => Policy::Drop,
            PolicyAction::Nxdomain => Policy::Answer(Rcode::NXDOMAIN, false),
            PolicyAction::Nodata => Policy::Answer(Rcode::NOERROR, false),
            PolicyAction::Data(data) => {
                let truncated = data.write(qname, qtype, w).is_err();
                Policy::Answer(Rcode::NOERROR, truncated)
            }
            PolicyAction::Cname(target, ttl) => {
                let rdata = target.as_ref();
                if w.put_record(
                    Section::Answer,
                    qname,
                    RType::CNAME,
                    Class::IN,
                    ttl,
                    rdata.as_wire(),
                )
                .is_err()
                {
                    return Policy::Answer(Rcode::NOERROR, true);
                }
                if qtype == RType::CNAME || qtype == RType::ANY {
                    return Policy::Answer(Rcode::NOERROR, false);
                }
                Policy::Cname(target, ttl)
            }
        }
    }
}

/// A hit as dnstap's `Policy` has it: what was done (TCP-only over a stream is PASS) and
/// what matched.
pub(super) fn tap_hit(rpz: &Rpz, hit: &PolicyHit<'_>, stream: bool) -> DnstapHit {
    let action = match hit.action {
        _ if !hit.applied => dnstap::POLICY_PASS,
        PolicyAction::Passthru => dnstap::POLICY_PASS,
        PolicyAction::TcpOnly if stream => dnstap::POLICY_PASS,
        PolicyAction::TcpOnly => dnstap::POLICY_TRUNCATE,
        PolicyAction::Drop => dnstap::POLICY_DROP,
        PolicyAction::Nxdomain => dnstap::POLICY_NXDOMAIN,
        PolicyAction::Nodata => dnstap::POLICY_NODATA,
        PolicyAction::Data(_) | PolicyAction::Cname(..) => dnstap::POLICY_LOCAL_DATA,
    };
    let matched = match hit.trigger {
        PolicyTrigger::Qname => dnstap::MATCH_QNAME,
        PolicyTrigger::ClientIp => dnstap::MATCH_CLIENT_IP,
        PolicyTrigger::Ip => dnstap::MATCH_RESPONSE_IP,
        PolicyTrigger::Nsdname => dnstap::MATCH_NS_NAME,
        PolicyTrigger::Nsip => dnstap::MATCH_NS_IP,
    };
    DnstapHit {
        zone: Arc::clone(&rpz.zones()[hit.zone]),
        action,
        matched,
        // A QNAME trigger met by a CNAME target matched that name, not the query's.
        on_query_name: hit.at == 0,
    }
}
