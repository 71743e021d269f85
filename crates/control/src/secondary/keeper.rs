//! secondary::keeper -- the signed versions of the zones signed as they arrive, kept in the
//! key directory (`KEYDIR/state/<zone>.signed`, what a restart serves again) by a thread of
//! their own once they are served: a zone of a million records takes seconds to write,
//! which neither its serving nor its next transfer waits for.
//!
//! Copies are written one at a time, in the order asked for; one asked for a zone that has
//! a newer request behind it is skipped (the newer is written), and its version let go at
//! once rather than held while another copy is written. A copy not written when the
//! server stops (or crashes) leaves the one before: a restart then signs the zone anew,
//! under a new serial. [`wait`] lets a stopping server finish them.

use super::signer::unsigned_list;
use crate::signing::{incremental::fingerprint_of, SignSpec, SignedFile};
use shardns_wire::Name;
use shardns_zone::Zone;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// What a kept copy is filed under: the fingerprint of the records it was signed from.
pub(super) enum Origin {
    /// Known: the full signer computed it.
    Fingerprint(String),
    /// The unsigned version it was signed from (incrementally): computed when written.
    Unsigned(Arc<Zone>),
}

/// The latest request per zone.
static REQUESTED: Mutex<Option<HashMap<Name, u64>>> = Mutex::new(None);
/// Held while a copy is written: one at a time, in order.
static WRITING: Mutex<()> = Mutex::new(());
static NEXT: AtomicU64 = AtomicU64::new(0);
static PENDING: AtomicUsize = AtomicUsize::new(0);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps `signed` (served; due at `due`) as the zone's last signed version, on a thread of
/// its own.
pub(super) fn keep_later(spec: Arc<SignSpec>, signed: Arc<Zone>, due: u64, from: Origin) {
    let apex = signed.apex().to_name();
    let generation = NEXT.fetch_add(1, SeqCst) + 1;
    lock(&REQUESTED)
        .get_or_insert_with(HashMap::new)
        .insert(apex.clone(), generation);
    PENDING.fetch_add(1, SeqCst);
    let spawned = std::thread::Builder::new()
        .name("shardns-keep".into())
        .spawn(move || {
            if let Some(_one) = turn(&apex, generation) {
                let started = Instant::now();
                match keep_now(&spec, &signed, due, &from) {
                    Ok(()) => info!(
                        "zone {apex}: signed version {} kept in the key directory in {:.3} s",
                        signed.serial(),
                        started.elapsed().as_secs_f64()
                    ),
                    Err(e) => warn!(
                        "zone {apex}: cannot keep the signed version (a restart signs it anew): {e}"
                    ),
                }
            }
            PENDING.fetch_sub(1, SeqCst);
        });
    if let Err(e) = spawned {
        PENDING.fetch_sub(1, SeqCst);
        warn!("cannot start a thread to keep a signed version (a restart signs it anew): {e}");
    }
}

/// Waits for the writer's turn while request `generation` is the zone's latest; `None`
/// once a newer one is asked for (then this version is let go at once, not held while an
/// older copy is written).
fn turn(apex: &Name, generation: u64) -> Option<std::sync::MutexGuard<'static, ()>> {
    loop {
        let latest = lock(&REQUESTED).as_ref().and_then(|r| r.get(apex).copied());
        if latest != Some(generation) {
            return None;
        }
        match WRITING.try_lock() {
            Ok(one) => return Some(one),
            Err(std::sync::TryLockError::Poisoned(e)) => return Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                std::thread::sleep(Duration::from_millis(20))
            }
        }
    }
}

/// Keeps `signed` (due at `due`) as the zone's last signed version, now.
pub(super) fn keep_now(
    spec: &SignSpec,
    signed: &Zone,
    due: u64,
    from: &Origin,
) -> Result<(), String> {
    let apex = signed.apex().to_name();
    let fingerprint = match from {
        Origin::Fingerprint(f) => f.clone(),
        Origin::Unsigned(unsigned) => fingerprint_of(&apex, &unsigned_list(unsigned, spec), spec)?,
    };
    SignedFile::new(&spec.key_dir, &apex).write_zone(&fingerprint, due, signed)
}

/// Waits until every copy asked for is written, at most `limit`; true if they all are.
pub fn wait(limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while PENDING.load(SeqCst) > 0 {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Holds the writer's turn (tests: copies asked for meanwhile wait).
#[cfg(test)]
pub(super) fn hold_writer() -> std::sync::MutexGuard<'static, ()> {
    lock(&WRITING)
}
