//! dnspython's `dns.update.UpdateMessage`, signed with a `dns.tsigkeyring` key, sent by
//! `dns.query.udp`, `tcp` and `tls` (DoT): every step's rcode, whether the answer came
//! signed (dnspython verifies it), and the data a query sees after it
//! (`dnspython_client.py` does the steps and prints them).

use super::*;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/update/dnspython_client.py"
);

/// What the script prints, step by step.
const EXPECTED: &[&str] = &[
    "add-udp NOERROR signed",
    "after-add NOERROR 192.0.2.40",
    "replace-tcp NOERROR signed",
    "after-replace NOERROR 192.0.2.41",
    "present-value-false NXRRSET signed",
    "absent-false YXDOMAIN signed",
    "present-name-false NXDOMAIN signed",
    "rrset-prereqs-true-tls NOERROR signed",
    "after-tls NOERROR 2001:db8::41",
    "delete-tls NOERROR signed",
    "after-delete NOERROR -",
    "delete-name-udp NOERROR signed",
    "after-delete-name NXDOMAIN -",
    // RFC 2136 §3.3 leaves the refusal's rcode to the server: REFUSED, as BIND (knotd
    // says NOTAUTH).
    "unsigned REFUSED unsigned",
    // NOTAUTH with the TSIG error BADSIG (RFC 8945 §5.2.2): dnspython raises on it.
    "wrong-secret raised PeerBadSignature",
    "wrong-secret rcode NOTAUTH",
    "unknown-key raised PeerBadKey",
    "not-served NOTAUTH signed",
    "notzone NOTZONE signed",
    // Five updates accepted: the serial from 1 to 6.
    "serial NOERROR ns.upd.test. hostmaster.upd.test. 6 3600 600 86400 300",
];

#[test]
fn dnspython_updates_over_udp_tcp_and_tls() {
    let zone_dir = TempDir::new("upd-py-zone");
    let file = zone_dir.write("upd.test.zone", &zone_text(1));
    let zone = format!("{APEX}={}", file.display());
    let key = upd_key();
    let (server, tls, certs) = start_encrypted(
        "upd-py",
        "--tls-listen",
        None,
        &["--workers", "1", "--zone", &zone, "--update-key", &key],
    );
    let ca = certs.path().join("dns.test.crt");
    let out = Command::new(python3())
        .arg(SCRIPT)
        .arg(server.addr.ip().to_string())
        .arg(server.addr.port().to_string())
        .arg(tls.port().to_string())
        .arg(&ca)
        .args([SECRET, WRONG_SECRET])
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the dnspython script failed (python3-dnspython missing? scripts/test.sh installs it):\n\
         {stdout}{stderr}"
    );
    let got: Vec<&str> = stdout.lines().collect();
    let differ: Vec<String> = EXPECTED
        .iter()
        .zip(got.iter().chain(std::iter::repeat(&"(nothing)")))
        .filter(|(want, got)| want != got)
        .map(|(want, got)| format!("  expected {want:?}\n       got {got:?}"))
        .collect();
    assert!(
        differ.is_empty() && got.len() == EXPECTED.len(),
        "dnspython's steps differ:\n{}\nwhole output:\n{stdout}{stderr}",
        differ.join("\n")
    );
    // The DoT steps came over TLS.
    assert!(server.stat("shardns_tls_handshakes_total{result=\"done\"}") >= 2.0);
}
