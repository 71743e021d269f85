//! parent -- the parent's DS, checked and pushed (issue 29 item 2; Knot's `ksk-submission`
//! and `ds-push`, BIND's `parental-agents` and `checkds`).
//!
//! A thread of the control plane ([`DsChecker`]) keeps the zones whose `[[zone]]` names
//! `parent_agents` (addresses, or `"resolve"`: the parent's NS set looked up through
//! `parent_resolvers` at each check, `resolve`) or `ds_push`. At every `ds_check_interval`, and as soon as such a zone
//! is signed (a rollover may have started), it reads the zone's keys and looks for
//! something to wait for at the parent (`task::want`): the DS of a new KSK or CSK
//! (`ds-pending`), the DS of a withdrawn key to be gone, an algorithm rollover's old
//! algorithm to leave the DS set (its DNSKEYs withdrawn only then), or no DS at all with
//! `cds_cdnskey_publish = "delete-dnssec"`. Then it asks every server of the parent for the
//! zone's DS (`query`: UDP, TCP on TC, TSIG with `parent_agents_key`), and only when all
//! of them answer and all meet the goal does it act: a new key's DS is confirmed exactly as
//! `shardns key submitted` does ([`crate::signing::confirm_submitted`]) and the zone is read
//! again (a queued reload, as the re-signing timer asks); so is an algorithm rollover's
//! old DS gone (`crate::signing::confirm_old_ds_gone`); the others are noted in
//! `KEYDIR/state/<zone>.parent` so they are not asked again. One log line a check says what
//! each server answered. A server that does not answer, or disagrees, keeps the wait: never
//! an early confirmation.
//!
//! With `ds_push`, while the parent does not show what is wanted, the DS set the parent is
//! to hold is pushed to that server by a TSIG-signed UPDATE (`push`) unless it already
//! serves exactly that set; failures are retried with a growing delay. With nothing else
//! to wait for, a push also keeps a DS of the current key at the parent
//! (`task::present`: a new zone's first DS, or one given back after going insecure).

mod push;
mod query;
mod resolve;
mod task;
#[cfg(test)]
mod tests;

use crate::request::{MainAction, ReloadRequest, Timer};
use crate::signing::{state_path, write_atomic};
use shardns_config::{Config, ParentAgents, ZoneConfig};
use shardns_dnssec::{CdsPublish, DigestType, KeyStore};
use shardns_sys::unix_now;
use shardns_wire::tsig::Key;
use shardns_wire::Name;
use std::collections::HashMap;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;
use task::{Confirmed, Goal, KeyView, Want};
use tracing::{debug, info, warn};

/// How one zone's parent is checked and pushed to, from its `[[zone]]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentSpec {
    key_dir: PathBuf,
    agents: Vec<SocketAddr>,
    /// Not empty: the parent's servers are looked up through these at each check.
    resolvers: Vec<SocketAddr>,
    agents_key: Option<Key>,
    interval: u64,
    push: Option<SocketAddr>,
    push_key: Option<Key>,
    ds_ttl: u32,
    mode: CdsPublish,
    digest: DigestType,
}

impl ParentSpec {
    /// The parent settings of `zone`, if it is signed here and names a parent server.
    /// Without `parent_agents`, the `ds_push` server is the one asked; with
    /// `parent_agents = "resolve"`, the servers found through `parent_resolvers`.
    pub fn of(config: &Config, zone: &ZoneConfig) -> Option<Self> {
        if !zone.dnssec || zone.is_secondary() {
            return None;
        }
        let key_dir = config.server.key_directory.clone()?;
        let key = |name: &Option<Name>| {
            let name = name.as_ref()?;
            config
                .keys
                .iter()
                .find(|k| &k.0.name == name)
                .map(|k| k.0.clone())
        };
        let mut agents = zone.parent_agents.listed().to_vec();
        let resolvers = match zone.parent_agents {
            ParentAgents::Resolve => zone.parent_resolvers.clone(),
            ParentAgents::Listed(_) => Vec::new(),
        };
        if agents.is_empty() && resolvers.is_empty() {
            agents.extend(zone.ds_push);
        }
        if agents.is_empty() && resolvers.is_empty() {
            return None;
        }
        let only_push = zone.parent_agents.is_empty();
        Some(Self {
            key_dir,
            agents,
            resolvers,
            agents_key: key(if only_push {
                &zone.ds_push_key
            } else {
                &zone.parent_agents_key
            }),
            interval: u64::from(zone.ds_check_interval.max(1)),
            push: zone.ds_push,
            push_key: key(&zone.ds_push_key),
            ds_ttl: zone.parent_ds_ttl,
            mode: zone.cds_cdnskey_publish,
            digest: zone.cds_digest_type,
        })
    }
}

/// A server's DS set (rdata), or why it gave none.
type DsAnswer = Result<Vec<Vec<u8>>, String>;

/// What the control plane tells the checker.
enum Msg {
    /// The zones to watch, replacing the ones before.
    Configure(HashMap<Name, ParentSpec>),
    /// A zone was signed: check it now.
    Signed(Name),
}

/// The handle of the checker's thread, which ends when it is dropped.
pub struct DsChecker {
    tx: Sender<Msg>,
}

impl DsChecker {
    /// Starts the thread; a zone whose new DS is confirmed is asked to be read again on
    /// `reloads`.
    pub fn start(reloads: Sender<ReloadRequest>) -> io::Result<Self> {
        let reload = Timer::start("shardns-ds-reload", MainAction::Reload, reloads, |z| {
            info!("the parent's DS confirmed: signing again ({})", names(z));
        })?;
        let seed = shardns_sys::seed::random_u64()?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("shardns-ds-check".into())
            .spawn(move || run(&rx, &reload, seed))?;
        Ok(Self { tx })
    }

    /// Watches the zones of `config` that name a parent server (and no others).
    pub fn configure(&self, config: &Config) {
        let mut specs = HashMap::new();
        // A later table for the same zone wins, as everywhere in the config.
        for z in &config.zones {
            match ParentSpec::of(config, z) {
                Some(spec) => specs.insert(z.name.clone(), spec),
                None => specs.remove(&z.name),
            };
        }
        let _ = self.tx.send(Msg::Configure(specs));
    }

    /// `zone` was just signed: checked now if it is watched.
    pub fn signed(&self, zone: &Name) {
        let _ = self.tx.send(Msg::Signed(zone.clone()));
    }
}

fn names(zones: &[Name]) -> String {
    zones
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One watched zone: its settings and when it is due.
struct Watched {
    spec: ParentSpec,
    next: u64,
    /// Failed pushes in a row, and when the next push may go.
    push_failures: u32,
    next_push: u64,
}

fn run(rx: &Receiver<Msg>, reload: &Timer, seed: u64) {
    let mut zones: HashMap<Name, Watched> = HashMap::new();
    let mut ids = Ids { seed, count: 0 };
    loop {
        let now = unix_now();
        let wait = zones
            .values()
            .map(|w| w.next)
            .min()
            .map_or(Duration::from_secs(3600), |at| {
                Duration::from_secs(at.saturating_sub(now))
            });
        match rx.recv_timeout(wait) {
            Ok(Msg::Configure(specs)) => {
                let mut old = std::mem::take(&mut zones);
                for (name, spec) in specs {
                    let w = match old.remove(&name) {
                        Some(w) if w.spec == spec => w,
                        _ => Watched {
                            spec,
                            next: now,
                            push_failures: 0,
                            next_push: now,
                        },
                    };
                    zones.insert(name, w);
                }
                continue;
            }
            Ok(Msg::Signed(name)) => {
                if let Some(w) = zones.get_mut(&name) {
                    w.next = now;
                }
                continue;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let now = unix_now();
        let due: Vec<Name> = zones
            .iter()
            .filter(|(_, w)| w.next <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for name in due {
            if let Some(w) = zones.get_mut(&name) {
                w.next = check(&name, w, &mut ids, reload);
            }
        }
    }
}

/// Query IDs nobody off the path can guess: a keyed hash of a counter.
struct Ids {
    seed: u64,
    count: u64,
}

impl Ids {
    fn next(&mut self) -> u16 {
        self.count += 1;
        shardns_sys::seed::keyed_hash(self.seed, &[self.count]) as u16
    }
}

/// One check of `apex`'s parent; returns when to check next.
fn check(apex: &Name, w: &mut Watched, ids: &mut Ids, reload: &Timer) -> u64 {
    let spec = &w.spec;
    let now = unix_now();
    let next = now + spec.interval;
    let done_file = DoneFile::new(&spec.key_dir, apex);
    let mut done = done_file.read();
    let keys = match load_keys(&spec.key_dir, apex) {
        Ok(keys) => keys,
        Err(e) => {
            warn!("zone {apex}: parent DS check: cannot read the keys: {e}");
            return next;
        }
    };
    // Out of delete-dnssec (signed again): a later delete is checked anew.
    if done.insecure && spec.mode != CdsPublish::DeleteDnssec {
        done.insecure = false;
        done_file.write(&done);
    }
    let wanted = task::want(apex, &keys, spec.mode, spec.digest, &done, now);
    // With a push, the parent is also kept holding a DS of the current key.
    let wanted = wanted.or_else(|| {
        spec.push
            .and_then(|_| task::present(apex, &keys, spec.digest, now))
    });
    let Some(want) = wanted else {
        debug!("zone {apex}: nothing to check at the parent");
        return next;
    };
    let agents = match servers(apex, spec, ids) {
        Ok(agents) => agents,
        Err(e) => {
            // Never on a part of the parent: the whole check waits for a lookup that works.
            warn!(
                "zone {apex}: waiting for {}: the parent's servers not found through {}: {e}; \
                 next check in {} s",
                want.goal.what(),
                list(&spec.resolvers),
                spec.interval
            );
            return next;
        }
    };
    let answers: Vec<(SocketAddr, DsAnswer)> = agents
        .iter()
        .map(|&a| {
            (
                a,
                query::ds_set(a, apex, ids.next(), spec.agents_key.as_ref()),
            )
        })
        .collect();
    let all = answers.iter().all(|(_, a)| {
        a.as_ref()
            .is_ok_and(|set| task::meets(apex, &want.goal, set))
    });
    let said = answers
        .iter()
        .map(|(a, r)| match r {
            Ok(set) => format!("{a}: {}", task::describe(set)),
            Err(e) => format!("{a}: {e}"),
        })
        .collect::<Vec<_>>()
        .join("; ");
    if all && matches!(want.goal, Goal::Present { .. }) {
        // The steady state: said only when debugging, not once per check.
        debug!("zone {apex}: the parent serves a DS of the current key ({said})");
        w.push_failures = 0;
        return next;
    }
    if all {
        let n = agents.len();
        confirmed(apex, spec, n, &want, &mut done, &done_file, &said, reload);
        w.push_failures = 0;
        return next;
    }
    let failed = answers.iter().any(|(_, a)| a.is_err());
    let line = format!(
        "zone {apex}: waiting for {} at all {} parent server(s): {said}; next check in {} s",
        want.goal.what(),
        agents.len(),
        spec.interval
    );
    if failed {
        warn!("{line}");
    } else {
        info!("{line}");
    }
    match spec.push {
        Some(to) if now >= w.next_push => {
            let known = answers
                .iter()
                .find(|(a, _)| *a == to)
                .map(|(_, r)| r.clone());
            pushed(apex, w, to, known, &want, ids, now).min(next)
        }
        Some(_) => w.next_push.min(next),
        None => next,
    }
}

/// Every server (`n` of them) met `want`: acts on it and says so.
#[allow(clippy::too_many_arguments)]
fn confirmed(
    apex: &Name,
    spec: &ParentSpec,
    n: usize,
    want: &Want,
    done: &mut Confirmed,
    done_file: &DoneFile,
    said: &str,
    reload: &Timer,
) {
    match &want.goal {
        Goal::Submit { tag, .. } => {
            match crate::signing::confirm_checked(apex, &spec.key_dir, *tag, unix_now()) {
                Ok(c) => {
                    info!(
                        "zone {apex}: all {n} parent server(s) serve the DS of {} {tag} ({said}): \
                         confirmed, as `shardns key submitted` does; it signs from {}",
                        c.new.role,
                        c.new
                            .activate
                            .map_or("-".into(), shardns_dnssec::keys::format_time)
                    );
                    reload.schedule(apex.clone(), unix_now());
                }
                Err(e) => warn!("zone {apex}: the parent serves the new DS, but: {e}"),
            }
        }
        Goal::Withdraw { gone, .. } => {
            done.withdrawn.extend(gone.iter().map(|(t, _)| *t));
            done_file.write(done);
            info!(
                "zone {apex}: all {n} parent server(s) serve the new DS and no longer that of \
                 withdrawn key(s) {} ({said}): the rollover is over at the parent",
                gone.iter()
                    .map(|(t, _)| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        Goal::OldAlgorithm { old, .. } => {
            match crate::signing::confirm_old_ds_gone(apex, &spec.key_dir, unix_now()) {
                Ok(keys) => {
                    // The key files first: they are the roll's state; `done` only spares a
                    // later check (a crash between the two asks once more, harmlessly).
                    done.withdrawn.extend(old.iter().copied());
                    done_file.write(done);
                    let at = keys.iter().filter_map(|k| k.delete).max();
                    info!(
                        "zone {apex}: all {n} parent server(s) serve the new DS and none of the \
                         old algorithm ({said}): the old DNSKEYs are withdrawn at {}, their \
                         signatures a DNSKEY TTL + propagation_delay later",
                        at.map_or("-".into(), shardns_dnssec::keys::format_time)
                    );
                    reload.schedule(apex.clone(), unix_now());
                }
                Err(e) => warn!("zone {apex}: the parent dropped the old DS, but: {e}"),
            }
        }
        Goal::Present { .. } => {}
        Goal::Insecure => {
            done.insecure = true;
            done_file.write(done);
            let after = unix_now() + u64::from(spec.ds_ttl);
            info!(
                "zone {apex}: all {n} parent server(s) serve no DS ({said}): the zone is \
                 insecure at the parent; set `dnssec = false` once cached DS have expired, \
                 after {} (parent_ds_ttl from now)",
                shardns_dnssec::keys::format_time(after)
            );
        }
    }
}

/// Pushes the DS set `want.ds` to `to` unless it already serves exactly that (`known`:
/// its answer to this check, if it is one of the agents); returns when to check next.
fn pushed(
    apex: &Name,
    w: &mut Watched,
    to: SocketAddr,
    known: Option<DsAnswer>,
    want: &Want,
    ids: &mut Ids,
    now: u64,
) -> u64 {
    let spec = &w.spec;
    let key = spec.push_key.as_ref();
    let serves = known.unwrap_or_else(|| query::ds_set(to, apex, ids.next(), key));
    if serves.as_ref().is_ok_and(|set| *set == want.ds) {
        debug!("zone {apex}: {to} serves the DS set already; not pushed");
        return now + spec.interval;
    }
    match push::push(
        to,
        key,
        apex,
        &want.ds,
        spec.ds_ttl,
        [ids.next(), ids.next()],
    ) {
        Ok(zone) => {
            info!(
                "zone {apex}: DS set pushed to {to} (zone {zone}): {}",
                task::describe(&want.ds)
            );
            w.push_failures = 0;
            w.next_push = now + spec.interval;
            // Soon again: the push shows at the servers asked once they have it.
            now + spec.interval.min(10)
        }
        Err(e) => {
            w.push_failures += 1;
            let delay = push::backoff(w.push_failures, spec.interval);
            w.next_push = now + delay;
            warn!(
                "zone {apex}: DS push to {to} failed ({} in a row): {e}; again in {delay} s",
                w.push_failures
            );
            w.next_push
        }
    }
}

/// The servers to ask for `apex`'s DS: those listed, or those found by resolving.
fn servers(apex: &Name, spec: &ParentSpec, ids: &mut Ids) -> Result<Vec<SocketAddr>, String> {
    if spec.resolvers.is_empty() {
        return Ok(spec.agents.clone());
    }
    let found = resolve::parent_servers(&spec.resolvers, apex, ids)?;
    // "All of none agree" must never confirm anything.
    if found.servers.is_empty() {
        return Err(format!("no server found for {}", found.zone));
    }
    debug!(
        "zone {apex}: the parent zone {} has the servers {} (resolved)",
        found.zone,
        list(&found.servers)
    );
    Ok(found.servers)
}

fn list(addrs: &[SocketAddr]) -> String {
    addrs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The zone's keys as the check sees them.
fn load_keys(key_dir: &Path, apex: &Name) -> Result<Vec<KeyView>, String> {
    let store = KeyStore::open(key_dir).map_err(|e| e.to_string())?;
    let keys = store.load(apex).map_err(|e| e.to_string())?;
    Ok(keys
        .into_iter()
        .map(|k| KeyView {
            dnskey: k.key.dnskey_rdata().to_vec(),
            meta: k.meta,
        })
        .collect())
}

/// What the check confirmed and need not ask again: `KEYDIR/state/<zone>.parent`, lines
/// `withdrawn TAG` and `insecure`.
struct DoneFile {
    path: PathBuf,
}

impl DoneFile {
    fn new(key_dir: &Path, apex: &Name) -> Self {
        Self {
            path: state_path(key_dir, apex, "parent"),
        }
    }

    /// What the file says (nothing if it is missing or does not read).
    fn read(&self) -> Confirmed {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let mut done = Confirmed::default();
        for line in text.lines() {
            match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["withdrawn", tag] => done.withdrawn.extend(tag.parse::<u16>().ok()),
                ["insecure"] => done.insecure = true,
                _ => {}
            }
        }
        done
    }

    fn write(&self, done: &Confirmed) {
        let written = write_atomic(&self.path, |w| {
            writeln!(
                w,
                "; the parent's DS as the DS check confirmed it (shardns)"
            )?;
            for tag in &done.withdrawn {
                writeln!(w, "withdrawn {tag}")?;
            }
            if done.insecure {
                writeln!(w, "insecure")?;
            }
            Ok(())
        });
        if let Err(e) = written {
            warn!("{e}");
        }
    }
}
