//! The algorithm rollover with a fake clock: the order of its steps, and a validator's eye
//! on every second of it, over every combination of records a cache may hold.

use super::super::{confirm_ds, key_state, next_event, tick, KeyState, RollTimings};
use super::*;
use crate::keys::duty;
use crate::testutil::name;

const T0: u64 = 1_000_000;

const T: RollTimings = RollTimings {
    dnskey_ttl: 10,
    max_ttl: 20,
    propagation: 2,
    parent_ds_ttl: 15,
    parent_propagation: 3,
    zsk_lifetime: None,
    ksk_lifetime: None,
};

fn key(role: Role, alg: Algorithm, tag: u16) -> KeyMeta {
    KeyMeta {
        zone: name("example."),
        role,
        algorithm: alg,
        tag,
        created: T0 - 1000,
        publish: Some(T0 - 1000),
        activate: Some(T0 - 1000),
        inactive: None,
        delete: None,
        sync_publish: None,
        sync_delete: None,
        ds_publish: None,
    }
}

/// What the zone and its parent served at one second: masks over the keys' indexes.
#[derive(Clone, Copy, Default)]
struct Served {
    dnskey: u64,
    signs_keys: u64,
    signs_zone: u64,
    cds: u64,
    ds: u64,
}

const OLD: Algorithm = Algorithm::EcdsaP256Sha256;
const NEW: Algorithm = Algorithm::Ed25519;

/// Runs an algorithm rollover of the keys `roles` from `OLD` to `NEW`, the parent
/// confirming the new DS `confirm_after` seconds after the CDS appears; returns what was
/// served each second from `T0`, and the keys.
fn run(roles: &[Role], confirm_after: u64) -> (Vec<Served>, Vec<KeyMeta>) {
    let mut keys: Vec<KeyMeta> = (0..roles.len())
        .map(|i| key(roles[i], OLD, i as u16 + 1))
        .collect();
    let mut history = Vec::new();
    // The parent holds the old KSK's DS until the new one is confirmed, then the new only.
    let mut ds: u64 = (0..keys.len())
        .filter(|&i| keys[i].role != Role::Zsk)
        .fold(0, |m, i| m | 1 << i);
    let mut cds_since = None;
    assert!(due(&keys, NEW, T0) && !due(&keys, OLD, T0));
    for (i, &role) in roles.iter().enumerate() {
        let mut k = key(role, NEW, 100 + i as u16);
        k.created = T0;
        schedule_new(&mut k, &T, T0);
        keys.push(k);
    }
    for now in T0..T0 + 400 {
        tick(&mut keys, &T, now);
        assert!(tick(&mut keys, &T, now).changed.is_empty(), "idempotent");
        assert!(!due(&keys, NEW, now), "started again at {now}");
        let pending: Vec<usize> = (0..keys.len())
            .filter(|&i| key_state(&keys[i], now) == KeyState::DsPending)
            .collect();
        if let Some(&p) = pending.first() {
            let since = *cds_since.get_or_insert(now);
            if now >= since.saturating_add(confirm_after) {
                assert_eq!(confirm_ds(&mut keys, None, &T, now).unwrap(), p);
                ds = 1 << p;
                tick(&mut keys, &T, now);
            }
        }
        let mut s = Served {
            ds,
            ..Served::default()
        };
        for (i, k) in keys.iter().enumerate() {
            let d = duty(k, keys.iter(), now);
            let bit = 1u64 << i;
            s.dnskey |= bit * u64::from(d.dnskey);
            s.signs_keys |= bit * u64::from(d.signs_keys);
            s.signs_zone |= bit * u64::from(d.signs_zone);
            s.cds |= bit * u64::from(d.cds);
        }
        assert_eq!(s.cds & !s.dnskey, 0, "CDS without DNSKEY at {now}");
        assert_ne!(s.cds, 0, "no CDS at {now}");
        history.push(s);
    }
    (history, keys)
}

fn algs(keys: &[KeyMeta], mask: u64) -> Vec<Algorithm> {
    let mut v: Vec<Algorithm> = (0..keys.len())
        .filter(|i| mask & 1 << i != 0)
        .map(|i| keys[i].algorithm)
        .collect();
    v.sort_by_key(|a| a.number());
    v.dedup();
    v
}

/// Every combination a cache may hold at each second validates: a DS (within the parent's
/// DS TTL and propagation) matches a published key that signed the DNSKEY RRset held
/// (within the DNSKEY TTL), and an RRset's signatures held (within the max TTL) include,
/// for every algorithm of that DNSKEY RRset, a key of it (RFC 4035 §2.2, the strict
/// reading the conservative order serves).
fn check(history: &[Served], keys: &[KeyMeta]) {
    let ds_age = (T.parent_ds_ttl + T.parent_propagation) as usize;
    let key_age = (T.dnskey_ttl + T.propagation) as usize;
    let sig_age = (T.max_ttl.max(T.dnskey_ttl) + T.propagation) as usize;
    for now in 0..history.len() {
        for d in now.saturating_sub(ds_age)..=now {
            for k in now.saturating_sub(key_age)..=now {
                let (ds, set) = (history[d], history[k]);
                assert_ne!(
                    ds.ds & set.dnskey & set.signs_keys,
                    0,
                    "DS of {d} and DNSKEY of {k} at {now}"
                );
                let from = now.saturating_sub(sig_age);
                for (r, held) in history.iter().enumerate().take(now + 1).skip(from) {
                    let sigs = held.signs_zone;
                    for alg in algs(keys, set.dnskey) {
                        assert!(
                            algs(keys, sigs & set.dnskey).contains(&alg),
                            "no {alg} signature of {r} for the DNSKEY of {k} at {now}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn steps_in_order_and_valid_every_second() {
    for roles in [&[Role::Csk][..], &[Role::Ksk, Role::Zsk]] {
        let (history, keys) = run(roles, 7);
        check(&history, &keys);
        let at = |s: u64| history[s as usize];
        let (t1, t2) = (22, 22 + 12);
        let (t3, t4) = (t2 + 7 + 18, t2 + 7 + 18 + 12);
        // 1: the new algorithm signs, its keys not published.
        assert_eq!(algs(&keys, at(0).signs_zone), [OLD, NEW]);
        assert_eq!(algs(&keys, at(0).signs_keys), [OLD, NEW]);
        assert_eq!(algs(&keys, at(t1 - 1).dnskey), [OLD]);
        // 2: both algorithms' keys published.
        assert_eq!(algs(&keys, at(t1).dnskey), [OLD, NEW]);
        assert_eq!(algs(&keys, at(t2 - 1).cds), [OLD]);
        // 3: the CDS names the new key too; the DS is swapped.
        assert_eq!(algs(&keys, at(t2).cds), [OLD, NEW]);
        assert_eq!(algs(&keys, at(t2 + 6).ds), [OLD]);
        assert_eq!(algs(&keys, at(t2 + 7).ds), [NEW]);
        // 4: the old keys withdrawn, their signatures kept.
        assert_eq!(algs(&keys, at(t3 - 1).dnskey), [OLD, NEW]);
        assert_eq!(algs(&keys, at(t3).dnskey), [NEW]);
        assert_eq!(algs(&keys, at(t3 - 1).cds), [OLD, NEW]);
        assert_eq!(algs(&keys, at(t3).cds), [NEW]);
        assert_eq!(algs(&keys, at(t4 - 1).signs_zone), [OLD, NEW]);
        // 5: the old signatures go.
        assert_eq!(algs(&keys, at(t4).signs_zone), [NEW]);
        assert_eq!(algs(&keys, at(t4).signs_keys), [NEW]);
        let now = T0 + 399;
        for k in &keys {
            let want = if k.algorithm == NEW {
                KeyState::Active
            } else {
                KeyState::Removed
            };
            assert_eq!(key_state(k, now), want, "{k:?}");
        }
        assert_eq!(next_event(&keys, &T, now), None);
        assert!(!due(&keys, NEW, now) && due(&keys, OLD, now));
    }
}

#[test]
fn states_along_the_way_and_no_early_confirmation() {
    let (_, mut keys) = run(&[Role::Csk], u64::MAX);
    let (old, new) = (0, 1);
    assert_eq!(key_state(&keys[new], T0 + 399), KeyState::DsPending);
    assert_eq!(key_state(&keys[old], T0 + 399), KeyState::Active);
    // Nothing ends before the parent serves the new DS.
    assert_eq!(next_event(&keys, &T, T0 + 399), None);
    let mut early = keys.clone();
    early[new].sync_publish = Some(T0 + 1000);
    assert!(confirm_ds(&mut early, None, &T, T0 + 399).is_err());
    // Confirmed: the old key's end follows; after its DNSKEY it still signs.
    let c = T0 + 400;
    let tag = keys[new].tag;
    confirm_ds(&mut keys, Some(tag), &T, c).unwrap();
    tick(&mut keys, &T, c);
    assert_eq!(keys[old].delete, Some(c + 18));
    assert_eq!(keys[old].inactive, Some(c + 18 + 12));
    assert_eq!(key_state(&keys[old], c + 18), KeyState::Unpublished);
    assert_eq!(key_state(&keys[old], c + 30), KeyState::Removed);
    assert_eq!(key_state(&keys[new], c), KeyState::Active);
    let mut fresh = key(Role::Zsk, NEW, 9);
    schedule_new(&mut fresh, &T, T0);
    assert_eq!(key_state(&fresh, T0), KeyState::Unpublished);
}

#[test]
fn not_started_while_another_rollover_runs_nor_on_two_algorithms() {
    let mut keys = vec![key(Role::Csk, OLD, 1), key(Role::Zsk, OLD, 2)];
    keys[1].publish = Some(T0 + 5);
    keys[1].activate = Some(T0 + 10);
    assert!(!due(&keys, NEW, T0) && wanted(&keys, NEW, T0));
    assert!(due(&keys, NEW, T0 + 10));
    let keys = vec![key(Role::Csk, OLD, 1), key(Role::Csk, NEW, 2)];
    assert!(!due(&keys, NEW, T0) && !due(&keys, OLD, T0));
}

#[test]
fn a_withdrawn_key_without_inactive_does_not_sign() {
    let mut k = key(Role::Zsk, OLD, 1);
    k.delete = Some(T0);
    assert!(!k.signs(T0) && k.signs(T0 - 1));
}

#[test]
fn a_crash_after_the_confirmation_is_repaired_at_the_next_tick() {
    let (_, mut keys) = run(&[Role::Ksk, Role::Zsk], u64::MAX);
    let c = T0 + 400;
    // The new KSK's file written, the old keys' not: as read back after a crash.
    confirm_ds(&mut keys, None, &T, c).unwrap();
    assert!(keys[..2].iter().all(|k| k.delete.is_none()));
    let later = c + 3;
    let changed = tick(&mut keys, &T, later).changed;
    assert_eq!(changed, [0, 1], "both old keys");
    for k in &keys[..2] {
        assert_eq!(k.delete, Some(c + 18), "counted from the confirmation");
        assert_eq!(k.inactive, Some(c + 30));
    }
    assert_eq!(keys[0].sync_delete, Some(c + 18));
    assert_eq!(keys[1].sync_delete, None, "a ZSK has no CDS");
}
