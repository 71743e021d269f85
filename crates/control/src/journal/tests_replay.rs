//! journal::tests_replay -- a journal made by recording versions S1 -> S2 -> S3, replayed
//! over the zone file: at S1 or S2 it serves S3; at a serial the chain does not hold the
//! file wins and the journal starts anew; a damaged tail replays up to the last whole
//! record; a signed zone is not replayed (what is missing, said).

use super::*;
use shardns_zone::{load_zone_text, ScanOptions};
use std::fs::{self, OpenOptions};

const APEX: &str = "u.test.";

/// Version `serial` of the zone: each version adds a host, and S3 drops the first one.
fn version(serial: u32) -> Zone {
    let mut text = format!("$TTL 60\n@ SOA ns h {serial} 60 60 600 60\n@ NS ns\nns A 192.0.2.1\n");
    for i in 1..=serial.min(3) {
        if !(serial >= 3 && i == 1) {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", 10 + i));
        }
    }
    if serial > 3 {
        text.push_str(&format!("big{serial} TXT \"edited\"\n"));
    }
    let opts = ScanOptions::new(APEX.parse().unwrap());
    load_zone_text(text.as_bytes(), Path::new("t"), &opts)
        .unwrap()
        .0
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shardns-replay-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn settings(path: &Path) -> Settings {
    Settings {
        path: Some(path.to_path_buf()),
        legacy: None,
        max_size: 1 << 20,
        max_depth: 20,
        updatable: true,
    }
}

/// A journal on disk recording S1 -> S2 -> S3, as reloads of the file make it.
fn recorded(path: &Path) {
    let s = settings(path);
    let j = Journals::default();
    let v: Vec<Zone> = (1..=3).map(version).collect();
    record(&j, Some(&s), None, &v[0]);
    record(&j, Some(&s), Some(&v[0]), &v[1]);
    record(&j, Some(&s), Some(&v[1]), &v[2]);
    assert_eq!(j.history(v[0].apex()).map(|h| h.depth()), Some(2));
}

/// The records of a zone (as changes from S1, sorted), to compare versions by what they
/// serve, whatever order their names are kept in.
fn records(z: &Zone) -> Vec<String> {
    let mut lines: Vec<String> = Diff::compute(&version(1), z)
        .to_text()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_file_in_the_chain_is_brought_to_the_journals_end() {
    let dir = scratch("chain");
    let path = dir.join("u.zone.journal");
    recorded(&path);
    for file_serial in [1, 2] {
        let z = replay(version(file_serial), &path, false, Read::First).unwrap();
        assert_eq!(z.serial(), 3, "file at S{file_serial}");
        assert_eq!(records(&z), records(&version(3)), "file at S{file_serial}");
        // The journal is kept, and opened at start it is the zone's history.
        let j = Journals::default();
        record(&j, Some(&settings(&path)), None, &z);
        let h = j.history(z.apex()).expect("kept");
        assert_eq!((h.first_serial(), h.last_serial()), (Some(1), Some(3)));
    }
    // At its end already: nothing to do, the same version.
    assert_eq!(
        replay(version(3), &path, false, Read::First)
            .unwrap()
            .serial(),
        3
    );
    // Read again unchanged (a named reload): replayed too; a changed file wins.
    assert_eq!(
        replay(version(1), &path, false, Read::Unchanged)
            .unwrap()
            .serial(),
        3
    );
    // Read again unchanged, but the journal no longer reaches back to the file (trimmed):
    // refused, the version served kept, rather than going back to the file.
    let e = replay(version(0), &path, false, Read::Unchanged).unwrap_err();
    assert!(e.contains("serial 0 is no longer in the chain"), "{e}");
    assert!(path.exists());
    // A changed file wins when it moves the serial on; one that does not is refused.
    let changed = |served| Read::Changed { served };
    assert_eq!(
        replay(version(9), &path, false, changed(3))
            .unwrap()
            .serial(),
        9
    );
    for file_serial in [1, 3] {
        let e = replay(version(file_serial), &path, false, changed(3)).unwrap_err();
        assert!(
            e.contains(&format!("serial {file_serial} is not above")),
            "{e}"
        );
        assert!(e.contains("serial 3 still served"), "{e}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_file_serial_not_in_the_chain_wins_and_the_journal_starts_anew() {
    let dir = scratch("beyond");
    let path = dir.join("u.zone.journal");
    recorded(&path);
    let z = replay(version(9), &path, false, Read::First).unwrap();
    assert_eq!(z.serial(), 9);
    assert_eq!(records(&z), records(&version(9)));
    assert!(!path.exists(), "the journal starts anew");
    // The next change is recorded from S9 on.
    let j = Journals::default();
    let s = settings(&path);
    record(&j, Some(&s), None, &z);
    record(&j, Some(&s), Some(&z), &version(10));
    let h = j.history(z.apex()).unwrap();
    assert_eq!((h.first_serial(), h.last_serial()), (Some(9), Some(10)));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_tail_replays_up_to_the_last_whole_record() {
    let dir = scratch("tail");
    let path = dir.join("u.zone.journal");
    recorded(&path);
    // A crash in the middle of the append of S2 -> S3.
    let len = fs::metadata(&path).unwrap().len();
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 7).unwrap();
    drop(f);
    let z = replay(version(1), &path, false, Read::First).unwrap();
    assert_eq!(z.serial(), 2);
    assert_eq!(records(&z), records(&version(2)));
    // Opened at start, the journal is cut after its whole record and kept.
    let j = Journals::default();
    record(&j, Some(&settings(&path)), None, &z);
    let h = j.history(z.apex()).unwrap();
    assert_eq!((h.first_serial(), h.last_serial()), (Some(1), Some(2)));
    assert_eq!(
        parse(&fs::read(&path).unwrap(), &APEX.parse().unwrap())
            .unwrap()
            .1,
        None
    );
    let _ = fs::remove_dir_all(&dir);
}

/// A signed zone's journal holds the differences between *signed* versions, and the zone
/// is signed anew from its file (with its updates, `crate::signing::updates`) at load: it
/// is not replayed, and left as it is (the history IXFR serves), neither moved aside nor
/// started anew here.
#[test]
fn a_signed_zone_is_not_replayed_and_its_journal_is_kept() {
    let dir = scratch("signed");
    let path = dir.join("u.zone.journal");
    recorded(&path);
    let before = fs::read(&path).unwrap();
    let z = replay(version(1), &path, true, Read::First).unwrap();
    assert_eq!(z.serial(), 1, "the version signed at load is served");
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(!dir.join("u.zone.journal.unreplayed").exists());
    let again = replay(version(3), &path, true, Read::Unchanged).unwrap();
    assert_eq!(again.serial(), 3);
    assert_eq!(fs::read(&path).unwrap(), before);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn apply_checks_where_a_diff_starts() {
    let d = Diff::compute(&version(1), &version(2));
    assert!(apply(&d, &version(2))
        .unwrap_err()
        .contains("starts at serial 1"));
    assert_eq!(apply(&d, &version(1)).unwrap().serial(), 2);
}

#[test]
fn an_updatable_zone_has_a_journal_though_nobody_may_transfer_it() {
    let mut c = Config::default();
    let apex: Name = APEX.parse().unwrap();
    let mut z = ZoneConfig::new(apex.clone(), "d/u.zone".into());
    c.zones.push(z.clone());
    assert_eq!(settings_for(&c, &apex), None);
    z.update_policy = vec!["grant k. zone A".into()];
    c.zones = vec![z];
    let s = settings_for(&c, &apex).expect("a journal");
    assert_eq!(s.path.as_deref(), Some(Path::new("d/u.zone.journal")));
    c.server.journal_directory = Some("/var/j".into());
    let s = settings_for(&c, &apex).unwrap();
    assert_eq!(s.path.as_deref(), Some(Path::new("/var/j/u.test.journal")));
}

fn settings_for(c: &Config, apex: &Name) -> Option<Settings> {
    super::settings(c, apex, config_file(c, apex))
}
