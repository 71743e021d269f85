use super::*;
use crate::alg::Algorithm;
use crate::cds::CdsPublish;
use crate::key::PrivateKey;
use crate::list::BLOCK;
use crate::nsec3::{hash_label, HASH_LEN, LABEL_LEN};
use crate::sign::{verify_rrsig, RrsigFields};
use crate::testutil::{name, rd, rec};
use nsec::write_bitmap;
use std::collections::HashSet;

const ZONE: &str = "
@ 3600 SOA ns1.example. hostmaster.example. 7 3600 900 604800 300
@ 3600 NS ns1.example.
@ 3600 MX 10 mail.example.
ns1 3600 A 192.0.2.1
mail 3600 A 192.0.2.2
*.wild 3600 TXT wildcard
www 3600 CNAME mail.example.
a.b.ent 3600 A 192.0.2.3
secure 3600 NS ns.secure.example.
secure 3600 DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF
ns.secure 3600 A 192.0.2.4
insecure 3600 NS ns.insecure.example.
insecure 3600 A 192.0.2.9
ns.insecure 3600 A 192.0.2.5
deep.x.insecure2 3600 NS ns.example.net.
dname 3600 DNAME example.net.
below.dname 3600 A 192.0.2.6
";

pub(crate) fn zone() -> Vec<Record> {
    ZONE.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| rec(l, "example."))
        .collect()
}

fn ed25519() -> SigningKey {
    use aws_lc_rs::signature::KeyPair;
    // A fixed key, so that signatures are the same from run to run.
    let seed = [7u8; 32];
    let pair = aws_lc_rs::signature::Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
    SigningKey::from_private(
        Algorithm::Ed25519,
        257,
        PrivateKey::Ed25519(seed),
        pair.public_key().as_ref(),
    )
    .unwrap()
}

fn params(denial: Denial) -> SignParams {
    SignParams {
        denial,
        inception: 1_700_000_000,
        expiration: 1_701_209_600,
        dnskey_ttl: None,
        serial: None,
        threads: 1,
        jitter: Default::default(),
        foreign: Default::default(),
        cds: CdsParams {
            publish: CdsPublish::Always,
            ..CdsParams::default()
        },
    }
}

fn find<'a>(zone: &'a [Record], owner: &str, rtype: RType) -> Vec<&'a Record> {
    let owner = name(owner);
    zone.iter()
        .filter(|r| r.rtype == rtype && r.owner == owner)
        .collect()
}

/// Types covered by the RRSIGs at `owner`.
fn signed_types(zone: &[Record], owner: &str) -> Vec<RType> {
    let mut t: Vec<RType> = find(zone, owner, RType::RRSIG)
        .iter()
        .map(|r| RrsigFields::parse(&r.rdata).unwrap().0.type_covered)
        .collect();
    t.sort_unstable();
    t
}

/// Checks every RRSIG in the zone with the zone's DNSKEYs, and that every authoritative
/// RRset listed has one.
fn verify_all(zone: &[Record]) -> usize {
    let keys: Vec<&Record> = zone.iter().filter(|r| r.rtype == RType::DNSKEY).collect();
    let mut n = 0;
    for sig in zone.iter().filter(|r| r.rtype == RType::RRSIG) {
        let (f, _) = RrsigFields::parse(&sig.rdata).unwrap();
        let rrset: Vec<&[u8]> = zone
            .iter()
            .filter(|r| r.rtype == f.type_covered && r.owner == sig.owner)
            .map(|r| &r.rdata[..])
            .collect();
        assert!(!rrset.is_empty(), "RRSIG without RRset at {}", sig.owner);
        let ttl = zone
            .iter()
            .find(|r| r.rtype == f.type_covered && r.owner == sig.owner)
            .unwrap()
            .ttl;
        assert_eq!((sig.ttl, f.original_ttl), (ttl, ttl), "{}", sig.owner);
        let ok = keys.iter().any(|k| {
            verify_rrsig(
                &sig.rdata,
                sig.owner.as_ref(),
                sig.class,
                f.type_covered,
                rrset.iter().copied(),
                &k.rdata,
            )
            .is_ok()
        });
        assert!(ok, "RRSIG {} {} does not verify", sig.owner, f.type_covered);
        n += 1;
    }
    n
}

fn nsec_of(zone: &[Record], owner: &str) -> String {
    let r = find(zone, owner, RType::NSEC);
    assert_eq!(r.len(), 1, "NSEC at {owner}");
    let mut s = String::new();
    shardns_wire::rdata::fmt_text(RType::NSEC, &r[0].rdata, &mut s).unwrap();
    s
}

#[test]
fn nsec_zone() {
    let key = ed25519();
    let signed = sign_zone(
        &name("example."),
        zone(),
        &[ZoneKey::csk(&key)],
        &params(Denial::Nsec),
    )
    .unwrap();
    let z = &signed.records;
    // The chain, in canonical order: occluded names and the empty non-terminals
    // (b.ent, ent, x.insecure2) are not in it; delegations are.
    let chain = [
        (
            "example.",
            "dname.example. NS SOA MX RRSIG NSEC DNSKEY CDS CDNSKEY",
        ),
        ("dname.example.", "a.b.ent.example. DNAME RRSIG NSEC"),
        ("a.b.ent.example.", "insecure.example. A RRSIG NSEC"),
        (
            "insecure.example.",
            "deep.x.insecure2.example. NS RRSIG NSEC",
        ),
        ("deep.x.insecure2.example.", "mail.example. NS RRSIG NSEC"),
        ("mail.example.", "ns1.example. A RRSIG NSEC"),
        ("ns1.example.", "secure.example. A RRSIG NSEC"),
        ("secure.example.", "*.wild.example. NS DS RRSIG NSEC"),
        ("*.wild.example.", "www.example. TXT RRSIG NSEC"),
        ("www.example.", "example. CNAME RRSIG NSEC"),
    ];
    for (owner, want) in chain {
        assert_eq!(nsec_of(z, owner), want, "{owner}");
    }
    assert_eq!(
        z.iter().filter(|r| r.rtype == RType::NSEC).count(),
        chain.len()
    );
    // The NSEC TTL is min(SOA TTL, SOA MINIMUM) (RFC 9077).
    assert!(z
        .iter()
        .filter(|r| r.rtype == RType::NSEC)
        .all(|r| r.ttl == 300));

    // What is signed and what is not.
    assert_eq!(
        signed_types(z, "example."),
        [
            RType::NS,
            RType::SOA,
            RType::MX,
            RType::NSEC,
            RType::DNSKEY,
            RType::CDS,
            RType::CDNSKEY
        ]
    );
    assert_eq!(signed_types(z, "secure.example."), [RType::DS, RType::NSEC]);
    assert_eq!(
        signed_types(z, "insecure.example."),
        [RType::NSEC],
        "A at a cut is glue"
    );
    assert_eq!(signed_types(z, "ns.secure.example."), [], "glue");
    assert_eq!(signed_types(z, "ns.insecure.example."), []);
    assert_eq!(
        signed_types(z, "below.dname.example."),
        [],
        "occluded by DNAME"
    );
    assert_eq!(
        signed_types(z, "*.wild.example."),
        [RType::TXT, RType::NSEC]
    );
    assert_eq!(signed_types(z, "www.example."), [RType::CNAME, RType::NSEC]);
    // The unsigned data is all still there.
    for (owner, t) in [
        ("ns.secure.example.", RType::A),
        ("insecure.example.", RType::A),
        ("below.dname.example.", RType::A),
        ("secure.example.", RType::NS),
    ] {
        assert_eq!(find(z, owner, t).len(), 1, "{owner} {t}");
    }
    let n = verify_all(z);
    assert_eq!(n, signed.signatures);
    assert_eq!(signed.rrsets_signed, signed.signatures, "one key");
    // Keys: DNSKEY, CDNSKEY and CDS (SHA-256) at the apex with the SOA's TTL.
    let dnskey = find(z, "example.", RType::DNSKEY);
    assert_eq!(dnskey.len(), 1);
    assert_eq!(dnskey[0].rdata, key.dnskey_rdata());
    assert_eq!(dnskey[0].ttl, 3600);
    assert_eq!(
        find(z, "example.", RType::CDNSKEY)[0].rdata,
        key.dnskey_rdata()
    );
    let cds = &find(z, "example.", RType::CDS)[0].rdata;
    assert_eq!(cds[..4], [(key.tag() >> 8) as u8, key.tag() as u8, 15, 2]);
    // Output is in canonical order.
    assert!(z
        .windows(2)
        .all(|w| record_order(&w[0], &w[1]) != core::cmp::Ordering::Greater));
}

#[test]
fn nsec3_zone_with_and_without_opt_out() {
    let key = ed25519();
    let apex = name("example.");
    let p = Nsec3Params::default();
    let hash = |n: &str| {
        let mut h = [0u8; HASH_LEN];
        p.hash(name(n).as_ref(), &mut h);
        let mut l = [0u8; LABEL_LEN];
        hash_label(&h, &mut l);
        format!("{}.example.", core::str::from_utf8(&l).unwrap())
    };
    let bitmap = |z: &[Record], n: &str| -> Option<(u8, String)> {
        let r = find(z, &hash(n), RType::NSEC3);
        let r = r.first()?;
        let mut s = String::new();
        shardns_wire::rdata::fmt_text(RType::NSEC3, &r.rdata, &mut s).unwrap();
        // "1 FLAGS 0 - NEXT TYPES..."
        let types: Vec<&str> = s.split(' ').skip(5).collect();
        Some((r.rdata[1], types.join(" ")))
    };
    for opt_out in [false, true] {
        let denial = Denial::Nsec3 {
            params: p.clone(),
            opt_out,
        };
        let signed = sign_zone(&apex, zone(), &[ZoneKey::csk(&key)], &params(denial)).unwrap();
        let z = &signed.records;
        let f = u8::from(opt_out);
        assert_eq!(
            bitmap(z, "example."),
            Some((f, "NS SOA MX RRSIG DNSKEY NSEC3PARAM CDS CDNSKEY".into()))
        );
        assert_eq!(bitmap(z, "a.b.ent.example."), Some((f, "A RRSIG".into())));
        assert_eq!(
            bitmap(z, "secure.example."),
            Some((f, "NS DS RRSIG".into()))
        );
        assert_eq!(bitmap(z, "*.wild.example."), Some((f, "TXT RRSIG".into())));
        assert_eq!(bitmap(z, "dname.example."), Some((f, "DNAME RRSIG".into())));
        // Empty non-terminals have an NSEC3 with no types (RFC 5155 §7.1).
        assert_eq!(bitmap(z, "b.ent.example."), Some((f, String::new())));
        assert_eq!(bitmap(z, "ent.example."), Some((f, String::new())));
        assert_eq!(bitmap(z, "wild.example."), Some((f, String::new())));
        // Occluded names never.
        assert_eq!(bitmap(z, "ns.secure.example."), None);
        assert_eq!(bitmap(z, "below.dname.example."), None);
        // Unsigned delegations, and the empty non-terminal only one of them makes, only
        // without opt-out.
        let unsigned = [
            "insecure.example.",
            "deep.x.insecure2.example.",
            "x.insecure2.example.",
            "insecure2.example.",
        ];
        for n in unsigned {
            let want = (!opt_out).then(|| {
                let t = if n.starts_with("insecure.") || n.starts_with("deep.") {
                    "NS"
                } else {
                    ""
                };
                (0, t.to_string())
            });
            assert_eq!(bitmap(z, n), want, "{n} opt-out {opt_out}");
        }
        let nsec3: Vec<&Record> = z.iter().filter(|r| r.rtype == RType::NSEC3).collect();
        assert_eq!(nsec3.len(), if opt_out { 11 } else { 15 });
        assert!(nsec3.iter().all(|r| r.ttl == 300));
        // The chain is closed: each next hash is the owner of the following record.
        let mut owners: Vec<Vec<u8>> = nsec3
            .iter()
            .map(|r| {
                let mut out = Vec::new();
                shardns_wire::text::base32hex_decode(r.owner.as_ref().first_label(), &mut out)
                    .unwrap();
                out
            })
            .collect();
        let nexts: Vec<&[u8]> = nsec3.iter().map(|r| &r.rdata[6..26]).collect();
        let mut sorted = owners.clone();
        sorted.sort();
        assert_eq!(owners, sorted, "canonical order is hash order");
        owners.rotate_left(1);
        assert_eq!(owners, nexts);
        assert_eq!(
            find(z, "example.", RType::NSEC3PARAM)[0].rdata,
            [1, 0, 0, 0, 0]
        );
        assert!(z.iter().all(|r| r.rtype != RType::NSEC));
        // Every NSEC3 is signed; the unsigned delegation's NS is not.
        for r in &nsec3 {
            assert_eq!(signed_types(z, &r.owner.to_string()), [RType::NSEC3]);
        }
        assert_eq!(signed_types(z, "insecure.example."), []);
        verify_all(z);
    }
}

#[test]
fn ksk_and_zsk_roles() {
    let ksk = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
    let zsk = SigningKey::generate(Algorithm::EcdsaP256Sha256, 256).unwrap();
    let next = SigningKey::generate(Algorithm::EcdsaP256Sha256, 256).unwrap();
    let keys = [
        ZoneKey::ksk(&ksk),
        ZoneKey::zsk(&zsk),
        ZoneKey::published(&next),
    ];
    let signed = sign_zone(&name("example."), zone(), &keys, &params(Denial::Nsec)).unwrap();
    let z = &signed.records;
    let tags = |owner: &str, t: RType| -> Vec<u16> {
        find(z, owner, RType::RRSIG)
            .iter()
            .map(|r| RrsigFields::parse(&r.rdata).unwrap().0)
            .filter(|f| f.type_covered == t)
            .map(|f| f.key_tag)
            .collect()
    };
    assert_eq!(tags("example.", RType::DNSKEY), [ksk.tag()]);
    assert_eq!(tags("example.", RType::CDS), [ksk.tag()]);
    assert_eq!(tags("example.", RType::SOA), [zsk.tag()]);
    assert_eq!(tags("mail.example.", RType::A), [zsk.tag()]);
    assert_eq!(find(z, "example.", RType::DNSKEY).len(), 3, "all published");
    assert_eq!(find(z, "example.", RType::CDS).len(), 1, "only the KSK");
    verify_all(z);
    assert!(matches!(
        sign_zone(
            &name("example."),
            zone(),
            &[ZoneKey::zsk(&zsk)],
            &params(Denial::Nsec)
        ),
        Err(Error::NoSigningKey { for_keys: true })
    ));
    assert!(matches!(
        sign_zone(
            &name("example."),
            zone(),
            &[ZoneKey::ksk(&ksk)],
            &params(Denial::Nsec)
        ),
        Err(Error::NoSigningKey { for_keys: false })
    ));
}

#[test]
fn threads_give_the_same_zone() {
    // Ed25519 is deterministic, so the zone signed on 1 and on 4 threads is the same.
    let key = ed25519();
    let mut records = zone();
    for i in 0..2000 {
        records.push(rec(&format!("h{i} 60 A 192.0.2.{}", i % 250), "example."));
    }
    let one = sign_zone(
        &name("example."),
        records.clone(),
        &[ZoneKey::csk(&key)],
        &params(Denial::Nsec),
    )
    .unwrap();
    let mut p = params(Denial::Nsec);
    p.threads = 4;
    let four = sign_zone(&name("example."), records, &[ZoneKey::csk(&key)], &p).unwrap();
    assert_eq!(one.records, four.records);
    assert!(one.signatures > 4000);
}

#[test]
fn input_is_cleaned_and_checked() {
    let key = ed25519();
    let apex = name("example.");
    let mut records = zone();
    // Old DNSSEC data is dropped and made anew; a duplicate goes; TTLs are made one.
    records.push(rec("@ 3600 DNSKEY 256 3 13 AAAA", "example."));
    records.push(rec("@ 300 NSEC3PARAM 1 0 5 AB", "example."));
    records.push(rec(
        "mail 3600 RRSIG A 13 2 3600 20300101000000 20200101000000 1 example. AAAA",
        "example.",
    ));
    records.push(rec("mail 3600 NSEC www.example. A", "example."));
    records.push(rec("Mail 3600 A 192.0.2.2", "example."));
    records.push(rec("mail 60 A 192.0.2.22", "example."));
    // A DS below the apex is the zone's data, a DNSKEY there too.
    records.push(rec("sub 60 DNSKEY 256 3 13 AAAA", "example."));
    let mut p = params(Denial::Nsec);
    p.serial = Some(2_024_010_100);
    p.dnskey_ttl = Some(7200);
    let signed = sign_zone(&apex, records, &[ZoneKey::csk(&key)], &p).unwrap();
    let z = &signed.records;
    assert_eq!(find(z, "example.", RType::DNSKEY).len(), 1);
    assert_eq!(find(z, "example.", RType::DNSKEY)[0].ttl, 7200);
    assert_eq!(find(z, "example.", RType::NSEC3PARAM).len(), 0);
    let a = find(z, "mail.example.", RType::A);
    assert_eq!(a.len(), 2);
    assert!(a.iter().all(|r| r.ttl == 60));
    assert_eq!(
        find(z, "mail.example.", RType::RRSIG).len(),
        2,
        "A and NSEC"
    );
    assert_eq!(
        signed_types(z, "sub.example."),
        [RType::NSEC, RType::DNSKEY]
    );
    let soa = &find(z, "example.", RType::SOA)[0].rdata;
    let at = soa_serial_at(soa).unwrap();
    assert_eq!(soa[at..at + 4], 2_024_010_100u32.to_be_bytes());
    verify_all(z);

    let mut out = zone();
    out.push(rec("x 60 A 192.0.2.1", "example.net."));
    assert!(matches!(
        sign_zone(&apex, out, &[ZoneKey::csk(&key)], &params(Denial::Nsec)).unwrap_err(),
        Error::OutOfZone(n) if n == name("x.example.net.")
    ));
    let no_soa: Vec<Record> = zone()
        .into_iter()
        .filter(|r| r.rtype != RType::SOA)
        .collect();
    assert!(matches!(
        sign_zone(&apex, no_soa, &[ZoneKey::csk(&key)], &params(Denial::Nsec)).unwrap_err(),
        Error::Soa
    ));
    let mut two = zone();
    two.push(rec("@ 3600 SOA a. b. 8 1 1 1 1", "example."));
    assert!(matches!(
        sign_zone(&apex, two, &[ZoneKey::csk(&key)], &params(Denial::Nsec)).unwrap_err(),
        Error::Soa
    ));
    let salty = Denial::Nsec3 {
        params: Nsec3Params {
            iterations: 0,
            salt: vec![0; 256],
        },
        opt_out: false,
    };
    assert!(matches!(
        sign_zone(&apex, zone(), &[ZoneKey::csk(&key)], &params(salty)).unwrap_err(),
        Error::Nsec3Salt
    ));
}

#[test]
fn jitter_spreads_expirations_within_its_window() {
    let key = ed25519();
    let apex = name("example.");
    let mut records = zone();
    for i in 0..300 {
        records.push(rec(&format!("h{i} 60 A 192.0.2.{}", i % 250), "example."));
    }
    let expirations = |spread: u32, seed: u64, threads: usize| {
        let mut p = params(Denial::Nsec);
        p.jitter = Jitter { spread, seed };
        p.threads = threads;
        let list = RecordList::from_records(&records);
        let signed = sign_list(&apex, list, &[ZoneKey::csk(&key)], &p, None).unwrap();
        let zone = signed.list.to_records();
        assert!(verify_all(&zone) > 300);
        let exp: Vec<u32> = zone
            .iter()
            .filter(|r| r.rtype == RType::RRSIG)
            .map(|r| RrsigFields::parse(&r.rdata).unwrap().0.expiration)
            .collect();
        (exp, signed.earliest_expiration, p.expiration)
    };
    let (flat, earliest, end) = expirations(0, 7, 1);
    assert!(flat.iter().all(|&e| e == end));
    assert_eq!(earliest, end);
    let (spread, earliest, end) = expirations(86_400, 7, 1);
    assert!(spread.iter().all(|&e| e <= end && e >= end - 86_400));
    let distinct: HashSet<u32> = spread.iter().copied().collect();
    assert!(
        distinct.len() > 250,
        "{} distinct of {}",
        distinct.len(),
        spread.len()
    );
    // Over the whole window: some in each quarter of it.
    for q in 0..4 {
        let (lo, hi) = (end - 86_400 + q * 21_600, end - 86_400 + (q + 1) * 21_600);
        assert!(
            spread.iter().any(|&e| e >= lo && e <= hi),
            "none in quarter {q}"
        );
    }
    assert_eq!(
        earliest,
        *spread.iter().min().unwrap(),
        "the refresh follows the earliest"
    );
    // The same seed gives the same spread on any number of threads; another seed another.
    assert_eq!(expirations(86_400, 7, 4).0, spread);
    assert_ne!(expirations(86_400, 8, 1).0, spread);
}

#[test]
fn policy_defaults_and_helpers() {
    let p = Policy::default();
    assert_eq!(
        (p.validity, p.refresh, p.backdate),
        (1_209_600, 604_800, 3600)
    );
    assert_eq!(p.window(1_000_000), (996_400, 2_209_600));
    assert_eq!(p.refresh_at(2_209_600), 1_604_800);
    let sp = SignParams::new(1_000_000, &p);
    assert_eq!(
        (sp.inception, sp.expiration, sp.denial.clone()),
        (996_400, 2_209_600, Denial::Nsec)
    );
    // RFC 9077: min(SOA TTL, MINIMUM).
    let soa = rd(RType::SOA, "a. b. 1 2 3 4 300");
    assert_eq!(denial_ttl(3600, &soa), 300);
    assert_eq!(denial_ttl(60, &soa), 60);
    let mut bm = Vec::new();
    write_bitmap(
        &[RType::A, RType::MX, RType::RRSIG, RType::NSEC, RType::CAA],
        &mut bm,
    );
    assert_eq!(bm, [0, 6, 0x40, 0x01, 0, 0, 0, 0x03, 1, 1, 0x40]);
}

/// Canonical order of records: owner (RFC 4034 §6.1), type, rdata.
fn record_order(a: &Record, b: &Record) -> core::cmp::Ordering {
    a.owner
        .as_ref()
        .canonical_cmp(&b.owner.as_ref())
        .then(a.rtype.cmp(&b.rtype))
        .then_with(|| a.rdata.cmp(&b.rdata))
}

/// Incremental re-signing: the signatures of unchanged RRsets are kept; a changed record
/// costs its RRset's signature, the NSEC/NSEC3 records that changed with it, and the SOA's.
#[test]
fn resign_keeps_unchanged_signatures() {
    let key = ed25519();
    let apex = name("example.");
    let opt_out = Denial::Nsec3 {
        params: Nsec3Params::default(),
        opt_out: true,
    };
    let nsec3 = Denial::Nsec3 {
        params: Nsec3Params::default(),
        opt_out: false,
    };
    for denial in [Denial::Nsec, nsec3, opt_out] {
        let p = params(denial.clone());
        let first = sign_list(
            &apex,
            RecordList::from_records(&zone()),
            &[ZoneKey::csk(&key)],
            &p,
            None,
        )
        .unwrap();
        // One changed record, one name added, one removed.
        let changed: Vec<Record> = zone()
            .into_iter()
            .filter(|r| r.owner != name("ns1.example."))
            .map(|mut r| {
                if r.owner == name("mail.example.") {
                    r.rdata = rd(RType::A, "192.0.2.22");
                }
                r
            })
            .chain([rec("new 3600 A 192.0.2.7", "example.")])
            .collect();
        let later = SignParams {
            inception: p.inception + 1000,
            expiration: p.expiration + 1000,
            serial: Some(8),
            ..p.clone()
        };
        let now = u64::from(later.inception) + 3600;
        let prev = Previous::new(first.list.clone(), now, 7 * 86_400);
        let second = sign_list(
            &apex,
            RecordList::from_records(&changed),
            &[ZoneKey::csk(&key)],
            &later,
            Some(prev.clone()),
        )
        .unwrap();
        let z = second.list.to_records();
        assert_eq!(verify_all(&z), second.signatures + second.kept);
        // The kept signatures stay in the previous version's storage, taken over whole: the
        // new blocks hold only the new signatures (Ed25519, signer example.: 91 octets each).
        assert_eq!(
            second.list.block_bytes(),
            first.list.bytes.len() + first.list.block_bytes() + 91 * second.signatures,
            "{denial:?}"
        );
        assert_eq!(second.rrsets_signed, second.signatures + second.kept);
        // SOA, mail A, new A, and two or three chain records.
        match denial {
            Denial::Nsec => assert_eq!(second.signatures, 5, "{denial:?}"),
            _ => assert!(
                (4..=6).contains(&second.signatures),
                "{denial:?}: {}",
                second.signatures
            ),
        }
        // The same records as a full signing, and the kept signatures are the old ones.
        let full = sign_zone(&apex, changed.clone(), &[ZoneKey::csk(&key)], &later).unwrap();
        let data = |z: &[Record]| -> Vec<Record> {
            z.iter()
                .filter(|r| r.rtype != RType::RRSIG)
                .cloned()
                .collect()
        };
        assert_eq!(data(&z), data(&full.records), "{denial:?}");
        let old: HashSet<Vec<u8>> = first
            .list
            .to_records()
            .into_iter()
            .filter(|r| r.rtype == RType::RRSIG)
            .map(|r| r.rdata)
            .collect();
        let reused = z
            .iter()
            .filter(|r| r.rtype == RType::RRSIG && old.contains(&r.rdata))
            .count();
        assert_eq!(reused, second.kept);
        // A previous version in another order (not as written) keeps the same signatures.
        let mut reversed = first.list.clone();
        reversed.items.reverse();
        let from_reversed = sign_list(
            &apex,
            RecordList::from_records(&changed),
            &[ZoneKey::csk(&key)],
            &later,
            Some(Previous::new(reversed, now, 7 * 86_400)),
        )
        .unwrap();
        assert_eq!(from_reversed.kept, second.kept);
        assert_eq!(second.earliest_expiration, p.expiration);
        assert_eq!(second.expires(now), u64::from(p.expiration));

        // Past the refresh time, or with another key, nothing is kept.
        let due = Previous::new(
            first.list.clone(),
            u64::from(p.expiration) - 86_400,
            7 * 86_400,
        );
        let again = sign_list(
            &apex,
            RecordList::from_records(&changed),
            &[ZoneKey::csk(&key)],
            &later,
            Some(due),
        )
        .unwrap();
        assert_eq!(again.kept, 0);
        let other = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
        let rolled = sign_list(
            &apex,
            RecordList::from_records(&changed),
            &[ZoneKey::csk(&other)],
            &later,
            Some(prev),
        )
        .unwrap();
        assert_eq!(rolled.kept, 0);
        assert_eq!(rolled.signatures, rolled.rrsets_signed);
    }
}

/// The signatures stay in the blocks the threads made them in, in the order the list is
/// read: a reader going through the records in order frees the blocks behind it, and reads
/// every record's rdata at its turn.
#[test]
fn signature_blocks_are_freed_as_the_list_is_read() {
    let key = ed25519();
    let mut records = zone();
    for i in 0..2000 {
        records.push(rec(&format!("h{i} 60 A 192.0.2.{}", i % 250), "example."));
        records.push(rec(&format!("h{i} 60 TXT \"record {i}\""), "example."));
    }
    let nsec3 = Denial::Nsec3 {
        params: Nsec3Params::default(),
        opt_out: false,
    };
    for denial in [Denial::Nsec, nsec3] {
        for threads in [1, 2] {
            let mut p = params(denial.clone());
            p.threads = threads;
            let apex = name("example.");
            let signed = sign_list(
                &apex,
                RecordList::from_records(&records),
                &[ZoneKey::csk(&key)],
                &p,
                None,
            )
            .unwrap();
            let mut list = signed.list;
            let all = list.to_records();
            assert!(all.windows(2).all(|w| record_order(&w[0], &w[1]).is_lt()));
            if threads == 2 {
                assert!(verify_all(&all) > 6000);
            }
            let total = list.block_bytes();
            assert!(
                total > 3 * BLOCK,
                "{denial:?}: {total} octets of signatures"
            );
            let mut freed_by_half = 0;
            for (i, want) in all.iter().enumerate() {
                assert_eq!(&list.record(&list.items[i]), want, "record {i}");
                if i % 100 == 99 {
                    list.release_before(i + 1);
                }
                if i == list.len() / 2 {
                    freed_by_half = total - list.block_bytes();
                }
            }
            assert!(
                freed_by_half > total / 3,
                "{denial:?}, {threads} threads: {freed_by_half} of {total} freed half way"
            );
            list.release_before(list.len());
            assert_eq!(list.block_bytes(), 0);

            // Signed again from that version: every signature kept, in the blocks taken
            // over, freed as the new list is read.
            let signed = sign_list(
                &apex,
                RecordList::from_records(&records),
                &[ZoneKey::csk(&key)],
                &p,
                None,
            )
            .unwrap();
            let first = signed.list.to_records();
            let prev = Previous::new(signed.list, u64::from(p.inception) + 3600, 7 * 86_400);
            let again = sign_list(
                &apex,
                RecordList::from_records(&records),
                &[ZoneKey::csk(&key)],
                &p,
                Some(prev),
            )
            .unwrap();
            assert_eq!((again.signatures, again.kept), (0, again.rrsets_signed));
            let mut list = again.list;
            for (i, want) in first.iter().enumerate() {
                assert_eq!(&list.record(&list.items[i]), want, "record {i}");
                list.release_before(i + 1);
            }
            assert_eq!(list.block_bytes(), 0);
        }
    }
}
