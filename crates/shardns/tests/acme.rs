//! An ACME DNS-01 certificate issued end to end on loopback (issue 28, "What it must show"),
//! by clients we did not write:
//!
//! - shardns serves `acme.test.` with an `update_policy` that grants the TSIG key `acme.`
//!   the TXT records of `_acme-challenge.*` (every name one label below the apex) and of
//!   `_acme-challenge` (the apex's own challenge);
//! - `pebble`, the ACME test server, validates DNS-01 challenges by asking shardns
//!   (`-dnsserver`) for the TXT records;
//! - `lego --dns rfc2136` (and certbot with its rfc2136 plugin) write the challenges' TXT
//!   records by TSIG-signed updates, get the certificate for `www.acme.test` and
//!   `acme.test`, and delete the records again.
//!
//! Each test checks that the certificate was written, for both names, by pebble's CA; that
//! shardns logged each TXT added and then removed; that each challenge's TXT was answered
//! while the client ran (asked every 20 ms); and that no TXT is left at the end (`dig`).
//!
//! ```sh
//! cargo test -p shardns --test acme -- --nocapture
//! ```
//!
//! The programs come from Debian's packages `pebble`, `lego`, `certbot` and
//! `python3-certbot-dns-rfc2136`, which `scripts/test.sh` installs: a missing one fails the
//! test.
//!
//! Never: any address outside 127.0.0.0/8 (pebble gets `-dnsserver`; lego gets
//! `--dns.resolvers` and `--dns.disable-cp`, since its propagation check otherwise asks the
//! machine's resolver for the zone's name servers; certbot's plugin asks only the server in
//! its credentials), unbounded waits, or processes left running (shardns, pebble and the
//! client are killed by PID on drop, also when a test fails).

mod common;

use common::*;
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The zone the challenges are written into.
const APEX: &str = "acme.test.";
/// The names on the certificate.
const DOMAINS: [&str; 2] = ["www.acme.test", "acme.test"];
/// Their challenges' owner names.
const CHALLENGES: [&str; 2] = [
    "_acme-challenge.www.acme.test.",
    "_acme-challenge.acme.test.",
];
/// The update key's name and secret (base64 of 32 octets).
const KEY_NAME: &str = "acme.";
const SECRET: &str = "YWNtZS1rZXktZm9yLXRoZS1lMmUtdGVzdHMtMDAwMDE=";
/// How long a client may take to get the certificate.
const CLIENT_LIMIT: Duration = Duration::from_secs(120);

/// shardns serving the zone, pebble asking it for the challenges, and the directory both
/// (and the client) keep their files in.
struct Acme {
    server: Server,
    pebble: Daemon,
    /// The ACME directory URL.
    directory: String,
    /// The certificate pebble's HTTPS listener presents (self-signed): the CA the clients
    /// must trust.
    pebble_ca: PathBuf,
    dir: TempDir,
}

impl Acme {
    fn start(tag: &str) -> Self {
        // The zone's file, its journal and the config in the server's directory.
        let zones = TempDir::new(tag);
        let file = zones.write(
            "acme.test.zone",
            &format!(
                "$ORIGIN {APEX}\n$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 300\n@ NS ns\n\
                 ns A 127.0.0.1\n@ A 127.0.0.1\nwww A 127.0.0.1\n"
            ),
        );
        let config = zones.write(
            "shardns.toml",
            &format!(
                "[[key]]\nname = \"{KEY_NAME}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
                 [[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\nallow_transfer = [\"127.0.0.1\"]\n\
                 update_policy = [\n  \"grant {KEY_NAME} wildcard _acme-challenge.* TXT\",\n\
                 \x20 \"grant {KEY_NAME} name _acme-challenge TXT\",\n]\n",
                file.display()
            ),
        );
        let config = config.display().to_string();
        let server = Server::start_in(zones, &["--config", &config, "--workers", "1"]);

        let dir = TempDir::new(&format!("{tag}-acme"));
        let (pebble_ca, pebble_key) = make_cert(dir.path(), "localhost");
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port_on(Ipv4Addr::LOCALHOST)));
        let management = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port_on(Ipv4Addr::LOCALHOST)));
        // httpPort and tlsPort are where pebble would connect for HTTP-01 and TLS-ALPN-01,
        // which nobody asks for here.
        let config = dir.write(
            "pebble.json",
            &format!(
                "{{\"pebble\": {{\"listenAddress\": \"{listen}\", \
                 \"managementListenAddress\": \"{management}\", \
                 \"certificate\": \"{}\", \"privateKey\": \"{}\", \
                 \"httpPort\": {}, \"tlsPort\": {}, \"ocspResponderURL\": \"\", \
                 \"externalAccountBindingRequired\": false}}}}\n",
                pebble_ca.display(),
                pebble_key.display(),
                free_port_on(Ipv4Addr::LOCALHOST),
                free_port_on(Ipv4Addr::LOCALHOST),
            ),
        );
        let program = find_program("pebble", "PEBBLE")
            .expect("pebble is not installed (scripts/test.sh installs Debian's pebble)");
        let mut cmd = Command::new(program);
        cmd.arg("-config")
            .arg(&config)
            .arg("-dnsserver")
            .arg(server.addr.to_string())
            .current_dir(dir.path())
            // No sleep before validating, no nonce rejected at random, no authorization
            // reused: fast, and the same every run.
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0");
        let mut pebble = Daemon::spawn("pebble", cmd, dir.path().join("pebble.log"));
        wait_for(&mut pebble, &format!("Listening on: {listen}"));
        assert!(
            pebble.log().contains(&format!(
                "Using custom DNS resolver for ACME challenges: {}",
                server.addr
            )),
            "pebble does not ask shardns:\n{}",
            pebble.log()
        );
        Self {
            server,
            pebble,
            directory: format!("https://{listen}/dir"),
            pebble_ca,
            dir,
        }
    }

    /// Runs a client (`cmd`) to its end, bounded by [`CLIENT_LIMIT`] (killed after it, and
    /// on a panic); panics with every log unless it exits 0. Returns the challenges' TXT
    /// records shardns answered while it ran.
    fn run_client(&mut self, name: &str, mut cmd: Command) -> BTreeSet<(String, String)> {
        // Loopback only, and no proxy between the clients and pebble.
        for var in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("NO_PROXY", "127.0.0.1,localhost")
            .current_dir(self.dir.path());
        let watcher = Watcher::start(self.server.addr);
        let started = Instant::now();
        let mut client = Daemon::spawn(name, cmd, self.dir.path().join(format!("{name}.log")));
        let status = client.wait_exit(CLIENT_LIMIT);
        eprintln!("{name} took {:.1} s", started.elapsed().as_secs_f64());
        let log = client.log();
        let seen = watcher.stop();
        eprintln!("--- {name}'s log ---\n{log}--- TXT answered meanwhile: {seen:?}");
        if !matches!(status, Some(s) if s.success()) {
            panic!(
                "{name} failed ({status:?}; its log is above); pebble's log:\n{}",
                self.pebble.log()
            );
        }
        seen
    }

    /// Checks the certificate at `cert`, shardns's log, the TXT records answered while the
    /// client ran (`seen`, from a [`Watcher`]) and the zone after a client got the
    /// certificate.
    fn check(&mut self, cert: &Path, seen: &BTreeSet<(String, String)>) {
        self.pebble.check_alive();
        // The certificate, for both names, issued by pebble's CA.
        let out = Command::new("openssl")
            .args([
                "x509",
                "-noout",
                "-subject",
                "-issuer",
                "-ext",
                "subjectAltName",
                "-in",
            ])
            .arg(cert)
            .output()
            .expect("run openssl");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "openssl x509 {}: {out:?}",
            cert.display()
        );
        assert!(
            text.contains("subject=CN = www.acme.test"),
            "subject: {text}"
        );
        assert!(
            text.contains("issuer=CN = Pebble Intermediate CA"),
            "issuer: {text}"
        );
        for domain in DOMAINS {
            assert!(
                text.split([' ', ',', '\n'])
                    .any(|w| w == format!("DNS:{domain}")),
                "no {domain} in subjectAltName: {text}"
            );
        }

        // shardns's log: each challenge added (one TXT record a message), then removed.
        let log = self.server.log();
        let updates: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(&format!("update of {APEX} from 127.0.0.1: ")))
            .collect();
        let added: Vec<usize> = (0..updates.len())
            .filter(|&i| updates[i].ends_with(" 0 records deleted, 1 added"))
            .collect();
        let removed: Vec<usize> = (0..updates.len())
            .filter(|&i| updates[i].ends_with(" 1 records deleted, 0 added"))
            .collect();
        assert!(
            added.len() == 2 && removed.len() == 2 && updates.len() == 4,
            "expected two TXT added, then two removed:\n{log}"
        );
        assert!(
            added[0] < removed[0] && added[1] < removed[1],
            "a TXT removed before it was added:\n{log}"
        );

        // While the client ran, each challenge's TXT was answered.
        for owner in CHALLENGES {
            assert!(
                seen.iter().any(|(o, _)| o == owner),
                "{owner} TXT never answered while the client ran (seen: {seen:?}):\n{log}"
            );
        }
        // Four versions on: two added, two removed.
        assert_eq!(
            sorted_lines(&dig(self.server.addr, &["+short", APEX, "SOA"])),
            ["ns.acme.test. hostmaster.acme.test. 5 3600 600 86400 300"],
        );

        // Cleaned up: no challenge left.
        for owner in CHALLENGES {
            let out = dig(self.server.addr, &["+notcp", owner, "TXT"]);
            assert!(
                out.contains("status: NXDOMAIN"),
                "{owner} is left behind:\n{out}"
            );
        }
    }
}

/// Asks shardns for the challenges' TXT records every 20 ms, on a thread of its own, and
/// keeps what it answered: the records the ACME server could see.
struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<BTreeSet<(String, String)>>>,
}

impl Watcher {
    fn start(server: SocketAddr) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let sock = udp_client(server);
            let mut seen = BTreeSet::new();
            let mut id = 0u16;
            while !flag.load(Ordering::Relaxed) {
                for owner in CHALLENGES {
                    id = id.wrapping_add(1);
                    let Some(wire) = udp_exchange(&sock, &query(id, owner, 16, None)) else {
                        continue;
                    };
                    for r in parse(&wire).answers {
                        seen.insert((owner.to_string(), r.data.to_string()));
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops it; what it saw.
    fn stop(mut self) -> BTreeSet<(String, String)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().expect("watcher")
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Waits (bounded) until `daemon` logs `needle`; panics with its log if it exits or the
/// time is up.
fn wait_for(daemon: &mut Daemon, needle: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while !daemon.log().contains(needle) {
        daemon.check_alive();
        assert!(
            Instant::now() < end,
            "{} did not log {needle:?}:\n{}",
            daemon.name,
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// lego's `rfc2136` DNS provider: `lego ... --dns rfc2136 run`, with the key in
/// `RFC2136_TSIG_*` and shardns both the update server and the only resolver.
#[test]
fn lego_rfc2136_gets_a_certificate_through_dynamic_update() {
    let mut acme = Acme::start("acme-lego");
    let program = find_program("lego", "LEGO")
        .expect("lego is not installed (scripts/test.sh installs Debian's lego)");
    let at = acme.server.addr.to_string();
    let path = acme.dir.path().join("lego");
    let mut cmd = Command::new(program);
    cmd.arg("--server")
        .arg(&acme.directory)
        .arg("--path")
        .arg(&path)
        .args(["--email", "acme@acme.test", "--accept-tos"])
        .args(["--domains", DOMAINS[0], "--domains", DOMAINS[1]])
        .args([
            "--dns",
            "rfc2136",
            "--dns.resolvers",
            &at,
            "--dns.disable-cp",
        ])
        .arg("run")
        .env("RFC2136_NAMESERVER", &at)
        .env("RFC2136_TSIG_KEY", KEY_NAME)
        .env("RFC2136_TSIG_SECRET", SECRET)
        .env("RFC2136_TSIG_ALGORITHM", "hmac-sha256.")
        .env("RFC2136_DNS_TIMEOUT", "5")
        .env("RFC2136_POLLING_INTERVAL", "1")
        .env("RFC2136_PROPAGATION_TIMEOUT", "30")
        // The provider solves one name after the other, 60 s apart unless told.
        .env("RFC2136_SEQUENCE_INTERVAL", "1")
        .env("LEGO_CA_CERTIFICATES", &acme.pebble_ca)
        .env_remove("LEGO_PATH");
    let seen = acme.run_client("lego", cmd);
    acme.check(&path.join("certificates/www.acme.test.crt"), &seen);
}

/// certbot's `dns-rfc2136` plugin: the key in its credentials file, shardns the server it
/// updates and asks for the zone's SOA; pebble trusted through `REQUESTS_CA_BUNDLE`.
#[test]
fn certbot_rfc2136_gets_a_certificate_through_dynamic_update() {
    let mut acme = Acme::start("acme-certbot");
    let program = find_program("certbot", "CERTBOT")
        .expect("certbot is not installed (scripts/test.sh installs Debian's certbot)");
    let credentials = acme.dir.write(
        "rfc2136.ini",
        &format!(
            "dns_rfc2136_server = 127.0.0.1\ndns_rfc2136_port = {}\n\
             dns_rfc2136_name = {KEY_NAME}\ndns_rfc2136_secret = {SECRET}\n\
             dns_rfc2136_algorithm = HMAC-SHA256\n",
            acme.server.addr.port()
        ),
    );
    // certbot warns about a credentials file others may read.
    std::fs::set_permissions(
        &credentials,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let base = acme.dir.path().join("certbot");
    let mut cmd = Command::new(program);
    cmd.args([
        "certonly",
        "--non-interactive",
        "--agree-tos",
        "--no-eff-email",
    ])
    .args(["-m", "acme@acme.test", "--server", &acme.directory])
    .arg("--config-dir")
    .arg(base.join("config"))
    .arg("--work-dir")
    .arg(base.join("work"))
    .arg("--logs-dir")
    .arg(base.join("logs"))
    .args(["--dns-rfc2136", "--dns-rfc2136-credentials"])
    .arg(&credentials)
    .args(["--dns-rfc2136-propagation-seconds", "0"])
    .args(["-d", DOMAINS[0], "-d", DOMAINS[1]])
    .env("REQUESTS_CA_BUNDLE", &acme.pebble_ca)
    .env_remove("PYTHONPATH")
    .env_remove("PYTHONHOME");
    let seen = acme.run_client("certbot", cmd);
    acme.check(&base.join("config/live/www.acme.test/cert.pem"), &seen);
}
