use super::*;
use crate::testutil::rd;
use shardns_wire::text::base64_decode;
use shardns_wire::RType;

fn b64(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    base64_decode([s.as_bytes()], &mut out).unwrap();
    out
}

#[test]
fn generated_keys_sign_and_verify() {
    for alg in [
        Algorithm::EcdsaP256Sha256,
        Algorithm::EcdsaP384Sha384,
        Algorithm::Ed25519,
    ] {
        let key = SigningKey::generate(alg, FLAG_ZONE | FLAG_SEP).unwrap();
        assert_eq!(key.flags(), 257);
        assert_eq!(key.algorithm(), alg);
        assert_eq!(key.dnskey_rdata()[2..4], [3, alg.number()]);
        assert_eq!(key.tag(), key_tag(key.dnskey_rdata()));
        let want_len = match alg {
            Algorithm::EcdsaP256Sha256 => 64,
            Algorithm::EcdsaP384Sha384 => 96,
            _ => 32,
        };
        assert_eq!(key.public_key().len(), want_len, "{alg}");
        let sig = key.sign(b"hello").unwrap();
        assert_eq!(
            sig.len(),
            if want_len == 32 { 64 } else { want_len },
            "{alg}"
        );
        assert!(verify(alg, key.public_key(), b"hello", &sig));
        assert!(!verify(alg, key.public_key(), b"hellO", &sig));
        // The private part rebuilds the same key, and only with its own public key.
        let again =
            SigningKey::from_private(alg, 256, key.private().clone(), key.public_key()).unwrap();
        assert_eq!(again.public_key(), key.public_key());
        assert_eq!(again.flags(), 256);
        let other = SigningKey::generate(alg, 256).unwrap();
        assert!(
            SigningKey::from_private(alg, 256, key.private().clone(), other.public_key()).is_err()
        );
        assert_ne!(
            other.public_key(),
            key.public_key(),
            "{alg}: fresh randomness"
        );
    }
    assert!(matches!(
        SigningKey::generate(Algorithm::RsaSha1, 256).unwrap_err(),
        Error::Unsupported(Algorithm::RsaSha1)
    ));
}

#[test]
fn generated_rsa_keys_have_their_size_and_sign() {
    for (alg, bits) in [
        (Algorithm::RsaSha256, None),
        (Algorithm::RsaSha512, Some(3072)),
    ] {
        let key = SigningKey::generate_sized(alg, 257, bits).unwrap();
        let (e, n) = rsa_split(key.public_key()).unwrap();
        assert_eq!(
            n.len() * 8,
            bits.unwrap_or(RSA_DEFAULT_BITS) as usize,
            "{alg}"
        );
        assert_eq!(e, [1, 0, 1], "{alg}: aws-lc-rs's exponent 65537");
        assert_eq!(key.dnskey_rdata()[3], alg.number());
        let sig = key.sign(b"hello").unwrap();
        assert_eq!(sig.len(), n.len());
        assert!(verify(alg, key.public_key(), b"hello", &sig));
        assert!(!verify(alg, key.public_key(), b"hellO", &sig));
        // Signed with its own hash: the other RSA algorithm does not verify it.
        let other = if alg == Algorithm::RsaSha256 {
            Algorithm::RsaSha512
        } else {
            Algorithm::RsaSha256
        };
        assert!(!verify(other, key.public_key(), b"hello", &sig));
        // The private components taken from aws-lc-rs's PKCS #8 rebuild the same key.
        let again =
            SigningKey::from_private(alg, 257, key.private().clone(), key.public_key()).unwrap();
        assert_eq!(again.tag(), key.tag());
    }
    let err = SigningKey::generate_sized(Algorithm::RsaSha256, 257, Some(1024)).unwrap_err();
    assert!(err.to_string().contains("2048, 3072 or 4096"), "{err}");
}

#[test]
fn rfc6605_private_key_loads() {
    // RFC 6605 §6.1: the private key of the example P-256 key, and its public key.
    let private = b64("GU6SnQ/Ou+xC5RumuIUIuJZteXT2z0O/ok1s38Et6mQ=");
    let public = b64(
        "GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA==",
    );
    let key = SigningKey::from_private(
        Algorithm::EcdsaP256Sha256,
        257,
        PrivateKey::Ecdsa(private.clone()),
        &public,
    )
    .unwrap();
    assert_eq!(key.tag(), 55648);
    let mut wrong = public.clone();
    wrong[5] ^= 1;
    assert!(SigningKey::from_private(
        Algorithm::EcdsaP256Sha256,
        257,
        PrivateKey::Ecdsa(private.clone()),
        &wrong
    )
    .is_err());
    assert!(
        SigningKey::from_private(Algorithm::Ed25519, 257, PrivateKey::Ecdsa(private), &public)
            .is_err()
    );
}

#[test]
fn rfc8080_ed25519_is_deterministic() {
    // RFC 8080 §6.1: seed and public key of the first example key.
    let seed: [u8; 32] = b64("ODIyNjAzODQ2MjgwODAxMjI2NDUxOTAyMDQxNDIyNjI=")
        .try_into()
        .unwrap();
    let public = b64("l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4=");
    let key = SigningKey::from_private(Algorithm::Ed25519, 257, PrivateKey::Ed25519(seed), &public)
        .unwrap();
    assert_eq!(key.tag(), 3613);
    assert_eq!(key.sign(b"x").unwrap(), key.sign(b"x").unwrap());
}

#[test]
fn rsa_public_key_field() {
    // RFC 3110 §2: one length octet for exponents up to 255 octets, else 0 and two octets.
    assert_eq!(
        rsa_public_key(&[0, 1, 0, 1], &[0, 0xc1, 0x02]),
        [3, 1, 0, 1, 0xc1, 2]
    );
    let long_e = vec![7u8; 300];
    let field = rsa_public_key(&long_e, &[9, 9]);
    assert_eq!(field[..3], [0, 1, 44]);
    assert_eq!(rsa_split(&field), Some((&long_e[..], &[9u8, 9][..])));
    assert_eq!(
        rsa_split(&[3, 1, 0, 1, 0xc1]),
        Some((&[1u8, 0, 1][..], &[0xc1u8][..]))
    );
    assert_eq!(rsa_split(&[3, 1, 0, 1]), None, "no modulus");
    assert_eq!(rsa_split(&[0, 1]), None);
    assert_eq!(rsa_split(&[]), None);
}

#[test]
fn rfc5702_rsasha512_1024_bits_verifies() {
    // RFC 5702 §6.2: a 1024-bit RSA/SHA-512 key and the signature of an A RRset. The
    // signed data is rebuilt by sign::verify_rrsig; here only the key parsing matters.
    let dnskey = rd(
        RType::DNSKEY,
        "256 3 10 AwEAAdHoNTOW+et86KuJOWRDp1pndvwb6Y83nSVXXyLA3DLroROUkN6X0O6pnWnjJQujX/Ayh\
         qFDxj13tOnD9u/1kTg7cV6rklMrZDtJCQ5PCl/D7QNPsgVsMu1J2Q8gpMpztNFLpPBz1bWXjDtaR7ZQBlZ3\
         PFY12ZTSncorffcGmhOL",
    );
    assert_eq!(key_tag(&dnskey), 3740);
    let (e, n) = rsa_split(&dnskey[4..]).unwrap();
    assert_eq!(e, [1, 0, 1]);
    assert_eq!(n.len(), 128);
}
