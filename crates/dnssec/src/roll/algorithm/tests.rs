//! The algorithm rollover with a fake clock: the order of its steps, and a validator's eye
//! on every second of it, over every combination of records a cache may hold.

use super::super::{confirm_ds, key_state, next_event, tick, KeyState, RollKind, RollTimings};
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
/// serving the new DS beside the old one `confirm_after` seconds after the CDS appears
/// (confirmed by the DS check then), and dropping the old DS `gone_after` seconds after
/// the old keys wait for that (the check confirms it then); returns what was served each
/// second from `T0`, and the keys.
fn run(roles: &[Role], confirm_after: u64, gone_after: u64) -> (Vec<Served>, Vec<KeyMeta>) {
    let mut keys: Vec<KeyMeta> = (0..roles.len())
        .map(|i| key(roles[i], OLD, i as u16 + 1))
        .collect();
    let mut history = Vec::new();
    // The parent holds the old KSK's DS until the new one is confirmed, then the new only.
    let mut ds: u64 = (0..keys.len())
        .filter(|&i| keys[i].role != Role::Zsk)
        .fold(0, |m, i| m | 1 << i);
    let mut cds_since = None;
    let mut waits_since = None;
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
                ds |= 1 << p;
                tick(&mut keys, &T, now);
            }
        }
        if keys.iter().any(|k| waits_for_old_ds(k, now)) {
            let since = *waits_since.get_or_insert(now);
            if now >= since.saturating_add(gone_after) {
                ds &= (0..keys.len())
                    .filter(|&i| keys[i].algorithm == NEW)
                    .fold(0, |m, i| m | 1 << i);
                assert!(!confirm_old_ds_gone(&mut keys, &T, now).unwrap().is_empty());
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
/// reading the conservative order serves); and every algorithm of the DS set held has a
/// key in the DNSKEY RRset held that signs it (else dnsviz's MISSING_SEP_FOR_ALG).
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
                let signing = algs(keys, set.dnskey & set.signs_keys);
                for alg in algs(keys, ds.ds) {
                    assert!(
                        signing.contains(&alg),
                        "a DS of {alg} of {d} and no DNSKEY of it in that of {k} at {now}"
                    );
                }
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
        let (history, keys) = run(roles, 7, 5);
        check(&history, &keys);
        let at = |s: u64| history[s as usize];
        let (t1, t2) = (22, 22 + 12);
        // The new DS confirmed (tc), the CDS names it alone (ts), the old DS gone (tr).
        let (tc, ts) = (t2 + 7, t2 + 7 + 18);
        let tr = ts + 5;
        let (t3, t4) = (tr + 18, tr + 18 + 12);
        // 1: the new algorithm signs, its keys not published.
        assert_eq!(algs(&keys, at(0).signs_zone), [OLD, NEW]);
        assert_eq!(algs(&keys, at(0).signs_keys), [OLD, NEW]);
        assert_eq!(algs(&keys, at(t1 - 1).dnskey), [OLD]);
        // 2: both algorithms' keys published.
        assert_eq!(algs(&keys, at(t1).dnskey), [OLD, NEW]);
        assert_eq!(algs(&keys, at(t2 - 1).cds), [OLD]);
        // 3: the CDS names the new key too; its DS comes beside the old one.
        assert_eq!(algs(&keys, at(t2).cds), [OLD, NEW]);
        assert_eq!(algs(&keys, at(tc - 1).ds), [OLD]);
        assert_eq!(algs(&keys, at(tc).ds), [OLD, NEW]);
        // 4: the DS change: the CDS names the new key alone, the old DNSKEYs stay ...
        assert_eq!(algs(&keys, at(ts - 1).cds), [OLD, NEW]);
        assert_eq!(algs(&keys, at(ts).cds), [NEW]);
        // 5: ... until the old DS is gone, and the parent's DS TTL after.
        assert_eq!(algs(&keys, at(tr - 1).ds), [OLD, NEW]);
        assert_eq!(algs(&keys, at(tr).ds), [NEW]);
        assert_eq!(algs(&keys, at(t3 - 1).dnskey), [OLD, NEW]);
        // 6: the old keys withdrawn, their signatures kept.
        assert_eq!(algs(&keys, at(t3).dnskey), [NEW]);
        assert_eq!(algs(&keys, at(t4 - 1).signs_zone), [OLD, NEW]);
        // 7: the old signatures go.
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

/// The new wait: while the parent serves the old algorithm's DS, the old DNSKEYs stay (no
/// time of theirs to come, no other rollover starts); once the check sees it gone, they
/// are withdrawn after the parent's DS TTL and propagation, the signatures after that.
#[test]
fn the_old_keys_stay_while_the_old_ds_is_at_the_parent() {
    let (history, mut keys) = run(&[Role::Ksk, Role::Zsk], 7, u64::MAX);
    check(&history, &keys);
    let now = T0 + 399;
    for k in &keys[..2] {
        assert!(k.delete.is_none() && k.inactive.is_none(), "{k:?}");
        assert_eq!(key_state(k, now), KeyState::Active);
    }
    assert_eq!(algs(&keys, history[399].dnskey), [OLD, NEW]);
    assert!(waits_for_old_ds(&keys[0], now) && !waits_for_old_ds(&keys[1], now));
    assert!(!keys[0].has_cds(now) && keys[2].has_cds(now));
    assert_eq!(next_event(&keys, &T, now), None);
    assert!(super::super::start(&keys, RollKind::Zsk, now).is_err());
    assert!(super::super::start(&keys, RollKind::Ksk, now).is_err());
    // Gone at `r`: withdrawn at r + 18, the signatures at r + 30.
    let r = T0 + 500;
    assert_eq!(confirm_old_ds_gone(&mut keys, &T, r).unwrap(), [0, 1]);
    for k in &keys[..2] {
        assert_eq!((k.delete, k.inactive), (Some(r + 18), Some(r + 30)));
    }
    assert_eq!(key_state(&keys[0], r + 17), KeyState::Active);
    assert_eq!(key_state(&keys[0], r + 18), KeyState::Unpublished);
    assert_eq!(key_state(&keys[1], r + 30), KeyState::Removed);
    assert!(confirm_old_ds_gone(&mut keys, &T, r + 1).is_err(), "once");
    assert!(tick(&mut keys, &T, r + 1).changed.is_empty());
}

#[test]
fn states_along_the_way_and_no_early_confirmation() {
    let (_, mut keys) = run(&[Role::Csk], u64::MAX, u64::MAX);
    let (old, new) = (0, 1);
    assert_eq!(key_state(&keys[new], T0 + 399), KeyState::DsPending);
    assert_eq!(key_state(&keys[old], T0 + 399), KeyState::Active);
    // Nothing ends before the parent serves the new DS.
    assert_eq!(next_event(&keys, &T, T0 + 399), None);
    let mut early = keys.clone();
    early[new].sync_publish = Some(T0 + 1000);
    assert!(confirm_ds(&mut early, None, &T, T0 + 399).is_err());
    assert!(confirm_old_ds_gone(&mut keys.clone(), &T, T0 + 399).is_err());
    // Confirmed: the old key's CDS ends after the parent's DS TTL, its DNSKEY waits.
    let c = T0 + 400;
    let tag = keys[new].tag;
    confirm_ds(&mut keys, Some(tag), &T, c).unwrap();
    tick(&mut keys, &T, c);
    assert_eq!(keys[old].sync_delete, Some(c + 18));
    assert_eq!(keys[old].delete, None);
    assert!(!waits_for_old_ds(&keys[old], c + 17) && waits_for_old_ds(&keys[old], c + 18));
    assert_eq!(key_state(&keys[new], c), KeyState::Active);
    // By hand the DS set was replaced: the old DS gone with the confirmation, the old key
    // withdrawn after the parent's DS TTL, at the DS change.
    let mut by_hand = keys.clone();
    confirm_old_ds_gone(&mut by_hand, &T, c).unwrap();
    assert_eq!(by_hand[old].delete, Some(c + 18));
    assert_eq!(by_hand[old].inactive, Some(c + 18 + 12));
    assert_eq!(key_state(&by_hand[old], c + 18), KeyState::Unpublished);
    assert_eq!(key_state(&by_hand[old], c + 30), KeyState::Removed);
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
    let (_, mut keys) = run(&[Role::Ksk, Role::Zsk], u64::MAX, u64::MAX);
    let c = T0 + 400;
    // The new KSK's file written, the old keys' not: as read back after a crash.
    confirm_ds(&mut keys, None, &T, c).unwrap();
    let later = c + 3;
    let changed = tick(&mut keys, &T, later).changed;
    assert_eq!(changed, [0], "the old KSK's CDS end");
    assert_eq!(
        keys[0].sync_delete,
        Some(c + 18),
        "counted from the confirmation"
    );
    assert_eq!(keys[1].sync_delete, None, "a ZSK has no CDS");
    // The old DS gone, only the old KSK's file written before a crash: the ZSK follows.
    let r = c + 20;
    let mut all = keys.clone();
    confirm_old_ds_gone(&mut all, &T, r).unwrap();
    keys[0] = all[0].clone();
    assert_eq!(tick(&mut keys, &T, r + 2).changed, [1]);
    assert_eq!(keys[1].delete, Some(r + 18));
    assert_eq!(keys[1].inactive, Some(r + 30));
}

/// A rollover back to the first algorithm: the keys of the first rollover keep their
/// times, and its new key (which signed before it was published) takes the new keys of
/// the second for none of its old ones.
#[test]
fn a_rollover_back_leaves_the_new_keys_alone() {
    let (_, mut keys) = run(&[Role::Csk], 7, 5);
    let start = T0 + 400;
    assert!(due(&keys, OLD, start));
    let mut back = key(Role::Csk, OLD, 200);
    back.created = start;
    schedule_new(&mut back, &T, start);
    keys.push(back);
    for now in start..start + 400 {
        tick(&mut keys, &T, now);
        assert!(
            keys[2].delete.is_none() && keys[2].inactive.is_none(),
            "at {now}"
        );
        if key_state(&keys[2], now) == KeyState::DsPending {
            confirm_ds(&mut keys, None, &T, now).unwrap();
            tick(&mut keys, &T, now);
        }
        if keys.iter().any(|k| waits_for_old_ds(k, now)) {
            assert_eq!(confirm_old_ds_gone(&mut keys, &T, now).unwrap(), [1]);
        }
    }
    let end = start + 399;
    let states: Vec<KeyState> = keys.iter().map(|k| key_state(k, end)).collect();
    assert_eq!(
        states,
        [KeyState::Removed, KeyState::Removed, KeyState::Active]
    );
}
