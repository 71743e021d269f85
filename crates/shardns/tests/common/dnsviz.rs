//! dnsviz as an outside judge of a signed delegation: `dnsviz probe` asks the lab's
//! authoritative servers (on loopback, odd ports, no recursion anywhere), then
//! `tests/data/dnsviz_verdict.py` runs `dnsviz grok` on what it got, from a trust anchor,
//! and reads grok's JSON: errors, and BOGUS or INSECURE statuses, fail; warnings are
//! reported.

use super::{dig, find_program, free_port, free_port_on, run_judge, Server, TempDir};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One zone of the lab as dnsviz is told about it: its name, and its servers (name and
/// address; dnsviz takes `NAME=ADDR:PORT`, the port kept per server).
pub struct DnsvizZone<'a> {
    pub zone: &'a str,
    pub servers: &'a [(&'a str, SocketAddr)],
}

/// The `dnsviz` program, or `None` (not installed).
pub fn find_dnsviz() -> Option<PathBuf> {
    find_program("dnsviz", "DNSVIZ")
}

/// `dnsviz probe` then `dnsviz grok` of `names`, from `ancestor` down, the zones' servers
/// given (`zones`, the ancestor's among them), with `anchor` (DNSKEY records in zone-file
/// form, and DS records, which then pick the DNSKEYs that are the anchor) the only trust
/// anchor; its files in `dir`, named after `tag`. `Ok` with the warnings (one a line,
/// possibly none), `Err` with every error, the warnings and where the files are. An error
/// whose code is in `allowed` is reported as a warning (each use says why).
pub fn dnsviz_judge(
    dnsviz: &Path,
    dir: &Path,
    tag: &str,
    (anchor, allowed): (&str, &[String]),
    ancestor: &str,
    zones: &[DnsvizZone<'_>],
    names: &[&str],
) -> Result<String, String> {
    let probe = dir.join(format!("dnsviz-{tag}.probe.json"));
    let grok = dir.join(format!("dnsviz-{tag}.grok.json"));
    let anchor_file = dir.join("dnsviz-anchor.txt");
    std::fs::write(&anchor_file, anchor).unwrap();
    // -A: the authoritative servers themselves, not a recursive one (the lab has none);
    // -x: each zone's servers, `NAME=ADDR:PORT` (dnsviz keeps the port per server; the
    // delegations' glue names port 53); -a: the ancestor, where the analysis starts.
    let mut cmd = Command::new(dnsviz);
    cmd.args(["probe", "-A", "-4", "-a", ancestor, "-o"])
        .arg(&probe);
    let servers = |z: &DnsvizZone<'_>| {
        let list: Vec<String> = z
            .servers
            .iter()
            .map(|(name, a)| format!("{name}={}:{}", a.ip(), a.port()))
            .collect();
        list.join(",")
    };
    // The root's servers, given as the ancestor's: -A's resolver starts from the root
    // hints, and would otherwise send its queries to the real root servers (measured with
    // strace: with this, every packet goes to loopback; dnsviz's check for global
    // connectivity connects a UDP socket towards a root address but sends nothing). The
    // stand-in root makes the ancestor's own delegation look broken (its DS asked of
    // itself): the verdict reads only the names below it.
    let top = zones
        .iter()
        .find(|z| z.zone == ancestor)
        .expect("the ancestor's servers");
    cmd.arg("-x").arg(format!(".:{}", servers(top)));
    for z in zones {
        cmd.arg("-x").arg(format!("{}:{}", z.zone, servers(z)));
    }
    cmd.args(names);
    let (ok, out) = run_judge(&mut cmd);
    if !ok {
        return Err(format!("dnsviz probe failed: {cmd:?}\n{out}"));
    }
    // grok, and the reading of its JSON (which is not grepped).
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dnsviz_verdict.py");
    let (ok, verdict) = run_judge(
        Command::new("/usr/bin/python3")
            .env("DNSVIZ_ALLOWED", allowed.join(","))
            .arg(script)
            .args([&probe, &anchor_file, &grok])
            .arg(ancestor)
            .args(names),
    );
    if ok {
        Ok(verdict)
    } else {
        Err(format!(
            "dnsviz: {verdict}(probe {}, grok {})",
            probe.display(),
            grok.display()
        ))
    }
}

/// dnsviz on `zone` served alone by `server` (no parent: the zone is its own ancestor),
/// from the zone's DNSKEYs that the DS records `ds` (zone-file lines) name; `names` below
/// it asked too. Its files in `dir`, named after `tag`. As [`dnsviz_judge`].
pub fn dnsviz_zone_alone(
    dnsviz: &Path,
    dir: &Path,
    tag: &str,
    server: SocketAddr,
    (zone, ds, allowed): (&str, &str, &[String]),
    names: &[&str],
) -> Result<String, String> {
    let keys = dig(server, &["+short", "+nosplit", "+norec", zone, "DNSKEY"]);
    let mut anchor = ds.to_string();
    for k in keys.lines().filter(|l| !l.trim().is_empty()) {
        anchor.push_str(&format!("\n{zone}. 2 IN DNSKEY {k}"));
    }
    // The name of its server, as its NS RRset has it (dnsviz compares them).
    let ns = dig(server, &["+short", "+norec", zone, "NS"]);
    let ns = ns
        .lines()
        .next()
        .unwrap_or("ns")
        .trim_end_matches('.')
        .to_string();
    let mut all = vec![zone];
    all.extend_from_slice(names);
    dnsviz_judge(
        dnsviz,
        dir,
        tag,
        (&(anchor + "\n"), allowed),
        zone,
        &[DnsvizZone {
            zone,
            servers: &[(&ns, server)],
        }],
        &all,
    )
}

/// One dnsviz judgement to run: what it judges (for the messages), and the run, which owns
/// what it asks (e.g. snapshot servers, stopped when it returns).
pub type DnsvizJob = (String, Box<dyn FnOnce() -> Result<String, String> + Send>);

/// dnsviz runs in a thread of their own, one at a time, in order, so that a test sampling
/// a roll every few hundred milliseconds is not held up by a probe of seconds. Errors are
/// raised at the next [`DnsvizQueue::poll`] or at [`DnsvizQueue::finish`] (also on drop,
/// unless the test is already failing).
pub struct DnsvizQueue {
    jobs: Option<std::sync::mpsc::Sender<DnsvizJob>>,
    done: std::sync::mpsc::Receiver<(String, Result<String, String>, std::time::Duration)>,
    worker: Option<std::thread::JoinHandle<()>>,
    /// Set when the test fails: the jobs left are dropped (their servers stopped), not run.
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    queued: usize,
    /// dnsviz's error codes taken as warnings ([`Self::allow`]).
    allowed: Vec<String>,
    /// Judgements over, and their time.
    pub runs: (usize, std::time::Duration),
}

impl Default for DnsvizQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl DnsvizQueue {
    pub fn new() -> Self {
        let (jobs, rx) = std::sync::mpsc::channel::<DnsvizJob>();
        let (tx, done) = std::sync::mpsc::channel();
        let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cancelled = cancel.clone();
        let worker = std::thread::spawn(move || {
            for (label, run) in rx {
                if cancelled.load(std::sync::atomic::Ordering::Relaxed) {
                    continue;
                }
                let start = std::time::Instant::now();
                let verdict = run();
                if tx.send((label, verdict, start.elapsed())).is_err() {
                    return;
                }
            }
        });
        Self {
            jobs: Some(jobs),
            done,
            worker: Some(worker),
            cancel,
            queued: 0,
            allowed: Vec::new(),
            runs: (0, std::time::Duration::ZERO),
        }
    }

    /// From now on, dnsviz's error `code` is reported as a warning: for a known departure
    /// that the caller names and explains.
    pub fn allow(&mut self, code: &str) {
        self.allowed.push(code.to_string());
    }

    pub fn push(&mut self, job: DnsvizJob) {
        self.queued += 1;
        self.jobs.as_ref().expect("not finished").send(job).unwrap();
    }

    /// Panics on the first error among the judgements over so far; prints the warnings.
    pub fn poll(&mut self) {
        while let Ok(got) = self.done.try_recv() {
            self.take(got);
        }
    }

    /// Waits for every judgement queued (each is bounded by dnsviz's own timeouts), then
    /// as [`Self::poll`].
    pub fn finish(&mut self) {
        if self.jobs.is_none() && self.worker.is_none() {
            return; // finished already
        }
        self.jobs = None;
        if let Some(w) = self.worker.take() {
            w.join().expect("the dnsviz thread");
        }
        self.poll();
        assert_eq!(self.queued, 0, "dnsviz judgements lost");
        if self.runs.0 > 0 {
            let (runs, time) = self.runs;
            println!("dnsviz: {runs} judgements, {time:.1?} in its thread");
        }
    }

    /// Queues dnsviz on a parent and its child as `parent` and `child` have them (each a
    /// [`Snapshot`]: the zone as transferred now), from `anchor`: the parent's DNSKEY
    /// (zone-file form), or its DS records, which then pick among the parent's DNSKEYs as
    /// served. In dnsviz's thread, a shardns of its own serves each snapshot (on the
    /// address its glue names, a port of its own) while dnsviz asks it, so that the test
    /// goes on (a roll's steps do not wait) and the probe sees one state. The names asked:
    /// the child's apex and `names`.
    pub fn chain(
        &mut self,
        what: &str,
        parent: Snapshot,
        child: Snapshot,
        anchor: String,
        names: &[&str],
    ) {
        let dnsviz = find_dnsviz().expect("dnsviz");
        let run = next_run();
        let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        names.insert(0, child.zone.clone());
        let allowed = self.allowed.clone();
        let job = move || {
            let dir = TempDir::new(&format!("dnsviz-snapshot-{run}"));
            let (p, p_at) = parent.serve(&dir, run);
            let (c, c_at) = child.serve(&dir, run);
            let mut anchor = anchor;
            if anchor.contains(" DS ") {
                let keys = dig(
                    p_at,
                    &["+short", "+nosplit", "+norec", &parent.zone, "DNSKEY"],
                );
                for k in keys.lines().filter(|l| !l.trim().is_empty()) {
                    anchor.push_str(&format!("\n{}. 2 IN DNSKEY {k}", parent.zone));
                }
            }
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let verdict = dnsviz_judge(
                &dnsviz,
                dir.path(),
                "snapshot",
                (&(anchor + "\n"), &allowed),
                &parent.zone,
                &[
                    DnsvizZone {
                        zone: &parent.zone,
                        servers: &[(&parent.ns, p_at)],
                    },
                    DnsvizZone {
                        zone: &child.zone,
                        servers: &[(&child.ns, c_at)],
                    },
                ],
                &names,
            );
            drop((p, c));
            verdict.map_err(|e| format!("{e}\nthe child's zone:\n{}", child.axfr))
        };
        self.push((what.to_string(), Box::new(job)));
    }

    /// Queues dnsviz on `zone` alone as `axfr` has it (the zone as transferred now; `what`
    /// names it in the messages), from the DNSKEYs that `ds` (DS records in zone-file form)
    /// name, `names` below it asked too ([`dnsviz_zone_alone`]): in dnsviz's thread, a
    /// shardns of its own serves the snapshot on 127.0.0.1 while dnsviz asks it, so that
    /// the test goes on (a roll's steps do not wait) and the probe sees one state.
    pub fn zone_alone(
        &mut self,
        what: &str,
        (zone, axfr): (&str, String),
        ds: String,
        names: &[&str],
    ) {
        let dnsviz = find_dnsviz().expect("dnsviz");
        let run = next_run();
        let zone = zone.to_string();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let allowed = self.allowed.clone();
        let job = move || {
            let dir = TempDir::new(&format!("dnsviz-snapshot-{run}"));
            let file = dir.write("zone", &axfr);
            let at = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, free_port()));
            let arg = format!("{zone}={}", file.display());
            let tag = format!("dnsviz-snapshot-{run}-server");
            let server = Server::start_at(&tag, &[at], &["--workers", "1", "--zone", &arg]);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let verdict = dnsviz_zone_alone(
                &dnsviz,
                dir.path(),
                "snapshot",
                at,
                (&zone, &ds, &allowed),
                &names,
            );
            drop(server);
            verdict.map_err(|e| format!("{e}\nthe zone:\n{axfr}"))
        };
        self.push((what.to_string(), Box::new(job)));
    }

    fn take(
        &mut self,
        (label, verdict, time): (String, Result<String, String>, std::time::Duration),
    ) {
        self.queued -= 1;
        self.runs.0 += 1;
        self.runs.1 += time;
        match verdict {
            Ok(warnings) => print!("{warnings}"),
            Err(e) => panic!("{label}: {e}"),
        }
    }
}

impl Drop for DnsvizQueue {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.finish();
            return;
        }
        // Failing already: the run under way ends, the others are dropped; either way the
        // servers they own are stopped before the test process exits.
        self.cancel
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.jobs = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// A number for each snapshot of the test process, for its directory and server.
fn next_run() -> usize {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A zone as transferred at one moment, to be served for dnsviz ([`DnsvizQueue::chain`]).
pub struct Snapshot {
    pub zone: String,
    /// Its text, one record a line ([`axfr_text`](super::axfr_text)).
    pub axfr: String,
    /// The name of its server, as its NS RRset and the glue have it.
    pub ns: String,
    /// The address to serve it on (a port of its own), as the glue has it.
    pub ip: std::net::Ipv4Addr,
}

impl Snapshot {
    /// Serves it from a file in `dir`: the server and its address.
    fn serve(&self, dir: &TempDir, run: usize) -> (Server, SocketAddr) {
        let file = dir.write(&format!("{}.zone", self.zone), &self.axfr);
        let at = SocketAddr::from((self.ip, free_port_on(self.ip)));
        let arg = format!("{}={}", self.zone, file.display());
        let tag = format!("dnsviz-snapshot-{run}-{}", self.zone);
        let server = Server::start_at(&tag, &[at], &["--workers", "1", "--zone", &arg]);
        (server, at)
    }
}
