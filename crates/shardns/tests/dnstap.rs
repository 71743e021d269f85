//! End-to-end: the dnstap log (`[dnstap]`, `--dnstap-file`, `--dnstap-socket`), read back
//! with tools we did not write: BIND's `dnstap-read` (bind9-dnsutils) decodes the files,
//! and `fstrm_capture` (fstrm-bin) is the reader on the Unix socket (the bidirectional
//! Frame Streams handshake). Also: no reader at all (the server answers, the frames are
//! counted lost) and a reader that comes later (the writer reaches it).
//!
//! Everything listens on 127.0.0.1 or in the test's own directory; every process is
//! killed on drop.

mod common;

use common::*;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `dnstap-read FILE` (one line per message), with `-y` the full YAML.
fn dnstap_read(file: &Path, yaml: bool) -> String {
    let mut cmd = Command::new("dnstap-read");
    if yaml {
        cmd.arg("-y");
    }
    let out = cmd.arg(file).output().expect("run dnstap-read");
    assert!(
        out.status.success(),
        "dnstap-read {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `fstrm_capture` reading dnstap frames on `socket` into `file`; interrupted (it then
/// closes the file properly) and reaped on drop.
struct Capture(Child);

impl Capture {
    fn start(socket: &Path, file: &Path) -> Option<Self> {
        let Some(program) = find_program("fstrm_capture", "FSTRM_CAPTURE") else {
            eprintln!("fstrm_capture not installed (fstrm-bin): socket test skipped");
            return None;
        };
        let child = Command::new(program)
            .args(["-t", "protobuf:dnstap.Dnstap", "-u"])
            .arg(socket)
            .arg("-w")
            .arg(file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fstrm_capture");
        let end = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(Instant::now() < end, "fstrm_capture made no socket");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self(child))
    }

    /// SIGINT, then waits (bounded) for it to finish the file.
    fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-INT")
            .arg(self.0.id().to_string())
            .status();
        let end = Instant::now() + Duration::from_secs(10);
        while self.0.try_wait().ok().flatten().is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines of `text` that contain `needle`.
fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn file_holds_queries_and_responses_over_udp_tcp() {
    let dir = TempDir::new("dnstap-file-out");
    let file = dir.path().join("tap.fstrm");
    let file_arg = file.display().to_string();
    let mut server = Server::start_on(
        "dnstap-file",
        Ipv4Addr::LOCALHOST,
        None,
        &["--dnstap-file", &file_arg, "--workers", "2"],
    );
    let a = server.addr;
    assert!(dig(a, &["+short", "www.example.test", "A"]).contains("192.0.2."));
    assert!(dig(a, &["+tcp", "+short", "example.test", "SOA"]).contains("example.test."));
    // Not one of ours: REFUSED, logged all the same.
    dig(a, &["+short", "elsewhere.invalid", "A"]);
    server.wait_for_stat("shardns_dnstap_frames_total", 6.0, Duration::from_secs(10));
    assert!(server.terminate().success());
    let text = dnstap_read(&file, false);
    eprintln!("{text}");
    // AQ: authoritative query, AR: its response; dnstap-read prints the client's address.
    assert_eq!(lines_with(&text, " AQ 127.0.0.1:").len(), 3, "{text}");
    assert_eq!(lines_with(&text, " AR 127.0.0.1:").len(), 3, "{text}");
    assert_eq!(lines_with(&text, " UDP ").len(), 4, "{text}");
    assert_eq!(lines_with(&text, " TCP ").len(), 2, "{text}");
    assert!(text.contains("www.example.test/IN/A"), "{text}");
    assert!(text.contains("example.test/IN/SOA"), "{text}");
    let yaml = dnstap_read(&file, true);
    assert!(yaml.contains("version: shardns "), "{yaml}");
    assert!(yaml.contains("socket_protocol: TCP"), "{yaml}");
    // The response is the one dig got: the answer's address is in it.
    assert!(yaml.contains("response_message:"), "{yaml}");
    assert!(yaml.contains("status: REFUSED"), "{yaml}");
}

#[test]
fn socket_reader_gets_the_configured_messages() {
    let dir = TempDir::new("dnstap-socket-out");
    let socket = dir.path().join("tap.sock");
    let file = dir.path().join("capture.fstrm");
    let Some(capture) = Capture::start(&socket, &file) else {
        return;
    };
    let config = format!(
        "[dnstap]\nsocket = \"{}\"\nresponses = false\nidentity = \"tap-test\"\n",
        socket.display()
    );
    let mut server = Server::start_on(
        "dnstap-socket",
        Ipv4Addr::LOCALHOST,
        Some(&config),
        &["--workers", "2"],
    );
    for _ in 0..5 {
        assert!(dig(server.addr, &["+short", "www.example.test", "A"]).contains("192.0.2."));
    }
    server.wait_for_stat("shardns_dnstap_frames_total", 5.0, Duration::from_secs(10));
    // The server sends STOP and waits for FINISH before it exits.
    assert!(server.terminate().success());
    capture.stop();
    let text = dnstap_read(&file, false);
    assert_eq!(lines_with(&text, " AQ 127.0.0.1:").len(), 5, "{text}");
    assert!(lines_with(&text, " AR ").is_empty(), "{text}");
    assert!(dnstap_read(&file, true).contains("identity: tap-test"));
}

#[test]
fn no_reader_loses_frames_but_not_answers_and_a_later_reader_is_reached() {
    let dir = TempDir::new("dnstap-late-out");
    let socket = dir.path().join("tap.sock");
    let file = dir.path().join("capture.fstrm");
    let socket_arg = socket.display().to_string();
    let server = Server::start_on(
        "dnstap-late",
        Ipv4Addr::LOCALHOST,
        None,
        &["--dnstap-socket", &socket_arg, "--workers", "1"],
    );
    for _ in 0..3 {
        assert!(dig(server.addr, &["+short", "www.example.test", "A"]).contains("192.0.2."));
    }
    // Three queries and their responses, handed to the writer, lost: nobody listens.
    server.wait_for_stat(
        "shardns_dnstap_frames_total{result=\"lost\"}",
        6.0,
        Duration::from_secs(10),
    );
    let Some(capture) = Capture::start(&socket, &file) else {
        return;
    };
    // The writer tries again every second: keep asking until a frame is captured.
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        assert!(dig(server.addr, &["+short", "www.example.test", "A"]).contains("192.0.2."));
        let lost = server.stat("shardns_dnstap_frames_total{result=\"lost\"}");
        let sent = server.stat("shardns_dnstap_frames_total{result=\"sent\"}");
        if sent > lost {
            break;
        }
        assert!(Instant::now() < end, "the writer never reached the reader");
        std::thread::sleep(Duration::from_millis(300));
    }
    drop(server);
    capture.stop();
    let text = dnstap_read(&file, false);
    assert!(!lines_with(&text, " AQ 127.0.0.1:").is_empty(), "{text}");
}

#[test]
fn the_resolver_role_logs_client_queries_and_its_later_answers() {
    // An authoritative shardns for other.test, and a resolver forwarding other.test to it.
    let (_auth, forward) = other_test_upstream("dnstap-resolver");
    let dir = TempDir::new("dnstap-resolver-out");
    let file = dir.path().join("tap.fstrm");
    let file_arg = file.display().to_string();
    let mut resolver = Server::start_on(
        "dnstap-resolver",
        Ipv4Addr::LOCALHOST,
        None,
        &[
            "--recursion",
            // The default local zone test. (RFC 6761, as Unbound) would answer the names.
            "--local-zone",
            "test. nodefault",
            "--no-validation",
            "--forward",
            &forward,
            "--allow-recursion",
            "127.0.0.0/8",
            "--dnstap-file",
            &file_arg,
            "--workers",
            "1",
        ],
    );
    // A cache miss (answered later), then a hit (answered at once).
    for _ in 0..2 {
        assert!(dig(resolver.addr, &["+short", "www.other.test", "A"]).contains("192.0.2.77"));
    }
    resolver.wait_for_stat("shardns_dnstap_frames_total", 4.0, Duration::from_secs(10));
    assert!(resolver.terminate().success());
    let text = dnstap_read(&file, false);
    // dnstap-read: CQ/CR client (resolver) query/response, AQ/AR authoritative.
    assert_eq!(lines_with(&text, " CQ 127.0.0.1:").len(), 2, "{text}");
    assert_eq!(lines_with(&text, " CR 127.0.0.1:").len(), 2, "{text}");
    assert!(lines_with(&text, " AQ ").is_empty(), "{text}");
    assert!(dnstap_read(&file, true).contains("192.0.2.77"));
}

/// The data frames of a Frame Streams file: after the START control frame, each a 4-octet
/// big-endian length and the payload; a zero length escapes a control frame.
fn data_frames(bytes: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    let mut at = 0;
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    while at + 4 <= bytes.len() {
        let len = word(at);
        if len == 0 {
            // A control frame: its own length, then its body.
            at += 8 + word(at + 4);
            continue;
        }
        frames.push(&bytes[at + 4..at + 4 + len]);
        at += 4 + len;
    }
    frames
}

/// `protoc --decode_raw` of one protobuf message (no schema: field numbers and values).
fn decode_raw(protoc: &Path, message: &[u8]) -> String {
    use std::io::Write as _;
    let mut child = Command::new(protoc)
        .arg("--decode_raw")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run protoc");
    child.stdin.take().unwrap().write_all(message).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Response policy hits in dnstap: the CLIENT_RESPONSE carries the rewritten answer (which
/// dnstap-read shows) and `Message.policy` (type "RPZ", the action, what matched, the
/// matched name or address; dnstap.proto's field 15, which `protoc --decode_raw` shows),
/// the policy zone's name in `Dnstap.extra`: query-name, client-address and answer-address
/// triggers (the last on a later answer); a response no policy touched has neither.
#[test]
fn policy_hits_are_in_the_client_responses() {
    let (_auth, forward) = other_test_upstream("dnstap-rpz");
    let dir = TempDir::new("dnstap-rpz-out");
    let file = dir.path().join("tap.fstrm");
    let rpz = dir.write(
        "policy.rpz",
        "$TTL 60\n@ SOA localhost. admin.localhost. 1 3600 600 86400 60\n@ NS localhost.\n\
         blocked.other.test CNAME .\nlocal.other.test A 192.0.2.99\n\
         32.9.0.0.127.rpz-client-ip CNAME *.\n32.77.2.0.192.rpz-ip CNAME .\n",
    );
    let config = format!(
        "[resolver]\nrecursion = true\nvalidation = false\nlocal_zone = [\"test. nodefault\"]\n\
         forward = [\"{forward}\"]\n[[resolver.rpz]]\nname = \"policy.rpz.\"\nfile = \"{}\"\n\
         [dnstap]\nfile = \"{}\"\n",
        rpz.display(),
        file.display()
    );
    let mut resolver = Server::start_on(
        "dnstap-rpz",
        Ipv4Addr::LOCALHOST,
        Some(&config),
        &["--workers", "1"],
    );
    let a = resolver.addr;
    let out = dig(a, &["+noall", "+comments", "blocked.other.test", "A"]);
    assert!(out.contains("status: NXDOMAIN"), "{out}");
    assert_eq!(
        dig(a, &["+short", "local.other.test", "A"]).trim(),
        "192.0.2.99"
    );
    // The client-ip trigger, from 127.0.0.9: NODATA for a name that has data.
    let out = dig(
        a,
        &[
            "-b",
            "127.0.0.9",
            "+noall",
            "+comments",
            "www.other.test",
            "A",
        ],
    );
    assert!(
        out.contains("status: NOERROR") && out.contains("ANSWER: 0"),
        "{out}"
    );
    // The answer's address 192.0.2.77 (rpz-ip), after resolution: NXDOMAIN, later.
    let out = dig(a, &["+noall", "+comments", "www.other.test", "A"]);
    assert!(out.contains("status: NXDOMAIN"), "{out}");
    // No policy for this one.
    assert_eq!(
        dig(a, &["+short", "ns.other.test", "A"]).trim(),
        "127.0.0.1"
    );
    resolver.wait_for_stat("shardns_dnstap_frames_total", 10.0, Duration::from_secs(10));
    assert!(resolver.terminate().success());
    let yaml = dnstap_read(&file, true);
    assert!(yaml.contains("status: NXDOMAIN"), "{yaml}");
    assert!(yaml.contains("192.0.2.99"), "{yaml}");
    let Some(protoc) = find_program("protoc", "PROTOC") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "protoc is not installed (scripts/test.sh installs it)"
        );
        println!("dnstap: SKIPPED the policy fields: protoc not installed (protobuf-compiler)");
        return;
    };
    let bytes = std::fs::read(&file).unwrap();
    let decoded: Vec<String> = data_frames(&bytes)
        .into_iter()
        .map(|f| decode_raw(&protoc, f))
        .collect();
    let with_policy: Vec<&String> = decoded.iter().filter(|d| d.contains("15 {")).collect();
    assert_eq!(with_policy.len(), 4, "{decoded:#?}");
    // Dnstap.extra, then in the message: type 6 (CLIENT_RESPONSE), the policy.
    let hit = |action: u8, matched: u8, value: &str| {
        with_policy.iter().any(|d| {
            d.contains("3: \"policy.rpz.\"")
                && d.contains("  1: 6\n")
                && d.contains("    1: \"RPZ\"\n")
                && d.contains(&format!("    3: {action}\n    4: {matched}\n"))
                && d.contains(&format!("    5: \"{value}\"\n"))
        })
    };
    // NXDOMAIN (1) and local data (6) by query name (1), NODATA (2) by client address (2).
    assert!(
        hit(1, 1, "\\007blocked\\005other\\004test\\000"),
        "{with_policy:#?}"
    );
    assert!(
        hit(6, 1, "\\005local\\005other\\004test\\000"),
        "{with_policy:#?}"
    );
    assert!(hit(2, 2, "\\177\\000\\000\\t"), "{with_policy:#?}");
    // NXDOMAIN by an answer's address (3); which address matched is not kept.
    assert!(
        with_policy
            .iter()
            .any(|d| d.contains("    3: 1\n    4: 3\n  }") && d.contains("3: \"policy.rpz.\"")),
        "{with_policy:#?}"
    );
}
