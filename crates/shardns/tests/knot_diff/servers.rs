//! The two servers: finding and configuring knotd, starting it and shardns on the same zones
//! (killed on drop), waiting until both answer, and the client that asks them a query over
//! UDP or TCP.

use crate::common::{self, frame, Daemon};
use crate::queries::Q;
use crate::responses::{parse_response, Resp};
use crate::ZONES;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub(crate) struct Client {
    addr: SocketAddr,
    pub(crate) udp: UdpSocket,
}

impl Client {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        let udp = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP client socket");
        udp.set_read_timeout(Some(Duration::from_millis(400)))
            .expect("timeout");
        Self { addr, udp }
    }

    /// Sends `wire` (the query `q`) and parses the response; bounded retries.
    pub(crate) fn ask(&self, q: &Q, wire: &[u8]) -> Result<Resp, String> {
        let mut last = String::from("no response");
        for _ in 0..3 {
            let got = if q.tcp {
                self.exchange_tcp(wire)
            } else {
                self.exchange_udp(q.id, wire)
            };
            match got {
                Ok(buf) => return parse_response(q, &buf),
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

    fn exchange_tcp(&self, wire: &[u8]) -> Result<Vec<u8>, String> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1))
            .map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
        s.write_all(&frame(wire))
            .map_err(|e| format!("write: {e}"))?;
        let mut len = [0u8; 2];
        s.read_exact(&mut len)
            .map_err(|e| format!("read length: {e}"))?;
        let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
        s.read_exact(&mut buf)
            .map_err(|e| format!("read message: {e}"))?;
        Ok(buf)
    }
}

/// Waits (bounded) until the server answers the SOA of every zone authoritatively.
pub(crate) fn wait_ready(client: &Client, server: &mut Daemon) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 1u16;
    loop {
        let ready = ZONES.iter().all(|(apex, _)| {
            id = id.wrapping_add(1);
            let q = Q {
                name: apex.to_string(),
                qtype: 6,
                qclass: 1,
                edns: None,
                tcp: false,
                id,
            };
            matches!(client.exchange_udp(id, &q.to_wire()).map(|b| parse_response(&q, &b)),
                Ok(Ok(r)) if r.rcode == 0 && r.aa && !r.answer().is_empty())
        });
        if ready {
            return;
        }
        server.check_alive();
        assert!(
            Instant::now() < deadline,
            "{} did not answer within 20 s; its log:\n{}",
            server.name,
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A fresh directory for the servers' configuration, databases and logs.
pub(crate) fn work_dir() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("knot_diff-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("knot-db")).expect("create work dir");
    dir
}

/// knotd serving the differential test's zones on 127.0.0.1 at `port`.
pub(crate) fn start_knot(knotd: &Path, work: &Path, zone_dir: &Path, port: u16) -> Daemon {
    let files: Vec<(&str, PathBuf)> = ZONES
        .iter()
        .map(|(apex, file)| (*apex, zone_dir.join(file)))
        .collect();
    let zones: Vec<(&str, &Path)> = files.iter().map(|(a, f)| (*a, f.as_path())).collect();
    common::start_knot(
        knotd,
        work,
        SocketAddr::from(([127, 0, 0, 1], port)),
        &zones,
    )
}

pub(crate) fn start_shardns(work: &Path, zone_dir: &Path, port: u16) -> Daemon {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shardns"));
    cmd.arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--workers")
        .arg("1");
    cmd.arg("--control").arg(work.join("shardns.ctl"));
    for (apex, file) in ZONES {
        cmd.arg("--zone")
            .arg(format!("{apex}={}", zone_dir.join(file).display()));
    }
    Daemon::spawn("shardns", cmd, work.join("shardns.log"))
}
