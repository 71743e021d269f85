//! A resolver whose upstream servers (the fakes in `upstream_fakes`) answer garbage, answer
//! too late or never answer: every such name gets SERVFAIL with an Extended DNS Error within
//! the resolution deadline, while good names and the resolver's own zone are answered at once.

use crate::common::*;
use crate::upstream_fakes::{fake_port, start_fakes, GARBAGE_KINDS, QMIN_KINDS};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        .args([
            "--workers",
            "2",
            "--recursion",
            // The default local zone test. (RFC 6761, as Unbound) would answer the names.
            "--local-zone",
            "test. nodefault",
            "--allow-loopback-upstreams",
            "--no-validation",
            "--root-hints",
        ])
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

/// Issue 30, defects 1 and 6, against real sockets: a server that answers the minimised
/// question `<kind>.garbage. A` with NOERROR without AA, SERVFAIL, REFUSED or NXDOMAIN is
/// asked the full name, which resolves (all but NXDOMAIN used to be SERVFAIL, EDE 22); an
/// upward referral with AA is a lame answer, SERVFAIL with EDE 22 (it used to be NOERROR
/// with no data).
#[test]
fn bad_answers_to_minimised_questions_and_upward_referrals() {
    let port = fake_port();
    let _fakes = start_fakes(port);
    let dir = TempDir::new("faults-qmin");
    let res = start_resolver(&dir, port);
    let ask = |id: u16, name: &str| {
        let mut q = query(id, name, 1, Some(1232));
        q[2] |= 0x01;
        udp_exchange(&udp_client(res.addr), &q).unwrap_or_else(|| panic!("{name} unanswered"))
    };
    for (i, kind) in QMIN_KINDS.iter().enumerate() {
        let name = format!("www.{kind}.garbage.");
        let r = ask(10 + i as u16, &name);
        assert_eq!(answers(&parse(&r)), ["A 192.0.2.44"], "{name}");
    }
    let r = ask(20, "www.upwardaa.garbage.");
    let m = parse(&r);
    assert_eq!(
        m.metadata.response_code,
        hickory_proto::op::ResponseCode::ServFail,
        "{m:?}"
    );
    assert_eq!(ede(&r).map(|e| e.0), Some(22));
}
