//! End-to-end: the command line. Bad configs and zones are clear errors with a non-zero
//! exit, `--help` reads well, `check` loads without serving, `bench` reaches the benchmark.

mod common;

use common::*;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("SHARDNS_BENCH")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_configs_name_file_line_and_key() {
    let dir = TempDir::new("badconfig");
    let cases: &[(&str, &str, &str)] = &[
        (
            "[server]\nlisten = [\"127.0.0.1:0\"]\nworkers = \"two\"\n",
            ":3:",
            "server.workers",
        ),
        (
            "[server]\nlisten = [\"127.0.0.1\"]\n",
            ":2:",
            "server.listen",
        ),
        ("[server]\nwrokers = 2\n", ":2:", "wrokers"),
        (
            "[limits]\ntcp_idle_timeout_ms = 0\n",
            ":2:",
            "limits.tcp_idle_timeout_ms",
        ),
        (
            "[[zone]]\nname = \"bad..name\"\nfile = \"z\"\n",
            ":2:",
            "zone[0].name",
        ),
        (
            "[[zone]]\nname = \"ok.test\"\n",
            ":1:",
            "missing field `file`",
        ),
        ("[log]\nlevel = \"=[\"\n", ":2:", "log.level"),
        ("[server\nlisten = []\n", ":1:", "shardns.toml"),
    ];
    for (i, (text, line, key)) in cases.iter().enumerate() {
        let path = dir.write("shardns.toml", text);
        for cmd in ["serve", "check"] {
            let out = run(&[cmd, "--config", path.to_str().unwrap()]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "case {i} ({cmd}): {err}");
            assert!(
                err.starts_with(&format!("shardns: {}{line}", path.display())),
                "case {i}: {err}"
            );
            assert!(err.contains(key), "case {i}: {err}");
            assert_eq!(err.lines().count(), 1, "one line: {err}");
        }
    }
    let out = run(&["serve", "--config", "/nonexistent/shardns.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("/nonexistent/shardns.toml: cannot read"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_broken_zone_at_startup_is_an_error_with_file_and_line() {
    let dir = TempDir::new("badzone");
    let zone = dir.write(
        "bad.test.zone",
        "$TTL 60\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 192.0.2.300\n",
    );
    let zarg = format!("bad.test={}", zone.display());
    let port = free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    for cmd in ["serve", "check"] {
        let out = run(&[cmd, "--zone", &zarg, "--listen", &listen]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains(&format!("{}:4:", zone.display())),
            "{}",
            stderr(&out)
        );
    }
    std::fs::write(
        &zone,
        "$TTL 60\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 192.0.2.3\n",
    )
    .unwrap();
    let out = run(&["check", "--zone", &zarg]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 zones"));
}

#[test]
fn dnssec_on_a_secondary_zone_needs_a_key_directory_and_is_not_ignored() {
    let dir = TempDir::new("sec-dnssec");
    let primary = format!("127.0.0.1:{}", free_port());
    let zone =
        format!("[[zone]]\nname = \"sec.test.\"\nprimary = [\"{primary}\"]\ndnssec = true\n");
    // Signed as it arrives (the `secondary` tests serve one): `check` wants its keys.
    let bare = dir.write("bare.toml", &zone);
    let out = run(&["check", "-c", bare.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("zone sec.test. is to be signed but no key directory is set"),
        "{}",
        stderr(&out)
    );
    let keyed = dir.write(
        "keyed.toml",
        &format!("[server]\nkey_directory = \"keys\"\n{zone}"),
    );
    let out = run(&["check", "-c", keyed.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn usage_errors_exit_2_and_help_is_readable() {
    for args in [
        &["serve", "--workers", "0"][..],
        &["serve", "--listen", "nowhere"],
        &["serve", "--zone", "x"],
        &["frobnicate"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for word in [
        "serve",
        "check",
        "reload",
        "stats",
        "bench",
        "example.test",
        "5353",
        "SIGHUP",
    ] {
        assert!(help.contains(word), "--help lacks {word}:\n{help}");
    }
    let out = run(&["serve", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--config",
        "--listen",
        "--zone",
        "--workers",
        "--log-level",
        "--log-queries",
        "--stats-http",
        "--control",
    ] {
        assert!(help.contains(flag), "serve --help lacks {flag}:\n{help}");
    }
}

#[test]
fn bench_arguments_reach_the_benchmark() {
    // `shardns bench` execs the lab's own binary (shardns-bench). A stand-in shows that every
    // argument arrives verbatim and the lab's exit status is shardns's.
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("bench");
    let fake = dir.path().join("fake-bench");
    std::fs::write(&fake, "#!/bin/sh\nprintf '%s\\n' \"$@\"\nexit 3\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(BIN)
        .args([
            "bench",
            "rr",
            "--server",
            "127.0.0.1:53",
            "-h",
            "--no-such-flag",
        ])
        .env("SHARDNS_BENCH", &fake)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "rr\n--server\n127.0.0.1:53\n-h\n--no-such-flag\n"
    );
    // Without the lab: a clear error that says how to build it.
    let out = Command::new(BIN)
        .args(["bench", "--help"])
        .env("SHARDNS_BENCH", dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("-p shardns-bench"),
        "{}",
        stderr(&out)
    );
    // The real lab, when it was built beside shardns (a workspace build; `cargo test -p
    // shardns` alone does not build it): its help names the command that was typed.
    let lab = std::path::Path::new(BIN).with_file_name("shardns-bench");
    if lab.is_file() {
        let out = run(&["bench", "--help"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("shardns bench"), "{help}");
        let out = run(&["bench", "--no-such-flag"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    } else {
        eprintln!(
            "{} not built: the real lab's help not checked",
            lab.display()
        );
    }
}

#[test]
fn a_busy_address_is_a_clear_error() {
    // Something that is not shardns holds the port (no SO_REUSEPORT), so binding fails.
    let holder = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let listen = holder.local_addr().unwrap().to_string();
    let dir = TempDir::new("busy");
    let ctl = dir.path().join("ctl");
    let out = run(&[
        "serve",
        "--listen",
        &listen,
        "--control",
        ctl.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&format!("shardns: UDP {listen}:")), "{err}");
}

#[test]
fn version_names_the_commit() {
    let o = run(&["--version"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("shardns 0.1.0 (commit "), "{out}");
    // The commit of this checkout when git is there, else "unknown" (build.rs).
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let (Some(head), Err(_)) = (head, std::env::var("SHARDNS_COMMIT")) {
        // A commit made after this binary was built moves HEAD; the binary is rebuilt
        // with the test, so they agree.
        assert!(out.contains(&head), "{out} vs {head}");
    }
}

#[test]
fn tls_needs_a_certificate_and_key() {
    let o = run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-listen",
        "127.0.0.1:0",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("server.tls_certificate"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-listen",
        "127.0.0.1:0",
        "--tls-cert",
        "/nonexistent.pem",
        "--tls-key",
        "/nonexistent.key",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("/nonexistent.pem"), "{}", stderr(&o));
}
