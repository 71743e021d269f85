//! The shape rollover with a fake clock, both ways, a validator's eye on every second (the
//! rollover tests' `Sim`), and a crash between the new keys' files.

use super::super::tests::{key, Sim, TIMINGS};
use super::*;
use crate::roll::{confirm_ds, key_state, next_event, KeyState};

const ALG: Algorithm = Algorithm::EcdsaP256Sha256;

/// Starts a shape rollover to `single_type` as the signer does: makes the keys it lacks.
fn start(sim: &mut Sim, single_type: bool) -> Vec<usize> {
    assert!(due(&sim.keys, single_type, ALG, sim.now));
    let mut made = Vec::new();
    for role in wanted(&sim.keys, single_type, ALG) {
        let mut k = key(role, 10 + sim.keys.len() as u16, sim.now);
        schedule_new(&mut k, &sim.t, sim.now);
        sim.keys.push(k);
        made.push(sim.keys.len() - 1);
    }
    sim.sign_again();
    assert!(wanted(&sim.keys, single_type, ALG).is_empty());
    assert!(!due(&sim.keys, !single_type, ALG, sim.now), "busy");
    made
}

#[test]
fn csk_to_ksk_and_zsk_step_by_step() {
    let mut sim = Sim::new(&[Role::Csk], TIMINGS);
    sim.advance(40);
    assert!(!due(&sim.keys, true, ALG, sim.now));
    let made = start(&mut sim, false);
    let (zsk, ksk) = (made[0], made[1]);
    assert_eq!(
        (sim.keys[zsk].role, sim.keys[ksk].role),
        (Role::Zsk, Role::Ksk)
    );
    // 1. the ZSK published, the KSK waiting for its DS; the CSK signs everything.
    assert_eq!(sim.state(ksk), KeyState::DsPending);
    assert_eq!(sim.state(zsk), KeyState::Published);
    assert_eq!(
        (
            sim.served().dnskey,
            sim.served().signs_zone,
            sim.served().cds
        ),
        (0b011, 0b001, 0b001)
    );
    // 2. the ZSK signs beside the CSK once its DNSKEY reached every cache (12 s).
    sim.advance(12);
    assert_eq!(sim.served().signs_zone, 0b011);
    assert_eq!(sim.served().signs_keys, 0b001);
    assert_eq!(next_event(&sim.keys, &sim.t, sim.now), None);
    sim.advance(30);
    // 3. the DS confirmed: the KSK published, the CSK's end set.
    let tc = sim.now;
    confirm_ds(&mut sim.keys, None, &sim.t, sim.now).unwrap();
    sim.sign_again();
    let ta = tc + 18;
    assert_eq!(sim.keys[ksk].activate, Some(ta));
    assert_eq!(sim.keys[0].inactive, Some(ta));
    assert_eq!(sim.keys[0].delete, Some(ta + 22));
    assert_eq!(sim.served().dnskey, 0b111);
    sim.advance(12);
    assert_eq!(sim.served().cds, 0b101);
    // 4. the KSK signs the keys, the ZSK the zone alone, the CSK stays published.
    sim.advance(6);
    assert_eq!(
        (sim.served().signs_keys, sim.served().signs_zone),
        (0b100, 0b010)
    );
    assert_eq!(sim.state(0), KeyState::Retired);
    // 5. the CSK, its CDS and its DS go.
    sim.advance(22);
    assert_eq!(sim.state(0), KeyState::Removed);
    assert_eq!(
        (
            sim.served().dnskey,
            sim.served().cds,
            sim.served().parent_ds
        ),
        (0b110, 0b100, 0b100)
    );
    sim.advance(60);
    assert!(!due(&sim.keys, false, ALG, sim.now));
    assert!(due(&sim.keys, true, ALG, sim.now));
}

#[test]
fn ksk_and_zsk_to_csk_step_by_step() {
    let mut sim = Sim::new(&[Role::Ksk, Role::Zsk], TIMINGS);
    sim.advance(40);
    assert!(!due(&sim.keys, false, ALG, sim.now));
    let made = start(&mut sim, true);
    assert_eq!(made.len(), 1);
    let csk = made[0];
    assert_eq!(sim.keys[csk].role, Role::Csk);
    assert_eq!(sim.state(csk), KeyState::DsPending);
    // The old KSK's CDS stays while it is published.
    assert_eq!(sim.served().cds, 0b01);
    sim.advance(25);
    let tc = sim.now;
    let tag = sim.keys[csk].tag;
    confirm_ds(&mut sim.keys, Some(tag), &sim.t, sim.now).unwrap();
    sim.sign_again();
    let ta = tc + 18;
    assert_eq!(sim.keys[0].inactive, Some(ta));
    assert_eq!(sim.keys[1].inactive, Some(ta));
    assert_eq!(sim.keys[0].delete, Some(ta + 12)); // a KSK: the DNSKEY TTL
    assert_eq!(sim.keys[1].delete, Some(ta + 22)); // a ZSK: the max zone TTL
    sim.advance(18);
    assert_eq!(
        (sim.served().signs_keys, sim.served().signs_zone),
        (0b100, 0b100)
    );
    sim.advance(12);
    assert_eq!(key_state(&sim.keys[0], sim.now), KeyState::Removed);
    assert_eq!(sim.served().parent_ds, 0b100);
    sim.advance(10);
    assert_eq!(sim.served().dnskey, 0b100);
    sim.advance(40);
    assert!(!due(&sim.keys, true, ALG, sim.now));
    // And back again, as the policy says.
    let made = start(&mut sim, false);
    assert_eq!(made.len(), 2);
    sim.advance(30);
    confirm_ds(&mut sim.keys, None, &sim.t, sim.now).unwrap();
    sim.sign_again();
    sim.advance(60);
    assert_eq!(sim.state(csk), KeyState::Removed);
    assert!(!due(&sim.keys, false, ALG, sim.now));
}

#[test]
fn a_crash_after_the_zsk_file_makes_only_the_ksk() {
    let mut sim = Sim::new(&[Role::Csk], TIMINGS);
    sim.advance(5);
    let wants = wanted(&sim.keys, false, ALG);
    assert_eq!(wants, [Role::Zsk, Role::Ksk]);
    let mut zsk = key(Role::Zsk, 7, sim.now);
    schedule_new(&mut zsk, &sim.t, sim.now);
    sim.keys.push(zsk);
    sim.sign_again();
    // The ZSK's pre-publication under way: nothing starts until it signs.
    assert!(!due(&sim.keys, false, ALG, sim.now));
    sim.advance(12);
    assert_eq!(wanted(&sim.keys, false, ALG), [Role::Ksk]);
    assert!(due(&sim.keys, false, ALG, sim.now));
    assert_eq!(start(&mut sim, false).len(), 1);
    sim.advance(5);
    confirm_ds(&mut sim.keys, None, &sim.t, sim.now).unwrap();
    sim.sign_again();
    sim.advance(60);
    assert_eq!(sim.state(0), KeyState::Removed);
}

#[test]
fn another_algorithm_is_not_a_shape() {
    let mut sim = Sim::new(&[Role::Csk], TIMINGS);
    sim.advance(1);
    assert!(wanted(&sim.keys, false, Algorithm::Ed25519).is_empty());
    assert!(pairs(Role::Ksk, Role::Csk) && !pairs(Role::Ksk, Role::Zsk));
    assert!(!pairs(Role::Zsk, Role::Csk) && !pairs(Role::Csk, Role::Csk));
}

#[test]
fn a_confirmation_never_served_moves_the_old_keys_end_too() {
    let mut sim = Sim::new(&[Role::Csk], TIMINGS);
    sim.advance(1);
    let ksk = start(&mut sim, false)[1];
    let tc = sim.now + 20;
    confirm_ds(&mut sim.keys, None, &sim.t, tc).unwrap();
    super::super::tick(&mut sim.keys, &sim.t, tc);
    assert_eq!(sim.keys[0].inactive, Some(tc + 18));
    // The server down from just before the confirmation until 30 s after it: the KSK
    // signs a DNSKEY TTL + propagation after it is first served, the CSK ends with it.
    let now = tc + 30;
    let moved = crate::roll::hold(&mut sim.keys, &sim.t, tc - 1, now);
    assert!(moved.contains(&0) && moved.contains(&ksk), "{moved:?}");
    assert_eq!(sim.keys[ksk].activate, Some(now + 12));
    assert_eq!(sim.keys[0].inactive, Some(now + 12));
    assert_eq!(sim.keys[0].delete, Some(now + 12 + 22));
    assert_eq!(sim.keys[0].sync_delete, Some(now + 12 + 22));
}
