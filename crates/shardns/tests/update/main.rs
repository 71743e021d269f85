//! Dynamic update (RFC 2136, issue 28) end to end, with clients we did not write:
//!
//! - `clients`: BIND's `nsupdate` (`-y`, `-k` with a key file, `-v` over TCP) and Knot's
//!   `knsupdate` add, change and delete records, each change seen by `dig` over UDP at
//!   once; prerequisites give the RFC's rcodes, which the clients print; unsigned updates
//!   are REFUSED, a wrong secret NOTAUTH (BADSIG); the config file's per-zone
//!   `update_policy` (key, wildcard, deny and address grants) and `serial_policy`.
//! - `dnspython`: dnspython's `dns.update.UpdateMessage`, signed with `dns.tsigkeyring`,
//!   over UDP, TCP and DoT (`dns.query.udp`, `tcp`, `tls`).
//! - `knot_compare`: hand-built UPDATE messages (each prerequisite form true and false,
//!   NOTZONE, the §3.4.2 rules, meta types, classes, signatures) sent to shardns and to
//!   knotd serving the same zone with the same key, answer for answer, and the RRsets after
//!   each; the differences we chose are listed there and in docs/ANSWERS.md.
//! - `signed`: a signed zone (NSEC, NSEC3) updated: the changes signed at once, verified,
//!   validated by `delv`, and kept over a restart.
//! - `sign_tool`: `shardns sign` applies the changes a signed zone's updates left in the
//!   key directory (`--ignore-updates`: the file alone; another file serial: refused).
//! - `follow`: knotd as a TSIG-signed secondary of a shardns primary follows updates by
//!   NOTIFY and true IXFR from the journal; updates survive a restart and a SIGKILL.
//! - `txn`: the operator's transactions (`shardns zone begin|set|unset|diff|commit|abort`)
//!   through the real binary, seen by `dig`; `flood`: `limits.updates_per_second`.
//! - `forward`: a shardns secondary with `update_forwarding` passes updates on to its
//!   primary (shardns over TCP and TLS, knotd) and relays the answer; REFUSED without it, SERVFAIL with no
//!   primary reachable.
//!
//! ```sh
//! cargo test -p shardns --test update -- --nocapture
//! ```
//!
//! The clients come from Debian's packages (bind9-dnsutils, knot-dnsutils, knot,
//! python3-dnspython), which `scripts/test.sh` installs: a missing one fails the test.
//!
//! Never: any address outside 127.0.0.0/8, unbounded waits, or processes left running
//! (every server is killed by PID on drop, also when a test fails).

mod clients;
#[path = "../common/mod.rs"]
mod common;
mod dnspython;
mod flood;
mod follow;
mod forward;
mod knot_compare;
mod sign_tool;
mod signed;
mod txn;
mod wire;

use common::*;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The zone every test updates.
pub const APEX: &str = "upd.test.";
/// The update key's name.
pub const KEY_NAME: &str = "upd.";
/// Its secret (base64 of 32 octets).
pub const SECRET: &str = "dXBkYXRlLWtleS1mb3ItdGhlLWUyZS10ZXN0cy0wMDE=";
/// Another secret for the same key name: a signature the server cannot verify.
pub const WRONG_SECRET: &str = "d3Jvbmctc2VjcmV0LWZvci10aGUtZTJlLXRlc3RzLTE=";

/// `ALG:NAME:SECRET` of the update key, as `--update-key`, `nsupdate -y`, `knsupdate -y`
/// and `kdig -y` take it.
pub fn upd_key() -> String {
    format!("hmac-sha256:{KEY_NAME}:{SECRET}")
}

/// The same key name with the wrong secret.
pub fn wrong_key() -> String {
    format!("hmac-sha256:{KEY_NAME}:{WRONG_SECRET}")
}

/// The zone at serial `serial`: an apex with one NS, `www` with an A and a TXT, `alias` a
/// CNAME to it, `mail` an MX target.
pub fn zone_text(serial: u32) -> String {
    format!(
        "$ORIGIN {APEX}\n$TTL 300\n@ SOA ns hostmaster {serial} 3600 600 86400 300\n@ NS ns\n\
         ns A 127.0.0.1\nwww A 192.0.2.1\nwww TXT \"hello\"\nalias CNAME www\n\
         @ MX 10 mail\nmail A 192.0.2.25\n"
    )
}

/// shardns serving the zone (file in its directory) with the update key allowed to update
/// it (`--update-key`), plus `extra` flags.
pub fn start_primary(tag: &str, extra: &[&str]) -> Server {
    let dir = TempDir::new(tag);
    let file = dir.write("upd.test.zone", &zone_text(1));
    let zone = format!("{APEX}={}", file.display());
    let key = upd_key();
    let mut args = vec!["--workers", "1", "--zone", &zone, "--update-key", &key];
    args.extend_from_slice(extra);
    Server::start_in(dir, &args)
}

/// The serial `server` answers for the zone (by UDP), or `None`.
pub fn serial_at(server: SocketAddr) -> Option<u32> {
    let sock = udp_client(server);
    let wire = udp_exchange(&sock, &query(7, APEX, 6, None))?;
    let m = parse(&wire);
    let soa = m.answers.first()?;
    soa.data.to_string().split_whitespace().nth(2)?.parse().ok()
}

/// `dig +short NAME TYPE` over UDP, lines sorted (empty: no such data).
pub fn short(server: SocketAddr, name: &str, rtype: &str) -> Vec<String> {
    sorted_lines(&dig(server, &["+short", "+notcp", name, rtype]))
}

/// The RCODE of `dig NAME TYPE` over UDP, as dig prints it ("NOERROR", "NXDOMAIN"...).
pub fn status(server: SocketAddr, name: &str, rtype: &str) -> String {
    let out = dig(server, &["+notcp", name, rtype]);
    out.split("status: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or_else(|| panic!("no status in dig's output:\n{out}"))
        .to_string()
}

/// A client program's result: whether it exited 0, and its stdout and stderr together.
#[derive(Debug)]
pub struct Run {
    pub ok: bool,
    pub text: String,
}

/// Runs `program args` with `script` on its standard input (bounded by the program's own
/// timeouts, which the scripts set).
pub fn run_with_input(program: &str, args: &[&str], script: &str) -> Run {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program} (scripts/test.sh installs it): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out: Output = child.wait_with_output().unwrap();
    Run {
        ok: out.status.success(),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// `nsupdate ARGS` sending `body` (update and prereq lines, `send` lines) to `server`
/// for the zone; one try, short timeouts.
pub fn nsupdate(server: SocketAddr, args: &[&str], body: &str) -> Run {
    let script = format!(
        "server {} {}\nzone {APEX}\n{body}",
        server.ip(),
        server.port()
    );
    let mut all = vec!["-t", "5", "-u", "2", "-r", "0"];
    all.extend_from_slice(args);
    run_with_input("nsupdate", &all, &script)
}

/// `knsupdate ARGS` likewise.
pub fn knsupdate(server: SocketAddr, args: &[&str], body: &str) -> Run {
    let script = format!(
        "server {} {}\nzone {APEX}\norigin {APEX}\n{body}",
        server.ip(),
        server.port()
    );
    let mut all = vec!["-t", "5", "-r", "0"];
    all.extend_from_slice(args);
    run_with_input("knsupdate", &all, &script)
}

/// Debian's python3 (dnspython is its package `python3-dnspython`): `$PYTHON3` if set,
/// else `/usr/bin/python3` (not a virtualenv's or pyenv's, which lack it), else the first
/// on PATH.
pub fn python3() -> PathBuf {
    if let Some(p) = std::env::var_os("PYTHON3") {
        return PathBuf::from(p);
    }
    let debian = PathBuf::from("/usr/bin/python3");
    if debian.is_file() {
        return debian;
    }
    find_program("python3", "PYTHON3").expect("python3 (scripts/test.sh installs it)")
}

/// `knotd`, which must be installed (`scripts/test.sh` installs Debian's `knot`).
pub fn knotd() -> PathBuf {
    find_knotd().expect("knotd is not installed (scripts/test.sh installs Debian's knot)")
}
