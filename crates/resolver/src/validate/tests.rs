//! Trust-anchor files and the small parsers of `denial`.

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
