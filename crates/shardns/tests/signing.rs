//! Automatic signing (issue 13, step 3), end to end with the real binary on loopback:
//! zones served with `--sign --key-dir` (and `dnssec = true` in a config, NSEC3 and
//! opt-out), transferred by AXFR and checked by tools we did not write (`ldns-verify-zone`,
//! `dnssec-verify`), answers validated by `delv` from the DS that `shardns key ds` prints,
//! knotd as a secondary of the signed zone, signatures refreshed before they expire (serial
//! moved, NOTIFY sent), key state kept over a restart, and the key directory errors that
//! keep the previous version serving. A missing tool skips its part with a message;
//! `scripts/test.sh` installs them.

mod common;

use common::*;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ZONE: &str = "\
$TTL 300
@       SOA ns.sign.test. admin.sign.test. 1 3600 600 86400 300
@       NS  ns
ns      A   127.0.0.1
www     A   192.0.2.2
        TXT \"hello\"
*.wild  A   192.0.2.3
deep.a.b A  192.0.2.4
alias   CNAME www
; an unsigned delegation and a signed one (its DS here)
plain   NS  ns.plain
ns.plain A  192.0.2.5
secure  NS  ns.other.test.
secure  DS  12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF
";

fn tool(name: &str) -> Option<PathBuf> {
    find_program(name, &name.to_ascii_uppercase().replace('-', "_"))
}

/// Runs a program; whether it exited 0, and both streams.
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

fn shardns(args: &[&str]) -> (bool, String) {
    run(Command::new(BIN).args(args))
}

/// A step of a rollover judged from the DS set `anchors` (a file of
/// `common::ds_anchor_file`): delv validates [`ROLL_QUESTIONS`], and dnsviz, from the
/// zone's DNSKEYs the DS set names, finds no error in the zone (no parent here: the chain
/// from a parent is judged in tests/algorithm_roll.rs, shape_roll.rs, through
/// `common::ParentLab`).
fn roll_judged(judges: &mut DnsvizQueue, server: SocketAddr, anchors: &Path) {
    delv_all(server, anchors, "sign.test", ROLL_QUESTIONS);
    let what = format!("signing, from {}", anchors.display());
    dnsviz_from_ds(
        judges,
        server,
        ("sign.test", anchors),
        &["www.sign.test"],
        &what,
    );
}

/// delv validates each question against the anchors, asking `server`: every answer must be
/// "fully validated", or, where `insecure` allows it for the name, an unsigned (insecure)
/// answer, never a failure.
fn delv_all(server: SocketAddr, anchors: &Path, root: &str, questions: &[(&str, &str)]) {
    delv_some_insecure(server, anchors, root, questions, &[]);
}

fn delv_some_insecure(
    server: SocketAddr,
    anchors: &Path,
    root: &str,
    questions: &[(&str, &str)],
    insecure: &[&str],
) {
    let Some(delv) = tool("delv") else {
        println!("signing: SKIPPED delv: not installed (bind9-dnsutils)");
        return;
    };
    for (name, qtype) in questions {
        let (_, out) = run(Command::new(&delv)
            .arg(format!("@{}", server.ip()))
            .args(["-p", &server.port().to_string()])
            .arg("-a")
            .arg(anchors)
            .arg(format!("+root={root}"))
            .args([name, qtype]));
        let secure = out.contains("fully validated");
        let allowed = insecure.contains(name) && out.contains("; unsigned answer");
        assert!(
            (secure || allowed) && !out.contains("resolution failed: SERVFAIL"),
            "delv does not validate {name} {qtype} from {server}:\n{out}"
        );
    }
}

const QUESTIONS: &[(&str, &str)] = &[
    ("www.sign.test", "A"),
    ("www.sign.test", "TXT"),
    ("www.sign.test", "AAAA"),  // no data
    ("nothere.sign.test", "A"), // name error
    ("x.wild.sign.test", "A"),  // wildcard
    ("x.wild.sign.test", "MX"), // wildcard no data
    ("a.sign.test", "A"),       // empty non-terminal
    ("alias.sign.test", "A"),
    ("sign.test", "DNSKEY"),
    ("sign.test", "CDS"),
    ("secure.sign.test", "DS"),
    ("plain.sign.test", "DS"), // insecure delegation
];

/// `shardns reload ZONE` against the server.
fn reload_zone(server: &Server, zone: &str) -> std::process::Output {
    Command::new(BIN)
        .args(["reload", zone, "--control"])
        .arg(&server.control)
        .output()
        .unwrap()
}

fn soa_serial(server: SocketAddr) -> u32 {
    let soa = dig(server, &["+short", "sign.test", "SOA"]);
    soa.split_whitespace()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no SOA from {server}: {soa:?}"))
}

/// The expiration of the SOA's RRSIG (YYYYMMDDHHMMSS, compared as text).
fn soa_expiration(server: SocketAddr) -> String {
    let out = dig(server, &["+dnssec", "+norec", "+short", "sign.test", "SOA"]);
    out.lines()
        .find(|l| l.starts_with("SOA "))
        .and_then(|l| l.split_whitespace().nth(4))
        .unwrap_or_else(|| panic!("no RRSIG SOA: {out}"))
        .to_string()
}

#[test]
fn sign_flag_zone_transfers_verified_and_validated() {
    let dir = TempDir::new("sign-flag");
    let file = dir.write("sign.test.zone", ZONE);
    let keys = dir.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let zone = format!("sign.test={}", file.display());
    let server = Server::start(
        "sign-flag-srv",
        &[
            "--workers",
            "1",
            "--zone",
            &zone,
            "--sign",
            "--key-dir",
            keys.to_str().unwrap(),
            "--allow-transfer",
            "127.0.0.1",
        ],
    );
    // A first key was made: a CSK, ECDSA P-256, files for the owner alone.
    let (ok, list) = shardns(&[
        "key",
        "list",
        "sign.test",
        "--key-dir",
        keys.to_str().unwrap(),
    ]);
    assert!(ok, "{list}");
    assert!(
        list.lines().nth(1).is_some_and(|l| l.contains("CSK")
            && l.contains("ECDSAP256SHA256")
            && l.contains("active")),
        "{list}"
    );
    for e in std::fs::read_dir(&keys).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            assert_eq!(
                e.metadata().unwrap().permissions().mode() & 0o777,
                0o600,
                "{:?}",
                e.path()
            );
        }
    }
    // The transfer is the signed zone: verified whole by two verifiers we did not write.
    let text = axfr_text(server.addr4(), "sign.test", 10);
    for t in [" RRSIG ", " NSEC ", " DNSKEY "] {
        assert!(text.contains(t), "no{t}in the transfer:\n{text}");
    }
    // `cds_cdnskey_publish = "rollover"` (the default): no CDS outside a rollover.
    for t in [" CDS ", " CDNSKEY "] {
        assert!(!text.contains(t), "{t}in the transfer:\n{text}");
    }
    let signed = dir.write("axfr.zone", &text);
    verify_zone_file(&signed, "sign.test").unwrap_or_else(|e| panic!("{e}"));

    // The DS for the parent, as BIND's own tool makes it from the key file.
    let (ok, ds) = shardns(&[
        "key",
        "ds",
        "sign.test",
        "--key-dir",
        keys.to_str().unwrap(),
    ]);
    assert!(ok, "{ds}");
    if let Some(dsfromkey) = tool("dnssec-dsfromkey") {
        let key_file = std::fs::read_dir(&keys)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "key"))
            .unwrap();
        let (ok, bind) = run(Command::new(dsfromkey).arg("-2").arg(&key_file));
        assert!(ok, "{bind}");
        let ours: Vec<&str> = ds.lines().filter(|l| !l.starts_with(';')).collect();
        assert_eq!(ours, bind.lines().collect::<Vec<_>>());
    }
    // Answers validate from that DS.
    let anchors = ds_anchor_file(dir.path(), &ds);
    delv_all(server.addr4(), &anchors, "sign.test", QUESTIONS);
}

#[test]
fn nsec3_and_opt_out_from_a_config_file_with_ed25519() {
    for (tag, extra) in [
        ("nsec3", "nsec3 = true\nalgorithm = \"ed25519\"\n"),
        ("optout", "nsec3_opt_out = true\n"),
    ] {
        let dir = TempDir::new(&format!("sign-{tag}"));
        dir.write("sign.test.zone", ZONE);
        std::fs::create_dir(dir.path().join("keys")).unwrap();
        let config = dir.write(
            "shardns.toml",
            &format!(
                "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
                 [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n{extra}"
            ),
        );
        let server = Server::start(
            &format!("sign-{tag}-srv"),
            &["--workers", "1", "--config", config.to_str().unwrap()],
        );
        let text = axfr_text(server.addr4(), "sign.test", 10);
        assert!(text.contains(" NSEC3PARAM 1 0 0 -"), "{text}");
        assert!(!text.contains(" NSEC "), "{text}");
        let signed = dir.write("axfr.zone", &text);
        verify_zone_file(&signed, "sign.test").unwrap_or_else(|e| panic!("{e}"));
        let (ok, ds) = shardns(&[
            "key",
            "ds",
            "sign.test",
            "--key-dir",
            dir.path().join("keys").to_str().unwrap(),
        ]);
        assert!(ok, "{ds}");
        if tag == "nsec3" {
            assert!(
                ds.contains(" DS ") && ds.contains(" 15 2 "),
                "Ed25519: {ds}"
            );
        }
        let anchors = ds_anchor_file(dir.path(), &ds);
        // With opt-out, the cover of a wildcard answer's next closer name has the opt-out
        // flag, so an unsigned delegation could hide there: BIND's validator calls such an
        // answer insecure (RFC 5155 §6, §9.2), as it does for dnssec-signzone -A zones.
        let insecure: &[&str] = if tag == "optout" {
            &["x.wild.sign.test"]
        } else {
            &[]
        };
        delv_some_insecure(server.addr4(), &anchors, "sign.test", QUESTIONS, insecure);
    }
}

/// knotd as a secondary of the signed zone: it transfers it, serves the same signed
/// answers, and follows a new signed version after the NOTIFY.
#[test]
fn knotd_secondary_serves_the_signed_zone() {
    let Some(knotd) = find_knotd() else {
        println!("signing: SKIPPED knotd is not installed (apt-get install -y knot)");
        return;
    };
    let dir = TempDir::new("sign-knot");
    let file = dir.write("sign.test.zone", ZONE);
    let keys = dir.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let knot_port = free_port();
    let knot_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, knot_port));
    let zone = format!("sign.test={}", file.display());
    let notify = knot_addr.to_string();
    let server = Server::start(
        "sign-knot-srv",
        &[
            "--workers",
            "1",
            "--zone",
            &zone,
            "--sign",
            "--key-dir",
            keys.to_str().unwrap(),
            "--allow-transfer",
            "127.0.0.1",
            "--notify",
            &notify,
        ],
    );
    let work = TempDir::new("sign-knotd");
    let conf = format!(
        "server:\n    rundir: \"{w}\"\n    listen: 127.0.0.1@{knot_port}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         database:\n    storage: \"{w}\"\n\
         remote:\n  - id: primary\n    address: 127.0.0.1@{primary}\n\
         acl:\n  - id: local\n    address: 127.0.0.1\n    action: [transfer, notify]\n\
         zone:\n  - domain: sign.test\n    master: primary\n    acl: local\n\
         \x20   file: \"{w}/sign.test.zone\"\n    zonefile-sync: -1\n",
        w = work.path().display(),
        primary = server.port,
    );
    let conf_path = work.write("knot.conf", &conf);
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&conf_path);
    let mut knot = Daemon::spawn("knotd", cmd, work.path().join("knotd.log"));
    let wait_serial = |knot: &mut Daemon, serial: u32| {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            knot.check_alive();
            let soa = dig(knot_addr, &["+short", "sign.test", "SOA"]);
            if soa.split_whitespace().nth(2) == Some(&serial.to_string()) {
                return;
            }
            assert!(
                Instant::now() < end,
                "knotd has no serial {serial} after 30 s (SOA {soa:?}); its log:\n{}",
                knot.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_serial(&mut knot, 1);
    // The same signed answers from both, DO set, over TCP (whole answers).
    for (name, qtype) in QUESTIONS {
        let ask = |at| {
            let out = dig(
                at,
                &[
                    "+dnssec",
                    "+norec",
                    "+tcp",
                    "+noall",
                    "+answer",
                    "+authority",
                    name,
                    qtype,
                ],
            );
            let mut v = sorted_lines(&out.to_lowercase());
            v.retain(|l| !l.starts_with(';'));
            v
        };
        assert_eq!(
            ask(server.addr4()),
            ask(knot_addr),
            "{name} {qtype}: knotd's signed answer differs"
        );
    }
    let (ok, ds) = shardns(&[
        "key",
        "ds",
        "sign.test",
        "--key-dir",
        keys.to_str().unwrap(),
    ]);
    assert!(ok, "{ds}");
    let anchors = ds_anchor_file(work.path(), &ds);
    delv_all(knot_addr, &anchors, "sign.test", QUESTIONS);

    // A change to the unsigned file: signed again with serial 2, NOTIFY, knotd follows.
    std::fs::write(
        &file,
        ZONE.replace(" 1 3600 ", " 2 3600 ") + "new A 192.0.2.9\n",
    )
    .unwrap();
    let out = server.control("reload");
    assert!(out.status.success(), "{out:?}");
    wait_serial(&mut knot, 2);
    let new = dig(
        knot_addr,
        &["+dnssec", "+norec", "+short", "new.sign.test", "A"],
    );
    assert!(
        new.contains("192.0.2.9") && new.contains("A 13 3 300"),
        "{new}"
    );
    delv_all(knot_addr, &anchors, "sign.test", &[("new.sign.test", "A")]);
}

/// Short-lived signatures are made anew before they expire, with a new serial and a
/// NOTIFY; a restart keeps the key and moves the serial on from the last one.
#[test]
fn signatures_are_refreshed_and_state_survives_a_restart() {
    let data = TempDir::new("sign-refresh-data");
    data.write("sign.test.zone", ZONE);
    std::fs::create_dir(data.path().join("keys")).unwrap();
    // Valid 12 s, made anew 9 s before they expire: every 3 s.
    let config = data.write(
        "shardns.toml",
        "[server]\nkey_directory = \"keys\"\n\
         [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
         signature_validity = 12\nsignature_refresh = \"9s\"\n",
    );
    let secondary = UdpSocket::bind("127.0.0.1:0").unwrap();
    secondary
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let notify = secondary.local_addr().unwrap().to_string();
    let args = [
        "--workers",
        "1",
        "--config",
        config.to_str().unwrap(),
        "--notify",
        &notify,
    ];
    let mut server = Server::start("sign-refresh-srv", &args);
    let (s1, e1) = (soa_serial(server.addr4()), soa_expiration(server.addr4()));
    assert_eq!(s1, 1);
    // NOTIFY of each version: answer them so the server does not repeat them.
    let mut notified = Vec::new();
    let end = Instant::now() + Duration::from_secs(20);
    let (s2, e2) = loop {
        let mut buf = [0u8; 512];
        if let Ok((n, from)) = secondary.recv_from(&mut buf) {
            assert!(n > 12 && (buf[2] >> 3) & 0xf == 4, "not a NOTIFY");
            notified.push(u16::from_be_bytes([buf[0], buf[1]]));
            let mut reply = buf[..n].to_vec();
            reply[2] |= 0x80; // QR
            secondary.send_to(&reply, from).unwrap();
        }
        let s = soa_serial(server.addr4());
        if s > s1 && notified.len() >= 2 {
            break (s, soa_expiration(server.addr4()));
        }
        assert!(
            Instant::now() < end,
            "serial still {s}, {} NOTIFY, after 20 s:\n{}",
            notified.len(),
            server.log()
        );
    };
    assert!(e2 > e1, "expiration {e1} -> {e2}");
    assert!(server.log().contains("due for refresh"), "{}", server.log());

    // Restart: the same key (tag), a serial above every one before.
    let keys = data.path().join("keys");
    let (_, before) = shardns(&[
        "key",
        "list",
        "sign.test",
        "--key-dir",
        keys.to_str().unwrap(),
    ]);
    server.terminate();
    drop(server);
    let server = Server::start("sign-refresh-srv2", &args);
    // The kept signed version if its signatures are not due yet, else signed anew.
    let s3 = soa_serial(server.addr4());
    assert!(s3 >= s2, "serial {s2} before the restart, {s3} after");
    let (_, after) = shardns(&[
        "key",
        "list",
        "sign.test",
        "--key-dir",
        keys.to_str().unwrap(),
    ]);
    assert_eq!(before, after, "the keys changed over a restart");
    assert_eq!(
        after.lines().filter(|l| !l.starts_with("next")).count(),
        2,
        "one key: {after}"
    );
}

/// A key directory that goes missing, or holds a key of another zone under this zone's
/// name, fails the signing with a clear message; the previous signed version keeps serving.
#[test]
fn key_directory_errors_keep_the_previous_version() {
    let dir = TempDir::new("sign-errors");
    let file = dir.write("sign.test.zone", ZONE);
    let keys = dir.path().join("keys");
    let zone = format!("sign.test={}", file.display());

    // At start, with no key directory at all: the only zone fails, so the server stops.
    let (ok, out) = shardns(&[
        "check",
        "--zone",
        &zone,
        "--sign",
        "--key-dir",
        keys.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        out.contains("cannot sign the zone: key directory") && out.contains("does not exist"),
        "{out}"
    );
    // And without --key-dir, the config is refused, naming the zone.
    let (ok, out) = shardns(&["check", "--zone", &zone, "--sign"]);
    assert!(!ok);
    assert!(
        out.contains("zone sign.test. is to be signed but no key directory"),
        "{out}"
    );

    std::fs::create_dir(&keys).unwrap();
    let server = Server::start(
        "sign-errors-srv",
        &[
            "--workers",
            "1",
            "--zone",
            &zone,
            "--sign",
            "--key-dir",
            keys.to_str().unwrap(),
        ],
    );
    let www = |s: &Server| dig(s.addr4(), &["+dnssec", "+short", "www.sign.test", "A"]);
    assert!(www(&server).contains("A 13 3 300"));

    // The key directory goes away and the zone changes: the change is not served.
    let moved = dir.path().join("keys.moved");
    std::fs::rename(&keys, &moved).unwrap();
    std::fs::write(&file, ZONE.replace("192.0.2.2", "192.0.2.22")).unwrap();
    let out = server.control("reload");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains("keeping its previous version") && text.contains("does not exist"),
        "{text}"
    );
    assert!(www(&server).contains("192.0.2.2\n"), "{}", www(&server));
    assert_eq!(soa_serial(server.addr4()), 1);

    // Back, but with a key of another zone named as this zone's: refused, named.
    std::fs::rename(&moved, &keys).unwrap();
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let other_zone = dir.write("other.zone", &ZONE.replace("sign.test", "other.test"));
    let (ok, out) = shardns(&[
        "sign",
        "other.test",
        other_zone.to_str().unwrap(),
        "--key-dir",
        other.to_str().unwrap(),
        "-o",
        dir.path().join("other.signed").to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    let mut stray = Vec::new();
    for e in std::fs::read_dir(&other).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap();
        if let Some(rest) = name.strip_prefix("Kother.test.") {
            let to = keys.join(format!("Ksign.test.{rest}"));
            std::fs::copy(&p, &to).unwrap();
            stray.push(to);
        }
    }
    assert_eq!(stray.len(), 2);
    let out = reload_zone(&server, "sign.test");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains("a key for other.test., not for sign.test."),
        "{text}"
    );
    assert!(www(&server).contains("192.0.2.2\n"));

    // The stray key removed: the new version is signed and served, serial moved.
    for p in stray {
        std::fs::remove_file(p).unwrap();
    }
    let out = reload_zone(&server, "sign.test");
    assert!(out.status.success(), "{out:?}");
    assert!(www(&server).contains("192.0.2.22"));
    assert_eq!(soa_serial(server.addr4()), 2);
}

/// `shardns sign` writes a signed zone the verifiers accept.
#[test]
fn sign_command_writes_a_verified_zone() {
    let dir = TempDir::new("sign-cmd");
    let file = dir.write("sign.test.zone", ZONE);
    let keys = dir.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let out_file = dir.path().join("signed.zone");
    for extra in [&[][..], &["--nsec3"][..], &["--nsec3-opt-out"][..]] {
        let mut args = vec![
            "sign",
            "sign.test",
            file.to_str().unwrap(),
            "--key-dir",
            keys.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (ok, out) = shardns(&args);
        assert!(ok && out.starts_with("signed sign.test.:"), "{out}");
        verify_zone_file(&out_file, "sign.test").unwrap_or_else(|e| panic!("{e}"));
    }
    let (ok, out) = shardns(&[
        "sign",
        "sign.test",
        "/nonexistent",
        "--key-dir",
        "/x",
        "-o",
        "/tmp/y",
    ]);
    assert!(!ok, "{out}");
}

/// A zone with 2 s TTLs, for rollovers in seconds.
const ROLL_ZONE: &str = "\
$TTL 2
@       SOA ns.sign.test. admin.sign.test. 1 3600 600 86400 2
@       NS  ns
ns      A   127.0.0.1
www     A   192.0.2.2
";

const ROLL_QUESTIONS: &[(&str, &str)] = &[
    ("www.sign.test", "A"),
    ("nothere.sign.test", "A"),
    ("sign.test", "DNSKEY"),
    ("sign.test", "CDS"),
];

/// A signed zone with rollover timings in seconds: DNSKEY TTL 2 + propagation 1 = 3 s
/// before a new key signs; the parent's DS TTL 2 + its propagation 1 = 3 s.
fn roll_config(data: &TempDir) -> PathBuf {
    roll_config_with(data, 1)
}

/// [`roll_config`] with `propagation_delay` seconds: a step's wait is the 2 s TTL plus it.
fn roll_config_with(data: &TempDir, propagation_delay: u32) -> PathBuf {
    data.write("sign.test.zone", ROLL_ZONE);
    std::fs::create_dir_all(data.path().join("keys")).unwrap();
    data.write(
        "shardns.toml",
        &format!(
            "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
             [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
             propagation_delay = {propagation_delay}\nparent_ds_ttl = 2\n\
             parent_propagation_delay = 1\n"
        ),
    )
}

/// A time of a key's metadata (`Activate`, `Delete`...; BIND's `YYYYMMDDHHMMSS`, UTC) in
/// the `.private` file of `stem` (`Ksign.test.+013+12345`), as seconds since 1970.
fn key_time(keys: &Path, stem: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(keys.join(format!("{stem}.private"))).unwrap();
    let t = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}: ")))?
        .trim();
    Some(time_secs(t))
}

/// A `YYYYMMDDHHMMSS` time (UTC: key files, RRSIGs) as seconds since 1970.
fn time_secs(t: &str) -> u64 {
    let n = |r: std::ops::Range<usize>| t[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(4..6), n(6..8));
    // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    (days * 86_400 + n(8..10) * 3600 + n(10..12) * 60 + n(12..14)) as u64
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The stems of the key files in `keys`.
fn key_stems(keys: &Path) -> Vec<String> {
    std::fs::read_dir(keys)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".private").map(str::to_string)
        })
        .collect()
}

fn key_cmd(cmd: &str, keys: &Path, extra: &[&str]) -> String {
    let mut args = vec!["key", cmd, "sign.test", "--key-dir", keys.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (ok, out) = shardns(&args);
    assert!(ok, "shardns key {cmd} {extra:?}: {out}");
    out
}

/// The records of `qtype` at the apex, one a line, as `dig +short` gives them.
fn apex_set(server: SocketAddr, qtype: &str) -> Vec<String> {
    dig(server, &["+short", "sign.test", qtype])
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

/// The key tag of the RRSIG of www.sign.test A.
fn www_signer(server: SocketAddr) -> String {
    let out = dig(server, &["+dnssec", "+short", "www.sign.test", "A"]);
    out.lines()
        .find(|l| l.starts_with("A "))
        .and_then(|l| l.split_whitespace().nth(6))
        .unwrap_or_else(|| panic!("no RRSIG: {out}"))
        .to_string()
}

/// Waits (at most `secs`) until `what` holds, checking every 200 ms that every answer
/// validates from `anchors` the while.
fn wait_until(
    judges: &mut DnsvizQueue,
    server: SocketAddr,
    anchors: &Path,
    secs: u64,
    what: &str,
    mut ok: impl FnMut() -> bool,
) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < end, "not after {secs} s: {what}");
        delv_all(server, anchors, "sign.test", &ROLL_QUESTIONS[..1]);
        std::thread::sleep(Duration::from_millis(200));
    }
    roll_judged(judges, server, anchors);
}

fn keygen(keys: &Path, ksk: bool) -> Option<String> {
    let keygen = tool("dnssec-keygen")?;
    let mut cmd = Command::new(keygen);
    cmd.arg("-q")
        .arg("-K")
        .arg(keys)
        .args(["-a", "ECDSAP256SHA256"]);
    if ksk {
        cmd.args(["-f", "KSK"]);
    }
    let (ok, out) = run(cmd.arg("sign.test"));
    assert!(ok, "{out}");
    Some(out.trim().to_string())
}

/// A ZSK rollover (pre-publication) by hand, with keys made by BIND's dnssec-keygen (a KSK
/// and a ZSK), the server killed in the middle: the restart resumes it, and every step
/// validates from the DS of the KSK.
#[test]
fn zsk_rollover_survives_a_kill_and_validates_throughout() {
    let data = TempDir::new("roll-zsk");
    // dnsviz's judgements, on snapshots; dropped first: the test waits for them.
    let mut judges = DnsvizQueue::new();
    // Each step 8 s (TTL 2 + propagation 6): the restart below must come between the new
    // key's activation and the old one's withdrawal, however busy the machine.
    let config = roll_config_with(&data, 6);
    let keys = data.path().join("keys");
    let (Some(ksk), Some(zsk)) = (keygen(&keys, true), keygen(&keys, false)) else {
        println!("signing: SKIPPED the ZSK rollover: no dnssec-keygen (bind9-utils)");
        return;
    };
    let old_tag = zsk
        .rsplit('+')
        .next()
        .unwrap()
        .trim_start_matches('0')
        .to_string();
    let args = ["--workers", "1", "--config", config.to_str().unwrap()];
    let server = Server::start("roll-zsk-srv", &args);
    let anchors = ds_anchor_file(data.path(), &key_cmd("ds", &keys, &[]));
    roll_judged(&mut judges, server.addr4(), &anchors);
    assert_eq!(apex_set(server.addr4(), "DNSKEY").len(), 2);
    assert_eq!(www_signer(server.addr4()), old_tag);

    // A second one while it runs is refused; a CSK-only zone has no ZSK (not here).
    let out = key_cmd("rollover", &keys, &["--zsk"]);
    assert!(out.contains("ZSK rollover started"), "{out}");
    let (ok, again) = shardns(&[
        "key",
        "rollover",
        "sign.test",
        "--key-dir",
        keys.to_str().unwrap(),
        "--zsk",
    ]);
    assert!(!ok && again.contains("under way"), "{again}");
    let out = reload_zone(&server, "sign.test");
    assert!(out.status.success(), "{out:?}");
    // 1. Published, not signing.
    assert_eq!(apex_set(server.addr4(), "DNSKEY").len(), 3);
    assert_eq!(www_signer(server.addr4()), old_tag);
    roll_judged(&mut judges, server.addr4(), &anchors);
    let list = key_cmd("list", &keys, &[]);
    assert!(
        list.contains("published") && list.contains("next key event"),
        "{list}"
    );

    // Killed (SIGKILL) before the new key signs; down past that moment, as its key file
    // says (not for a fixed time, which a busy machine may not honour).
    drop(server);
    let new_zsk = key_stems(&keys)
        .into_iter()
        .find(|k| *k != ksk && *k != zsk)
        .expect("the new ZSK's files");
    let activate = key_time(&keys, &new_zsk, "Activate").expect("the new ZSK's Activate");
    let delete = key_time(&keys, &zsk, "Delete").expect("the old ZSK's Delete");
    let end = Instant::now() + Duration::from_secs(30);
    while unix_now() <= activate {
        assert!(Instant::now() < end, "the new ZSK's Activate never came");
        std::thread::sleep(Duration::from_millis(100));
    }
    let server = Server::start("roll-zsk-srv2", &args);
    // 2. The new key signs, the old one is still published (until its Delete).
    let new_signer = www_signer(server.addr4());
    let dnskeys = apex_set(server.addr4(), "DNSKEY").len();
    let now = unix_now();
    assert!(
        now < delete,
        "the restart took until {now}, past the old ZSK's Delete ({delete}): too slow for this test's timings"
    );
    assert_ne!(new_signer, old_tag);
    assert_eq!(dnskeys, 3);
    roll_judged(&mut judges, server.addr4(), &anchors);
    // 3. The old key goes at its time, by the server's timer alone.
    wait_until(
        &mut judges,
        server.addr4(),
        &anchors,
        30,
        "old ZSK withdrawn",
        || apex_set(server.addr4(), "DNSKEY").len() == 2,
    );
    assert_eq!(www_signer(server.addr4()), new_signer);
    let list = key_cmd("list", &keys, &[]);
    assert!(list.contains("removed"), "{list}");
}

/// A CSK rollover by double-DS: the operator's confirmation, the new key published, CDS
/// for both keys once it has been published DNSKEY TTL + propagation (never before: RFC
/// 7344 §4.1), the new key signing, the old one withdrawn and the CDS with it (mode
/// `rollover`, the default); each step validated from the DS set the parent has then.
#[test]
fn csk_double_ds_rollover_validates_at_every_step() {
    let data = TempDir::new("roll-csk");
    // dnsviz's judgements, on snapshots; dropped first: the test waits for them.
    let mut judges = DnsvizQueue::new();
    // Each step 8 s (TTL 2 + propagation 6): the checks with the old DS alone after the
    // confirmation must end before the new key signs, however busy the machine.
    let config = roll_config_with(&data, 6);
    let keys = data.path().join("keys");
    let args = ["--workers", "1", "--config", config.to_str().unwrap()];
    let server = Server::start("roll-csk-srv", &args);
    let old_ds = key_cmd("ds", &keys, &[]);
    let old_anchor = ds_anchor_file(data.path(), &old_ds);
    roll_judged(&mut judges, server.addr4(), &old_anchor);
    let (ok, out) = shardns(&[
        "key",
        "rollover",
        "sign.test",
        "--key-dir",
        keys.to_str().unwrap(),
        "--zsk",
    ]);
    assert!(!ok && out.contains("no active ZSK"), "{out}");

    // 1. A new CSK, waiting for its DS: not in the DNSKEY RRset, so no CDS for it; with
    //    the mode `rollover` none at all yet (one key may have one).
    assert!(apex_set(server.addr4(), "CDS").is_empty());
    let out = key_cmd("rollover", &keys, &["--ksk"]);
    assert!(out.contains("double-DS"), "{out}");
    assert!(reload_zone(&server, "sign.test").status.success());
    assert_eq!(apex_set(server.addr4(), "DNSKEY").len(), 1);
    assert!(apex_set(server.addr4(), "CDS").is_empty());
    assert!(apex_set(server.addr4(), "CDNSKEY").is_empty());
    let both = key_cmd("ds", &keys, &[]);
    assert!(both.contains("NEW"), "{both}");
    let new_tag = both
        .lines()
        .find(|l| l.contains("NEW"))
        .and_then(|l| l.split("tag ").nth(1))
        .and_then(|l| l.split(':').next())
        .unwrap()
        .to_string();
    roll_judged(&mut judges, server.addr4(), &old_anchor);
    // Nothing moves until the operator confirms.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(apex_set(server.addr4(), "DNSKEY").len(), 1);

    // 2. The parent has both DS: confirmed; the new key is published.
    let both_anchor = {
        let dir = data.path().join("both");
        std::fs::create_dir_all(&dir).unwrap();
        ds_anchor_file(&dir, &both)
    };
    let tc = unix_now();
    let out = key_cmd("submitted", &keys, &[&new_tag]);
    assert!(out.contains("confirmed"), "{out}");
    assert!(reload_zone(&server, "sign.test").status.success());
    assert_eq!(apex_set(server.addr4(), "DNSKEY").len(), 2);
    // Its CDS only once its DNSKEY has been published 8 s (TTL 2 + propagation 6).
    let cds = apex_set(server.addr4(), "CDS").len();
    assert!(cds == 0 || unix_now() >= tc + 8, "CDS at once: {cds}");
    roll_judged(&mut judges, server.addr4(), &both_anchor);
    delv_all(server.addr4(), &old_anchor, "sign.test", ROLL_QUESTIONS);

    wait_until(
        &mut judges,
        server.addr4(),
        &both_anchor,
        30,
        "CDS for both keys",
        || apex_set(server.addr4(), "CDS").len() == 2,
    );
    assert_eq!(apex_set(server.addr4(), "CDNSKEY").len(), 2);
    assert!(unix_now() >= tc + 8, "CDS before the new DNSKEY had spread");
    // 3. The new key signs; 4. the old key, its CDS and CDNSKEY go.
    wait_until(
        &mut judges,
        server.addr4(),
        &both_anchor,
        30,
        "new CSK signing",
        || www_signer(server.addr4()) == new_tag,
    );
    wait_until(
        &mut judges,
        server.addr4(),
        &both_anchor,
        30,
        "old CSK withdrawn",
        || apex_set(server.addr4(), "DNSKEY").len() == 1,
    );
    // The rollover is over: no CDS in the mode `rollover`.
    assert!(apex_set(server.addr4(), "CDS").is_empty());
    // The parent drops the old DS: the new one alone validates.
    let new_ds = key_cmd("ds", &keys, &[]);
    assert!(new_ds.contains("remove its DS"), "{new_ds}");
    let new_anchor = {
        let dir = data.path().join("new");
        std::fs::create_dir_all(&dir).unwrap();
        ds_anchor_file(&dir, &new_ds)
    };
    roll_judged(&mut judges, server.addr4(), &new_anchor);
}

/// The tags of the zone's keys of `role` (`KSK`, `ZSK`, `CSK`), as `shardns key list` says.
fn tags_of(keys: &Path, role: &str) -> Vec<String> {
    key_cmd("list", keys, &[])
        .lines()
        .skip(1)
        .filter(|l| l.split_whitespace().nth(1) == Some(role))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// The tags of the RRSIGs over the apex's `qtype`.
fn apex_signers(server: SocketAddr, qtype: &str) -> Vec<String> {
    let out = dig(server, &["+dnssec", "+short", "sign.test", qtype]);
    let mut tags: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with(&format!("{qtype} ")))
        .map(|l| l.split_whitespace().nth(6).unwrap().to_string())
        .collect();
    tags.sort();
    tags.dedup();
    tags
}

/// A policy like the peers': a KSK and a ZSK made by us (ECDSA, RSA/SHA-256 with a
/// 3072-bit KSK, RSA/SHA-512 with a 4096-bit ZSK), the DNSKEY TTL configured, signature expirations spread by the jitter. The
/// transfer passes ldns-verify-zone and dnssec-verify (without `-z`: the KSK flag counts),
/// the key RRsets are signed by the KSK alone and everything else by the ZSK alone, and
/// answers validate from the KSK's DS.
#[test]
fn ksk_and_zsk_made_here_verify_and_split_the_signing() {
    for (tag, extra, algorithm) in [
        ("ecdsa", "", "ECDSAP256SHA256"),
        (
            "rsa",
            "algorithm = \"rsasha256\"\nksk_size = 3072\n",
            "RSASHA256",
        ),
        (
            "rsa512",
            "algorithm = \"rsasha512\"\nzsk_size = 4096\n",
            "RSASHA512",
        ),
    ] {
        let data = TempDir::new(&format!("kpol-{tag}"));
        let hosts: String = (0..40).map(|i| format!("h{i} A 192.0.2.{i}\n")).collect();
        data.write("sign.test.zone", &format!("{ZONE}{hosts}"));
        std::fs::create_dir_all(data.path().join("keys")).unwrap();
        let config = data.write(
            "shardns.toml",
            &format!(
                "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
                 [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
                 single_type_signing = false\ndnskey_ttl = 600\nsignature_jitter = \"2d\"\n\
                 cds_cdnskey_publish = \"always\"\n{extra}"
            ),
        );
        let started = unix_now();
        let server = Server::start(
            &format!("kpol-{tag}-srv"),
            &["--workers", "1", "--config", config.to_str().unwrap()],
        );
        let keys = data.path().join("keys");
        let (ksk, zsk) = (tags_of(&keys, "KSK"), tags_of(&keys, "ZSK"));
        assert_eq!(
            (ksk.len(), zsk.len()),
            (1, 1),
            "{}",
            key_cmd("list", &keys, &[])
        );
        assert!(tags_of(&keys, "CSK").is_empty());
        let list = key_cmd("list", &keys, &[]);
        assert!(list.contains(algorithm), "{list}");

        let text = axfr_text(server.addr4(), "sign.test", 10);
        let file = data.write("axfr.zone", &text);
        let (ok, out) = run_judge(Command::new(judge("ldns-verify-zone")).arg(&file));
        assert!(ok, "{tag}: ldns-verify-zone:\n{out}");
        let (ok, out) = run_judge(
            Command::new(judge("dnssec-verify"))
                .args(["-o", "sign.test"])
                .arg(&file),
        );
        assert!(ok, "{tag}: dnssec-verify:\n{out}");
        // dnssec-verify counts the keys by role: one KSK and one ZSK.
        assert!(
            out.contains("KSKs: 1 active") && out.contains("ZSKs: 1 active"),
            "{out}"
        );

        // Who signs what, and when each signature expires.
        let mut expirations = Vec::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if f[3] == "DNSKEY" || f[3] == "CDS" || f[3] == "CDNSKEY" {
                assert_eq!(f[1], "600", "{tag}: the DNSKEY TTL configured: {line}");
            }
            if f[3] != "RRSIG" {
                continue;
            }
            let keyset = matches!(f[4], "DNSKEY" | "CDS" | "CDNSKEY");
            let want = if keyset { &ksk[0] } else { &zsk[0] };
            assert_eq!(f[10], want, "{tag}: {line}");
            expirations.push(time_secs(f[8]));
        }
        assert!(expirations.len() > 90, "{text}");
        // Spread over the two days of jitter before the 14 days of validity.
        let end = started + 14 * 86_400;
        assert!(
            expirations
                .iter()
                .all(|&e| e + 2 * 86_400 + 60 >= end && e <= end + 60),
            "{expirations:?}"
        );
        let mut distinct = expirations.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() * 2 > expirations.len()
                && distinct[distinct.len() - 1] - distinct[0] > 3600,
            "{tag}: no spread: {expirations:?}"
        );
        let dnskey = dig(
            server.addr4(),
            &["+noall", "+answer", "sign.test", "DNSKEY"],
        );
        assert!(
            dnskey.lines().count() == 2
                && dnskey
                    .lines()
                    .all(|l| l.split_whitespace().nth(1) == Some("600")),
            "{dnskey}"
        );
        let anchors = ds_anchor_file(data.path(), &key_cmd("ds", &keys, &[]));
        delv_all(server.addr4(), &anchors, "sign.test", QUESTIONS);
    }
}

/// `ksk_lifetime` starts a KSK rollover by itself (KSK+ZSK made here): the new KSK waits
/// for its DS; once the operator confirms it (`shardns key submitted`) it is published,
/// signs the DNSKEY RRset after the waits computed from the configured DNSKEY TTL, and the
/// old KSK goes; every step validates from the DS the parent has then.
#[test]
fn ksk_lifetime_rolls_the_ksk_through_key_submitted() {
    let data = TempDir::new("kpol-ksk-life");
    // dnsviz's judgements, on snapshots; dropped first: the test waits for them.
    let mut judges = DnsvizQueue::new();
    data.write("sign.test.zone", ROLL_ZONE);
    std::fs::create_dir_all(data.path().join("keys")).unwrap();
    // DNSKEY TTL 4 (SOA TTL 2): a new key is seen everywhere 4 + 1 s after publication,
    // longer than the parent's DS wait (2 + 1 s).
    let config = data.write(
        "shardns.toml",
        "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
         [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
         single_type_signing = false\nksk_lifetime = 8\ndnskey_ttl = 4\n\
         propagation_delay = 1\nparent_ds_ttl = 2\nparent_propagation_delay = 1\n",
    );
    let keys = data.path().join("keys");
    let mut server = Server::start(
        "kpol-ksk-life-srv",
        &["--workers", "1", "--config", config.to_str().unwrap()],
    );
    let old_ksk = tags_of(&keys, "KSK");
    let zsk = tags_of(&keys, "ZSK");
    assert_eq!((old_ksk.len(), zsk.len()), (1, 1));
    let old_anchor = ds_anchor_file(data.path(), &key_cmd("ds", &keys, &[]));
    roll_judged(&mut judges, server.addr4(), &old_anchor);
    assert_eq!(apex_signers(server.addr4(), "DNSKEY"), old_ksk);

    // 1. The lifetime ends: the server makes the new KSK on its own timer; the zone does
    //    not change (the key waits for its DS).
    server.wait_for_log("the lifetime of KSK", Duration::from_secs(30));
    let both = key_cmd("ds", &keys, &[]);
    let new_tag = both
        .lines()
        .find(|l| l.contains("NEW"))
        .and_then(|l| l.split("tag ").nth(1))
        .and_then(|l| l.split(':').next())
        .unwrap_or_else(|| panic!("no new KSK: {both}"))
        .to_string();
    assert!(tags_of(&keys, "KSK").contains(&new_tag));
    assert_eq!(apex_set(server.addr4(), "DNSKEY").len(), 2);
    assert_eq!(apex_signers(server.addr4(), "DNSKEY"), old_ksk);
    roll_judged(&mut judges, server.addr4(), &old_anchor);

    // 2. The parent has both DS: confirmed, published.
    let both_anchor = {
        let dir = data.path().join("both");
        std::fs::create_dir_all(&dir).unwrap();
        ds_anchor_file(&dir, &both)
    };
    let out = key_cmd("submitted", &keys, &[&new_tag]);
    assert!(out.contains("confirmed"), "{out}");
    assert!(reload_zone(&server, "sign.test").status.success());
    assert_eq!(apex_set(server.addr4(), "DNSKEY").len(), 3);
    let stem = key_stems(&keys)
        .into_iter()
        .find(|s| s.ends_with(&format!("{:0>5}", new_tag)))
        .unwrap();
    let confirmed = key_time(&keys, &stem, "DSPublish").unwrap();
    assert_eq!(
        key_time(&keys, &stem, "Activate").unwrap(),
        confirmed + 5,
        "the DNSKEY TTL configured (4) + propagation (1) is the longer wait"
    );
    roll_judged(&mut judges, server.addr4(), &both_anchor);

    // 3. The new KSK signs the DNSKEY RRset (alone: the ZSK signs the rest); 4. the old
    //    one goes.
    wait_until(
        &mut judges,
        server.addr4(),
        &both_anchor,
        30,
        "new KSK signing",
        || apex_signers(server.addr4(), "DNSKEY") == [new_tag.clone()],
    );
    assert_eq!(www_signer(server.addr4()), zsk[0]);
    wait_until(
        &mut judges,
        server.addr4(),
        &both_anchor,
        30,
        "old KSK withdrawn",
        || apex_set(server.addr4(), "DNSKEY").len() == 2,
    );
    let list = key_cmd("list", &keys, &[]);
    let state = |tag: &str| {
        list.lines()
            .find(|l| l.split_whitespace().next() == Some(tag))
            .and_then(|l| l.split_whitespace().nth(3))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(state(&new_tag), "active", "{list}");
    assert_eq!(state(&old_ksk[0]), "removed", "{list}");
    // The parent drops the old DS: the new KSK's alone validates.
    let new_ds: String = {
        let ds = key_cmd("ds", &keys, &[]);
        let lines: Vec<&str> = ds.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with(';') && l.contains(&format!("tag {new_tag}")))
            .unwrap_or_else(|| panic!("{ds}"));
        lines[at..at + 2].join("\n")
    };
    let new_anchor = {
        let dir = data.path().join("new");
        std::fs::create_dir_all(&dir).unwrap();
        ds_anchor_file(&dir, &new_ds)
    };
    roll_judged(&mut judges, server.addr4(), &new_anchor);
}

/// Signatures survive a restart: the zone is served as it was signed, same serial, same
/// RRSIGs; a changed zone file is signed anew with the next serial.
#[test]
fn a_restart_serves_the_same_signatures() {
    let data = TempDir::new("sign-restart");
    let config = roll_config(&data);
    let keys = data.path().join("keys");
    let args = ["--workers", "1", "--config", config.to_str().unwrap()];
    let mut server = Server::start("sign-restart-srv", &args);
    let www = |s: SocketAddr| dig(s, &["+dnssec", "+short", "www.sign.test", "A"]);
    let (serial, sigs) = (soa_serial(server.addr4()), www(server.addr4()));
    assert!(data.path().join("keys/state/sign.test.signed").exists());
    server.terminate();
    drop(server);
    let mut server = Server::start("sign-restart-srv2", &args);
    assert_eq!(soa_serial(server.addr4()), serial);
    assert_eq!(www(server.addr4()), sigs);
    assert!(
        server.log().contains("serving the signed zone kept"),
        "{}",
        server.log()
    );
    let anchors = ds_anchor_file(data.path(), &key_cmd("ds", &keys, &[]));
    delv_all(server.addr4(), &anchors, "sign.test", ROLL_QUESTIONS);
    server.terminate();
    drop(server);
    data.write("sign.test.zone", &format!("{ROLL_ZONE}new A 192.0.2.9\n"));
    let server = Server::start("sign-restart-srv3", &args);
    assert_eq!(soa_serial(server.addr4()), serial + 1);
    delv_all(
        server.addr4(),
        &anchors,
        "sign.test",
        &[("new.sign.test", "A")],
    );
}

/// The counts of the last "signed with serial" line of the log: (serial, new signatures,
/// kept signatures).
fn last_signing(log: &str) -> (u32, usize, usize) {
    let line = log
        .lines()
        .rfind(|l| l.contains("signed with serial"))
        .unwrap_or_else(|| panic!("no signing in the log:\n{log}"));
    let word_before = |w: &str| -> usize {
        let at = line.find(w).unwrap_or_else(|| panic!("no {w:?} in {line}"));
        line[..at]
            .split_whitespace()
            .last()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count before {w:?} in {line}"))
    };
    let serial = line
        .split("signed with serial ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no serial in {line}"));
    (serial, word_before(" new signatures"), word_before(" kept"))
}

/// A zone of ~10,000 names (and 100 unsigned delegations, for opt-out).
fn big_zone(changed: bool) -> String {
    let mut text = String::from(ZONE);
    for i in 0..10_000u32 {
        if changed && i == 100 {
            continue; // removed
        }
        let last = if changed && i == 42 { 99 } else { i % 250 };
        text.push_str(&format!("h{i:05} A 10.0.{}.{last}\n", i / 250));
        if i % 100 == 7 {
            text.push_str(&format!("d{i:05} NS ns.elsewhere.test.\n"));
        }
    }
    if changed {
        text.push_str("added A 192.0.2.77\n");
    }
    text
}

/// Incremental re-signing: after one record changes (and a name is added, one removed),
/// `shardns reload ZONE` makes a handful of signatures and keeps the rest; the zone
/// verifies and the answers validate, with NSEC, NSEC3 and NSEC3 opt-out.
#[test]
fn reload_re_signs_only_what_changed() {
    for (tag, extra) in [
        ("nsec", ""),
        ("nsec3", "nsec3 = true\n"),
        ("optout", "nsec3_opt_out = true\n"),
    ] {
        let dir = TempDir::new(&format!("resign-{tag}"));
        let file = dir.write("sign.test.zone", &big_zone(false));
        std::fs::create_dir(dir.path().join("keys")).unwrap();
        let config = dir.write(
            "shardns.toml",
            &format!(
                "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
                 [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n{extra}"
            ),
        );
        let server = Server::start(
            &format!("resign-{tag}-srv"),
            &["--workers", "1", "--config", config.to_str().unwrap()],
        );
        let (serial, made, kept) = last_signing(&server.log());
        assert!(
            made > 10_000 && kept == 0,
            "{tag}: first signing {made} {kept}"
        );
        assert_eq!(soa_serial(server.addr4()), serial);

        // One changed record, one name added, one removed: the SOA, the two A RRsets,
        // and the chain records of those names and their predecessors.
        std::fs::write(&file, big_zone(true)).unwrap();
        let out = reload_zone(&server, "sign.test");
        assert!(out.status.success(), "{out:?}");
        let (serial2, made, kept) = last_signing(&server.log());
        assert_eq!(serial2, serial.wrapping_add(1), "{tag}");
        assert!((3..=8).contains(&made), "{tag}: {made} new signatures");
        assert!(kept > 10_000, "{tag}: {kept} kept");
        println!("signing: {tag}: one change re-signed with {made} new signatures, {kept} kept");
        assert_eq!(soa_serial(server.addr4()), serial2);

        let text = axfr_text(server.addr4(), "sign.test", 10);
        assert!(
            text.contains("h00042.sign.test. 300 IN A 10.0.0.99"),
            "{tag}"
        );
        assert!(!text.contains("h00100.sign.test."), "{tag}");
        let signed = dir.write("axfr.zone", &text);
        verify_zone_file(&signed, "sign.test").unwrap_or_else(|e| panic!("{e}"));

        let (ok, ds) = shardns(&[
            "key",
            "ds",
            "sign.test",
            "--key-dir",
            dir.path().join("keys").to_str().unwrap(),
        ]);
        assert!(ok, "{ds}");
        let anchors = ds_anchor_file(dir.path(), &ds);
        delv_all(
            server.addr4(),
            &anchors,
            "sign.test",
            &[
                ("h00042.sign.test", "A"),
                ("added.sign.test", "A"),
                ("h00100.sign.test", "A"), // removed: name error
                ("h00043.sign.test", "A"),
                ("www.sign.test", "A"),
                ("sign.test", "SOA"),
            ],
        );
    }
}

/// A zone of a `zone_list` file signed by its `dnssec` flag: verified and validated.
#[test]
fn zone_list_zone_signed() {
    let dir = TempDir::new("sign-list");
    dir.write("sign.test.zone", ZONE);
    dir.write("plain.test.zone", &ZONE.replace("sign.test", "plain.test"));
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    dir.write(
        "zones.list",
        "sign.test sign.test.zone dnssec\nplain.test plain.test.zone\n",
    );
    let config = dir.write(
        "shardns.toml",
        "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.1\"]\n\
         zone_list = \"zones.list\"\n",
    );
    let server = Server::start(
        "sign-list-srv",
        &["--workers", "1", "--config", config.to_str().unwrap()],
    );
    let text = axfr_text(server.addr4(), "sign.test", 10);
    assert!(
        text.contains(" RRSIG ") && text.contains(" NSEC "),
        "{text}"
    );
    let signed = dir.write("axfr.zone", &text);
    verify_zone_file(&signed, "sign.test").unwrap_or_else(|e| panic!("{e}"));
    let plain = dig(server.addr4(), &["+dnssec", "plain.test", "SOA"]);
    assert!(!plain.contains("RRSIG"), "{plain}");
    let (ok, ds) = shardns(&[
        "key",
        "ds",
        "sign.test",
        "--key-dir",
        dir.path().join("keys").to_str().unwrap(),
    ]);
    assert!(ok, "{ds}");
    let anchors = ds_anchor_file(dir.path(), &ds);
    delv_all(server.addr4(), &anchors, "sign.test", QUESTIONS);
}
