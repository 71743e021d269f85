use super::*;
use crate::key::{verify, SigningKey};
use crate::keys::{KeyStore, Role};
use crate::testutil::{name, softhsm};

fn token() -> Option<Arc<Token>> {
    let (module, uri) = softhsm()?;
    Some(Token::open(&module, &uri).unwrap())
}

#[test]
fn keys_made_on_the_token_sign_there_and_stay_there() {
    let Some(token) = token() else { return };
    for alg in [
        Algorithm::EcdsaP256Sha256,
        Algorithm::EcdsaP384Sha384,
        Algorithm::Ed25519,
        Algorithm::RsaSha256,
    ] {
        let key = SigningKey::generate_on(&token, alg, 257, None, "unit test").unwrap();
        let sig = key.sign(b"some rrset").unwrap();
        assert!(verify(alg, key.public_key(), b"some rrset", &sig), "{alg}");
        assert!(
            !verify(alg, key.public_key(), b"another rrset", &sig),
            "{alg}"
        );
        let crate::key::PrivateKey::Token(id) = key.private() else {
            panic!("{alg}: not a token key")
        };
        // Found again by its CKA_ID: the same DNSKEY.
        let again = SigningKey::from_token(&token, alg, 257, id, Some(key.public_key())).unwrap();
        assert_eq!(again.tag(), key.tag(), "{alg}");
        // The private key is sensitive and was never extractable.
        let p = token.protection(id).unwrap();
        assert!(
            p.sensitive && !p.extractable && p.never_extractable,
            "{alg}: {p:?}"
        );
        // Another key's public key is refused.
        let other = SigningKey::generate(alg, 257).unwrap();
        assert!(SigningKey::from_token(&token, alg, 257, id, Some(other.public_key())).is_err());
    }
}

#[test]
fn signs_from_many_threads() {
    let Some(token) = token() else { return };
    let key = SigningKey::generate_on(&token, Algorithm::EcdsaP256Sha256, 256, None, "t").unwrap();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let key = &key;
            s.spawn(move || {
                for i in 0..50u8 {
                    let msg = [t, i];
                    let sig = key.sign(&msg).unwrap();
                    assert!(verify(key.algorithm(), key.public_key(), &msg, &sig));
                }
            });
        }
    });
    // Each thread had its own session; they are back in the pool, at most one per thread.
    let pooled = token.sessions.lock().unwrap().len();
    assert!((1..=5).contains(&pooled), "{pooled} sessions");
}

#[test]
fn a_wrong_pin_or_token_is_said() {
    let Some((module, _)) = softhsm() else { return };
    let e = Token::open(&module, "pkcs11:token=pin;pin-value=0000").unwrap_err();
    assert!(e.to_string().ends_with("wrong PIN"), "{e}");
    // Not tried again with the same PIN; another PIN is.
    let e = Token::open(&module, "pkcs11:token=pin;pin-value=0000").unwrap_err();
    assert!(e.to_string().contains("not tried again"), "{e}");
    let e = Token::open(&module, "pkcs11:token=pin;pin-value=0001").unwrap_err();
    assert!(e.to_string().ends_with("wrong PIN"), "{e}");
    Token::open(&module, "pkcs11:token=pin;pin-value=1234").unwrap();
    let e = Token::open(&module, "pkcs11:token=nosuch;pin-value=1234").unwrap_err();
    assert!(e.to_string().contains("no such token"), "{e}");
    let e = Token::open(Path::new("/nonexistent/libpkcs11.so"), "pkcs11:token=unit").unwrap_err();
    assert!(e.to_string().contains("cannot load"), "{e}");
}

#[test]
fn a_key_gone_from_the_token_fails_signing_and_loading() {
    let Some(token) = token() else { return };
    let dir = std::env::temp_dir().join(format!("shardns-p11-gone-{}", std::process::id()));
    let store = KeyStore::create(&dir)
        .unwrap()
        .with_token(Some(token.clone()));
    let zone = name("gone.test.");
    let key = store
        .generate(&zone, Algorithm::EcdsaP256Sha256, Role::Csk, 1000)
        .unwrap();
    let crate::key::PrivateKey::Token(id) = key.key.private() else {
        panic!("not on the token")
    };
    let handle = token.object(ObjectClass::PRIVATE_KEY, id).unwrap();
    token
        .with_session(|s| s.destroy_object(handle).map_err(ck("destroy")))
        .unwrap();
    assert!(key.key.sign(b"x").is_err());
    let e = store.load(&zone).unwrap_err().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.contains("no private key"), "{e}");
}

#[test]
fn the_key_directory_keeps_where_the_key_is_not_the_key() {
    let Some(token) = token() else { return };
    let dir = std::env::temp_dir().join(format!("shardns-p11-store-{}", std::process::id()));
    let store = KeyStore::create(&dir).unwrap().with_token(Some(token));
    let zone = name("hsm.test.");
    let made = store
        .generate(&zone, Algorithm::Ed25519, Role::Csk, 1000)
        .unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let stem = &made.stem;
    assert_eq!(files, [format!("{stem}.key"), format!("{stem}.pkcs11")]);
    let text = std::fs::read_to_string(dir.join(format!("{stem}.pkcs11"))).unwrap();
    assert!(
        text.contains("Pkcs11Id: ") && !text.contains("PrivateKey"),
        "{text}"
    );
    let loaded = store.load(&zone).unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].meta, made.meta);
    assert_eq!(loaded[0].key.dnskey_rdata(), made.key.dnskey_rdata());
    // Without the token its DNSKEY and times are there, and signing says why not.
    let detached = KeyStore::open(&dir).unwrap().load(&zone);
    let _ = std::fs::remove_dir_all(&dir);
    let detached = detached.unwrap();
    assert!(detached[0].key.is_detached() && !loaded[0].key.is_detached());
    assert_eq!(detached[0].meta, made.meta);
    assert_eq!(detached[0].key.dnskey_rdata(), made.key.dnskey_rdata());
    let e = detached[0].key.sign(b"x").unwrap_err().to_string();
    assert!(e.contains("PKCS#11 token"), "{e}");
}
