//! Algorithm rollover (RFC 6781 §4.1.4, its conservative order) as key times, as Knot does
//! when its policy's algorithm changes. At `T0` (the zone's algorithm differs from its
//! signing keys'), new keys of the policy's shape and the new algorithm are made:
//!
//! 1. `T0`: the new keys sign (every RRset, the DNSKEY RRset by the new KSK or CSK too);
//!    their DNSKEYs are not published, so a cache holding the old DNSKEY RRset with new
//!    signatures still validates with the old ones.
//! 2. `T1 = T0 + max zone TTL + propagation` (the new keys' `Publish`): no cache holds an
//!    RRset without a new signature; the new DNSKEYs are published, the RRset signed by
//!    both KSKs.
//! 3. `T2 = T1 + DNSKEY TTL + propagation` (the new KSK's `SyncPublish`): every cache
//!    holds the new DNSKEYs; CDS and CDNSKEY name the new key beside the old one (as in a
//!    double-DS rollover), and the new key waits for its DS ([`ds_pending`]) until the
//!    parent's DS check, the push, or the operator confirms it (`DSPublish` = `Tc`).
//! 4. `T3 = Tc + parent DS TTL + parent propagation` (the old keys' `Delete`, the old
//!    KSK's `SyncDelete`): no cache holds a DS set without the new DS; the old DNSKEYs,
//!    CDS and CDNSKEY are withdrawn (the CDS names the new key alone: the parent may drop
//!    the old DS, which the push does), the old keys still sign.
//! 5. `T4 = T3 + DNSKEY TTL + propagation` (the old keys' `Inactive`): no cache holds a
//!    DNSKEY RRset with an old key, so none expects its algorithm's signatures (RFC 4035
//!    §2.2); the old signatures go.
//!
//! The new KSK or CSK is known by its times: it signs before it is published, which no
//! other rollover writes; its old keys are the signing keys of another algorithm with no
//! end set. `tick` sets their times from the new key's, so a crash between key files is
//! repaired at the next signing, and a restart resumes the roll from the files.

use super::{busy, RollKind, RollTimings};
use crate::alg::Algorithm;
use crate::keys::{KeyMeta, Role};

/// True if `k` is the new KSK or CSK of an algorithm rollover (it signs before its DNSKEY
/// is published).
fn is_new_sep(k: &KeyMeta) -> bool {
    k.role != Role::Zsk && matches!((k.activate, k.publish), (Some(a), Some(p)) if a < p)
}

/// True if `k` is the new KSK or CSK of an algorithm rollover waiting for its DS at the
/// parent: its CDS is out (`T2`), its DS not yet confirmed.
pub fn ds_pending(k: &KeyMeta, now: u64) -> bool {
    is_new_sep(k)
        && k.ds_publish.is_none()
        && k.delete.is_none()
        && k.sync_publish.is_some_and(|t| t <= now)
}

/// True if an algorithm rollover to `want` is to start at `now`: some key signs with
/// another algorithm, none signs with `want` (a zone signed with two algorithms on purpose
/// is left alone), and no rollover is under way.
pub fn due(keys: &[KeyMeta], want: Algorithm, now: u64) -> bool {
    wanted(keys, want, now) && !waiting(keys, now)
}

/// True if the keys call for an algorithm rollover to `want` (some key signs with another
/// algorithm, none with `want`), due or not.
pub fn wanted(keys: &[KeyMeta], want: Algorithm, now: u64) -> bool {
    let signing = |k: &&KeyMeta| k.signs(now) && k.inactive.is_none();
    keys.iter().filter(signing).any(|k| k.algorithm != want)
        && !keys.iter().filter(signing).any(|k| k.algorithm == want)
}

/// True if a rollover under way keeps an algorithm rollover waiting.
fn waiting(keys: &[KeyMeta], now: u64) -> bool {
    busy(keys, RollKind::Zsk, now).is_some() || busy(keys, RollKind::Ksk, now).is_some()
}

/// Sets the times of a key made for an algorithm rollover starting at `now` (`created`
/// kept): it signs now, is published after the max zone TTL and propagation, and a KSK's or
/// CSK's CDS follows a DNSKEY TTL and propagation later.
pub fn schedule_new(new: &mut KeyMeta, t: &RollTimings, now: u64) {
    // At least a second apart: `Activate` before `Publish` is what marks the new key.
    let published = now + t.retire_wait(Role::Zsk).max(1);
    new.activate = Some(now);
    new.publish = Some(published);
    new.sync_publish = (new.role != Role::Zsk).then(|| published + t.publish_wait());
    new.inactive = None;
    new.delete = None;
    new.ds_publish = None;
    new.sync_delete = None;
}

/// Sets the old keys' times of an algorithm rollover under way from the new KSK's or
/// CSK's: once the new DS is confirmed their DNSKEYs and CDS go after the parent's DS TTL,
/// their signatures a DNSKEY TTL later. Pushes the indexes changed to `changed`.
pub(super) fn tick(keys: &mut [KeyMeta], t: &RollTimings, now: u64, changed: &mut Vec<usize>) {
    for n in 0..keys.len() {
        let new = keys[n].clone();
        if !is_new_sep(&new) || new.delete.is_some() {
            continue;
        }
        for (i, o) in keys.iter_mut().enumerate() {
            if i == n || o.algorithm == new.algorithm || !o.is_active(now) || o.inactive.is_some() {
                continue;
            }
            let before = o.clone();
            if o.role != Role::Zsk && o.sync_publish.is_none() {
                // Its CDS stays beside the new key's while its DNSKEY is published, as in
                // a double-DS rollover: its DS is of use at the parent until then.
                o.sync_publish = Some(o.activate.unwrap_or(o.created).min(now));
            }
            if let Some(confirmed) = new.ds_publish {
                let withdrawn = confirmed + t.parent_ds_ttl + t.parent_propagation;
                o.delete = Some(withdrawn);
                o.inactive = Some(withdrawn + t.publish_wait());
                if o.role != Role::Zsk {
                    o.sync_delete = Some(withdrawn);
                }
            }
            if *o != before {
                changed.push(i);
            }
        }
    }
}

#[cfg(test)]
mod tests;
