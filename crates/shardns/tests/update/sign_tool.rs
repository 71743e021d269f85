//! `shardns sign` beside a signed zone that took updates: the changes kept in
//! `KEYDIR/state/<zone>.updates` are applied over the file as the server's load applies
//! them; `--ignore-updates` signs the file alone; a file at another serial than the one
//! the changes apply over is refused with a message naming the option. The updates file
//! is only read.

use super::wire::{answer_of, Signer, Update, A};
use super::*;

/// Runs `shardns` with `args`: whether it exited 0, and both streams.
fn shardns(args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The apex SOA serial of a signed zone written by `shardns sign`.
fn soa_serial(text: &str) -> u32 {
    let soa = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 6 && f[0] == APEX && f[3] == "SOA")
        .unwrap_or_else(|| panic!("no SOA in\n{text}"));
    soa[6].parse().unwrap()
}

#[test]
fn sign_applies_the_updates_a_server_kept() {
    let data = TempDir::new("upd-sign-tool");
    let file = data.write("upd.test.zone", &zone_text(1));
    let keys = data.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let config = data.write(
        "shardns.toml",
        &format!(
            "[[key]]\nname = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
             [server]\nkey_directory = \"keys\"\n\
             [[zone]]\nname = \"{APEX}\"\nfile = \"upd.test.zone\"\ndnssec = true\n\
             update_policy = [\"grant {KEY_NAME} zonesub ANY\"]\n"
        ),
    );
    let server = Server::start(
        "upd-sign-tool-s",
        &["--workers", "1", "--config", config.to_str().unwrap()],
    );
    for (id, name) in [(81, "one.upd.test."), (82, "two.upd.test.")] {
        let msg = Update::new(APEX)
            .add(name, A, &[192, 0, 2, 81])
            .build(id, Signer::Key);
        let answer = answer_of(udp_exchange(&udp_client(server.addr4()), &msg));
        assert_eq!(answer.rcode, "NOERROR", "{}", server.log());
    }
    let served = serial_at(server.addr4()).expect("a serial");
    // Stopped: the tool signs with the key directory alone (the changes were synced
    // before the answers).
    drop(server);
    let kept = keys.join("state").join("upd.test.updates");
    let before = std::fs::read(&kept).expect("the kept changes");

    let out_file = data.path().join("signed.zone");
    let sign = |extra: &[&str], zone_file: &std::path::Path| {
        let mut args = vec![
            "sign",
            APEX,
            zone_file.to_str().unwrap(),
            "--key-dir",
            keys.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        shardns(&args)
    };
    let (ok, out) = sign(&[], &file);
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!(
            "2 changes made by dynamic update ({}) applied, up to serial {served}",
            kept.display()
        )),
        "{out}"
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    for name in ["one.upd.test.", "two.upd.test."] {
        assert!(
            text.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() == 5 && f[0] == name && f[3] == "A"
            }),
            "{name} not signed in:\n{text}"
        );
    }
    assert!(soa_serial(&text) >= served, "{text}");
    verify_zone_file(&out_file, APEX).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(std::fs::read(&kept).unwrap(), before, "only read");

    // The file alone, on request.
    let (ok, out) = sign(&["--ignore-updates"], &file);
    assert!(
        ok && out.contains("2 changes made by dynamic update"),
        "{out}"
    );
    assert!(out.contains("left out (--ignore-updates)"), "{out}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(!text.contains("one.upd.test."), "{text}");

    // Another serial of the file: refused, named, the output left as it was.
    let edited = data.write("edited.zone", &zone_text(50));
    let (ok, out) = sign(&[], &edited);
    assert!(!ok, "{out}");
    assert!(
        out.contains("over the zone file at serial 1") && out.contains("--ignore-updates"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), text);
    assert_eq!(std::fs::read(&kept).unwrap(), before, "only read");
}
