//! Signing transferred zones: the serial rule, an IXFR signed incrementally against the
//! same version signed whole, the kept signed version served again after a restart, and a
//! signing that fails.

use super::*;
use crate::signing::{KeyPolicy, RollSpec};
use shardns_dnssec::{Algorithm, CdsParams, Denial, Nsec3Params, Policy};
use shardns_wire::Name;
use shardns_zone::{load_zone_text, ScanOptions};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let p =
            std::env::temp_dir().join(format!("shardns-bump-{tag}-{}-{nanos}", std::process::id()));
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

fn spec(key_dir: &Path, denial: Denial) -> SignSpec {
    SignSpec {
        key_dir: key_dir.to_path_buf(),
        algorithm: Algorithm::EcdsaP256Sha256,
        denial,
        policy: Policy::default(),
        roll: RollSpec::default(),
        cds: CdsParams::default(),
        keys: KeyPolicy::default(),
        dnskey_ttl: None,
        keystore: None,
        offline_ksk: false,
        dnskey_management: Default::default(),
    }
}

fn apex() -> Name {
    "bump.test.".parse().unwrap()
}

/// Version `serial` of the primary's unsigned zone: `hosts` names, and `extra` lines.
fn unsigned(serial: u32, hosts: std::ops::Range<u32>, extra: &str) -> Zone {
    let mut text = format!(
        "$TTL 300\n@ SOA ns.bump.test. admin.bump.test. {serial} 3600 600 86400 300\n\
         @ NS ns\nns A 192.0.2.1\nsub NS ns.elsewhere.test.\n{extra}"
    );
    for h in hosts {
        text.push_str(&format!("h{h} A 192.0.2.{}\n", h % 250 + 1));
    }
    load_zone_text(text.as_bytes(), Path::new("t"), &ScanOptions::new(apex()))
        .unwrap()
        .0
}

/// Every record of a zone as text, sorted; RRSIG rdata left out (ECDSA signatures differ
/// from one signing to the next) but their owner and covered type kept.
fn shape(zone: &Zone) -> BTreeSet<String> {
    zone.records()
        .map(|r| {
            if r.rtype == RType::RRSIG {
                let covered = u16::from_be_bytes([r.rdata[0], r.rdata[1]]);
                format!("{} RRSIG {}", r.owner, RType(covered))
            } else {
                r.to_string()
            }
        })
        .collect()
}

fn rrsigs(zone: &Zone) -> BTreeSet<Vec<u8>> {
    zone.records()
        .filter(|r| r.rtype == RType::RRSIG)
        .map(|r| r.rdata)
        .collect()
}

#[test]
fn the_signed_serial_is_the_primarys_when_ahead_else_the_last_plus_one() {
    assert_eq!(next_serial(10, None), 10);
    assert_eq!(next_serial(11, Some(10)), 11);
    // A refresh of signatures, or a primary behind our signed serial.
    assert_eq!(next_serial(10, Some(10)), 11);
    assert_eq!(next_serial(5, Some(10)), 11);
    assert_eq!(next_serial(u32::MAX, Some(u32::MAX)), 0, "wraps (RFC 1982)");
    assert_eq!(next_serial(3, Some(u32::MAX)), 3, "3 is after 2^32-1");
}

#[test]
fn a_soa_gets_the_signed_serial_and_nothing_else_changes() {
    let z = unsigned(7, 0..1, "");
    let (_, soa) = soa_of(&z).unwrap();
    let moved = with_serial(&soa, 0x0102_0304).unwrap();
    assert_eq!(moved.len(), soa.len());
    assert_eq!(signing::soa_serial(&moved), Some(0x0102_0304));
    let diff: Vec<usize> = (0..soa.len()).filter(|&i| soa[i] != moved[i]).collect();
    assert!(diff.len() <= 4, "{diff:?}");
    assert!(with_serial(&soa[..soa.len() - 17], 1).is_none());
}

/// An IXFR (names added, removed, changed; with NSEC and NSEC3) signed by itself gives
/// the records and chain a whole signing of the new version gives, with the signed serial
/// moved on and the signatures of untouched RRsets kept as they were.
#[test]
fn an_ixfr_signed_incrementally_matches_the_zone_signed_whole() {
    let nsec3 = Denial::Nsec3 {
        params: Nsec3Params::default(),
        opt_out: false,
    };
    for denial in [Denial::Nsec, nsec3] {
        let (a, b) = (Dir::new("incr"), Dir::new("whole"));
        let old = unsigned(100, 0..40, "www TXT \"one\"\n");
        let new = Arc::new(unsigned(
            101,
            5..45,
            "www TXT \"two\"\nnew.deep A 192.0.2.9\n",
        ));
        let signed = sign_whole(&old, &spec(&a.0, denial.clone()), NOW).unwrap();
        assert_eq!(signed.zone.serial(), 100);
        // The names an IXFR of this change names (those it deletes or adds records at).
        let changed: Vec<Name> = ["www", "new.deep"]
            .into_iter()
            .map(String::from)
            .chain((0..5).chain(40..45).map(|h| format!("h{h}")))
            .map(|n| format!("{n}.bump.test.").parse().unwrap())
            .collect();
        let at_names = sign_ixfr(
            base(&old, &signed, Some(&changed)),
            &new,
            &spec(&a.0, denial.clone()),
            NOW + 60,
        )
        .unwrap();
        assert!(matches!(at_names.1, How::Incremental(_)));
        let state = StateFile::new(&a.0, &apex());
        // The same change from the whole difference, from the same state.
        state.set_serial(100).unwrap();
        let (incr, how) = sign_ixfr(
            base(&old, &signed, None),
            &new,
            &spec(&a.0, denial.clone()),
            NOW + 60,
        )
        .unwrap();
        assert_eq!(shape(&at_names.0.zone), shape(&incr.zone), "{denial:?}");
        let How::Incremental(touched) = how else {
            panic!("signed whole: {denial:?}")
        };
        // The names it gives the journal are where the signed versions differ: its diff
        // made at them alone holds every record of the whole diff.
        let records = |d: Diff| {
            let mut v: Vec<String> = d.records().map(|r| format!("{r:?}")).collect();
            v.sort();
            v
        };
        assert_eq!(
            records(Diff::compute_at(
                &signed.zone,
                &incr.zone,
                touched.iter().map(Name::as_ref)
            )),
            records(Diff::compute(&signed.zone, &incr.zone)),
            "{denial:?}"
        );
        assert_eq!(incr.zone.serial(), 101);
        assert_eq!(incr.due, signed.due);
        // The same version signed whole, elsewhere, with the same serial and keys.
        fs::remove_dir_all(&b.0).unwrap();
        copy_dir(&a.0, &b.0);
        fs::remove_file(b.0.join("state").join("bump.test.signed")).unwrap();
        fs::remove_file(b.0.join("state").join("bump.test.state")).unwrap();
        let whole = sign_whole(&new, &spec(&b.0, denial.clone()), NOW + 60).unwrap();
        assert_eq!(whole.zone.serial(), 101);
        assert_eq!(shape(&incr.zone), shape(&whole.zone), "{denial:?}");
        // Untouched RRsets keep their signatures: most are the old version's.
        let (before, after) = (rrsigs(&signed.zone), rrsigs(&incr.zone));
        let kept = after.intersection(&before).count();
        assert!(kept * 10 > after.len() * 7, "{kept} of {}", after.len());
        assert_eq!(StateFile::new(&a.0, &apex()).read().unwrap(), Some(101));
        // Kept: a restart that reads the same unsigned version serves it as it is.
        let from = super::super::keeper::Origin::Unsigned(Arc::clone(&new));
        super::super::keeper::keep_now(&spec(&a.0, denial.clone()), &incr.zone, incr.due, &from)
            .unwrap();
        let again = sign_whole(&new, &spec(&a.0, denial.clone()), NOW + 120).unwrap();
        assert_eq!(again.zone.serial(), 101);
        assert_eq!(rrsigs(&again.zone), after);
    }
}

/// A primary whose serial does not move past ours, and a re-signing: the signed serial
/// is the last plus one each time.
#[test]
fn a_resigning_moves_the_signed_serial_though_the_primarys_stays() {
    let dir = Dir::new("resign");
    let s = spec(&dir.0, Denial::Nsec);
    let v1 = unsigned(5, 0..3, "");
    let first = sign_whole(&v1, &s, NOW).unwrap();
    assert_eq!(first.zone.serial(), 5);
    let again = sign_whole(&v1, &s, first.due).unwrap();
    assert_eq!(again.zone.serial(), 6);
    assert_ne!(rrsigs(&again.zone), rrsigs(&first.zone));
    // The primary goes to 6, which we have signed already: 7.
    let v2 = unsigned(6, 0..4, "");
    let (next, _) = sign_ixfr(base(&v1, &again, None), &v2, &s, first.due + 1).unwrap();
    assert_eq!(next.zone.serial(), 7);
    assert!(next
        .zone
        .find("h3.bump.test.".parse::<Name>().unwrap().as_ref())
        .is_some());
}

/// A key directory that is gone: no signed version, an error that says why.
#[test]
fn a_zone_that_cannot_be_signed_is_an_error() {
    let dir = Dir::new("nokeys");
    let s = spec(&dir.0.join("missing"), Denial::Nsec);
    let v1 = unsigned(5, 0..3, "");
    let e = sign_whole(&v1, &s, NOW).err().expect("no key directory");
    assert!(e.contains("does not exist"), "{e}");
    let good = spec(&dir.0, Denial::Nsec);
    let signed = sign_whole(&v1, &good, NOW).unwrap();
    let v2 = unsigned(6, 0..4, "");
    let e = sign_ixfr(base(&v1, &signed, None), &v2, &s, NOW)
        .err()
        .expect("no key directory");
    assert!(e.contains("missing"), "{e}");
}

fn base<'a>(
    unsigned: &'a Zone,
    signed: &'a SignedVersion,
    changed: Option<&'a [Name]>,
) -> Base<'a> {
    Base {
        unsigned,
        signed,
        changed,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), target).unwrap();
        }
    }
}

/// A multi-signer zone signed as transferred (`dnskey_management = "incremental"`): the
/// other provider's DNSKEY in the primary's data is published beside ours; an IXFR that
/// changes it is signed whole, one that changes other records incrementally, and both
/// keep it.
#[test]
fn a_multi_signer_zone_keeps_the_primarys_key_records() {
    let d = Dir::new("multi");
    let spec = SignSpec {
        dnskey_management: shardns_dnssec::DnskeyManagement::Incremental,
        ..spec(&d.0, Denial::Nsec)
    };
    let key = |flags| {
        let k = shardns_dnssec::SigningKey::generate(Algorithm::EcdsaP256Sha256, flags).unwrap();
        let mut text = String::new();
        shardns_wire::rdata::fmt_text(RType::DNSKEY, k.dnskey_rdata(), &mut text).unwrap();
        (k.dnskey_rdata().to_vec(), format!("@ DNSKEY {text}\n"))
    };
    let ((first, first_line), (second, second_line)) = (key(256), key(256));
    let has = |z: &Zone, want: &[&Vec<u8>], len: usize| {
        let keys = z.apex_node().rrset(RType::DNSKEY).unwrap();
        assert_eq!(keys.len(), len);
        for w in want {
            assert!(keys.rdatas().any(|d| d == &w[..]));
        }
    };
    let v1 = unsigned(100, 0..5, &first_line);
    let signed = sign_whole(&v1, &spec, NOW).unwrap();
    has(&signed.zone, &[&first], 2);
    // The other provider's second key: signed whole.
    let v2 = unsigned(101, 0..5, &format!("{first_line}{second_line}"));
    let (signed2, how) = sign_ixfr(base(&v1, &signed, None), &v2, &spec, NOW + 10).unwrap();
    assert!(matches!(how, How::Whole(Some(_))));
    has(&signed2.zone, &[&first, &second], 3);
    // Other records: incrementally, the keys kept.
    let v3 = unsigned(102, 0..7, &format!("{first_line}{second_line}"));
    let (signed3, how) = sign_ixfr(base(&v2, &signed2, None), &v3, &spec, NOW + 20).unwrap();
    assert!(matches!(how, How::Incremental(_)));
    has(&signed3.zone, &[&first, &second], 3);
}

/// Signed on arrival at the signer's time, as a loaded zone is: never before the last
/// signing (here two hours ahead of the wall clock, as after a clock stepped back), the
/// time to sign again given back on the wall clock.
#[test]
fn a_transferred_zone_is_signed_at_the_signers_time() {
    let dir = Dir::new("clock");
    let s = spec(&dir.0, Denial::Nsec);
    let v1 = unsigned(5, 0..3, "");
    let ahead = signing::unix_now() + 7200;
    sign_whole(&v1, &s, ahead).unwrap();
    let (wall, now) = signer_time(&apex(), &s);
    assert!(now >= ahead && wall < ahead - 7000, "{wall} {now}");
    let signed = sign_whole(&v1, &s, now).unwrap();
    let due = signed.due;
    let inceptions: BTreeSet<u32> = signed
        .zone
        .records()
        .filter(|r| r.rtype == RType::RRSIG)
        .map(|r| u32::from_be_bytes(r.rdata[12..16].try_into().unwrap()))
        .collect();
    assert_eq!(inceptions.len(), 1);
    assert!(u64::from(*inceptions.first().unwrap()) >= ahead - 3600);
    assert_eq!(due_on_wall(signed, (wall, now)).due, due - (now - wall));
}

/// Kept by the keeper thread: while a copy is being written, the versions asked for behind
/// it wait, and one with a newer request behind it is let go at once and never written; a
/// stop waits for what is pending.
#[test]
fn the_keeper_writes_the_latest_version_and_lets_older_ones_go() {
    use super::super::keeper::{hold_writer, keep_later, wait, Origin};
    let dir = Dir::new("keeper");
    let s = Arc::new(spec(&dir.0, Denial::Nsec));
    let v1 = sign_whole(&unsigned(5, 0..3, ""), &s, NOW).unwrap().zone;
    let v2 = sign_whole(&unsigned(6, 0..4, ""), &s, NOW + 1)
        .unwrap()
        .zone;
    let kept = dir.0.join("state").join("bump.test.signed");
    fs::remove_file(&kept).unwrap();
    let writer = hold_writer();
    keep_later(
        Arc::clone(&s),
        Arc::clone(&v1),
        NOW + 100,
        Origin::Fingerprint("f1".into()),
    );
    keep_later(
        Arc::clone(&s),
        Arc::clone(&v2),
        NOW + 200,
        Origin::Fingerprint("f2".into()),
    );
    let end = Instant::now() + std::time::Duration::from_secs(10);
    while Arc::strong_count(&v1) > 1 {
        assert!(Instant::now() < end, "the older version is still held");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(Arc::strong_count(&v2), 2, "the latest waits for its turn");
    assert!(!kept.exists());
    drop(writer);
    assert!(wait(std::time::Duration::from_secs(10)));
    let text = fs::read_to_string(&kept).unwrap();
    assert!(
        text.starts_with("; shardns-signed fingerprint f2 serial 6 due "),
        "{}",
        &text[..80]
    );
}
