//! Updates sent to a shardns secondary (`[[zone]] update_forwarding`): forwarded unchanged
//! to its primary (shardns, over TCP and over TLS with `primary_tls`; knotd), whose answer
//! comes back to the client unchanged (`nsupdate` checks its TSIG: the secondary does not
//! even know the update key); the primary serves the change at once, the secondary after
//! the primary's NOTIFY and IXFR.
//! Without `update_forwarding` (or not for the client's address) REFUSED; with no primary
//! reachable, SERVFAIL (signed when the secondary knows the key).

use super::wire::{answer_of, Signer, Update, A};
use super::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The primary's config: the update key allowed to update the zone, the transfer key on
/// transfers, NOTIFY to `secondaries`.
fn primary_toml(file: &Path, secondaries: &[SocketAddr]) -> String {
    let notify: Vec<String> = secondaries.iter().map(|s| format!("\"{s}\"")).collect();
    format!(
        "{}[[key]]\nname = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
         [server]\nallow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\n\
         notify = [{}]\n\
         [[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\nupdate_policy = [\"grant {KEY_NAME} zonesub ANY\"]\n",
        tsig_toml(),
        notify.join(", "),
        file.display()
    )
}

/// A secondary's config: the transfer key only (plus `extra`, before the zone), the zone
/// from `primaries` with `forwarding` (a TOML line, or nothing).
fn secondary_toml(primaries: &[SocketAddr], forwarding: &str, extra: &str) -> String {
    let primaries: Vec<String> = primaries.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "{}{extra}[[zone]]\nname = \"{APEX}\"\nprimary = [{}]\nprimary_key = \"{TSIG_NAME}\"\n{forwarding}\n",
        tsig_toml(),
        primaries.join(", ")
    )
}

/// shardns on `listen` with the config `toml`, written in `dir`.
fn start(dir: &TempDir, tag: &str, listen: SocketAddr, toml: &str) -> Server {
    let config = dir.write(&format!("{tag}.toml"), toml);
    let config = config.to_str().unwrap().to_string();
    Server::start_at(tag, &[listen], &["--workers", "1", "--config", &config])
}

fn local() -> SocketAddr {
    SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, free_port()))
}

/// Waits until `at` answers `serial`; panics after 10 s with `context()`.
fn wait_serial(at: SocketAddr, serial: u32, context: impl Fn() -> String) {
    let end = Instant::now() + Duration::from_secs(10);
    while serial_at(at) != Some(serial) {
        assert!(
            Instant::now() < end,
            "{at} answers serial {:?}, not {serial}\n{}",
            serial_at(at),
            context()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The answer of `server` to an update adding `name` A 192.0.2.77, signed by `signer`,
/// over UDP.
fn send(server: SocketAddr, id: u16, name: &str, signer: Signer) -> String {
    let msg = Update::new(APEX)
        .add(name, A, &[192, 0, 2, 77])
        .build(id, signer);
    answer_of(udp_exchange(&udp_client(server), &msg)).rcode
}

#[test]
fn a_secondary_forwards_updates_to_a_shardns_primary() {
    let work = TempDir::new("upd-fwd");
    let file = work.write("upd.test.zone", &zone_text(1));
    let (p, s1, s2, s3) = (local(), local(), local(), local());
    let primary = start(&work, "upd-fwd-p", p, &primary_toml(&file, &[s1, s2, s3]));
    // A closed port first: the next primary is tried when the connection fails.
    let closed = local();
    let forwarding = "update_forwarding = [\"127.0.0.0/8\"]";
    let sec = start(
        &work,
        "upd-fwd-s1",
        s1,
        &secondary_toml(&[closed, p], forwarding, ""),
    );
    // Not for this client's address, and not at all (no zone may be updated: the worker
    // refuses).
    let elsewhere = "update_forwarding = [\"192.0.2.0/24\"]";
    let _other = start(
        &work,
        "upd-fwd-s2",
        s2,
        &secondary_toml(&[p], elsewhere, ""),
    );
    let _plain = start(&work, "upd-fwd-s3", s3, &secondary_toml(&[p], "", ""));
    let context = || {
        format!(
            "--- secondary:\n{}\n--- primary:\n{}",
            sec.log(),
            primary.log()
        )
    };
    for at in [s1, s2, s3] {
        wait_serial(at, 1, context);
    }

    // nsupdate over UDP, then TCP: NOERROR, its TSIG checked by nsupdate (the primary's).
    let run = nsupdate(
        s1,
        &["-y", &upd_key()],
        "update add fwd.upd.test. 300 A 192.0.2.99\nsend\n",
    );
    assert!(
        run.ok,
        "nsupdate via the secondary:\n{}\n{}",
        run.text,
        context()
    );
    assert_eq!(
        short(p, "fwd.upd.test.", "A"),
        ["192.0.2.99"],
        "{}",
        context()
    );
    wait_serial(s1, 2, context);
    assert_eq!(short(s1, "fwd.upd.test.", "A"), ["192.0.2.99"]);
    let run = nsupdate(
        s1,
        &["-v", "-y", &upd_key()],
        "update add fwd.upd.test. 300 TXT \"over tcp\"\nsend\n",
    );
    assert!(
        run.ok,
        "nsupdate -v via the secondary:\n{}\n{}",
        run.text,
        context()
    );
    wait_serial(s1, 3, context);
    assert_eq!(short(s1, "fwd.upd.test.", "TXT"), ["\"over tcp\""]);

    // The primary's rcodes come back: a prerequisite, a bad signature.
    let run = nsupdate(
        s1,
        &["-y", &upd_key()],
        "prereq nxdomain www.upd.test.\nupdate add x.upd.test. 300 A 192.0.2.1\nsend\n",
    );
    assert!(!run.ok && run.text.contains("YXDOMAIN"), "{}", run.text);
    assert_eq!(
        send(s1, 41, "bad.upd.test.", Signer::WrongSecret),
        "NOTAUTH/BADSIG"
    );
    assert_eq!(send(s1, 42, "none.upd.test.", Signer::Unsigned), "REFUSED");
    assert_eq!(serial_at(p), Some(3), "{}", context());
    assert!(sec.log().contains("forwarded to"), "{}", context());

    // Refused when not forwarded.
    assert_eq!(send(s2, 43, "no.upd.test.", Signer::Unsigned), "REFUSED");
    assert_eq!(send(s3, 44, "no.upd.test.", Signer::Key), "REFUSED");
    assert_eq!(send(s3, 45, "no.upd.test.", Signer::Unsigned), "REFUSED");
    assert_eq!(serial_at(p), Some(3));
}

#[test]
fn no_primary_reachable_is_servfail() {
    let work = TempDir::new("upd-fwd-down-conf");
    let (s, closed) = (local(), local());
    let key = format!(
        "[[key]]\nname = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n"
    );
    let toml = secondary_toml(&[closed], "update_forwarding = true", &key);
    let sec = start(&work, "upd-fwd-down", s, &toml);
    let begun = Instant::now();
    // The secondary knows the key: its SERVFAIL is signed (nsupdate checks it).
    let msg = Update::new(APEX)
        .add("down.upd.test.", A, &[192, 0, 2, 7])
        .build(51, Signer::Key);
    let answer = answer_of(udp_exchange(&udp_client(s), &msg));
    assert_eq!(answer.rcode, "SERVFAIL", "{}", sec.log());
    assert!(answer.signed, "{}", sec.log());
    let run = nsupdate(
        s,
        &["-y", &upd_key()],
        "update add down.upd.test. 300 A 192.0.2.7\nsend\n",
    );
    assert!(!run.ok && run.text.contains("SERVFAIL"), "{}", run.text);
    assert!(begun.elapsed() < Duration::from_secs(8));
    assert!(sec.log().contains("not forwarded"), "{}", sec.log());
}

/// knotd serving the zone, the update key allowed to update it, transfers to the transfer
/// key, NOTIFY to `secondary`.
fn knot_primary(work: &Path, listen: SocketAddr, file: &Path, secondary: SocketAddr) -> Daemon {
    let rest = format!(
        "key:\n  - id: {KEY_NAME}\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
         \x20 - id: {TSIG_NAME}\n    algorithm: hmac-sha256\n    secret: {TSIG_SECRET}\n\
         remote:\n  - id: secondary\n    address: {sip}@{sport}\n    key: {TSIG_NAME}\n\
         acl:\n  - id: upd\n    key: {KEY_NAME}\n    action: update\n\
         \x20 - id: xfr\n    address: 127.0.0.0/8\n    key: {TSIG_NAME}\n    action: transfer\n\
         zone:\n  - domain: {APEX}\n    file: \"{f}\"\n    storage: \"{w}\"\n\
         \x20   zonefile-sync: -1\n    journal-content: changes\n    serial-policy: increment\n\
         \x20   acl: [upd, xfr]\n    notify: secondary\n",
        w = work.display(),
        sip = secondary.ip(),
        sport = secondary.port(),
        f = file.display(),
    );
    spawn_knot(&knotd(), work, listen, "info", &rest)
}

#[test]
fn a_secondary_forwards_updates_to_knotd() {
    let work = TempDir::new("upd-fwd-knot");
    let file = work.write("upd.test.zone", &zone_text(1));
    let (k, s) = (local(), local());
    let knot = knot_primary(work.path(), k, &file, s);
    let toml = secondary_toml(&[k], "update_forwarding = true", "");
    let sec = start(&work, "upd-fwd-knot-s", s, &toml);
    let context = || format!("--- secondary:\n{}\n--- knotd:\n{}", sec.log(), knot.log());
    wait_serial(k, 1, context);
    wait_serial(s, 1, context);
    let run = nsupdate(
        s,
        &["-y", &upd_key()],
        "update add fwd.upd.test. 300 A 192.0.2.98\nsend\n",
    );
    assert!(
        run.ok,
        "nsupdate via the secondary:\n{}\n{}",
        run.text,
        context()
    );
    assert_eq!(
        short(k, "fwd.upd.test.", "A"),
        ["192.0.2.98"],
        "{}",
        context()
    );
    wait_serial(s, 2, context);
    assert_eq!(short(s, "fwd.upd.test.", "A"), ["192.0.2.98"]);
    assert_eq!(
        send(s, 61, "bad.upd.test.", Signer::WrongSecret),
        "NOTAUTH/BADSIG"
    );
}

/// A self-signed certificate for 127.0.0.1 in `dir`: (cert, key, the SPKI pin in base64).
fn pinned_cert(dir: &Path) -> (PathBuf, PathBuf, String) {
    let (cert, key) = (dir.join("primary.crt"), dir.join("primary.key"));
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=ns.upd.test", "-addext"])
        .args(["subjectAltName=DNS:ns.upd.test,IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pin = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -pubkey -noout -in '{}' | openssl pkey -pubin -outform der \
             | openssl dgst -sha256 -binary | base64",
            cert.display()
        ))
        .output()
        .expect("openssl");
    assert!(
        pin.status.success(),
        "{}",
        String::from_utf8_lossy(&pin.stderr)
    );
    let pin = String::from_utf8(pin.stdout).unwrap().trim().to_string();
    (cert, key, pin)
}

#[test]
fn a_secondary_forwards_over_tls_with_primary_tls() {
    let work = TempDir::new("upd-fwd-tls");
    let file = work.write("upd.test.zone", &zone_text(1));
    let (cert, key, pin) = pinned_cert(work.path());
    let (p, p_tls, s) = (local(), local(), local());
    let tls = format!(
        "[server]\ntls_listen = [\"{p_tls}\"]\ntls_certificate = \"{}\"\ntls_key = \"{}\"\n",
        cert.display(),
        key.display()
    );
    // The [server] table of `primary_toml` follows: the DoT lines go into it.
    let toml = primary_toml(&file, &[s]).replacen("[server]\n", &tls, 1);
    let primary = start(&work, "upd-fwd-tls-p", p, &toml);
    let forwarding =
        format!("update_forwarding = true\nprimary_tls = {{ spki_sha256 = [\"{pin}\"] }}");
    let sec = start(
        &work,
        "upd-fwd-tls-s",
        s,
        &secondary_toml(&[p_tls], &forwarding, ""),
    );
    let context = || {
        format!(
            "--- secondary:\n{}\n--- primary:\n{}",
            sec.log(),
            primary.log()
        )
    };
    wait_serial(s, 1, context);
    let run = nsupdate(
        s,
        &["-y", &upd_key()],
        "update add tls.upd.test. 300 A 192.0.2.55\nsend\n",
    );
    assert!(
        run.ok,
        "nsupdate via the secondary:\n{}\n{}",
        run.text,
        context()
    );
    assert_eq!(
        short(p, "tls.upd.test.", "A"),
        ["192.0.2.55"],
        "{}",
        context()
    );
    // To the DoT address, which speaks nothing but TLS.
    let line = format!("forwarded to {p_tls}: NOERROR");
    assert!(sec.log().contains(&line), "{}", context());
    wait_serial(s, 2, context);
    assert_eq!(short(s, "tls.upd.test.", "A"), ["192.0.2.55"]);
}

/// A member of a consumed catalog forwards as its `[[template]]`'s `update_forwarding`
/// says: the primary produces the catalog `cat.test.` with the zone in it; one secondary's
/// template forwards for 127.0.0.0/8, the other's has none (REFUSED, as before).
#[test]
fn a_catalog_member_forwards_by_its_template() {
    let work = TempDir::new("upd-fwd-cat");
    let file = work.write("upd.test.zone", &zone_text(1));
    let (p, s1, s2) = (local(), local(), local());
    let toml = format!(
        "{}catalog_member = \"cat.test.\"\n[[zone]]\nname = \"cat.test.\"\ncatalog = \"produce\"\n",
        primary_toml(&file, &[s1, s2])
    );
    let primary = start(&work, "upd-fwd-cat-p", p, &toml);
    let consumer = |template: &str| {
        format!(
            "{}[[zone]]\nname = \"cat.test.\"\nprimary = [\"{p}\"]\nprimary_key = \"{TSIG_NAME}\"\n\
             catalog = \"consume\"\ncatalog_templates = [\"members\"]\n\
             [[template]]\nname = \"members\"\n{template}\n",
            tsig_toml()
        )
    };
    let forwarding = consumer("update_forwarding = [\"127.0.0.0/8\"]");
    let sec = start(&work, "upd-fwd-cat-s1", s1, &forwarding);
    let _plain = start(&work, "upd-fwd-cat-s2", s2, &consumer(""));
    let context = || {
        format!(
            "--- secondary:\n{}\n--- primary:\n{}",
            sec.log(),
            primary.log()
        )
    };
    for at in [s1, s2] {
        wait_serial(at, 1, context);
    }
    let run = nsupdate(
        s1,
        &["-y", &upd_key()],
        "update add cat.upd.test. 300 A 192.0.2.66\nsend\n",
    );
    assert!(
        run.ok,
        "nsupdate via the member:\n{}\n{}",
        run.text,
        context()
    );
    assert_eq!(
        short(p, "cat.upd.test.", "A"),
        ["192.0.2.66"],
        "{}",
        context()
    );
    assert!(
        sec.log().contains(&format!("forwarded to {p}: NOERROR")),
        "{}",
        context()
    );
    wait_serial(s1, 2, context);
    assert_eq!(short(s1, "cat.upd.test.", "A"), ["192.0.2.66"]);
    // The primary's own refusal comes back unchanged; the other consumer refuses.
    assert_eq!(send(s1, 71, "none.upd.test.", Signer::Unsigned), "REFUSED");
    assert_eq!(send(s2, 72, "no.upd.test.", Signer::Key), "REFUSED");
    assert_eq!(serial_at(p), Some(2), "{}", context());
}
