//! End-to-end: transferred policy zones, their SOA timers and XoT.
//!
//! Timers: a shardns primary serves the policy
//! zone `x.rpz.` (SOA REFRESH 1, RETRY 1, EXPIRE 4: REFRESH taken as 2 and EXPIRE as 4,
//! the secondary zones' bounds) and never sends NOTIFY; another shardns serves `test.`; a
//! resolver forwards `test.` and transfers `x.rpz.` without a `refresh` of its own. A change
//! on the primary arrives within REFRESH; the primary stopped, the zone's policy is dropped
//! once EXPIRE passes; the primary back, RETRY brings the zone back.
//!
//! XoT: the primary's DoT listener, its certificate pinned by its SPKI (`primary_tls`);
//! a wrong pin is refused and the policy not loaded.
//!
//! Loopback only; every server is killed on drop.

mod common;

use common::{dig, free_port, make_cert, spki_pin, Server, TempDir};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const TEST_ZONE: &str = "$TTL 60\n@ SOA ns.test. admin.test. 1 3600 600 86400 60\n@ NS ns.test.\n\
                         ns A 127.0.0.1\nnx A 192.0.2.1\nwww A 192.0.2.2\n";

fn policy(serial: u32, rules: &str) -> String {
    format!(
        "$TTL 60\n@ SOA localhost. admin.localhost. {serial} 1 1 4 60\n@ NS ns.invalid.\n{rules}"
    )
}

/// The status dig shows for `name` A.
fn status(server: SocketAddr, name: &str) -> String {
    let out = dig(
        server,
        &["+noall", "+comments", "+tries=1", "+time=2", name, "A"],
    );
    out.lines()
        .find_map(|l| l.split("status: ").nth(1))
        .map(|s| s.split(',').next().unwrap_or("").to_string())
        .unwrap_or_else(|| format!("no answer: {out}"))
}

/// Waits (bounded) until `name` gets `want`; the seconds it took.
fn until(res: &Server, name: &str, want: &str, limit: Duration) -> f64 {
    let start = Instant::now();
    loop {
        let got = status(res.addr, name);
        if got == want {
            return start.elapsed().as_secs_f64();
        }
        assert!(
            start.elapsed() < limit,
            "{name}: {got}, not {want}, after {limit:?}:\n{}",
            res.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn primary(addr: SocketAddr, file: &Path) -> Server {
    Server::start_at(
        "rpz-timers-primary",
        &[addr],
        &[
            "--zone",
            &format!("x.rpz.={}", file.display()),
            "--allow-transfer",
            "127.0.0.0/8",
            "--workers",
            "1",
        ],
    )
}

#[test]
fn soa_refresh_retry_and_expire_of_a_transferred_policy_zone() {
    let dir = TempDir::new("rpz-timers");
    let test_zone = dir.write("test.zone", TEST_ZONE);
    let file = dir.write("x.rpz", &policy(1, "nx.test CNAME .\n"));
    let auth = Server::start_at(
        "rpz-timers-auth",
        &[SocketAddr::from(([127, 0, 0, 1], free_port()))],
        &[
            "--zone",
            &format!("test.={}", test_zone.display()),
            "--workers",
            "1",
        ],
    );
    let primary_addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut prim = primary(primary_addr, &file);
    let conf = dir.write(
        "resolver.toml",
        &format!(
            "[resolver]\nrecursion = true\nvalidation = false\nlocal_zone = [\"test. nodefault\"]\n\
             forward = [\"test.={}\"]\nmax_ttl = 1\nmax_negative_ttl = 1\n\
             [[resolver.rpz]]\nname = \"x.rpz.\"\nprimaries = [\"{primary_addr}\"]\n",
            auth.addr
        ),
    );
    let res = Server::start_at(
        "rpz-timers-res",
        &[SocketAddr::from(([127, 0, 0, 1], free_port()))],
        &["--config", conf.to_str().unwrap(), "--workers", "1"],
    );
    until(&res, "nx.test.", "NXDOMAIN", Duration::from_secs(10));
    assert_eq!(status(res.addr, "www.test."), "NOERROR");

    // A new version, no NOTIFY: the SOA's REFRESH (2 s) brings it.
    std::fs::write(&file, policy(2, "nx.test CNAME .\nwww.test CNAME .\n")).unwrap();
    prim.sighup();
    let took = until(&res, "www.test.", "NXDOMAIN", Duration::from_secs(6));
    println!("rpz_transfer: the change arrived in {took:.1} s (REFRESH 2 s)");

    // The primary stopped: RETRY every second, and after EXPIRE (4 s from the last
    // answer) the zone's policy is dropped: the names resolve as they are.
    assert!(prim.terminate().success());
    let took = until(&res, "nx.test.", "NOERROR", Duration::from_secs(10));
    println!("rpz_transfer: the policy dropped {took:.1} s after the primary stopped (EXPIRE 4 s)");
    assert!(took >= 1.5, "dropped after {took} s, before EXPIRE");
    assert_eq!(status(res.addr, "www.test."), "NOERROR");
    assert!(
        res.log().contains("policy zone x.rpz.: expired"),
        "{}",
        res.log()
    );

    // The primary back: the next RETRY transfers the zone whole, and the policy is back.
    let _prim = primary(primary_addr, &file);
    until(&res, "www.test.", "NXDOMAIN", Duration::from_secs(6));
    assert_eq!(status(res.addr, "nx.test."), "NXDOMAIN");
}

/// A resolver forwarding `test.` to `auth` and transferring `x.rpz.` from `primary` over
/// TLS, the primary's certificate pinned to `pin`.
fn xot_resolver(
    dir: &TempDir,
    tag: &str,
    auth: SocketAddr,
    primary: SocketAddr,
    pin: &str,
) -> Server {
    let conf = dir.write(
        &format!("{tag}.toml"),
        &format!(
            "[resolver]\nrecursion = true\nvalidation = false\nlocal_zone = [\"test. nodefault\"]\n\
             forward = [\"test.={auth}\"]\n\
             [[resolver.rpz]]\nname = \"x.rpz.\"\nprimaries = [\"{primary}\"]\n\
             primary_tls = {{ spki_sha256 = [\"{pin}\"] }}\n"
        ),
    );
    Server::start_at(
        tag,
        &[SocketAddr::from(([127, 0, 0, 1], free_port()))],
        &["--config", conf.to_str().unwrap(), "--workers", "1"],
    )
}

#[test]
fn a_policy_zone_transferred_over_tls() {
    let dir = TempDir::new("rpz-xot");
    let test_zone = dir.write("test.zone", TEST_ZONE);
    let file = dir.write("x.rpz", &policy(1, "nx.test CNAME .\n"));
    let (cert, key) = make_cert(dir.path(), "ns1.rpz.test");
    let (other_cert, _) = make_cert(dir.path(), "other.rpz.test");
    let auth = Server::start_at(
        "rpz-xot-auth",
        &[SocketAddr::from(([127, 0, 0, 1], free_port()))],
        &[
            "--zone",
            &format!("test.={}", test_zone.display()),
            "--workers",
            "1",
        ],
    );
    let tls = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let conf = dir.write(
        "primary.toml",
        &format!(
            "[server]\ntls_listen = [\"{tls}\"]\ntls_certificate = \"{}\"\ntls_key = \"{}\"\n\
             allow_transfer = [\"127.0.0.0/8\"]\n[[zone]]\nname = \"x.rpz.\"\nfile = \"{}\"\n",
            cert.display(),
            key.display(),
            file.display()
        ),
    );
    let _primary = Server::start_at(
        "rpz-xot-primary",
        &[SocketAddr::from(([127, 0, 0, 1], free_port()))],
        &["--config", conf.to_str().unwrap(), "--workers", "1"],
    );
    let res = xot_resolver(&dir, "rpz-xot-res", auth.addr, tls, &spki_pin(&cert));
    until(&res, "nx.test.", "NXDOMAIN", Duration::from_secs(10));
    assert!(
        res.log().contains("policy zone x.rpz. transferred from"),
        "{}",
        res.log()
    );
    // Another key than the pinned one: refused, no policy.
    let mut wrong = xot_resolver(
        &dir,
        "rpz-xot-wrong",
        auth.addr,
        tls,
        &spki_pin(&other_cert),
    );
    wrong.wait_for_log("invalid peer certificate", Duration::from_secs(10));
    assert_eq!(status(wrong.addr, "nx.test."), "NOERROR");
}
