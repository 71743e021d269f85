//! journal::tests -- histories recorded, read back, trimmed, cut; settings; files of
//! other zones left alone.

use super::disk::parse;
use super::*;
use shardns_zone::{load_zone_text, ScanOptions};
use std::fs::{self, OpenOptions};

fn zone(serial: u32, extra: &str) -> Zone {
    zone_at("j.test.", serial, extra)
}

fn zone_at(apex: &str, serial: u32, extra: &str) -> Zone {
    let text =
        format!("$TTL 60\n@ SOA ns h {serial} 60 60 600 60\n@ NS ns\nns A 192.0.2.1\n{extra}");
    let opts = ScanOptions::new(apex.parse().unwrap());
    load_zone_text(text.as_bytes(), Path::new("t"), &opts)
        .unwrap()
        .0
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shardns-journal-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn on_disk(path: &Path) -> Settings {
    Settings {
        path: Some(path.to_path_buf()),
        legacy: None,
        max_size: 1 << 20,
        max_depth: 3,
        updatable: false,
    }
}

#[test]
fn a_zone_changed_over_and_over_appends_its_file_bounded_to_twice_the_depth() {
    let dir = scratch("bounded");
    let path = dir.join("j.test.zone.journal");
    let s = on_disk(&path);
    let apex: Name = "j.test.".parse().unwrap();
    let j = Journals::default();
    let versions: Vec<Zone> = (1..=20)
        .map(|i| zone(i, &format!("h{i} A 192.0.2.{i}\n")))
        .collect();
    record(&j, Some(&s), None, &versions[0]);
    let mut most = 0;
    let mut rewrites = 0;
    for w in versions.windows(2) {
        let before = fs::metadata(&path).map_or(0, |m| m.len());
        record(&j, Some(&s), Some(&w[0]), &w[1]);
        let (diffs, damage) = parse(&fs::read(&path).unwrap(), &apex).unwrap();
        assert!(damage.is_none());
        assert_eq!(diffs.last().map(|d| d.to()), Some(w[1].serial()));
        most = most.max(diffs.len());
        rewrites += usize::from(fs::metadata(&path).unwrap().len() < before);
    }
    // Past the depth, most changes appended; the file never above twice the depth.
    assert_eq!(most, 2 * s.max_depth);
    assert!(rewrites <= 19 / s.max_depth, "{rewrites} rewrites");
    let h = j.history(apex.as_ref()).unwrap();
    assert_eq!((h.depth(), h.last_serial()), (3, Some(20)));
    // Read back at start: the history within its limits, ending at the zone's serial.
    let again = Journals::default();
    record(&again, Some(&s), None, &versions[19]);
    let h2 = again.history(apex.as_ref()).unwrap();
    assert_eq!(
        (h2.depth(), h2.first_serial(), h2.last_serial()),
        (3, Some(17), Some(20))
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn appended_read_back_trimmed_and_a_cut_tail_dropped() {
    let dir = scratch("trim");
    let path = dir.join("j.test.zone.journal");
    let s = on_disk(&path);
    let apex: Name = "j.test.".parse().unwrap();
    let j = Journals::default();
    let versions: Vec<Zone> = (1..=5)
        .map(|i| zone(i, &format!("h{i} A 192.0.2.{i}\n")))
        .collect();
    record(&j, Some(&s), None, &versions[0]);
    for w in versions.windows(2) {
        record(&j, Some(&s), Some(&w[0]), &w[1]);
    }
    let h = j.history(apex.as_ref()).unwrap();
    assert_eq!(
        (h.depth(), h.first_serial(), h.last_serial()),
        (3, Some(2), Some(5))
    );
    // Read back at start: the same three.
    let again = Journals::default();
    record(&again, Some(&s), None, &versions[4]);
    let h2 = again.history(apex.as_ref()).unwrap();
    assert_eq!((h2.depth(), h2.first_serial()), (3, Some(2)));
    // A crash in the middle of the last append: the record is dropped, the file cut.
    let len = fs::metadata(&path).unwrap().len();
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 5).unwrap();
    drop(f);
    let (diffs, damage) = parse(&fs::read(&path).unwrap(), &apex).unwrap();
    assert_eq!(diffs.len(), 2);
    assert!(damage.is_some());
    // It now ends at 4, the zone is at 5: started anew.
    let cut_short = Journals::default();
    record(&cut_short, Some(&s), None, &versions[4]);
    assert_eq!(cut_short.history(apex.as_ref()).map_or(0, |h| h.depth()), 0);
    assert!(!path.exists());
    // A flipped octet is found by the checksum.
    record(&cut_short, Some(&s), Some(&versions[3]), &versions[4]);
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    let (diffs, damage) = parse(&bytes, &apex).unwrap();
    assert!(diffs.is_empty());
    assert!(damage.unwrap().1.contains("checksum"));
    // A serial going backwards starts the journal anew.
    record(&cut_short, Some(&s), Some(&versions[4]), &versions[2]);
    assert_eq!(cut_short.history(apex.as_ref()).map_or(0, |h| h.depth()), 0);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn settings_follow_the_acl_and_the_limits() {
    let mut c = Config::default();
    let apex: Name = "j.test.".parse().unwrap();
    assert_eq!(settings(&c, &apex, Some(Path::new("z"))), None);
    c.server.allow_transfer = vec!["127.0.0.1".parse().unwrap()];
    let s = settings(&c, &apex, Some(Path::new("d/z"))).unwrap();
    assert_eq!(s.path.as_deref(), Some(Path::new("d/z.journal")));
    assert_eq!(s.max_depth, DEFAULT_MAX_DEPTH as usize);
    c.server.journal_directory = Some("/var/j".into());
    let s = settings(&c, &apex, None).unwrap();
    assert_eq!(s.path.as_deref(), Some(Path::new("/var/j/j.test.journal")));
    c.server.journal_max_depth = Some(0);
    assert_eq!(settings(&c, &apex, None), None);
}

/// Two zones given one journal file (by their files, or the names of an older version):
/// the file stays the first zone's, whole; the second keeps its history in memory.
#[test]
fn another_zones_journal_is_neither_written_nor_removed() {
    let dir = scratch("foreign");
    let path = dir.join("shared.journal");
    let s = on_disk(&path);
    let j = Journals::default();
    let (a1, a2) = (zone(1, ""), zone(2, "x A 192.0.2.2\n"));
    record(&j, Some(&s), None, &a1);
    record(&j, Some(&s), Some(&a1), &a2);
    let theirs = fs::read(&path).unwrap();
    let other: Name = "k.test.".parse().unwrap();
    let b: Vec<Zone> = (1..=3)
        .map(|i| zone_at("k.test.", i, &format!("y A 192.0.2.{i}\n")))
        .collect();
    // At start (the file is read), a change (appended), a change that drops a version
    // (rewritten), a serial going back (removed): none touches the file.
    let s1 = Settings {
        max_depth: 1,
        ..on_disk(&path)
    };
    record(&j, Some(&s1), None, &b[0]);
    record(&j, Some(&s1), Some(&b[0]), &b[1]);
    assert_eq!(j.history(other.as_ref()).map(|h| h.depth()), Some(1));
    record(&j, Some(&s1), Some(&b[1]), &b[2]);
    assert_eq!(j.history(other.as_ref()).map(|h| h.depth()), Some(1));
    record(&j, Some(&s1), Some(&b[2]), &b[0]);
    assert_eq!(fs::read(&path).unwrap(), theirs);
    // Not a journal at all: left alone too.
    fs::write(&path, b"some file of the operator's").unwrap();
    let j2 = Journals::default();
    record(&j2, Some(&s), None, &a2);
    record(&j2, Some(&s), Some(&a2), &zone(3, ""));
    assert_eq!(fs::read(&path).unwrap(), b"some file of the operator's");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn journal_names_are_one_per_zone_and_an_old_name_is_taken_over() {
    let dir = scratch("names");
    let mut c = Config::default();
    c.server.allow_transfer = vec!["127.0.0.1".parse().unwrap()];
    c.server.journal_directory = Some(dir.clone());
    let (slash, under): (Name, Name) = ("a/b.test.".parse().unwrap(), "a_b.test.".parse().unwrap());
    let (s_slash, s_under) = (
        settings(&c, &slash, None).unwrap(),
        settings(&c, &under, None).unwrap(),
    );
    assert_ne!(s_slash.path, s_under.path);
    assert_eq!(s_under.path, Some(dir.join("a_b.test.journal")));
    assert_eq!(s_under.legacy, None, "its name did not change");
    assert_eq!(s_slash.legacy, Some(dir.join("a_b.test.journal")));
    let root = settings(&c, &Name::root(), None).unwrap();
    let named_root = settings(&c, &"root.".parse().unwrap(), None).unwrap();
    assert_ne!(root.path, named_root.path);

    // `a_b.test.`'s journal, under the name both had: `a/b.test.` does not take it.
    let j = Journals::default();
    let u: Vec<Zone> = (1..=2)
        .map(|i| zone_at("a_b.test.", i, &format!("u A 192.0.2.{i}\n")))
        .collect();
    record(&j, Some(&s_under), None, &u[0]);
    record(&j, Some(&s_under), Some(&u[0]), &u[1]);
    let kept = fs::read(dir.join("a_b.test.journal")).unwrap();
    let v = zone_at("a/b.test.", 2, "");
    let j2 = Journals::default();
    record(&j2, Some(&s_slash), None, &v);
    assert_eq!(j2.history(slash.as_ref()).map_or(0, |h| h.depth()), 0);
    assert_eq!(fs::read(dir.join("a_b.test.journal")).unwrap(), kept);

    // A zone's own journal under its old name is read and renamed.
    let dotted: Name = "x\\.y.test.".parse().unwrap();
    let s_dotted = settings(&c, &dotted, None).unwrap();
    let old = s_dotted.legacy.clone().unwrap();
    assert_eq!(old, dir.join("x\\.y.test.journal"));
    let w: Vec<Zone> = (1..=2)
        .map(|i| zone_at("x\\.y.test.", i, &format!("w A 192.0.2.{i}\n")))
        .collect();
    let as_before = Settings {
        path: Some(old.clone()),
        ..s_dotted.clone()
    };
    let j3 = Journals::default();
    record(&j3, Some(&as_before), None, &w[0]);
    record(&j3, Some(&as_before), Some(&w[0]), &w[1]);
    let j4 = Journals::default();
    record(&j4, Some(&s_dotted), None, &w[1]);
    assert_eq!(j4.history(dotted.as_ref()).map(|h| h.depth()), Some(1));
    assert!(!old.exists());
    assert!(s_dotted.path.unwrap().exists());
    let _ = fs::remove_dir_all(&dir);
}
