//! recursion::rpz_xfr -- policy zones transferred from primaries (`[[resolver.rpz]]
//! primaries`): one thread (`shardns-rpz-xfr`, never a worker) asks each zone's primaries
//! for its SOA serial every `refresh` seconds and, when it is newer, asks the changes by
//! IXFR (`shardns_control::secondary::fetch`, the secondary zones' client code) and makes
//! them to the policy zone (`PolicyZone::patched`: the new version shares all but the
//! parts they touch with the old one, so memory grows with the change, not the zone), or
//! transfers the zone whole by AXFR (at first, or when the primary answers IXFR so or the
//! changes do not apply) and builds it; either is swapped into the set the workers read,
//! which go on answering from the previous version meanwhile.
//!
//! When to ask is the SOA's: REFRESH after an answer (or the table's `refresh`), RETRY
//! after a failure, and EXPIRE without an answer drops the zone's policy (an empty zone
//! of that name in its place, as BIND stops using an expired policy zone) until a
//! transfer brings it back (`rpz_timers`).
//!
//! A NOTIFY for such a zone from one of its primaries' addresses ([`Recursion::notify`],
//! called by the dispatcher) makes the thread refresh it at once.
//!
//! With a `primary_key`, every SOA query and transfer is signed with it (TSIG) and their
//! answers must be signed; a NOTIFY is still taken from the primaries' addresses signed or
//! not (it only starts a refresh, whose answers are checked).
//! With `primary_tls`, the SOA queries and transfers go over TLS (XoT, RFC 9103), the
//! primary's certificate checked as a secondary zone's is. Not done yet: an AXFR still
//! holds the transferred zone and the new policy zone at once while it is built.

use super::rpz::{logged, policy};
use super::rpz_timers::{Schedule, Timers};
use super::{Recursion, RecursionShared};
use shardns_config::{KeyConfig, RpzConfig};
use shardns_control::secondary::Fetched;
use shardns_resolver::{PolicyChange, PolicyZone, PolicyZoneBuilder, Rpz};
use shardns_wire::tsig::Key;
use shardns_wire::{Opcode, Query, RType, Rcode, Record};
use shardns_zone::{Written, Zone};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The transferred policy zones' NOTIFY inbox: a flag per zone, and the thread to wake.
pub(crate) struct XfrInbox {
    zones: Vec<RpzConfig>,
    /// Per zone, its `primary_key`'s TSIG key.
    keys: Vec<Option<Key>>,
    notified: Vec<AtomicBool>,
    thread: OnceLock<Thread>,
}

/// Longest wait for one message of a transfer, or the SOA answer.
const IDLE: Duration = Duration::from_secs(5);
/// Longest transfer.
const TIMEOUT: Duration = Duration::from_secs(300);

/// The inbox of the policy zones with primaries, if any (its thread not started yet);
/// `keys`: the `[[key]]` tables their `primary_key` names.
pub(crate) fn inbox(zones: &[RpzConfig], keys: &[KeyConfig]) -> Option<Arc<XfrInbox>> {
    let zones: Vec<RpzConfig> = zones
        .iter()
        .filter(|z| !z.primaries.is_empty())
        .cloned()
        .collect();
    (!zones.is_empty()).then(|| {
        Arc::new(XfrInbox {
            keys: zones
                .iter()
                .map(|z| {
                    let name = z.primary_key.as_ref()?;
                    keys.iter().find(|k| &k.0.name == name).map(|k| k.0.clone())
                })
                .collect(),
            notified: zones.iter().map(|_| AtomicBool::new(false)).collect(),
            zones,
            thread: OnceLock::new(),
        })
    })
}

/// Starts the transfer thread if some policy zone has primaries.
pub(crate) fn start(shared: &Arc<RecursionShared>) -> std::io::Result<()> {
    let Some(inbox) = &shared.rpz_xfr else {
        return Ok(());
    };
    let (inbox, shared) = (Arc::clone(inbox), Arc::clone(shared));
    let thread_inbox = Arc::clone(&inbox);
    let handle = std::thread::Builder::new()
        .name("shardns-rpz-xfr".into())
        .spawn(move || run(&shared, &thread_inbox))?;
    // Set before any NOTIFY can want it: the workers start after this.
    let _ = inbox.thread.set(handle.thread().clone());
    Ok(())
}

/// The thread: each zone refreshed when due or notified (the SOA's REFRESH after an
/// answer, RETRY after a failure: `rpz_timers`), its policy dropped when EXPIRE passes
/// without an answer; then a sleep until the next is due or a NOTIFY wakes it.
fn run(shared: &RecursionShared, inbox: &XfrInbox) {
    let zones = &inbox.zones;
    let mut serials: Vec<Option<u32>> = vec![None; zones.len()];
    let now = Instant::now();
    let mut schedules: Vec<Schedule> = zones
        .iter()
        .map(|z| Schedule::new(z.refresh, now))
        .collect();
    loop {
        for (i, z) in zones.iter().enumerate() {
            let notified = inbox.notified[i].swap(false, Relaxed);
            let s = &mut schedules[i];
            if notified || s.is_due(Instant::now()) {
                match refresh(shared, z, inbox.keys[i].as_ref(), serials[i]) {
                    Refreshed::Transferred(serial, timers) => {
                        serials[i] = Some(serial);
                        s.answered(timers, Instant::now());
                    }
                    Refreshed::Same => s.answered(None, Instant::now()),
                    Refreshed::Failed => s.failed(Instant::now()),
                }
            }
            if s.expires(Instant::now()) {
                tracing::warn!(
                    "policy zone {}: expired (no primary answered for the SOA's EXPIRE): \
                     its policy is dropped until a transfer succeeds",
                    z.name
                );
                swap(
                    shared,
                    PolicyZoneBuilder::new(z.name.clone(), policy(&z.policy), z.log).finish(),
                );
                // The next transfer is whole.
                serials[i] = None;
            }
        }
        let next = schedules
            .iter()
            .map(Schedule::next)
            .min()
            .unwrap_or_else(Instant::now);
        if inbox.notified.iter().all(|n| !n.load(Relaxed)) {
            std::thread::park_timeout(next.saturating_duration_since(Instant::now()));
        }
    }
}

/// What a refresh came to.
enum Refreshed {
    /// A newer version, swapped in: its serial and the timers of its SOA.
    Transferred(u32, Option<Timers>),
    /// A primary has the serial we have.
    Same,
    /// No primary answered with a version we could use.
    Failed,
}

/// The timers of the SOA an IXFR's changes add.
fn changes_timers(changes: &[(bool, Record)]) -> Option<Timers> {
    let soa = changes
        .iter()
        .rev()
        .find(|(add, r)| *add && r.rtype == RType::SOA)?;
    Timers::of_soa(&soa.1.rdata)
}

/// The timers of a transferred zone's SOA.
fn zone_timers(zone: &Zone) -> Option<Timers> {
    let apex = zone.apex_node();
    let rdata = apex.rrset(RType::SOA).and_then(|s| s.rdatas().next())?;
    Timers::of_soa(rdata)
}

impl Recursion {
    /// A NOTIFY (RFC 1996) for a policy zone with primaries, from one of their addresses:
    /// its refresh is started at once and the answer is NOERROR. `None`: not such a zone's
    /// (the secondary zones' inbox, or NOTIMP, answers it).
    pub(crate) fn notify(
        &self,
        query: &Query<'_>,
        peer: Option<IpAddr>,
        out: &mut [u8],
    ) -> Option<Written> {
        let inbox = self.shared.rpz_xfr.as_ref()?;
        if query.header().opcode() != Opcode::NOTIFY {
            return None;
        }
        let i = inbox
            .zones
            .iter()
            .position(|z| z.name.as_ref().eq_ci(&query.qname()))?;
        let z = &inbox.zones[i];
        let from_primary = peer.is_some_and(|ip| z.primaries.iter().any(|p| p.ip() == ip));
        if !from_primary {
            return Some(shardns_zone::notify_answer(query, Rcode::REFUSED, out));
        }
        inbox.notified[i].store(true, Relaxed);
        if let Some(t) = inbox.thread.get() {
            t.unpark();
        }
        Some(shardns_zone::notify_answer(query, Rcode::NOERROR, out))
    }
}

/// One refresh of `z` from its primaries, in order until one answers: a newer version
/// transferred and swapped in, the same serial, or a failure. An IXFR's changes are made to the
/// version the workers read (`PolicyZone::patched`: a copy of the parts they touch only);
/// when they cannot be, the zone is transferred whole.
fn refresh(
    shared: &RecursionShared,
    z: &RpzConfig,
    key: Option<&Key>,
    have: Option<u32>,
) -> Refreshed {
    for &primary in &z.primaries {
        let seed = shardns_sys::seed::random_u64().unwrap_or(0);
        let ids = [seed as u16, (seed >> 16) as u16, (seed >> 32) as u16];
        let to = (primary, z.primary_tls.as_ref());
        let mut fetched =
            shardns_control::secondary::fetch(to, &z.name, have, key, ids, IDLE, TIMEOUT);
        if let Ok(Some(Fetched::Changes { serial, changes })) = &fetched {
            match patch(shared, z, *serial, changes) {
                Ok(()) => {
                    tracing::info!(
                        "policy zone {} updated by IXFR from {primary} to serial {serial} ({} changes)",
                        z.name,
                        changes.len()
                    );
                    return Refreshed::Transferred(*serial, changes_timers(changes));
                }
                Err(e) => {
                    tracing::warn!(
                        "policy zone {}: IXFR from {primary}: {e}; asking AXFR",
                        z.name
                    );
                    fetched = shardns_control::secondary::fetch(
                        to, &z.name, None, key, ids, IDLE, TIMEOUT,
                    );
                }
            }
        }
        match fetched {
            Ok(None) => return Refreshed::Same,
            Ok(Some(Fetched::Whole(zone))) => {
                let (serial, timers) = (zone.serial(), zone_timers(&zone));
                match build(z, &zone) {
                    Ok(pz) => {
                        drop(zone);
                        tracing::info!("policy zone {} transferred from {primary} by AXFR", z.name);
                        swap(shared, logged(pz));
                        // The transferred records are gone: their memory goes back to the
                        // system, so that the resolver's RSS is its tables again.
                        shardns_sys::release_free_memory();
                        return Refreshed::Transferred(serial, timers);
                    }
                    Err(e) => {
                        tracing::error!("policy zone {} from {primary}: {e}", z.name);
                        return Refreshed::Failed;
                    }
                }
            }
            Ok(Some(Fetched::Changes { .. })) => return Refreshed::Failed,
            Err(e) => tracing::warn!("policy zone {}: {e}", z.name),
        }
    }
    Refreshed::Failed
}

/// Makes an IXFR's changes to the zone the workers read and swaps the result in.
fn patch(
    shared: &RecursionShared,
    z: &RpzConfig,
    serial: u32,
    changes: &[(bool, Record)],
) -> Result<(), String> {
    let Some(p) = &shared.rpz else {
        return Ok(());
    };
    let current = p.set.load_full();
    let Some(old) = current.zones().iter().find(|o| *o.name() == z.name) else {
        return Ok(());
    };
    let changes = changes.iter().map(|(add, r)| PolicyChange {
        add: *add,
        owner: r.owner.as_ref(),
        rtype: r.rtype,
        ttl: r.ttl,
        rdata: &r.rdata,
    });
    let next = old.patched(changes, serial).map_err(|e| e.to_string())?;
    drop(current);
    swap(shared, next);
    Ok(())
}

/// The policy zone of a transferred zone's records.
fn build(z: &RpzConfig, zone: &Zone) -> Result<PolicyZone, shardns_resolver::Error> {
    let mut b = PolicyZoneBuilder::new(z.name.clone(), policy(&z.policy), z.log);
    // Most names of a policy zone own one trigger.
    b.reserve(zone.node_count());
    for r in zone.records() {
        b.add(r.owner.as_ref(), r.rtype, r.ttl, &r.rdata, 0)?;
    }
    Ok(b.finish())
}

/// Puts `zone` in the place of the zone of the same name in the workers' set (after a
/// reload that dropped it: nowhere), its counters carried over.
fn swap(shared: &RecursionShared, mut zone: PolicyZone) {
    let Some(p) = &shared.rpz else { return };
    // The reloads' lock: a reload and a transfer do not swap at once.
    let _read = p.lock();
    let old = p.set.load_full();
    let Some(i) = old.zones().iter().position(|o| o.name() == zone.name()) else {
        return;
    };
    zone.carry_hits(&old.zones()[i]);
    let mut zones = old.zones().to_vec();
    zones[i] = Arc::new(zone);
    p.set.store(Arc::new(Rpz::new(zones)));
}
