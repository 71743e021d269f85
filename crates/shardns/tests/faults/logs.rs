//! Logs that cannot be written: standard error on /dev/full or on a pipe nobody reads, with
//! query logging on; the server must keep answering, reloading and counting, and stop
//! cleanly.

use crate::common::*;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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
