//! Knot DNS as the reference server: a `knotd` configuration for a set of zone files on one
//! loopback address, started as a [`Daemon`] (killed on drop), and a bounded wait until it
//! answers.

use super::{find_program, parse, query, udp_client, udp_exchange, Daemon};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// `knotd`: `$KNOTD` if set, else the first on PATH or in the sbin directories.
pub fn find_knotd() -> Option<PathBuf> {
    find_program("knotd", "KNOTD")
}

/// Starts `knotd` on `listen` serving `zones` (apex, file), unsigned, with its database,
/// control socket and log in `work`; one worker of each kind.
pub fn start_knot(
    knotd: &Path,
    work: &Path,
    listen: SocketAddr,
    zones: &[(&str, &Path)],
) -> Daemon {
    let mut rest = format!(
        "template:\n  - id: default\n    storage: \"{w}\"\n    zonefile-sync: -1\n\
         \x20   zonefile-load: whole\n    journal-content: none\n    dnssec-signing: off\n\
         zone:\n",
        w = work.display(),
    );
    for (apex, file) in zones {
        let _ = write!(
            rest,
            "  - domain: {apex}\n    file: \"{}\"\n",
            file.display()
        );
    }
    spawn_knot(knotd, work, listen, "info", &rest)
}

/// Starts `knotd` on `listen` with its database, control socket, pid file and log (at
/// `log_level`) in `work`, one worker of each kind, and `rest` (its keys, remotes, ACLs,
/// templates and zones) after that.
pub fn spawn_knot(
    knotd: &Path,
    work: &Path,
    listen: SocketAddr,
    log_level: &str,
    rest: &str,
) -> Daemon {
    std::fs::create_dir_all(work.join("knot-db")).expect("create knot-db");
    let conf = format!(
        "server:\n    rundir: \"{w}\"\n    pidfile: \"{w}/knot.pid\"\n    listen: {ip}@{port}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: {log_level}\n\
         database:\n    storage: \"{w}/knot-db\"\n{rest}",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
    );
    let path = work.join("knot.conf");
    std::fs::write(&path, conf).expect("write knot.conf");
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&path);
    Daemon::spawn("knotd", cmd, work.join("knotd.log"))
}

/// Waits (at most 20 s) until `server` answers `apex`'s SOA authoritatively over UDP;
/// panics with the daemon's log if it exits or never does.
pub fn wait_authoritative(server: SocketAddr, apex: &str, daemon: &mut Daemon) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let sock = udp_client(server);
        if let Some(wire) = udp_exchange(&sock, &query(1, apex, 6, None)) {
            let m = parse(&wire);
            if m.metadata.authoritative && !m.answers.is_empty() {
                return;
            }
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
