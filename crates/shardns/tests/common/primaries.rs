//! Knot DNS, NSD and BIND as primaries of a shardns secondary: each started as a
//! [`Daemon`] (killed on drop) on one loopback address, serving zone files, allowing
//! transfers only with the TSIG key [`TSIG_NAME`] (hmac-sha256), and sending NOTIFY,
//! signed with it, to the secondary.

use super::{find_program, Daemon};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The transfer key's name.
pub const TSIG_NAME: &str = "xfr-key.";
/// Its secret (base64 of 32 octets).
pub const TSIG_SECRET: &str = "3q2+7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGho=";

/// `ALG:NAME:SECRET` for `kdig -y`.
pub fn tsig_kdig() -> String {
    format!("hmac-sha256:{TSIG_NAME}:{TSIG_SECRET}")
}

/// The `[[key]]` table of a shardns config for the key.
pub fn tsig_toml() -> String {
    format!(
        "[[key]]\nname = \"{TSIG_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{TSIG_SECRET}\"\n"
    )
}

/// knotd's configuration as a primary in `work` on `listen` (one worker of each kind, the
/// zones in `work`, TSIG on every transfer, NOTIFY to `notify`, differences journaled),
/// up to its `zone:` list, which the caller writes.
pub fn knot_primary_conf(work: &Path, listen: SocketAddr, notify: SocketAddr) -> String {
    format!(
        "server:\n    rundir: \"{w}\"\n    pidfile: \"{w}/knot.pid\"\n    listen: {ip}@{port}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         database:\n    storage: \"{w}/knot-db\"\n\
         key:\n  - id: {TSIG_NAME}\n    algorithm: hmac-sha256\n    secret: {TSIG_SECRET}\n\
         remote:\n  - id: secondary\n    address: {nip}@{nport}\n    key: {TSIG_NAME}\n\
         acl:\n  - id: xfr\n    address: 127.0.0.0/8\n    key: {TSIG_NAME}\n    action: transfer\n\
         template:\n  - id: default\n    storage: \"{w}\"\n    zonefile-sync: -1\n\
         \x20   zonefile-load: difference\n    journal-content: changes\n    dnssec-signing: off\n\
         \x20   notify: secondary\n    acl: xfr\n\
         zone:\n",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
        nip = notify.ip(),
        nport = notify.port(),
    )
}

/// `knotd` as a primary of `zones` (apex, file), with a journal, so that a zone reload
/// (`knotc zone-reload`) turns into an IXFR (`zonefile-load: difference`).
pub fn start_knot_primary(
    knotd: &Path,
    work: &Path,
    listen: SocketAddr,
    zones: &[(&str, &Path)],
    notify: SocketAddr,
) -> Daemon {
    std::fs::create_dir_all(work.join("knot-db")).expect("create knot-db");
    let mut conf = knot_primary_conf(work, listen, notify);
    for (apex, file) in zones {
        let _ = write!(
            conf,
            "  - domain: {apex}\n    file: \"{}\"\n",
            file.display()
        );
    }
    let path = work.join("knot.conf");
    std::fs::write(&path, conf).expect("write knot.conf");
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&path);
    Daemon::spawn("knotd", cmd, work.join("knotd.log"))
}

/// Runs `knotc` against the knotd started in `work` (blocking: the event is done when it
/// returns); panics with its output if it fails.
pub fn knotc(work: &Path, args: &[&str]) {
    let knotc = find_program("knotc", "KNOTC").expect("knotc (Debian's knot)");
    let out = Command::new(knotc)
        .arg("-c")
        .arg(work.join("knot.conf"))
        .arg("-s")
        .arg(work.join("knot.sock"))
        .args(["-b", "-t", "20"])
        .args(args)
        .output()
        .expect("run knotc");
    assert!(
        out.status.success(),
        "knotc {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `nsd`, in the foreground, as a primary of `zones`.
pub fn start_nsd_primary(
    nsd: &Path,
    work: &Path,
    listen: SocketAddr,
    zones: &[(&str, &Path)],
    notify: SocketAddr,
) -> Daemon {
    let mut conf = format!(
        "server:\n    ip-address: {ip}\n    port: {port}\n    username: \"\"\n    chroot: \"\"\n\
         \x20   zonesdir: \"{w}\"\n    database: \"\"\n    pidfile: \"{w}/nsd.pid\"\n\
         \x20   xfrdfile: \"{w}/xfrd.state\"\n    zonelistfile: \"{w}/zone.list\"\n\
         \x20   server-count: 1\n    verbosity: 2\n    do-ip6: no\n\
         remote-control:\n    control-enable: no\n\
         key:\n    name: \"{TSIG_NAME}\"\n    algorithm: hmac-sha256\n    secret: \"{TSIG_SECRET}\"\n",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
    );
    for (apex, file) in zones {
        let _ = write!(
            conf,
            "zone:\n    name: \"{apex}\"\n    zonefile: \"{}\"\n    provide-xfr: 127.0.0.0/8 {TSIG_NAME}\n\
             \x20   notify: {}@{} {TSIG_NAME}\n",
            file.display(),
            notify.ip(),
            notify.port()
        );
    }
    let path = work.join("nsd.conf");
    std::fs::write(&path, conf).expect("write nsd.conf");
    let mut cmd = Command::new(nsd);
    cmd.arg("-d").arg("-c").arg(&path);
    Daemon::spawn("nsd", cmd, work.join("nsd.log"))
}

/// `named`, in the foreground, as a primary of `zones`, computing IXFR differences on
/// reload (`ixfr-from-differences`).
pub fn start_named_primary(
    named: &Path,
    work: &Path,
    listen: SocketAddr,
    zones: &[(&str, &Path)],
    notify: SocketAddr,
) -> Daemon {
    let mut conf = format!(
        "options {{\n  directory \"{w}\";\n  pid-file \"{w}/named.pid\";\n\
         \x20 session-keyfile \"{w}/session.key\";\n  managed-keys-directory \"{w}\";\n\
         \x20 listen-on port {port} {{ {ip}; }};\n  listen-on-v6 {{ none; }};\n\
         \x20 recursion no;\n  dnssec-validation no;\n  notify explicit;\n\
         \x20 also-notify {{ {nip} port {nport} key \"{TSIG_NAME}\"; }};\n\
         \x20 allow-transfer {{ key \"{TSIG_NAME}\"; }};\n  ixfr-from-differences yes;\n}};\n\
         controls {{ }};\n\
         key \"{TSIG_NAME}\" {{ algorithm hmac-sha256; secret \"{TSIG_SECRET}\"; }};\n",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
        nip = notify.ip(),
        nport = notify.port(),
    );
    for (apex, file) in zones {
        let _ = writeln!(
            conf,
            "zone \"{apex}\" {{ type primary; file \"{}\"; }};",
            file.display()
        );
    }
    let path = work.join("named.conf");
    std::fs::write(&path, conf).expect("write named.conf");
    let mut cmd = Command::new(named);
    cmd.arg("-g").arg("-c").arg(&path);
    Daemon::spawn("named", cmd, work.join("named.log"))
}

/// A program from Debian's packages, or `None` (the caller prints SKIPPED).
pub fn peer(name: &str, env: &str) -> Option<PathBuf> {
    find_program(name, env)
}
