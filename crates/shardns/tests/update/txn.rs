//! The operator's transactions on the control socket (`shardns zone begin|set|unset|diff|
//! commit|abort`, as knotc's zone-begin ... zone-commit), driven through the real binary's
//! commands: a commit is seen by `dig` at once, with the serial moved; an abort discards;
//! a second `begin` is refused; a commit that the RFC's rules would ignore (a CNAME beside
//! other data) is refused with its reason and changes nothing; the commit is counted as an
//! accepted update.

use super::*;

/// `shardns zone ACTION --control SOCKET WORDS...`: whether it exited 0, and its stdout and
/// stderr.
pub(crate) fn zone_cmd(server: &Server, action: &str, words: &[&str]) -> Run {
    let out = Command::new(BIN)
        .args(["zone", action, "--control"])
        .arg(&server.control)
        .args(words)
        .output()
        .unwrap();
    Run {
        ok: out.status.success(),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn ok(server: &Server, action: &str, words: &[&str]) -> String {
    let r = zone_cmd(server, action, words);
    assert!(
        r.ok,
        "zone {action} {words:?} failed:\n{}\n{}",
        r.text,
        server.log()
    );
    r.text
}

#[test]
fn begin_set_unset_diff_commit_abort() {
    let server = start_primary("upd-txn", &[]);
    let at = server.addr;

    ok(&server, "begin", &[APEX]);
    let second = zone_cmd(&server, "begin", &[APEX]);
    assert!(!second.ok, "a second begin: {}", second.text);
    assert!(
        second.text.contains("already has an open transaction"),
        "{}",
        second.text
    );
    ok(&server, "set", &[APEX, "new", "300", "A", "192.0.2.50"]);
    ok(
        &server,
        "set",
        &[
            APEX,
            "new.upd.test.",
            "300",
            "TXT",
            "\"made by  a transaction\"",
        ],
    );
    ok(&server, "unset", &[APEX, "www", "TXT"]);
    let bad = zone_cmd(&server, "set", &[APEX, "new", "300", "A", "192.0.2.999"]);
    assert!(!bad.ok, "{}", bad.text);
    let diff = ok(&server, "diff", &[APEX]);
    assert_eq!(
        diff,
        "+new.upd.test. 300 IN A 192.0.2.50\n\
         +new.upd.test. 300 IN TXT \"made by  a transaction\"\n\
         -www.upd.test. 300 IN TXT \"hello\"\n"
    );
    // Nothing is served before the commit.
    assert!(short(at, "new.upd.test", "A").is_empty());
    let text = ok(&server, "commit", &[APEX]);
    assert!(text.contains("committed 3 changes"), "{text}");
    assert_eq!(short(at, "new.upd.test", "A"), ["192.0.2.50"]);
    assert_eq!(
        short(at, "new.upd.test", "TXT"),
        ["\"made by  a transaction\""]
    );
    assert!(short(at, "www.upd.test", "TXT").is_empty());
    assert_eq!(short(at, "www.upd.test", "A"), ["192.0.2.1"]);
    assert_eq!(serial_at(at), Some(2));
    assert!(
        !zone_cmd(&server, "diff", &[APEX]).ok,
        "closed by the commit"
    );

    // Abort: nothing changes.
    ok(&server, "begin", &[APEX]);
    ok(&server, "set", &[APEX, "gone", "300", "A", "192.0.2.99"]);
    let shown = ok(&server, "status", &[APEX]);
    assert!(shown.contains("transaction: open, 1 changes"), "{shown}");
    let text = ok(&server, "abort", &[APEX]);
    assert!(text.contains("1 changes discarded"), "{text}");
    assert_eq!(status(at, "gone.upd.test", "A"), "NXDOMAIN");
    assert_eq!(serial_at(at), Some(2));

    // A CNAME beside www's A: refused with the reason, nothing changed, still open.
    ok(&server, "begin", &[APEX]);
    ok(&server, "set", &[APEX, "other", "300", "A", "192.0.2.77"]);
    ok(&server, "set", &[APEX, "www", "300", "CNAME", "mail"]);
    let refused = zone_cmd(&server, "commit", &[APEX]);
    assert!(!refused.ok, "{}", refused.text);
    assert!(
        refused
            .text
            .contains("www.upd.test. 300 IN CNAME mail.upd.test. would be ignored")
            && refused.text.contains("CNAME beside other data"),
        "{}",
        refused.text
    );
    assert!(short(at, "other.upd.test", "A").is_empty());
    assert_eq!(short(at, "www.upd.test", "A"), ["192.0.2.1"]);
    assert_eq!(serial_at(at), Some(2));
    // Mended and committed.
    ok(&server, "unset", &[APEX, "www", "CNAME"]);
    ok(&server, "commit", &[APEX]);
    assert_eq!(short(at, "other.upd.test", "A"), ["192.0.2.77"]);
    assert_eq!(serial_at(at), Some(3));

    // A zone not served, no transaction.
    assert!(!zone_cmd(&server, "begin", &["nowhere.test."]).ok);
    assert!(!zone_cmd(&server, "commit", &[APEX]).ok);
    // Counted as accepted updates; the journal has both versions for IXFR.
    assert_eq!(
        server.stat("shardns_updates_total{result=\"accepted\"}"),
        2.0
    );
    let status = Command::new(BIN)
        .args(["zone", "status", "--control"])
        .arg(&server.control)
        .arg(APEX)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("serial 1 to 3"), "{status}");
}
