//! Trust-anchor files (and which are usable), the small parsers of `denial`, and signature
//! validity times (serial-number arithmetic).

use super::*;

#[test]
fn root_anchors_are_built_in() {
    let a = TrustAnchors::root();
    assert_eq!(a.ds.len(), 2);
    let tags: Vec<u16> =
        a.ds.iter()
            .map(|(_, rd)| u16::from_be_bytes([rd[0], rd[1]]))
            .collect();
    assert_eq!(tags, [20326, 38696]);
    assert!(a
        .ds
        .iter()
        .all(|(n, rd)| n.as_ref().is_root() && rd[2] == 8 && rd[3] == 2));
}

#[test]
fn anchor_files_take_ds_and_dnskey_records() {
    let a = TrustAnchors::parse(
        "; comment\n$TTL 3600\nexample. 3600 IN DS 12345 13 2 \
         AABBCCDDEEFF00112233445566778899AABBCCDDEEFF00112233445566778899\n\
         example. IN DNSKEY 257 3 13 ( mdsswUyr3DPW132mOi8V9xESWE8jTo0d\n\
         xCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ== ) ; KSK\n",
    )
    .unwrap();
    assert_eq!((a.ds.len(), a.dnskey.len()), (1, 1));
    assert_eq!(a.dnskey[0].1[..4], [1, 1, 3, 13]);
    let n: shardns_wire::Name = "www.example.".parse().unwrap();
    assert_eq!(a.closest(n.as_ref()).unwrap().to_string(), "example.");
    for bad in [
        "",
        "example. A 192.0.2.1\n",
        "example DS 1 13 2 AA\n",
        "example. DS 1 13\n",
        "example. DNSKEY ( 257 3 13 AA\n",
    ] {
        assert!(TrustAnchors::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn security_combines_to_the_weakest() {
    use Security::*;
    assert_eq!(Secure.and(Secure), Secure);
    assert_eq!(Secure.and(Insecure), Insecure);
    assert_eq!(Insecure.and(Bogus), Bogus);
    assert_eq!(Bogus.and(Secure), Bogus);
    assert_eq!(Secure.and(Indeterminate), Indeterminate);
    // It fits in the cached set's padding.
    assert_eq!(size_of::<Security>(), 1);
}

#[test]
fn an_nsec_whose_next_name_is_below_proves_an_empty_non_terminal_not_nxdomain() {
    let name = |s: &str| -> shardns_wire::Name { s.parse().unwrap() };
    let (owner, next, qname) = (name("cname-nx.z."), name("a.b.ent.z."), name("b.ent.z."));
    // next name a.b.ent.z., types CNAME RRSIG NSEC
    let mut rdata = next.as_wire().to_vec();
    rdata.extend_from_slice(&[0, 6, 0x04, 0, 0, 0, 0, 0x03]);
    let rrs = [DenialRr {
        owner: owner.as_ref(),
        rtype: shardns_wire::RType::NSEC,
        rdata: &rdata,
    }];
    let limits = Limits {
        unix_now: 0,
        skew_min: 0,
        skew_max: 0,
        max_validations: 0,
        max_key_collisions: 0,
        max_nsec3_hashes: 0,
        max_nsec3_iterations: 0,
    };
    let mut budget = Budget::default();
    let z = name("z.");
    let check = |kind, budget: &mut Budget| {
        check_denial(&rrs, qname.as_ref(), kind, z.as_ref(), &limits, budget)
    };
    assert_eq!(check(DenialKind::NxDomain, &mut budget), Denial::Missing);
    assert_eq!(
        check(DenialKind::NoData(shardns_wire::RType::TXT), &mut budget),
        Denial::Proven { delegation: false }
    );
}

#[test]
fn signature_validity_is_serial_number_arithmetic_across_the_wrap() {
    use shardns_dnssec::sign::{sign_rrset, RrsetToSign, Scratch};
    use shardns_dnssec::{Algorithm, SigningKey};
    use shardns_wire::{Class, RType};
    const DAY: u32 = 86_400;
    let key = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
    let zone: shardns_wire::Name = "example.".parse().unwrap();
    let owner: shardns_wire::Name = "www.example.".parse().unwrap();
    let a = [192u8, 0, 2, 1];
    // Valid from a day before 2106-02-07 (2^32 s) to a day after: the expiration wraps.
    let inception = u32::MAX - DAY;
    let expiration = inception.wrapping_add(2 * DAY);
    assert!(expiration < inception);
    let mut scratch = Scratch::default();
    scratch.rrset.push(RType::A, &a);
    scratch.rrset.finish();
    let what = RrsetToSign {
        owner: owner.as_ref(),
        class: Class::IN,
        rtype: RType::A,
        ttl: 300,
    };
    let sig = sign_rrset(
        &key,
        what,
        zone.as_ref(),
        inception,
        expiration,
        &mut scratch,
    )
    .unwrap();
    let keys = [key.dnskey_rdata().to_vec()];
    let at = |now: u32| {
        let limits = Limits {
            unix_now: now,
            skew_min: 60,
            skew_max: 60,
            max_validations: 8,
            max_key_collisions: 4,
            max_nsec3_hashes: 0,
            max_nsec3_iterations: 0,
        };
        let sigs = std::iter::once(&sig[..]);
        verify_rrset(
            owner.as_ref(),
            RType::A,
            &[&a[..]],
            sigs,
            zone.as_ref(),
            &keys,
            &limits,
            &mut Budget::default(),
        )
        .map(|v| v.ttl_cap)
        .map_err(|e| e.0)
    };
    // Just after the wrap: valid, and cacheable until the (wrapped) expiration at most.
    assert_eq!(at(3600), Ok(300));
    assert_eq!(at(expiration - 100), Ok(100));
    assert_eq!(at(u32::MAX - 3600), Ok(300));
    assert_eq!(
        at(inception - 10 * DAY),
        Err(crate::Ede::SIGNATURE_NOT_YET_VALID)
    );
    assert_eq!(
        at(expiration + 10 * DAY),
        Err(crate::Ede::SIGNATURE_EXPIRED)
    );
}

#[test]
fn anchors_are_usable_only_with_an_algorithm_and_digest_we_validate() {
    let name = |s: &str| -> shardns_wire::Name { s.parse().unwrap() };
    let digest = "AABBCCDDEEFF00112233445566778899AABBCCDDEEFF00112233445566778899";
    let usable = |text: &str| {
        TrustAnchors::parse(text)
            .unwrap()
            .usable(name("example.").as_ref())
    };
    for alg in [5, 7, 8, 10, 13, 14, 15] {
        assert!(usable(&format!("example. DS 1 {alg} 2 {digest}")), "{alg}");
    }
    for alg in [1, 3, 6, 12, 16, 253, 254, 200] {
        assert!(!usable(&format!("example. DS 1 {alg} 2 {digest}")), "{alg}");
    }
    assert!(usable(&format!(
        "example. DS 1 13 4 {digest}{}",
        &digest[..32]
    )));
    assert!(!usable(&format!("example. DS 1 13 3 {digest}")));
    assert!(!usable(&format!("example. DS 1 13 99 {digest}")));
    assert!(usable(&format!(
        "example. DS 1 253 2 {digest}\nexample. DS 2 13 2 {digest}"
    )));
    assert!(usable("example. DNSKEY 257 3 13 AwEAAQ=="));
    assert!(!usable("example. DNSKEY 257 3 253 AwEAAQ=="));
    // Another zone's anchor does not count.
    assert!(!usable(&format!("other. DS 1 13 2 {digest}")));
}
