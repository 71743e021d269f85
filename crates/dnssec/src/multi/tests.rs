use super::*;
use crate::cds::{apex_records, CdsParams, CdsPublish, CDNSKEY_DELETE};
use crate::chain::{sign_zone, SignParams, ZoneKey};
use crate::sign::{verify_rrsig, RrsigFields};
use crate::testutil::{name, rec};
use crate::{key_tag, Algorithm, DigestType, Policy, SigningKey};
use shardns_wire::{RType, Record};

fn params(publish: CdsPublish, foreign: Foreign) -> SignParams {
    let mut p = SignParams::new(1_700_000_000, &Policy::default());
    p.threads = 1;
    p.cds = CdsParams {
        publish,
        ..CdsParams::default()
    };
    p.foreign = foreign;
    p
}

fn key(flags: u16) -> SigningKey {
    SigningKey::generate(Algorithm::EcdsaP256Sha256, flags).unwrap()
}

fn zone() -> Vec<Record> {
    [
        "@ 3600 SOA ns1.example. hostmaster.example. 7 3600 900 604800 300",
        "@ 3600 NS ns1.example.",
        "ns1 3600 A 192.0.2.1",
    ]
    .iter()
    .map(|l| rec(l, "example."))
    .collect()
}

fn rdatas(z: &[Record], rtype: RType) -> Vec<Vec<u8>> {
    let apex = name("example.");
    z.iter()
        .filter(|r| r.rtype == rtype && r.owner == apex)
        .map(|r| r.rdata.clone())
        .collect()
}

/// The key tags of the RRSIGs over `covered` at `owner`.
fn signers(z: &[Record], owner: &str, covered: RType) -> Vec<u16> {
    let owner = name(owner);
    let mut tags: Vec<u16> = z
        .iter()
        .filter(|r| r.rtype == RType::RRSIG && r.owner == owner)
        .filter_map(|r| RrsigFields::parse(&r.rdata).map(|(f, _)| f))
        .filter(|f| f.type_covered == covered)
        .map(|f| f.key_tag)
        .collect();
    tags.sort_unstable();
    tags
}

#[test]
fn names_round_trip() {
    for m in [DnskeyManagement::Full, DnskeyManagement::Incremental] {
        assert_eq!(DnskeyManagement::from_name(m.name()), Some(m));
    }
    assert_eq!(DnskeyManagement::default(), DnskeyManagement::Full);
    assert_eq!(DnskeyManagement::from_name("partial"), None);
}

#[test]
fn foreign_cds_only_beside_ours_and_never_with_the_delete_form() {
    let apex = name("example.");
    let (ours, other_ksk, other_zsk) = (key(257), key(257), key(256));
    let other_cds = crate::ds_rdata(apex.as_ref(), other_ksk.dnskey_rdata(), DigestType::Sha256);
    let foreign = Foreign {
        dnskey: vec![other_zsk.dnskey_rdata().to_vec()],
        cdnskey: vec![other_ksk.dnskey_rdata().to_vec()],
        cds: vec![other_cds.unwrap()],
    };
    let merged = |publish| {
        let p = CdsParams {
            publish,
            ..CdsParams::default()
        };
        let (cdnskey, cds) = apex_records(apex.as_ref(), [ours.dnskey_rdata()], &p).unwrap();
        foreign.merge_cds(cdnskey, cds)
    };
    // Ours published: ours and the given ones; no CDS is made for a foreign DNSKEY.
    let (cdnskey, cds) = merged(CdsPublish::Always);
    assert_eq!(
        cdnskey,
        [ours.dnskey_rdata(), other_ksk.dnskey_rdata()].map(<[u8]>::to_vec)
    );
    let tags: Vec<u16> = cds
        .iter()
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(tags, [ours.tag(), other_ksk.tag()]);
    // None of ours: none of theirs (a CDS set without our KSK would drop our DS).
    assert_eq!(merged(CdsPublish::None), (vec![], vec![]));
    assert_eq!(merged(CdsPublish::Rollover), (vec![], vec![]));
    // The delete form stays alone.
    let (cdnskey, cds) = merged(CdsPublish::DeleteDnssec);
    assert_eq!(
        (cdnskey, cds),
        (vec![CDNSKEY_DELETE.to_vec()], vec![CDS_DELETE.to_vec()])
    );
}

/// RFC 8901 model 2: the other provider's ZSK is in our DNSKEY RRset, signed by our KSK,
/// and signs nothing; a signature made by that provider's ZSK validates with our DNSKEY
/// RRset.
#[test]
fn foreign_keys_are_published_and_never_sign() {
    let (ksk, zsk) = (key(257), key(256));
    let (their_ksk, their_zsk) = (key(257), key(256));
    let foreign = Foreign {
        dnskey: vec![their_zsk.dnskey_rdata().to_vec()],
        cdnskey: vec![their_ksk.dnskey_rdata().to_vec()],
        cds: vec![],
    };
    let keys = [ZoneKey::ksk(&ksk), ZoneKey::zsk(&zsk)];
    let p = params(CdsPublish::Always, foreign);
    let ours = sign_zone(&name("example."), zone(), &keys, &p)
        .unwrap()
        .records;
    let mut dnskeys: Vec<u16> = rdatas(&ours, RType::DNSKEY)
        .iter()
        .map(|d| key_tag(d))
        .collect();
    dnskeys.sort_unstable();
    let mut want = vec![ksk.tag(), zsk.tag(), their_zsk.tag()];
    want.sort_unstable();
    assert_eq!(dnskeys, want);
    assert_eq!(signers(&ours, "example.", RType::DNSKEY), [ksk.tag()]);
    assert_eq!(signers(&ours, "ns1.example.", RType::A), [zsk.tag()]);
    let cdnskey_tags: Vec<u16> = rdatas(&ours, RType::CDNSKEY)
        .iter()
        .map(|d| key_tag(d))
        .collect();
    assert_eq!(cdnskey_tags.len(), 2);
    assert!(cdnskey_tags.contains(&ksk.tag()) && cdnskey_tags.contains(&their_ksk.tag()));
    assert_eq!(
        rdatas(&ours, RType::CDS).len(),
        1,
        "the given CDNSKEY has no CDS made"
    );

    // Their signature of ns1's A (their zone signed with their keys) verifies with a key
    // of our DNSKEY RRset.
    let theirs = sign_zone(
        &name("example."),
        zone(),
        &[ZoneKey::ksk(&their_ksk), ZoneKey::zsk(&their_zsk)],
        &params(CdsPublish::None, Foreign::default()),
    )
    .unwrap()
    .records;
    let a: Vec<&Record> = theirs
        .iter()
        .filter(|r| r.owner == name("ns1.example.") && r.rtype == RType::A)
        .collect();
    let sig = theirs
        .iter()
        .find(|r| {
            r.rtype == RType::RRSIG
                && r.owner == name("ns1.example.")
                && RrsigFields::parse(&r.rdata).is_some_and(|(f, _)| f.type_covered == RType::A)
        })
        .unwrap();
    let published = rdatas(&ours, RType::DNSKEY);
    let by = published
        .iter()
        .find(|d| key_tag(d) == their_zsk.tag())
        .unwrap();
    let owner = name("ns1.example.");
    let rdatas = a.iter().map(|r| &r.rdata[..]);
    verify_rrsig(&sig.rdata, owner.as_ref(), sig.class, RType::A, rdatas, by).unwrap();
}

#[test]
fn the_same_key_given_twice_is_published_once() {
    let csk = key(257);
    let foreign = Foreign {
        dnskey: vec![csk.dnskey_rdata().to_vec()],
        cdnskey: vec![csk.dnskey_rdata().to_vec()],
        cds: vec![],
    };
    let p = params(CdsPublish::Always, foreign);
    let z = sign_zone(&name("example."), zone(), &[ZoneKey::csk(&csk)], &p)
        .unwrap()
        .records;
    assert_eq!(rdatas(&z, RType::DNSKEY).len(), 1);
    assert_eq!(rdatas(&z, RType::CDNSKEY).len(), 1);
    assert_eq!(rdatas(&z, RType::CDS).len(), 1);
}
