//! End-to-end: a zone changed by dynamic update is written back to its zone file
//! `zonefile_sync` seconds later (Knot's `zonefile-sync`), so a restart without its journal
//! still serves the change; a file an operator edited since it was read is never written
//! over (a warning says so, and the served version stays).

mod common;

use common::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "c2hhcmRucyB6b25lZmlsZSBzeW5jIHRlc3Qga2V5IQ==";
const ZONE: &str =
    "$TTL 60\n@ SOA ns hostmaster 1 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n";

/// `nsupdate -y` adds `NAME 60 A ADDR` to sync.test. on `server`.
fn add(server: &Server, name: &str, addr: &str) {
    let mut child = Command::new("nsupdate")
        .args(["-y", &format!("hmac-sha256:upd.:{SECRET}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nsupdate (bind9-dnsutils)");
    let a = server.addr4();
    let script = format!(
        "server {} {}\nzone sync.test.\nupdate add {name} 60 A {addr}\nsend\n",
        a.ip(),
        a.port()
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "nsupdate: {out:?}");
}

fn config(data: &TempDir) -> std::path::PathBuf {
    data.write(
        "shardns.toml",
        &format!(
            "[server]\nworkers = 1\n\n[[key]]\nname = \"upd.\"\nalgorithm = \"hmac-sha256\"\n\
             secret = \"{SECRET}\"\n\n[[zone]]\nname = \"sync.test.\"\nfile = \"sync.test.zone\"\n\
             update_policy = [\"grant upd. zone ANY\"]\nzonefile_sync = 1\n"
        ),
    )
}

/// Waits until `path` holds `needle`, for at most `limit`.
fn wait_for_file(path: &std::path::Path, needle: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) || start.elapsed() > limit {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn updates_reach_the_zone_file_and_an_edited_file_is_not_written_over() {
    let data = TempDir::new("zonefile-sync");
    let zone = data.write("sync.test.zone", ZONE);
    let journal = data.path().join("sync.test.zone.journal");
    let config = config(&data);
    let args = ["--config", config.to_str().unwrap()];

    let mut server = Server::start("zonefile-sync-1", &args);
    add(&server, "a.sync.test.", "192.0.2.10");
    // At once in the answers, a second later in the file.
    let a = dig(server.addr4(), &["+short", "a.sync.test", "A"]);
    assert_eq!(a.trim(), "192.0.2.10");
    let text = wait_for_file(&zone, "192.0.2.10", Duration::from_secs(10));
    assert!(
        text.contains("a.sync.test.\t60\tIN\tA\t192.0.2.10"),
        "{text}\n{}",
        server.log()
    );
    assert!(
        text.contains(" 2 7200 3600 1209600 300"),
        "serial 2 in the file: {text}"
    );
    server.wait_for_log("written to", Duration::from_secs(5));
    assert!(server.terminate().success(), "{}", server.log());

    // Without the journal, the file alone has the change.
    std::fs::remove_file(&journal).unwrap();
    let mut server = Server::start("zonefile-sync-2", &args);
    let a = dig(server.addr4(), &["+short", "a.sync.test", "A"]);
    assert_eq!(a.trim(), "192.0.2.10", "{}", server.log());

    // `shardns zone flush` writes at once (here: nothing new since the file was written).
    let out = Command::new(env!("CARGO_BIN_EXE_shardns"))
        .args(["zone", "flush", "--control"])
        .arg(&server.control)
        .arg("sync.test.")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("up to date"),
        "{out:?}"
    );

    // An operator edits the file (no serial change yet) while an update waits for the
    // write: the edit is kept, the update stays served (and journaled), a warning says why.
    let edited = std::fs::read_to_string(&zone).unwrap() + "; an operator's edit\n";
    std::fs::write(&zone, &edited).unwrap();
    add(&server, "b.sync.test.", "192.0.2.11");
    server.wait_for_log("changed on disk since it was read", Duration::from_secs(10));
    assert_eq!(std::fs::read_to_string(&zone).unwrap(), edited);
    let b = dig(server.addr4(), &["+short", "b.sync.test", "A"]);
    assert_eq!(b.trim(), "192.0.2.11");
    assert!(server.terminate().success(), "{}", server.log());
}
