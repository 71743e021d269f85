//! The zone library: regular files only, reading only what changed, zone lists.

use super::*;
use shardns_config::Config;
use shardns_config::ZoneConfig;

fn spec(path: &Path) -> ZoneSpec {
    ZoneSpec {
        name: "z.test.".parse().unwrap(),
        source: ZoneSource::File(path.into()),
        signing: None,
        journal: None,
    }
}

#[test]
fn only_regular_files_are_read() {
    let dir = std::env::temp_dir().join(format!("shardns-zones-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let zone = dir.join("z.zone");
    std::fs::write(
        &zone,
        "$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n",
    )
    .unwrap();
    let mut lib = ZoneLibrary::default();
    let report = lib.load(&[spec(&zone)]);
    assert_eq!((report.loaded, report.failures.len()), (1, 0));

    // /dev/zero would never end; a directory and a missing file are errors too. The
    // zone loaded before is kept each time.
    for (bad, says) in [
        (Path::new("/dev/zero"), "not a regular file"),
        (dir.as_path(), "a directory"),
        (&dir.join("missing"), "cannot read"),
    ] {
        let report = lib.load(&[spec(bad)]);
        assert_eq!(report.loaded, 0);
        let f = &report.failures[0];
        assert!(f.kept_previous);
        assert!(f.error.to_string().contains(says), "{}", f.error);
        assert_eq!(lib.len(), 1);
    }
    let link = dir.join("link.zone");
    std::os::unix::fs::symlink(&zone, &link).unwrap();
    assert_eq!(lib.load(&[spec(&link)]).loaded, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

fn zone_text(serial: u32, extra: &str) -> String {
    format!("$TTL 60\n@ SOA ns h {serial} 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n{extra}")
}

/// Waits out the file system's timestamp granularity, so a rewrite shows in the mtime.
fn tick() {
    std::thread::sleep(std::time::Duration::from_millis(20));
}

#[test]
fn a_reload_reads_only_what_changed_watching() {
    reads_only_what_changed(true);
}

#[test]
fn a_reload_reads_only_what_changed_without_inotify() {
    reads_only_what_changed(false);
}

/// Without inotify every file is `stat`ed at each reload (50 zone files and one included
/// file); with it, the watched directory and the changed file.
fn reads_only_what_changed(watch: bool) {
    let dir = std::env::temp_dir().join(format!("shardns-lib-{}-{watch}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = 50;
    let specs: Vec<ZoneSpec> = (0..n)
        .map(|i| {
            let path = dir.join(format!("z{i}.zone"));
            let extra = if i == 7 { "$INCLUDE inc.txt\n" } else { "" };
            std::fs::write(&path, zone_text(1, extra)).unwrap();
            ZoneSpec {
                name: format!("z{i}.test.").parse().unwrap(),
                source: ZoneSource::File(path),
                signing: None,
                journal: None,
            }
        })
        .collect();
    std::fs::write(dir.join("inc.txt"), "www A 192.0.2.7\n").unwrap();
    let mut lib = ZoneLibrary::new(watch);
    let r = lib.load(&specs);
    assert_eq!((r.loaded, r.unchanged, r.failures.len()), (n, 0, 0));
    assert_eq!(lib.len(), n);
    assert_eq!(lib.polled.len(), 0);

    // Nothing changed: nothing read.
    let r = lib.load(&specs);
    assert_eq!((r.loaded, r.unchanged, r.removed), (0, n, 0));
    assert!(r.added.is_empty() && r.replaced.is_empty());
    let every_file = n + 1;
    assert_eq!(r.checked, if watch { 1 } else { every_file });
    assert_eq!(r.full_pass.is_some(), !watch);

    // One file rewritten: that zone alone, and the version it replaced is handed back.
    tick();
    std::fs::write(dir.join("z3.zone"), zone_text(2, "")).unwrap();
    let r = lib.load(&specs);
    assert_eq!((r.loaded, r.unchanged), (1, n - 1));
    assert_eq!(r.checked, if watch { 2 } else { every_file });
    assert_eq!(r.added[0].serial(), 2);
    assert_eq!(r.replaced[0].serial(), 1);
    let z3: Name = "z3.test.".parse().unwrap();
    assert_eq!(r.set.get(z3.as_ref()).unwrap().serial(), 2);

    // An $INCLUDEd file changed: its zone is read again.
    tick();
    std::fs::write(dir.join("inc.txt"), "www A 192.0.2.77\n").unwrap();
    let r = lib.refresh();
    assert_eq!(r.loaded, 1);
    assert_eq!(r.added[0].apex().to_string(), "z7.test.");
    // The zone file and its included file are `stat`ed again for their stamps.
    assert_eq!(r.checked, if watch { 3 } else { every_file + 1 });

    // Named: read again although unchanged; the others are left alone.
    let (r, unknown) = lib.reload_named(&[z3.clone(), "nosuch.test.".parse().unwrap()]);
    assert_eq!(unknown.len(), 1);
    assert_eq!((r.loaded, r.unchanged), (1, n - 1));

    // A zone dropped from the config and one broken: the broken one is reported once
    // and keeps its version; the dropped one is handed back for freeing.
    tick();
    std::fs::write(
        dir.join("z4.zone"),
        "$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.300\n",
    )
    .unwrap();
    let fewer = &specs[1..];
    let r = lib.load(fewer);
    assert_eq!((r.loaded, r.removed, r.failures.len()), (0, 1, 1));
    assert!(r.failures[0].kept_previous);
    assert_eq!(r.replaced.len(), 1);
    assert_eq!(lib.len(), n - 1);
    let r = lib.load(fewer);
    assert_eq!(
        (r.loaded, r.failures.len()),
        (0, 0),
        "an unchanged broken file is not read again"
    );
    let z4: Name = "z4.test.".parse().unwrap();
    assert_eq!(r.set.get(z4.as_ref()).unwrap().serial(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_zone_list_names_zones_and_tables_win() {
    let dir = std::env::temp_dir().join(format!("shardns-list-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let list = dir.join("zones.list");
    std::fs::write(
        &list,
        "# hosting customers\na.test a.zone\n\nb.test. /abs/b.zone   # absolute\nA.TEST a2.zone\n",
    )
    .unwrap();
    let mut config = Config::default();
    config.server.zone_list = Some(list.clone());
    config.zones.push(ZoneConfig::new(
        "b.test".parse().unwrap(),
        "/t/b.zone".into(),
    ));
    let specs = specs(&config, None).unwrap();
    let files: Vec<(String, PathBuf)> = specs
        .iter()
        .map(|s| match &s.source {
            ZoneSource::File(f) => (s.name.to_string(), f.clone()),
            ZoneSource::Embedded(_) => unreachable!(),
        })
        .collect();
    assert_eq!(
        files,
        [
            ("A.TEST.".to_string(), dir.join("a2.zone")),
            ("b.test.".to_string(), PathBuf::from("/t/b.zone")),
        ]
    );
    std::fs::write(&list, "ok.test ok.zone\nbad\n").unwrap();
    let e = super::specs(&config, None).unwrap_err();
    assert!(
        e.contains(&format!("{}:2: expected NAME FILE", list.display())),
        "{e}"
    );
    std::fs::write(&list, "ok.test ok.zone\nbad line here\n").unwrap();
    let e = super::specs(&config, None).unwrap_err();
    assert!(e.contains(":2: unknown flag \"here\""), "{e}");
    // Flags sign a listed zone, with a key directory.
    std::fs::write(
        &list,
        "s.test s.zone dnssec\nn.test n.zone nsec3\no.test o.zone nsec3_opt_out\nu.test u.zone\n",
    )
    .unwrap();
    let e = super::specs(&config, None).unwrap_err();
    assert!(
        e.contains(":1: signing zone s.test needs server.key_directory"),
        "{e}"
    );
    config.server.key_directory = Some(dir.join("keys"));
    let specs = super::specs(&config, None).unwrap();
    let denial = |name: &str| {
        let s = specs.iter().find(|s| s.name.to_string() == name).unwrap();
        s.signing.as_ref().map(|s| s.denial.clone())
    };
    use shardns_dnssec::{Denial, Nsec3Params};
    assert_eq!(denial("s.test."), Some(Denial::Nsec));
    assert_eq!(
        denial("n.test."),
        Some(Denial::Nsec3 {
            params: Nsec3Params::default(),
            opt_out: false
        })
    );
    assert_eq!(
        denial("o.test."),
        Some(Denial::Nsec3 {
            params: Nsec3Params::default(),
            opt_out: true
        })
    );
    assert_eq!(denial("u.test."), None);
    std::fs::write(&list, "bad..name x.zone\n").unwrap();
    let e = super::specs(&config, None).unwrap_err();
    assert!(e.contains(":1: zone name"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory of its own under the temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("shardns-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` zones `z{i}.test.` in `dir` (serial 1, www 192.0.2.1); the specs.
fn many(dir: &Path, n: usize) -> Vec<ZoneSpec> {
    (0..n)
        .map(|i| {
            let path = dir.join(format!("z{i}.zone"));
            std::fs::write(&path, zone_text(1, "www A 192.0.2.1\n")).unwrap();
            ZoneSpec {
                name: format!("z{i}.test.").parse().unwrap(),
                source: ZoneSource::File(path),
                signing: None,
                journal: None,
            }
        })
        .collect()
}

fn serial(r: &LoadReport, zone: &str) -> u32 {
    let name: Name = zone.parse().unwrap();
    r.set.get(name.as_ref()).unwrap().serial()
}

/// Each way an operator changes a zone is seen by its event: the reload `stat`s the
/// watched directory and the changed file, reads that zone alone, and `stat`s none of the
/// other zone files. No waiting for the clock between changes: events do not depend on
/// the mtime moving.
#[test]
fn inotify_sees_every_kind_of_change() {
    let scratch = Scratch::new("watch-kinds");
    let dir = &scratch.0;
    let n = 1000;
    let mut specs = many(dir, n);
    // z1000 is configured but its file is missing at first; z7 includes inc.txt.
    specs.push(ZoneSpec {
        name: "z1000.test.".parse().unwrap(),
        source: ZoneSource::File(dir.join("z1000.zone")),
        signing: None,
        journal: None,
    });
    std::fs::write(dir.join("inc.txt"), "www A 192.0.2.7\n").unwrap();
    std::fs::write(dir.join("z7.zone"), zone_text(1, "$INCLUDE inc.txt\n")).unwrap();
    let mut lib = ZoneLibrary::new(true);
    let r = lib.load(&specs);
    assert_eq!((r.loaded, r.failures.len()), (n, 1));
    assert!(lib.polled.is_empty());

    let nothing = lib.refresh();
    assert_eq!(
        (nothing.loaded, nothing.checked),
        (0, 1),
        "the directory alone"
    );
    assert!(nothing.full_pass.is_none());

    // Read zone `z` alone, serial `s`; the directory and the zone's files `stat`ed.
    let mut expect = |what: &str, z: &str, s: u32, files: usize| {
        let r = lib.refresh();
        assert_eq!(
            (r.loaded, r.unchanged, r.failures.len()),
            (1, n, 0),
            "{what}: one zone read"
        );
        assert_eq!(r.checked, 1 + files, "{what}: files stat'ed");
        assert!(r.full_pass.is_none(), "{what}");
        assert_eq!(serial(&r, z), s, "{what}");
    };

    // An editor's save: a new file renamed over the old one.
    std::fs::write(dir.join(".z1.zone.swp"), zone_text(2, "")).unwrap();
    std::fs::rename(dir.join(".z1.zone.swp"), dir.join("z1.zone")).unwrap();
    expect("rename over", "z1.test.", 2, 1);

    // Written in place, same length, at once (the mtime may not even move).
    let text = zone_text(3, "www A 192.0.2.1\n");
    let before = std::fs::read_to_string(dir.join("z2.zone")).unwrap();
    assert_eq!(text.len(), before.len());
    std::fs::write(dir.join("z2.zone"), &text).unwrap();
    expect("in-place write", "z2.test.", 3, 1);

    // touch: only the times change (the zone is read again, same serial).
    let f = std::fs::File::options()
        .write(true)
        .open(dir.join("z3.zone"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    expect("touch", "z3.test.", 1, 1);

    // An $INCLUDEd file changed: its zone is read again.
    std::fs::write(dir.join("inc.txt"), "www A 192.0.2.77\n").unwrap();
    expect("include", "z7.test.", 1, 2);

    // The missing file created.
    std::fs::write(dir.join("z1000.zone"), zone_text(4, "")).unwrap();
    let r = lib.refresh();
    assert_eq!(
        (r.loaded, r.checked, r.still_failing),
        (1, 2, 0),
        "new file"
    );
    assert_eq!(serial(&r, "z1000.test."), 4);

    // A deleted file: the zone is read (and fails, keeping its version), then served from
    // the file put back.
    std::fs::remove_file(dir.join("z4.zone")).unwrap();
    let r = lib.refresh();
    assert_eq!(
        (r.loaded, r.failures.len(), r.checked),
        (0, 1, 2),
        "deleted"
    );
    assert!(r.failures[0].kept_previous);
    std::fs::write(dir.join("z4.zone"), zone_text(5, "")).unwrap();
    let r = lib.refresh();
    assert_eq!((r.loaded, r.still_failing), (1, 0), "put back");
    assert_eq!(serial(&r, "z4.test."), 5);

    // Files beside the zones that no zone reads: nothing read, nothing stat'ed.
    std::fs::write(dir.join("notes.txt"), "x").unwrap();
    let r = lib.refresh();
    assert_eq!((r.loaded, r.checked), (0, 1));
}

/// Events lost (the kernel's queue overflowed): the next reload `stat`s every file, finds
/// the change, and the one after is back to events.
#[test]
fn lost_events_mean_a_full_pass_that_still_finds_the_change() {
    let scratch = Scratch::new("watch-overflow");
    let dir = &scratch.0;
    let n = 200;
    let specs = many(dir, n);
    let mut lib = ZoneLibrary::new(true);
    assert_eq!(lib.load(&specs).loaded, n);

    std::fs::write(dir.join("z9.zone"), zone_text(2, "")).unwrap();
    // Overflow the queue for real: two events (created, closed) per junk file, past the
    // queue's length; or, where the queue is set very long, act it out.
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(usize::MAX);
    if queue <= 100_000 {
        for i in 0..queue / 2 + 10 {
            std::fs::File::create(dir.join(format!("junk{i}"))).unwrap();
        }
    } else {
        lib.watch.force_rescan();
    }
    let r = lib.refresh();
    let why = r.full_pass.as_deref().unwrap_or("");
    assert!(why.contains("overflowed") || why == "forced", "{why:?}");
    assert_eq!((r.loaded, r.unchanged), (1, n - 1));
    assert!(r.checked >= n, "every zone file stat'ed: {}", r.checked);
    assert_eq!(serial(&r, "z9.test."), 2);

    // Watching again.
    std::fs::write(dir.join("z10.zone"), zone_text(3, "")).unwrap();
    let r = lib.refresh();
    assert!(r.full_pass.is_none());
    assert_eq!((r.loaded, r.checked), (1, 2));
    assert_eq!(serial(&r, "z10.test."), 3);
}

/// What events cannot vouch for is polled (`stat`ed at every reload): zones in a directory
/// past the watch limit, and a zone file that is a symbolic link (its target can change in a
/// directory not watched) or has another hard link.
#[test]
fn what_inotify_cannot_see_is_polled() {
    let scratch = Scratch::new("watch-polled");
    let (a, b, elsewhere) = (
        scratch.0.join("a"),
        scratch.0.join("b"),
        scratch.0.join("t"),
    );
    for d in [&a, &b, &elsewhere] {
        std::fs::create_dir(d).unwrap();
    }
    let mut specs = many(&a, 10);
    let in_b: Vec<ZoneSpec> = many(&b, 10)
        .into_iter()
        .enumerate()
        .map(|(i, s)| ZoneSpec {
            name: format!("b{i}.test.").parse().unwrap(),
            ..s
        })
        .collect();
    specs.extend(in_b);
    // a/link.zone -> t/target.zone; a/hard.zone is also t/hard.zone.
    std::fs::write(elsewhere.join("target.zone"), zone_text(1, "")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("target.zone"), a.join("link.zone")).unwrap();
    std::fs::write(a.join("hard.zone"), zone_text(1, "")).unwrap();
    std::fs::hard_link(a.join("hard.zone"), elsewhere.join("hard.zone")).unwrap();
    for (name, file) in [("link.test.", "link.zone"), ("hard.test.", "hard.zone")] {
        specs.push(ZoneSpec {
            name: name.parse().unwrap(),
            source: ZoneSource::File(a.join(file)),
            signing: None,
            journal: None,
        });
    }
    let mut lib = ZoneLibrary::new(true);
    lib.watch.limit_watches(1); // a is watched, b is not
    assert_eq!(lib.load(&specs).loaded, 22);
    assert_eq!(
        lib.polled.len(),
        12,
        "b's 10 zones, the link and the hard link"
    );

    // Nothing changed: directory a and the 12 polled files stat'ed.
    let r = lib.refresh();
    assert_eq!((r.loaded, r.checked), (0, 13));

    tick();
    std::fs::write(b.join("z5.zone"), zone_text(2, "")).unwrap();
    std::fs::write(elsewhere.join("target.zone"), zone_text(3, "")).unwrap();
    std::fs::write(elsewhere.join("hard.zone"), zone_text(4, "x TXT x\n")).unwrap();
    let r = lib.refresh();
    assert_eq!(r.loaded, 3);
    assert_eq!(serial(&r, "b5.test."), 2);
    assert_eq!(serial(&r, "link.test."), 3);
    assert_eq!(serial(&r, "hard.test."), 4);
}

/// A watched directory replaced by another at the same path (renamed away, a new one put
/// in its place): a full pass finds the new files, and the new directory is watched.
#[test]
fn a_replaced_directory_is_found_and_watched_again() {
    let scratch = Scratch::new("watch-dir");
    let zones = scratch.0.join("zones");
    std::fs::create_dir(&zones).unwrap();
    let specs = many(&zones, 20);
    let mut lib = ZoneLibrary::new(true);
    assert_eq!(lib.load(&specs).loaded, 20);

    let next = scratch.0.join("zones.new");
    std::fs::create_dir(&next).unwrap();
    many(&next, 20);
    std::fs::write(next.join("z6.zone"), zone_text(2, "")).unwrap();
    std::fs::rename(&zones, scratch.0.join("zones.old")).unwrap();
    std::fs::rename(&next, &zones).unwrap();
    let r = lib.refresh();
    assert!(r.full_pass.is_some());
    // Every file has a new inode: all read again; z6 has its new serial.
    assert_eq!(r.loaded, 20);
    assert_eq!(serial(&r, "z6.test."), 2);

    // The new directory is the one watched now.
    std::fs::write(zones.join("z8.zone"), zone_text(3, "")).unwrap();
    let r = lib.refresh();
    assert!(r.full_pass.is_none(), "{:?}", r.full_pass);
    assert_eq!((r.loaded, r.checked), (1, 2));
    assert_eq!(serial(&r, "z8.test."), 3);
}

/// The config and the zone list are read again only when they change (an event, or a
/// different stamp), and again after every failed read.
#[test]
fn the_config_is_read_again_only_when_it_changed() {
    for watch in [true, false] {
        let scratch = Scratch::new(&format!("watch-config-{watch}"));
        let (conf, list) = (scratch.0.join("shardns.toml"), scratch.0.join("zones.list"));
        std::fs::write(&conf, "[server]\n").unwrap();
        std::fs::write(&list, "a.test a.zone\n").unwrap();
        let mut lib = ZoneLibrary::new(watch);
        assert!(lib.config_changed(), "never read");
        let files = vec![lib.stamp_config_file(&conf), lib.stamp_config_file(&list)];
        lib.config_read(files);
        assert!(!lib.config_changed());
        assert!(!lib.config_changed());

        tick();
        std::fs::write(&list, "a.test a.zone\nb.test b.zone\n").unwrap();
        assert!(lib.config_changed(), "watch {watch}");
        // Read again: unchanged from then on.
        let files = vec![lib.stamp_config_file(&conf), lib.stamp_config_file(&list)];
        lib.config_read(files);
        assert!(!lib.config_changed());

        // An editor's rename over the config file.
        std::fs::write(scratch.0.join("new.toml"), "[server]\n").unwrap();
        std::fs::rename(scratch.0.join("new.toml"), &conf).unwrap();
        assert!(lib.config_changed(), "watch {watch}");
    }
}

/// A zone that may be updated: its journal (S1 -> S2 -> S3, changes not in its file) is
/// replayed when it is read first and when its file is read again unchanged; a changed
/// file wins. `specs` gives such a zone its journal, beside the file.
#[test]
fn an_updatable_zones_journal_is_replayed_over_its_file() {
    let dir = std::env::temp_dir().join(format!("shardns-zones-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("z.zone");
    let mut config = Config::default();
    let mut table = ZoneConfig::new("z.test.".parse().unwrap(), file.clone());
    table.update_policy = vec!["grant k. zone A".into()];
    config.zones.push(table);
    let specs = specs(&config, None).unwrap();
    let journal = dir.join("z.zone.journal");
    assert_eq!(specs[0].journal.as_deref(), Some(journal.as_path()));

    // The journal S1 -> S2 -> S3, as updates would make it.
    let text = |serial: u32| zone_text(serial, &format!("u{serial} A 192.0.2.{serial}\n"));
    let version = |serial: u32| {
        let opts = shardns_zone::ScanOptions::new("z.test.".parse().unwrap());
        shardns_zone::load_zone_text(text(serial).as_bytes(), Path::new("t"), &opts)
            .unwrap()
            .0
    };
    let settings = crate::journal::settings(&config, &specs[0].name, Some(&file)).unwrap();
    let j = crate::journal::Journals::default();
    let v: Vec<Zone> = (1..=3).map(version).collect();
    crate::journal::record(&j, Some(&settings), None, &v[0]);
    crate::journal::record(&j, Some(&settings), Some(&v[0]), &v[1]);
    crate::journal::record(&j, Some(&settings), Some(&v[1]), &v[2]);

    std::fs::write(&file, text(1)).unwrap();
    let mut lib = ZoneLibrary::new(false);
    let served = |lib: &ZoneLibrary| lib.set.get(specs[0].name.as_ref()).unwrap().serial();
    assert_eq!(lib.load(&specs).loaded, 1);
    assert_eq!(served(&lib), 3, "replayed at the first read");
    let z = lib.set.get(specs[0].name.as_ref()).unwrap().clone();
    let d = shardns_zone::xfr::diff::Diff::compute(&v[2], &z);
    assert!(d.is_empty(), "serves S3's records: {}", d.to_text());
    let (r, _) = lib.reload_named(&[specs[0].name.clone()]);
    assert_eq!(r.loaded, 1);
    assert_eq!(served(&lib), 3, "read again unchanged: replayed");
    // An edit that does not move the serial above the served one is refused: the updates
    // are not lost to it (Knot: "zone file changed, but SOA serial decreased").
    tick();
    std::fs::write(&file, zone_text(2, "edited A 192.0.2.99\n")).unwrap();
    let (r, _) = lib.reload_named(&[specs[0].name.clone()]);
    assert_eq!(served(&lib), 3, "the served version is kept");
    let f = &r.failures[0];
    assert!(f.kept_previous);
    assert!(
        f.error.to_string().contains("serial 2 is not above"),
        "{}",
        f.error
    );
    // Asked for again by name, unchanged: still refused, not replayed over.
    let (r, _) = lib.reload_named(&[specs[0].name.clone()]);
    assert_eq!((r.failures.len(), served(&lib)), (1, 3));
    // One above it wins, as it is (nothing replayed over a changed file).
    tick();
    std::fs::write(&file, zone_text(7, "edited A 192.0.2.99\n")).unwrap();
    lib.reload_named(&[specs[0].name.clone()]);
    assert_eq!(served(&lib), 7, "a changed file with a new serial wins");
    let z = lib.set.get(specs[0].name.as_ref()).unwrap().clone();
    let want = shardns_zone::load_zone_text(
        zone_text(7, "edited A 192.0.2.99\n").as_bytes(),
        Path::new("t"),
        &shardns_zone::ScanOptions::new("z.test.".parse().unwrap()),
    )
    .unwrap()
    .0;
    assert!(shardns_zone::xfr::diff::Diff::compute(&want, &z).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
