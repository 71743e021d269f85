//! Multi-signer zones: the foreign key records of the zone's data kept beside ours, ours
//! never taken from the data, foreign keys never signing, and the setting in the
//! fingerprint.

use super::*;
use crate::signing::{sign_scanned, KeyPolicy, RollSpec};
use shardns_dnssec::sign::RrsigFields;
use shardns_dnssec::{key_tag, Algorithm, CdsParams, CdsPublish, Denial, Policy, SigningKey};
use shardns_wire::{rdata, Record};
use shardns_zone::scan::Scanned;
use shardns_zone::{ScanOptions, Zone};
use std::path::Path;

const NOW: u64 = 1_750_000_000;

struct Dir(std::path::PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let p = std::env::temp_dir().join(format!("shardns-multi-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    Dir(p)
}

fn spec(key_dir: &Path, management: DnskeyManagement) -> SignSpec {
    SignSpec {
        key_dir: key_dir.to_path_buf(),
        algorithm: Algorithm::EcdsaP256Sha256,
        denial: Denial::Nsec,
        policy: Policy::default(),
        roll: RollSpec::default(),
        cds: CdsParams {
            publish: CdsPublish::Always,
            ..CdsParams::default()
        },
        keys: KeyPolicy {
            single_type: false,
            ..KeyPolicy::default()
        },
        dnskey_ttl: None,
        keystore: None,
        dnskey_management: management,
        offline_ksk: false,
    }
}

fn apex() -> Name {
    "z.test.".parse().unwrap()
}

fn text(rtype: RType, rd: &[u8]) -> String {
    let mut s = String::new();
    rdata::fmt_text(rtype, rd, &mut s).unwrap();
    s
}

/// The zone file with `extra` apex lines.
fn scan(extra: &[String]) -> Scanned {
    let mut zone = "$TTL 300\n@ SOA ns.z.test. admin.z.test. 7 3600 600 86400 300\n\
                    @ NS ns\nns A 192.0.2.1\n"
        .to_string();
    for l in extra {
        zone.push_str(&format!("@ {l}\n"));
    }
    let opts = ScanOptions::new(apex());
    shardns_zone::scan::scan_text(zone.as_bytes(), Path::new("z.zone"), &opts).unwrap()
}

fn of(records: &[Record], rtype: RType) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = records
        .iter()
        .filter(|r| r.rtype == rtype && r.owner == apex())
        .map(|r| r.rdata.clone())
        .collect();
    v.sort();
    v
}

fn signed_by(records: &[Record], covered: RType) -> Vec<u16> {
    records
        .iter()
        .filter(|r| r.rtype == RType::RRSIG)
        .filter_map(|r| RrsigFields::parse(&r.rdata).map(|(f, _)| f))
        .filter(|f| f.type_covered == covered)
        .map(|f| f.key_tag)
        .collect()
}

/// The other provider's ZSK, KSK and the KSK's CDS, as the zone file's lines.
struct Other {
    zsk: SigningKey,
    ksk: SigningKey,
    cds: Vec<u8>,
}

impl Other {
    fn new() -> Self {
        let ksk = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
        let digest = DigestType::Sha256;
        let cds = ds_rdata(apex().as_ref(), ksk.dnskey_rdata(), digest).unwrap();
        Self {
            zsk: SigningKey::generate(Algorithm::EcdsaP256Sha256, 256).unwrap(),
            ksk,
            cds,
        }
    }

    fn lines(&self) -> Vec<String> {
        vec![
            format!("DNSKEY {}", text(RType::DNSKEY, self.zsk.dnskey_rdata())),
            format!("CDNSKEY {}", text(RType::CDNSKEY, self.ksk.dnskey_rdata())),
            format!("CDS {}", text(RType::CDS, &self.cds)),
            // The delete form is our setting's, never the data's.
            "CDS 0 0 0 00".to_string(),
        ]
    }
}

#[test]
fn full_drops_the_zones_key_records_incremental_keeps_the_foreign_ones() {
    let d = dir("modes");
    let other = Other::new();
    let full = sign_scanned(
        &apex(),
        scan(&other.lines()),
        &spec(&d.0, DnskeyManagement::Full),
        NOW,
        1,
    )
    .unwrap()
    .records
    .to_records();
    let ours = of(&full, RType::DNSKEY);
    assert_eq!(ours.len(), 2, "our KSK and ZSK alone");
    assert!(!ours.contains(&other.zsk.dnskey_rdata().to_vec()));
    assert_eq!(of(&full, RType::CDS).len(), 1);

    // The same records and keys, the setting changed: signed anew (not the kept zone).
    let inc = spec(&d.0, DnskeyManagement::Incremental);
    let multi = sign_scanned(&apex(), scan(&other.lines()), &inc, NOW + 10, 1)
        .unwrap()
        .records
        .to_records();
    let mut want = ours.clone();
    want.push(other.zsk.dnskey_rdata().to_vec());
    want.sort();
    assert_eq!(of(&multi, RType::DNSKEY), want);
    let mut cdnskey = of(&full, RType::CDNSKEY);
    cdnskey.push(other.ksk.dnskey_rdata().to_vec());
    cdnskey.sort();
    assert_eq!(of(&multi, RType::CDNSKEY), cdnskey);
    let mut cds = of(&full, RType::CDS);
    cds.push(other.cds.clone());
    cds.sort();
    assert_eq!(
        of(&multi, RType::CDS),
        cds,
        "ours and theirs, no delete form"
    );
    // Only our keys sign: the KSK the key RRsets, the ZSK the rest.
    let our_ksk = ours.iter().find(|k| k[1] == 1).map(|k| key_tag(k)).unwrap();
    let our_zsk = ours.iter().find(|k| k[1] == 0).map(|k| key_tag(k)).unwrap();
    for t in [RType::DNSKEY, RType::CDS, RType::CDNSKEY] {
        assert_eq!(signed_by(&multi, t), [our_ksk], "{t}");
    }
    assert_eq!(signed_by(&multi, RType::A), [our_zsk]);
}

#[test]
fn our_own_keys_in_the_data_are_ours_not_foreign() {
    let d = dir("ours");
    let inc = spec(&d.0, DnskeyManagement::Incremental);
    let first = sign_scanned(&apex(), scan(&[]), &inc, NOW, 1)
        .unwrap()
        .records
        .to_records();
    // The other provider hands back our DNSKEYs, CDNSKEY and CDS (as a zone it got from
    // us would have them): published once, as ours.
    let mut lines = Vec::new();
    for t in [RType::DNSKEY, RType::CDNSKEY, RType::CDS] {
        for rd in of(&first, t) {
            lines.push(format!("{t} {}", text(t, &rd)));
        }
    }
    let again = sign_scanned(&apex(), scan(&lines), &inc, NOW + 10, 1)
        .unwrap()
        .records
        .to_records();
    for t in [RType::DNSKEY, RType::CDNSKEY, RType::CDS] {
        assert_eq!(of(&again, t), of(&first, t), "{t}");
    }
    let mut records = RecordList::default();
    let at = records.push_name(apex().as_ref());
    for rd in of(&first, RType::DNSKEY) {
        records.push(at, RType::DNSKEY, shardns_wire::Class::IN, 300, &rd);
    }
    let keys = crate::signing::load_keys(&apex(), &inc).unwrap();
    let foreign = take_foreign(&inc, &apex(), &mut records, &keys);
    assert!(foreign.is_empty() && records.items.is_empty());
}

#[test]
fn a_change_of_the_key_records_is_signed_whole_in_a_multi_signer_zone() {
    let soa = (300, vec![]);
    let key = SigningKey::generate(Algorithm::EcdsaP256Sha256, 256).unwrap();
    let change = |owner: &str, rtype| Change {
        deleted: vec![],
        added: vec![(
            owner.parse().unwrap(),
            rtype,
            300,
            key.dnskey_rdata().to_vec(),
        )],
        old_soa: soa.clone(),
        soa: soa.clone(),
    };
    let d = dir("whole");
    let (full, inc) = (
        spec(&d.0, DnskeyManagement::Full),
        spec(&d.0, DnskeyManagement::Incremental),
    );
    assert!(needs_whole(&inc, &apex(), &change("z.test.", RType::DNSKEY)).is_some());
    assert!(needs_whole(&inc, &apex(), &change("Z.TEST.", RType::CDNSKEY)).is_some());
    assert!(needs_whole(&full, &apex(), &change("z.test.", RType::DNSKEY)).is_none());
    assert!(needs_whole(&inc, &apex(), &change("sub.z.test.", RType::DNSKEY)).is_none());
    // The unsigned records keep the apex key records of a multi-signer zone alone.
    let (a, s) = (apex(), "sub.z.test.".parse().unwrap());
    assert!(!signer_owned(&inc, &a, &a, RType::DNSKEY));
    assert!(signer_owned(&full, &a, &a, RType::CDS));
    assert!(signer_owned(&inc, &a, &a, RType::RRSIG));
    assert!(!signer_owned(&inc, &a, &s, RType::A));
}

/// The SOA rdata of `zone` with the serial moved on by one.
fn next_soa(zone: &Zone) -> ((u32, Vec<u8>), (u32, Vec<u8>)) {
    let soa = zone.apex_node().rrset(RType::SOA).unwrap();
    let old = soa.rdatas().next().unwrap().to_vec();
    let mut new = old.clone();
    let at = new.len() - 20;
    let serial = u32::from_be_bytes(new[at..at + 4].try_into().unwrap()) + 1;
    new[at..at + 4].copy_from_slice(&serial.to_be_bytes());
    ((soa.ttl, old), (soa.ttl, new))
}

/// An update of other records in a zone that publishes foreign keys is still signed
/// incrementally (the foreign records are what the zone has), and keeps them.
#[test]
fn other_changes_stay_incremental_beside_foreign_keys() {
    use crate::signing::incremental::{sign_incrementally, Incremental};
    let d = dir("incremental");
    let inc = spec(&d.0, DnskeyManagement::Incremental);
    let other = Other::new();
    let signed = sign_scanned(&apex(), scan(&other.lines()), &inc, NOW, 1).unwrap();
    let (zone, _) = Zone::build_sorted(apex(), signed.records, vec![], vec![]).unwrap();
    let (old_soa, soa) = next_soa(&zone);
    let new_a = (
        "new.z.test.".parse().unwrap(),
        RType::A,
        300,
        vec![192, 0, 2, 9],
    );
    let change = Change {
        deleted: vec![],
        added: vec![new_a],
        old_soa,
        soa,
    };
    assert!(needs_whole(&inc, &apex(), &change).is_none());
    let zone = match sign_incrementally(&zone, &change, &inc, NOW + 5).unwrap() {
        Incremental::Signed(zone, _) => zone,
        Incremental::Whole(why) => panic!("signed whole: {why}"),
    };
    let apex_node = zone.apex_node();
    let keys = apex_node.rrset(RType::DNSKEY).unwrap();
    assert_eq!(keys.len(), 3);
    assert!(keys.rdatas().any(|d| d == other.zsk.dnskey_rdata()));
    assert_eq!(apex_node.rrset(RType::CDS).unwrap().len(), 2);
    assert!(zone.node_count() > 0);
}

/// A foreign DNSKEY of an algorithm we do not sign with fails the signing with a message
/// that names it; the same zone with a key of our algorithm signs.
#[test]
fn a_foreign_key_of_another_algorithm_is_an_error() {
    let d = dir("algorithm");
    let inc = spec(&d.0, DnskeyManagement::Incremental);
    let ed = SigningKey::generate(Algorithm::Ed25519, 256).unwrap();
    let line = format!("DNSKEY {}", text(RType::DNSKEY, ed.dnskey_rdata()));
    let e = sign_scanned(&apex(), scan(&[line]), &inc, NOW, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(&format!("tag {}", ed.tag())), "{e}");
    assert!(e.contains("algorithm 15"), "{e}");
    assert!(sign_scanned(&apex(), scan(&Other::new().lines()), &inc, NOW, 1).is_ok());
}
