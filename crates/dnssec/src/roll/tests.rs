//! The rollover state machine with a fake clock: every transition, and a validator's eye on
//! every second of a rollover.

use super::*;
use crate::keys::duty;
use crate::testutil::name;

pub(super) const T0: u64 = 1_000_000;

pub(super) const TIMINGS: RollTimings = RollTimings {
    dnskey_ttl: 10,
    max_ttl: 20,
    propagation: 2,
    parent_ds_ttl: 15,
    parent_propagation: 3,
    zsk_lifetime: None,
    ksk_lifetime: None,
};

pub(super) fn key(role: Role, tag: u16, now: u64) -> KeyMeta {
    KeyMeta {
        zone: name("example."),
        role,
        algorithm: Algorithm::EcdsaP256Sha256,
        tag,
        created: now,
        publish: Some(now),
        activate: Some(now),
        inactive: None,
        delete: None,
        sync_publish: None,
        sync_delete: None,
        ds_publish: None,
    }
}

/// What the zone served at one second: bit masks over the keys' indexes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Served {
    pub(super) dnskey: u64,
    pub(super) signs_keys: u64,
    pub(super) signs_zone: u64,
    pub(super) cds: u64,
    /// The DS RRset at the parent: the first key's from the start, a new key's from the
    /// operator's confirmation, until its `SyncDelete` (the operator removes it then, at
    /// the earliest).
    pub(super) parent_ds: u64,
}

/// A zone's keys over time, signed again every second (the server signs at each key
/// event; every second is more often).
pub(super) struct Sim {
    pub(super) keys: Vec<KeyMeta>,
    pub(super) t: RollTimings,
    pub(super) now: u64,
    history: Vec<Served>,
    next_tag: u16,
}

impl Sim {
    pub(super) fn new(roles: &[Role], t: RollTimings) -> Self {
        let keys = roles
            .iter()
            .enumerate()
            .map(|(i, &r)| key(r, i as u16 + 1, T0))
            .collect();
        let mut sim = Self {
            keys,
            t,
            now: T0,
            history: Vec::new(),
            next_tag: roles.len() as u16 + 1,
        };
        sim.sign();
        sim
    }

    /// What the server does at a signing: tick (making a new ZSK if its lifetime is up),
    /// then sign with the keys' duties now.
    pub(super) fn sign(&mut self) {
        let mut tick = tick(&mut self.keys, &self.t, self.now);
        if let Some(new) = tick.new_key.take() {
            self.add(new);
            let again = super::tick(&mut self.keys, &self.t, self.now);
            assert!(again.new_key.is_none(), "{again:?}");
        }
        assert!(
            super::tick(&mut self.keys, &self.t, self.now)
                .changed
                .is_empty(),
            "tick is not idempotent at {}",
            self.now
        );
        let mut s = Served::default();
        for (i, k) in self.keys.iter().enumerate() {
            let d = duty(k, self.keys.iter(), self.now);
            let bit = 1u64 << i;
            s.dnskey |= bit * u64::from(d.dnskey);
            s.signs_keys |= bit * u64::from(d.signs_keys);
            s.signs_zone |= bit * u64::from(d.signs_zone);
            s.cds |= bit * u64::from(d.cds);
            let in_parent =
                (i == 0 && k.role != Role::Zsk) || k.ds_publish.is_some_and(|t| t <= self.now);
            let removed = k.sync_delete.is_some_and(|t| t <= self.now);
            s.parent_ds |= bit * u64::from(in_parent && !removed);
        }
        // RFC 7344 §4.1: a CDS (CDNSKEY) only for a key of the DNSKEY RRset.
        assert_eq!(s.cds & !s.dnskey, 0, "CDS without DNSKEY at {}", self.now);
        self.history.push(s);
    }

    fn add(&mut self, new: NewKey) -> usize {
        let mut k = key(new.role, self.next_tag, self.now);
        self.next_tag += 1;
        schedule_new(&mut k, new.kind, &self.t, self.now);
        self.keys.push(k);
        self.keys.len() - 1
    }

    fn roll(&mut self, kind: RollKind) -> usize {
        let new = start(&self.keys, kind, self.now).unwrap();
        let i = self.add(new);
        self.sign_again();
        i
    }

    /// The zone is signed again at once (after `shardns key ...`, `shardns reload ZONE`).
    pub(super) fn sign_again(&mut self) {
        self.history.pop();
        self.sign();
    }

    pub(super) fn advance(&mut self, secs: u64) {
        for _ in 0..secs {
            self.now += 1;
            self.sign();
            self.check();
        }
    }

    /// A validator at `now` may hold the DS RRset of any second within its TTL (plus the
    /// parent's propagation), the DNSKEY RRset (with its RRSIGs) of any second within its
    /// TTL plus propagation, and any other RRset of any second within the largest TTL plus
    /// propagation. Every combination must validate: a DS it holds matches a key that
    /// signed the DNSKEY RRset it holds, and that RRset has a key that signed the RRset.
    pub(super) fn check(&self) {
        let at = |back: u64| {
            let first = (self.now - T0).saturating_sub(back) as usize;
            &self.history[first..]
        };
        let t = &self.t;
        for ds in at(t.parent_ds_ttl + t.parent_propagation) {
            for keys in at(t.dnskey_ttl + t.propagation) {
                assert_eq!(keys.signs_keys & !keys.dnskey, 0, "{keys:?}");
                assert_ne!(
                    ds.parent_ds & keys.signs_keys,
                    0,
                    "at {}: DS {ds:?} and DNSKEY {keys:?}\n{:#?}",
                    self.now,
                    self.keys
                );
                for data in at(t.max_ttl + t.propagation) {
                    assert_ne!(
                        data.signs_zone & keys.dnskey,
                        0,
                        "at {}: RRSIG {data:?} and DNSKEY {keys:?}\n{:#?}",
                        self.now,
                        self.keys
                    );
                }
            }
        }
    }

    pub(super) fn state(&self, i: usize) -> KeyState {
        key_state(&self.keys[i], self.now)
    }

    pub(super) fn served(&self) -> Served {
        *self.history.last().unwrap()
    }
}

#[test]
fn zsk_pre_publication_step_by_step() {
    let mut sim = Sim::new(&[Role::Ksk, Role::Zsk], TIMINGS);
    sim.advance(30);
    assert_eq!(sim.state(1), KeyState::Active);
    let new = sim.roll(RollKind::Zsk);
    let t0 = sim.now;
    // 1. published, not signing; the old ZSK has its end.
    assert_eq!(sim.state(new), KeyState::Published);
    assert_eq!(sim.keys[1].inactive, Some(t0 + 12));
    assert_eq!(sim.keys[1].delete, Some(t0 + 12 + 22));
    assert_eq!(sim.served().dnskey, 0b111);
    assert_eq!(sim.served().signs_zone, 0b010);
    assert_eq!(next_event(&sim.keys, &sim.t, sim.now), Some(t0 + 12));
    // A second ZSK rollover is refused while this one runs; a KSK one may start.
    assert!(matches!(
        start(&sim.keys, RollKind::Zsk, sim.now),
        Err(Error::InProgress(RollKind::Zsk, 2))
    ));
    assert!(start(&sim.keys, RollKind::Ksk, sim.now).is_ok());
    // 2. after the DNSKEY TTL and propagation: the new key signs, the old one is retired.
    sim.advance(12);
    assert_eq!(
        (sim.state(1), sim.state(new)),
        (KeyState::Retired, KeyState::Active)
    );
    assert_eq!(sim.served().signs_zone, 0b100);
    assert_eq!(sim.served().dnskey, 0b111);
    // 3. after the largest TTL and propagation: the old key is withdrawn.
    sim.advance(21);
    assert_eq!(sim.state(1), KeyState::Retired);
    sim.advance(1);
    assert_eq!(sim.state(1), KeyState::Removed);
    assert_eq!(sim.served().dnskey, 0b101);
    assert_eq!(next_event(&sim.keys, &sim.t, sim.now), None);
    sim.advance(60);
    // Done: another may start.
    assert!(start(&sim.keys, RollKind::Zsk, sim.now).is_ok());
}

#[test]
fn zsk_rolls_on_its_lifetime_again_and_again() {
    let t = RollTimings {
        zsk_lifetime: Some(50),
        ..TIMINGS
    };
    let mut sim = Sim::new(&[Role::Ksk, Role::Zsk], t);
    // The first new key is made 12 s before the lifetime ends, so it signs when it ends.
    assert_eq!(next_event(&sim.keys, &sim.t, sim.now), Some(T0 + 38));
    sim.advance(37);
    assert_eq!(sim.keys.len(), 2);
    sim.advance(1);
    assert_eq!(sim.keys.len(), 3);
    assert_eq!(sim.keys[2].activate, Some(T0 + 50));
    sim.advance(300);
    // Every 50 s a new ZSK; every moment validated (advance checks).
    assert_eq!(sim.keys.len(), 2 + 300 / 50 + 1);
    let active: Vec<_> = (0..sim.keys.len())
        .filter(|&i| sim.state(i) == KeyState::Active)
        .collect();
    assert_eq!(active.len(), 2, "the KSK and one ZSK");
}

#[test]
fn ksk_and_csk_roll_on_their_lifetime_up_to_the_parent_step() {
    for roles in [&[Role::Ksk, Role::Zsk][..], &[Role::Csk][..]] {
        let t = RollTimings {
            ksk_lifetime: Some(100),
            ..TIMINGS
        };
        let mut sim = Sim::new(roles, t);
        let old_role = roles[0];
        // Started when the lifetime ends (not earlier: the parent's part takes as long as
        // it takes).
        assert_eq!(next_event(&sim.keys, &sim.t, sim.now), Some(T0 + 100));
        sim.advance(99);
        assert_eq!(sim.keys.len(), roles.len());
        sim.advance(1);
        let new = roles.len();
        assert_eq!(sim.keys.len(), new + 1, "{roles:?}");
        assert_eq!(sim.keys[new].role, old_role);
        assert_eq!(sim.state(new), KeyState::DsPending);
        // Nothing more until the operator confirms the DS: no second new key.
        assert_eq!(next_event(&sim.keys, &sim.t, sim.now), None);
        sim.advance(50);
        assert_eq!(sim.keys.len(), new + 1);
        let tc = sim.now;
        confirm_ds(&mut sim.keys, None, &sim.t, sim.now).unwrap();
        sim.sign_again();
        sim.advance(60);
        assert_eq!(sim.state(0), KeyState::Removed);
        assert_eq!(sim.state(new), KeyState::Active);
        // The new key's own lifetime counts from its activation.
        let ta = sim.keys[new].activate.unwrap();
        assert_eq!(ta, tc + 18);
        assert_eq!(next_event(&sim.keys, &sim.t, sim.now), Some(ta + 100));
    }
}

#[test]
fn csk_double_ds_step_by_step() {
    let mut sim = Sim::new(&[Role::Csk], TIMINGS);
    sim.advance(40);
    // A CSK zone has no ZSK to roll.
    assert!(matches!(
        start(&sim.keys, RollKind::Zsk, sim.now),
        Err(Error::NoKey(RollKind::Zsk))
    ));
    let new = sim.roll(RollKind::Ksk);
    // 1. Nothing changes in the zone (no CDS for a key outside the DNSKEY RRset); nothing
    //    happens until the operator confirms.
    assert_eq!(sim.state(new), KeyState::DsPending);
    assert_eq!(sim.served().cds, 0b01);
    assert_eq!(sim.served().dnskey, 0b01);
    assert_eq!(sim.keys[0].sync_publish, Some(T0));
    assert_eq!(next_event(&sim.keys, &sim.t, sim.now), None);
    sim.advance(100);
    assert_eq!(sim.state(new), KeyState::DsPending);
    assert!(matches!(
        confirm_ds(&mut sim.keys, Some(999), &sim.t, sim.now),
        Err(Error::NothingToConfirm(Some(999)))
    ));
    // 2. confirmed: the new key is published; the old key's end is set.
    let tc = sim.now;
    assert_eq!(
        confirm_ds(&mut sim.keys, Some(2), &sim.t, sim.now).unwrap(),
        new
    );
    sim.sign_again();
    let ta = tc + 18; // parent DS TTL + parent propagation > DNSKEY TTL + propagation
    assert_eq!(sim.keys[new].activate, Some(ta));
    assert_eq!(sim.keys[0].inactive, Some(ta));
    assert_eq!(sim.keys[0].delete, Some(ta + 22));
    assert_eq!(sim.keys[0].sync_delete, Some(ta + 22));
    assert_eq!(sim.state(new), KeyState::Published);
    assert_eq!((sim.served().dnskey, sim.served().signs_keys), (0b11, 0b01));
    assert!(matches!(
        confirm_ds(&mut sim.keys, None, &sim.t, sim.now),
        Err(Error::NothingToConfirm(None))
    ));
    // Its CDS once its DNSKEY has been published DNSKEY TTL + propagation (12 s).
    assert_eq!(sim.served().cds, 0b01);
    assert_eq!(sim.keys[new].sync_publish, Some(tc + 12));
    sim.advance(11);
    assert_eq!(sim.served().cds, 0b01);
    sim.advance(1);
    assert_eq!(sim.served().cds, 0b11);
    // 3. the new key signs everything, the old one stays published.
    sim.advance(6);
    assert_eq!(
        (sim.state(0), sim.state(new)),
        (KeyState::Retired, KeyState::Active)
    );
    assert_eq!(
        (sim.served().signs_keys, sim.served().signs_zone),
        (0b10, 0b10)
    );
    assert_eq!(sim.served().cds, 0b11);
    // 4. the old key, its CDS and (from now on) its DS are withdrawn.
    sim.advance(22);
    assert_eq!(sim.state(0), KeyState::Removed);
    assert_eq!(
        (
            sim.served().dnskey,
            sim.served().cds,
            sim.served().parent_ds
        ),
        (0b10, 0b10, 0b10)
    );
    sim.advance(100);
    assert!(start(&sim.keys, RollKind::Ksk, sim.now).is_ok());
}

#[test]
fn ksk_double_ds_beside_a_zsk_with_a_zsk_rollover_too() {
    let t = RollTimings {
        parent_ds_ttl: 3, // shorter than the DNSKEY TTL: the DNSKEY wait counts
        ..TIMINGS
    };
    let mut sim = Sim::new(&[Role::Ksk, Role::Zsk], t);
    sim.advance(40);
    let ksk = sim.roll(RollKind::Ksk);
    sim.advance(5);
    let zsk = sim.roll(RollKind::Zsk);
    sim.advance(3);
    confirm_ds(&mut sim.keys, None, &sim.t, sim.now).unwrap();
    let tc = sim.now;
    sim.sign_again();
    assert_eq!(sim.keys[ksk].activate, Some(tc + 12));
    // The old KSK goes after the DNSKEY TTL: it signed nothing else.
    assert_eq!(sim.keys[0].delete, Some(tc + 12 + 12));
    sim.advance(100);
    assert_eq!(sim.state(0), KeyState::Removed);
    assert_eq!(sim.state(1), KeyState::Removed);
    assert_eq!(
        (sim.state(ksk), sim.state(zsk)),
        (KeyState::Active, KeyState::Active)
    );
    assert_eq!(sim.served().signs_keys, 1 << ksk);
    assert_eq!(sim.served().signs_zone, 1 << zsk);
}

/// The new key's file is written first: a crash before the old key's is written leaves the
/// old key without its end, which the next signing sets.
#[test]
fn a_crash_between_the_two_key_files_is_repaired() {
    let mut sim = Sim::new(&[Role::Ksk, Role::Zsk], TIMINGS);
    sim.advance(30);
    let mut keys = sim.keys.clone();
    let new = start(&keys, RollKind::Zsk, sim.now).unwrap();
    let mut k = key(Role::Zsk, 9, sim.now);
    schedule_new(&mut k, RollKind::Zsk, &TIMINGS, sim.now);
    keys.push(k);
    // "Restart" 5 s later with the old key's file as it was.
    let tick = tick(&mut keys, &TIMINGS, sim.now + 5);
    assert_eq!(tick.changed, vec![new.old]);
    assert_eq!(keys[1].inactive, keys[2].activate);
}

#[test]
fn states_and_next_events() {
    let mut k = key(Role::Zsk, 1, 100);
    k.publish = Some(200);
    k.activate = Some(300);
    k.inactive = Some(400);
    k.delete = Some(500);
    let states: Vec<_> = [100, 200, 300, 400, 500]
        .into_iter()
        .map(|t| (key_state(&k, t), key_next_event(&k, t)))
        .collect();
    assert_eq!(
        states,
        [
            (KeyState::Future, Some(200)),
            (KeyState::Published, Some(300)),
            (KeyState::Active, Some(400)),
            (KeyState::Retired, Some(500)),
            (KeyState::Removed, None),
        ]
    );
    let mut c = key(Role::Csk, 2, 100);
    schedule_new(&mut c, RollKind::Ksk, &TIMINGS, 100);
    assert_eq!(key_state(&c, 1000), KeyState::DsPending);
    assert!(!c.has_cds(100) && !c.is_published(100));
}

/// A new KSK in its pre-publication window (waiting for its DS, not in the DNSKEY RRset)
/// gets no CDS or CDNSKEY: only the old key's are in the zone.
#[test]
fn no_cds_before_dnskey() {
    let mut keys = vec![key(Role::Ksk, 1, 0), key(Role::Zsk, 2, 0)];
    let mut new = key(Role::Ksk, 3, 100);
    schedule_new(&mut new, RollKind::Ksk, &TIMINGS, 100);
    keys.push(new);
    tick(&mut keys, &TIMINGS, 100);
    for now in [100, 150, 1000] {
        let d = duty(&keys[2], keys.iter(), now);
        assert!(!d.dnskey, "not published before the confirmation");
        assert!(!d.cds, "a CDS for a key outside the DNSKEY RRset at {now}");
        assert!(
            duty(&keys[0], keys.iter(), now).cds,
            "the old key's CDS stays"
        );
    }
    // Confirmed at 1000: DNSKEY at once, CDS 12 s later (DNSKEY TTL + propagation).
    confirm_ds(&mut keys, Some(3), &TIMINGS, 1000).unwrap();
    tick(&mut keys, &TIMINGS, 1000);
    let d = |now| duty(&keys[2], keys.iter(), now);
    assert!(d(1000).dnskey && !d(1000).cds);
    assert!(d(1011).dnskey && !d(1011).cds);
    assert!(d(1012).dnskey && d(1012).cds);
}
