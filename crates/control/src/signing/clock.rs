//! signing::clock -- the signer's time, kept from going back or leaping (issue 29 item 7).
//! A rollover is nothing but times in key files, so the wall clock decides which step the
//! zone is at: stepped back, it would take steps back (a new key's DNSKEY withdrawn while
//! caches hold its signatures); stepped forward, it would skip the waits caches need and
//! sign with inceptions in the future.
//!
//! So the signer's `now` for a zone is never before its last signing (`signed_at` in the
//! state file, across restarts too); and within one process it moves as the monotonic
//! clock does since the zone's last signing, whatever the wall clock did: a step of the
//! wall clock further than [`SLACK`] from that is logged as a leap and not followed. The
//! difference is kept until the process ends; at the next start the wall clock is taken
//! again, and `shardns_dnssec::roll::hold` keeps any step due after the pause apart from
//! the one before it.

use super::{SignSpec, StateFile};
use shardns_wire::Name;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;
use tracing::warn;

/// How far the wall clock may move from the monotonic clock between two signings of a
/// zone before it counts as a leap, seconds (whole seconds of two clocks: one apart).
const SLACK: i64 = 2;

/// Per zone (and key directory): the signer's time at its last signing, the wall clock's
/// then, and when.
type Last = HashMap<(PathBuf, Name), (u64, u64, Instant)>;
static LAST: Mutex<Option<Last>> = Mutex::new(None);

/// The signer's time for a signing of `apex` now, for [`super::sign_scanned`] and the
/// like: `wall` (the wall clock), unless it leapt since the zone's last signing in this
/// process, or is before the last signing recorded in the key directory. The caller
/// gives the time to sign again back on the wall clock (`+ wall - now`).
pub fn signer_now(apex: &Name, spec: &SignSpec, wall: u64) -> u64 {
    let signed_at = StateFile::new(&spec.key_dir, apex)
        .signed_at()
        .ok()
        .flatten();
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let map = last.get_or_insert_with(HashMap::new);
    let key = (spec.key_dir.clone(), apex.clone());
    let mut now = match map.get(&key) {
        Some(&(then, wall_then, at)) => {
            let mono = at.elapsed().as_secs();
            let moved = wall as i64 - wall_then as i64;
            if (moved - mono as i64).abs() > SLACK {
                let went = then + mono;
                warn!(
                    "zone {apex}: the wall clock leapt {} s since the last signing ({mono} s by \
                     the monotonic clock): the signer goes on by the monotonic clock, {} s \
                     {} the wall clock, until restarted, so no rollover wait is cut short and \
                     no signature starts in the future",
                    moved - mono as i64,
                    went.abs_diff(wall),
                    if went < wall { "behind" } else { "ahead of" }
                );
                went
            } else {
                then.saturating_add_signed(moved)
            }
        }
        None => wall,
    };
    if let Some(s) = signed_at.filter(|&s| now < s) {
        warn!(
            "zone {apex}: the clock says {now}, before the last signing at {s}: signing at {s} \
             (a rollover never goes back)"
        );
        now = s;
    }
    map.insert(key, (now, wall, Instant::now()));
    now
}
