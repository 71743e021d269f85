//! The lab: `sign.test.` signed by a shardns that the test kills (SIGKILL) and starts again
//! at will (on the same port); optionally its parent `test.`, signed and served by a second
//! shardns from a zone file the test rewrites (the DS set it serves), which also serves
//! `sign.test.` as a secondary of the child, so that delv validates the child from the
//! parent's key alone; and the sampler's record of both.

use super::common::*;
use super::sampler::{self, DsChange, Sample, State};
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Every TTL 2 s; with `propagation_delay = 2` each step of a rollover waits 4 s, a margin
/// of 2 s over what a cache may keep, beyond the sampler's own uncertainty.
pub(crate) const CHILD: &str = "\
$TTL 2
@       SOA ns admin 1 3600 600 86400 2
@       NS  ns
ns      A   127.0.0.1
www     A   192.0.2.2
";

/// The TTL of everything, the DS at the parent included.
pub(crate) const TTL: f64 = 2.0;

/// How often the zone is looked at.
const EVERY: Duration = Duration::from_millis(300);

pub(crate) fn tool(name: &str) -> Option<PathBuf> {
    find_program(name, &name.to_ascii_uppercase().replace('-', "_"))
}

/// The outside tools, or `false` after saying why the test is skipped (a failure under CI).
pub(crate) fn have_tools(test: &str) -> bool {
    let missing: Vec<&str> = ["dig", "delv", "ldns-verify-zone", "dnssec-verify", "dnsviz"]
        .into_iter()
        .filter(|t| tool(t).is_none())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {missing:?} not installed (scripts/test.sh installs them)"
    );
    println!("{test}: SKIPPED: needs {missing:?}");
    false
}

/// `shardns key CMD sign.test. --key-dir KEYS EXTRA...`; its output, which must succeed.
pub(crate) fn key_cmd(keys: &Path, cmd: &str, extra: &[&str]) -> String {
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
    assert!(out.status.success(), "shardns key {cmd} {extra:?}: {text}");
    text
}

/// The DS lines (not comments) of `shardns key ds`, each with its key tag.
pub(crate) fn ds_lines(keys: &Path) -> Vec<(u16, String)> {
    key_cmd(keys, "ds", &[])
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| {
            (
                l.split_whitespace().nth(3).unwrap().parse().unwrap(),
                l.into(),
            )
        })
        .collect()
}

pub(crate) struct Lab {
    /// dnsviz's judgements, on snapshots, in a thread of their own; first, so that it is
    /// dropped (its runs over) before the servers and directories.
    pub(crate) judges: DnsvizQueue,
    pub(crate) tag: String,
    pub(crate) data: TempDir,
    pub(crate) keys: PathBuf,
    config: PathBuf,
    agents: String,
    /// The child's port, the same across restarts (the parent transfers from it).
    port: u16,
    pub(crate) child: Option<Server>,
    parent: Option<(Server, PathBuf)>,
    /// The DS records the parent serves (or, without a parent, the trust anchor).
    pub(crate) ds: Vec<(u16, String)>,
    pub(crate) samples: Vec<Sample>,
    pub(crate) ds_changes: Vec<DsChange>,
    /// Signatures seen outside their validity.
    pub(crate) invalid: Vec<String>,
    pub(crate) restarts: usize,
    t0: Instant,
}

impl Lab {
    /// Writes the child's config (`sign.test.`, KSK and ZSK, the roll's timings, `extra`
    /// TOML lines; with `parent`, a parent whose DS set the test controls and that the
    /// child checks every second) and starts the child, which makes its keys.
    pub(crate) fn start(tag: &str, parent: bool, extra: &str) -> Self {
        let data = TempDir::new(tag);
        data.write("sign.test.zone", CHILD);
        let keys = data.path().join("keys");
        std::fs::create_dir_all(&keys).unwrap();
        let port = free_port();
        let parent = parent.then(|| {
            let file = data.write("test.zone", &parent_zone(&[]));
            std::fs::create_dir_all(data.path().join("pkeys")).unwrap();
            let config = data.write(
                "parent.toml",
                &format!(
                    "[server]\nkey_directory = \"pkeys\"\nallow_transfer = [\"127.0.0.1\"]\n\
                     [[zone]]\nname = \"test\"\nfile = \"test.zone\"\ndnssec = true\n\
                     [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.copy\"\n\
                     primary = [\"127.0.0.1:{port}\"]\n"
                ),
            );
            let args = ["--workers", "1", "--config", config.to_str().unwrap()];
            let srv = Server::start(&format!("{tag}-parent"), &args);
            (srv, file)
        });
        let agents = parent.as_ref().map_or(String::new(), |(p, _)| {
            format!(
                "parent_agents = [\"{0}\"]\nds_check_interval = 1\nnotify = [\"{0}\"]\n",
                p.addr4()
            )
        });
        let config = data.path().join("shardns.toml");
        let mut lab = Self {
            judges: DnsvizQueue::new(),
            tag: tag.into(),
            data,
            keys,
            config,
            agents,
            port,
            child: None,
            parent,
            ds: Vec::new(),
            samples: Vec::new(),
            ds_changes: Vec::new(),
            invalid: Vec::new(),
            restarts: 0,
            t0: Instant::now(),
        };
        lab.configure(extra);
        lab.child = Some(lab.spawn());
        let ds = ds_lines(&lab.keys);
        assert_eq!(ds.len(), 1, "{ds:?}");
        lab.set_parent_ds(ds);
        lab
    }

    /// (Re)writes the child's config with `extra` TOML lines in its `[[zone]]`
    /// (`single_type_signing = false` unless they set it).
    pub(crate) fn configure(&self, extra: &str) {
        let agents = &self.agents;
        // A KSK and a ZSK unless `extra` sets the shape.
        let shape = if extra.contains("single_type_signing") {
            ""
        } else {
            "single_type_signing = false\n"
        };
        std::fs::write(
            &self.config,
            format!(
                "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.0/8\"]\n\
                 [[zone]]\nname = \"sign.test\"\nfile = \"sign.test.zone\"\ndnssec = true\n\
                 {shape}propagation_delay = 2\nparent_ds_ttl = 2\n\
                 parent_propagation_delay = 1\n{agents}{extra}"
            ),
        )
        .unwrap();
    }

    fn spawn(&self) -> Server {
        let listen = [SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))];
        let args = ["--workers", "1", "--config", self.config.to_str().unwrap()];
        let skew = self.data.path().join("clock-skew");
        let env = [("SHARDNS_TEST_CLOCK_SKEW", skew.as_path())];
        let tag = format!("{}-{}", self.tag, self.restarts);
        Server::start_at_env(&tag, &listen, &args, &env)
    }

    /// Steps the child's wall clock to `secs` seconds from the true time (the test's own
    /// clock, by which the sampler judges the signatures).
    pub(crate) fn set_skew(&self, secs: i64) {
        self.data.write("clock-skew", &secs.to_string());
    }

    pub(crate) fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    pub(crate) fn child(&self) -> &Server {
        self.child.as_ref().expect("the child runs")
    }

    /// The parent now serves `ds` (with a parent: its zone rewritten and reloaded).
    pub(crate) fn set_parent_ds(&mut self, ds: Vec<(u16, String)>) {
        let start = if self.ds_changes.is_empty() {
            f64::NEG_INFINITY
        } else {
            self.now()
        };
        if let Some((parent, file)) = &self.parent {
            let lines: Vec<&str> = ds.iter().map(|(_, l)| l.as_str()).collect();
            std::fs::write(file, parent_zone(&lines)).unwrap();
            let out = parent.control("reload");
            assert!(out.status.success(), "parent reload: {out:?}");
        }
        let tags: BTreeSet<u16> = ds.iter().map(|(t, _)| *t).collect();
        self.ds_changes.push(DsChange {
            start,
            end: self.now(),
            tags,
        });
        self.ds = ds;
    }

    /// One look at the zone (an AXFR); recorded.
    pub(crate) fn sample(&mut self) -> Option<State> {
        let start = self.now();
        let addr = self.child().addr4();
        let out = dig(
            addr,
            &[
                "sign.test",
                "AXFR",
                "+onesoa",
                "+nocmd",
                "+nostats",
                "+nocomments",
            ],
        );
        let text: String = out
            .lines()
            .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") + "\n")
            .collect();
        let state = (text.lines().count() > 4)
            .then(|| sampler::state_of(&text, unix_now(), &mut self.invalid));
        self.samples.push(Sample {
            start,
            end: self.now(),
            state: state.clone(),
        });
        state
    }

    /// SIGKILL, then a start on a fresh port; nothing is served in between. The restarted
    /// zone is checked at once: the judges accept it and delv validates it from the DS.
    pub(crate) fn kill_and_restart(&mut self) {
        let start = self.now();
        drop(self.child.take());
        self.restarts += 1;
        self.child = Some(self.spawn());
        self.samples.push(Sample {
            start,
            end: self.now(),
            state: None,
        });
        self.judge(&format!("after restart {}", self.restarts));
    }

    /// ldns-verify-zone and dnssec-verify on the AXFR; delv from the parent's key through
    /// the parent's copy of the zone once it has caught up (without a parent, from the DS
    /// set the test holds as the parent's); dnsviz from the same anchor on a snapshot of
    /// the zones as they are now (`common::DnsvizQueue`), in a thread of its own.
    pub(crate) fn judge(&mut self, when: &str) {
        let addr = self.child().addr4();
        let text = axfr_text(addr, "sign.test", 4);
        let file = self.data.write(&format!("axfr-{}", self.restarts), &text);
        if let Err(e) = verify_zone_file(&file, "sign.test") {
            panic!("{}: {when}: {e}\n{}", self.tag, self.child().log());
        }
        let (server, root, ds) = match &self.parent {
            Some((parent, _)) => {
                let serial = |at| dig(at, &["+short", "sign.test", "SOA"]);
                let end = Instant::now() + Duration::from_secs(10);
                while serial(parent.addr4()) != serial(addr) {
                    assert!(
                        Instant::now() < end,
                        "{}: {when}: the parent's copy does not catch up:\n{}",
                        self.tag,
                        parent.log()
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
                let out = Command::new(BIN)
                    .args(["key", "ds", "test", "--key-dir"])
                    .arg(self.data.path().join("pkeys"))
                    .output()
                    .unwrap();
                let ds = String::from_utf8_lossy(&out.stdout).into_owned();
                (parent.addr4(), "test", ds)
            }
            None => {
                let ds = self.ds.iter().map(|(_, l)| format!("{l}\n")).collect();
                (addr, "sign.test", ds)
            }
        };
        let anchors = ds_anchor_file(self.data.path(), &ds);
        for (name, qtype) in [("www.sign.test", "A"), ("sign.test", "DNSKEY")] {
            let (_, out) = run_judge(
                Command::new(tool("delv").unwrap())
                    .arg(format!("@{}", server.ip()))
                    .args(["-p", &server.port().to_string(), "-a"])
                    .arg(&anchors)
                    .arg(format!("+root={root}"))
                    .args([name, qtype]),
            );
            assert!(
                out.contains("fully validated"),
                "{}: {when}: delv {name} {qtype} from the {root}. anchor:\n{out}",
                self.tag
            );
        }
        self.judges.poll();
        let what = format!("{}: {when}: dnsviz", self.tag);
        // Both zones' glue: ns.ZONE on 127.0.0.1.
        let snapshot = |zone: &str, text: String| Snapshot {
            zone: zone.into(),
            axfr: text,
            ns: format!("ns.{zone}"),
            ip: Ipv4Addr::LOCALHOST,
        };
        let ds = std::fs::read_to_string(self.data.path().join("anchors.ds")).unwrap();
        if root == "test" {
            let parent = snapshot("test", axfr_text(server, "test", 3));
            let child = snapshot("sign.test", text);
            self.judges
                .chain(&what, parent, child, ds, &["www.sign.test"]);
        } else {
            self.judges
                .zone_alone(&what, ("sign.test", text), ds, &["www.sign.test"]);
        }
    }

    /// Looks at the zone every 300 ms until `done` holds of it (at most `secs`); with
    /// `kill`, each time it changes the child is killed and started again.
    pub(crate) fn run_until(
        &mut self,
        secs: u64,
        kill: bool,
        what: &str,
        done: impl Fn(&State) -> bool,
    ) {
        let end = Instant::now() + Duration::from_secs(secs);
        let mut last = self.samples.iter().rev().find_map(|s| s.state.clone());
        loop {
            let state = self.sample();
            if let Some(s) = &state {
                if done(s) {
                    return;
                }
                if kill && last.as_ref().is_some_and(|l| l != s) {
                    self.kill_and_restart();
                }
                last = state;
            }
            assert!(
                Instant::now() < end,
                "{}: not after {secs} s: {what}; last state {last:?}\n{}",
                self.tag,
                self.child().log()
            );
            std::thread::sleep(EVERY);
        }
    }

    /// The sampler's verdict over the whole run.
    pub(crate) fn check(&self) {
        let mut bad = sampler::failures(&self.samples, &self.ds_changes, TTL, TTL);
        bad.extend(self.invalid.iter().cloned());
        assert!(
            bad.is_empty(),
            "{}: {} combination(s) a cache may hold would not validate:\n{}",
            self.tag,
            bad.len(),
            bad.join("\n")
        );
        let epochs = self.samples.windows(2).filter(|w| w[0].state != w[1].state);
        println!(
            "{}: {} samples, {} changes, {} restarts, every combination validates",
            self.tag,
            self.samples.len(),
            epochs.count(),
            self.restarts
        );
    }

    /// The key's state in `shardns key list`.
    pub(crate) fn state_of(&self, tag: u16) -> String {
        let list = key_cmd(&self.keys, "list", &[]);
        list.lines()
            .find(|l| l.split_whitespace().next() == Some(&tag.to_string()))
            .and_then(|l| l.split_whitespace().nth(3))
            .unwrap_or_else(|| panic!("no key {tag}: {list}"))
            .to_string()
    }

    /// `shardns reload sign.test` against the child: its output, and whether it succeeded.
    pub(crate) fn reload(&self) -> (bool, String) {
        let out = Command::new(BIN)
            .args(["reload", "sign.test", "--control"])
            .arg(&self.child().control)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }
}

/// The parent zone `test.` with the delegation to `sign.test.` and `ds`.
fn parent_zone(ds: &[&str]) -> String {
    format!(
        "$TTL 2\n@ SOA ns admin 1 3600 600 86400 2\n@ NS ns\nns A 127.0.0.1\n\
         sign NS ns.sign\nns.sign A 127.0.0.1\n{}\n",
        ds.iter()
            .map(|l| l.replace(" IN DS ", " 2 IN DS "))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}
