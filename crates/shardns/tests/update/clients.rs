//! `nsupdate` (BIND 9) and `knsupdate` (Knot) against shardns: changes seen at once by
//! `dig` over UDP, prerequisites' rcodes as the clients print them, the serial moved once
//! per accepted update, refusals; the config file's `update_policy` and `serial_policy`.

use super::*;
use std::net::Ipv4Addr;
use std::time::{SystemTime, UNIX_EPOCH};

/// Panics unless `run` succeeded.
#[track_caller]
fn assert_ok(what: &str, run: &Run, server: &Server) {
    assert!(
        run.ok,
        "{what}: the client failed:\n{}\n--- shardns:\n{}",
        run.text,
        server.log()
    );
}

/// Panics unless `run` failed and printed `rcode` (nsupdate: "update failed: YXDOMAIN";
/// knsupdate: "update failed with error 'YXDOMAIN'").
#[track_caller]
fn assert_failed_with(what: &str, run: &Run, rcode: &str) {
    assert!(
        !run.ok && run.text.contains(rcode),
        "{what}: expected a failure with {rcode}, the client said (ok: {}):\n{}",
        run.ok,
        run.text
    );
}

#[test]
fn nsupdate_adds_changes_deletes_with_prerequisites() {
    let server = start_primary("upd-nsupdate", &[]);
    let at = server.addr4();
    let key = upd_key();
    let y = ["-y", key.as_str()];
    assert_eq!(serial_at(at), Some(1));

    // Add: seen at once over UDP, the serial up by one.
    let r = nsupdate(
        at,
        &y,
        "update add new.upd.test. 300 A 192.0.2.10\nupdate add new.upd.test. 300 TXT \"v1\"\nsend\n",
    );
    assert_ok("add", &r, &server);
    assert_eq!(short(at, "new.upd.test", "A"), ["192.0.2.10"]);
    assert_eq!(short(at, "new.upd.test", "TXT"), ["\"v1\""]);
    assert_eq!(serial_at(at), Some(2));

    // Change: delete the RRset and add the new value in one message.
    let r = nsupdate(
        at,
        &y,
        "update delete www.upd.test. A\nupdate add www.upd.test. 300 A 192.0.2.2\nsend\n",
    );
    assert_ok("change", &r, &server);
    assert_eq!(short(at, "www.upd.test", "A"), ["192.0.2.2"]);
    assert_eq!(short(at, "www.upd.test", "TXT"), ["\"hello\""], "untouched");
    assert_eq!(serial_at(at), Some(3));

    // Prerequisites, each false: the rcode printed, nothing changed, the serial kept.
    for (prereq, rcode) in [
        ("prereq nxdomain www.upd.test.", "YXDOMAIN"),
        ("prereq yxdomain nothere.upd.test.", "NXDOMAIN"),
        ("prereq nxrrset www.upd.test. A", "YXRRSET"),
        ("prereq yxrrset www.upd.test. AAAA", "NXRRSET"),
        ("prereq yxrrset www.upd.test. A 192.0.2.99", "NXRRSET"),
    ] {
        let r = nsupdate(
            at,
            &y,
            &format!("{prereq}\nupdate add blocked.upd.test. 300 A 192.0.2.66\nsend\n"),
        );
        assert_failed_with(prereq, &r, &format!("update failed: {rcode}"));
        assert_eq!(status(at, "blocked.upd.test", "A"), "NXDOMAIN", "{prereq}");
        assert_eq!(serial_at(at), Some(3), "{prereq}");
    }
    // Each true: applied.
    let r = nsupdate(
        at,
        &y,
        "prereq yxrrset www.upd.test. A 192.0.2.2\nprereq yxdomain new.upd.test.\n\
         prereq nxdomain fresh.upd.test.\nprereq nxrrset www.upd.test. AAAA\n\
         prereq yxrrset www.upd.test. TXT\nupdate add fresh.upd.test. 300 AAAA 2001:db8::1\nsend\n",
    );
    assert_ok("true prerequisites", &r, &server);
    assert_eq!(short(at, "fresh.upd.test", "AAAA"), ["2001:db8::1"]);
    assert_eq!(serial_at(at), Some(4));

    // Delete a record, then a whole name.
    let r = nsupdate(at, &y, "update delete new.upd.test. TXT \"v1\"\nsend\n");
    assert_ok("delete one record", &r, &server);
    assert_eq!(short(at, "new.upd.test", "TXT"), Vec::<String>::new());
    assert_eq!(short(at, "new.upd.test", "A"), ["192.0.2.10"]);
    let r = nsupdate(at, &y, "update delete new.upd.test.\nsend\n");
    assert_ok("delete a name", &r, &server);
    assert_eq!(status(at, "new.upd.test", "A"), "NXDOMAIN");
    assert_eq!(serial_at(at), Some(6));

    // A key file (-k), over TCP (-v).
    let dir = TempDir::new("upd-nsupdate-key");
    let keyfile = dir.write(
        "upd.key",
        &format!("key \"{KEY_NAME}\" {{\n  algorithm hmac-sha256;\n  secret \"{SECRET}\";\n}};\n"),
    );
    let keyfile = keyfile.to_str().unwrap();
    let r = nsupdate(
        at,
        &["-v", "-k", keyfile],
        "update add tcp.upd.test. 300 A 192.0.2.11\nsend\n",
    );
    assert_ok("-v -k", &r, &server);
    assert_eq!(short(at, "tcp.upd.test", "A"), ["192.0.2.11"]);
    let r = nsupdate(
        at,
        &["-v", "-k", keyfile],
        "prereq nxdomain tcp.upd.test.\nupdate add x.upd.test. 300 A 192.0.2.12\nsend\n",
    );
    assert_failed_with("-v prereq", &r, "update failed: YXDOMAIN");
    assert_eq!(serial_at(at), Some(7));

    // Unsigned: REFUSED. A wrong secret: NOTAUTH, with the TSIG error.
    let r = nsupdate(at, &[], "update add u.upd.test. 300 A 192.0.2.13\nsend\n");
    assert_failed_with("unsigned", &r, "update failed: REFUSED");
    let wrong = wrong_key();
    let r = nsupdate(
        at,
        &["-y", &wrong],
        "update add u.upd.test. 300 A 192.0.2.13\nsend\n",
    );
    assert_failed_with("wrong secret", &r, "update failed: NOTAUTH(BADSIG)");
    assert_eq!(status(at, "u.upd.test", "A"), "NXDOMAIN");
    assert_eq!(serial_at(at), Some(7));
}

#[test]
fn knsupdate_adds_changes_deletes_and_is_refused_without_the_key() {
    let server = start_primary("upd-knsupdate", &[]);
    let at = server.addr4();
    let key = upd_key();
    let y = ["-y", key.as_str()];

    let r = knsupdate(at, &y, "add kn.upd.test. 300 A 192.0.2.30\nsend\n");
    assert_ok("add", &r, &server);
    assert_eq!(short(at, "kn.upd.test", "A"), ["192.0.2.30"]);
    assert_eq!(serial_at(at), Some(2));

    let r = knsupdate(
        at,
        &y,
        "prereq yxrrset www.upd.test. A 192.0.2.1\ndel www.upd.test. A\n\
         add www.upd.test. 60 A 192.0.2.5\nsend\n",
    );
    assert_ok("change", &r, &server);
    assert_eq!(short(at, "www.upd.test", "A"), ["192.0.2.5"]);
    let ttl = dig(at, &["+noall", "+answer", "www.upd.test", "A"]);
    assert!(ttl.split_whitespace().nth(1) == Some("60"), "{ttl}");

    for (prereq, rcode) in [
        ("prereq nxdomain www.upd.test.", "YXDOMAIN"),
        ("prereq yxdomain nothere.upd.test.", "NXDOMAIN"),
        ("prereq nxrrset www.upd.test. A", "YXRRSET"),
        ("prereq yxrrset www.upd.test. A 192.0.2.1", "NXRRSET"),
    ] {
        let r = knsupdate(
            at,
            &y,
            &format!("{prereq}\nadd blocked.upd.test. 300 A 192.0.2.66\nsend\n"),
        );
        assert_failed_with(prereq, &r, &format!("'{rcode}'"));
        assert_eq!(status(at, "blocked.upd.test", "A"), "NXDOMAIN", "{prereq}");
    }

    let r = knsupdate(at, &y, "del kn.upd.test.\nsend\n");
    assert_ok("delete", &r, &server);
    assert_eq!(status(at, "kn.upd.test", "A"), "NXDOMAIN");
    assert_eq!(serial_at(at), Some(4));

    // Unsigned: REFUSED (knsupdate: "update failed with error 'REFUSED'").
    let r = knsupdate(at, &[], "add u.upd.test. 300 A 192.0.2.13\nsend\n");
    assert_failed_with("unsigned", &r, "'REFUSED'");
    // A wrong secret: NOTAUTH with the TSIG error BADSIG, which knsupdate prints as the
    // status ("status: BADSIG") of an answer it cannot verify.
    let wrong = wrong_key();
    let r = knsupdate(
        at,
        &["-y", &wrong],
        "add u.upd.test. 300 A 192.0.2.13\nsend\n",
    );
    assert_failed_with("wrong secret", &r, "BADSIG");
    // A key the server does not know: BADKEY.
    let unknown = format!("hmac-sha256:other-key.:{SECRET}");
    let r = knsupdate(
        at,
        &["-y", &unknown],
        "add u.upd.test. 300 A 192.0.2.13\nsend\n",
    );
    assert_failed_with("unknown key", &r, "BADKEY");
    assert_eq!(status(at, "u.upd.test", "A"), "NXDOMAIN");
    assert_eq!(serial_at(at), Some(4));
}

/// The config file: `[[key]]` tables, and per zone `update_policy` lines (first match,
/// deny before a broad grant, a wildcard grant for ACME, an address grant) and
/// `serial_policy = "unixtime"`; a second zone with `serial_policy = "dateserial"` and
/// `max-records 2`.
#[test]
fn config_file_policy_and_serial_policies() {
    let acme = "hmac-sha256:acme.:YWNtZS1rZXktZm9yLXRoZS1lMmUtdGVzdHMtMDAwMDE=";
    let dir = TempDir::new("upd-policy-zone");
    let file = dir.write("upd.test.zone", &zone_text(1));
    let date_file = dir.write(
        "date.test.zone",
        "$ORIGIN date.test.\n$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 300\n@ NS ns\nns A 127.0.0.1\n",
    );
    let toml = format!(
        "[[key]]\nname = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
         [[key]]\nname = \"acme.\"\nalgorithm = \"hmac-sha256\"\n\
         secret = \"YWNtZS1rZXktZm9yLXRoZS1lMmUtdGVzdHMtMDAwMDE=\"\n\
         [[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\nserial_policy = \"unixtime\"\n\
         update_policy = [\n  \"deny upd. name www A\",\n  \"grant upd. zonesub ANY\",\n\
         \x20 \"grant acme. wildcard _acme-challenge.* TXT\",\n\
         \x20 \"grant 127.0.0.0/8 name open TXT\",\n]\n\
         [[zone]]\nname = \"date.test.\"\nfile = \"{}\"\nserial_policy = \"dateserial\"\n\
         update_policy = [\"grant upd. zonesub ANY\", \"max-records 2\"]\n",
        file.display(),
        date_file.display()
    );
    let server = Server::start_on(
        "upd-policy",
        Ipv4Addr::LOCALHOST,
        Some(&toml),
        &["--workers", "1"],
    );
    let at = server.addr;
    let key = upd_key();

    // The ACME key: TXT under _acme-challenge, nothing else.
    let r = nsupdate(
        at,
        &["-y", acme],
        "update add _acme-challenge.www.upd.test. 60 TXT \"token-1\"\nsend\n",
    );
    assert_ok("acme TXT", &r, &server);
    assert_eq!(
        short(at, "_acme-challenge.www.upd.test", "TXT"),
        ["\"token-1\""]
    );
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let serial = u64::from(serial_at(at).unwrap());
    assert!(
        serial.abs_diff(before) < 60,
        "serial_policy unixtime: serial {serial}, now {before}"
    );
    for (what, body) in [
        (
            // check-names off: nsupdate itself refuses an A at an underscore name.
            "acme A",
            "check-names no\nupdate add _acme-challenge.www.upd.test. 60 A 192.0.2.1\nsend\n",
        ),
        (
            "acme elsewhere",
            "update add www.upd.test. 60 TXT \"x\"\nsend\n",
        ),
        (
            "acme apex",
            "update add _acme-challenge.upd.test. 60 TXT \"x\"\nsend\n",
        ),
    ] {
        let r = nsupdate(at, &["-y", acme], body);
        assert_failed_with(what, &r, "update failed: REFUSED");
    }
    let r = nsupdate(
        at,
        &["-y", acme],
        "update delete _acme-challenge.www.upd.test. TXT\nsend\n",
    );
    assert_ok("acme cleanup", &r, &server);
    assert_eq!(
        status(at, "_acme-challenge.www.upd.test", "TXT"),
        "NXDOMAIN"
    );

    // The upd. key: everything but www's A (the deny comes first); a message mixing an
    // allowed and a denied record is refused whole.
    let r = nsupdate(
        at,
        &["-y", &key],
        "update add ok.upd.test. 300 A 192.0.2.50\nupdate delete www.upd.test. A\nsend\n",
    );
    assert_failed_with("denied www A", &r, "update failed: REFUSED");
    assert_eq!(status(at, "ok.upd.test", "A"), "NXDOMAIN", "all or nothing");
    assert_eq!(short(at, "www.upd.test", "A"), ["192.0.2.1"]);
    let r = nsupdate(
        at,
        &["-y", &key],
        "update add www.upd.test. 300 AAAA 2001:db8::5\nsend\n",
    );
    assert_ok("upd AAAA", &r, &server);

    // Unsigned from 127.0.0.1: `open` TXT only.
    let r = nsupdate(
        at,
        &[],
        "update add open.upd.test. 300 TXT \"anyone\"\nsend\n",
    );
    assert_ok("address grant", &r, &server);
    assert_eq!(short(at, "open.upd.test", "TXT"), ["\"anyone\""]);
    let r = nsupdate(at, &[], "update add open.upd.test. 300 A 192.0.2.9\nsend\n");
    assert_failed_with("address grant, other type", &r, "update failed: REFUSED");

    // dateserial: YYYYMMDDnn of today (UTC) from serial 1; max-records 2: three are
    // REFUSED.
    let r = nsupdate(
        at,
        &["-y", &key],
        "zone date.test.\nupdate add d1.date.test. 300 A 192.0.2.80\nsend\n",
    );
    assert_ok("dateserial zone", &r, &server);
    let today = Command::new("date")
        .args(["-u", "+%Y%m%d"])
        .output()
        .unwrap();
    let today: u64 = String::from_utf8_lossy(&today.stdout)
        .trim()
        .parse()
        .unwrap();
    let soa = short(at, "date.test", "SOA");
    let serial: u64 = soa[0].split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(serial / 100, today, "dateserial: {soa:?}");
    let r = nsupdate(
        at,
        &["-y", &key],
        "zone date.test.\nupdate add d2.date.test. 300 A 192.0.2.81\n\
         update add d3.date.test. 300 A 192.0.2.82\nupdate add d4.date.test. 300 A 192.0.2.83\nsend\n",
    );
    assert_failed_with("max-records 2", &r, "update failed: REFUSED");
    assert_eq!(status(at, "d2.date.test", "A"), "NXDOMAIN");
}
