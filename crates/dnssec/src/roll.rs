//! Key rollovers as times in the keys' metadata (sans-I/O: keys and a clock in, times out).
//!
//! A rollover is nothing but times written in the key files ([`crate::keys`]: BIND's
//! `Publish`, `Activate`, `Inactive`, `Delete`, `SyncPublish`, `SyncDelete`, `DSPublish`),
//! so the signer, which publishes and signs with the keys each time says at every signing
//! ([`crate::keys::zone_keys`]), carries it out by itself, and a restart in the middle of
//! one resumes it: there is no other state. This module decides those times.
//!
//! **ZSK, pre-publication** (RFC 6781 §4.1.1.1, RFC 7583 §3.2). At `T0` (by hand, or when
//! the active ZSK has lived `zsk_lifetime`, minus the publication wait, so that the new
//! key takes over when the lifetime ends):
//!
//! 1. `T0`: the new ZSK is published (DNSKEY), not yet signing.
//! 2. `Ta = T0 + DNSKEY TTL + propagation`: every cache that holds the DNSKEY RRset holds
//!    the new key; the new ZSK signs, the old one stops (`Inactive`) but stays published.
//! 3. `Td = Ta + max zone TTL + propagation`: no cache holds a signature of the old key;
//!    its DNSKEY is withdrawn (`Delete`).
//!
//! **KSK or CSK, double-DS** (RFC 6781 §4.1.2, RFC 7583 §3.3.2), the parent's part done by
//! the operator:
//!
//! 1. `T0` (by hand, or when the active KSK or CSK has lived `ksk_lifetime`): a new key
//!    is made, waiting for its DS (`SyncPublish` set, no
//!    `Publish`); the zone does not change: no CDS for a key that is not in the DNSKEY
//!    RRset (RFC 7344 §4.1). The operator hands the parent the new DS (`shardns key ds`
//!    prints both) and waits until the parent serves it.
//! 2. `Tc`: the operator confirms (`DSPublish`): the new key is published in the DNSKEY
//!    RRset (signed by the old key, whose DS every cache has); its CDS and CDNSKEY follow
//!    at `Tc + DNSKEY TTL + propagation` (`SyncPublish` moved there: Knot's "ready"), when
//!    every cache holding the DNSKEY RRset holds the new key.
//! 3. `Ta = Tc + max(parent DS TTL + parent propagation, DNSKEY TTL + propagation)`: every
//!    cache holds both DS and the new DNSKEY; the new key signs (the DNSKEY RRset, and the
//!    zone for a CSK), the old stops but stays published.
//! 4. `Td = Ta + max zone TTL + propagation` (a KSK: the DNSKEY TTL): no cache holds a
//!    signature of the old key; its DNSKEY, CDS and CDNSKEY are withdrawn (`Delete`,
//!    `SyncDelete`), and from then on the operator may remove its DS from the parent.
//!
//! At every moment a validator, whatever it cached within the TTLs, finds a DS it holds
//! that matches a key signing the DNSKEY RRset it holds, and that RRset holds a key of every
//! signature it may have cached (the tests check this second by second).
//!
//! **Algorithm** (RFC 6781 §4.1.4): the new algorithm's signatures first, then its keys,
//! then the DS (the old algorithm's gone from the parent), then the old keys go, then
//! their signatures ([`algorithm`]).
//!
//! **Key shape** (CSK to KSK + ZSK and back): a double-DS rollover of the new KSK or CSK
//! whose old keys are of the other shape, a new ZSK pre-published ([`shape`]).
//!
//! Pairing: a rollover's old and new keys are not linked by a field but by their times
//! ([`tick`] sets the old key's from the new key's), so a crash between the writes of the
//! two key files is repaired at the next signing.

use crate::alg::Algorithm;
use crate::error::Error;
pub use crate::error::RollKind;
use crate::keys::{KeyMeta, Role};
use core::fmt;

/// The timings a rollover waits for, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollTimings {
    /// The DNSKEY RRset's TTL.
    pub dnskey_ttl: u64,
    /// The largest TTL of the zone's signed RRsets (DNSKEY included).
    pub max_ttl: u64,
    /// How long a new version of the zone takes to reach all its servers.
    pub propagation: u64,
    /// The TTL of the DS RRset at the parent.
    pub parent_ds_ttl: u64,
    /// How long a DS change at the parent takes to reach all the parent's servers.
    pub parent_propagation: u64,
    /// A ZSK is replaced this long after it became active; `None`: only by hand.
    pub zsk_lifetime: Option<u64>,
    /// A KSK or CSK rollover starts this long after the key became active; `None`: only
    /// by hand.
    pub ksk_lifetime: Option<u64>,
}

impl RollTimings {
    /// From the publication of a new DNSKEY to the moment every cache has it.
    pub fn publish_wait(&self) -> u64 {
        self.dnskey_ttl + self.propagation
    }

    /// From the confirmation that the parent serves a new DS to the moment every cache
    /// has it and the new DNSKEY (published at the confirmation).
    pub fn ds_wait(&self) -> u64 {
        (self.parent_ds_ttl + self.parent_propagation).max(self.publish_wait())
    }

    /// From the last signature of a retired key to the moment no cache holds one.
    pub fn retire_wait(&self, role: Role) -> u64 {
        match role {
            Role::Ksk => self.dnskey_ttl.max(1) + self.propagation,
            Role::Zsk | Role::Csk => self.max_ttl.max(self.dnskey_ttl) + self.propagation,
        }
    }
}

impl RollKind {
    fn has(self, role: Role) -> bool {
        match self {
            Self::Zsk => role == Role::Zsk,
            Self::Ksk => role != Role::Zsk,
        }
    }
}

/// The key a rollover makes: the caller generates it with this role and algorithm, sets
/// its times with [`schedule_new`], adds it to the keys and calls [`tick`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewKey {
    /// What rolls.
    pub kind: RollKind,
    /// The index of the key it replaces.
    pub old: usize,
    /// The new key's role (the old key's).
    pub role: Role,
    /// The new key's algorithm (the old key's: no algorithm rollover).
    pub algorithm: Algorithm,
}

/// What a key is doing in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyState {
    /// Not published yet, nothing to wait for but time.
    Future,
    /// A new KSK or CSK whose DS the operator is to give the parent, then confirm.
    DsPending,
    /// In the DNSKEY RRset, not signing yet.
    Published,
    /// Signing while its DNSKEY is not in the zone: a key of an algorithm rollover, new
    /// (before its DNSKEY) or old (after it).
    Unpublished,
    /// Signing.
    Active,
    /// No longer signing, still in the DNSKEY RRset.
    Retired,
    /// Withdrawn.
    Removed,
}

impl fmt::Display for KeyState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Future => "future",
            Self::DsPending => "ds-pending",
            Self::Published => "published",
            Self::Unpublished => "signing-unpublished",
            Self::Active => "active",
            Self::Retired => "retired",
            Self::Removed => "removed",
        })
    }
}

/// Where `k` is at `now`.
pub fn key_state(k: &KeyMeta, now: u64) -> KeyState {
    if algorithm::ds_pending(k, now) {
        KeyState::DsPending
    } else if k.is_active(now) {
        KeyState::Active
    } else if k.is_published(now) {
        if k.inactive.is_some_and(|t| t <= now) {
            KeyState::Retired
        } else {
            KeyState::Published
        }
    } else if k.signs(now) {
        KeyState::Unpublished
    } else if k.delete.is_some_and(|t| t <= now) {
        KeyState::Removed
    } else if is_ds_pending(k) {
        KeyState::DsPending
    } else {
        KeyState::Future
    }
}

/// A new KSK or CSK of a double-DS rollover, waiting for the operator's confirmation.
fn is_ds_pending(k: &KeyMeta) -> bool {
    k.role != Role::Zsk && k.publish.is_none() && k.sync_publish.is_some() && k.delete.is_none()
}

/// The key's next time after `now`, if any.
pub fn key_next_event(k: &KeyMeta, now: u64) -> Option<u64> {
    k.times()
        .into_iter()
        .filter_map(|(_, t)| t)
        .filter(|&t| t > now)
        .min()
}

/// The key of `kind` that a rollover would replace: an active key of the kind with no
/// end set (the oldest if several).
fn current(keys: &[KeyMeta], kind: RollKind, now: u64) -> Option<usize> {
    keys.iter()
        .enumerate()
        .filter(|(_, k)| kind.has(k.role) && k.is_active(now) && k.inactive.is_none())
        .min_by_key(|(_, k)| (k.activate, k.created))
        .map(|(i, _)| i)
}

/// A key of `kind` with something still to happen: a rollover under way.
fn busy(keys: &[KeyMeta], kind: RollKind, now: u64) -> Option<&KeyMeta> {
    // An algorithm rollover waiting for its old DS to go has no time to come, but is not
    // over: nothing else starts meanwhile.
    if let Some(k) = keys.iter().find(|k| algorithm::waits_for_old_ds(k, now)) {
        return Some(k);
    }
    keys.iter().filter(|k| kind.has(k.role)).find(|k| {
        is_ds_pending(k) || algorithm::ds_pending(k, now) || key_next_event(k, now).is_some()
    })
}

/// Checks that a rollover of `kind` may start at `now`, and says which key to make.
pub fn start(keys: &[KeyMeta], kind: RollKind, now: u64) -> Result<NewKey, Error> {
    if let Some(k) = busy(keys, kind, now) {
        return Err(Error::InProgress(kind, k.tag));
    }
    let old = current(keys, kind, now).ok_or(Error::NoKey(kind))?;
    Ok(NewKey {
        kind,
        old,
        role: keys[old].role,
        algorithm: keys[old].algorithm,
    })
}

/// Sets the times of the key a rollover made (`created` is kept): a new ZSK is published
/// now and signs after [`RollTimings::publish_wait`]; a new KSK or CSK gets CDS and
/// CDNSKEY now and waits for [`confirm_ds`].
pub fn schedule_new(new: &mut KeyMeta, kind: RollKind, t: &RollTimings, now: u64) {
    new.inactive = None;
    new.delete = None;
    new.ds_publish = None;
    new.sync_delete = None;
    match kind {
        RollKind::Zsk => {
            new.publish = Some(now);
            new.activate = Some(now + t.publish_wait());
            new.sync_publish = None;
        }
        RollKind::Ksk => {
            new.publish = None;
            new.activate = None;
            new.sync_publish = Some(now);
        }
    }
}

/// The operator confirms the parent serves the DS of the new key (of `tag`, or the only
/// one waiting): it is published now and signs after [`RollTimings::ds_wait`] (the new key
/// of an algorithm rollover, published and signing already, only records the
/// confirmation). Returns its index; call [`tick`] next, which schedules the old key's end.
pub fn confirm_ds(
    keys: &mut [KeyMeta],
    tag: Option<u16>,
    t: &RollTimings,
    now: u64,
) -> Result<usize, Error> {
    let i = keys
        .iter()
        .position(|k| {
            (is_ds_pending(k) || algorithm::ds_pending(k, now)) && tag.is_none_or(|t| k.tag == t)
        })
        .ok_or(Error::NothingToConfirm(tag))?;
    let k = &mut keys[i];
    let algorithm_roll = algorithm::ds_pending(k, now);
    k.ds_publish = Some(now);
    if algorithm_roll {
        return Ok(i);
    }
    k.publish = Some(now);
    // Its CDS once every cache holding the DNSKEY RRset has it (Knot's "ready").
    k.sync_publish = Some(now + t.publish_wait());
    k.activate = Some(now + t.ds_wait());
    Ok(i)
}

/// What [`tick`] did and wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tick {
    /// Indexes of keys whose times changed: save them.
    pub changed: Vec<usize>,
    /// A ZSK, KSK or CSK whose lifetime is up: make this key, [`schedule_new`] it, add it,
    /// tick again.
    pub new_key: Option<NewKey>,
}

/// Brings the times of a rollover under way into line (the old key's end from the new
/// key's start), and says when a key's lifetime (`zsk_lifetime`, `ksk_lifetime`) calls for a
/// new key. Idempotent: run it at every signing.
pub fn tick(keys: &mut [KeyMeta], t: &RollTimings, now: u64) -> Tick {
    let mut out = Tick::default();
    for new in 0..keys.len() {
        let n = keys[new].clone();
        // A successor: published (or waiting for its DS) and not yet signing.
        let waiting = is_ds_pending(&n);
        let coming = n.publish.is_some() && n.activate.is_some_and(|a| a > now);
        if !waiting && !coming {
            continue;
        }
        let Some(old) = keys.iter().enumerate().position(|(i, k)| {
            i != new
                && k.role == n.role
                && k.algorithm == n.algorithm
                && k.is_active(now)
                && k.inactive.is_none()
        }) else {
            continue;
        };
        let o = &mut keys[old];
        let before = o.clone();
        if o.role != Role::Zsk && o.sync_publish.is_none() {
            // Its CDS stays while it is published, past the end of its signing.
            o.sync_publish = Some(o.activate.unwrap_or(o.created).min(now));
        }
        if let (false, Some(a)) = (waiting, n.activate) {
            let end = a + t.retire_wait(o.role);
            o.inactive = Some(a);
            o.delete = Some(end);
            if o.role != Role::Zsk {
                o.sync_delete = Some(end);
            }
        }
        if *o != before {
            out.changed.push(old);
        }
    }
    algorithm::tick(keys, t, now, &mut out.changed);
    shape::tick(keys, t, now, &mut out.changed);
    // One new key at a time: the ZSK's first, the KSK's at the next tick.
    out.new_key = [RollKind::Zsk, RollKind::Ksk].into_iter().find_map(|kind| {
        match lifetime_end(keys, t, kind, now) {
            Some((old, at)) if at <= now => Some(NewKey {
                kind,
                old,
                role: keys[old].role,
                algorithm: keys[old].algorithm,
            }),
            _ => None,
        }
    });
    out.changed.sort_unstable();
    out.changed.dedup();
    out
}

/// When a rollover of `kind` is to start on the current key's lifetime, and that key's
/// index; `None` without a lifetime, a current key, or with a rollover of the kind under
/// way. A ZSK's starts the publication wait early, so that its successor signs when the
/// lifetime ends; a KSK's or CSK's starts when it ends (the parent's DS, which the
/// operator confirms, decides how long the rest takes).
fn lifetime_end(
    keys: &[KeyMeta],
    t: &RollTimings,
    kind: RollKind,
    now: u64,
) -> Option<(usize, u64)> {
    let (life, lead) = match kind {
        RollKind::Zsk => (t.zsk_lifetime?, t.publish_wait()),
        RollKind::Ksk => (t.ksk_lifetime?, 0),
    };
    if busy(keys, kind, now).is_some() {
        return None;
    }
    let old = current(keys, kind, now)?;
    let since = keys[old].activate.unwrap_or(keys[old].created);
    Some((old, (since + life).saturating_sub(lead)))
}

/// The next moment after `now` the keys call for a signing: a time of a key, or the start
/// of a rollover on a key's lifetime.
pub fn next_event(keys: &[KeyMeta], t: &RollTimings, now: u64) -> Option<u64> {
    let times = keys.iter().filter_map(|k| key_next_event(k, now));
    let lifetimes = [RollKind::Zsk, RollKind::Ksk]
        .into_iter()
        .filter_map(|kind| lifetime_end(keys, t, kind, now))
        .map(|(_, at)| at.max(now + 1));
    times.chain(lifetimes).min()
}

pub mod algorithm;
mod hold;
pub mod shape;
pub use hold::hold;

#[cfg(test)]
mod tests;
