//! recursion::rpz_xfr -- policy zones transferred from primaries (`[[resolver.rpz]]
//! primaries`): one thread (`shardns-rpz-xfr`, never a worker) asks each zone's primaries
//! for its SOA serial every `refresh` seconds and, when it is newer, transfers the zone by
//! AXFR (`shardns_control::secondary::fetch`, the secondary zones' client code), builds the
//! policy zone and swaps it into the set the workers read, which go on answering from the
//! previous version meanwhile.
//!
//! Not done yet: IXFR (every change is a whole AXFR, and the old and new versions are both
//! held while the new one is built), NOTIFY (changes are seen at the next `refresh`), the
//! SOA's own REFRESH/RETRY/EXPIRE timers, TSIG and TLS to the primaries.

use super::rpz::{logged, policy};
use super::RecursionShared;
use shardns_config::RpzConfig;
use shardns_resolver::{PolicyZone, PolicyZoneBuilder, Rpz};
use shardns_zone::Zone;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait for one message of a transfer, or the SOA answer.
const IDLE: Duration = Duration::from_secs(5);
/// Longest transfer.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Starts the transfer thread if some policy zone has primaries.
pub(crate) fn start(shared: &Arc<RecursionShared>, zones: &[RpzConfig]) -> std::io::Result<()> {
    let zones: Vec<RpzConfig> = zones
        .iter()
        .filter(|z| !z.primaries.is_empty())
        .cloned()
        .collect();
    if zones.is_empty() {
        return Ok(());
    }
    let shared = Arc::clone(shared);
    std::thread::Builder::new()
        .name("shardns-rpz-xfr".into())
        .spawn(move || run(&shared, &zones))?;
    Ok(())
}

/// The thread: each zone refreshed when due, then a sleep until the next is.
fn run(shared: &RecursionShared, zones: &[RpzConfig]) {
    let mut serials: Vec<Option<u32>> = vec![None; zones.len()];
    let mut due = vec![Instant::now(); zones.len()];
    loop {
        for (i, z) in zones.iter().enumerate() {
            if Instant::now() < due[i] {
                continue;
            }
            due[i] = Instant::now() + Duration::from_secs(u64::from(z.refresh));
            if let Some(serial) = refresh(shared, z, serials[i]) {
                serials[i] = Some(serial);
            }
        }
        let next = due.iter().min().copied().unwrap_or_else(Instant::now);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

/// One refresh of `z` from its primaries, in order until one answers: the new serial if a
/// newer version was transferred and swapped in.
fn refresh(shared: &RecursionShared, z: &RpzConfig, have: Option<u32>) -> Option<u32> {
    for &primary in &z.primaries {
        let ids = shardns_sys::seed::random_u64().unwrap_or(0);
        let ids = [ids as u16, (ids >> 16) as u16];
        match shardns_control::secondary::fetch(primary, &z.name, have, ids, IDLE, TIMEOUT) {
            Ok(None) => return None,
            Ok(Some(zone)) => {
                let serial = zone.serial();
                match build(z, &zone) {
                    Ok(pz) => {
                        drop(zone);
                        tracing::info!("policy zone {} transferred from {primary}", z.name);
                        swap(shared, logged(pz));
                        return Some(serial);
                    }
                    Err(e) => {
                        tracing::error!("policy zone {} from {primary}: {e}", z.name);
                        return None;
                    }
                }
            }
            Err(e) => tracing::warn!("policy zone {}: {e}", z.name),
        }
    }
    None
}

/// The policy zone of a transferred zone's records.
fn build(z: &RpzConfig, zone: &Zone) -> Result<PolicyZone, shardns_resolver::Error> {
    let mut b = PolicyZoneBuilder::new(z.name.clone(), policy(&z.policy), z.log);
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
