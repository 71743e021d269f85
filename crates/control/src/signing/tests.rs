//! Signing on load: keys made or loaded, the serial rule, the state file, and the errors
//! that keep a zone's previous version.

use super::*;
use crate::zones::{ZoneLibrary, ZoneSource, ZoneSpec};
use shardns_dnssec::{Algorithm, CdsParams, Denial, KeyStore, Nsec3Params, Policy, Role};
use shardns_wire::{RType, Record};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let p = std::env::temp_dir().join(format!(
            "shardns-signing-{tag}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const NOW: u64 = 1_750_000_000;

fn zone_text(serial: u32) -> String {
    format!(
        "$TTL 300\n@ SOA ns.z.test. admin.z.test. {serial} 3600 600 86400 300\n\
         @ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\nsub NS ns.other.test.\n\
         ; a pre-signed leftover: dropped and made anew\n\
         www NSEC z.test. A RRSIG NSEC\n"
    )
}

fn spec(key_dir: &Path) -> SignSpec {
    SignSpec {
        key_dir: key_dir.to_path_buf(),
        algorithm: Algorithm::EcdsaP256Sha256,
        denial: Denial::Nsec,
        policy: Policy::default(),
        roll: RollSpec::default(),
        cds: CdsParams {
            publish: shardns_dnssec::CdsPublish::Always,
            ..CdsParams::default()
        },
        keys: KeyPolicy::default(),
        dnskey_ttl: None,
        keystore: None,
        offline_ksk: false,
        dnskey_management: Default::default(),
    }
}

fn scan(text: &str) -> Scanned {
    let opts = ScanOptions::new("z.test.".parse().unwrap());
    shardns_zone::scan::scan_text(text.as_bytes(), Path::new("z.zone"), &opts).unwrap()
}

fn apex() -> Name {
    "z.test.".parse().unwrap()
}

#[test]
fn serial_arithmetic() {
    assert!(serial_gt(2, 1));
    assert!(!serial_gt(1, 1));
    assert!(!serial_gt(1, 2));
    assert!(serial_gt(0, u32::MAX), "wraps (RFC 1982)");
    assert!(!serial_gt(u32::MAX, 0));
}

#[test]
fn a_zone_without_keys_gets_a_csk_and_keeps_its_serial_the_first_time() {
    let dir = Dir::new("first");
    let signed = sign_scanned(&apex(), scan(&zone_text(7)), &spec(&dir.0), NOW, 1).unwrap();
    let records = signed.records.to_records();
    let soa = records.iter().find(|r| r.rtype == RType::SOA).unwrap();
    assert_eq!(soa_serial(&soa.rdata), Some(7));
    let dnskeys: Vec<_> = records
        .iter()
        .filter(|r| r.rtype == RType::DNSKEY)
        .collect();
    assert_eq!(dnskeys.len(), 1);
    assert_eq!(
        &dnskeys[0].rdata[..4],
        &[1, 1, 3, 13],
        "flags 257, ECDSA P-256"
    );
    for t in [RType::CDS, RType::CDNSKEY, RType::NSEC, RType::RRSIG] {
        assert!(records.iter().any(|r| r.rtype == t), "{t} missing");
    }
    // The leftover NSEC of www was replaced by the chain's (www -> z.test.'s next).
    let www_nsec = records
        .iter()
        .filter(|r| r.rtype == RType::NSEC && r.owner.to_string() == "www.z.test.")
        .count();
    assert_eq!(www_nsec, 1);
    assert_eq!(signed.refresh_at, NOW + 7 * 86_400);
    // Key files and the state are the owner's alone.
    let mut files = 0;
    for e in fs::read_dir(&dir.0).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            files += 1;
            assert_eq!(e.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
    assert_eq!(files, 2, ".key and .private");
    assert_eq!(StateFile::new(&dir.0, &apex()).read().unwrap(), Some(7));
    let state = dir.0.join("state/z.test.state");
    assert_eq!(
        fs::metadata(state).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn the_serial_moves_on_every_signing_and_a_greater_file_serial_wins() {
    let dir = Dir::new("serial");
    let serial = |text: &str, now| {
        let signed = sign_scanned(&apex(), scan(text), &spec(&dir.0), now, 1).unwrap();
        let records = signed.records.to_records();
        let soa = records.iter().find(|r| r.rtype == RType::SOA).unwrap();
        soa_serial(&soa.rdata).unwrap()
    };
    assert_eq!(serial(&zone_text(10), NOW), 10);
    // Same file read again before the signatures are due (a restart): the kept version.
    assert_eq!(serial(&zone_text(10), NOW + 1), 10);
    // Same file, due (a refresh): last + 1, with the same key.
    let due = NOW + 7 * 86_400;
    assert_eq!(serial(&zone_text(10), due), 11);
    assert_eq!(serial(&zone_text(5), due + 2), 12);
    assert_eq!(serial(&zone_text(100), due + 3), 100);
    let keys = KeyStore::open(&dir.0).unwrap().load(&apex()).unwrap();
    assert_eq!(keys.len(), 1, "the first key is kept, not made again");
}

#[test]
fn nsec3_with_opt_out_and_ed25519() {
    let dir = Dir::new("nsec3");
    let mut s = spec(&dir.0);
    s.algorithm = Algorithm::Ed25519;
    s.denial = Denial::Nsec3 {
        params: Nsec3Params::default(),
        opt_out: true,
    };
    let signed = sign_scanned(&apex(), scan(&zone_text(1)), &s, NOW, 0).unwrap();
    let records = signed.records.to_records();
    let param = records
        .iter()
        .find(|r| r.rtype == RType::NSEC3PARAM)
        .unwrap();
    assert_eq!(
        param.rdata,
        [1, 0, 0, 0, 0],
        "SHA-1, no flags, 0 iterations, no salt"
    );
    let nsec3 = records.iter().find(|r| r.rtype == RType::NSEC3).unwrap();
    assert_eq!(nsec3.rdata[1], 1, "opt-out flag");
    assert!(!records.iter().any(|r| r.rtype == RType::NSEC));
    let dnskey = records.iter().find(|r| r.rtype == RType::DNSKEY).unwrap();
    assert_eq!(dnskey.rdata[3], 15);
}

#[test]
fn key_directory_errors_say_what_is_wrong() {
    let dir = Dir::new("errors");
    let missing = dir.0.join("nope");
    let e = sign_scanned(&apex(), scan(&zone_text(1)), &spec(&missing), NOW, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("z.zone: cannot sign the zone: key directory ")
            && e.contains("does not exist"),
        "{e}"
    );

    // A key of another zone under this zone's file name.
    let other = Dir::new("other");
    let store = KeyStore::open(&other.0).unwrap();
    let key = store
        .generate(
            &"other.test.".parse().unwrap(),
            Algorithm::EcdsaP256Sha256,
            Role::Csk,
            NOW,
        )
        .unwrap();
    let tag = key.meta.tag;
    for ext in ["key", "private"] {
        fs::copy(
            other.0.join(format!("{}.{ext}", key.stem)),
            dir.0.join(format!("Kz.test.+013+{tag:05}.{ext}")),
        )
        .unwrap();
    }
    let e = sign_scanned(&apex(), scan(&zone_text(1)), &spec(&dir.0), NOW, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("a key for other.test., not for z.test."), "{e}");
}

#[test]
fn a_zone_that_fails_to_sign_keeps_its_previous_version() {
    let dir = Dir::new("library");
    let keys = dir.0.join("keys");
    fs::create_dir(&keys).unwrap();
    let file = dir.0.join("z.zone");
    fs::write(&file, zone_text(1)).unwrap();
    let spec = ZoneSpec {
        name: apex(),
        source: ZoneSource::File(file.clone()),
        signing: Some(Arc::new(spec(&keys))),
        journal: None,
    };
    let mut lib = ZoneLibrary::default();
    let r = lib.load(std::slice::from_ref(&spec));
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.resign.len(), 1);
    let first = r.set.get(apex().as_ref()).unwrap().serial();
    assert_eq!(first, 1);
    assert!(r.set.get(apex().as_ref()).unwrap().is_signed());

    // The key directory goes away: the zone file changes, the new version cannot be
    // signed, the signed version before it stays.
    fs::rename(&keys, dir.0.join("moved")).unwrap();
    fs::write(&file, zone_text(2) + "new A 192.0.2.9\n").unwrap();
    let r = lib.load(std::slice::from_ref(&spec));
    assert_eq!(r.failures.len(), 1);
    assert!(r.failures[0].kept_previous);
    assert!(r.failures[0].error.to_string().contains("does not exist"));
    let kept = r.set.get(apex().as_ref()).unwrap();
    assert_eq!(kept.serial(), 1);
    assert!(kept.is_signed());
    assert_eq!(
        r.resign.len(),
        1,
        "tried again before the signatures run out"
    );

    // Back: the new version is signed, with a serial above the last.
    fs::rename(dir.0.join("moved"), &keys).unwrap();
    let (r, _) = lib.reload_named(&[apex()]);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.set.get(apex().as_ref()).unwrap().serial(), 2);
}

/// The signed zone kept in `state/<zone>.signed` is served again, same serial and same
/// signatures, while the records, the keys and the settings are the same and nothing is
/// due; any change signs anew.
#[test]
fn the_signed_zone_is_kept_until_something_changes() {
    let dir = Dir::new("kept");
    let sign = |text: &str, s: &SignSpec, now| {
        let signed = sign_scanned(&apex(), scan(text), s, now, 1).unwrap();
        let mut records = signed.records.to_records();
        records.sort_by(|a, b| {
            (a.owner.to_string(), a.rtype.0, &a.rdata).cmp(&(
                b.owner.to_string(),
                b.rtype.0,
                &b.rdata,
            ))
        });
        records
    };
    let rrsigs = |r: &[Record]| {
        r.iter()
            .filter(|r| r.rtype == RType::RRSIG)
            .map(|r| r.rdata.clone())
            .collect::<Vec<_>>()
    };
    let first = sign(&zone_text(1), &spec(&dir.0), NOW);
    let kept = dir.0.join("state/z.test.signed");
    assert_eq!(
        fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let again = sign(&zone_text(1), &spec(&dir.0), NOW + 100);
    assert_eq!(again, first, "same records, same RRSIGs, same serial");
    // A change of settings, of the file, or of a key's times: signed anew.
    let mut nsec3 = spec(&dir.0);
    nsec3.denial = Denial::Nsec3 {
        params: Nsec3Params::default(),
        opt_out: false,
    };
    let other = sign(&zone_text(1), &nsec3, NOW + 101);
    assert_ne!(rrsigs(&other), rrsigs(&first));
    let back = sign(&zone_text(1), &spec(&dir.0), NOW + 102);
    assert_ne!(
        rrsigs(&back),
        rrsigs(&first),
        "the NSEC3 version was signed in between"
    );
    assert_eq!(sign(&zone_text(1), &spec(&dir.0), NOW + 103), back);
    let changed = sign(
        &(zone_text(1) + "new A 192.0.2.7\n"),
        &spec(&dir.0),
        NOW + 104,
    );
    assert_ne!(changed, back);
    // A kept file that does not read is signed anew, not an error.
    fs::write(&kept, "; shardns-signed fingerprint x serial 1 due 1\n").unwrap();
    sign(&zone_text(1), &spec(&dir.0), NOW + 105);
}

/// A ZSK rollover with short timings, carried out by signings at the key events alone,
/// and one started on the ZSK's lifetime.
#[test]
fn a_zsk_rollover_is_carried_out_by_the_signings() {
    let dir = Dir::new("roll");
    let store = KeyStore::open(&dir.0).unwrap();
    let z = apex();
    store
        .generate(&z, Algorithm::EcdsaP256Sha256, Role::Ksk, NOW)
        .unwrap();
    store
        .generate(&z, Algorithm::EcdsaP256Sha256, Role::Zsk, NOW)
        .unwrap();
    let mut s = spec(&dir.0);
    s.roll = RollSpec {
        zsk_lifetime: Some(1000),
        ksk_lifetime: None,
        propagation: 5,
        parent_ds_ttl: 60,
        parent_propagation: 5,
    };
    let dnskeys = |now| {
        let signed = sign_scanned(&z, scan(&zone_text(1)), &s, now, 1).unwrap();
        let n = signed
            .records
            .to_records()
            .iter()
            .filter(|r| r.rtype == RType::DNSKEY)
            .count();
        (n, signed.refresh_at)
    };
    // The lifetime is up 1000 s after activation; the new ZSK is made DNSKEY TTL (300) +
    // propagation before that, and the zone is due then.
    assert_eq!(dnskeys(NOW), (2, NOW + 1000 - 305));
    let (n, next) = dnskeys(NOW + 695);
    assert_eq!((n, next), (3, NOW + 1000), "the new ZSK is published");
    let (n, next) = dnskeys(next);
    assert_eq!((n, next), (3, NOW + 1000 + 305), "the old ZSK is retired");
    let (n, _) = dnskeys(next);
    assert_eq!(n, 2, "the old ZSK is withdrawn");
    let keys = store.load(&z).unwrap();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[2].meta.activate, Some(NOW + 1000));
}

/// The kept signed zone read back in pieces is the zone read whole; a damaged one is not
/// read (the zone is signed anew), without a panic.
#[test]
fn the_kept_zone_read_in_pieces_is_the_zone_read_whole() {
    let dir = Dir::new("pieces");
    let mut text = zone_text(7);
    for i in 0..3000 {
        text.push_str(&format!(
            "h{i} A 10.0.{}.{}\nh{i} TXT \"record {i}\"\n",
            i / 256,
            i % 256
        ));
    }
    sign_scanned(&apex(), scan(&text), &spec(&dir.0), NOW, 0).unwrap();
    let kept = SignedFile::new(&dir.0, &apex());
    let size = fs::metadata(&kept.path).unwrap().len();
    assert!(size > 20 * (64 << 10), "{size} octets: many pieces");
    let opts = ScanOptions::new(apex());
    let whole = to_list(
        shardns_zone::scan::scan_file(&kept.path, &opts)
            .unwrap()
            .chunks,
    );
    assert!(whole.len() > 15_000);
    for piece in [1, 100_000, PIECE] {
        let got = kept.read_pieces(piece).unwrap().unwrap();
        assert_eq!(got.to_records(), whole.to_records(), "pieces of {piece}");
    }
    assert_eq!(kept.read_any().unwrap().len(), whole.len());

    // Cut in the middle of a line, then garbage: not read. The cut lands anywhere in a
    // line (key tags differ in length), inside a signature's base64 among others: the
    // garbage ends in a parenthesis never closed, an error whatever it follows.
    let bytes = fs::read(&kept.path).unwrap();
    let mut broken = bytes[..bytes.len() / 2].to_vec();
    broken.extend_from_slice(b" 300 IN A not-an-address (\n");
    fs::write(&kept.path, &broken).unwrap();
    assert!(kept.read_pieces(100_000).is_err());
    assert!(kept.read_any().is_none());
    fs::remove_file(&kept.path).unwrap();
    assert!(kept.read_pieces(PIECE).unwrap().is_none());
}

/// The kept zone is served as it is only in canonical order (it is built in the order it
/// is read); out of order, the zone is signed anew and still builds.
#[test]
fn a_kept_zone_out_of_canonical_order_is_signed_anew() {
    let dir = Dir::new("order");
    let serial = |now| {
        let signed = sign_scanned(&apex(), scan(&zone_text(10)), &spec(&dir.0), now, 1).unwrap();
        let records = signed.records.to_records();
        let soa = records.iter().find(|r| r.rtype == RType::SOA).unwrap();
        let serial = soa_serial(&soa.rdata).unwrap();
        Zone::build_sorted(apex(), signed.records, signed.files, signed.warnings).unwrap();
        serial
    };
    assert_eq!(serial(NOW), 10);
    assert_eq!(serial(NOW + 1), 10, "the kept version, as it is");
    let path = dir.0.join("state/z.test.signed");
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let last = lines.len() - 1;
    lines.swap(1, last);
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert_eq!(serial(NOW + 2), 11, "signed anew");
}

/// State files are named per zone (`a/b.` and `a_b.` apart, inside `state/`); one an
/// earlier version named by the zone's text is renamed, except the root's old name for
/// the zone `root.`.
#[test]
fn state_files_are_one_per_zone_and_old_names_taken_over() {
    let dir = Dir::new("state-names");
    let name = |s: &str| s.parse::<Name>().unwrap();
    let (slash, under) = (
        state_path(&dir.0, &name("a/b.test."), "state"),
        state_path(&dir.0, &name("A_B.test."), "state"),
    );
    assert_ne!(slash, under);
    assert_eq!(slash.parent(), Some(dir.0.join("state").as_path()));
    assert_eq!(under, dir.0.join("state/a_b.test.state"));
    let state = dir.0.join("state");
    fs::create_dir_all(&state).unwrap();
    fs::write(state.join("x\\.y.test.state"), "serial 9\n").unwrap();
    let moved = StateFile::new(&dir.0, &name("x\\.y.test."));
    assert_eq!(moved.read().unwrap(), Some(9));
    assert!(!state.join("x\\.y.test.state").exists());
    fs::write(state.join("root.state"), "serial 4\n").unwrap();
    assert_eq!(StateFile::new(&dir.0, &name("root.")).read().unwrap(), None);
    assert_eq!(
        StateFile::new(&dir.0, &Name::root()).read().unwrap(),
        Some(4)
    );
}

#[test]
fn the_signer_clock_neither_leaps_nor_goes_back() {
    let dir = Dir::new("clock");
    let spec = spec(&dir.0);
    // First seen: the wall clock.
    assert_eq!(signer_now(&apex(), &spec, NOW), NOW);
    // Two hours forward at once (the monotonic clock moved less than a second): not
    // followed; later moves of the wall clock are, from there.
    let after = signer_now(&apex(), &spec, NOW + 7200);
    assert!(after <= NOW + 1, "{after}");
    assert_eq!(signer_now(&apex(), &spec, NOW + 7201), after + 1);
    // Back before the last signing recorded (a restart: another key directory's zone
    // is new to this process): never before it.
    let other = Dir::new("clock-back");
    let spec = SignSpec {
        key_dir: other.0.clone(),
        ..spec
    };
    StateFile::new(&other.0, &apex())
        .write(3, &spec.roll.timings(300, 300), NOW)
        .unwrap();
    assert_eq!(signer_now(&apex(), &spec, NOW - 7200), NOW);
}

#[test]
fn a_lost_private_key_file_stops_the_signing_and_the_kept_zone_is_served() {
    let dir = Dir::new("lost");
    let spec = spec(&dir.0);
    let first = sign_scanned(&apex(), scan(&zone_text(1)), &spec, NOW, 1).unwrap();
    let stem = fs::read_dir(&dir.0)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .find_map(|f| f.strip_suffix(".private").map(str::to_string))
        .unwrap();
    let private = dir.0.join(format!("{stem}.private"));
    let lost = dir.0.join("lost");
    fs::rename(&private, &lost).unwrap();
    // Another zone's lost key is not this zone's concern.
    fs::write(dir.0.join("Kother.test.+013+00001.key"), "").unwrap();
    // A changed zone file, due: the kept version is served as it is (same serial, same
    // records), not a zone signed without the key nor with new keys made.
    let later = NOW + 8 * 86_400;
    let kept = sign_scanned(&apex(), scan(&zone_text(5)), &spec, later, 1).unwrap();
    assert_eq!(kept.records.to_records(), first.records.to_records());
    assert_eq!(kept.refresh_at, later + 60);
    let keys = fs::read_dir(&dir.0)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("key".as_ref()))
        .count();
    assert_eq!(keys, 2, "no key made");
    // Its signatures expired: the signing fails, naming the file.
    let e = sign_scanned(&apex(), scan(&zone_text(5)), &spec, NOW + 15 * 86_400, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&format!(
            "private key file of {stem} is missing or unreadable"
        )),
        "{e}"
    );
    // Back: signed anew.
    fs::rename(&lost, &private).unwrap();
    let back = sign_scanned(&apex(), scan(&zone_text(5)), &spec, later, 1).unwrap();
    assert_ne!(back.records.to_records(), first.records.to_records());
}

/// A served signed zone kept from the zone itself (`write_zone`, what a secondary does once
/// it serves a version) is the file the signer writes from its list; a zone whose names are
/// not in canonical order (built from records in file order) goes through a sorted list and
/// reads back as the same zone.
#[test]
fn a_kept_copy_written_from_the_zone_is_the_one_written_from_the_list() {
    let dir = Dir::new("from-zone");
    let mut text = zone_text(7);
    for i in (0..400).rev() {
        text.push_str(&format!("h{i} A 10.0.1.{}\nh{i} TXT \"r {i}\"\n", i % 256));
    }
    text.push_str("*.w MX 10 mx\nsub DS 1 13 2 00aa\n");
    let signed = sign_scanned(&apex(), scan(&text), &spec(&dir.0), NOW, 0).unwrap();
    let kept = SignedFile::new(&dir.0, &apex());
    let from_list = fs::read_to_string(&kept.path).unwrap();
    let fingerprint = from_list.split_whitespace().nth(3).unwrap().to_string();
    let due = signed.refresh_at;
    let (zone, _) =
        Zone::build_sorted(apex(), signed.records, signed.files, signed.warnings).unwrap();
    assert!(kept::in_canonical_order(&zone));
    fs::remove_file(&kept.path).unwrap();
    kept.write_zone(&fingerprint, due, &zone).unwrap();
    assert_eq!(fs::read_to_string(&kept.path).unwrap(), from_list);

    // The same records in reverse order of names: built as they come.
    let lines: Vec<&str> = from_list.lines().skip(1).collect();
    let reversed: String = lines.iter().rev().map(|l| format!("{l}\n")).collect();
    let opts = ScanOptions::new(apex());
    let scanned = shardns_zone::scan::scan_text(reversed.as_bytes(), Path::new("r"), &opts);
    let (unordered, _) = Zone::build(apex(), scanned.unwrap()).unwrap();
    assert!(!kept::in_canonical_order(&unordered));
    kept.write_zone(&fingerprint, due, &unordered).unwrap();
    assert_eq!(fs::read_to_string(&kept.path).unwrap(), from_list);
    let serial = zone.serial();
    let (list, s, d) = kept.read_if(Some(&fingerprint), Some(serial), NOW).unwrap();
    assert_eq!((s, d, list.len()), (serial, due, lines.len()));
}

/// A failed signing of a zone still served is tried again after a minute, then twice as
/// long each time, up to a `signature_refresh`/8 (at least 1 s, at most an hour).
#[test]
fn a_failed_signing_is_tried_again_sooner_first() {
    let dir = Dir::new("retry");
    let mut s = spec(&dir.0);
    let waits: Vec<u64> = (0..9).map(|n| retry_after(&s, n)).collect();
    assert_eq!(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
    assert_eq!(retry_after(&s, u32::MAX), 3600);
    s.policy.refresh = 800;
    assert_eq!(retry_after(&s, 0), 60);
    assert_eq!(retry_after(&s, 1), 100);
    s.policy.refresh = 9;
    assert_eq!(retry_after(&s, 0), 1);
    s.policy.refresh = 0;
    assert_eq!(retry_after(&s, 3), 1);
}
