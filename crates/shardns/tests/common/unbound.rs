//! A validating Unbound as an outside judge of signed zones: fenced to loopback, one trust
//! anchor (a parent's key), stub zones at the lab's servers; asked questions whose answers
//! must be secure (AD).

use super::{dig, free_port_on, Daemon};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Every IPv4 address but 127.0.0.0/8, and all of IPv6: Unbound asks loopback alone.
const FENCE: &[&str] = &[
    "0.0.0.0/2",
    "64.0.0.0/3",
    "96.0.0.0/4",
    "112.0.0.0/5",
    "120.0.0.0/6",
    "124.0.0.0/7",
    "126.0.0.0/8",
    "128.0.0.0/1",
    "::/0",
];

/// The `do-not-query-address` lines of a `server:` clause that fence an Unbound to
/// 127.0.0.0/8 (every lab Unbound has them: it never sends a query off this machine).
pub fn unbound_fence() -> String {
    FENCE
        .iter()
        .map(|b| format!("  do-not-query-address: {b}\n"))
        .collect()
}

/// A validating Unbound on 127.0.0.14 (its own port), killed on drop.
pub struct ValidatingUnbound {
    pub daemon: Daemon,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl ValidatingUnbound {
    /// Starts `unbound` with its files in `dir`: `anchor` (`zone`, DNSKEY rdata) its only
    /// trust anchor, each of `stubs` (a zone and the servers Unbound asks for it, picking
    /// among them) a stub zone. The default local zones of RFC 6761 (`test.` is one) are
    /// turned off for the stubs' names. The cache keeps records for their TTLs (the labs'
    /// are seconds), so that it holds what a resolver's cache may hold during a roll.
    pub fn start(
        unbound: &Path,
        dir: &Path,
        anchor: (&str, &str),
        stubs: &[(&str, &[SocketAddr])],
    ) -> Self {
        let ip = Ipv4Addr::new(127, 0, 0, 14);
        let addr = SocketAddr::from((ip, free_port_on(ip)));
        let mut conf = format!(
            "server:\n  interface: {ip}@{port}\n  interface-automatic: no\n  do-daemonize: no\n\
             \x20 use-syslog: no\n  logfile: \"\"\n  username: \"\"\n  chroot: \"\"\n\
             \x20 directory: \"{dir}\"\n  pidfile: \"\"\n  num-threads: 1\n  verbosity: 1\n\
             \x20 access-control: 127.0.0.0/8 allow\n  do-ip6: no\n  do-not-query-localhost: no\n\
             \x20 module-config: \"validator iterator\"\n  val-permissive-mode: no\n\
             \x20 auto-trust-anchor-file: \"\"\n  trust-anchor: \"{zone} DNSKEY {key}\"\n\
             \x20 val-log-level: 2\n",
            port = addr.port(),
            dir = dir.display(),
            zone = anchor.0,
            key = anchor.1,
        );
        conf.push_str(&unbound_fence());
        for (zone, _) in stubs {
            conf.push_str(&format!("  local-zone: \"{zone}\" nodefault\n"));
        }
        for (zone, servers) in stubs {
            conf.push_str(&format!("stub-zone:\n  name: \"{zone}\"\n"));
            for s in *servers {
                conf.push_str(&format!("  stub-addr: {}@{}\n", s.ip(), s.port()));
            }
        }
        conf.push_str("remote-control:\n  control-enable: no\n");
        let path = dir.join("unbound.conf");
        std::fs::write(&path, conf).unwrap();
        let mut cmd = Command::new(unbound);
        cmd.arg("-d").arg("-c").arg(&path);
        let mut daemon = Daemon::spawn("unbound", cmd, dir.join("unbound.log"));
        let end = Instant::now() + Duration::from_secs(20);
        while !daemon.log().contains("start of service") {
            daemon.check_alive();
            assert!(
                Instant::now() < end,
                "unbound did not start:\n{}",
                daemon.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { daemon, addr }
    }

    /// Asks `name`/`qtype` (DO set): `Err` with the answer and Unbound's log unless the
    /// answer has `rcode` and AD (validated secure).
    pub fn secure(&mut self, name: &str, qtype: &str, rcode: &str) -> Result<(), String> {
        let out = dig(self.addr, &["+dnssec", "+rec", name, qtype]);
        self.daemon.check_alive();
        let flags = out.lines().find(|l| l.contains(";; flags:"));
        let ad = flags.is_some_and(|l| l.split(';').nth(2).is_some_and(|f| f.contains(" ad")));
        if out.contains(&format!("status: {rcode},")) && ad {
            return Ok(());
        }
        Err(format!(
            "validating unbound: {name} {qtype}, not {rcode} with AD:\n{out}\nits log:\n{}",
            self.daemon.log()
        ))
    }
}
