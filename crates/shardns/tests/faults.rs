//! End-to-end fault injection: zone files broken under a running server (garbage,
//! truncated mid-record, deleted, replaced by a FIFO or a directory) and reloaded by SIGHUP
//! and `shardns reload`; logs that cannot be written (standard error on /dev/full or on a
//! pipe nobody reads) with query logging on; and a resolver whose upstream servers, fakes
//! run by this test on 127.0.0.30-34, answer garbage, answer too late or never answer.
//! Each time the server must keep answering, report the fault, and never crash.
//!
//! Never: any address outside 127.0.0.0/8 and ::1, unbounded waits, processes left running.

mod common;

use common::*;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// Zone files broken under a running server.

fn zone_version(v: u32) -> String {
    format!(
        "$TTL 60\n@ SOA ns hostmaster (\n    {v} 7200 3600\n    1209600 300 )\n@ NS ns\n\
         ns A 192.0.2.1\nwww A 198.51.100.{v}\ntxt TXT \"version {v}\" \"of the zone\"\n"
    )
}

fn start_fault_server(tag: &str) -> (Server, PathBuf) {
    let dir = TempDir::new(tag);
    let path = dir.write("fault.test.zone", &zone_version(1));
    let arg = format!("fault.test.={}", path.display());
    let server = Server::start_in(dir, &["--workers", "2", "--zone", &arg]);
    (server, path)
}

/// The answers for `name`/`qtype` over UDP and over TCP (which must agree).
fn ask(server: &Server, name: &str, qtype: u16) -> Vec<String> {
    let q = query(0x4242, name, qtype, Some(1232));
    let sock = udp_client(server.addr4());
    let udp = udp_exchange(&sock, &q).unwrap_or_else(|| panic!("no UDP answer for {name}"));
    let tcp = tcp_exchange(server.addr6(), &[q]).pop().unwrap();
    let (u, t) = (answers(&parse(&udp)), answers(&parse(&tcp)));
    assert_eq!(u, t, "UDP and TCP disagree for {name}");
    u
}

/// Version `v` of the zone is what the server answers.
fn assert_serving(server: &Server, v: u32, after: &str) {
    assert_eq!(
        ask(server, "www.fault.test", 1),
        [format!("A 198.51.100.{v}")],
        "www after {after}"
    );
    assert_eq!(
        ask(server, "txt.fault.test", 16),
        [format!("TXT version {v}of the zone")],
        "txt after {after}"
    );
}

/// The line number in the first `path:LINE:` of `text`.
fn file_line(text: &str, path: &Path) -> Option<usize> {
    let needle = format!("{}:", path.display());
    text.match_indices(&needle).find_map(|(i, _)| {
        let rest = &text[i + needle.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty() && rest[digits.len()..].starts_with(':'))
            .then(|| digits.parse().unwrap())
    })
}

/// Runs `shardns reload` with a time limit (a reload that hangs is a failure, not a hang).
fn reload_bounded(server: &Server, limit: Duration) -> Output {
    let mut child = Command::new(BIN)
        .arg("reload")
        .arg("--control")
        .arg(&server.control)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("shardns reload did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Reloads through the control socket, then by SIGHUP; both must fail, keep version `v`
/// and report the problem (with `file:line` when `with_line`). Returns the line reported.
fn reload_fails_keeping(
    server: &Server,
    path: &Path,
    v: u32,
    what: &str,
    with_line: bool,
) -> Option<usize> {
    let out = reload_bounded(server, Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!out.status.success(), "{what}: reload succeeded: {text}");
    assert!(
        text.contains("keeping its previous version"),
        "{what}: {text}"
    );
    assert!(
        text.contains(&path.display().to_string()),
        "{what}: file not named: {text}"
    );
    let line = file_line(&text, path);
    if with_line {
        assert!(
            line.is_some_and(|l| l >= 1),
            "{what}: no {}:LINE: in {text}",
            path.display()
        );
    }
    assert_serving(server, v, what);

    let before = server.log().matches("failed to load").count();
    server.sighup();
    let end = Instant::now() + Duration::from_secs(10);
    while server.log().matches("failed to load").count() == before {
        assert!(
            Instant::now() < end,
            "{what}: SIGHUP reload not logged:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The error lines follow the "failed to load" line.
    std::thread::sleep(Duration::from_millis(100));
    let log = server.log();
    let tail = &log[log.rfind("failed to load").unwrap()..];
    if with_line {
        assert_eq!(file_line(tail, path), line, "{what}: SIGHUP log:\n{tail}");
    } else {
        assert!(tail.contains(&path.display().to_string()), "{what}: {tail}");
    }
    assert_serving(server, v, what);
    line
}

/// A deterministic byte generator (xorshift64).
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn garbage_and_truncated_zone_files_keep_the_old_version() {
    let (server, path) = start_fault_server("faults-garbage");
    assert_serving(&server, 1, "start");

    // (a) Garbage of several kinds.
    let mut printable = String::from("$TTL 60\n@ SOA ns hostmaster 2 7200 3600 1209600 300\n");
    for i in 0..50 {
        printable.push_str(&format!(
            "line{i} {} {}\n",
            "lorem".repeat(i % 4 + 1),
            i * 37
        ));
    }
    let garbage: Vec<(&str, Vec<u8>)> = vec![
        ("4 KiB of random octets", noise(1, 4096)),
        ("random octets after a valid start", {
            let mut z = zone_version(2).into_bytes();
            z.extend_from_slice(&noise(2, 512));
            z
        }),
        ("NUL octets", vec![0; 1000]),
        ("words that are no records", printable.into_bytes()),
        ("one 100,000-octet line", vec![b'x'; 100_000]),
        ("invalid UTF-8 in a TXT string", {
            let mut z = zone_version(2).into_bytes();
            z.extend_from_slice(b"bad TXT \"\xff\xfe\xc0\"\nworse \xff\xff A 1.2.3.4\n");
            z
        }),
    ];
    for (what, bytes) in &garbage {
        std::fs::write(&path, bytes).unwrap();
        reload_fails_keeping(&server, &path, 1, what, true);
    }

    // (b) Truncated in the middle of a record: inside the SOA's parentheses, inside a
    // quoted string, inside an address, after a type.
    let full = zone_version(2);
    for (what, cut_after) in [
        ("inside the SOA parentheses", "7200 "),
        ("inside a quoted string", "\"version 2\" \"of t"),
        ("inside an address", "www A 198.51."),
        ("after the type", "ns A"),
    ] {
        let at = full.find(cut_after).unwrap() + cut_after.len();
        std::fs::write(&path, &full[..at]).unwrap();
        let line = reload_fails_keeping(&server, &path, 1, what, true).unwrap();
        let last_line = full[..at].lines().count();
        assert!(
            line <= last_line,
            "{what}: error at line {line}, the file has {last_line}"
        );
    }

    // Fixed: the new version is served at once.
    std::fs::write(&path, zone_version(2)).unwrap();
    assert!(reload_bounded(&server, Duration::from_secs(10))
        .status
        .success());
    assert_serving(&server, 2, "the fix");
    assert!(server.stat("shardns_reloads_total{result=\"failed\"}") >= 20.0);
    assert!(!server.log().contains("panicked"));
}

#[test]
fn deleted_and_special_zone_files_keep_the_old_version() {
    let (server, path) = start_fault_server("faults-deleted");
    assert_serving(&server, 1, "start");

    // (c) Deleted, then restored with new data.
    std::fs::remove_file(&path).unwrap();
    reload_fails_keeping(&server, &path, 1, "deleted file", false);
    std::fs::write(&path, zone_version(3)).unwrap();
    let out = reload_bounded(&server, Duration::from_secs(10));
    assert!(out.status.success(), "{out:?}");
    assert_serving(&server, 3, "restoring the file");

    // Not a regular file: a directory, a FIFO (opening it would wait for a writer
    // forever), a symlink to a character device. Each fails at once.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    reload_fails_keeping(&server, &path, 3, "a directory", false);
    std::fs::remove_dir(&path).unwrap();
    let fifo = std::ffi::CString::new(path.display().to_string()).unwrap();
    // SAFETY: a valid NUL-terminated path and a mode; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    reload_fails_keeping(&server, &path, 3, "a FIFO", false);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/null", &path).unwrap();
    reload_fails_keeping(&server, &path, 3, "a symlink to /dev/null", false);
    std::fs::remove_file(&path).unwrap();

    std::fs::write(&path, zone_version(4)).unwrap();
    server.sighup();
    let end = Instant::now() + Duration::from_secs(10);
    // UDP only while the reload may still be running (TCP could see the other version).
    let sock = udp_client(server.addr4());
    let www = |id: u16| {
        let r = udp_exchange(&sock, &query(id, "www.fault.test", 1, None)).expect("an answer");
        answers(&parse(&r))
    };
    while www(7) != ["A 198.51.100.4"] {
        assert!(
            Instant::now() < end,
            "SIGHUP after the fix:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_serving(&server, 4, "the last fix");

    // A storm of 50 SIGHUPs while the file changes under it: the server keeps answering
    // and ends on the last version.
    for i in 0..50u32 {
        if i % 10 == 0 {
            std::fs::write(&path, zone_version(5 + i / 10)).unwrap();
        }
        server.sighup();
    }
    for i in 0..50u16 {
        assert!(udp_exchange(&sock, &query(i, "www.fault.test", 1, None)).is_some());
    }
    let out = reload_bounded(&server, Duration::from_secs(10));
    assert!(out.status.success(), "{out:?}");
    assert_serving(&server, 9, "a storm of SIGHUPs");
}

/// `$INCLUDE` of a FIFO (or a device) is refused: opening a FIFO would block the reload
/// until a writer appears, and `/dev/zero` would be read until memory runs out.
#[test]
fn include_of_a_fifo_does_not_hang_the_reload() {
    let (server, path) = start_fault_server("faults-include");
    let inc = server.dir.path().join("hosts.inc");
    let c = std::ffi::CString::new(inc.display().to_string()).unwrap();
    // SAFETY: a valid NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut z = zone_version(2);
    z.push_str("$INCLUDE hosts.inc\n");
    std::fs::write(&path, z).unwrap();
    // Panics if the reload does not finish in 5 s.
    let out = reload_bounded(&server, Duration::from_secs(5));
    assert!(!out.status.success());
    assert_serving(&server, 1, "an $INCLUDE of a FIFO");
}

// ---------------------------------------------------------------------------------------
// Logs that cannot be written.

/// A `shardns serve` with standard error wherever the test says; killed on drop.
struct Proc {
    child: Child,
    addr: SocketAddr,
    control: PathBuf,
}

impl Proc {
    fn spawn(dir: &Path, stderr: Stdio, args: &[&str]) -> Self {
        let port = free_port();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let control = dir.join("ctl");
        let child = Command::new(BIN)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--control")
            .arg(&control)
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start shardns");
        let mut p = Self {
            child,
            addr,
            control,
        };
        // No log to wait for: ready when it answers.
        let sock = udp_client(addr);
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let end = Instant::now() + Duration::from_secs(20);
        while udp_exchange(&sock, &query(1, "www.log.test", 1, None)).is_none() {
            if let Ok(Some(status)) = p.child.try_wait() {
                panic!("shardns exited ({status}) before answering");
            }
            assert!(Instant::now() < end, "shardns never answered");
        }
        p
    }

    fn control(&self, command: &str) -> Output {
        run_control(&self.control, command)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Queries over UDP and TCP, a reload by both means and the statistics, all with every log
/// line failing to be written; then a clean stop.
fn serve_with_broken_stderr(tag: &str, stderr: Stdio) {
    let dir = TempDir::new(tag);
    let zone = dir.write(
        "log.test.zone",
        "$TTL 60\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.80\n",
    );
    let arg = format!("log.test.={}", zone.display());
    let mut p = Proc::spawn(
        dir.path(),
        stderr,
        &[
            "--workers",
            "2",
            "--zone",
            &arg,
            "--log-queries",
            "--log-level",
            "debug",
        ],
    );
    let check = |resp: &[u8]| {
        assert_eq!(answers(&parse(resp)), ["A 192.0.2.80"]);
    };
    for round in 0..3 {
        // Fresh sockets (so both workers see queries), 100 queries each.
        for _ in 0..4 {
            let sock = udp_client(p.addr);
            for i in 0..100u16 {
                let r = udp_exchange(&sock, &query(i, "www.log.test", 1, None))
                    .unwrap_or_else(|| panic!("{tag}: round {round}: UDP query {i} unanswered"));
                check(&r);
            }
        }
        let qs: Vec<Vec<u8>> = (0..20).map(|i| query(i, "www.log.test", 1, None)).collect();
        for r in tcp_exchange(p.addr, &qs) {
            check(&r);
        }
        let out = p.control("reload");
        assert!(out.status.success(), "{tag}: reload: {out:?}");
        let ok = Command::new("kill")
            .args(["-HUP", &p.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let out = p.control("stats");
        assert!(out.status.success(), "{tag}: stats: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(stat_value(&text, "shardns_queries_total") >= f64::from(420 * (round + 1)));
        assert!(
            p.child.try_wait().unwrap().is_none(),
            "{tag}: shardns exited"
        );
    }
    // Two reloads by SIGHUP went through as well.
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let out = p.control("stats");
        let text = String::from_utf8_lossy(&out.stdout);
        if stat_value(&text, "shardns_reloads_total") >= 6.0 {
            break;
        }
        assert!(
            Instant::now() < end,
            "{tag}: SIGHUP reloads not counted:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = p.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "{tag}: no exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{tag}: exit status {status}");
}

#[test]
fn logging_to_a_full_disk_does_not_stop_service() {
    let full = File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    serve_with_broken_stderr("faults-devfull", Stdio::from(full));
}

#[test]
fn logging_to_a_closed_pipe_does_not_stop_service() {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe() writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: pipe() just returned these descriptors; each is owned exactly once here.
    let (read, write) = unsafe {
        use std::os::fd::FromRawFd;
        (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
    };
    drop(read); // every write to the pipe now fails with EPIPE
    serve_with_broken_stderr("faults-pipe", Stdio::from(write));
}

// ---------------------------------------------------------------------------------------
// A resolver whose upstream servers misbehave.

/// The question of a query: (ID, RD, lower-case labels, QTYPE, end of the question).
struct Q {
    id: u16,
    flags: u16,
    labels: Vec<String>,
    qtype: u16,
    end: usize,
}

fn parse_query(m: &[u8]) -> Option<Q> {
    if m.len() < 12 || m[2] & 0x80 != 0 {
        return None;
    }
    let mut pos = 12;
    let mut labels = Vec::new();
    loop {
        let l = usize::from(*m.get(pos)?);
        if l == 0 || l > 63 {
            break;
        }
        labels.push(String::from_utf8_lossy(m.get(pos + 1..pos + 1 + l)?).to_ascii_lowercase());
        pos += 1 + l;
    }
    if m.get(pos) != Some(&0) || m.len() < pos + 5 {
        return None;
    }
    Some(Q {
        id: u16::from_be_bytes([m[0], m[1]]),
        flags: u16::from_be_bytes([m[2], m[3]]),
        labels,
        qtype: u16::from_be_bytes([m[pos + 1], m[pos + 2]]),
        end: pos + 5,
    })
}

fn rr(owner: &str, rtype: u16, rdata: &[u8]) -> Vec<u8> {
    record(&wire_name(owner), rtype, rdata)
}

fn soa(zone: &str) -> Vec<u8> {
    let mut rdata = wire_name(&format!("ns.{zone}"));
    rdata.extend_from_slice(&wire_name(&format!("admin.{zone}")));
    for v in [1u32, 3600, 600, 86400, 60] {
        rdata.extend_from_slice(&v.to_be_bytes());
    }
    rr(zone, 6, &rdata)
}

/// A response to `q` (the raw query `raw`): its question, then the sections.
fn response(q: &Q, raw: &[u8], aa: bool, rcode: u8, sections: [&[Vec<u8>]; 3]) -> Vec<u8> {
    let mut m = q.id.to_be_bytes().to_vec();
    let flags = 0x8000 | if aa { 0x0400 } else { 0 } | (q.flags & 0x0100) | u16::from(rcode);
    m.extend_from_slice(&flags.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    for s in sections {
        m.extend_from_slice(&(s.len() as u16).to_be_bytes());
    }
    m.extend_from_slice(&raw[12..q.end]);
    for s in sections {
        for r in s {
            m.extend_from_slice(r);
        }
    }
    m
}

const TLDS: [(&str, [u8; 4]); 4] = [
    ("garbage", [127, 0, 0, 31]),
    ("slow", [127, 0, 0, 32]),
    ("silent", [127, 0, 0, 33]),
    ("good", [127, 0, 0, 34]),
];

/// The root: a referral to each TLD's server, NXDOMAIN for the rest.
fn root_answer(q: &Q, raw: &[u8]) -> Vec<u8> {
    match TLDS
        .iter()
        .find(|(t, _)| q.labels.last().is_some_and(|l| l == t))
    {
        Some((tld, ip)) => {
            let ns = format!("ns.{tld}.");
            response(
                q,
                raw,
                false,
                0,
                [
                    &[],
                    &[rr(&format!("{tld}."), 2, &wire_name(&ns))],
                    &[rr(&ns, 1, ip)],
                ],
            )
        }
        None => response(q, raw, true, 3, [&[], &[soa(".")], &[]]),
    }
}

/// A correct authoritative answer from a TLD server: `www.<tld>. A 192.0.2.44` for any
/// name below the TLD, the NS set at the apex.
fn tld_answer(q: &Q, raw: &[u8]) -> Vec<u8> {
    let tld = q.labels.last().cloned().unwrap_or_default();
    let apex = format!("{tld}.");
    let name = format!("{}.", q.labels.join("."));
    if q.labels.len() == 1 {
        return match q.qtype {
            2 => response(
                q,
                raw,
                true,
                0,
                [&[rr(&apex, 2, &wire_name(&format!("ns.{apex}")))], &[], &[]],
            ),
            _ => response(q, raw, true, 0, [&[], &[soa(&apex)], &[]]),
        };
    }
    match q.qtype {
        1 => response(
            q,
            raw,
            true,
            0,
            [&[rr(&name, 1, &[192, 0, 2, 44])], &[], &[]],
        ),
        _ => response(q, raw, true, 0, [&[], &[soa(&apex)], &[]]),
    }
}

/// What the garbage server sends for a query whose label below `garbage.` is `kind`.
fn garbage_answers(kind: &str, q: &Q, raw: &[u8], seed: u64) -> Vec<Vec<u8>> {
    let good = tld_answer(q, raw);
    let id = q.id.to_be_bytes();
    match kind {
        "random" => vec![noise(seed, 1 + (seed % 500) as usize)],
        "idonly" => {
            let mut m = noise(seed, 200);
            m[..2].copy_from_slice(&id);
            m[2] |= 0x80;
            vec![m]
        }
        "short" => (2..12).map(|n| good[..n].to_vec()).collect(),
        "cut" => vec![good[..good.len() - 3].to_vec()],
        "wrongid" => {
            let mut m = good.clone();
            m[1] ^= 1;
            vec![m]
        }
        "wrongq" => {
            let other = wire_name("elsewhere.garbage.");
            let mut m = good[..12].to_vec();
            m.extend_from_slice(&other);
            m.extend_from_slice(&raw[q.end - 4..q.end]);
            m.extend_from_slice(&good[q.end..]);
            vec![m]
        }
        "counts" => {
            let mut m = good[..12].to_vec();
            m[4..12].fill(0xff);
            vec![m]
        }
        "loop" => {
            // The answer's owner is a pointer to itself.
            let mut m = good[..q.end].to_vec();
            m[6..8].copy_from_slice(&1u16.to_be_bytes());
            let at = m.len();
            m.extend_from_slice(&[
                0xc0 | (at >> 8) as u8,
                at as u8,
                0,
                1,
                0,
                1,
                0,
                0,
                1,
                44,
                0,
                4,
                1,
                2,
                3,
                4,
            ]);
            vec![m]
        }
        "flood" => (0..120u64)
            .map(|i| {
                let mut m = noise(seed + i, 12 + (i as usize * 7) % 300);
                if i % 6 == 0 {
                    m[..2].copy_from_slice(&id);
                    m[2] |= 0x80;
                }
                m
            })
            .collect(),
        "tc" => {
            // Truncated: the resolver retries over TCP, where the server sends garbage.
            let mut m = good[..q.end].to_vec();
            m[2] |= 0x02;
            m[6..12].fill(0);
            vec![m]
        }
        "formerr" => vec![response(q, raw, false, 1, [&[], &[], &[]])],
        "refused" => vec![response(q, raw, false, 5, [&[], &[], &[]])],
        "selfref" => {
            // A referral to itself, forever (a lame delegation loop).
            let zone = format!("{}.", q.labels[q.labels.len() - 2..].join("."));
            vec![response(
                q,
                raw,
                false,
                0,
                [
                    &[],
                    &[rr(&zone, 2, &wire_name("ns.garbage."))],
                    &[rr("ns.garbage.", 1, &[127, 0, 0, 31])],
                ],
            )]
        }
        "upward" => vec![response(
            q,
            raw,
            false,
            0,
            [
                &[],
                &[rr(".", 2, &wire_name("a.root."))],
                &[rr("a.root.", 1, &[127, 0, 0, 30])],
            ],
        )],
        _ => vec![good],
    }
}

const GARBAGE_KINDS: [&str; 14] = [
    "random", "idonly", "short", "cut", "wrongid", "wrongq", "counts", "loop", "flood", "tc",
    "formerr", "refused", "selfref", "upward",
];

/// How a fake server answers a query (the raw query, how many it has seen): after what
/// delay, with which datagrams.
type Behaviour = Box<dyn Fn(&Q, &[u8], u64) -> (Duration, Vec<Vec<u8>>) + Send>;

/// The fake upstream servers, one thread each; stopped and joined on drop.
struct Fakes {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Fakes {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A port free on every address the fakes and the resolver use (from 6200-6299).
fn fake_port() -> u16 {
    'ports: for port in (6200..6300).rev() {
        for last in 30..=36u8 {
            let ip = Ipv4Addr::new(127, 0, 0, last);
            if UdpSocket::bind((ip, port)).is_err() || TcpListener::bind((ip, port)).is_err() {
                continue 'ports;
            }
        }
        return port;
    }
    panic!("no port in 6200-6299 free on 127.0.0.30-36");
}

fn start_fakes(port: u16) -> Fakes {
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let udp = |last: u8| {
        let s = UdpSocket::bind((Ipv4Addr::new(127, 0, 0, last), port)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        s
    };
    // Serves one UDP socket: `f` gives (delay, datagrams) for each query.
    let serve = |sock: UdpSocket, stop: Arc<AtomicBool>, f: Behaviour| {
        std::thread::spawn(move || {
            let mut later: Vec<(Instant, SocketAddr, Vec<u8>)> = Vec::new();
            let mut buf = [0u8; 4096];
            let mut n_seen = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, peer)) = sock.recv_from(&mut buf) {
                    n_seen += 1;
                    if let Some(q) = parse_query(&buf[..n]) {
                        let (delay, out) = f(&q, &buf[..n], n_seen);
                        for m in out {
                            later.push((Instant::now() + delay, peer, m));
                        }
                    }
                }
                let now = Instant::now();
                later.retain(|(at, peer, m)| {
                    if *at <= now {
                        let _ = sock.send_to(m, peer);
                        false
                    } else {
                        true
                    }
                });
            }
        })
    };
    let now = Duration::ZERO;
    threads.push(serve(
        udp(30),
        Arc::clone(&stop),
        Box::new(move |q, raw, _| (now, vec![root_answer(q, raw)])),
    ));
    threads.push(serve(
        udp(31),
        Arc::clone(&stop),
        Box::new(move |q, raw, n| {
            let kind = q.labels.iter().rev().nth(1).cloned().unwrap_or_default();
            (now, garbage_answers(&kind, q, raw, n))
        }),
    ));
    // Slow: correct answers, long after the resolver's largest per-query timeout (3 s).
    threads.push(serve(
        udp(32),
        Arc::clone(&stop),
        Box::new(move |q, raw, _| (Duration::from_millis(3500), vec![tld_answer(q, raw)])),
    ));
    // Silent: reads and never answers.
    threads.push(serve(
        udp(33),
        Arc::clone(&stop),
        Box::new(move |_, _, _| (now, Vec::new())),
    ));
    threads.push(serve(
        udp(34),
        Arc::clone(&stop),
        Box::new(move |q, raw, _| (now, vec![tld_answer(q, raw)])),
    ));
    // The garbage server's TCP side: garbage, then close.
    let listener = TcpListener::bind((Ipv4Addr::new(127, 0, 0, 31), port)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let stop2 = Arc::clone(&stop);
    threads.push(std::thread::spawn(move || {
        let mut seed = 77;
        while !stop2.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    use std::io::{Read, Write};
                    s.set_nonblocking(false).unwrap();
                    s.set_read_timeout(Some(Duration::from_millis(500)))
                        .unwrap();
                    let mut b = [0u8; 512];
                    let _ = s.read(&mut b);
                    seed += 1;
                    let _ = s.write_all(&noise(seed, 300));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }));
    Fakes { stop, threads }
}

/// A resolver instance on 127.0.0.36 using the fake root; it also serves `local.test.`.
struct Resolver {
    child: Child,
    addr: SocketAddr,
    control: PathBuf,
    log: Arc<std::sync::Mutex<String>>,
}

impl Drop for Resolver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- resolver log ---\n{}", self.log.lock().unwrap());
        }
    }
}

fn start_resolver(dir: &TempDir, port: u16) -> Resolver {
    let hints = dir.write(
        "fake.hints",
        &format!(". NS a.root.\na.root. A 127.0.0.30@{port}\n"),
    );
    let zone = dir.write(
        "local.test.zone",
        "$TTL 60\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.99\n",
    );
    let addr = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 36), port));
    let control = dir.path().join("resolver.ctl");
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(["--listen", &addr.to_string(), "--control"])
        .arg(&control)
        .args(["--workers", "2", "--recursion", "--root-hints"])
        .arg(&hints)
        .args(["--upstream-port", &port.to_string(), "--zone"])
        .arg(format!("local.test.={}", zone.display()))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = capture_stderr(&mut child);
    let r = Resolver {
        child,
        addr,
        control,
        log,
    };
    let end = Instant::now() + Duration::from_secs(20);
    while !r.log.lock().unwrap().contains("shardns ready") {
        assert!(Instant::now() < end, "resolver not ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    r
}

/// The INFO-CODE and text of the Extended DNS Error (RFC 8914) in a response, if any.
fn ede(resp: &[u8]) -> Option<(u16, String)> {
    let m = shardns_wire::Message::parse(resp).ok()?;
    let opt = m.opt()?;
    let found = shardns_wire::edns::options(&opt.rdata)
        .find(|(code, _)| *code == 15)
        .map(|(_, d)| {
            (
                u16::from_be_bytes([d[0], d[1]]),
                String::from_utf8_lossy(&d[2..]).into_owned(),
            )
        });
    found
}

#[test]
fn upstream_garbage_slowness_and_silence_give_servfail_in_bounded_time() {
    let port = fake_port();
    let _fakes = start_fakes(port);
    let dir = TempDir::new("faults-upstream");
    let res = start_resolver(&dir, port);

    // The fake network works: a good TLD resolves.
    let sock = udp_client(res.addr);
    let rd = |id: u16, name: &str| {
        let mut q = query(id, name, 1, Some(1232));
        q[2] |= 0x01;
        q
    };
    let r = udp_exchange(&sock, &rd(1, "www.good.")).expect("www.good. unanswered");
    assert_eq!(answers(&parse(&r)), ["A 192.0.2.44"]);

    // Every faulty name at once, from one socket; then, while they are pending, a good
    // name and our own zone must be answered at once.
    let mut names: Vec<String> = GARBAGE_KINDS
        .iter()
        .map(|k| format!("www.{k}.garbage."))
        .collect();
    names.push("www.slow.".into());
    names.push("www.silent.".into());
    let started = Instant::now();
    for (i, n) in names.iter().enumerate() {
        sock.send(&rd(100 + i as u16, n)).unwrap();
    }
    let t = Instant::now();
    let r = udp_exchange(&udp_client(res.addr), &rd(2, "other.good."))
        .expect("good name during faults");
    assert_eq!(answers(&parse(&r)), ["A 192.0.2.44"]);
    let r = udp_exchange(&udp_client(res.addr), &rd(3, "www.local.test."))
        .expect("own zone during faults");
    assert_eq!(answers(&parse(&r)), ["A 192.0.2.99"]);
    let quick = t.elapsed();
    assert!(
        quick < Duration::from_secs(2),
        "good answers took {quick:?} during upstream faults"
    );

    // Each faulty name: SERVFAIL with an EDE, within the resolver's 10 s deadline.
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut got: Vec<Option<(Duration, Vec<u8>)>> = vec![None; names.len()];
    let deadline = started + Duration::from_secs(12);
    let mut buf = [0u8; 4096];
    while got.iter().any(Option::is_none) && Instant::now() < deadline {
        if let Ok(n) = sock.recv(&mut buf) {
            let id = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
            if let Some(slot) = id.checked_sub(100).and_then(|i| got.get_mut(i)) {
                assert!(slot.is_none(), "two answers for {}", names[id - 100]);
                *slot = Some((started.elapsed(), buf[..n].to_vec()));
            }
        }
    }
    let mut report = Vec::new();
    for (name, g) in names.iter().zip(&got) {
        let (after, resp) = g
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no answer within 12 s"));
        let m = parse(resp);
        assert_eq!(
            m.metadata.response_code,
            hickory_proto::op::ResponseCode::ServFail,
            "{name}: {m:?}"
        );
        assert!(m.answers.is_empty(), "{name}: answers in a SERVFAIL");
        let (code, text) = ede(resp).unwrap_or_else(|| panic!("{name}: SERVFAIL without an EDE"));
        report.push(format!(
            "{name:<24} SERVFAIL after {:>5} ms, EDE {code} {text:?}",
            after.as_millis()
        ));
    }
    for line in &report {
        println!("{line}");
    }

    // Still serving, nothing crashed, upstream queries bounded.
    let r = udp_exchange(&udp_client(res.addr), &rd(4, "www.good.")).expect("after the faults");
    assert_eq!(answers(&parse(&r)), ["A 192.0.2.44"]);
    let out = run_control(&res.control, "stats");
    assert!(out.status.success());
    let stats = String::from_utf8_lossy(&out.stdout);
    let servfails = stat_value(&stats, "shardns_resolver_servfails_total");
    let upstream = stat_value(&stats, "shardns_resolver_upstream_queries_total");
    println!(
        "servfails {servfails}, upstream queries {upstream} for {} client queries",
        names.len() + 4
    );
    assert_eq!(servfails, names.len() as f64);
    assert!(
        upstream <= 64.0 * (names.len() + 4) as f64,
        "{upstream} upstream queries"
    );
    assert!(!res.log.lock().unwrap().contains("panicked"));
    let _ =
        TcpStream::connect_timeout(&res.addr, Duration::from_secs(1)).expect("TCP still accepted");
}
