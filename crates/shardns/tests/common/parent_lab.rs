//! The rollover tests' lab: the parent `test.` served and signed by knotd (on 127.0.0.10),
//! which takes the child's DS by TSIG-signed update (`ds-key`) and serves `sign.test.` as
//! the child's secondary, and the child on 127.0.0.1: a shardns server for `sign.test.`,
//! or (`ParentLab::start_knot`, to compare with ours) a second knotd signing it; and the
//! judges of the child's zone at each sample ([`ParentLab::judged`]), the parent's key
//! their only trust anchor: `delv` asking knotd, a validating Unbound asking knotd for
//! `test.` and the child for `sign.test.`, and at each new state of the keys dnsviz (on a
//! snapshot, in a thread of its own).

use super::{
    axfr_text, dig, find_dnsviz, find_knotd, find_program, free_port, free_port_on, spawn_knot,
    verify_zone_file, wait_authoritative, Daemon, DnsvizQueue, Server, Snapshot, TempDir,
    ValidatingUnbound,
};
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The rollover tests' child zone (`sign.test.` or any other apex: names are relative),
/// every TTL and the negative TTL `ttl` seconds, so that a roll's steps take seconds.
pub fn child_zone(ttl: u32) -> String {
    format!(
        "$TTL {ttl}\n@ SOA ns admin 1 3600 600 86400 {ttl}\n@ NS ns\nns A 127.0.0.1\n\
         www A 192.0.2.2\n"
    )
}

/// knotd's configuration (after its server, control, log and database sections) as the
/// signed parent `test.`, its zone file `file` and storage `storage`: the child's DS taken
/// by TSIG-signed update with `ds-key` (`secret`), `sign.test.` a secondary of the child at
/// `child`, transfers allowed to loopback (dnsviz's snapshots).
pub fn parent_knot_config(secret: &str, child: SocketAddr, file: &Path, storage: &Path) -> String {
    format!(
        "key:\n  - id: ds-key\n    algorithm: hmac-sha256\n    secret: {secret}\n\
         remote:\n  - id: child\n    address: {child}\n\
         acl:\n  - id: ds-update\n    key: ds-key\n    action: update\n\
         \x20   update-type: DS\n    update-owner: name\n    update-owner-match: equal\n\
         \x20   update-owner-name: sign.test.\n\
         \x20 - id: from-child\n    address: 127.0.0.0/8\n    action: notify\n\
         \x20 - id: snapshot\n    address: 127.0.0.0/8\n    action: transfer\n\
         policy:\n  - id: parent\n    single-type-signing: on\n    dnskey-ttl: 2\n\
         \x20   zone-max-ttl: 2\n    propagation-delay: 0\n    cds-cdnskey-publish: none\n\
         zone:\n  - domain: test.\n    file: \"{file}\"\n    storage: \"{w}\"\n\
         \x20   zonefile-sync: -1\n    zonefile-load: whole\n    dnssec-signing: on\n\
         \x20   dnssec-policy: parent\n    acl: [ds-update, snapshot]\n\
         \x20 - domain: sign.test.\n    master: child\n    acl: from-child\n\
         \x20   storage: \"{w}\"\n    zonefile-sync: -1\n",
        child = child.to_string().replace(':', "@"),
        file = file.display(),
        w = storage.display(),
    )
}

pub struct ParentLab {
    /// The knotd child of `ParentLab::start_knot`, its work directory in `data`'s `knot`
    /// (first, so that it is killed before the directory goes).
    pub knot_child: Option<Daemon>,
    /// dnsviz's judgements, on snapshots, in a thread of their own; first, so that it is
    /// dropped (its runs over) before the directories they use.
    judges: DnsvizQueue,
    tag: String,
    /// The child's directory: its zone file `sign.test.zone`, its config `shardns.toml`,
    /// its key directory `keys`.
    pub data: TempDir,
    /// The child's address.
    pub listen: SocketAddr,
    /// Our child (`None` with a knotd child).
    pub child: Option<Server>,
    pub knot: Daemon,
    _knot_dir: TempDir,
    /// knotd's address.
    pub parent: SocketAddr,
    delv: PathBuf,
    anchor: PathBuf,
    /// The parent's KSK, DNSKEY rdata.
    parent_key: String,
    unbound: Option<ValidatingUnbound>,
    /// The key states queued for dnsviz (see [`Self::key_state`]).
    dnsviz_judged: BTreeSet<String>,
}

impl ParentLab {
    /// The lab, the child started: `zone` is the child's zone file; `config` writes its
    /// `shardns.toml` into the directory, told knotd's address; `secret` is `ds-key`'s.
    /// `None` (the test named `test` skipped, with a message; under CI=1 it fails) without
    /// knotd, delv, ldns-verify-zone, unbound or dnsviz.
    pub fn start(
        test: &str,
        tag: &str,
        secret: &str,
        zone: &str,
        config: impl FnOnce(&TempDir, SocketAddr),
    ) -> Option<Self> {
        let (knotd, delv, unbound) = Self::tools(test)?;
        let child = |data: &TempDir, parent| {
            config(data, parent);
            None
        };
        let mut lab = Self::started(tag, &knotd, delv, secret, zone, child);
        lab.start_unbound(&unbound);
        Some(lab)
    }

    /// The lab with knotd as the child instead of us: `config` gives the child's knotd
    /// configuration after its server, control, log and database sections (keys, remotes,
    /// submission, policy, zone; its zone file is `data`'s `sign.test.zone`), told the
    /// child's directory and knotd's (the parent's) address. `None` as `start`.
    pub fn start_knot(
        test: &str,
        tag: &str,
        secret: &str,
        zone: &str,
        config: impl FnOnce(&TempDir, SocketAddr) -> String,
    ) -> Option<Self> {
        let (knotd, delv, unbound) = Self::tools(test)?;
        let child = |data: &TempDir, parent| Some(config(data, parent));
        let mut lab = Self::started(tag, &knotd, delv, secret, zone, child);
        lab.start_unbound(&unbound);
        Some(lab)
    }

    /// knotd, delv and unbound, or `None` with a message saying the test `test` skipped (under
    /// `CI`, a failure).
    fn tools(test: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
        let tool = |name: &str| find_program(name, &name.to_ascii_uppercase().replace('-', "_"));
        let found = (
            find_knotd(),
            tool("delv"),
            tool("ldns-verify-zone"),
            tool("unbound"),
            find_dnsviz(),
        );
        let (Some(knotd), Some(delv), Some(_), Some(unbound), Some(_)) = found.clone() else {
            let why = format!("needs knotd, delv, ldns-verify-zone, unbound, dnsviz ({found:?})");
            assert!(std::env::var_os("CI").is_none(), "{test}: {why}");
            println!("{test}: SKIPPED: {why}");
            return None;
        };
        Some((knotd, delv, unbound))
    }

    fn started(
        tag: &str,
        knotd: &Path,
        delv: PathBuf,
        secret: &str,
        zone: &str,
        child: impl FnOnce(&TempDir, SocketAddr) -> Option<String>,
    ) -> Self {
        let data = TempDir::new(tag);
        data.write("sign.test.zone", zone);
        std::fs::create_dir_all(data.path().join("keys")).unwrap();
        let knot_ip = Ipv4Addr::new(127, 0, 0, 10);
        let parent = SocketAddr::from((knot_ip, free_port_on(knot_ip)));
        // `Some`: knotd's configuration for a knotd child; `None`: ours, written.
        let knot_child = child(&data, parent);
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
        let knot_dir = TempDir::new(&format!("{tag}-knot"));
        let parent_zone = "$TTL 2\n@ SOA ns admin 1 3600 600 86400 2\n@ NS ns\nns A 127.0.0.10\n\
                           sign NS ns.sign\nns.sign A 127.0.0.1\n";
        let file = knot_dir.write("test.zone", parent_zone);
        let rest = parent_knot_config(secret, listen, &file, knot_dir.path());
        let knot = spawn_knot(knotd, knot_dir.path(), parent, "info", &rest);
        let mut lab = Self {
            judges: DnsvizQueue::new(),
            tag: tag.to_string(),
            data,
            listen,
            child: None,
            knot_child: None,
            knot,
            _knot_dir: knot_dir,
            parent,
            delv,
            anchor: PathBuf::new(),
            parent_key: String::new(),
            unbound: None,
            dnsviz_judged: BTreeSet::new(),
        };
        match knot_child {
            None => lab.start_child(tag),
            Some(rest) => {
                let work = lab.data.path().join("knot");
                let mut child = spawn_knot(knotd, &work, listen, "info", &rest);
                wait_authoritative(listen, "sign.test.", &mut child);
                lab.knot_child = Some(child);
            }
        }
        wait_authoritative(parent, "test.", &mut lab.knot);
        wait_authoritative(parent, "sign.test.", &mut lab.knot);
        let out = dig(parent, &["+short", "+nosplit", "test.", "DNSKEY"]);
        let ksk: Vec<&str> = out.lines().filter(|l| l.starts_with("257 ")).collect();
        assert_eq!(ksk.len(), 1, "the parent's KSK: {out}");
        let f: Vec<&str> = ksk[0].split_whitespace().collect();
        let text = format!(
            "trust-anchors {{\n  test. static-key {} {} {} \"{}\";\n}};\n",
            f[0],
            f[1],
            f[2],
            f[3..].concat()
        );
        lab.anchor = lab.data.write("anchor.conf", &text);
        lab.parent_key = format!("{} {} {} {}", f[0], f[1], f[2], f[3..].concat());
        lab
    }

    /// The validating Unbound: `test.` asked of knotd, `sign.test.` of the child (the
    /// delegation's glue names port 53).
    fn start_unbound(&mut self, unbound: &Path) {
        let dir = self.data.path().join("unbound");
        std::fs::create_dir_all(&dir).unwrap();
        self.unbound = Some(ValidatingUnbound::start(
            unbound,
            &dir,
            ("test.", &self.parent_key),
            &[("test.", &[self.parent]), ("sign.test.", &[self.listen])],
        ));
    }

    /// Starts the child (again) on its address, from its config file.
    pub fn start_child(&mut self, tag: &str) {
        let config = self.data.path().join("shardns.toml");
        let args = ["--workers", "1", "--config", config.to_str().unwrap()];
        self.child = Some(Server::start_at(
            &format!("{tag}-child"),
            &[self.listen],
            &args,
        ));
    }

    /// `knotc COMMAND...` on the knotd child's control socket: its output, which must
    /// succeed.
    pub fn knotc(&self, command: &[&str]) -> String {
        let knotc = find_program("knotc", "KNOTC").expect("knotc, installed with knotd");
        let sock = self.data.path().join("knot").join("knot.sock");
        let out = Command::new(knotc)
            .arg("-s")
            .arg(sock)
            .args(command)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "knotc {command:?}: {text}");
        text
    }

    pub fn child(&mut self) -> &mut Server {
        self.child.as_mut().unwrap()
    }

    /// Judges the child's zone now, sample `n`, the parent's key the only trust anchor:
    /// ldns-verify-zone and dnssec-verify on its AXFR; delv through knotd and the validating
    /// Unbound (`www.sign.test A` and `sign.test DNSKEY` validated: NOERROR, AD); dnsviz
    /// when the keys are in a state it has not judged yet ([`Self::key_state`]), so once in
    /// each phase of a roll at least, on a snapshot of both zones ([`Self::dnsviz`]). The
    /// AXFR.
    pub fn judged(&mut self, n: usize) -> String {
        let axfr = axfr_text(self.listen, "sign.test", 5);
        self.judge(n, &axfr);
        axfr
    }

    /// Judges `axfr`, the child's zone as transferred a moment ago, as `judged` does.
    pub fn judge(&mut self, n: usize, axfr: &str) {
        let file = self.data.write(&format!("axfr-{n}.zone"), axfr);
        if let Err(e) = verify_zone_file(&file, "sign.test") {
            panic!("sample {n}: {e}\n{axfr}");
        }
        for (name, qtype) in [("www.sign.test", "A"), ("sign.test", "DNSKEY")] {
            let v = self.delv(name, qtype);
            self.knot.check_alive();
            if let Some(child) = &mut self.knot_child {
                child.check_alive();
            }
            assert!(
                v.contains("fully validated"),
                "sample {n}: delv {name} {qtype}:\n{v}\nthe zone:\n{axfr}\nknotd:\n{}",
                self.knot.log()
            );
            let unbound = self.unbound.as_mut().expect("started with the lab");
            if let Err(e) = unbound.secure(name, qtype, "NOERROR") {
                panic!("sample {n}: {e}\nthe zone:\n{axfr}");
            }
        }
        self.judges.poll();
        let state = self.key_state(axfr);
        if !self.dnsviz_judged.contains(&state) {
            self.dnsviz(n, axfr, &state);
            self.dnsviz_judged.insert(state);
        }
    }

    /// The zone's key state now ([`key_state`](super::key_state)), the parent's DS set
    /// as knotd serves it.
    pub fn key_state(&self, axfr: &str) -> String {
        super::key_state(axfr, &self.parent_ds())
    }

    /// Queues dnsviz on the chain from the parent's key down to the child's zone as it is
    /// now (sample `n`, `axfr` the child's zone as transferred, `state` its key state).
    /// dnsviz probes for seconds, longer than some phases of a roll last, and a probe
    /// across a change would mix two phases: so it asks a snapshot, both zones as
    /// transferred now, served by two shardns servers of their own (the parent's on
    /// 127.0.0.10 as its glue says) for as long as dnsviz needs them, while the sampling
    /// goes on.
    fn dnsviz(&mut self, n: usize, axfr: &str, state: &str) {
        let parent = Snapshot {
            zone: "test".into(),
            axfr: axfr_text(self.parent, "test", 3),
            ns: "ns.test".into(),
            ip: Ipv4Addr::new(127, 0, 0, 10),
        };
        let child = Snapshot {
            zone: "sign.test".into(),
            axfr: axfr.to_string(),
            ns: "ns.sign.test".into(),
            ip: Ipv4Addr::LOCALHOST,
        };
        let what = format!("sample {n}, dnsviz on a snapshot of the key state\n{state}\n");
        let anchor = format!("test. 2 IN DNSKEY {}", self.parent_key);
        self.judges
            .chain(&what, parent, child, anchor, &["www.sign.test"]);
    }

    /// The child's DS records at knotd, as `dig +short` prints them (tag, algorithm, ...).
    pub fn parent_ds(&self) -> Vec<String> {
        dig(self.parent, &["+short", "+norec", "sign.test.", "DS"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `delv NAME QTYPE` through knotd, from the parent's key alone: its output.
    pub fn delv(&self, name: &str, qtype: &str) -> String {
        let out = Command::new(&self.delv)
            .arg(format!("@{}", self.parent.ip()))
            .args(["-p", &self.parent.port().to_string(), "-a"])
            .arg(&self.anchor)
            .args(["+root=test", name, qtype])
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

/// The key tag of a DNSKEY in presentation form (RFC 4034 Appendix B).
pub fn key_tag_of(rdata: &str) -> u16 {
    let f: Vec<&str> = rdata.split_whitespace().collect();
    let key = base64_decode(f[3]);
    let mut wire = vec![0u8; 4];
    wire[..2].copy_from_slice(&f[0].parse::<u16>().unwrap().to_be_bytes());
    wire[2] = f[1].parse().unwrap();
    wire[3] = f[2].parse().unwrap();
    wire.extend(key);
    let mut acc: u32 = 0;
    for (i, b) in wire.iter().enumerate() {
        acc += if i & 1 == 0 {
            u32::from(*b) << 8
        } else {
            u32::from(*b)
        };
    }
    acc += (acc >> 16) & 0xffff;
    (acc & 0xffff) as u16
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        acc = (acc << 6) | u32::from(val(c));
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

impl Drop for ParentLab {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            print!("{}: ", self.tag);
            self.judges.finish();
        }
    }
}
