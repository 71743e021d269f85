//! The kept updates of a signed zone: written and read back, cut short, applied over the
//! file's records, and which file wins.

use super::*;
use crate::signing::to_list;
use shardns_zone::ScanOptions;
use std::path::Path;

fn apex() -> Name {
    "z.test.".parse().unwrap()
}

fn dir(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "shardns-updates-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    ));
    fs::create_dir_all(&p).unwrap();
    p
}

fn list(serial: u32) -> RecordList {
    let text = format!(
        "$TTL 300\n@ SOA ns.z.test. admin.z.test. {serial} 3600 600 86400 300\n\
         @ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\nWWW TXT \"x\"\n"
    );
    let opts = ScanOptions::new(apex());
    let s = shardns_zone::scan::scan_text(text.as_bytes(), Path::new("z.zone"), &opts).unwrap();
    to_list(s.chunks)
}

fn soa(serial: u32) -> (u32, Vec<u8>) {
    let l = list(serial);
    let r = l.items.iter().find(|r| r.rtype == RType::SOA).unwrap();
    (r.ttl, l.rdata(r).to_vec())
}

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

/// Two changes: `new` added (with an RRSIG, which is not kept), then `www` TXT deleted
/// (given in another case) and `www` A's TTL changed.
fn changes() -> Vec<Change> {
    vec![
        Change {
            deleted: vec![],
            added: vec![
                (name("new.z.test."), RType::A, 60, vec![192, 0, 2, 9]),
                (name("new.z.test."), RType::RRSIG, 60, vec![1, 2, 3]),
            ],
            old_soa: soa(1),
            soa: soa(2),
        },
        Change {
            deleted: vec![
                (name("www.z.test."), RType::TXT, 300, b"\x01x".to_vec()),
                (name("www.z.test."), RType::A, 300, vec![192, 0, 2, 2]),
            ],
            added: vec![(name("www.z.test."), RType::A, 90, vec![192, 0, 2, 2])],
            old_soa: soa(2),
            soa: soa(3),
        },
    ]
}

fn texts(l: &RecordList) -> Vec<String> {
    let mut v: Vec<String> = l
        .items
        .iter()
        .map(|r| {
            let t = l.display(r).to_string();
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn kept_changes_read_back_and_apply_over_the_file() {
    let d = dir("apply");
    let u = Updates::new(&d, &apex());
    // No file: the records as read, and the file started over their serial.
    let (l, pending) = u.replay(list(1), None).unwrap();
    assert_eq!(texts(&l), texts(&list(1)));
    u.finish(pending).unwrap();
    assert_eq!(u.read().unwrap(), Some((1, vec![])));
    for c in changes() {
        u.append(&c).unwrap();
    }
    let (base, read) = u.read().unwrap().unwrap();
    assert_eq!(base, 1);
    assert_eq!(read.len(), 2);
    assert!(read[0].added.iter().all(|r| r.1 != RType::RRSIG));
    assert_eq!(read[1], changes()[1]);
    // A crash in the middle of an append: the whole records are read.
    let path = state_path(&d, &apex(), "updates");
    let mut bytes = fs::read(&path).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(b"SUC1\0\0\0\x40abc");
    fs::write(&path, &bytes).unwrap();
    assert_eq!(u.read().unwrap().unwrap().1.len(), 2);
    fs::write(&path, &bytes[..whole]).unwrap();

    let (l, pending) = u.replay(list(1), None).unwrap();
    let t = texts(&l);
    assert!(
        t.iter()
            .any(|r| r.starts_with("new.z.test.") && r.contains("60 IN A 192.0.2.9")),
        "{t:?}"
    );
    assert!(
        t.iter()
            .any(|r| r.starts_with("www.z.test.") && r.contains("90 IN A 192.0.2.2")),
        "{t:?}"
    );
    assert!(!t.iter().any(|r| r.contains("TXT")), "{t:?}");
    assert_eq!(t.iter().filter(|r| r.contains("SOA")).count(), 1, "{t:?}");
    assert_eq!(list_serial(&l, &apex()), Some(3));
    assert_eq!(l.items.len(), 5);
    u.finish(pending).unwrap();
    // Kept as one change, which applies as the two did.
    let (base, one) = u.read().unwrap().unwrap();
    assert_eq!((base, one.len()), (1, 1));
    assert_eq!(one[0].serial(), 3);
    let (again, _) = u.replay(list(1), None).unwrap();
    assert_eq!(texts(&again), t);
    assert_eq!(texts(&apply(list(1), &apex(), &one)), t);
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn a_changed_file_wins_or_is_refused() {
    let d = dir("wins");
    let u = Updates::new(&d, &apex());
    u.restart(1).unwrap();
    for c in changes() {
        u.append(&c).unwrap();
    }
    // Changed while running, its serial not above the served one: refused, nothing moved.
    let e = u.replay(list(3), Some(3)).err().unwrap();
    assert!(e.contains("not above the served version's 3"), "{e}");
    assert_eq!(u.read().unwrap().unwrap().1.len(), 2);
    // Edited while the server was down (another serial): the file wins, the changes kept
    // aside, the file started anew over the new serial.
    let (l, pending) = u.replay(list(7), None).unwrap();
    assert_eq!(texts(&l), texts(&list(7)));
    u.finish(pending).unwrap();
    assert_eq!(u.read().unwrap(), Some((7, vec![])));
    let aside = state_path(&d, &apex(), "updates.dropped");
    assert!(aside.exists());
    // Changed while running with a serial above: the file wins too.
    u.append(&changes()[0]).unwrap();
    let (l, pending) = u.replay(list(9), Some(8)).unwrap();
    assert_eq!(texts(&l), texts(&list(9)));
    u.finish(pending).unwrap();
    assert_eq!(u.read().unwrap(), Some((9, vec![])));
    let _ = fs::remove_dir_all(&d);
}

/// The apex DNSKEY, CDS and CDNSKEY an update adds are kept (a multi-signer zone publishes
/// them after a restart; the full signer drops them from any other zone); RRSIGs are not.
#[test]
fn apex_key_records_are_kept() {
    let d = dir("keys");
    let u = Updates::new(&d, &apex());
    let (_, pending) = u.replay(list(1), None).unwrap();
    u.finish(pending).unwrap();
    let dnskey = vec![1, 0, 3, 13, 9, 9, 9];
    let change = Change {
        deleted: vec![],
        added: vec![
            (apex(), RType::DNSKEY, 300, dnskey.clone()),
            (apex(), RType::CDS, 300, vec![1, 2, 13, 2, 7]),
            (apex(), RType::RRSIG, 300, vec![1, 2, 3]),
        ],
        old_soa: soa(1),
        soa: soa(2),
    };
    u.append(&change).unwrap();
    let (l, _) = u.replay(list(1), None).unwrap();
    let kept: Vec<RType> = l.items.iter().map(|r| r.rtype).collect();
    assert!(
        kept.contains(&RType::DNSKEY) && kept.contains(&RType::CDS),
        "{kept:?}"
    );
    assert!(!kept.contains(&RType::RRSIG), "{kept:?}");
    assert!(l.items.iter().any(|r| l.rdata(r) == &dnskey[..]));
    let _ = fs::remove_dir_all(&d);
}

/// `shardns sign`'s reading: the changes applied as a start applies them when they are
/// over this file's serial, reported otherwise; the file is never written.
#[test]
fn read_only_application_leaves_the_file_alone() {
    let d = dir("readonly");
    let u = Updates::new(&d, &apex());
    let (l, kept) = u.apply_read_only(list(1)).unwrap();
    assert_eq!((texts(&l), kept), (texts(&list(1)), Kept::None));
    assert!(!u.path().exists(), "not made");
    u.restart(1).unwrap();
    for c in changes() {
        u.append(&c).unwrap();
    }
    let before = fs::read(u.path()).unwrap();
    let (l, kept) = u.apply_read_only(list(1)).unwrap();
    assert_eq!(kept, Kept::Applied { count: 2, last: 3 });
    let (replayed, _) = u.replay(list(1), None).unwrap();
    assert_eq!(texts(&l), texts(&replayed), "as a start applies them");
    // Over another serial of the file: the records as read, nothing moved aside.
    let (l, kept) = u.apply_read_only(list(7)).unwrap();
    assert_eq!(texts(&l), texts(&list(7)));
    let other = Kept::OtherFile {
        base: 1,
        count: 2,
        last: 3,
    };
    assert_eq!(kept, other);
    assert_eq!(fs::read(u.path()).unwrap(), before, "the file untouched");
    assert!(!state_path(&d, &apex(), "updates.dropped").exists());
    let _ = fs::remove_dir_all(&d);
}
