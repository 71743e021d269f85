//! The policy-zone transfer lab of `rpz.rs` and `rpz_ixfr.rs`: knotd on 127.0.0.1 as the
//! primary of one policy zone (NOTIFY to the resolver), an authoritative shardns for
//! `test.`, and a resolver shardns on 127.0.0.5 forwarding `test.` to it and transferring
//! the policy zone from knotd (`refresh` an hour: only the first transfer and a NOTIFY
//! bring a version). One copy of that setup instead of one per test.

use super::{free_port_on, spawn_knot, wait_authoritative, Daemon, Server, TempDir};
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// How knotd keeps and serves the policy zone.
pub struct LabPolicy<'a> {
    /// The zone's name.
    pub name: &'a str,
    /// Its file, read by knotd.
    pub file: &'a Path,
    /// knotd keeps a journal of the changes (`zonefile-load: difference`, IXFR served),
    /// else none (`whole`: an IXFR is answered with the whole zone).
    pub journal: bool,
    /// A TSIG key (name, HMAC-SHA256 secret) the transfers must be signed with; the
    /// resolver's `primary_key`.
    pub key: Option<(&'a str, &'a str)>,
}

/// The running lab; each process killed by PID when it drops.
pub struct RpzLab {
    pub knot: Daemon,
    /// knotd's working directory (`knotc` is run there).
    pub work: PathBuf,
    pub knot_addr: SocketAddr,
    pub auth: Server,
    pub res: Server,
}

impl RpzLab {
    /// Starts knotd with `policy`, an authoritative shardns for `test.` from `test_zone`
    /// (tagged `tag`), and the resolver; returns once knotd answers for the zone.
    pub fn start(
        knotd: &Path,
        dir: &TempDir,
        tag: &str,
        test_zone: &Path,
        p: LabPolicy<'_>,
    ) -> Self {
        let knot_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port_on(Ipv4Addr::LOCALHOST)));
        let work = dir.path().join("knot");
        std::fs::create_dir_all(&work).unwrap();
        // The resolver's address, known before knotd starts: knotd sends it NOTIFY.
        let res_ip = Ipv4Addr::new(127, 0, 0, 5);
        let res_addr = SocketAddr::from((res_ip, free_port_on(res_ip)));
        let mut rest = String::new();
        let mut acl_key = String::new();
        if let Some((key, secret)) = p.key {
            let _ = write!(
                rest,
                "key:\n  - id: {key}\n    algorithm: hmac-sha256\n    secret: {secret}\n"
            );
            acl_key = format!("    key: {key}\n");
        }
        let (load, journal) = match p.journal {
            true => ("difference", "changes"),
            false => ("whole", "none"),
        };
        let _ = write!(
            rest,
            "remote:\n  - id: resolver\n    address: {ip}@{port}\n\
             acl:\n  - id: xfr\n    address: 127.0.0.0/8\n{acl_key}    action: transfer\n\
             template:\n  - id: default\n    storage: \"{w}\"\n    zonefile-sync: -1\n\
             \x20   zonefile-load: {load}\n    journal-content: {journal}\n\
             \x20   dnssec-signing: off\n    acl: xfr\n    notify: resolver\n\
             zone:\n  - domain: {name}\n    file: \"{f}\"\n",
            ip = res_addr.ip(),
            port = res_addr.port(),
            w = work.display(),
            name = p.name,
            f = p.file.display()
        );
        let mut knot = spawn_knot(knotd, &work, knot_addr, "info", &rest);
        wait_authoritative(knot_addr, p.name, &mut knot);
        let auth = Server::start_on(
            &format!("{tag}-auth"),
            Ipv4Addr::LOCALHOST,
            None,
            &[
                "--zone",
                &format!("test.={}", test_zone.display()),
                "--workers",
                "1",
            ],
        );
        let mut conf = format!(
            "[resolver]\nrecursion = true\nvalidation = false\n\
             local_zone = [\"test. nodefault\"]\nforward = [\"test.={}\"]\n",
            auth.addr
        );
        if let Some((key, secret)) = p.key {
            let _ = write!(
                conf,
                "[[key]]\nname = \"{key}\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n"
            );
        }
        let _ = write!(
            conf,
            "[[resolver.rpz]]\nname = \"{}\"\nprimaries = [\"{knot_addr}\"]\nrefresh = 3600\n",
            p.name
        );
        if let Some((key, _)) = p.key {
            let _ = writeln!(conf, "primary_key = \"{key}\"");
        }
        let conf = dir.write("resolver.toml", &conf);
        let res = Server::start_at(
            &format!("{tag}-res"),
            &[res_addr],
            &["--config", conf.to_str().unwrap()],
        );
        Self {
            knot,
            work,
            knot_addr,
            auth,
            res,
        }
    }
}
