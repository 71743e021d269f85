//! The offline KSK's round trip in one process: ZSKs pregenerated, a KSR, an SKR signed
//! with a KSK of another directory, imported, served by the signer; the refusals.

use super::*;
use crate::signing::{sign_records, to_list, KeyPolicy, RollSpec, SignSpec};
use shardns_dnssec::sign::{verify_rrsig, RrsigFields};
use shardns_dnssec::{CdsParams, Denial, Policy, RecordList};
use shardns_wire::Class;
use std::path::PathBuf;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "shardns-offline-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const T0: u64 = 1_750_000_000;

fn apex() -> Name {
    "z.test.".parse().unwrap()
}

fn timings() -> RollTimings {
    RollTimings {
        dnskey_ttl: 60,
        max_ttl: 300,
        propagation: 60,
        parent_ds_ttl: 60,
        parent_propagation: 60,
        zsk_lifetime: Some(1000),
        ksk_lifetime: None,
    }
}

fn spec(key_dir: &Path) -> SignSpec {
    SignSpec {
        key_dir: key_dir.to_path_buf(),
        algorithm: Algorithm::EcdsaP256Sha256,
        denial: Denial::Nsec,
        policy: Policy::default(),
        roll: RollSpec::default(),
        cds: CdsParams::default(),
        keys: KeyPolicy::default(),
        dnskey_ttl: Some(60),
        keystore: None,
        offline_ksk: true,
        dnskey_management: Default::default(),
    }
}

fn records() -> RecordList {
    let text =
        "$TTL 300\n@ SOA ns.z.test. admin.z.test. 1 3600 600 86400 300\n@ NS ns\nns A 192.0.2.1\n";
    let opts = ScanOptions::new(apex());
    to_list(
        shardns_zone::scan::scan_text(text.as_bytes(), Path::new("z"), &opts)
            .unwrap()
            .chunks,
    )
}

/// ZSKs in `zsk`, a KSK in `ksk`, the SKR text over [T0, T0 + 3000).
fn skr(zsk: &Path, ksk: &Path) -> String {
    skr_span(zsk, ksk, T0, T0 + 3000)
}

/// ZSKs in `zsk` up to `to`, a KSK in `ksk` (made the first time), the SKR text over
/// [from, to).
fn skr_span(zsk: &Path, ksk: &Path, from: u64, to: u64) -> String {
    let made = pregenerate(
        &apex(),
        zsk,
        Algorithm::EcdsaP256Sha256,
        &timings(),
        from,
        to,
    )
    .unwrap();
    assert!(!made.is_empty());
    let store = KeyStore::open(ksk).unwrap();
    if store.load(&apex()).unwrap().is_empty() {
        let key = store
            .make(&apex(), Algorithm::EcdsaP256Sha256, Role::Ksk, T0 - 10)
            .unwrap();
        store.save_new(&key).unwrap();
    }
    let ksr = make_ksr(&apex(), zsk, from, to, 60).unwrap();
    let how = SignKsr {
        cds: CdsParams {
            publish: shardns_dnssec::CdsPublish::Always,
            ..CdsParams::default()
        },
        backdate: 3600,
        overlap: 600,
    };
    sign_ksr(&ksr, Path::new("ksr"), ksk, None, &how).unwrap()
}

/// The next SKR imported while the current one serves: both kept, each serving its
/// span; one that leaves a gap is refused.
#[test]
fn the_next_skr_is_imported_beside_the_current_one() {
    let (zsk, ksk) = (Dir::new("zsk4"), Dir::new("ksk4"));
    import_skr(&apex(), &zsk.0, &skr(&zsk.0, &ksk.0), Path::new("a"), T0).unwrap();
    let said = skr_summary(&apex(), &zsk.0, T0 + 100);
    assert!(said.contains("ends in 2900 s"), "{said}");
    assert!(skr_summary(&apex(), &zsk.0, T0 + 3000).contains("ended at"));
    // The next KSR starts where the imported SKR ends (now, once it is over).
    assert_eq!(next_ksr_start(&apex(), &zsk.0, T0 + 100), T0 + 3000);
    assert_eq!(next_ksr_start(&apex(), &zsk.0, T0 + 3500), T0 + 3500);
    let next = skr_span(&zsk.0, &ksk.0, T0 + 2000, T0 + 5000);
    let said = import_skr(&apex(), &zsk.0, &next, Path::new("b"), T0 + 100).unwrap();
    assert!(said.contains("kept from"), "{said}");
    let spec = spec(&zsk.0);
    for at in [T0 + 1500, T0 + 2500, T0 + 4900] {
        sign_records(&apex(), records(), &spec, at, 1).unwrap();
    }
    assert!(sign_records(&apex(), records(), &spec, T0 + 5000, 1).is_err());
    let gap = skr_span(&zsk.0, &ksk.0, T0 + 6000, T0 + 7000);
    let e = import_skr(&apex(), &zsk.0, &gap, Path::new("c"), T0 + 200).unwrap_err();
    assert!(e.contains("no key RRsets in between"), "{e}");
    // Still the two imported before.
    sign_records(&apex(), records(), &spec, T0 + 4000, 1).unwrap();
}

#[test]
fn pregenerated_zsks_signed_offline_are_served_across_a_rollover() {
    let (zsk, ksk) = (Dir::new("zsk"), Dir::new("ksk"));
    let text = skr(&zsk.0, &ksk.0);
    let said = import_skr(&apex(), &zsk.0, &text, Path::new("skr"), T0).unwrap();
    assert!(said.contains("SKR imported"), "{said}");
    let spec = spec(&zsk.0);
    let mut tags = Vec::new();
    for at in [T0 + 10, T0 + 1500, T0 + 2900] {
        let (list, _, refresh) = sign_records(&apex(), records(), &spec, at, 1).unwrap();
        assert!(refresh > at && refresh <= T0 + 3000, "{refresh}");
        let all = list.to_records();
        let set = |t: RType| {
            all.iter()
                .filter(move |r| r.rtype == t && r.owner == apex())
        };
        let dnskeys: Vec<&[u8]> = set(RType::DNSKEY).map(|r| r.rdata.as_slice()).collect();
        assert!(set(RType::CDS).count() == 1 && set(RType::CDNSKEY).count() == 1);
        // The DNSKEY RRset carries one signature, the KSK's, which verifies.
        let sigs: Vec<_> = all
            .iter()
            .filter(|r| r.rtype == RType::RRSIG)
            .filter(|r| RrsigFields::parse(&r.rdata).unwrap().0.type_covered == RType::DNSKEY)
            .collect();
        assert_eq!(sigs.len(), 1);
        let ksk = dnskeys.iter().find(|k| k[1] & 1 == 1).unwrap();
        verify_rrsig(
            &sigs[0].rdata,
            apex().as_ref(),
            Class::IN,
            RType::DNSKEY,
            dnskeys.clone(),
            ksk,
        )
        .unwrap();
        // The A record's signature is a ZSK's.
        let a_sig = all
            .iter()
            .find(|r| {
                r.rtype == RType::RRSIG
                    && RrsigFields::parse(&r.rdata).unwrap().0.type_covered == RType::A
            })
            .unwrap();
        tags.push(RrsigFields::parse(&a_sig.rdata).unwrap().0.key_tag);
    }
    assert!(tags[0] != tags[2], "the ZSK rolled: {tags:?}");

    // The zone's TTLs within those pregenerate waited for (max 300, DNSKEY 60): no word;
    // above them, said.
    assert!(timing_warnings(&apex(), &zsk.0, 60, 300).is_empty());
    let w = timing_warnings(&apex(), &zsk.0, 120, 900);
    assert!(w.len() == 2 && w[1].contains("--max-ttl 900"), "{w:?}");

    // Past the SKR's end: refused, the caller keeps what it serves.
    let e = sign_records(&apex(), records(), &spec, T0 + 3000, 1).unwrap_err();
    assert!(e.contains("not now"), "{e}");
}

#[test]
fn tampered_foreign_or_cut_skrs_are_refused() {
    let (zsk, ksk) = (Dir::new("zsk2"), Dir::new("ksk2"));
    let text = skr(&zsk.0, &ksk.0);
    // A signature changed: the last RRSIG line's base64 altered.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let i = lines.iter().rposition(|l| l.contains("RRSIG")).unwrap();
    let at = lines[i].len() - 10;
    let flipped = if &lines[i][at..=at] == "A" { "B" } else { "A" };
    lines[i].replace_range(at..=at, flipped);
    let e = import_skr(
        &apex(),
        &zsk.0,
        &(lines.join("\n") + "\n"),
        Path::new("s"),
        T0,
    )
    .unwrap_err();
    assert!(
        e.contains("refused") && e.contains("does not verify"),
        "{e}"
    );
    // Cut short.
    let cut = &text[..text.len() - 8];
    let e = import_skr(&apex(), &zsk.0, cut, Path::new("s"), T0).unwrap_err();
    assert!(e.contains("cut short"), "{e}");
    // Another zone's key directory (other ZSKs).
    let other = Dir::new("other");
    pregenerate(
        &apex(),
        &other.0,
        Algorithm::EcdsaP256Sha256,
        &timings(),
        T0,
        T0 + 3000,
    )
    .unwrap();
    let e = import_skr(&apex(), &other.0, &text, Path::new("s"), T0).unwrap_err();
    assert!(e.contains("not those the key directory publishes"), "{e}");
    // Already over.
    let e = import_skr(&apex(), &zsk.0, &text, Path::new("s"), T0 + 5000).unwrap_err();
    assert!(e.contains("ended"), "{e}");
    // Nothing was imported: the signer says so.
    let e = sign_records(&apex(), records(), &spec(&zsk.0), T0 + 10, 1).unwrap_err();
    assert!(e.contains("no SKR imported"), "{e}");
    // A malformed KSR.
    let e = parse_ksr(
        ";; shardns-ksr z.test.\n;; period 2025 2026\n;; end\n",
        Path::new("k"),
    )
    .unwrap_err();
    assert!(e.contains("YYYYMMDDHHMMSS") || e.contains("ttl"), "{e}");
}

/// A change (a dynamic update, an IXFR into a signed secondary) is not signed by itself:
/// the whole zone is, by the offline signer, so the key RRsets stay the SKR's.
#[test]
fn changes_to_an_offline_zone_are_signed_whole() {
    use crate::signing::incremental::{sign_incrementally, Incremental};
    let (zsk, ksk) = (Dir::new("zsk3"), Dir::new("ksk3"));
    let text = skr(&zsk.0, &ksk.0);
    import_skr(&apex(), &zsk.0, &text, Path::new("skr"), T0).unwrap();
    let spec = spec(&zsk.0);
    let (list, _, _) = sign_records(&apex(), records(), &spec, T0 + 10, 1).unwrap();
    let (zone, _) = shardns_zone::Zone::build_sorted(apex(), list, vec![], vec![]).unwrap();
    let soa = |serial: u32| {
        let l = records();
        let r = l.items.iter().find(|r| r.rtype == RType::SOA).unwrap();
        let mut rdata = l.rdata(r).to_vec();
        let at = rdata.len() - 20;
        rdata[at..at + 4].copy_from_slice(&serial.to_be_bytes());
        (r.ttl, rdata)
    };
    let change = shardns_zone::update::Change {
        deleted: vec![],
        added: vec![(
            "new.z.test.".parse().unwrap(),
            RType::A,
            60,
            vec![192, 0, 2, 9],
        )],
        old_soa: soa(1),
        soa: soa(2),
    };
    match sign_incrementally(&zone, &change, &spec, T0 + 11).unwrap() {
        Incremental::Whole(why) => assert!(why.contains("offline KSK"), "{why}"),
        Incremental::Signed(..) => panic!("an offline zone's change signed by itself"),
    }
}

/// A `zsk_lifetime` in the config that is up calls for no signing of its own (no key is
/// made here; before, it asked for one every second): a ZSK without successor signs until
/// the period's end, the next signing.
#[test]
fn a_lifetime_that_is_up_does_not_call_for_signings() {
    let (zsk, ksk) = (Dir::new("zsk5"), Dir::new("ksk5"));
    let store = KeyStore::open(&zsk.0).unwrap();
    let key = store
        .make(&apex(), Algorithm::EcdsaP256Sha256, Role::Zsk, T0)
        .unwrap();
    store.save_new(&key).unwrap();
    let ksk_store = KeyStore::open(&ksk.0).unwrap();
    let k = ksk_store
        .make(&apex(), Algorithm::EcdsaP256Sha256, Role::Ksk, T0)
        .unwrap();
    ksk_store.save_new(&k).unwrap();
    let ksr = make_ksr(&apex(), &zsk.0, T0, T0 + 3000, 60).unwrap();
    let how = SignKsr {
        cds: CdsParams::default(),
        backdate: 3600,
        overlap: 600,
    };
    let text = sign_ksr(&ksr, Path::new("ksr"), &ksk.0, None, &how).unwrap();
    import_skr(&apex(), &zsk.0, &text, Path::new("skr"), T0).unwrap();
    let mut spec = spec(&zsk.0);
    spec.roll.zsk_lifetime = Some(100);
    let (_, _, refresh) = sign_records(&apex(), records(), &spec, T0 + 500, 1).unwrap();
    assert_eq!(refresh, T0 + 3000);
}

/// Damaged SKRs (bytes changed, lines cut or repeated) never panic the import: each is
/// taken or refused with a reason, and one taken still verifies (the damage was in a
/// comment, or in whitespace).
#[test]
fn damaged_skrs_are_refused_or_harmless() {
    let (zsk, ksk) = (Dir::new("zsk6"), Dir::new("ksk6"));
    let text = skr(&zsk.0, &ksk.0);
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b" \t\n;.0123456789ABCDEFabcdef+/=-(){}\\\"RRSIGDNSKEYperiod";
    let (mut taken, mut refused) = (0, 0);
    for round in 0..200 {
        let mut bytes = text.clone().into_bytes();
        match round % 3 {
            0 => {
                let at = next() as usize % bytes.len();
                bytes[at] = alphabet[next() as usize % alphabet.len()];
            }
            1 => {
                let at = next() as usize % bytes.len();
                bytes.truncate(at);
            }
            _ => {
                let lines: Vec<&str> = text.lines().collect();
                let i = next() as usize % lines.len();
                let mut l = lines.clone();
                l.insert(i, lines[next() as usize % lines.len()]);
                bytes = (l.join("\n") + "\n").into_bytes();
            }
        }
        let damaged = String::from_utf8_lossy(&bytes).into_owned();
        let dir = Dir::new("zsk6-copy");
        for e in std::fs::read_dir(&zsk.0).unwrap().flatten() {
            if e.path().is_file() {
                std::fs::copy(e.path(), dir.0.join(e.file_name())).unwrap();
            }
        }
        match import_skr(&apex(), &dir.0, &damaged, Path::new("d"), T0) {
            Ok(_) => {
                taken += 1;
                sign_records(&apex(), records(), &spec(&dir.0), T0 + 10, 1)
                    .unwrap_or_else(|e| panic!("round {round}: {e}\n{damaged}"));
            }
            Err(e) => {
                assert!(!e.is_empty());
                refused += 1;
            }
        }
    }
    assert!(refused > 100, "{taken} taken, {refused} refused");
}

/// Damaged KSRs never panic the KSK side: each is refused with a reason, or signed (a
/// changed key still of the right shape can be: the KSK side cannot know), and the server
/// then takes the response exactly when the request's ZSKs are its own.
#[test]
fn damaged_ksrs_are_refused_or_harmless() {
    let (zsk, ksk) = (Dir::new("zsk7"), Dir::new("ksk7"));
    skr(&zsk.0, &ksk.0);
    let ksr = make_ksr(&apex(), &zsk.0, T0, T0 + 3000, 60).unwrap();
    let how = SignKsr {
        cds: CdsParams::default(),
        backdate: 3600,
        overlap: 600,
    };
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as usize
    };
    let alphabet = b" \t\n;.0123456789ABCDEFabcdef+/=-DNSKEYttlperiod";
    let original = parse_ksr(&ksr, Path::new("k")).unwrap();
    let mut refused = 0;
    for round in 0..200 {
        let mut bytes = ksr.clone().into_bytes();
        if round % 2 == 0 {
            let at = next() % bytes.len();
            bytes[at] = alphabet[next() % alphabet.len()];
        } else {
            bytes.truncate(next() % bytes.len());
        }
        let damaged = String::from_utf8_lossy(&bytes).into_owned();
        match sign_ksr(&damaged, Path::new("k"), &ksk.0, None, &how) {
            Ok(text) => {
                let response = parse_skr(&text, Path::new("s")).unwrap();
                let from = response.periods[0].from;
                let keys = KeyStore::open(&zsk.0).unwrap().load(&apex()).unwrap();
                let expected = offline::zsk_periods(&keys, from, response.end()).unwrap();
                let asked = parse_ksr(&damaged, Path::new("k")).unwrap();
                let ours = asked.periods.iter().all(|p| {
                    original
                        .periods
                        .iter()
                        .any(|o| o.from <= p.from && p.to <= o.to && o.zsks == p.zsks)
                });
                let taken = offline::check_response(&response, &expected);
                assert_eq!(taken.is_ok(), ours, "round {round}: {taken:?}\n{damaged}");
            }
            Err(e) => {
                assert!(!e.is_empty());
                refused += 1;
            }
        }
    }
    assert!(refused > 100, "{refused} refused");
}

/// A zone file directive in a KSR or SKR is refused before the reader sees it: `$INCLUDE`
/// would open a file the sender names.
#[test]
fn directives_in_ksrs_and_skrs_are_refused() {
    let secret = Dir::new("include");
    let file = secret.0.join("secret");
    std::fs::write(&file, "z.test. 60 IN DNSKEY 256 3 15 AAAA\n").unwrap();
    for (kind, extra) in [("ksr", ";; ttl 60\n"), ("skr", "")] {
        for directive in [
            format!("$INCLUDE {}", file.display()),
            "$ORIGIN other.".into(),
            " $TTL 5".into(),
        ] {
            let text = format!(
                ";; shardns-{kind} z.test.\n{extra};; period 20261201000000 20261202000000\n\
                 {directive}\n;; end\n"
            );
            let e = if kind == "ksr" {
                parse_ksr(&text, Path::new("f")).unwrap_err()
            } else {
                parse_skr(&text, Path::new("f")).unwrap_err()
            };
            let line = if kind == "ksr" { 4 } else { 3 };
            assert!(e.starts_with(&format!("f:{line}: $")), "{e}");
            assert!(e.contains("no zone file directive"), "{e}");
        }
    }
}

/// The KSR written from a request reads back as that request; the `.pregenerated` file
/// likewise, a value left out staying out.
#[test]
fn ksrs_and_pregenerated_files_read_back_as_written() {
    let zsk = Dir::new("zsk8");
    pregenerate(
        &apex(),
        &zsk.0,
        Algorithm::EcdsaP256Sha256,
        &timings(),
        T0,
        T0 + 3000,
    )
    .unwrap();
    let text = make_ksr(&apex(), &zsk.0, T0, T0 + 3000, 60).unwrap();
    let request = parse_ksr(&text, Path::new("k")).unwrap();
    assert!(request.periods.len() >= 3, "{text}");
    assert_eq!(write_ksr(&request), text);
    let kept = std::fs::read_to_string(crate::signing::state_path(&zsk.0, &apex(), "pregenerated"))
        .unwrap();
    let p = Pregenerated::parse(&kept);
    assert_eq!(
        (p.dnskey_ttl, p.max_ttl, p.propagation),
        (Some(60), Some(300), Some(60))
    );
    assert_eq!(p.write(), kept);
    let partial = Pregenerated { max_ttl: None, ..p };
    assert_eq!(Pregenerated::parse(&partial.write()), partial);
    assert_eq!(
        Pregenerated::parse("max_ttlx 5\nmax_ttl x\nmax_ttl  +7\n").max_ttl,
        Some(7)
    );
}

/// A record the zone file reader refuses is reported at its line of the file.
#[test]
fn a_bad_record_is_reported_at_its_line() {
    let text = ";; shardns-ksr z.test.\n;; ttl 60\n;; period 20261201000000 20261202000000\n\
                z.test. 60 IN DNSKEY 256 3 15 AAAA\n\
                ;; period 20261202000000 20261203000000\n; a comment\n\n\
                z.test. 60 IN DNSKEY 256 3 15 !!\n;; end\n";
    let e = parse_ksr(text, Path::new("f.ksr")).unwrap_err();
    assert!(e.starts_with("f.ksr:8: "), "{e}");
    // A period line misspelt is refused, not taken as a comment (which would add its
    // records to the period before).
    let text = text.replace(";; period 20261202000000 20261203000000", ";; period 1 2 3");
    let e = parse_ksr(&text, Path::new("f.ksr")).unwrap_err();
    assert_eq!(e, "f.ksr:5: a bad `;; period` line");
}
