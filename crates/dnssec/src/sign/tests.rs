use super::*;
use crate::key::PrivateKey;
use crate::testutil::{name, rd};
use shardns_wire::text::base64_decode;

fn b64(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    base64_decode([s.as_bytes()], &mut out).unwrap();
    out
}

#[test]
fn canonical_rdata_lowercases_listed_types_only() {
    let cases = [
        (RType::NS, "NS1.Example.", "ns1.example."),
        (RType::CNAME, "A.B.", "a.b."),
        (
            RType::SOA,
            "NS.EX. Host.EX. 1 2 3 4 5",
            "ns.ex. host.ex. 1 2 3 4 5",
        ),
        (RType::MX, "10 MAIL.Ex.", "10 mail.ex."),
        (RType::SRV, "1 2 3 Target.EX.", "1 2 3 target.ex."),
        (RType::RP, "A.B. C.D.", "a.b. c.d."),
        (RType::DNAME, "X.Y.", "x.y."),
        (RType::PTR, "P.Q.", "p.q."),
        (RType::KX, "5 K.X.", "5 k.x."),
        (RType::AFSDB, "1 A.FS.", "1 a.fs."),
        (RType::MINFO, "R.M. E.M.", "r.m. e.m."),
        (
            RType::NAPTR,
            "100 10 S SIP+D2U !^.*$!sip:x@Y! _Sip._UDP.EX.",
            "100 10 S SIP+D2U !^.*$!sip:x@Y! _sip._udp.ex.",
        ),
        (
            RType::RRSIG,
            "A 13 2 300 20300101000000 20200101000000 1 EXample. AAAA",
            "A 13 2 300 20300101000000 20200101000000 1 example. AAAA",
        ),
        // RFC 6840 §5.1: NSEC's next name keeps its case; unlisted types are untouched.
        (RType::NSEC, "Next.EX. A", "Next.EX. A"),
        (RType::SVCB, "1 Target.EX.", "1 Target.EX."),
        (RType::TXT, "ABC", "ABC"),
    ];
    for (rtype, given, want) in cases {
        let mut out = vec![0xee];
        canonical_rdata(rtype, &rd(rtype, given), &mut out);
        assert_eq!(out[0], 0xee, "appends");
        assert_eq!(out[1..], rd(rtype, want)[..], "{rtype} {given}");
    }
    // Malformed rdata is copied as it is.
    let mut out = Vec::new();
    canonical_rdata(RType::MX, &[0, 1, 0x40, b'A'], &mut out);
    assert_eq!(out, [0, 1, 0x40, b'A']);
    // A6 with prefix length 64: 8 octets of suffix, then the name.
    let mut a6 = vec![64];
    a6.extend_from_slice(&[0xaa; 8]);
    a6.extend_from_slice(b"\x01P\x02EX\x00");
    let mut out = Vec::new();
    canonical_rdata(RType(38), &a6, &mut out);
    assert_eq!(out[9..], *b"\x01p\x02ex\x00");
}

#[test]
fn canonical_order_and_duplicates() {
    let mut c = Canonical::new();
    for t in ["B.ex.", "a.ex.", "b.EX.", "a.ex"] {
        c.push(RType::NS, &rd(RType::NS, t));
    }
    c.finish();
    let got: Vec<&[u8]> = c.iter().collect();
    assert_eq!(
        got,
        [&rd(RType::NS, "a.ex.")[..], &rd(RType::NS, "b.ex.")[..]]
    );
    assert_eq!(c.len(), 2);
    // Shorter sorts first when one is a prefix of the other (RFC 4034 §6.3).
    c.clear();
    assert!(c.is_empty());
    c.push(RType::TXT, b"\x02ab");
    c.push(RType::TXT, b"\x01a");
    c.push(RType::TXT, b"\x01a\x01b");
    c.finish();
    let got: Vec<&[u8]> = c.iter().collect();
    assert_eq!(got, [&b"\x01a"[..], b"\x01a\x01b", b"\x02ab"]);
}

#[test]
fn labels_and_validity() {
    assert_eq!(rrsig_labels(name("*.w.example.").as_ref()), 2);
    assert_eq!(rrsig_labels(name("x.w.example.").as_ref()), 3);
    assert_eq!(rrsig_labels(name("a.*.example.").as_ref()), 3);
    assert_eq!(rrsig_labels(NameRef::ROOT), 0);
    let f = RrsigFields {
        type_covered: RType::A,
        algorithm: 13,
        labels: 1,
        original_ttl: 1,
        expiration: 100,
        inception: 10,
        key_tag: 1,
        signer: NameRef::ROOT,
    };
    assert!(f.valid_at(10) && f.valid_at(100) && f.valid_at(50));
    assert!(!f.valid_at(9) && !f.valid_at(101));
    // Across the 2106 wrap of 32-bit time (RFC 4034 §3.1.5).
    let wrap = RrsigFields {
        inception: u32::MAX - 10,
        expiration: 20,
        ..f
    };
    assert!(wrap.valid_at(u32::MAX) && wrap.valid_at(5) && !wrap.valid_at(30));
}

/// RFC 6605 §6.1 and §6.2, RFC 5702 §6.2: published signatures verify, and nothing that
/// differs from them does.
#[test]
fn rfc_signatures_verify() {
    let vectors = [
        (
            "257 3 13 GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA==",
            "192.0.2.1",
            "A 13 3 3600 20100909100439 20100812100439 55648 example.net. qx6wLYqmh+l9oCKTN6qIc+bw6ya+KJ8oMz0YP107epXAyGmt+3SNruPFKG7tZoLBLlUzGGus7ZwmwWep666VCw==",
        ),
        (
            "257 3 14 xKYaNhWdGOfJ+nPrL8/arkwf2EY3MDJ+SErKivBVSum1w/egsXvSADtNJhyem5RCOpgQ6K8X1DRSEkrbYQ+OB+v8/uX45NBwY8rp65F6Glur8I/mlVNgF6W/qTI37m40",
            "192.0.2.1",
            "A 14 3 3600 20100909102025 20100812102025 10771 example.net. /L5hDKIvGDyI1fcARX3z65qrmPsVz73QD1Mr5CEqOiLP95hxQouuroGCeZOvzFaxsT8Glr74hbavRKayJNuydCuzWTSSPdz7wnqXL5bdcJzusdnI0RSMROxxwGipWcJm",
        ),
        (
            "256 3 10 AwEAAdHoNTOW+et86KuJOWRDp1pndvwb6Y83nSVXXyLA3DLroROUkN6X0O6pnWnjJQujX/AyhqFDxj13tOnD9u/1kTg7cV6rklMrZDtJCQ5PCl/D7QNPsgVsMu1J2Q8gpMpztNFLpPBz1bWXjDtaR7ZQBlZ3PFY12ZTSncorffcGmhOL",
            "192.0.2.91",
            "A 10 3 3600 20300101000000 20000101000000 3740 example.net. tsb4wnjRUDnB1BUi+t6TMTXThjVnG+eCkWqjvvjhzQL1d0YRoOe0CbxrVDYd0xDtsuJRaeUw1ep94PzEWzr0iGYgZBWm/zpq+9fOuagYJRfDqfReKBzMweOLDiNa8iP5g9vMhpuv6OPlvpXwm9Sa9ZXIbNl1MBGk0fthPgxdDLw=",
        ),
    ];
    let owner = name("www.example.net.");
    let upper = name("WWW.Example.NET.");
    for (key, addr, sig) in vectors {
        let key = rd(RType::DNSKEY, key);
        let a = rd(RType::A, addr);
        let sig = rd(RType::RRSIG, sig);
        let check = |owner: &shardns_wire::Name, sig: &[u8], a: &[u8], key: &[u8]| {
            verify_rrsig(sig, owner.as_ref(), Class::IN, RType::A, [a], key)
        };
        assert!(matches!(check(&owner, &sig, &a, &key), Ok(())), "{addr}");
        assert!(
            matches!(check(&upper, &sig, &a, &key), Ok(())),
            "owner case"
        );
        // Duplicates do not count (RFC 4034 §6.3).
        assert!(matches!(
            verify_rrsig(
                &sig,
                owner.as_ref(),
                Class::IN,
                RType::A,
                [&a[..], &a[..]],
                &key
            ),
            Ok(())
        ));
        let other = rd(RType::A, "192.0.2.2");
        assert!(matches!(
            check(&owner, &sig, &other, &key),
            Err(Error::BadSignature)
        ));
        assert!(matches!(
            check(&name("wWw2.example.net."), &sig, &a, &key),
            Err(Error::BadSignature)
        ));
        let mut bad = sig.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(matches!(
            check(&owner, &bad, &a, &key),
            Err(Error::BadSignature)
        ));
        let mut ttl = sig.clone();
        ttl[7] ^= 1;
        assert!(matches!(
            check(&owner, &ttl, &a, &key),
            Err(Error::BadSignature)
        ));
        assert!(matches!(
            verify_rrsig(&sig, owner.as_ref(), Class::IN, RType::AAAA, [&a[..]], &key),
            Err(Error::TypeCovered)
        ));
        assert!(matches!(
            verify_rrsig(&sig, owner.as_ref(), Class(3), RType::A, [&a[..]], &key),
            Err(Error::BadSignature)
        ));
        let mut flags = key.clone();
        flags[1] ^= 1;
        assert!(
            matches!(check(&owner, &sig, &a, &flags), Err(Error::WrongKey)),
            "tag"
        );
        assert!(matches!(
            check(&name("net."), &sig, &a, &key),
            Err(Error::Labels)
        ));
        assert!(matches!(
            check(&owner, &sig[..10], &a, &key),
            Err(Error::MalformedRrsig)
        ));
    }
}

/// RFC 8080 §6.1 with erratum 4935 (Labels 2): Ed25519 is deterministic, so our RRSIG must
/// equal the published one octet for octet.
#[test]
fn rfc8080_signature_is_reproduced() {
    let seed: [u8; 32] = b64("ODIyNjAzODQ2MjgwODAxMjI2NDUxOTAyMDQxNDIyNjI=")
        .try_into()
        .unwrap();
    let public = b64("l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4=");
    let key = SigningKey::from_private(Algorithm::Ed25519, 257, PrivateKey::Ed25519(seed), &public)
        .unwrap();
    let apex = name("example.com.");
    let mut scratch = Scratch::default();
    scratch
        .rrset
        .push(RType::MX, &rd(RType::MX, "10 MAIL.example.com."));
    scratch.rrset.finish();
    let what = RrsetToSign {
        owner: apex.as_ref(),
        class: Class::IN,
        rtype: RType::MX,
        ttl: 3600,
    };
    let got = sign_rrset(
        &key,
        what,
        apex.as_ref(),
        1438207200,
        1440021600,
        &mut scratch,
    )
    .unwrap();
    let want = rd(
        RType::RRSIG,
        "MX 15 2 3600 1440021600 1438207200 3613 example.com. \
         oL9krJun7xfBOIWcGHi7mag5/hdZrKWw15jPGrHpjQeRAvTdszaPD+QLs3fx8A4M3e23mRZ9VrbpMngwcrqNAg==",
    );
    assert_eq!(got, want);
    assert!(matches!(
        verify_rrsig(
            &got,
            apex.as_ref(),
            Class::IN,
            RType::MX,
            [&rd(RType::MX, "10 mail.example.com.")[..]],
            key.dnskey_rdata()
        ),
        Ok(())
    ));
}

#[test]
fn wildcard_signatures_verify_for_expansions() {
    let key = SigningKey::generate(Algorithm::EcdsaP256Sha256, 257).unwrap();
    let apex = name("example.");
    let wild = name("*.w.example.");
    let mut scratch = Scratch::default();
    let a = rd(RType::A, "192.0.2.7");
    scratch.rrset.push(RType::A, &a);
    scratch.rrset.finish();
    let what = RrsetToSign {
        owner: wild.as_ref(),
        class: Class::IN,
        rtype: RType::A,
        ttl: 60,
    };
    let sig = sign_rrset(&key, what, apex.as_ref(), 1, 2, &mut scratch).unwrap();
    let (fields, _) = RrsigFields::parse(&sig).unwrap();
    assert_eq!(fields.labels, 2);
    assert_eq!(fields.key_tag, key.tag());
    assert_eq!((fields.inception, fields.expiration), (1, 2));
    for owner in ["*.w.example.", "x.w.example.", "a.b.w.example."] {
        assert!(
            matches!(
                verify_rrsig(
                    &sig,
                    name(owner).as_ref(),
                    Class::IN,
                    RType::A,
                    [&a[..]],
                    key.dnskey_rdata()
                ),
                Ok(())
            ),
            "{owner}"
        );
    }
    assert!(matches!(
        verify_rrsig(
            &sig,
            name("x.v.example.").as_ref(),
            Class::IN,
            RType::A,
            [&a[..]],
            key.dnskey_rdata()
        ),
        Err(Error::BadSignature)
    ));
}
