use super::*;
use crate::key::SigningKey;
use crate::testutil::name;

fn key(
    role: Role,
    publish: u64,
    activate: u64,
    inactive: Option<u64>,
    delete: Option<u64>,
) -> StoredKey {
    let key = SigningKey::generate(Algorithm::EcdsaP256Sha256, role.flags()).unwrap();
    StoredKey {
        meta: KeyMeta {
            zone: name("example."),
            role,
            algorithm: Algorithm::EcdsaP256Sha256,
            tag: key.tag(),
            created: publish,
            publish: Some(publish),
            activate: Some(activate),
            inactive,
            delete,
            sync_publish: None,
            sync_delete: None,
            ds_publish: None,
        },
        stem: String::new(),
        key,
    }
}

/// ZSK 1 until 200 (withdrawn at 300), ZSK 2 published at 100, signing from 200.
fn zsks() -> Vec<StoredKey> {
    vec![
        key(Role::Zsk, 0, 0, Some(200), Some(300)),
        key(Role::Zsk, 100, 200, None, None),
    ]
}

fn how() -> SignKsr {
    SignKsr {
        cds: CdsParams {
            publish: crate::CdsPublish::Always,
            ..CdsParams::default()
        },
        backdate: 10,
        overlap: 50,
    }
}

fn signed(zsks: &[StoredKey], ksk: &StoredKey) -> (Vec<RequestPeriod>, Response) {
    let periods = zsk_periods(zsks, 50, 400).unwrap();
    let request = Request {
        zone: name("example."),
        ttl: 30,
        periods: periods.clone(),
    };
    (
        periods,
        sign_request(&request, std::slice::from_ref(ksk), &how()).unwrap(),
    )
}

#[test]
fn periods_follow_the_zsk_rollover() {
    let keys = zsks();
    let p = zsk_periods(&keys, 50, 400).unwrap();
    let spans: Vec<_> = p.iter().map(|p| (p.from, p.to, p.zsks.len())).collect();
    // One key, both (publication, then the new one signs: same set, merged), one key.
    assert_eq!(spans, [(50, 100, 1), (100, 300, 2), (300, 400, 1)]);
    assert_eq!(p[2].zsks, [keys[1].key.dnskey_rdata().to_vec()]);
    // Past the last ZSK's life nothing signs: refused.
    let short = [key(Role::Zsk, 0, 0, Some(200), Some(300))];
    let e = zsk_periods(&short, 50, 400).unwrap_err().to_string();
    assert!(e.contains("no ZSK signs"), "{e}");
}

#[test]
fn a_signed_response_checks_and_any_tampering_is_refused() {
    let keys = zsks();
    let ksk = key(Role::Ksk, 0, 0, None, None);
    let (periods, response) = signed(&keys, &ksk);
    assert_eq!(response.periods.len(), 3);
    check_response(&response, &periods).unwrap();
    let p = response.period_at(150).unwrap();
    assert_eq!((p.from, p.to), (100, 300));
    assert_eq!(p.rdatas(RType::DNSKEY).len(), 3);
    assert_eq!(p.rdatas(RType::CDS).len(), 1);
    assert_eq!(p.rdatas(RType::RRSIG).len(), 3);
    assert!(response.period_at(400).is_none());
    assert_eq!(response.end(), 400);

    // A flipped bit in a signature.
    let mut bad = response.clone();
    let sig = bad.periods[1]
        .records
        .iter_mut()
        .find(|r| r.rtype == RType::RRSIG)
        .unwrap();
    *sig.rdata.last_mut().unwrap() ^= 1;
    let e = check_response(&bad, &periods).unwrap_err().to_string();
    assert!(e.contains("does not verify"), "{e}");

    // A CDNSKEY of a key not in the DNSKEY RRset.
    let mut bad = response.clone();
    let other = key(Role::Ksk, 0, 0, None, None);
    let cdnskey = bad.periods[0]
        .records
        .iter_mut()
        .find(|r| r.rtype == RType::CDNSKEY)
        .unwrap();
    cdnskey.rdata = other.key.dnskey_rdata().to_vec();
    let e = check_response(&bad, &periods).unwrap_err().to_string();
    assert!(e.contains("not a key of the DNSKEY RRset"), "{e}");
    // A record twice (the signer's RRsets would not be these).
    let mut bad = response.clone();
    let dnskey = bad.periods[0].records[0].clone();
    bad.periods[0].records.push(dnskey);
    let e = check_response(&bad, &periods).unwrap_err().to_string();
    assert!(e.contains("given twice"), "{e}");
    // A key RRset of another class, whose RRSIGs (verified as IN) do not cover it.
    let mut bad = response.clone();
    for r in &mut bad.periods[0].records {
        r.class = Class::CH;
    }
    let e = check_response(&bad, &periods).unwrap_err().to_string();
    assert!(e.contains("of class CH"), "{e}");
    // CDS without CDNSKEY.
    let mut bad = response.clone();
    bad.periods[0].records.retain(|r| r.rtype != RType::CDNSKEY);
    let e = check_response(&bad, &periods).unwrap_err().to_string();
    assert!(e.contains("CDS without CDNSKEY"), "{e}");

    // A ZSK the key directory does not have.
    let other = zsks();
    let e = check_response(&response, &zsk_periods(&other, 50, 400).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not those the key directory publishes"), "{e}");

    // A gap between periods.
    let mut gap = response.clone();
    gap.periods.remove(1);
    let e = check_response(&gap, &periods).unwrap_err().to_string();
    assert!(e.contains("does not start where"), "{e}");

    // A signature that does not cover the whole period.
    let mut short = response.clone();
    short.periods[2].to = 1000;
    let e = check_response(&short, &periods).unwrap_err().to_string();
    assert!(
        e.contains("not within one period") || e.contains("not valid"),
        "{e}"
    );
}

#[test]
fn a_malformed_request_is_refused() {
    let ksk = key(Role::Ksk, 0, 0, None, None);
    let mut request = Request {
        zone: name("example."),
        ttl: 30,
        periods: zsk_periods(&zsks(), 50, 400).unwrap(),
    };
    // A ZSK whose public key is cut short.
    request.periods[0].zsks[0].truncate(40);
    let e = sign_request(&request, std::slice::from_ref(&ksk), &how())
        .unwrap_err()
        .to_string();
    assert!(e.contains("public key of 36 octets"), "{e}");
    // A KSK's flags among the ZSKs.
    request.periods[0].zsks[0] = ksk.key.dnskey_rdata().to_vec();
    let e = sign_request(&request, std::slice::from_ref(&ksk), &how())
        .unwrap_err()
        .to_string();
    assert!(e.contains("flags 257"), "{e}");
    // Periods out of order.
    let mut request = Request {
        zone: name("example."),
        ttl: 30,
        periods: zsk_periods(&zsks(), 50, 400).unwrap(),
    };
    request.periods.swap(0, 1);
    assert!(sign_request(&request, std::slice::from_ref(&ksk), &how()).is_err());
    // An overlap shorter than the TTL.
    request.periods.swap(0, 1);
    let mut h = how();
    h.overlap = 10;
    assert!(sign_request(&request, std::slice::from_ref(&ksk), &h).is_err());
    // A period longer than RRSIG times can span (68 years): the server would refuse
    // the signatures as not valid over it.
    let mut long = request.clone();
    long.periods.truncate(1);
    long.periods[0].to = long.periods[0].from + (1 << 31);
    let e = sign_request(&long, std::slice::from_ref(&ksk), &how())
        .unwrap_err()
        .to_string();
    assert!(e.contains("past the 2^31 s"), "{e}");
    // No KSK active.
    let late = key(Role::Ksk, 500, 500, None, None);
    let e = sign_request(&request, &[late], &how())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no KSK"), "{e}");
}

#[test]
fn a_ksk_rollover_cuts_the_periods() {
    let keys = zsks();
    let old = key(Role::Ksk, 0, 0, Some(250), Some(350));
    let new = key(Role::Ksk, 150, 250, None, None);
    let tag_new = new.key.tag();
    let request = Request {
        zone: name("example."),
        ttl: 30,
        periods: zsk_periods(&keys, 50, 400).unwrap(),
    };
    let r = sign_request(&request, &[old, new], &how()).unwrap();
    let spans: Vec<_> = r.periods.iter().map(|p| (p.from, p.to)).collect();
    assert_eq!(
        spans,
        [
            (50, 100),
            (100, 150),
            (150, 250),
            (250, 300),
            (300, 350),
            (350, 400)
        ]
    );
    check_response(&r, &request.periods).unwrap();
    // Both KSKs published from 150 to 350, the new one alone signing from 250.
    assert_eq!(r.period_at(200).unwrap().rdatas(RType::DNSKEY).len(), 4);
    let tags: Vec<u16> = r
        .period_at(260)
        .unwrap()
        .rdatas(RType::RRSIG)
        .iter()
        .map(|s| RrsigFields::parse(s).unwrap().0.key_tag)
        .collect();
    assert!(
        !tags.is_empty() && tags.iter().all(|&t| t == tag_new),
        "{tags:?}"
    );
}
