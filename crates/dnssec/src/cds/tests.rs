use super::*;
use crate::keys::{duty, KeyMeta, Role};
use crate::roll::{confirm_ds, schedule_new, tick, KeyState, RollKind, RollTimings};
use crate::testutil::name;
use crate::{Algorithm, SigningKey};

const TIMINGS: RollTimings = RollTimings {
    dnskey_ttl: 10,
    max_ttl: 20,
    propagation: 2,
    parent_ds_ttl: 15,
    parent_propagation: 3,
    zsk_lifetime: None,
    ksk_lifetime: None,
};

fn meta(role: Role, tag: u16) -> KeyMeta {
    KeyMeta {
        zone: name("example."),
        role,
        algorithm: Algorithm::EcdsaP256Sha256,
        tag,
        created: 0,
        publish: Some(0),
        activate: Some(0),
        inactive: None,
        delete: None,
        sync_publish: None,
        sync_delete: None,
        ds_publish: None,
    }
}

fn params(publish: CdsPublish) -> CdsParams {
    CdsParams {
        publish,
        ..CdsParams::default()
    }
}

/// Tags of the CDS records the apex gets under each mode, with `keys[i]` standing for
/// `metas[i]` at `now`.
fn tags(metas: &[KeyMeta], keys: &[SigningKey], now: u64, mode: CdsPublish) -> Vec<u16> {
    let eligible = metas
        .iter()
        .zip(keys)
        .filter(|(m, _)| duty(m, metas.iter(), now).cds)
        .map(|(_, k)| k.dnskey_rdata());
    let (cdnskey, cds) = apex_records(name("example.").as_ref(), eligible, &params(mode)).unwrap();
    assert_eq!(cdnskey.len(), cds.len());
    cds.iter()
        .map(|ds| u16::from_be_bytes([ds[0], ds[1]]))
        .collect()
}

#[test]
fn names_round_trip() {
    for m in CdsPublish::ALL {
        assert_eq!(CdsPublish::from_name(m.name()), Some(m));
    }
    assert_eq!(
        CdsPublish::default(),
        CdsPublish::Rollover,
        "Knot's default"
    );
    assert_eq!(CdsPublish::from_name("double_ds"), None);
}

/// Every mode at every state of a CSK double-DS rollover: the first key alone, the new key
/// waiting for its DS (not in the DNSKEY RRset), published but not yet "ready", ready,
/// active with the old key retired, and alone again.
#[test]
fn each_mode_at_each_state_of_a_rollover() {
    let keys = [
        SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap(),
        SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap(),
    ];
    let (old, new) = (keys[0].tag(), keys[1].tag());
    let mut metas = vec![meta(Role::Csk, old)];
    let steady = |m: &[KeyMeta], now| {
        (
            tags(m, &keys, now, CdsPublish::None),
            tags(m, &keys, now, CdsPublish::Rollover),
            tags(m, &keys, now, CdsPublish::Always),
            tags(m, &keys, now, CdsPublish::DoubleDs),
        )
    };
    assert_eq!(steady(&metas, 50), (vec![], vec![], vec![old], vec![old]));

    // The new key waits for its DS: not in the DNSKEY RRset, so no CDS for it.
    let mut n = meta(Role::Csk, new);
    schedule_new(&mut n, RollKind::Ksk, &TIMINGS, 100);
    metas.push(n);
    tick(&mut metas, &TIMINGS, 100);
    assert_eq!(crate::roll::key_state(&metas[1], 100), KeyState::DsPending);
    assert_eq!(steady(&metas, 100), (vec![], vec![], vec![old], vec![old]));

    // Confirmed at 200: published, ready at 212, active at 218, the old key gone at 240.
    confirm_ds(&mut metas, Some(new), &TIMINGS, 200).unwrap();
    tick(&mut metas, &TIMINGS, 200);
    assert!(duty(&metas[1], metas.iter(), 200).dnskey);
    assert_eq!(steady(&metas, 211), (vec![], vec![], vec![old], vec![old]));
    let both = vec![old, new];
    assert_eq!(
        steady(&metas, 212),
        (vec![], both.clone(), both.clone(), both.clone())
    );
    assert_eq!(crate::roll::key_state(&metas[0], 230), KeyState::Retired);
    assert_eq!(
        steady(&metas, 230),
        (vec![], both.clone(), both.clone(), both)
    );
    assert_eq!(steady(&metas, 240), (vec![], vec![], vec![new], vec![new]));

    // delete-dnssec: the delete form alone, whatever the keys.
    for now in [50, 100, 212, 240] {
        let eligible = metas
            .iter()
            .zip(&keys)
            .filter(|(m, _)| duty(m, metas.iter(), now).cds)
            .map(|(_, k)| k.dnskey_rdata());
        let p = params(CdsPublish::DeleteDnssec);
        let got = apex_records(name("example.").as_ref(), eligible, &p).unwrap();
        assert_eq!(
            got,
            (vec![CDNSKEY_DELETE.to_vec()], vec![CDS_DELETE.to_vec()])
        );
    }
}

#[test]
fn sha384_digest() {
    let key = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
    let p = CdsParams {
        publish: CdsPublish::Always,
        digest: DigestType::Sha384,
    };
    let (_, cds) = apex_records(name("example.").as_ref(), [key.dnskey_rdata()], &p).unwrap();
    assert_eq!(cds.len(), 1);
    assert_eq!(cds[0][3], 4, "digest type 4");
    assert_eq!(cds[0].len(), 4 + 48);
}
