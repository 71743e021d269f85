//! Key shape rollover: a zone signed by one CSK moves to a KSK and a ZSK, or back, when the
//! policy's `single_type_signing` changes (Knot rolls on a change of its
//! `single-type-signing` too). Keys of the new shape and the zone's algorithm are made at
//! `T0`; the new KSK or CSK goes through a double-DS rollover (RFC 7583 §3.3.2) whose old
//! keys are those of the other shape:
//!
//! **CSK -> KSK + ZSK**:
//!
//! 1. `T0`: the new ZSK is published; the new KSK waits for its DS (`SyncPublish`, no
//!    `Publish`), as in a KSK rollover; the CSK keeps signing everything.
//! 2. `T0 + DNSKEY TTL + propagation`: every cache holds the new ZSK; it signs the zone
//!    beside the CSK (two signatures per RRset, each validating by itself).
//! 3. `Tc`: the parent serves the new DS (the operator, the parent's DS check or the push
//!    confirm it): the new KSK is published, its CDS follows a DNSKEY TTL later.
//! 4. `Ta = Tc + max(parent DS TTL + parent propagation, DNSKEY TTL + propagation)`: the
//!    KSK signs the DNSKEY RRset, the CSK stops signing (the ZSK signs the zone alone).
//! 5. `Ta + max zone TTL + propagation`: the CSK's DNSKEY, CDS and CDNSKEY are withdrawn;
//!    its DS may go from the parent.
//!
//! **KSK + ZSK -> CSK**: a double-DS rollover of the KSK to a CSK; at `Ta` the CSK signs
//! everything and both old keys stop, the KSK withdrawn a DNSKEY TTL (and the propagation)
//! later, the ZSK the max zone TTL later.
//!
//! As every rollover here, the state is the keys' times: the old keys' end is set from the
//! new KSK's or CSK's start at every [`super::tick`], and a shape that still differs from the
//! policy's after a crash between key files makes only the keys it lacks.

use super::{busy, RollKind, RollTimings};
use crate::alg::Algorithm;
use crate::keys::{KeyMeta, Role};

/// The roles of a shape: one CSK, or a KSK and a ZSK.
pub fn roles(single_type: bool) -> &'static [Role] {
    if single_type {
        &[Role::Csk]
    } else {
        &[Role::Ksk, Role::Zsk]
    }
}

/// A key of the algorithm `alg` that signs now or will, with no end set.
fn current(k: &KeyMeta, alg: Algorithm) -> bool {
    k.algorithm == alg && k.inactive.is_none() && k.delete.is_none()
}

/// The roles the keys of `alg` lack for the shape `single_type` while a key of the other
/// shape is current: the keys a shape rollover is to make (empty: no shape rollover
/// wanted, or its keys made already). The ZSK comes first: a crash after its file leaves
/// the zone as it was, plus a ZSK.
pub fn wanted(keys: &[KeyMeta], single_type: bool, alg: Algorithm) -> Vec<Role> {
    let want = roles(single_type);
    let other = keys
        .iter()
        .any(|k| current(k, alg) && !want.contains(&k.role));
    if !other {
        return Vec::new();
    }
    let mut out: Vec<Role> = want
        .iter()
        .copied()
        .filter(|&r| !keys.iter().any(|k| k.role == r && current(k, alg)))
        .collect();
    out.sort_by_key(|&r| r != Role::Zsk);
    out
}

/// True if a shape rollover is to start (or its missing keys be made) at `now`: the keys
/// lack a role of the shape and no other rollover is under way.
pub fn due(keys: &[KeyMeta], single_type: bool, alg: Algorithm, now: u64) -> bool {
    !wanted(keys, single_type, alg).is_empty()
        && busy(keys, RollKind::Zsk, now).is_none()
        && busy(keys, RollKind::Ksk, now).is_none()
}

/// Sets the times of a key made for a shape rollover at `now` (`created` kept): a ZSK is
/// published now and signs after the publication wait; a KSK or CSK waits for its DS as in
/// a double-DS rollover.
pub fn schedule_new(new: &mut KeyMeta, t: &RollTimings, now: u64) {
    let kind = if new.role == Role::Zsk {
        RollKind::Zsk
    } else {
        RollKind::Ksk
    };
    super::schedule_new(new, kind, t, now);
}

/// True if a new key of `new` ends an old key of `old` in a shape rollover: a new KSK
/// ends the CSK, a new CSK ends the KSK and the ZSK.
pub(super) fn pairs(new: Role, old: Role) -> bool {
    matches!(
        (new, old),
        (Role::Ksk, Role::Csk) | (Role::Csk, Role::Ksk) | (Role::Csk, Role::Zsk)
    )
}

/// Sets the old keys' times of a shape rollover under way from the new KSK's or CSK's:
/// their CDS kept while they are published, their end at its first signature and their
/// DNSKEY's withdrawal after their retire wait. Pushes the indexes changed to `changed`.
pub(super) fn tick(keys: &mut [KeyMeta], t: &RollTimings, now: u64, changed: &mut Vec<usize>) {
    for n in 0..keys.len() {
        let new = keys[n].clone();
        let waiting = super::is_ds_pending(&new);
        let coming = new.publish.is_some() && new.activate.is_some_and(|a| a > now);
        if new.role == Role::Zsk || !(waiting || coming) {
            continue;
        }
        for (i, o) in keys.iter_mut().enumerate() {
            if i == n
                || !pairs(new.role, o.role)
                || o.algorithm != new.algorithm
                || !o.is_active(now)
                || o.inactive.is_some()
            {
                continue;
            }
            let before = o.clone();
            if o.role != Role::Zsk && o.sync_publish.is_none() {
                o.sync_publish = Some(o.activate.unwrap_or(o.created).min(now));
            }
            if let (false, Some(a)) = (waiting, new.activate) {
                let end = a + t.retire_wait(o.role);
                o.inactive = Some(a);
                o.delete = Some(end);
                if o.role != Role::Zsk {
                    o.sync_delete = Some(end);
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
