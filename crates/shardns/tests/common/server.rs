//! The `shardns` binary under test: start `shardns serve` on loopback, wait until it is
//! ready, read its log and statistics, signal it, and kill it on drop (printing its log when
//! the test fails).

use super::{free_port, free_port_on, TempDir};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_shardns");

/// A running `shardns serve`; killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    /// The (first) address it listens on: 127.0.0.1 for [`Server::start`], the one given
    /// to [`Server::start_on`].
    pub addr: SocketAddr,
    pub control: PathBuf,
    log: Arc<Mutex<String>>,
    pub dir: TempDir,
}

impl Server {
    /// Starts `shardns serve` on 127.0.0.1 and ::1 at a fresh port, with a control socket
    /// in its own directory, plus `args`; waits until it is ready.
    pub fn start(tag: &str, args: &[&str]) -> Self {
        Self::start_in(TempDir::new(tag), args)
    }

    /// As [`Server::start`], in a directory the caller prepared (zone files, config).
    pub fn start_in(dir: TempDir, args: &[&str]) -> Self {
        let port = free_port();
        let listen = [
            SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
        ];
        Self::spawn(dir, &listen, None, args)
    }

    /// Starts `shardns serve` on `ip` alone, at a free port, so that clients on other
    /// 127.0.0.x addresses ([`udp_from`], [`tcp_from`]) are told apart by address; with
    /// `config` (TOML, written into the server's directory) if given, plus `args`.
    pub fn start_on(tag: &str, ip: Ipv4Addr, config: Option<&str>, args: &[&str]) -> Self {
        let dir = TempDir::new(tag);
        let listen = [SocketAddr::from((ip, free_port_on(ip)))];
        let config = config.map(|text| dir.write("shardns.toml", text));
        Self::spawn(dir, &listen, config.as_deref(), args)
    }

    /// Starts `shardns serve` on exactly `listen`, plus `args` (for tests that must use
    /// given ports).
    pub fn start_at(tag: &str, listen: &[SocketAddr], args: &[&str]) -> Self {
        Self::spawn(TempDir::new(tag), listen, None, args)
    }

    /// As [`Server::start_at`], with environment variables `env` set for the server (e.g.
    /// the test clock skew of `shardns_sys::TEST_CLOCK_SKEW`).
    pub fn start_at_env(
        tag: &str,
        listen: &[SocketAddr],
        args: &[&str],
        env: &[(&str, &Path)],
    ) -> Self {
        Self::spawn_env(TempDir::new(tag), listen, None, args, env)
    }

    fn spawn(dir: TempDir, listen: &[SocketAddr], config: Option<&Path>, args: &[&str]) -> Self {
        Self::spawn_env(dir, listen, config, args, &[])
    }

    fn spawn_env(
        dir: TempDir,
        listen: &[SocketAddr],
        config: Option<&Path>,
        args: &[&str],
        env: &[(&str, &Path)],
    ) -> Self {
        let control = dir.path().join("ctl");
        let mut cmd = Command::new(BIN);
        cmd.arg("serve");
        for addr in listen {
            cmd.arg("--listen").arg(addr.to_string());
        }
        cmd.arg("--control").arg(&control);
        if let Some(path) = config {
            cmd.arg("--config").arg(path);
        }
        cmd.args(args)
            .envs(env.iter().copied())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start shardns");
        let log = capture_stderr(&mut child);
        let mut server = Self {
            child,
            port: listen[0].port(),
            addr: listen[0],
            control,
            log,
            dir,
        };
        server.wait_for_log("shardns ready", Duration::from_secs(20));
        server
    }

    pub fn addr4(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }
    pub fn addr6(&self) -> SocketAddr {
        SocketAddr::from((Ipv6Addr::LOCALHOST, self.port))
    }
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the log contains `needle`; panics (with the log) after `limit` or if the
    /// server exits.
    pub fn wait_for_log(&mut self, needle: &str, limit: Duration) {
        let end = Instant::now() + limit;
        loop {
            if self.log().contains(needle) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                std::thread::sleep(Duration::from_millis(100));
                panic!(
                    "shardns exited ({status}) before logging {needle:?}:\n{}",
                    self.log()
                );
            }
            if Instant::now() > end {
                panic!(
                    "shardns did not log {needle:?} within {limit:?}:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `shardns <command> --control <socket>`.
    pub fn control(&self, command: &str) -> Output {
        run_control(&self.control, command)
    }

    /// Reads one counter from `shardns stats` (summing every label set if `name` has none).
    pub fn stat(&self, name: &str) -> f64 {
        read_stat(&self.control, name)
    }

    /// Waits until counter `name` reads `want`; panics after `limit`.
    pub fn wait_for_stat(&self, name: &str, want: f64, limit: Duration) {
        let end = Instant::now() + limit;
        loop {
            let v = self.stat(name);
            if v == want {
                return;
            }
            assert!(Instant::now() < end, "{name} is {v}, expected {want}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGHUP.
    pub fn sighup(&self) {
        let ok = Command::new("kill")
            .arg("-HUP")
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status();
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s;
            }
            assert!(
                Instant::now() < end,
                "shardns did not stop on SIGTERM:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- shardns log ---\n{}--- end of log ---", self.log());
        }
    }
}

/// Runs `shardns <command> --control <control>` (the socket of any shardns a test started).
pub fn run_control(control: &Path, command: &str) -> Output {
    Command::new(BIN)
        .arg(command)
        .arg("--control")
        .arg(control)
        .output()
        .unwrap()
}

/// Reads one counter from `shardns stats` through the socket `control` (summing every label
/// set if `name` has none).
pub fn read_stat(control: &Path, name: &str) -> f64 {
    let out = run_control(control, "stats");
    assert!(out.status.success(), "stats failed: {out:?}");
    stat_value(&String::from_utf8_lossy(&out.stdout), name)
}

/// Collects a child's standard error (which must be piped) into a shared string, line by
/// line, on a thread of its own.
pub fn capture_stderr(child: &mut Child) -> Arc<Mutex<String>> {
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().expect("stderr is piped");
    let sink = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let mut l = sink.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    log
}

/// The value of `name` in Prometheus text (the sum over its label sets).
pub fn stat_value(text: &str, name: &str) -> f64 {
    let mut sum = 0.0;
    let mut found = false;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (key, value) = line.rsplit_once(' ').unwrap();
        if key == name || key.strip_prefix(name).is_some_and(|r| r.starts_with('{')) {
            sum += value.parse::<f64>().unwrap();
            found = true;
        }
    }
    assert!(found, "no {name} in stats:\n{text}");
    sum
}

/// An authoritative shardns for `other.test.` (`www` A 192.0.2.77) on 127.0.0.1, for tests
/// of the resolver role over some transport: the server, and the `--forward` argument that
/// sends `other.test` to it.
pub fn other_test_upstream(tag: &str) -> (Server, String) {
    let dir = TempDir::new(&format!("{tag}-zone"));
    let zone = dir.write(
        "other.test.zone",
        "$TTL 300\n@ IN SOA ns.other.test. admin.other.test. 1 3600 600 86400 60\n\
         @ IN NS ns.other.test.\nns IN A 127.0.0.1\nwww IN A 192.0.2.77\n",
    );
    let zone_arg = format!("other.test={}", zone.display());
    let auth = Server::start_on(
        &format!("{tag}-up"),
        Ipv4Addr::LOCALHOST,
        None,
        &["--zone", &zone_arg, "--workers", "1"],
    );
    let forward = format!("other.test={}", auth.addr);
    (auth, forward)
}
