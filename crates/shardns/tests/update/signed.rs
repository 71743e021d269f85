//! Updates to a signed zone (`dnssec = true`, NSEC and NSEC3): `nsupdate` adds a name,
//! adds a type at an existing name and deletes a name; after each, the new records have
//! their RRSIGs at once (`dig +dnssec`), the zone transferred passes `ldns-verify-zone` and
//! `dnssec-verify`, `delv` with the zone's key as its trust anchor says "fully validated"
//! for the new records and proves the deleted name's NXDOMAIN, and the serial moved by one.
//! Then a restart (SIGTERM, and SIGKILL right after an answer): the same checks on the
//! version signed at load, whose serial is the last update's, or one above when the zone
//! was signed anew with the updates (`shardns_control::signing::updates`).

use super::*;
use std::path::Path;

/// A program the test needs (`scripts/test.sh` installs them).
fn tool(name: &str) -> PathBuf {
    find_program(name, &name.to_ascii_uppercase().replace('-', "_"))
        .unwrap_or_else(|| panic!("{name} is not installed (scripts/test.sh installs it)"))
}

/// Runs a program: whether it exited 0, and both streams.
fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The fields of every record line `dig` prints for `args`.
fn records(server: SocketAddr, args: &[&str]) -> Vec<Vec<String>> {
    dig(server, args)
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// `dig +dnssec NAME TYPE` answers the RRset with an RRSIG covering it.
#[track_caller]
fn assert_signed(server: SocketAddr, name: &str, rtype: &str) {
    let rrs = records(
        server,
        &["+dnssec", "+norec", "+noall", "+answer", name, rtype],
    );
    let has = |t: &str| rrs.iter().any(|f| f[0] == name && f[3] == t);
    let sig = rrs
        .iter()
        .any(|f| f[0] == name && f[3] == "RRSIG" && f[4] == rtype);
    assert!(
        has(rtype) && sig,
        "{name} {rtype} is not answered signed: {rrs:?}"
    );
}

/// The zone transferred (AXFR) passes both verifiers.
#[track_caller]
fn assert_verified(server: SocketAddr, dir: &TempDir, step: &str) {
    let text = axfr_text(server, APEX, 10);
    let file = dir.write(&format!("axfr-{step}.zone"), &text);
    if let Err(e) = verify_zone_file(&file, APEX) {
        panic!("{step}: {e}\n{text}");
    }
}

/// delv, trusting the zone's DS (`shardns key ds`), asks `server`: a secure answer for
/// each of `secure`, a secure NXDOMAIN for each of `gone`.
#[track_caller]
fn assert_validated(server: SocketAddr, anchors: &Path, secure: &[(&str, &str)], gone: &[&str]) {
    let delv = tool("delv");
    let ask = |name: &str, rtype: &str| {
        run(Command::new(&delv)
            .arg(format!("@{}", server.ip()))
            .args(["-p", &server.port().to_string()])
            .arg("-a")
            .arg(anchors)
            .arg(format!("+root={}", APEX.trim_end_matches('.')))
            .args([name, rtype]))
        .1
    };
    for (name, rtype) in secure {
        let out = ask(name, rtype);
        assert!(
            out.contains("; fully validated") && !out.contains("resolution failed"),
            "delv does not validate {name} {rtype}:\n{out}"
        );
    }
    for name in gone {
        let out = ask(name, "A");
        assert!(
            out.contains("NXDOMAIN") && out.contains("fully validated"),
            "delv does not prove {name} gone:\n{out}"
        );
    }
}

/// delv's trust anchor file from the zone's DS records.
fn anchor_file(data: &TempDir, keys: &Path) -> PathBuf {
    let (ok, ds) = run(Command::new(BIN)
        .args(["key", "ds", APEX, "--key-dir"])
        .arg(keys));
    assert!(ok, "{ds}");
    let mut anchors = String::from("trust-anchors {\n");
    for line in ds.lines().filter(|l| !l.starts_with(';') && !l.is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        anchors.push_str(&format!(
            "  {} static-ds {} {} {} \"{}\";\n",
            f[0], f[3], f[4], f[5], f[6]
        ));
    }
    anchors.push_str("};\n");
    data.write("anchors.conf", &anchors)
}

/// After every step: the records, signed, verified and validated.
fn check_all(server: SocketAddr, data: &TempDir, anchors: &Path, step: &str) {
    assert_signed(server, "new.upd.test.", "A");
    assert_signed(server, "www.upd.test.", "AAAA");
    assert_signed(server, "www.upd.test.", "A");
    assert_eq!(status(server, "mail.upd.test", "A"), "NXDOMAIN", "{step}");
    assert_verified(server, data, step);
    assert_validated(
        server,
        anchors,
        &[
            ("new.upd.test", "A"),
            ("www.upd.test", "AAAA"),
            ("www.upd.test", "TXT"),
        ],
        &["mail.upd.test", "nothere.upd.test"],
    );
}

fn signed_zone_takes_updates(tag: &str, denial: &str) {
    let data = TempDir::new(&format!("upd-signed-{tag}"));
    data.write("upd.test.zone", &zone_text(1));
    let keys = data.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let config = data.write(
        "shardns.toml",
        &format!(
            "[[key]]\nname = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
             [server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
             [[zone]]\nname = \"{APEX}\"\nfile = \"upd.test.zone\"\ndnssec = true\n{denial}\
             update_policy = [\"grant {KEY_NAME} zonesub ANY\"]\n"
        ),
    );
    let args = ["--workers", "1", "--config", config.to_str().unwrap()];
    let mut server = Server::start(&format!("upd-signed-{tag}-1"), &args);
    let at = server.addr4();
    let anchors = anchor_file(&data, &keys);
    let key = upd_key();
    let y = ["-y", key.as_str()];
    let mut serial = serial_at(at).expect("a serial");
    let mut update = |server: &Server, what: &str, body: &str| {
        let r = nsupdate(server.addr4(), &y, body);
        assert!(r.ok, "{what}: {}\n--- shardns:\n{}", r.text, server.log());
        serial += 1;
        assert_eq!(
            serial_at(server.addr4()),
            Some(serial),
            "{what}: the serial"
        );
    };

    // A new name.
    update(
        &server,
        "a new name",
        "update add new.upd.test. 300 A 192.0.2.10\nsend\n",
    );
    assert_signed(at, "new.upd.test.", "A");
    assert_verified(at, &data, "added");
    assert_validated(
        at,
        &anchors,
        &[("new.upd.test", "A")],
        &["nothere.upd.test"],
    );
    // A type at an existing name.
    update(
        &server,
        "a new type",
        "update add www.upd.test. 300 AAAA 2001:db8::1\nsend\n",
    );
    assert_signed(at, "www.upd.test.", "AAAA");
    assert_verified(at, &data, "typed");
    assert_validated(at, &anchors, &[("www.upd.test", "AAAA")], &[]);
    // A name deleted.
    update(
        &server,
        "a name deleted",
        "update delete mail.upd.test.\nsend\n",
    );
    check_all(at, &data, &anchors, "deleted");
    let log = server.log();
    assert!(
        !log.contains("signing the new version whole"),
        "signed incrementally:\n{log}"
    );
    // A new SOA TTL and MINIMUM move the DNSKEY TTL and the chain's: the new version is
    // signed whole (on the main thread, before the answer), with the update's serial.
    let r = nsupdate(
        at,
        &y,
        "update add upd.test. 600 SOA ns.upd.test. hostmaster.upd.test. 100 3600 600 86400 200\nsend\n",
    );
    assert!(r.ok, "{}\n{}", r.text, server.log());
    serial = 100;
    assert_eq!(serial_at(at), Some(serial));
    let log = server.log();
    assert!(
        log.contains("signing the new version whole"),
        "signed whole:\n{log}"
    );
    check_all(at, &data, &anchors, "soa");
    // The last serial signed follows the updates, so a signing whole (here `shardns
    // reload ZONE`, as the re-signing timer does it) moves the serial on, updates kept.
    let state = std::fs::read_to_string(keys.join("state/upd.test.state")).unwrap();
    assert!(state.starts_with(&format!("serial {serial}\n")), "{state}");
    let out = Command::new(BIN)
        .args(["reload", APEX, "--control"])
        .arg(&server.control)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serial += 1;
    assert_eq!(serial_at(at), Some(serial), "{}", server.log());
    check_all(at, &data, &anchors, "reloaded");

    // A restart serves the updated records, signed, with a serial not below.
    server.terminate();
    let server = Server::start(&format!("upd-signed-{tag}-2"), &args);
    let at = server.addr4();
    let after = serial_at(at).expect("a serial");
    assert!(
        after == serial || after == serial + 1,
        "serial {after} after the restart, {serial} before:\n{}",
        server.log()
    );
    check_all(at, &data, &anchors, "restarted");
    // And it takes updates again, the serial moving on from there.
    let r = nsupdate(at, &y, "update add again.upd.test. 300 TXT \"x\"\nsend\n");
    assert!(r.ok, "{}\n{}", r.text, server.log());
    assert_eq!(serial_at(at), Some(after + 1));
    assert_signed(at, "again.upd.test.", "TXT");
    assert_verified(at, &data, "again");
    // Killed at once after the answer (SIGKILL): the update was kept before it.
    drop(server);
    let server = Server::start(&format!("upd-signed-{tag}-3"), &args);
    let at = server.addr4();
    assert_signed(at, "again.upd.test.", "TXT");
    check_all(at, &data, &anchors, "killed");
    // Signed anew at load above the last update's serial (after + 1), which only the kept
    // changes name (an update batch does not write the state file).
    let killed = serial_at(at).unwrap();
    assert!(killed > after + 1, "{}", server.log());
    // Nothing new since: the next start serves the signed zone kept, same serial.
    drop(server);
    let server = Server::start(&format!("upd-signed-{tag}-4"), &args);
    assert_eq!(serial_at(server.addr4()), Some(killed), "{}", server.log());
    check_all(server.addr4(), &data, &anchors, "again-started");
}

#[test]
fn a_signed_zone_with_nsec_is_updated_signed() {
    signed_zone_takes_updates("nsec", "");
}

#[test]
fn a_signed_zone_with_nsec3_is_updated_signed() {
    signed_zone_takes_updates("nsec3", "nsec3 = true\n");
}
