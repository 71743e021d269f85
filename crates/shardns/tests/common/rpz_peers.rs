//! The reference resolvers of the RPZ tests (`rpz.rs`, `rpz_bind.rs`): Unbound and BIND's
//! `named` with the same policy zone files as shardns, reaching the test's authoritative
//! servers either by forwarding one zone or from a loopback root; and `ask`, the one way
//! the tests put a question to any of them (from a chosen 127.0.0.x, UDP or TCP), reduced to
//! what is compared: RCODE, TC and the answer section sorted.
//!
//! Each peer runs in the foreground, killed by its PID when its guard drops (its log
//! printed if the test is failing). Never: any address outside 127.0.0.0/8.

use super::{capture_stderr, frame, parse, query, read_frame, tcp_from, udp_from, TempDir};
use std::fmt::Write as _;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A question: (client address, name, type, over TCP).
pub type Question = (Ipv4Addr, &'static str, u16, bool);

/// What a resolver answered: RCODE, TC, and the answer section sorted; `None`: no answer.
pub type Reply = Option<(u16, bool, Vec<String>)>;

/// Asks `server` one question with RD set (a dropped query is waited for 1.5 s).
pub fn ask(server: SocketAddr, (from, name, qtype, tcp): (Ipv4Addr, &str, u16, bool)) -> Reply {
    let mut q = query(0x4242, name, qtype, Some(1232));
    q[2] |= 0x01; // RD
    let bytes = if tcp {
        let mut s = tcp_from(from, server);
        s.write_all(&frame(&q)).unwrap();
        read_frame(&mut s).ok()?
    } else {
        let s = udp_from(from, server);
        s.set_read_timeout(Some(Duration::from_millis(1500)))
            .unwrap();
        super::udp_exchange(&s, &q)?
    };
    let m = parse(&bytes);
    let mut answers: Vec<String> = m
        .answers
        .iter()
        .map(|r| format!("{} {} {}", r.name, r.record_type(), r.data))
        .collect();
    answers.sort();
    Some((
        u16::from(m.metadata.response_code),
        m.metadata.truncation,
        answers,
    ))
}

/// How a peer reaches the test's data.
#[derive(Clone, Copy, Debug)]
pub enum Upstream {
    /// `test.` forwarded to this server (any port).
    Forward(SocketAddr),
    /// Iterating from a root server at this address, port 53 (the referrals' glue is port
    /// 53 too: Unbound cannot be told otherwise).
    Root(Ipv4Addr),
}

/// A policy zone as the peers are given it: its name, file and `policy nodata` override.
#[derive(Clone, Debug)]
pub struct PeerZone {
    pub name: &'static str,
    pub file: PathBuf,
    pub nodata: bool,
}

/// A running reference resolver; killed by PID on drop.
pub struct Peer {
    what: &'static str,
    child: Child,
    log: Arc<Mutex<String>>,
    pub addr: SocketAddr,
}

impl Peer {
    fn spawn(what: &'static str, mut cmd: Command, addr: SocketAddr, ready: &str) -> Self {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        let log = capture_stderr(&mut child);
        let me = Self {
            what,
            child,
            log,
            addr,
        };
        me.wait_for(ready);
        me
    }

    /// Waits (at most 20 s) until its log holds `needle`.
    pub fn wait_for(&self, needle: &str) {
        let end = Instant::now() + Duration::from_secs(20);
        while !self.log.lock().unwrap().contains(needle) {
            assert!(
                Instant::now() < end,
                "{} never logged {needle:?}:\n{}",
                self.what,
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to this child's PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- {} ---\n{}", self.what, self.log.lock().unwrap());
        }
    }
}

/// A root hints file naming one root server at `root` (port 53).
fn hints(dir: &TempDir, root: Ipv4Addr) -> PathBuf {
    dir.write(
        "peer-root.hints",
        &format!(". 3600000 NS a.root-servers.net.\na.root-servers.net. 3600000 A {root}\n"),
    )
}

/// Unbound on `listen` with `zones` (`rpz:` clauses, `module-config: "respip iterator"`).
pub fn start_unbound(
    bin: &Path,
    dir: &TempDir,
    listen: SocketAddr,
    upstream: Upstream,
    zones: &[PeerZone],
) -> Peer {
    let mut conf = format!(
        "server:\n  interface: {ip}\n  port: {port}\n  interface-automatic: no\n\
         \x20 do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  username: \"\"\n\
         \x20 chroot: \"\"\n  directory: \"{dir}\"\n  pidfile: \"\"\n  num-threads: 1\n\
         \x20 verbosity: 1\n  access-control: 127.0.0.0/8 allow\n\
         \x20 do-not-query-localhost: no\n  do-ip6: no\n\
         \x20 module-config: \"respip iterator\"\n  local-zone: \"test.\" nodefault\n{fence}",
        fence = super::unbound_fence(),
        ip = listen.ip(),
        port = listen.port(),
        dir = dir.path().display(),
    );
    match upstream {
        Upstream::Root(root) => {
            let _ = writeln!(conf, "  root-hints: \"{}\"", hints(dir, root).display());
        }
        Upstream::Forward(f) => {
            let _ = write!(
                conf,
                "forward-zone:\n  name: \"test.\"\n  forward-addr: {}@{}\n",
                f.ip(),
                f.port()
            );
        }
    }
    for z in zones {
        let _ = write!(
            conf,
            "rpz:\n  name: \"{}\"\n  zonefile: \"{}\"\n{}",
            z.name,
            z.file.display(),
            if z.nodata {
                "  rpz-action-override: nodata\n"
            } else {
                ""
            }
        );
    }
    conf.push_str("remote-control:\n  control-enable: no\n");
    let path = dir.write("unbound.conf", &conf);
    let mut cmd = Command::new(bin);
    cmd.arg("-d").arg("-c").arg(&path);
    Peer::spawn("unbound", cmd, listen, "start of service")
}

/// BIND's `named` on `listen` as a resolver with `zones` (`response-policy`, each zone a
/// primary zone read from its file), `qname-wait-recurse no` (the precedence shardns
/// follows), validation off, IPv4 only.
pub fn start_named(
    bin: &Path,
    dir: &TempDir,
    listen: SocketAddr,
    upstream: Upstream,
    zones: &[PeerZone],
) -> Peer {
    let work = dir.path().join("named");
    std::fs::create_dir_all(&work).unwrap();
    let policy: String = zones
        .iter()
        .map(|z| {
            let over = if z.nodata { " policy nodata" } else { "" };
            format!("zone \"{}\"{over}; ", z.name)
        })
        .collect();
    let mut conf = format!(
        "options {{\n  directory \"{w}\";\n  pid-file none;\n\
         \x20 session-keyfile \"{w}/session.key\";\n  managed-keys-directory \"{w}\";\n\
         \x20 listen-on port {port} {{ {ip}; }};\n  listen-on-v6 {{ none; }};\n\
         \x20 recursion yes;\n  allow-query {{ 127.0.0.0/8; }};\n\
         \x20 allow-recursion {{ 127.0.0.0/8; }};\n  dnssec-validation no;\n\
         \x20 notify no;\n  minimal-responses yes;\n\
         \x20 response-policy {{ {policy}}} qname-wait-recurse no;\n}};\ncontrols {{ }};\n",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
    );
    match upstream {
        Upstream::Root(root) => {
            let _ = writeln!(
                conf,
                "zone \".\" {{ type hint; file \"{}\"; }};",
                hints(dir, root).display()
            );
        }
        Upstream::Forward(f) => {
            let _ = writeln!(
                conf,
                "zone \"test.\" {{ type forward; forward only; forwarders {{ {} port {}; }}; }};",
                f.ip(),
                f.port()
            );
        }
    }
    for z in zones {
        let _ = writeln!(
            conf,
            "zone \"{}\" {{ type primary; file \"{}\"; }};",
            z.name,
            z.file.display()
        );
    }
    let path = work.join("named.conf");
    std::fs::write(&path, conf).expect("write named.conf");
    let mut cmd = Command::new(bin);
    cmd.arg("-g").arg("-4").arg("-c").arg(&path);
    // Its last start-up line (not "running on Linux", the second).
    let peer = Peer::spawn("named", cmd, listen, " running\n");
    // The policy zones are made ready apart, maybe after it: queries before would not be
    // rewritten.
    for z in zones {
        let name = z.name.trim_end_matches('.');
        peer.wait_for(&format!("rpz: {name}: reload done"));
    }
    peer
}

/// The answers two resolvers gave to the same questions that differ, one line each.
pub fn differences(qs: &[Question], ours: &[Reply], theirs: &[Reply], peer: &str) -> Vec<String> {
    qs.iter()
        .zip(ours.iter().zip(theirs))
        .filter(|(_, (a, b))| a != b)
        .map(|(q, (a, b))| format!("{q:?}: shardns {a:?}, {peer} {b:?}"))
        .collect()
}
