//! The zone's policy at signing: the key shape and sizes made, the DNSKEY TTL, the spread
//! of signature expirations, a KSK rollover started by its lifetime, and an algorithm
//! rollover started by a changed `algorithm`, a key shape rollover by a changed
//! `single_type_signing`.

use super::*;
use crate::signing::{sign_scanned, StateFile};
use shardns_dnssec::key::rsa_split;
use shardns_dnssec::roll::{key_state, KeyState};
use shardns_dnssec::sign::RrsigFields;
use shardns_wire::{RType, Record};
use shardns_zone::scan::Scanned;
use shardns_zone::ScanOptions;

const NOW: u64 = 1_750_000_000;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "shardns-policy-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn apex() -> Name {
    "z.test.".parse().unwrap()
}

fn scan() -> Scanned {
    let mut text = String::from(
        "$TTL 300\n@ SOA ns.z.test. admin.z.test. 1 3600 600 86400 300\n@ NS ns\n\
         ns A 192.0.2.1\nwww A 192.0.2.2\n",
    );
    for i in 0..100 {
        text.push_str(&format!("h{i} A 192.0.2.{}\n", i + 1));
    }
    let opts = ScanOptions::new(apex());
    shardns_zone::scan::scan_text(text.as_bytes(), Path::new("z.zone"), &opts).unwrap()
}

fn spec(dir: &Path) -> SignSpec {
    SignSpec {
        key_dir: dir.to_path_buf(),
        algorithm: Algorithm::EcdsaP256Sha256,
        denial: Denial::Nsec,
        policy: Policy::default(),
        roll: RollSpec::default(),
        cds: CdsParams {
            publish: shardns_dnssec::CdsPublish::Always,
            ..CdsParams::default()
        },
        keys: KeyPolicy::default(),
        dnskey_ttl: None,
        keystore: None,
        offline_ksk: false,
        dnskey_management: Default::default(),
    }
}

/// (covered type, key tag, expiration) of every RRSIG.
fn rrsigs(records: &[Record]) -> Vec<(RType, u16, u32)> {
    records
        .iter()
        .filter(|r| r.rtype == RType::RRSIG)
        .map(|r| {
            let (f, _) = RrsigFields::parse(&r.rdata).unwrap();
            (f.type_covered, f.key_tag, f.expiration)
        })
        .collect()
}

#[test]
fn ksk_and_zsk_made_here_split_the_work_and_dnskey_ttl_applies() {
    let dir = Dir::new("split");
    let mut s = spec(&dir.0);
    s.keys.single_type = false;
    s.dnskey_ttl = Some(3600);
    let signed = sign_scanned(&apex(), scan(), &s, NOW, 1).unwrap();
    let keys = KeyStore::open(&dir.0).unwrap().load(&apex()).unwrap();
    assert_eq!(keys.len(), 2);
    let tag = |role| keys.iter().find(|k| k.meta.role == role).unwrap().meta.tag;
    let (ksk, zsk) = (tag(Role::Ksk), tag(Role::Zsk));
    let records = signed.records.to_records();
    for (t, ttl) in [(RType::DNSKEY, 3600), (RType::CDS, 3600), (RType::SOA, 300)] {
        let set: Vec<_> = records.iter().filter(|r| r.rtype == t).collect();
        assert!(!set.is_empty() && set.iter().all(|r| r.ttl == ttl), "{t}");
    }
    let sigs = rrsigs(&records);
    for (covered, tag, _) in &sigs {
        let keyset = matches!(*covered, RType::DNSKEY | RType::CDS | RType::CDNSKEY);
        assert_eq!(*tag, if keyset { ksk } else { zsk }, "RRSIG {covered}");
    }
    assert_eq!(
        sigs.iter().filter(|s| s.1 == ksk).count(),
        3,
        "DNSKEY, CDS, CDNSKEY"
    );
    // The rollovers wait on the DNSKEY TTL configured, not the SOA's.
    let t = StateFile::new(&dir.0, &apex()).timings().unwrap().unwrap();
    assert_eq!(t.dnskey_ttl, 3600);
}

#[test]
fn rsa_keys_are_made_with_their_sizes() {
    let dir = Dir::new("rsa");
    let mut s = spec(&dir.0);
    s.algorithm = Algorithm::RsaSha256;
    s.keys = KeyPolicy {
        single_type: false,
        ksk_bits: Some(3072),
        zsk_bits: None,
    };
    sign_scanned(&apex(), scan(), &s, NOW, 1).unwrap();
    let keys = KeyStore::open(&dir.0).unwrap().load(&apex()).unwrap();
    let mut bits: Vec<(Role, usize)> = keys
        .iter()
        .map(|k| {
            assert_eq!(k.meta.algorithm, Algorithm::RsaSha256);
            (
                k.meta.role,
                rsa_split(k.key.public_key()).unwrap().1.len() * 8,
            )
        })
        .collect();
    bits.sort_by_key(|b| b.1);
    assert_eq!(bits, [(Role::Zsk, 2048), (Role::Ksk, 3072)]);
}

#[test]
fn jitter_spreads_expirations_and_the_refresh_follows_the_earliest() {
    let dir = Dir::new("jitter");
    let mut s = spec(&dir.0);
    s.policy.jitter = 2 * 86_400;
    let signed = sign_scanned(&apex(), scan(), &s, NOW, 1).unwrap();
    let exp: Vec<u32> = rrsigs(&signed.records.to_records())
        .iter()
        .map(|s| s.2)
        .collect();
    let end = (NOW + 14 * 86_400) as u32;
    assert!(exp.iter().all(|&e| e <= end && e >= end - 2 * 86_400));
    let distinct: std::collections::BTreeSet<u32> = exp.iter().copied().collect();
    assert!(distinct.len() > exp.len() / 2, "{distinct:?}");
    let earliest = u64::from(*distinct.first().unwrap());
    assert_eq!(signed.refresh_at, earliest - 7 * 86_400);
    assert!(signed.refresh_at < NOW + 7 * 86_400);
}

#[test]
fn a_csk_lifetime_starts_a_double_ds_rollover_once() {
    let dir = Dir::new("ksk-life");
    let mut s = spec(&dir.0);
    s.roll.ksk_lifetime = Some(1000);
    let signed = sign_scanned(&apex(), scan(), &s, NOW, 1).unwrap();
    assert_eq!(signed.refresh_at, NOW + 1000, "due when the lifetime ends");
    let store = KeyStore::open(&dir.0).unwrap();
    assert_eq!(store.load(&apex()).unwrap().len(), 1);
    for now in [NOW + 1000, NOW + 1001] {
        let signed = sign_scanned(&apex(), scan(), &s, now, 1).unwrap();
        let keys = store.load(&apex()).unwrap();
        assert_eq!(keys.len(), 2, "one successor, made once");
        assert_eq!(keys[1].meta.role, Role::Csk);
        assert_eq!(key_state(&keys[1].meta, now), KeyState::DsPending);
        // Not in the zone until the operator confirms its DS.
        let dnskeys = signed
            .records
            .to_records()
            .iter()
            .filter(|r| r.rtype == RType::DNSKEY)
            .count();
        assert_eq!(dnskeys, 1);
    }
    let t = StateFile::new(&dir.0, &apex()).timings().unwrap().unwrap();
    assert_eq!(t.ksk_lifetime, Some(1000));
}

/// The algorithms of the zone's DNSKEYs, and of the RRSIGs of each type covered.
fn algorithms(records: &[Record]) -> (Vec<u8>, Vec<(RType, Vec<u8>)>) {
    let mut keys: Vec<u8> = records
        .iter()
        .filter(|r| r.rtype == RType::DNSKEY)
        .map(|r| r.rdata[3])
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut sigs: Vec<(RType, Vec<u8>)> = Vec::new();
    for r in records.iter().filter(|r| r.rtype == RType::RRSIG) {
        let (f, _) = RrsigFields::parse(&r.rdata).unwrap();
        match sigs.iter_mut().find(|(t, _)| *t == f.type_covered) {
            Some((_, a)) if !a.contains(&f.algorithm) => a.push(f.algorithm),
            Some(_) => {}
            None => sigs.push((f.type_covered, vec![f.algorithm])),
        }
    }
    for (_, a) in &mut sigs {
        a.sort_unstable();
    }
    (keys, sigs)
}

#[test]
fn a_changed_algorithm_rolls_signatures_first_then_keys_then_ds() {
    let dir = Dir::new("alg");
    let mut s = spec(&dir.0);
    s.keys.single_type = false;
    sign_scanned(&apex(), scan(), &s, NOW, 1).unwrap();
    let store = KeyStore::open(&dir.0).unwrap();
    s.algorithm = Algorithm::Ed25519;
    let t0 = NOW + 10;
    let (old, new) = (13u8, 15u8);
    let all_signed_by = |records: &[Record], want: &[u8]| {
        let (_, sigs) = algorithms(records);
        assert!(sigs.len() > 3, "{sigs:?}");
        for (t, a) in sigs {
            assert_eq!(a, want, "RRSIG {t}");
        }
    };
    // 1: both algorithms sign, the new keys are not published; made once.
    for now in [t0, t0 + 1] {
        let signed = sign_scanned(&apex(), scan(), &s, now, 1).unwrap();
        let records = signed.records.to_records();
        assert_eq!(algorithms(&records).0, [old]);
        all_signed_by(&records, &[old, new]);
        let keys = store.load(&apex()).unwrap();
        assert_eq!(keys.len(), 4);
        for k in keys
            .iter()
            .filter(|k| k.meta.algorithm == Algorithm::Ed25519)
        {
            assert_eq!(key_state(&k.meta, now), KeyState::Unpublished);
        }
        // Signed again when the new keys are to be published: max TTL + propagation.
        assert_eq!(signed.refresh_at, t0 + 300 + 3600);
    }
    // 2: both algorithms' keys published; the DS awaited a DNSKEY TTL + propagation later.
    let t1 = t0 + 3900;
    let signed = sign_scanned(&apex(), scan(), &s, t1, 1).unwrap();
    assert_eq!(algorithms(&signed.records.to_records()).0, [old, new]);
    assert_eq!(signed.refresh_at, t1 + 3900);
    let t2 = t1 + 3900;
    assert!(crate::signing::confirm_submitted(&apex(), &dir.0, None, t2 - 1).is_err());
    let signed = sign_scanned(&apex(), scan(), &s, t2, 1).unwrap();
    let keys = store.load(&apex()).unwrap();
    let ksk = keys
        .iter()
        .find(|k| k.meta.role == Role::Ksk && k.meta.algorithm == Algorithm::Ed25519)
        .unwrap();
    assert_eq!(key_state(&ksk.meta, t2), KeyState::DsPending);
    let cds: Vec<u8> = signed
        .records
        .to_records()
        .iter()
        .filter(|r| r.rtype == RType::CDS)
        .map(|r| r.rdata[2])
        .collect();
    assert_eq!(cds.len(), 2, "the old key's CDS and the new one's");
    // 3: the operator confirms the DS; the old keys go after the parent's DS TTL.
    let c = crate::signing::confirm_submitted(&apex(), &dir.0, Some(ksk.meta.tag), t2 + 5).unwrap();
    let t3 = t2 + 5 + 86_400 + 3600;
    assert_eq!(c.old.map(|o| o.delete), Some(Some(t3)));
    // 4: the old DNSKEYs withdrawn, their signatures kept a DNSKEY TTL + propagation.
    let records = sign_scanned(&apex(), scan(), &s, t3, 1)
        .unwrap()
        .records
        .to_records();
    assert_eq!(algorithms(&records).0, [new]);
    all_signed_by(&records, &[old, new]);
    // 5: the old signatures go; nothing starts again.
    let records = sign_scanned(&apex(), scan(), &s, t3 + 3900, 1)
        .unwrap()
        .records
        .to_records();
    assert_eq!(algorithms(&records).0, [new]);
    all_signed_by(&records, &[new]);
    assert_eq!(store.load(&apex()).unwrap().len(), 4);
}

/// The key tags of the zone's DNSKEYs, and of the RRSIGs over the DNSKEY RRset and over
/// the A RRsets, each sorted.
fn tags(records: &[Record]) -> (Vec<u16>, Vec<u16>, Vec<u16>) {
    let mut keys: Vec<u16> = records
        .iter()
        .filter(|r| r.rtype == RType::DNSKEY)
        .map(|r| shardns_dnssec::key_tag(&r.rdata))
        .collect();
    let sigs = rrsigs(records);
    let by = |covered| {
        let mut v: Vec<u16> = sigs
            .iter()
            .filter(|s| s.0 == covered)
            .map(|s| s.1)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    keys.sort_unstable();
    (keys, by(RType::DNSKEY), by(RType::A))
}

#[test]
fn a_changed_single_type_signing_rolls_the_key_shape_both_ways() {
    let dir = Dir::new("shape");
    let mut s = spec(&dir.0);
    sign_scanned(&apex(), scan(), &s, NOW, 1).unwrap();
    let store = KeyStore::open(&dir.0).unwrap();
    let csk = store.load(&apex()).unwrap()[0].meta.tag;
    let sign = |s: &SignSpec, now| {
        tags(
            &sign_scanned(&apex(), scan(), s, now, 1)
                .unwrap()
                .records
                .to_records(),
        )
    };
    let tag = |role| {
        let keys = store.load(&apex()).unwrap();
        let k = keys.iter().rev().find(|k| k.meta.role == role).unwrap();
        k.meta.tag
    };
    // CSK -> KSK + ZSK: the ZSK published, the KSK waiting for its DS; made once.
    s.keys.single_type = false;
    let t0 = NOW + 10;
    for now in [t0, t0 + 1] {
        let (dnskeys, keysigs, datasigs) = sign(&s, now);
        assert_eq!(store.load(&apex()).unwrap().len(), 3);
        let mut want = vec![csk, tag(Role::Zsk)];
        want.sort_unstable();
        assert_eq!((dnskeys, keysigs, datasigs), (want, vec![csk], vec![csk]));
    }
    let (ksk, zsk) = (tag(Role::Ksk), tag(Role::Zsk));
    // The ZSK signs beside the CSK a DNSKEY TTL + propagation later.
    let mut both = vec![csk, zsk];
    both.sort_unstable();
    assert_eq!(sign(&s, t0 + 3900).2, both);
    // The DS confirmed: the KSK published, it signs the keys a parent DS TTL (and its
    // propagation) later, the CSK stops; it goes a max TTL + propagation after.
    let tc = t0 + 4000;
    crate::signing::confirm_submitted(&apex(), &dir.0, Some(ksk), tc).unwrap();
    assert_eq!(sign(&s, tc).0.len(), 3);
    let ta = tc + 86_400 + 3600;
    let (dnskeys, keysigs, datasigs) = sign(&s, ta);
    assert_eq!(
        (dnskeys.len(), keysigs, datasigs),
        (3, vec![ksk], vec![zsk])
    );
    let mut split = vec![ksk, zsk];
    split.sort_unstable();
    assert_eq!(sign(&s, ta + 3900).0, split);
    // And back: a new CSK replaces both.
    s.keys.single_type = true;
    let t1 = ta + 5000;
    sign(&s, t1);
    let csk2 = tag(Role::Csk);
    assert_ne!(csk2, csk);
    assert_eq!(store.load(&apex()).unwrap().len(), 4);
    crate::signing::confirm_submitted(&apex(), &dir.0, None, t1 + 1).unwrap();
    assert_eq!(
        sign(&s, t1 + 1).0.len(),
        3,
        "the CSK published beside the KSK and ZSK"
    );
    let ta = t1 + 1 + 86_400 + 3600;
    let (_, keysigs, datasigs) = sign(&s, ta);
    assert_eq!((keysigs, datasigs), (vec![csk2], vec![csk2]));
    assert_eq!(sign(&s, ta + 3900).0, [csk2]);
    assert_eq!(
        store.load(&apex()).unwrap().len(),
        4,
        "nothing starts again"
    );
}

#[test]
fn keys_of_the_other_shape_put_in_by_hand_roll_only_on_a_change() {
    let dir = Dir::new("shape-hand");
    let store = KeyStore::open(&dir.0).unwrap();
    for role in [Role::Ksk, Role::Zsk] {
        store
            .generate(&apex(), Algorithm::EcdsaP256Sha256, role, NOW)
            .unwrap();
    }
    let mut s = spec(&dir.0);
    // single_type_signing = true (the default), never changed: the KSK and ZSK stay.
    for now in [NOW, NOW + 10] {
        sign_scanned(&apex(), scan(), &s, now, 1).unwrap();
        assert_eq!(store.load(&apex()).unwrap().len(), 2);
    }
    // Set to their shape, then changed: that rolls.
    s.keys.single_type = false;
    sign_scanned(&apex(), scan(), &s, NOW + 20, 1).unwrap();
    assert_eq!(store.load(&apex()).unwrap().len(), 2);
    s.keys.single_type = true;
    sign_scanned(&apex(), scan(), &s, NOW + 30, 1).unwrap();
    let keys = store.load(&apex()).unwrap();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[2].meta.role, Role::Csk);
    assert_eq!(key_state(&keys[2].meta, NOW + 30), KeyState::DsPending);
}

/// The algorithm rollover with the parent's DS check: the new DS confirmed by the check,
/// the CDS names the new key alone at the DS change (in `rollover` mode too) while the old
/// DNSKEYs stay, as long as the old DS is at the parent; once the check sees it gone, they
/// go after the parent's DS TTL + propagation, the old signatures a DNSKEY TTL later; the
/// key files hold each step.
#[test]
fn an_algorithm_roll_checked_at_the_parent_keeps_the_old_keys_until_the_old_ds_goes() {
    let dir = Dir::new("alg-check");
    let mut s = spec(&dir.0);
    s.keys.single_type = false;
    sign_scanned(&apex(), scan(), &s, NOW, 1).unwrap();
    s.algorithm = Algorithm::Ed25519;
    // `rollover`: no CDS for one key, but the new key's alone at the DS change.
    s.cds.publish = shardns_dnssec::CdsPublish::Rollover;
    let (t0, old, new) = (NOW + 10, 13u8, 15u8);
    let sign = |now: u64| {
        sign_scanned(&apex(), scan(), &s, now, 1)
            .unwrap()
            .records
            .to_records()
    };
    let cds_algs = |records: &[Record]| -> Vec<u8> {
        records
            .iter()
            .filter(|r| r.rtype == RType::CDS)
            .map(|r| r.rdata[2])
            .collect()
    };
    sign(t0);
    sign(t0 + 3900);
    let t2 = t0 + 7800;
    assert_eq!(cds_algs(&sign(t2)).len(), 2);
    let ksk = KeyStore::open(&dir.0)
        .unwrap()
        .load(&apex())
        .unwrap()
        .into_iter()
        .find(|k| k.meta.role == Role::Ksk && k.meta.algorithm == Algorithm::Ed25519)
        .unwrap();
    let c = t2 + 5;
    let confirmed = crate::signing::confirm_checked(&apex(), &dir.0, ksk.meta.tag, c).unwrap();
    assert_eq!(
        confirmed.old.and_then(|o| o.delete),
        None,
        "no withdrawal yet"
    );
    // The DS change: the new key's CDS alone, both algorithms' DNSKEYs.
    let ts = c + 86_400 + 3600;
    assert_eq!(cds_algs(&sign(ts - 1)).len(), 2);
    for now in [ts, ts + 10 * 86_400] {
        let records = sign(now);
        assert_eq!(cds_algs(&records), [new], "at {now}");
        assert_eq!(
            algorithms(&records).0,
            [old, new],
            "the old DS is still there"
        );
    }
    // The old DS gone at `r`: the check says so (`confirm_old_ds_gone`), or the operator
    // (`shardns key submitted ZONE`, no key waiting for its DS), the same way.
    let r = ts + 10 * 86_400 + 7;
    let copy = Dir::new("alg-check-copy");
    for sub in ["", "state"] {
        std::fs::create_dir_all(copy.0.join(sub)).unwrap();
        for e in std::fs::read_dir(dir.0.join(sub)).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), copy.0.join(sub).join(e.file_name())).unwrap();
            }
        }
    }
    let by_hand = crate::signing::confirm_submitted(&apex(), &copy.0, None, r).unwrap();
    let gone = crate::signing::confirm_old_ds_gone(&apex(), &dir.0, r).unwrap();
    assert_eq!(gone.len(), 2, "the old KSK and ZSK");
    assert_eq!(by_hand.old.and_then(|o| o.delete), gone[0].delete);
    let withdrawn = r + 86_400 + 3600;
    assert_eq!(algorithms(&sign(withdrawn - 1)).0, [old, new]);
    let records = sign(withdrawn);
    assert_eq!(algorithms(&records).0, [new]);
    assert!(algorithms(&records).1.iter().all(|(_, a)| a == &[old, new]));
    let records = sign(withdrawn + 3900);
    assert!(algorithms(&records).1.iter().all(|(_, a)| a == &[new]));
    assert!(crate::signing::confirm_old_ds_gone(&apex(), &dir.0, withdrawn).is_err());
}
