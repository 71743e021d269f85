//! The servers this test runs, each a [`Daemon`] killed by PID on drop (also when a test
//! fails): knotd (the reference, serving pre-signed zones with its signing off, transfers
//! allowed to loopback so that the test can read the zone as loaded), `shardns serve`, and
//! Unbound as a validating resolver fenced to loopback; and the client that asks them.

use crate::common::{frame, free_port, free_port_on, Daemon};
use crate::wire::{parse_response, record, Resp, Rr, AXFR, Q, SOA};
use hickory_proto::op::Message;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// Zones a server loads: (apex, file).
pub(crate) type Zones = [(String, PathBuf)];

/// knotd on `listen` serving `zones` as they are (no signing), transfers allowed to
/// 127.0.0.0/8; configuration, database and log in `work/<tag>`.
pub(crate) fn start_knot(
    knotd: &Path,
    work: &Path,
    tag: &str,
    listen: SocketAddr,
    zones: &Zones,
) -> Daemon {
    let dir = work.join(tag);
    std::fs::create_dir_all(dir.join("db")).expect("create knot dir");
    let mut conf = format!(
        "server:\n    rundir: \"{w}\"\n    pidfile: \"{w}/knot.pid\"\n    listen: {ip}@{port}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         database:\n    storage: \"{w}/db\"\n\
         acl:\n  - id: loopback\n    address: 127.0.0.0/8\n    action: transfer\n\
         template:\n  - id: default\n    storage: \"{w}\"\n    zonefile-sync: -1\n\
         \x20   zonefile-load: whole\n    journal-content: none\n    dnssec-signing: off\n\
         \x20   acl: loopback\n\
         zone:\n",
        w = dir.display(),
        ip = listen.ip(),
        port = listen.port(),
    );
    for (apex, file) in zones {
        let _ = write!(
            conf,
            "  - domain: {apex}\n    file: \"{}\"\n",
            file.display()
        );
    }
    let path = dir.join("knot.conf");
    std::fs::write(&path, conf).expect("write knot.conf");
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&path);
    Daemon::spawn(&format!("knotd ({tag})"), cmd, dir.join("knotd.log"))
}

/// `shardns serve` on `listen` with one worker, serving `zones`.
pub(crate) fn start_shardns(work: &Path, listen: SocketAddr, zones: &Zones) -> Daemon {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shardns"));
    cmd.arg("serve")
        .arg("--listen")
        .arg(listen.to_string())
        .arg("--workers")
        .arg("1")
        .arg("--control")
        .arg(work.join("shardns.ctl"))
        .env_remove("RUST_LOG");
    for (apex, file) in zones {
        cmd.arg("--zone").arg(format!("{apex}={}", file.display()));
    }
    Daemon::spawn("shardns", cmd, work.join("shardns.log"))
}

/// A free port on 127.0.0.1 for one server of this test.
pub(crate) fn port() -> u16 {
    free_port()
}

/// A free port on `ip`.
pub(crate) fn port_on(ip: Ipv4Addr) -> u16 {
    free_port_on(ip)
}

/// Asks one server: UDP or TCP as the query says, bounded retries and timeouts.
pub(crate) struct Client {
    pub(crate) addr: SocketAddr,
    udp: UdpSocket,
}

static NEXT_ID: AtomicU16 = AtomicU16::new(1);

impl Client {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a UDP client socket");
        udp.set_read_timeout(Some(Duration::from_millis(1500)))
            .expect("timeout");
        Self { addr, udp }
    }

    /// Sends `q` (with a fresh id) and parses the response; at most 3 tries.
    pub(crate) fn ask(&self, q: &Q) -> Result<Resp, String> {
        let q = Q {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            ..q.clone()
        };
        let wire = q.to_wire();
        let mut last = String::from("no response");
        for _ in 0..3 {
            let got = if q.tcp {
                self.exchange_tcp(&wire)
            } else {
                self.exchange_udp(q.id, &wire)
            };
            match got {
                Ok(buf) => return parse_response(&q, &buf),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn exchange_udp(&self, id: u16, wire: &[u8]) -> Result<Vec<u8>, String> {
        self.udp
            .send_to(wire, self.addr)
            .map_err(|e| format!("send: {e}"))?;
        let mut buf = vec![0u8; 65535];
        // Skip late answers to earlier tries (other ids); at most a few per query.
        for _ in 0..8 {
            let (n, from) = self
                .udp
                .recv_from(&mut buf)
                .map_err(|e| format!("no response ({e})"))?;
            if from == self.addr && n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id {
                buf.truncate(n);
                return Ok(buf);
            }
        }
        Err("only stray datagrams".into())
    }

    fn connect(&self) -> Result<TcpStream, String> {
        let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))
            .map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        Ok(s)
    }

    fn exchange_tcp(&self, wire: &[u8]) -> Result<Vec<u8>, String> {
        let mut s = self.connect()?;
        s.write_all(&frame(wire))
            .map_err(|e| format!("write: {e}"))?;
        read_frame(&mut s)
    }

    /// The zone `apex` by AXFR: every record, normalised as responses are.
    pub(crate) fn axfr(&self, apex: &str) -> Result<Vec<Rr>, String> {
        let q = Q {
            name: apex.to_string(),
            qtype: AXFR,
            edns: None,
            tcp: true,
            rd: false,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        let mut s = self.connect()?;
        s.write_all(&frame(&q.to_wire()))
            .map_err(|e| format!("write: {e}"))?;
        let mut records = Vec::new();
        let mut soas = 0;
        // A zone of this test fits in a few messages; bounded all the same.
        for _ in 0..100 {
            let m = Message::from_vec(&read_frame(&mut s)?).map_err(|e| format!("AXFR: {e}"))?;
            if m.metadata.response_code != hickory_proto::op::ResponseCode::NoError {
                return Err(format!("AXFR of {apex}: {}", m.metadata.response_code));
            }
            for r in &m.answers {
                let rr = record(r)?;
                if rr.rtype == SOA {
                    soas += 1;
                    if soas == 2 {
                        return Ok(records);
                    }
                }
                records.push(rr);
            }
        }
        Err(format!("AXFR of {apex} did not end"))
    }
}

fn read_frame(s: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len)
        .map_err(|e| format!("read length: {e}"))?;
    let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut buf)
        .map_err(|e| format!("read message: {e}"))?;
    Ok(buf)
}

/// Waits (at most 20 s) until `server` answers the SOA of every apex authoritatively.
pub(crate) fn wait_ready(client: &Client, apexes: &[&str], daemon: &mut Daemon) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = apexes.iter().all(|apex| {
            let q = Q {
                edns: None,
                ..Q::dnssec(apex, SOA)
            };
            matches!(client.ask(&q), Ok(r) if r.rcode == 0 && r.aa && !r.answer().is_empty())
        });
        if ready {
            return;
        }
        daemon.check_alive();
        assert!(
            Instant::now() < deadline,
            "{} did not answer within 20 s; its log:\n{}",
            daemon.name,
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (at most 20 s) until `daemon`'s log contains `needle`.
pub(crate) fn wait_log(daemon: &mut Daemon, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !daemon.log().contains(needle) {
        daemon.check_alive();
        assert!(
            Instant::now() < deadline,
            "{} did not log {needle:?} within 20 s; its log:\n{}",
            daemon.name,
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Unbound on `listen`, validating (`validator iterator`, not permissive) with `anchors` (DS
/// records in presentation form) as its only trust anchors, each zone of `stubs` (apex,
/// server) a stub zone, and every address but 127.0.0.0/8 fenced off; its log in `dir`.
pub(crate) fn start_unbound(
    unbound: &Path,
    dir: &Path,
    listen: SocketAddr,
    anchors: &[String],
    stubs: &[(&str, SocketAddr)],
) -> Daemon {
    std::fs::create_dir_all(dir).expect("create unbound dir");
    let mut conf = format!(
        "server:\n  interface: {ip}@{port}\n  interface-automatic: no\n  do-daemonize: no\n\
         \x20 use-syslog: no\n  logfile: \"\"\n  username: \"\"\n  chroot: \"\"\n\
         \x20 directory: \"{dir}\"\n  pidfile: \"\"\n  num-threads: 1\n  verbosity: 1\n\
         \x20 val-log-level: 2\n  access-control: 127.0.0.0/8 allow\n  do-ip6: no\n\
         \x20 do-not-query-localhost: no\n  module-config: \"validator iterator\"\n\
         \x20 val-permissive-mode: no\n  auto-trust-anchor-file: \"\"\n",
        ip = listen.ip(),
        port = listen.port(),
        dir = dir.display()
    );
    conf.push_str(&crate::common::unbound_fence());
    for anchor in anchors {
        let _ = writeln!(conf, "  trust-anchor: \"{anchor}\"");
    }
    for (apex, server) in stubs {
        let _ = write!(
            conf,
            "stub-zone:\n  name: \"{apex}\"\n  stub-addr: {}@{}\n",
            server.ip(),
            server.port()
        );
    }
    conf.push_str("remote-control:\n  control-enable: no\n");
    let path = dir.join("unbound.conf");
    std::fs::write(&path, conf).expect("write unbound.conf");
    let mut cmd = Command::new(unbound);
    cmd.arg("-d").arg("-c").arg(&path);
    let mut d = Daemon::spawn(&format!("unbound@{listen}"), cmd, dir.join("unbound.log"));
    wait_log(&mut d, "start of service");
    d
}
