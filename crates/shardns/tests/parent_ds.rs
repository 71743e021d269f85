//! KSK submission done for the operator (issue 29, item 2), end to end on loopback: the
//! parent zone `test.` is served and signed by knotd on 127.0.0.10, which also serves
//! `sign.test.` as our secondary (so that `delv`, asking knotd alone, follows the chain from
//! the parent's key down). A CSK rollover of `sign.test.` started by hand waits at
//! ds-pending while the parent lacks the new DS, and goes on by itself, without `shardns key
//! submitted`, once knotd serves it: added by the test with `knsupdate` (the DS check
//! alone), or pushed by shardns itself (`ds_push`, a TSIG-signed RFC 2136 update). The
//! old DS's removal is checked the same way, and `delete-dnssec` waits until the parent
//! has no DS. Answers are validated with `delv`, the parent's key the only trust anchor.
//! With `parent_agents = "resolve"`, the parent's two servers (knotd on 127.0.0.10 and .11,
//! port 53: run as root, else skipped) are found through our own resolver role on loopback.
//! Missing tools skip the test with a message; `scripts/test.sh` installs them.

mod common;

use common::*;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The child zone: every TTL 2 s, so a rollover's steps take seconds.
const CHILD_TTL: u32 = 2;

/// The TSIG key knotd takes the DS updates with (`knsupdate -y`, `ds_push_key`).
const SECRET: &str = "cGFyZW50LWRzLWtleS1mb3ItdGVzdHMtb25seS0wMTI=";

fn tool(name: &str) -> Option<PathBuf> {
    find_program(name, &name.to_ascii_uppercase().replace('-', "_"))
}

/// A child served by shardns and a parent served by knotd, both running.
struct Lab {
    /// dnsviz's judgements, on snapshots, in a thread of their own; first, so that it is
    /// dropped (its runs over) before the servers and directories.
    judges: DnsvizQueue,
    /// The key states queued for dnsviz (`common::key_state`).
    dnsviz_judged: std::collections::BTreeSet<String>,
    data: TempDir,
    keys: PathBuf,
    child: Server,
    parent: SocketAddr,
    knot: Daemon,
    _knot_dir: TempDir,
    delv: PathBuf,
    knsupdate: PathBuf,
}

/// The tools the test needs, or why it is skipped.
fn tools() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let found = (find_knotd(), tool("delv"), tool("knsupdate"), find_dnsviz());
    match found {
        (Some(k), Some(d), Some(u), Some(_)) => Some((k, d, u)),
        _ => {
            let why = format!("needs knotd, delv, knsupdate and dnsviz ({found:?})");
            assert!(std::env::var_os("CI").is_none(), "parent_ds: {why}");
            println!("parent_ds: SKIPPED: {why}");
            None
        }
    }
}

/// The child's config: `sign.test.` signed, NOTIFY and transfers to knotd, the parent
/// settings `parent` (TOML lines) and `extra`.
fn child_config(data: &TempDir, knot: SocketAddr, parent: &str, extra: &str) -> PathBuf {
    data.write(
        "shardns.toml",
        &format!(
            "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.0/8\"]\n\
             [[key]]\nname = \"ds-key\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
             [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
             propagation_delay = 1\nparent_ds_ttl = 2\nparent_propagation_delay = 1\n\
             notify = [\"{knot}\"]\nds_check_interval = 1\n{parent}\n{extra}"
        ),
    )
}

impl Lab {
    /// Starts the child (its first key made), then knotd with the parent zone holding
    /// that key's DS, signed by knotd, and the child as a secondary zone.
    fn start(
        tag: &str,
        parent_lines: &dyn Fn(SocketAddr) -> String,
        with_ds: bool,
    ) -> Option<Self> {
        let knot_ip = Ipv4Addr::new(127, 0, 0, 10);
        let parent = SocketAddr::from((knot_ip, free_port_on(knot_ip)));
        Self::start_at(tag, parent, "", parent_lines, with_ds)
    }

    /// [`Lab::start`] with knotd on `parent`, `more` added to the parent zone.
    fn start_at(
        tag: &str,
        parent: SocketAddr,
        more: &str,
        parent_lines: &dyn Fn(SocketAddr) -> String,
        with_ds: bool,
    ) -> Option<Self> {
        let (knotd, delv, knsupdate) = tools()?;
        let data = TempDir::new(tag);
        data.write("sign.test.zone", &child_zone(CHILD_TTL));
        let keys = data.path().join("keys");
        std::fs::create_dir_all(&keys).unwrap();
        let config = child_config(&data, parent, &parent_lines(parent), "");
        let listen = [SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()))];
        let args = ["--workers", "1", "--config", config.to_str().unwrap()];
        let child = Server::start_at(&format!("{tag}-child"), &listen, &args);
        let ds: Vec<String> = ds_lines(&key_cmd(&keys, "ds", &[]));
        assert_eq!(ds.len(), 1, "{ds:?}");
        let knot_dir = TempDir::new(&format!("{tag}-knot"));
        let zone = format!(
            "$TTL 2\n@ SOA ns admin 1 3600 600 86400 2\n@ NS ns\nns A 127.0.0.10\n\
             sign NS ns.sign\nns.sign A 127.0.0.1\n{more}{}\n",
            if with_ds { ds[0].as_str() } else { "" }
        );
        let file = knot_dir.write("test.zone", &zone);
        let rest = parent_knot_config(SECRET, listen[0], &file, knot_dir.path());
        let mut knot = spawn_knot(&knotd, knot_dir.path(), parent, "info", &rest);
        wait_authoritative(parent, "test.", &mut knot);
        wait_authoritative(parent, "sign.test.", &mut knot);
        let lab = Self {
            judges: DnsvizQueue::new(),
            dnsviz_judged: Default::default(),
            data,
            keys,
            child,
            parent,
            knot,
            _knot_dir: knot_dir,
            delv,
            knsupdate,
        };
        let anchors = lab.parent_anchor();
        assert!(anchors.exists());
        Some(lab)
    }

    /// A delv trust anchor file holding the parent's key-signing key, as knotd serves it.
    fn parent_anchor(&self) -> PathBuf {
        let out = dig(self.parent, &["+short", "+nosplit", "test.", "DNSKEY"]);
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
        let path = self.data.path().join("parent-anchor.conf");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// delv's verdict on `name`/`qtype` asked of knotd from the parent's key.
    fn delv(&self, name: &str, qtype: &str) -> String {
        let out = Command::new(&self.delv)
            .arg(format!("@{}", self.parent.ip()))
            .args(["-p", &self.parent.port().to_string()])
            .arg("-a")
            .arg(self.parent_anchor())
            .args(["+root=test", name, qtype])
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// Waits (at most `secs`) until delv says `expect` ("fully validated", "unsigned
    /// answer") of `www.sign.test A` and the child's DNSKEY, knotd having caught up.
    fn validated(&mut self, expect: &str, secs: u64) {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let (a, k) = (
                self.delv("www.sign.test", "A"),
                self.delv("sign.test", "DNSKEY"),
            );
            if a.contains(expect) && k.contains(expect) {
                // dnsviz too, from the parent's key, where the chain is whole (without a DS
                // at the parent it is insecure by design, which delv has just said).
                if expect == "fully validated" {
                    self.dnsviz();
                }
                return;
            }
            self.knot.check_alive();
            assert!(
                Instant::now() < end,
                "delv does not say {expect:?} after {secs} s:\n{a}\n{k}\nknotd:\n{}",
                self.knot.log()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Queues dnsviz on a snapshot of both zones as they are now, from the parent's KSK
    /// (`common::DnsvizQueue::chain`), once per key state.
    fn dnsviz(&mut self) {
        self.judges.poll();
        let axfr = axfr_text(self.child.addr4(), "sign.test", 3);
        if !self
            .dnsviz_judged
            .insert(key_state(&axfr, &self.parent_ds()))
        {
            return;
        }
        let out = dig(self.parent, &["+short", "+nosplit", "test.", "DNSKEY"]);
        let ksk = out
            .lines()
            .find(|l| l.starts_with("257 "))
            .expect("the parent's KSK");
        let parent = Snapshot {
            zone: "test".into(),
            axfr: axfr_text(self.parent, "test", 3),
            ns: "ns.test".into(),
            ip: Ipv4Addr::new(127, 0, 0, 10),
        };
        let child = Snapshot {
            zone: "sign.test".into(),
            axfr,
            ns: "ns.sign.test".into(),
            ip: Ipv4Addr::LOCALHOST,
        };
        let anchor = format!("test. 2 IN DNSKEY {ksk}");
        let what = format!("parent_ds: dnsviz, the parent's DS {:?}", self.parent_ds());
        self.judges
            .chain(&what, parent, child, anchor, &["www.sign.test"]);
    }

    /// The DS records knotd serves for `sign.test.` (rdata as [`norm`] writes it, sorted).
    fn parent_ds(&self) -> Vec<String> {
        let mut v: Vec<String> = dig(self.parent, &["+short", "+norec", "sign.test.", "DS"])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(norm)
            .collect();
        v.sort();
        v
    }

    /// Waits (at most 20 s) until knotd serves a DS for `sign.test.`; returns the set.
    fn parent_ds_until_nonempty(&mut self) -> Vec<String> {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let ds = self.parent_ds();
            if !ds.is_empty() {
                return ds;
            }
            self.knot.check_alive();
            assert!(
                Instant::now() < end,
                "no DS at knotd:\n{}",
                self.child.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Changes the parent's DS with knsupdate (`update add|del ...` lines), TSIG-signed.
    fn knsupdate(&self, lines: &[String]) {
        self.knsupdate_at(self.parent, lines);
    }

    /// [`Lab::knsupdate`] sent to `server`.
    fn knsupdate_at(&self, server: SocketAddr, lines: &[String]) {
        let mut script = format!("server {} {}\nzone test.\n", server.ip(), server.port());
        for l in lines {
            script.push_str(&format!("{l}\n"));
        }
        script.push_str("send\nquit\n");
        let path = self.data.write("update.txt", &script);
        let out = Command::new(&self.knsupdate)
            .arg("-y")
            .arg(format!("hmac-sha256:ds-key:{SECRET}"))
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "knsupdate: {}{}\n{script}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn apex(&self, qtype: &str) -> Vec<String> {
        dig(self.child.addr, &["+short", "sign.test", qtype])
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Waits (at most `secs`) until the child's log has `needle`.
    fn log_until(&mut self, needle: &str, secs: u64) {
        self.child.wait_for_log(needle, Duration::from_secs(secs));
    }

    /// Starts a CSK rollover by hand; returns the new key's tag and its DS line, and the
    /// old key's DS line.
    fn roll(&self) -> (String, String, String) {
        let out = key_cmd(&self.keys, "rollover", &["--ksk"]);
        assert!(out.contains("double-DS"), "{out}");
        let out = Command::new(BIN)
            .args(["reload", "sign.test", "--control"])
            .arg(&self.child.control)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let ds = key_cmd(&self.keys, "ds", &[]);
        let mut new_tag = String::new();
        let (mut new, mut old) = (String::new(), String::new());
        let mut next_is_new = false;
        for line in ds.lines() {
            if line.starts_with(';') {
                next_is_new = line.contains("NEW");
                if next_is_new {
                    new_tag = line
                        .split("tag ")
                        .nth(1)
                        .and_then(|l| l.split(':').next())
                        .unwrap()
                        .to_string();
                }
            } else if next_is_new {
                new = line.to_string();
            } else if !line.is_empty() {
                old = line.to_string();
            }
        }
        assert!(!new.is_empty() && !old.is_empty(), "{ds}");
        (new_tag, new, old)
    }

    /// The key's state in `shardns key list`.
    fn state_of(&self, tag: &str) -> String {
        let list = key_cmd(&self.keys, "list", &[]);
        list.lines()
            .find(|l| l.split_whitespace().next() == Some(tag))
            .and_then(|l| l.split_whitespace().nth(3))
            .unwrap_or_else(|| panic!("no key {tag}: {list}"))
            .to_string()
    }
}

/// The DS lines (not comments) of `shardns key ds`.
fn ds_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// DS rdata text as one form: tag, algorithm, digest type, the digest in one piece, upper
/// case (dig splits long digests).
fn norm(text: &str) -> String {
    let f: Vec<&str> = text.split_whitespace().collect();
    format!("{} {}", f[..3].join(" "), f[3..].concat()).to_uppercase()
}

/// The rdata of a DS line (`sign.test. IN DS 1234 13 2 ABCD...`), as [`norm`] writes it.
fn rdata(line: &str) -> String {
    norm(
        &line
            .split_whitespace()
            .skip(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn key_cmd(keys: &Path, cmd: &str, extra: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(["key", cmd, "sign.test", "--key-dir", keys.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "shardns key {cmd}: {text}");
    text
}

/// Holds for `secs` seconds that the new key stays ds-pending and the zone keeps one
/// DNSKEY, with the parent asked again and again meanwhile.
fn stays_pending(lab: &Lab, tag: &str, secs: u64) {
    let asked = |lab: &Lab| {
        lab.child
            .log()
            .matches(&format!("waiting for the DS of the new key {tag}"))
            .count()
    };
    let before = asked(lab);
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        assert_eq!(lab.state_of(tag), "ds-pending");
        assert_eq!(lab.apex("DNSKEY").len(), 1);
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        asked(lab) >= before + 2,
        "the parent was not asked again and again:\n{}",
        lab.child.log()
    );
}

/// The DS check alone: the test hands knotd the new DS; the rollover goes on by itself,
/// never before; then the old DS's removal and the delete-dnssec end are checked too.
#[test]
fn ksk_rollover_goes_on_once_the_parent_serves_the_new_ds() {
    // A second server of the parent that never answers (a closed port on loopback).
    let dead = {
        let sock = std::net::UdpSocket::bind("127.0.0.11:0").unwrap();
        sock.local_addr().unwrap()
    };
    let agents = move |knot: SocketAddr, dead: Option<SocketAddr>| {
        let dead = dead.map_or(String::new(), |d| format!(", \"{d}\""));
        // The queries TSIG-signed: knotd signs its answers, which are checked.
        format!("parent_agents = [\"{knot}\"{dead}]\nparent_agents_key = \"ds-key\"")
    };
    let Some(mut lab) = Lab::start("parent-check", &|knot| agents(knot, Some(dead)), true) else {
        return;
    };
    lab.validated("fully validated", 30);
    let (tag, new, old) = lab.roll();
    // The parent has the old DS alone: the rollover waits, asking every second.
    stays_pending(&lab, &tag, 5);
    assert!(
        lab.child.log().contains(&format!(
            "{}: DS {}",
            lab.parent,
            rdata(&old).split(' ').take(3).collect::<Vec<_>>().join(" ")
        )),
        "the log says what the parent answered:\n{}",
        lab.child.log()
    );
    // Both DS at knotd, added by hand; the other server still says nothing: it waits.
    lab.knsupdate(&[format!("update add {new}").replace(" IN DS ", " 2 IN DS ")]);
    stays_pending(&lab, &tag, 4);
    let log = lab.child.log();
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("waiting for the DS of the new key"))
        .unwrap();
    assert!(
        line.contains("WARN")
            && line.contains(&dead.to_string())
            && line.contains(&rdata(&new)[..6]),
        "the last check names each server's answer: {line}"
    );
    // Only knotd asked: confirmed without `shardns key submitted`.
    child_config(&lab.data, lab.parent, &agents(lab.parent, None), "");
    let out = lab.child.control("reload");
    assert!(out.status.success(), "{out:?}");
    lab.log_until("confirmed, as `shardns key submitted` does", 20);
    lab.validated("fully validated", 30);
    let end = Instant::now() + Duration::from_secs(30);
    while lab.apex("DNSKEY").len() != 1 || lab.state_of(&tag) != "active" {
        assert!(
            Instant::now() < end,
            "the rollover did not end: {}",
            key_cmd(&lab.keys, "list", &[])
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // The old key withdrawn: its DS is to go; the check waits while it is there.
    lab.log_until("to be gone at all 1 parent server(s)", 20);
    lab.knsupdate(&[format!("update del {old}").replace(" IN DS ", " IN DS ")]);
    lab.log_until("the rollover is over at the parent", 20);
    assert_eq!(lab.parent_ds(), vec![rdata(&new)]);
    lab.validated("fully validated", 30);

    // Going insecure: delete-dnssec; the check waits until the parent has no DS.
    child_config(
        &lab.data,
        lab.parent,
        &agents(lab.parent, None),
        "cds_cdnskey_publish = \"delete-dnssec\"\n",
    );
    let out = lab.child.control("reload");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(lab.apex("CDS"), ["0 0 0 00"]);
    lab.log_until("waiting for no DS at all (delete-dnssec)", 20);
    assert!(!lab.child.log().contains("insecure at the parent"));
    lab.knsupdate(&["update del sign.test. DS".to_string()]);
    lab.log_until("insecure at the parent", 20);
    lab.validated("unsigned answer", 30);
    let state = lab.keys.join("state");
    let noted = || {
        let dir = &state;
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "parent"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect::<String>()
    };
    assert!(noted().contains("insecure"), "{}", noted());

    // And back: the mode as before, the kept key's DS given to the parent.
    child_config(&lab.data, lab.parent, &agents(lab.parent, None), "");
    let out = lab.child.control("reload");
    assert!(out.status.success(), "{out:?}");
    assert!(lab.apex("CDS").is_empty(), "mode rollover, no rollover");
    lab.knsupdate(&[format!("update add {new}").replace(" IN DS ", " 2 IN DS ")]);
    lab.validated("fully validated", 30);
    // The next check forgets the insecure state, so a later delete is checked anew.
    let end = Instant::now() + Duration::from_secs(10);
    while noted().contains("insecure") {
        assert!(Instant::now() < end, "still noted insecure: {}", noted());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The push: shardns sends knotd the DS set by a TSIG-signed update at each step, and the
/// check (asking the same server) confirms it; nothing by hand at the parent.
#[test]
fn ds_push_carries_a_ksk_rollover_through_without_the_operator() {
    // A key knotd does not know, `bad-key`, is a [[key]] after the zone's table.
    let push = |knot: SocketAddr, key: &str| {
        format!(
            "ds_push = \"{knot}\"\nds_push_key = \"{key}\"\n[[key]]\nname = \"bad-key\"\n\
             algorithm = \"hmac-sha256\"\nsecret = \"c29tZSBvdGhlciBrZXk=\"\n"
        )
    };
    // The parent starts without our DS: the first one is pushed.
    let Some(mut lab) = Lab::start("parent-push", &|knot| push(knot, "ds-key"), false) else {
        return;
    };
    lab.log_until("DS set pushed to", 20);
    lab.validated("fully validated", 30);
    // Now with a key knotd does not know.
    child_config(&lab.data, lab.parent, &push(lab.parent, "bad-key"), "");
    let out = lab.child.control("reload");
    assert!(out.status.success(), "{out:?}");
    let (tag, new, old) = lab.roll();
    // Refused: tried again and again, the rollover waiting the while.
    lab.log_until("failed (2 in a row)", 20);
    stays_pending(&lab, &tag, 3);
    assert_eq!(lab.child.log().matches("DS set pushed to").count(), 1);
    assert_eq!(lab.parent_ds(), vec![rdata(&old)]);
    // The key the parent knows: pushed, confirmed, and on to the end by itself.
    child_config(&lab.data, lab.parent, &push(lab.parent, "ds-key"), "");
    let out = lab.child.control("reload");
    assert!(out.status.success(), "{out:?}");
    let end = Instant::now() + Duration::from_secs(20);
    while lab.child.log().matches("DS set pushed to").count() < 2 {
        assert!(Instant::now() < end, "no second push:\n{}", lab.child.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    lab.log_until("confirmed, as `shardns key submitted` does", 20);
    let mut both = vec![rdata(&new), rdata(&old)];
    both.sort();
    // Before the old key goes, the parent holds both (double-DS).
    let ds = lab.parent_ds();
    assert!(ds == both || ds == vec![rdata(&new)], "{ds:?}");
    let end = Instant::now() + Duration::from_secs(40);
    while !lab
        .child
        .log()
        .contains("the rollover is over at the parent")
    {
        assert!(
            Instant::now() < end,
            "not over after 40 s: {}\n{}",
            key_cmd(&lab.keys, "list", &[]),
            lab.child.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(lab.state_of(&tag), "active");
    assert_eq!(lab.parent_ds(), vec![rdata(&new)], "the old DS pushed away");
    lab.validated("fully validated", 30);
}

/// No hands at all: `ksk_lifetime` starts the rollover, `ds_push` gives knotd the DS (the
/// first one too), the check confirms each step; every answer validates from the parent's
/// key on the way.
#[test]
fn ksk_lifetime_and_ds_push_roll_with_no_hands() {
    let Some(mut lab) = Lab::start(
        "parent-auto",
        &|knot| format!("ds_push = \"{knot}\"\nds_push_key = \"ds-key\"\nksk_lifetime = \"8s\""),
        false,
    ) else {
        return;
    };
    let first = lab.parent_ds_until_nonempty();
    lab.validated("fully validated", 30);
    let end = Instant::now() + Duration::from_secs(60);
    while !lab
        .child
        .log()
        .contains("the rollover is over at the parent")
    {
        assert!(
            Instant::now() < end,
            "no rollover over after 60 s: {}\n{}",
            key_cmd(&lab.keys, "list", &[]),
            lab.child.log()
        );
        lab.validated("fully validated", 10);
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = lab.child.log();
    assert!(
        log.contains("the lifetime of CSK"),
        "started by ksk_lifetime: {log}"
    );
    assert!(
        log.contains("confirmed, as `shardns key submitted` does"),
        "{log}"
    );
    let now = lab.parent_ds();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, first, "the parent holds the new key's DS alone");
    lab.validated("fully validated", 30);
}

/// A second server of `test.` on `at`, knotd, a primary of its own (unsigned) with the
/// same delegation and DS as the first at the start, taking DS updates with `ds-key`: so
/// that the test decides which of the two serves what.
fn second_parent(knotd: &Path, at: SocketAddr, zone: &str) -> (Daemon, TempDir) {
    let dir = TempDir::new("parent-resolve-knot2");
    let file = dir.write("test.zone", zone);
    let w = dir.path().display();
    let rest = format!(
        "key:\n  - id: ds-key\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
         acl:\n  - id: ds-update\n    key: ds-key\n    action: update\n\
         zone:\n  - domain: test.\n    file: \"{file}\"\n    storage: \"{w}\"\n\
         \x20   zonefile-sync: -1\n    zonefile-load: whole\n    acl: ds-update\n",
        file = file.display(),
    );
    let mut knot = spawn_knot(knotd, dir.path(), at, "info", &rest);
    wait_authoritative(at, "test.", &mut knot);
    (knot, dir)
}

/// What `server` answered, as a check's log line says it (`SERVER: DS 1 13 2, ...;`).
fn served<'a>(line: &'a str, server: &str) -> &'a str {
    line.split(&format!("{server}: "))
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or("")
}

/// The line of the child's last check that says it waits for `tag`'s DS.
fn last_wait(lab: &Lab, tag: &str) -> String {
    let log = lab.child.log();
    log.lines()
        .rev()
        .find(|l| l.contains(&format!("waiting for the DS of the new key {tag}")))
        .unwrap_or_else(|| panic!("no wait for {tag}:\n{log}"))
        .to_string()
}

/// `parent_agents = "resolve"`: no parent server configured; the child finds `test.`'s two
/// servers (knotd on 127.0.0.10 and a second knotd on 127.0.0.11, port 53 as NS records
/// say) through a resolver (our own resolver role on 127.0.0.12, `test.` forwarded to the
/// first knotd, its root hints on loopback: nothing leaves loopback) at each check, asks both
/// directly, and goes on only once both serve the new DS; while the resolver is down the
/// check fails and the rollover waits, though both then serve it.
#[test]
fn the_parents_servers_found_by_resolving_must_all_serve_the_new_ds() {
    let (ns1, ns2) = (Ipv4Addr::new(127, 0, 0, 10), Ipv4Addr::new(127, 0, 0, 11));
    for ip in [ns1, ns2] {
        let addr = SocketAddr::from((ip, 53));
        let probe = std::net::UdpSocket::bind(addr)
            .err()
            .or_else(|| std::net::TcpListener::bind(addr).err());
        if let Some(e) = probe {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                println!("parent_ds resolve: SKIPPED: cannot bind {addr} ({e}): run as root");
                return;
            }
            panic!("{addr} is in use ({e}): see `ss -lunpt`");
        }
    }
    let Some(knotd) = find_knotd() else {
        println!("parent_ds resolve: SKIPPED: needs knotd");
        return;
    };
    let rip = Ipv4Addr::new(127, 0, 0, 12);
    let resolver_at = SocketAddr::from((rip, free_port_on(rip)));
    let lines = move |_: SocketAddr| {
        format!("parent_agents = \"resolve\"\nparent_resolvers = [\"{resolver_at}\"]")
    };
    let two_ns = "@ NS ns2\nns2 A 127.0.0.11\n";
    let Some(mut lab) = Lab::start_at("parent-resolve", (ns1, 53).into(), two_ns, &lines, true)
    else {
        return;
    };
    let ds = ds_lines(&key_cmd(&lab.keys, "ds", &[]));
    let zone = format!(
        "$TTL 2\n@ SOA ns admin 1 3600 600 86400 2\n@ NS ns\nns A 127.0.0.10\n{two_ns}\
         sign NS ns.sign\nns.sign A 127.0.0.1\n{}\n",
        ds[0]
    );
    let second: SocketAddr = (ns2, 53).into();
    let (mut knot2, _dir2) = second_parent(&knotd, second, &zone);
    let dir = TempDir::new("parent-resolve-files");
    // The root on loopback, where nothing answers: `test.` is forwarded, nothing else asked.
    let hints = dir.write("root.hints", ". NS a.root.\na.root. A 127.0.0.13\n");
    // An anchor outside the lab: `test.` is insecure to it, so nothing is validated.
    let anchor = dir.write(
        "anchor.ds",
        &format!("anchor.invalid. IN DS 1 13 2 {}\n", "00".repeat(32)),
    );
    let forward = format!("test.={}", lab.parent);
    let resolver_args = [
        "--workers",
        "1",
        "--recursion",
        "--allow-loopback-upstreams",
        "--root-hints",
        hints.to_str().unwrap(),
        "--trust-anchor",
        anchor.to_str().unwrap(),
        "--forward",
        &forward,
        // `test.` is a default local zone (RFC 6761) unless told otherwise.
        "--local-zone",
        "test. nodefault",
    ];
    let start_resolver =
        || Server::start_at("parent-resolve-resolver", &[resolver_at], &resolver_args);
    let mut resolver = start_resolver();
    let (tag, new, old) = lab.roll();
    // Both servers found, both with the old DS alone: it waits, asking every second.
    stays_pending(&lab, &tag, 3);
    let line = last_wait(&lab, &tag);
    let old_ds = rdata(&old).split(' ').take(3).collect::<Vec<_>>().join(" ");
    assert!(
        line.contains("at all 2 parent server(s)")
            && line.contains(&format!("127.0.0.10:53: DS {old_ds};"))
            && line.contains(&format!("127.0.0.11:53: DS {old_ds};")),
        "the check names both servers found and their answers: {line}"
    );
    // The new DS at the first server only: still waiting.
    let add = format!("update add {new}").replace(" IN DS ", " 2 IN DS ");
    lab.knsupdate(std::slice::from_ref(&add));
    let has_new = |line: &str, server: &str| served(line, server).contains(&format!("{tag} 13 2"));
    let end = Instant::now() + Duration::from_secs(10);
    while !has_new(&last_wait(&lab, &tag), "127.0.0.10:53") {
        assert!(Instant::now() < end, "{}", lab.child.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    stays_pending(&lab, &tag, 3);
    let line = last_wait(&lab, &tag);
    assert!(
        !has_new(&line, "127.0.0.11:53"),
        "the second server lacks it: {line}"
    );
    // The resolver gone: no server list, so no confirmation, though both now serve it.
    // (A failed lookup seen first: no check that found both servers is still under way.)
    resolver.terminate();
    lab.log_until("the parent's servers not found through", 20);
    lab.knsupdate_at(second, &[add]);
    let at_second = dig(second, &["+short", "+norec", "sign.test.", "DS"]);
    assert!(at_second.contains(&format!("{tag} 13 2")), "{at_second}");
    stays_pending(&lab, &tag, 3);
    assert!(
        last_wait(&lab, &tag).contains("not found through"),
        "{}",
        lab.child.log()
    );
    knot2.check_alive();
    // Back: both serve it; confirmed without `shardns key submitted`.
    resolver = start_resolver();
    lab.log_until("confirmed, as `shardns key submitted` does", 20);
    let log = lab.child.log();
    let line = log.lines().find(|l| l.contains("confirmed, as")).unwrap();
    assert!(
        line.contains("all 2 parent server(s) serve the DS of")
            && has_new(line, "127.0.0.10:53")
            && has_new(line, "127.0.0.11:53"),
        "{line}"
    );
    let end = Instant::now() + Duration::from_secs(15);
    while lab.apex("DNSKEY").len() != 2 {
        assert!(Instant::now() < end, "the new key is not published: {log}");
        std::thread::sleep(Duration::from_millis(200));
    }
    resolver.terminate();
}
