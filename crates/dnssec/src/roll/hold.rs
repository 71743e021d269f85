//! Steps never served (issue 29 item 7). A rollover's times are absolute, so a signer that
//! did not sign for a while (the server down, a key file lost, the zone failing to load, the
//! clock jumping forward) can find two steps due at once whose second must wait until the
//! first has been served for a TTL and the propagation: the new ZSK signing and the old
//! one withdrawn in one go, and caches holding the old DNSKEY RRset get signatures of a
//! key they do not have (RFC 7583 §3.2). [`hold`] moves such a second step to `now` plus
//! its wait when the first was not yet served at the last signing (`served`), so every
//! state of a roll is served for its wait however late it comes. In time with the
//! signer's timer, a step is pushed by the second or so the timer was late.

use super::RollTimings;
use crate::keys::{KeyMeta, Role};

/// Moves on, in `keys`, each step whose preceding step came after `served` (the last
/// signing that was served) and at or before `now` (it is served from now on), to no
/// earlier than `now` plus the wait between the two:
///
/// 1. a successor's publication (ZSK) or confirmed DS (KSK, CSK) -> its signing and CDS:
///    a DNSKEY TTL and the propagation (the old key's end moved with it);
/// 2. a successor's first signature -> the old key's withdrawal: the old key's retire wait;
/// 3. an algorithm rollover's new signatures -> their DNSKEYs (the max zone TTL and the
///    propagation), their DNSKEYs -> their CDS, and the old DNSKEYs' withdrawal -> the old
///    signatures' end (a DNSKEY TTL and the propagation).
///
/// Returns the indexes of the keys changed, to be saved.
pub fn hold(keys: &mut [KeyMeta], t: &RollTimings, served: u64, now: u64) -> Vec<usize> {
    let fresh = |e: Option<u64>| e.is_some_and(|e| e > served && e <= now);
    let mut changed = Vec::new();
    let later = |at: &mut Option<u64>, floor: u64| match at {
        Some(v) if *v < floor => {
            *v = floor;
            true
        }
        _ => false,
    };
    for n in 0..keys.len() {
        let k = keys[n].clone();
        let new_alg = matches!((k.activate, k.publish), (Some(a), Some(p)) if a < p);
        let mut moved = false;
        if new_alg {
            // 3. Signing before publication: an algorithm rollover's new key.
            if fresh(k.activate) {
                let wait = now + t.retire_wait(Role::Zsk).max(1);
                moved |= later(&mut keys[n].publish, wait);
            }
            if fresh(keys[n].publish) || moved {
                let p = keys[n].publish.unwrap_or(now).max(now);
                moved |= later(&mut keys[n].sync_publish, p + t.publish_wait());
            }
        } else if let (Some(p), Some(a)) = (k.publish, k.activate) {
            // 1. Published (or its DS confirmed) before it signs: a successor.
            if p < a && fresh(Some(p)) {
                let floor = now + t.publish_wait();
                moved |= later(&mut keys[n].activate, floor);
                if k.role != Role::Zsk && k.sync_publish.is_some_and(|s| s > p) {
                    moved |= later(&mut keys[n].sync_publish, floor);
                }
            }
        }
        if moved {
            changed.push(n);
        }
        let (a, now_a) = (k.activate, keys[n].activate);
        // The old key of a successor ends where its successor starts: moved with it (1),
        // or, its successor's first signatures served only now, its withdrawal (2).
        for (o, old) in keys.iter_mut().enumerate() {
            let paired = o != n
                && !new_alg
                && (old.role == k.role || super::shape::pairs(k.role, old.role))
                && old.algorithm == k.algorithm
                && old.inactive.is_some()
                && old.inactive == a;
            if !paired {
                continue;
            }
            let before = old.clone();
            let start = if now_a != a { now_a } else { None };
            if let Some(s) = start {
                let end = s + t.retire_wait(old.role);
                old.inactive = Some(s);
                old.delete = Some(end);
                if old.sync_delete.is_some() {
                    old.sync_delete = Some(end);
                }
            } else if fresh(a) {
                let end = now + t.retire_wait(old.role);
                later(&mut old.delete, end);
                later(&mut old.sync_delete, end);
            }
            if *old != before {
                changed.push(o);
            }
        }
        // 3. An algorithm rollover's old key: its signatures outlast its DNSKEY.
        let old_alg = k.delete.is_some_and(|d| k.inactive.is_some_and(|i| d < i));
        if old_alg && fresh(k.delete) && later(&mut keys[n].inactive, now + t.publish_wait()) {
            changed.push(n);
        }
    }
    changed.sort_unstable();
    changed.dedup();
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alg::Algorithm;

    fn t() -> RollTimings {
        RollTimings {
            dnskey_ttl: 10,
            max_ttl: 20,
            propagation: 5,
            parent_ds_ttl: 30,
            parent_propagation: 5,
            zsk_lifetime: None,
            ksk_lifetime: None,
        }
    }

    fn key(role: Role, publish: u64, activate: u64) -> KeyMeta {
        KeyMeta {
            zone: crate::testutil::name("example."),
            role,
            algorithm: Algorithm::EcdsaP256Sha256,
            tag: publish as u16,
            created: publish.min(activate),
            publish: Some(publish),
            activate: Some(activate),
            inactive: None,
            delete: None,
            sync_publish: None,
            sync_delete: None,
            ds_publish: None,
        }
    }

    /// A ZSK roll at 1000: the new key signs at 1015, the old one goes at 1040.
    fn zsk_roll() -> Vec<KeyMeta> {
        let mut keys = vec![key(Role::Zsk, 0, 0), key(Role::Zsk, 1000, 1015)];
        super::super::tick(&mut keys, &t(), 1000);
        assert_eq!((keys[0].inactive, keys[0].delete), (Some(1015), Some(1040)));
        keys
    }

    #[test]
    fn steps_served_in_time_stay_where_they_are() {
        let mut keys = zsk_roll();
        assert!(hold(&mut keys, &t(), 1000, 1014).is_empty());
        // The timer on time at the new key's Activate: nothing moves.
        assert!(hold(&mut keys, &t(), 1000, 1015).is_empty());
        assert!(hold(&mut keys, &t(), 1015, 1040).is_empty());
    }

    #[test]
    fn a_signer_down_past_two_steps_serves_each_for_its_wait() {
        // Signed last at 1001 (the new key published), back at 5000: the new key signs
        // now, the old one is withdrawn only after the retire wait.
        let mut keys = zsk_roll();
        assert_eq!(hold(&mut keys, &t(), 1001, 5000), vec![0]);
        assert_eq!(keys[0].delete, Some(5025));
        assert_eq!(keys[0].inactive, Some(1015));
        assert_eq!(keys[1].activate, Some(1015));
        // Not served yet at all (the publication lost): published now, signing after the
        // publication wait, the old key's end moved with it.
        let mut keys = zsk_roll();
        assert_eq!(hold(&mut keys, &t(), 999, 5000), vec![0, 1]);
        assert_eq!(keys[1].activate, Some(5015));
        assert_eq!((keys[0].inactive, keys[0].delete), (Some(5015), Some(5040)));
        // Idempotent, and the rollover's tick leaves it so.
        assert!(hold(&mut keys, &t(), 5000, 5000).is_empty());
        let before = keys.clone();
        super::super::tick(&mut keys, &t(), 5001);
        assert_eq!(keys, before);
    }

    #[test]
    fn an_algorithm_roll_keeps_its_waits() {
        // New key signing at 1000, published at 1025, CDS at 1040; its DS confirmed at
        // 2000, the old key's DNSKEY goes at 2035 and its signatures at 2050.
        let mut new = key(Role::Csk, 1025, 1000);
        new.algorithm = Algorithm::Ed25519;
        new.sync_publish = Some(1040);
        let mut keys = vec![new.clone()];
        assert_eq!(hold(&mut keys, &t(), 999, 3000), vec![0]);
        assert_eq!(keys[0].publish, Some(3025));
        assert_eq!(keys[0].sync_publish, Some(3040));
        let mut old = key(Role::Csk, 0, 0);
        old.delete = Some(2035);
        old.inactive = Some(2050);
        let mut keys = vec![old];
        assert_eq!(hold(&mut keys, &t(), 2000, 3000), vec![0]);
        assert_eq!(keys[0].inactive, Some(3015));
    }
}
