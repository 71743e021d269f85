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
//! 4. `Ts = Tc + parent DS TTL + parent propagation` (the old KSK's `SyncDelete`): no
//!    cache holds a DS set without the new DS; CDS and CDNSKEY name the new key alone (the
//!    DS change: a parent that follows them, or the push, replaces the DS set), the old
//!    DNSKEYs stay.
//! 5. `Tr`: the parent no longer serves a DS of the old algorithm, confirmed by the DS
//!    check ([`confirm_old_ds_gone`]); by hand, the operator replaced the DS set before
//!    confirming the new DS, and that confirmation is this one too (`Tr = Tc`). Until then
//!    the old DNSKEYs stay ([`waits_for_old_ds`]): a DS of an algorithm with no DNSKEY is
//!    what dnsviz calls MISSING_SEP_FOR_ALG.
//! 6. `T3 = max(Tr + parent DS TTL + parent propagation, Ts)` (the old keys' `Delete`): no
//!    cache holds a DS of the old algorithm; the old DNSKEYs are withdrawn, the old keys
//!    still sign.
//! 7. `T4 = T3 + DNSKEY TTL + propagation` (the old keys' `Inactive`): no cache holds a
//!    DNSKEY RRset with an old key, so none expects its algorithm's signatures (RFC 4035
//!    §2.2); the old signatures go.
//!
//! The new KSK or CSK is known by its times: it signs before it is published, which no
//! other rollover writes; its old keys are the signing keys of another algorithm with no
//! end set. `tick` sets their times from the new key's (and from each other's `Delete` once
//! the old DS is gone), so a crash between key files is repaired at the next signing, and a
//! restart resumes the roll from the files: the wait for the old DS is an old KSK or CSK
//! past its `SyncDelete` with no `Delete`.

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

/// True if `k` is an old KSK or CSK of an algorithm rollover whose new DS is confirmed and
/// whose CDS is gone, waiting for its algorithm's DS to go from the parent before its
/// DNSKEY goes (step 5).
pub fn waits_for_old_ds(k: &KeyMeta, now: u64) -> bool {
    k.role != Role::Zsk
        && k.sync_delete.is_some_and(|t| t <= now)
        && k.delete.is_none()
        && k.inactive.is_none()
        && k.is_active(now)
}

/// The new KSK or CSK of the latest algorithm rollover whose DS is confirmed, and when it
/// was confirmed (a key of an earlier rollover keeps its times: the newest is the one).
fn confirmed_sep(keys: &[KeyMeta]) -> Option<(usize, u64)> {
    keys.iter()
        .enumerate()
        .filter(|(_, k)| is_new_sep(k) && k.delete.is_none())
        .filter_map(|(i, k)| Some((i, k.ds_publish?, k.created)))
        .max_by_key(|&(_, _, created)| created)
        .map(|(i, c, _)| (i, c))
}

/// True if `o` is an old key of the algorithm rollover whose new KSK or CSK is `new`: a
/// key of another algorithm made before it (not the keys of a later rollover back).
fn is_old_of(o: &KeyMeta, new: &KeyMeta) -> bool {
    o.algorithm != new.algorithm && o.created <= new.created
}

/// The old keys of the algorithm rollover whose new KSK or CSK is `new`: signing keys of
/// another algorithm, made before it, with no end set.
fn old_keys(keys: &[KeyMeta], new: usize, now: u64) -> Vec<usize> {
    (0..keys.len())
        .filter(|&i| i != new && is_old_of(&keys[i], &keys[new]))
        .filter(|&i| keys[i].is_active(now) && keys[i].inactive.is_none())
        .collect()
}

/// The parent no longer serves a DS of the old algorithm (step 5), at `now`: the old keys
/// of a rollover whose new DS is confirmed are withdrawn after the parent's DS TTL and
/// propagation (not before their CDS went), their signatures a DNSKEY TTL and propagation
/// later. The DS check calls it once they wait for it ([`waits_for_old_ds`]); by hand it
/// comes with the new DS's confirmation (the operator replaced the DS set). Returns the
/// indexes changed (to save); an error if no rollover's old keys are still to withdraw.
pub fn confirm_old_ds_gone(
    keys: &mut [KeyMeta],
    t: &RollTimings,
    now: u64,
) -> Result<Vec<usize>, crate::error::Error> {
    let nothing = || crate::error::Error::NothingToConfirm(None);
    let (new, confirmed) = confirmed_sep(keys).ok_or_else(nothing)?;
    let old = old_keys(keys, new, now);
    if !old.iter().any(|&i| keys[i].role != Role::Zsk) {
        return Err(nothing());
    }
    let swapped = confirmed + t.parent_ds_ttl + t.parent_propagation;
    let withdrawn = (now + t.parent_ds_ttl + t.parent_propagation).max(swapped);
    for &i in &old {
        keys[i].delete = Some(withdrawn);
        keys[i].inactive = Some(withdrawn + t.publish_wait());
    }
    Ok(old)
}

/// Sets the old keys' times of an algorithm rollover under way from the new KSK's or
/// CSK's: once the new DS is confirmed their CDS goes after the parent's DS TTL (the DS
/// change); once an old key is withdrawn ([`confirm_old_ds_gone`]), the others with it
/// (a crash between their files). Pushes the indexes changed to `changed`.
pub(super) fn tick(keys: &mut [KeyMeta], t: &RollTimings, now: u64, changed: &mut Vec<usize>) {
    for n in 0..keys.len() {
        let new = keys[n].clone();
        if !is_new_sep(&new) || new.delete.is_some() {
            continue;
        }
        // The withdrawal already confirmed for one of the old keys (after the new DS).
        let withdrawn = new.ds_publish.and_then(|c| {
            keys.iter()
                .filter(|k| is_old_of(k, &new))
                .filter_map(|k| match (k.delete, k.inactive) {
                    (Some(d), Some(i)) if d < i && d > c => Some(d),
                    _ => None,
                })
                .max()
        });
        for (i, o) in keys.iter_mut().enumerate() {
            if i == n || !is_old_of(o, &new) || !o.is_active(now) || o.inactive.is_some() {
                continue;
            }
            let before = o.clone();
            if o.role != Role::Zsk && o.sync_publish.is_none() {
                // Its CDS stays beside the new key's while its DS is of use at the parent,
                // as in a double-DS rollover.
                o.sync_publish = Some(o.activate.unwrap_or(o.created).min(now));
            }
            if let Some(confirmed) = new.ds_publish {
                if o.role != Role::Zsk {
                    o.sync_delete = Some(confirmed + t.parent_ds_ttl + t.parent_propagation);
                }
            }
            if let Some(withdrawn) = withdrawn {
                o.delete = Some(withdrawn);
                o.inactive = Some(withdrawn + t.publish_wait());
            }
            if *o != before {
                changed.push(i);
            }
        }
    }
}

#[cfg(test)]
mod tests;
