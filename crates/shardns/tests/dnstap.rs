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
