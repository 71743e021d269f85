//! Helpers for the end-to-end tests: start the real `shardns` binary on loopback with ports
//! of its own, kill it on drop (also when a test fails), send raw queries over UDP and TCP
//! (also from a chosen 127.0.0.x address), and parse responses with hickory-proto, a parser
//! that is not ours.
//!
//! Never: any address outside loopback (127.0.0.0/8, ::1), unbounded waits, or processes
//! left running.
#![allow(dead_code, unreachable_pub)]

use hickory_proto::op::Message;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_shardns");

/// A port free for UDP and TCP on both 127.0.0.1 and ::1, never handed out twice by this
/// process.
pub fn free_port() -> u16 {
    static TAKEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    for _ in 0..200 {
        let Ok(probe) = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)) else {
            continue;
        };
        let port = probe.local_addr().unwrap().port();
        let ok = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
            && UdpSocket::bind((Ipv6Addr::LOCALHOST, port)).is_ok()
            && TcpListener::bind((Ipv6Addr::LOCALHOST, port)).is_ok();
        let mut taken = TAKEN.lock().unwrap();
        if ok && taken.get_or_insert_with(HashSet::new).insert(port) {
            return port;
        }
    }
    panic!("no free port found");
}

/// A port free for UDP and TCP on `ip`, never handed out twice by this process.
pub fn free_port_on(ip: Ipv4Addr) -> u16 {
    static TAKEN: Mutex<Option<HashSet<(Ipv4Addr, u16)>>> = Mutex::new(None);
    for _ in 0..200 {
        let Ok(probe) = UdpSocket::bind((ip, 0)) else {
            continue;
        };
        let port = probe.local_addr().unwrap().port();
        let ok = TcpListener::bind((ip, port)).is_ok();
        if ok
            && TAKEN
                .lock()
                .unwrap()
                .get_or_insert_with(HashSet::new)
                .insert((ip, port))
        {
            return port;
        }
    }
    panic!("no free port on {ip}");
}

/// A scratch directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("shardns-e2e-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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

    fn spawn(dir: TempDir, listen: &[SocketAddr], config: Option<&Path>, args: &[&str]) -> Self {
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
        Command::new(BIN)
            .arg(command)
            .arg("--control")
            .arg(&self.control)
            .output()
            .unwrap()
    }

    /// Reads one counter from `shardns stats` (summing every label set if `name` has none).
    pub fn stat(&self, name: &str) -> f64 {
        let out = self.control("stats");
        assert!(out.status.success(), "stats failed: {out:?}");
        stat_value(&String::from_utf8_lossy(&out.stdout), name)
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

/// A query for `name` (presentation form) and type `qtype`; with an OPT record if `edns`
/// gives a UDP payload size.
pub fn query(id: u16, name: &str, qtype: u16, edns: Option<u16>) -> Vec<u8> {
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x00, 0x00]); // QUERY, RD clear
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(&u16::from(edns.is_some()).to_be_bytes());
    for label in name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    if let Some(size) = edns {
        m.push(0); // root owner
        m.extend_from_slice(&41u16.to_be_bytes());
        m.extend_from_slice(&size.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    m
}

/// A UDP socket on `ip`, connected to `server`, with a receive timeout.
pub fn udp_from(ip: Ipv4Addr, server: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.connect(server).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s
}

/// A TCP connection to `server` from address `ip` (std cannot bind before connecting),
/// with a read timeout.
pub fn tcp_from(ip: Ipv4Addr, server: SocketAddr) -> TcpStream {
    let SocketAddr::V4(server) = server else {
        panic!("IPv4 only")
    };
    let sin = |a: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(a).to_be(),
        },
        sin_zero: [0; 8],
    };
    let (local, remote) = (sin(ip, 0), sin(*server.ip(), server.port()));
    let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor we create; each address is a valid
    // sockaddr_in of the length passed; the descriptor is owned by the TcpStream at once,
    // so it is closed on every path.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let rc = libc::bind(fd, (&raw const local).cast(), len);
        assert_eq!(rc, 0, "bind {ip}: {}", std::io::Error::last_os_error());
        let rc = libc::connect(fd, (&raw const remote).cast(), len);
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
    }
}

/// A connected UDP client socket with a receive timeout.
pub fn udp_client(server: SocketAddr) -> UdpSocket {
    let local: SocketAddr = if server.is_ipv6() {
        "[::1]:0".parse().unwrap()
    } else {
        "127.0.0.1:0".parse().unwrap()
    };
    let s = UdpSocket::bind(local).unwrap();
    s.connect(server).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s
}

/// One UDP exchange; `None` on timeout.
pub fn udp_exchange(sock: &UdpSocket, msg: &[u8]) -> Option<Vec<u8>> {
    let id = &msg[..2];
    sock.send(msg).unwrap();
    let mut buf = vec![0u8; 65535];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) if n >= 2 && &buf[..2] == id => return Some(buf[..n].to_vec()),
            Ok(_) => continue, // a late answer to an earlier query
            Err(_) => return None,
        }
    }
}

/// Sends `msgs` framed in one write on a new TCP connection and reads as many responses.
pub fn tcp_exchange(server: SocketAddr, msgs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(3)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp_exchange_on(&mut s, msgs)
}

/// As [`tcp_exchange`], on an open connection.
pub fn tcp_exchange_on(s: &mut TcpStream, msgs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for m in msgs {
        out.extend_from_slice(&(m.len() as u16).to_be_bytes());
        out.extend_from_slice(m);
    }
    s.write_all(&out).unwrap();
    (0..msgs.len())
        .map(|_| read_frame(s).expect("a TCP response"))
        .collect()
}

/// Reads one length-prefixed message.
pub fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len)?;
    let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut msg)?;
    Ok(msg)
}

/// Parses a response with hickory-proto.
pub fn parse(buf: &[u8]) -> Message {
    Message::from_vec(buf).unwrap_or_else(|e| panic!("hickory cannot parse {buf:02x?}: {e}"))
}

/// Answer records as `type rdata` strings, sorted.
pub fn answers(m: &Message) -> Vec<String> {
    let mut v: Vec<String> = m
        .answers
        .iter()
        .map(|r| format!("{} {}", r.record_type(), r.data))
        .collect();
    v.sort();
    v
}

/// Runs `dig` against the server with one try and a short timeout; returns stdout.
pub fn dig(server: SocketAddr, args: &[&str]) -> String {
    let out = Command::new("dig")
        .arg(format!("@{}", server.ip()))
        .arg("-p")
        .arg(server.port().to_string())
        .args(["+time=3", "+tries=1"])
        .args(args)
        .output()
        .expect("run dig");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `kdig` likewise.
pub fn kdig(server: SocketAddr, args: &[&str]) -> String {
    String::from_utf8_lossy(&kdig_output(server, args).stdout).into_owned()
}

/// Runs `kdig` likewise; its whole output (it reports a failed transfer's RCODE on
/// standard error).
pub fn kdig_output(server: SocketAddr, args: &[&str]) -> Output {
    Command::new("kdig")
        .arg(format!("@{}", server.ip()))
        .arg("-p")
        .arg(server.port().to_string())
        .args(["+time=3", "+retry=0"])
        .args(args)
        .output()
        .expect("run kdig")
}

/// Lines of `dig +short` output, sorted.
pub fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v
}

/// True if the server closed `s` (EOF or reset) within `limit`, sending nothing first.
pub fn closed_by_server(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}

/// `name` in uncompressed wire form (labels split on dots; the root label added).
pub fn wire_name(name: &str) -> Vec<u8> {
    let mut w = Vec::new();
    for l in name.split('.').filter(|l| !l.is_empty()) {
        w.push(l.len() as u8);
        w.extend_from_slice(l.as_bytes());
    }
    w.push(0);
    w
}

/// A peer server run by a test (knotd, a second shardns...): its output goes to a log file,
/// and it is killed on drop, also when the test fails.
pub struct Daemon {
    pub name: String,
    child: Child,
    log: PathBuf,
}

impl Daemon {
    /// Starts `cmd` with stdout and stderr in `log`.
    pub fn spawn(name: &str, mut cmd: Command, log: PathBuf) -> Self {
        let out = std::fs::File::create(&log).expect("create log");
        let err = out.try_clone().expect("clone log handle");
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Self {
            name: name.to_string(),
            child,
            log,
        }
    }

    /// Everything it has written so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (bounded by `limit`) for it to exit; its status, or `None` if still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Panics, with its log, if it has exited.
    pub fn check_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited early ({status}); its log:\n{}",
                self.name,
                self.log()
            );
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A program (e.g. `knotd`): `$ENV_VAR` if set, else the first on PATH or in the sbin
/// directories.
pub fn find_program(name: &str, env_var: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env_var) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
