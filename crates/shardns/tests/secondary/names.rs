//! Two secondary zones whose names earlier versions wrote as one file name (`a/b.example.`
//! and `a_b.example.`, issue 26 item 5): both transferred, both changed, both journaled in
//! one `journal_directory`, and after a restart each still answers IXFR from its history.

use super::*;

const ZONES: [&str; 2] = ["a/b.example.", "a_b.example."];

/// The zone's version `serial`: 40 hosts (so the whole zone is far longer than a diff)
/// and one name that changes.
fn version(serial: u32) -> String {
    zone_text(serial, 40, &format!("changes A 192.0.2.{serial}\n"))
}

/// The lines of kdig's answer to IXFR from serial 1, records only.
fn ixfr_from_1(server: SocketAddr, apex: &str) -> Vec<String> {
    kdig(server, &[apex, "IXFR=1", "+nocomments", "+nostats"])
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn two_zones_once_sharing_a_journal_name_each_keep_their_history_over_a_restart() {
    let (p, s) = (local(), local());
    let dir = TempDir::new("names");
    let files: Vec<PathBuf> = (0..2)
        .map(|i| dir.write(&format!("primary-{i}.zone"), &version(1)))
        .collect();
    let mut primary_toml =
        format!("[server]\nallow_transfer = [\"127.0.0.1\"]\nnotify = [\"{s}\"]\n");
    for (apex, f) in ZONES.iter().zip(&files) {
        primary_toml.push_str(&format!(
            "[[zone]]\nname = \"{apex}\"\nfile = \"{}\"\n",
            f.display()
        ));
    }
    let primary = start_secondary("names-p", p, &dir, &primary_toml);
    let journals = dir.path().join("journals");
    std::fs::create_dir_all(&journals).unwrap();
    let mut toml = format!(
        "[server]\nallow_transfer = [\"127.0.0.1\"]\njournal_directory = \"{}\"\n",
        journals.display()
    );
    for (i, apex) in ZONES.iter().enumerate() {
        toml.push_str(&format!(
            "[[zone]]\nname = \"{apex}\"\nprimary = [\"{p}\"]\nfile = \"{}\"\n",
            dir.path().join(format!("copy-{i}.zone")).display()
        ));
    }
    let mut secondary = start_secondary("names-s", s, &dir, &toml);
    for apex in ZONES {
        wait_serial(s, apex, 1, Duration::from_secs(20), || secondary.log());
    }
    for f in &files {
        std::fs::write(f, version(2)).unwrap();
    }
    assert!(primary.control("reload").status.success());
    for apex in ZONES {
        wait_serial(s, apex, 2, Duration::from_secs(20), || secondary.log());
        secondary.wait_for_log(
            &format!("zone {apex}: journal: serial 1 -> 2"),
            Duration::from_secs(10),
        );
    }
    let before: Vec<Vec<String>> = ZONES.iter().map(|a| ixfr_from_1(s, a)).collect();
    secondary.terminate();

    let secondary = start_secondary("names-s2", s, &dir, &toml);
    for apex in ZONES {
        wait_serial(s, apex, 2, Duration::from_secs(20), || secondary.log());
    }
    for (apex, before) in ZONES.iter().zip(&before) {
        let after = ixfr_from_1(s, apex);
        // Incremental: the SOA of 2, of 1, the old A, the SOA of 2, the new A, the SOA of 2;
        // not the whole zone (its 80 host records) in AXFR form.
        assert!(
            after.len() < 10 && after.iter().any(|l| l.contains("192.0.2.1")),
            "IXFR of {apex} from 1 after the restart: {after:#?}\n{}",
            secondary.log()
        );
        assert_eq!(&after, before, "{apex}");
    }
    assert!(
        !secondary.log().contains("not this zone's"),
        "{}",
        secondary.log()
    );
}
