use super::*;
use crate::testutil::name;
use std::os::unix::fs::PermissionsExt;

struct Dir(PathBuf);

impl Dir {
    fn new(what: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let p = std::env::temp_dir().join(format!(
            "shardns-keys-{what}-{}-{nanos}",
            std::process::id()
        ));
        Self(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const NOW: u64 = 1_764_000_000;

#[test]
fn generate_save_and_load() {
    let dir = Dir::new("gen");
    let store = KeyStore::create(dir.0.join("sub")).unwrap();
    assert_eq!(
        fs::metadata(store.dir()).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let zone = name("Example.COM.");
    let csk = store
        .generate(&zone, Algorithm::EcdsaP256Sha256, Role::Csk, NOW)
        .unwrap();
    let zsk = store
        .generate(&zone, Algorithm::Ed25519, Role::Zsk, NOW + 1)
        .unwrap();
    let ksk = store
        .generate(&zone, Algorithm::EcdsaP384Sha384, Role::Ksk, NOW + 2)
        .unwrap();
    assert_eq!(csk.stem, format!("Kexample.com.+013+{:05}", csk.meta.tag));
    for k in [&csk, &zsk, &ksk] {
        for ext in ["key", "private"] {
            let p = store.dir().join(format!("{}.{ext}", k.stem));
            let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
    }
    // Another zone's key in the same directory is not loaded.
    store
        .generate(&name("example.net."), Algorithm::Ed25519, Role::Csk, NOW)
        .unwrap();
    // A .key without its .private (a write cut short) is not a key.
    fs::write(store.dir().join("Kexample.com.+013+00002.key"), "junk").unwrap();
    let loaded = store.load(&name("example.com.")).unwrap();
    assert_eq!(loaded.len(), 3);
    for (got, want) in loaded.iter().zip([&csk, &zsk, &ksk]) {
        assert_eq!(got.meta, want.meta);
        assert_eq!(got.key.dnskey_rdata(), want.key.dnskey_rdata());
        assert_eq!(got.key.private(), want.key.private());
        assert_eq!(got.stem, want.stem);
    }
    assert_eq!(loaded[0].key.flags(), 257);
    assert_eq!(loaded[1].key.flags(), 256);
    assert_eq!(loaded[2].meta.role, Role::Ksk);
    assert_eq!(loaded[0].meta.created, NOW);
    // The .key file is a zone-file line BIND's tools read; the first comment gives the role.
    let text = fs::read_to_string(store.dir().join(format!("{}.key", csk.stem))).unwrap();
    assert!(
        text.starts_with("; This is a combined signing key, keyid "),
        "{text}"
    );
    assert!(
        text.contains("\nexample.com. IN DNSKEY 257 3 13 "),
        "{text}"
    );
    let private = fs::read_to_string(store.dir().join(format!("{}.private", csk.stem))).unwrap();
    assert!(private
        .starts_with("Private-key-format: v1.3\nAlgorithm: 13 (ECDSAP256SHA256)\nPrivateKey: "));
    assert!(private.contains(&format!("\nCreated: {}\n", format_time(NOW))));

    // New times are saved and read back.
    let mut retired = loaded.into_iter().nth(1).unwrap();
    retired.meta.inactive = Some(NOW + 100);
    retired.meta.delete = Some(NOW + 200);
    store.save(&retired).unwrap();
    let again = store.load(&zone).unwrap();
    assert_eq!(again[1].meta.inactive, Some(NOW + 100));
    assert_eq!(again[1].meta.delete, Some(NOW + 200));
    assert!(store.dir().read_dir().unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tmp")));
}

#[test]
fn errors_name_the_problem() {
    let dir = Dir::new("err");
    assert!(matches!(KeyStore::open(&dir.0), Err(Error::Missing(_))));
    let store = KeyStore::create(&dir.0).unwrap();
    let file = dir.0.join("plain");
    fs::write(&file, "x").unwrap();
    assert!(matches!(
        KeyStore::open(&file),
        Err(Error::NotADirectory(_))
    ));
    let zone = name("example.com.");
    assert!(store.load(&zone).unwrap().is_empty());

    let key = store
        .generate(&zone, Algorithm::EcdsaP256Sha256, Role::Csk, NOW)
        .unwrap();
    let key_path = dir.0.join(format!("{}.key", key.stem));
    let private_path = dir.0.join(format!("{}.private", key.stem));
    let good_key = fs::read_to_string(&key_path).unwrap();
    let good_private = fs::read_to_string(&private_path).unwrap();
    let load_err = |key_text: &str, private_text: &str| {
        fs::write(&key_path, key_text).unwrap();
        fs::write(&private_path, private_text).unwrap();
        let e = store.load(&zone).unwrap_err();
        (e.to_string(), e)
    };

    // A key of another zone under this zone's file name.
    let other = good_key.replace("\nexample.com. IN", "\nexample.org. IN");
    let (msg, e) = load_err(&other, &good_private);
    assert!(matches!(e, Error::WrongZone { .. }), "{msg}");
    assert!(
        msg.ends_with("a key for example.org., not for example.com."),
        "{msg}"
    );

    // Corrupt files.
    for (k, p, want) in [
        (&good_key[..], "garbage\n", "not `Field: value`"),
        (&good_key[..], "Private-key-format: v2.0\n", "not v1.x"),
        (
            &good_key[..],
            &good_private.replace("PrivateKey: ", "PrivateKey: !"),
            "PrivateKey: bad base64",
        ),
        (
            &good_key[..],
            &good_private.replace("Algorithm: 13", "Algorithm: 15"),
            "algorithm ED25519 but the .key file says ECDSAP256SHA256",
        ),
        (
            &good_key[..],
            &good_private.replace("Created: ", "Created: 2026"),
            "bad Created time",
        ),
        ("; nothing\n", &good_private[..], "no DNSKEY record"),
        (
            &good_key.replace("DNSKEY 257", "DNSKEY 1"),
            &good_private[..],
            "not a DNSSEC zone key",
        ),
        (
            &good_key.replace("DNSKEY 257 3 13", "DNSKEY 257 3 5"),
            &good_private[..],
            "algorithm 5 cannot sign",
        ),
    ] {
        let (msg, e) = load_err(k, p);
        assert!(matches!(e, Error::Corrupt { .. }), "{msg}");
        assert!(msg.contains(want), "{msg} (want {want})");
        assert!(msg.contains(&key.stem), "{msg} names the file");
    }
    // The private key of another key: aws-lc-rs refuses the pair.
    let other = store
        .generate(
            &name("example.net."),
            Algorithm::EcdsaP256Sha256,
            Role::Csk,
            NOW,
        )
        .unwrap();
    let other_private = fs::read_to_string(dir.0.join(format!("{}.private", other.stem))).unwrap();
    let (msg, e) = load_err(&good_key, &other_private);
    assert!(matches!(e, Error::KeyFile(..)), "{msg}");
    // A file whose tag is not its name's.
    fs::write(&key_path, &good_key).unwrap();
    fs::write(&private_path, &good_private).unwrap();
    let wrong_key = dir.0.join("Kexample.com.+013+00001.key");
    fs::copy(&key_path, &wrong_key).unwrap();
    fs::rename(&private_path, dir.0.join("Kexample.com.+013+00001.private")).unwrap();
    let e = store.load(&zone).unwrap_err();
    assert!(e.to_string().contains("make the file name"), "{e}");
    // A .private without its .key.
    fs::remove_file(&wrong_key).unwrap();
    assert!(matches!(store.load(&zone), Err(Error::Io(..))));
}

#[test]
fn times_and_roles_choose_the_signers() {
    let dir = Dir::new("roles");
    let store = KeyStore::create(&dir.0).unwrap();
    let zone = name("example.com.");
    let mut ksk = store
        .generate(&zone, Algorithm::Ed25519, Role::Ksk, NOW)
        .unwrap();
    let mut zsk = store
        .generate(&zone, Algorithm::Ed25519, Role::Zsk, NOW)
        .unwrap();
    let mut next = store
        .generate(&zone, Algorithm::Ed25519, Role::Zsk, NOW)
        .unwrap();
    next.meta.publish = Some(NOW + 10);
    next.meta.activate = Some(NOW + 20);
    zsk.meta.inactive = Some(NOW + 20);
    zsk.meta.delete = Some(NOW + 30);
    let keys = |ks: &[&StoredKey], now| -> Vec<(u16, bool, bool, bool)> {
        let owned: Vec<StoredKey> = ks
            .iter()
            .map(|k| StoredKey {
                meta: k.meta.clone(),
                key: SigningKey::from_private(
                    k.key.algorithm(),
                    k.key.flags(),
                    k.key.private().clone(),
                    k.key.public_key(),
                )
                .unwrap(),
                stem: k.stem.clone(),
            })
            .collect();
        zone_keys(&owned, now)
            .iter()
            .map(|z| (z.key.tag(), z.signs_keys, z.signs_zone, z.cds))
            .collect()
    };
    let (k, z, n) = (ksk.meta.tag, zsk.meta.tag, next.meta.tag);
    assert_eq!(
        keys(&[&ksk, &zsk, &next], NOW),
        [(k, true, false, true), (z, false, true, false)]
    );
    assert_eq!(
        keys(&[&ksk, &zsk, &next], NOW + 10),
        [
            (k, true, false, true),
            (z, false, true, false),
            (n, false, false, false)
        ]
    );
    assert_eq!(
        keys(&[&ksk, &zsk, &next], NOW + 20),
        [
            (k, true, false, true),
            (z, false, false, false),
            (n, false, true, false)
        ]
    );
    assert_eq!(
        keys(&[&ksk, &zsk, &next], NOW + 30),
        [(k, true, false, true), (n, false, true, false)]
    );
    // A KSK alone signs everything, as dnssec-signzone does; so does a KSK whose
    // algorithm has no ZSK (an algorithm rollover's new KSK).
    assert_eq!(keys(&[&ksk], NOW), [(k, true, true, true)]);
    let p256 = store
        .generate(&zone, Algorithm::EcdsaP256Sha256, Role::Ksk, NOW)
        .unwrap();
    assert_eq!(
        keys(&[&ksk, &zsk, &p256], NOW),
        [
            (k, true, false, true),
            (z, false, true, false),
            (p256.meta.tag, true, true, true)
        ]
    );
    // Not yet published, or never activated: nothing.
    ksk.meta.activate = None;
    assert_eq!(keys(&[&ksk], NOW), [(k, false, false, false)]);
    ksk.meta.publish = None;
    assert_eq!(keys(&[&ksk], NOW), []);
}

#[test]
fn time_format() {
    // RFC 8080 §6's RRSIG times, the epoch, a leap day, and the end of 32-bit time.
    for (t, s) in [
        (0, "19700101000000"),
        (1_438_207_200, "20150729220000"),
        (1_440_021_600, "20150819220000"),
        (951_782_400, "20000229000000"),
        (4_294_967_295, "21060207062815"),
        (4_294_967_296, "21060207062816"),
    ] {
        assert_eq!(format_time(t), s);
        assert_eq!(parse_time(s), Some(t), "{s}");
    }
    for bad in [
        "2015072922000",
        "20150230000000",
        "19690101000000",
        "20151301000000",
        "2015072924000x",
        "20150729240000",
    ] {
        assert_eq!(parse_time(bad), None, "{bad}");
    }
    // Agrees with wire's RRSIG time printing over 32 bits.
    for t in (0..u32::MAX).step_by(7_777_777) {
        let mut rrsig = vec![0, 1, 13, 1, 0, 0, 0, 1];
        rrsig.extend_from_slice(&t.to_be_bytes());
        rrsig.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0xaa]);
        let mut text = String::new();
        rdata::fmt_text(RType::RRSIG, &rrsig, &mut text).unwrap();
        assert_eq!(text.split(' ').nth(4), Some(&format_time(u64::from(t))[..]));
    }
}

/// The rollover times (BIND's `DSPublish`, `SyncPublish`, `SyncDelete`) are written and
/// read back; CDS follow them, and a key waiting for its DS has CDS but no DNSKEY.
#[test]
fn rollover_times_round_trip_and_cds() {
    let dir = Dir::new("sync");
    let store = KeyStore::create(&dir.0).unwrap();
    let zone = name("example.com.");
    let mut k = store
        .make(&zone, Algorithm::EcdsaP256Sha256, Role::Csk, NOW)
        .unwrap();
    k.meta.publish = None;
    k.meta.activate = None;
    k.meta.sync_publish = Some(NOW + 1);
    k.meta.sync_delete = Some(NOW + 9);
    k.meta.ds_publish = Some(NOW + 2);
    store.save_new(&k).unwrap();
    assert!(store.save_new(&k).is_err(), "a second key of the same tag");
    let private = fs::read_to_string(store.dir().join(format!("{}.private", k.stem))).unwrap();
    for field in ["DSPublish", "SyncPublish", "SyncDelete"] {
        assert!(private.contains(&format!("\n{field}: ")), "{private}");
    }
    let back = store.load(&zone).unwrap();
    assert_eq!(back[0].meta, k.meta);
    // Not published: no DNSKEY, so no CDS either (RFC 7344 §4.1).
    assert!(zone_keys(&back, NOW + 1).is_empty());
    assert!(zone_keys(&back, NOW).is_empty());
    assert!(zone_keys(&back, NOW + 9).is_empty());
}

/// Key files are named per zone: `a/b.` and `a_b.` (which earlier versions wrote as one
/// name, the first outside the directory), the root and `root.` each load their own keys;
/// files of an earlier version are renamed when they are the zone's.
#[test]
fn key_file_names_are_one_per_zone_and_stay_in_the_directory() {
    let dir = Dir::new("names");
    let store = KeyStore::create(&dir.0).unwrap();
    let zones = [
        name("a/b.example."),
        name("A_B.example."),
        name("."),
        name("root."),
        name("x\\.y.example."),
        name("x.y.example."),
    ];
    let mut tags = Vec::new();
    for z in &zones {
        let k = store
            .generate(z, Algorithm::EcdsaP256Sha256, Role::Csk, NOW)
            .unwrap();
        assert!(!k.stem.contains('/'), "{}", k.stem);
        tags.push(k.meta.tag);
    }
    assert_eq!(
        stem(name(".").as_ref(), Algorithm::EcdsaP256Sha256, 7),
        "K.+013+00007"
    );
    assert_eq!(
        stem(name("Example.COM.").as_ref(), Algorithm::EcdsaP256Sha256, 7),
        "Kexample.com.+013+00007"
    );
    for (z, tag) in zones.iter().zip(&tags) {
        let keys = store.load(z).unwrap();
        assert_eq!(keys.len(), 1, "{z}");
        assert_eq!(keys[0].meta.tag, *tag, "{z}");
    }
    // Only files in the directory itself.
    for e in fs::read_dir(&dir.0).unwrap() {
        assert!(e.unwrap().file_type().unwrap().is_file());
    }
    // The key of `x\.y.example.` as an earlier version named it: taken over.
    let z = &zones[4];
    let k = &store.load(z).unwrap()[0];
    for ext in ["key", "private"] {
        let old = format!("Kx\\.y.example.+013+{:05}.{ext}", k.meta.tag);
        fs::rename(dir.0.join(format!("{}.{ext}", k.stem)), dir.0.join(old)).unwrap();
    }
    let again = store.load(z).unwrap();
    assert_eq!((again.len(), again[0].meta.tag), (1, k.meta.tag));
    assert!(dir.0.join(format!("{}.private", k.stem)).exists());
    assert_eq!(store.load(&zones[5]).unwrap()[0].meta.tag, tags[5]);
}
