use super::ci::lower8;
use super::*;

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

#[test]
fn text_round_trip_and_escapes() {
    assert_eq!(n("www.Example.COM.").to_string(), "www.Example.COM.");
    assert_eq!(n(".").as_wire(), &[0]);
    assert_eq!(n("a\\.b.c.").as_ref().label_count(), 2);
    assert_eq!(n("a\\.b.c.").to_string(), "a\\.b.c.");
    assert_eq!(n("\\065\\032x.").as_ref().first_label(), b"A x");
    assert_eq!(n("\\065\\032x.").to_string(), "A\\032x.");
    let origin = n("example.com.");
    let rel = Name::from_text("www", Some(origin.as_ref())).unwrap();
    assert_eq!(rel, n("www.example.com."));
    assert_eq!(
        Name::from_text("www", None),
        Err(Error::Name(NameKind::Relative))
    );
    assert_eq!(
        Name::from_text("a..b.", None),
        Err(Error::Name(NameKind::EmptyLabel))
    );
    assert_eq!(
        Name::from_text("a\\256.", None),
        Err(Error::Name(NameKind::BadEscape))
    );
}

#[test]
fn length_limits() {
    let l63 = "a".repeat(63);
    let l64 = "a".repeat(64);
    assert!(Name::from_text(&format!("{l63}."), None).is_ok());
    assert_eq!(
        Name::from_text(&format!("{l64}."), None),
        Err(Error::Name(NameKind::LabelTooLong))
    );
    // 4 labels of 63 = 256 octets with length bytes and root: too long.
    let too_long = format!("{l63}.{l63}.{l63}.{l63}.");
    assert_eq!(
        Name::from_text(&too_long, None),
        Err(Error::Name(NameKind::NameTooLong))
    );
    let max = format!("{l63}.{l63}.{l63}.{}.", "a".repeat(61));
    assert_eq!(Name::from_text(&max, None).unwrap().as_wire().len(), 255);
}

#[test]
fn case_insensitive_eq_and_hash() {
    let a = n("WwW.ExAmPlE.CoM.");
    let b = n("www.example.com.");
    assert_eq!(a, b);
    assert_eq!(a.as_ref().hash_ci(), b.as_ref().hash_ci());
    assert_ne!(
        n("www.example.com.").as_ref().hash_ci(),
        n("wwx.example.com.").as_ref().hash_ci()
    );
    // Bytes just outside A-Z must not fold.
    assert!(!eq_ci(b"@", b"`"));
    assert!(!eq_ci(b"[", b"{"));
    for b in 0u8..=255 {
        let x = u64::from_le_bytes([b; 8]);
        assert_eq!(lower8(x), u64::from_le_bytes([lower(b); 8]), "byte {b}");
    }
}

#[test]
fn canonical_order_rfc4034() {
    // The example list of RFC 4034 §6.1, in order.
    let names = [
        "example.",
        "a.example.",
        "yljkjljk.a.example.",
        "Z.a.example.",
        "zABC.a.EXAMPLE.",
        "z.example.",
        "\\001.z.example.",
        "*.z.example.",
        "\\200.z.example.",
    ];
    for w in names.windows(2) {
        assert_eq!(n(w[0]).cmp(&n(w[1])), Ordering::Less, "{} < {}", w[0], w[1]);
    }
}

#[test]
fn ancestry() {
    let a = n("a.b.example.");
    assert!(a.as_ref().ends_with(&n("EXAMPLE.").as_ref()));
    assert_eq!(a.as_ref().strip_suffix(&n("example.").as_ref()), Some(2));
    assert!(!a.as_ref().ends_with(&n("b.example2.").as_ref()));
    assert!(!n("xample.").as_ref().ends_with(&n("example.").as_ref()));
    assert_eq!(a.as_ref().suffix(1).to_string(), "example.");
    assert!(n("*.example.").as_ref().is_wildcard());
}

#[test]
fn decompression_and_loops() {
    // Header-less message: "example.com." at 0, then "www" + pointer to 0 at 13.
    let mut msg = vec![7];
    msg.extend_from_slice(b"example");
    msg.extend_from_slice(&[3, b'c', b'o', b'm', 0]);
    msg.extend_from_slice(&[3, b'w', b'w', b'w', 0xc0, 0]);
    let mut b = NameBuf::new();
    assert_eq!(b.read_compressed(&msg, 13).unwrap(), 19);
    assert_eq!(b.as_ref().to_string(), "www.example.com.");
    // Pointer to itself and forward pointers are rejected.
    assert_eq!(
        b.read_compressed(&[0xc0, 0], 0),
        Err(Error::Name(NameKind::BadPointer))
    );
    assert_eq!(
        b.read_compressed(&[0xc0, 2, 0], 0),
        Err(Error::Name(NameKind::BadPointer))
    );
    // Two pointers pointing at each other.
    assert_eq!(
        b.read_compressed(&[0xc0, 2, 0xc0, 0], 2),
        Err(Error::Name(NameKind::BadPointer))
    );
    assert_eq!(
        b.read_compressed(&[5, b'a'], 0),
        Err(Error::Name(NameKind::ShortInput))
    );
    assert_eq!(
        b.read_compressed(&[0x40], 0),
        Err(Error::Name(NameKind::BadLabelType))
    );
}

/// A stored name read without the walk is the name `from_wire` reads; bytes that are no
/// name are caught by debug builds.
#[test]
fn from_validated_is_from_wire() {
    for text in [
        ".",
        "example.",
        "0P9mhaveqvm6t7vbl5lop2u3t2rp3tom.Example.Test.",
        "*.a.b.c.",
    ] {
        let name = Name::from_text(text, None).unwrap();
        let read = NameRef::from_validated(name.as_wire());
        assert_eq!(
            read.as_wire(),
            NameRef::from_wire(name.as_wire()).unwrap().as_wire()
        );
        assert!(read.eq_ci(&name.as_ref()));
        assert_eq!(read.label_count(), name.as_ref().label_count());
    }
    if cfg!(debug_assertions) {
        for bad in [&[3u8, b'a', b'b'][..], &[1, b'a', 0, 0], &[0xc0, 12]] {
            assert!(
                std::panic::catch_unwind(|| NameRef::from_validated(bad)).is_err(),
                "{bad:02x?}"
            );
        }
    }
}
