//! Zone files broken under a running server (garbage, truncated mid-record, deleted, replaced
//! by a directory, a FIFO or a symlink to a device, an `$INCLUDE` of a FIFO) and reloaded by
//! SIGHUP and `shardns reload`: the old version stays served, the fault is reported (with
//! `file:line` where there is one), and a fixed file is served at once.

use crate::common::*;
use crate::noise;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn zone_version(v: u32) -> String {
    format!(
        "$TTL 60\n@ SOA ns hostmaster (\n    {v} 7200 3600\n    1209600 300 )\n@ NS ns\n\
         ns A 192.0.2.1\nwww A 198.51.100.{v}\ntxt TXT \"version {v}\" \"of the zone\"\n"
    )
}

fn start_fault_server(tag: &str) -> (Server, PathBuf) {
    let dir = TempDir::new(tag);
    let path = dir.write("fault.test.zone", &zone_version(1));
    let arg = format!("fault.test.={}", path.display());
    let server = Server::start_in(dir, &["--workers", "2", "--zone", &arg]);
    (server, path)
}

/// The answers for `name`/`qtype` over UDP and over TCP (which must agree).
fn ask(server: &Server, name: &str, qtype: u16) -> Vec<String> {
    let q = query(0x4242, name, qtype, Some(1232));
    let sock = udp_client(server.addr4());
    let udp = udp_exchange(&sock, &q).unwrap_or_else(|| panic!("no UDP answer for {name}"));
    let tcp = tcp_exchange(server.addr6(), &[q]).pop().unwrap();
    let (u, t) = (answers(&parse(&udp)), answers(&parse(&tcp)));
    assert_eq!(u, t, "UDP and TCP disagree for {name}");
    u
}

/// Version `v` of the zone is what the server answers.
fn assert_serving(server: &Server, v: u32, after: &str) {
    assert_eq!(
        ask(server, "www.fault.test", 1),
        [format!("A 198.51.100.{v}")],
        "www after {after}"
    );
    assert_eq!(
        ask(server, "txt.fault.test", 16),
        [format!("TXT version {v}of the zone")],
        "txt after {after}"
    );
}

/// The line number in the first `path:LINE:` of `text`.
fn file_line(text: &str, path: &Path) -> Option<usize> {
    let needle = format!("{}:", path.display());
    text.match_indices(&needle).find_map(|(i, _)| {
        let rest = &text[i + needle.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty() && rest[digits.len()..].starts_with(':'))
            .then(|| digits.parse().unwrap())
    })
}

/// Runs `shardns reload` with a time limit (a reload that hangs is a failure, not a hang).
fn reload_bounded(server: &Server, limit: Duration) -> Output {
    let mut child = Command::new(BIN)
        .arg("reload")
        .arg("--control")
        .arg(&server.control)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("shardns reload did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Reloads through the control socket: it must fail, keep version `v` and report the
/// problem (with `file:line` when `with_line`). A second reload leaves the unchanged file
/// alone (reported once); once the file is written again, SIGHUP reads and reports it anew
/// (a file that cannot be written again stays unread). Returns the line reported.
fn reload_fails_keeping(
    server: &Server,
    path: &Path,
    v: u32,
    what: &str,
    with_line: bool,
) -> Option<usize> {
    let out = reload_bounded(server, Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!out.status.success(), "{what}: reload succeeded: {text}");
    assert!(
        text.contains("keeping its previous version"),
        "{what}: {text}"
    );
    assert!(
        text.contains(&path.display().to_string()),
        "{what}: file not named: {text}"
    );
    let line = file_line(&text, path);
    if with_line {
        assert!(
            line.is_some_and(|l| l >= 1),
            "{what}: no {}:LINE: in {text}",
            path.display()
        );
    }
    assert_serving(server, v, what);

    // The file has not changed since that reload read it: a reload now does not read it
    // again, nor report it again (issue 19: each broken zone reported once).
    let before = server.log().matches("failed to load").count();
    let again = reload_bounded(server, Duration::from_secs(10));
    let again = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.contains("reloaded 0 of 1 zones"), "{what}: {again}");
    assert_eq!(
        server.log().matches("failed to load").count(),
        before,
        "{what}"
    );
    if !path.is_file() {
        // Missing, or not a file one can write again: SIGHUP finds it unchanged too, and
        // reads and reports nothing; the zone stays on its previous version.
        let quiet = server.log().matches("reloaded 0 of 1 zones").count();
        server.sighup();
        let end = Instant::now() + Duration::from_secs(10);
        while server.log().matches("reloaded 0 of 1 zones").count() == quiet {
            assert!(Instant::now() < end, "{what}: SIGHUP reload not logged");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            server.log().matches("failed to load").count(),
            before,
            "{what}"
        );
        assert_serving(server, v, what);
        return line;
    }
    // Written again (same bytes, new mtime): SIGHUP reads and reports it.
    std::fs::write(path, std::fs::read(path).unwrap()).unwrap();
    server.sighup();
    let end = Instant::now() + Duration::from_secs(10);
    while server.log().matches("failed to load").count() == before {
        assert!(
            Instant::now() < end,
            "{what}: SIGHUP reload not logged:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The error lines follow the "failed to load" line.
    std::thread::sleep(Duration::from_millis(100));
    let log = server.log();
    let tail = &log[log.rfind("failed to load").unwrap()..];
    if with_line {
        assert_eq!(file_line(tail, path), line, "{what}: SIGHUP log:\n{tail}");
    } else {
        assert!(tail.contains(&path.display().to_string()), "{what}: {tail}");
    }
    assert_serving(server, v, what);
    line
}

#[test]
fn garbage_and_truncated_zone_files_keep_the_old_version() {
    let (server, path) = start_fault_server("faults-garbage");
    assert_serving(&server, 1, "start");

    // (a) Garbage of several kinds.
    let mut printable = String::from("$TTL 60\n@ SOA ns hostmaster 2 7200 3600 1209600 300\n");
    for i in 0..50 {
        printable.push_str(&format!(
            "line{i} {} {}\n",
            "lorem".repeat(i % 4 + 1),
            i * 37
        ));
    }
    let garbage: Vec<(&str, Vec<u8>)> = vec![
        ("4 KiB of random octets", noise(1, 4096)),
        ("random octets after a valid start", {
            let mut z = zone_version(2).into_bytes();
            z.extend_from_slice(&noise(2, 512));
            z
        }),
        ("NUL octets", vec![0; 1000]),
        ("words that are no records", printable.into_bytes()),
        ("one 100,000-octet line", vec![b'x'; 100_000]),
        ("invalid UTF-8 in a TXT string", {
            let mut z = zone_version(2).into_bytes();
            z.extend_from_slice(b"bad TXT \"\xff\xfe\xc0\"\nworse \xff\xff A 1.2.3.4\n");
            z
        }),
    ];
    for (what, bytes) in &garbage {
        std::fs::write(&path, bytes).unwrap();
        reload_fails_keeping(&server, &path, 1, what, true);
    }

    // (b) Truncated in the middle of a record: inside the SOA's parentheses, inside a
    // quoted string, inside an address, after a type.
    let full = zone_version(2);
    for (what, cut_after) in [
        ("inside the SOA parentheses", "7200 "),
        ("inside a quoted string", "\"version 2\" \"of t"),
        ("inside an address", "www A 198.51."),
        ("after the type", "ns A"),
    ] {
        let at = full.find(cut_after).unwrap() + cut_after.len();
        std::fs::write(&path, &full[..at]).unwrap();
        let line = reload_fails_keeping(&server, &path, 1, what, true).unwrap();
        let last_line = full[..at].lines().count();
        assert!(
            line <= last_line,
            "{what}: error at line {line}, the file has {last_line}"
        );
    }

    // Fixed: the new version is served at once.
    std::fs::write(&path, zone_version(2)).unwrap();
    assert!(reload_bounded(&server, Duration::from_secs(10))
        .status
        .success());
    assert_serving(&server, 2, "the fix");
    assert!(server.stat("shardns_reloads_total{result=\"failed\"}") >= 20.0);
    assert!(!server.log().contains("panicked"));
}

#[test]
fn deleted_and_special_zone_files_keep_the_old_version() {
    let (server, path) = start_fault_server("faults-deleted");
    assert_serving(&server, 1, "start");

    // (c) Deleted, then restored with new data.
    std::fs::remove_file(&path).unwrap();
    reload_fails_keeping(&server, &path, 1, "deleted file", false);
    std::fs::write(&path, zone_version(3)).unwrap();
    let out = reload_bounded(&server, Duration::from_secs(10));
    assert!(out.status.success(), "{out:?}");
    assert_serving(&server, 3, "restoring the file");

    // Not a regular file: a directory, a FIFO (opening it would wait for a writer
    // forever), a symlink to a character device. Each fails at once.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    reload_fails_keeping(&server, &path, 3, "a directory", false);
    std::fs::remove_dir(&path).unwrap();
    let fifo = std::ffi::CString::new(path.display().to_string()).unwrap();
    // SAFETY: a valid NUL-terminated path and a mode; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    reload_fails_keeping(&server, &path, 3, "a FIFO", false);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/null", &path).unwrap();
    reload_fails_keeping(&server, &path, 3, "a symlink to /dev/null", false);
    std::fs::remove_file(&path).unwrap();

    std::fs::write(&path, zone_version(4)).unwrap();
    server.sighup();
    let end = Instant::now() + Duration::from_secs(10);
    // UDP only while the reload may still be running (TCP could see the other version).
    let sock = udp_client(server.addr4());
    let www = |id: u16| {
        let r = udp_exchange(&sock, &query(id, "www.fault.test", 1, None)).expect("an answer");
        answers(&parse(&r))
    };
    while www(7) != ["A 198.51.100.4"] {
        assert!(
            Instant::now() < end,
            "SIGHUP after the fix:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_serving(&server, 4, "the last fix");

    // A storm of 50 SIGHUPs while the file changes under it: the server keeps answering
    // and ends on the last version.
    for i in 0..50u32 {
        if i % 10 == 0 {
            std::fs::write(&path, zone_version(5 + i / 10)).unwrap();
        }
        server.sighup();
    }
    for i in 0..50u16 {
        assert!(udp_exchange(&sock, &query(i, "www.fault.test", 1, None)).is_some());
    }
    let out = reload_bounded(&server, Duration::from_secs(10));
    assert!(out.status.success(), "{out:?}");
    assert_serving(&server, 9, "a storm of SIGHUPs");
}

/// `$INCLUDE` of a FIFO (or a device) is refused: opening a FIFO would block the reload
/// until a writer appears, and `/dev/zero` would be read until memory runs out.
#[test]
fn include_of_a_fifo_does_not_hang_the_reload() {
    let (server, path) = start_fault_server("faults-include");
    let inc = server.dir.path().join("hosts.inc");
    let c = std::ffi::CString::new(inc.display().to_string()).unwrap();
    // SAFETY: a valid NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut z = zone_version(2);
    z.push_str("$INCLUDE hosts.inc\n");
    std::fs::write(&path, z).unwrap();
    // Panics if the reload does not finish in 5 s.
    let out = reload_bounded(&server, Duration::from_secs(5));
    assert!(!out.status.success());
    assert_serving(&server, 1, "an $INCLUDE of a FIFO");
}
