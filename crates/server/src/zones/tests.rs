//! The zone library: regular files only, reading only what changed, zone lists.

use super::*;

fn spec(path: &Path) -> ZoneSpec {
    ZoneSpec {
        name: "z.test.".parse().unwrap(),
        source: ZoneSource::File(path.into()),
        signing: None,
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
fn a_reload_reads_only_what_changed() {
    let dir = std::env::temp_dir().join(format!("shardns-lib-{}", std::process::id()));
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
            }
        })
        .collect();
    std::fs::write(dir.join("inc.txt"), "www A 192.0.2.7\n").unwrap();
    let mut lib = ZoneLibrary::default();
    let r = lib.load(&specs);
    assert_eq!((r.loaded, r.unchanged, r.failures.len()), (n, 0, 0));
    assert_eq!(lib.len(), n);

    // Nothing changed: nothing read.
    let r = lib.load(&specs);
    assert_eq!((r.loaded, r.unchanged, r.removed), (0, n, 0));
    assert!(r.added.is_empty() && r.replaced.is_empty());

    // One file rewritten: that zone alone, and the version it replaced is handed back.
    tick();
    std::fs::write(dir.join("z3.zone"), zone_text(2, "")).unwrap();
    let r = lib.load(&specs);
    assert_eq!((r.loaded, r.unchanged), (1, n - 1));
    assert_eq!(r.added[0].serial(), 2);
    assert_eq!(r.replaced[0].serial(), 1);
    let z3: Name = "z3.test.".parse().unwrap();
    assert_eq!(r.set.get(z3.as_ref()).unwrap().serial(), 2);

    // An $INCLUDEd file changed: its zone is read again.
    tick();
    std::fs::write(dir.join("inc.txt"), "www A 192.0.2.77\n").unwrap();
    let r = lib.load(&specs);
    assert_eq!(r.loaded, 1);
    assert_eq!(r.added[0].apex().to_string(), "z7.test.");

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
    config.zones.push(crate::config::ZoneConfig::new(
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
    std::fs::write(&list, "ok.test ok.zone\nbad line here\n").unwrap();
    let e = super::specs(&config, None).unwrap_err();
    assert!(
        e.contains(&format!("{}:2: expected NAME FILE", list.display())),
        "{e}"
    );
    std::fs::write(&list, "bad..name x.zone\n").unwrap();
    let e = super::specs(&config, None).unwrap_err();
    assert!(e.contains(":1: zone name"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
