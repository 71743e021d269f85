//! update -- dynamic update (RFC 2136) in the control plane: who may change a zone, and the
//! change made, journaled and announced before the answer goes back.
//!
//! A worker that reads an UPDATE hands it over whole ([`Inbox::submit`]: a bounded queue and
//! a SIGUSR1 to the main thread) with a way back for the answer (the job's `reply`, which
//! the worker's late-answer path sends, as it sends the resolver's). The main thread, which
//! alone changes the zone set (reloads, transfers in), takes every queued update at once
//! ([`process`]): each is checked (the zone is ours and a primary zone; the TSIG against
//! `[[key]]`, as the worker verified it: the job carries the verdict, `checked`; the
//! zone's `update_policy`, prerequisites and the RFC's rules in
//! `shardns_zone::update::update_as`) and applied to the zone's latest version, so that
//! updates to one zone in one batch build on each other. Then the new versions are served in
//! one swap, recorded in the zones' journals (written and synced) and announced to the
//! secondaries by NOTIFY (`reload::serve_outside`), and only then are the answers sent:
//! a client told NOERROR finds its change answered by every worker and kept on disk.
//!
//! A signed zone (`dnssec = true`) has each change signed before it is served (`sign`:
//! new RRSIGs for what changed, the NSEC or NSEC3 chain patched), its unsigned part kept
//! for the signings of the zone whole (`crate::signing::updates`). Beside it: `limit`, the
//! token bucket per key or address prefix that refuses a flood before an update is read
//! further; `tally`, the batch's answers counted into the stats; `txn`, the operator's
//! transactions on the control socket, committed as a [`Job`] of theirs; `forward`, an
//! update to a secondary zone (or a consumed catalog's member) passed on to its primary
//! (`update_forwarding`, else REFUSED) off the main thread. An unsigned zone's file is written back later (`crate::zonefile`).

mod sign;

mod checked;
mod forward;
mod limit;
mod tally;
mod txn;

pub use checked::{Refusal, Signed, Tsig};
pub use limit::RateLimiter;
pub use txn::{Transactions, COMMIT_WAIT};

use crate::reload::{serve_touched, Reloader};
use crate::signed::tsig_refusal;
use crate::Host;
use shardns_config::{Config, ZoneConfig};
use shardns_wire::tsig::{self, Signer};
use shardns_wire::{Name, Query, Rcode};
use shardns_zone::update::{
    update_as, Grant, Limits, Names, Outcome, Policy, Requester, Types, Who,
};
use shardns_zone::{notify_answer, Zone, ZoneChange, ZoneSet};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard};
use tracing::{debug, info, warn};

/// Updates waiting for the main thread at most; past it an update is refused at once. Its
/// slots are made when the server starts (4,096 of them cost 0.26 MiB of resident memory,
/// measured), and a main thread that keeps up holds a batch of at most the clients' updates
/// in flight: 512 leaves a burst from hundreds of clients room.
const QUEUE: usize = 512;

/// Refusals logged at info per batch; the rest at debug.
const LOG_PER_BATCH: u32 = 10;

/// Room for an answer: the zone section and a TSIG fit in far less.
const ANSWER_MAX: usize = 1024;

/// One update a worker read: the message, who sent it, and where its answer goes.
pub struct Job {
    /// The UPDATE message as received.
    pub message: Vec<u8>,
    /// The client's address (the policy may grant by address).
    pub peer: IpAddr,
    /// Made by the operator on the control socket (a transaction): no TSIG, no policy; the
    /// RFC's rules and the prerequisites still apply.
    pub operator: bool,
    /// Its TSIG, read and verified once, where it was received ([`Tsig::check`]).
    pub tsig: Tsig,
    /// Sends the answer to the client (called once, from the main thread).
    pub reply: Box<dyn FnOnce(Vec<u8>) + Send>,
}

/// Where workers queue the updates they read.
pub struct Inbox {
    queue: SyncSender<Job>,
    /// A SIGUSR1 is on its way for what is queued (so one signal serves a burst).
    woken: AtomicBool,
    /// Some zone has an update policy (else a worker refuses an update itself).
    enabled: AtomicBool,
    /// Updates refused because the queue was full.
    pub dropped: AtomicU64,
    /// The token buckets of `limits.updates_per_second` (`limit`), used on the main thread.
    pub limiter: Mutex<RateLimiter>,
    /// The operator's open transactions (`txn`), used on the control thread.
    pub transactions: Transactions,
}

impl Inbox {
    /// An inbox and the receiver the main thread drains ([`process`]).
    pub fn new() -> (Self, Receiver<Job>) {
        let (queue, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let inbox = Self {
            queue,
            woken: AtomicBool::new(false),
            enabled: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            limiter: Mutex::default(),
            transactions: Transactions::default(),
        };
        (inbox, rx)
    }

    /// Whether some zone may be updated.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// Says whether some zone of `config` may be updated (at start and at every reload).
    pub fn configure(&self, config: &Config) {
        let any = config
            .zones
            .iter()
            .any(|z| z.updatable() || !z.update_forwarding.is_empty())
            || config
                .templates
                .iter()
                .any(|t| !t.update_forwarding.is_empty());
        self.enabled.store(any, Relaxed);
        self.limiter().configure(config);
    }

    fn limiter(&self) -> MutexGuard<'_, RateLimiter> {
        self.limiter.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job` and wakes the main thread; gives it back when the queue is full.
    pub fn submit(&self, job: Job) -> Result<(), Job> {
        match self.queue.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                self.dropped.fetch_add(1, Relaxed);
                return Err(job);
            }
        }
        if !self.woken.swap(true, Relaxed) {
            if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGUSR1) {
                warn!("update: cannot wake the main thread: {e}");
            }
        }
        Ok(())
    }
}

/// The main thread's step: every queued update checked and applied, the new versions served,
/// journaled and announced, then every answer sent.
pub fn process(reloader: &mut Reloader, host: &dyn Host, rx: &Receiver<Job>) {
    let plane = host.plane();
    // Cleared before draining: a job queued from now on sends a signal of its own.
    plane.updates.woken.store(false, Relaxed);
    let jobs: Vec<Job> = rx.try_iter().collect();
    if jobs.is_empty() {
        return;
    }
    let now = shardns_sys::unix_now();
    let set = plane.zones.load_full();
    let mut batch = Batch {
        config: &reloader.config,
        set: &set,
        latest: HashMap::new(),
        touched: HashMap::new(),
        policies: HashMap::new(),
        catalog_member: &|apex: &Name| {
            plane
                .secondary
                .as_ref()
                .is_some_and(|i| i.is_catalog_member(apex.as_ref()))
        },
        logged: 0,
        signed: Default::default(),
    };
    let mut answers = Vec::with_capacity(jobs.len());
    let mut tally = tally::Tally::default();
    let mut limiter = plane.updates.limiter();
    let instant = std::time::Instant::now();
    for job in jobs {
        let limited = limiter.over(&job, now, instant);
        // A secondary zone's update for its primary: off this thread at once.
        let to = limited
            .is_none()
            .then(|| forward::target(batch.config, plane.secondary.as_ref(), &job))
            .flatten();
        if let Some(to) = to {
            forward::start(job, to, &plane.stats.updates_forwarded);
            continue;
        }
        let answer = match limited {
            Some(refused) => {
                tally.rate_limited += 1;
                let zone = Query::parse(&job.message)
                    .map_or_else(|_| Name::root(), |q| q.qname().to_name());
                let _ = batch.refuse(
                    &zone,
                    job.peer,
                    Rcode::REFUSED,
                    "over limits.updates_per_second",
                );
                Some(refused)
            }
            None => {
                let answer = batch.one(&job, now);
                tally.count(answer.as_deref());
                answer
            }
        };
        answers.push((job.reply, answer));
    }
    drop(limiter);
    tally.add_to(&plane.stats, plane.updates.dropped.load(Relaxed));
    let kept = batch.signed.take();
    let changes: Vec<ZoneChange> = batch
        .latest
        .into_values()
        // Served as the updates left them, in copy-on-write pages: packing a small zone
        // into one allocation here made the next batch copy it back out, two copies of the
        // zone per batch (42 % of a signed zone's update CPU, BENCHMARKS "Dynamic update"),
        // for lookups 3 % faster in the answer bench (`a_1000_names_split`). The next full
        // build (a reload, a restart) packs it again.
        .map(ZoneChange::Put)
        .collect();
    // The journal diffs each zone at the names its updates changed, not the zone whole.
    let touched: crate::journal::Touched = batch
        .touched
        .into_iter()
        .filter_map(|(apex, names)| Some((apex, names?)))
        .collect();
    // The set read here is let go first: serving the new one waits until only the
    // library holds the old one.
    drop(set);
    let changed: Vec<Name> = changes
        .iter()
        .filter_map(|c| match c {
            ZoneChange::Put(z) => Some(z.apex().to_name()),
            ZoneChange::Remove(_) => None,
        })
        .collect();
    std::thread::scope(|scope| {
        // The signed zones' kept changes synced beside the journal's write, not before it:
        // two files, two waits for the disk, overlapped (both done before any answer).
        let kept = (!kept.is_empty()).then(|| scope.spawn(|| sign::finish_batch(kept)));
        serve_touched(reloader, host, changes, Some(&touched));
        if kept.is_some_and(|k| k.join().is_err()) {
            tracing::error!("update: the sync of the kept changes panicked");
        }
    });
    // Into the zone files later (`zonefile`): the journal holds the changes until then.
    for apex in changed {
        let delay = reloader
            .config
            .zone_table(&apex)
            .and_then(|z| z.zonefile_sync);
        if let Some(delay) = delay {
            reloader.flusher.changed(&apex, now, delay);
        }
    }
    for (reply, answer) in answers {
        if let Some(answer) = answer {
            reply(answer);
        }
    }
}

/// One batch of updates on the main thread.
struct Batch<'a> {
    config: &'a Config,
    set: &'a ZoneSet,
    /// The versions made in this batch, by apex: later updates build on them.
    latest: HashMap<Name, Arc<Zone>>,
    /// The owner names this batch changed, by apex (`None`: not known, as when signing
    /// changed others too: the journal compares the zone whole).
    touched: HashMap<Name, Option<Vec<Name>>>,
    /// Each zone's policy, read once per batch (`None`: it does not read).
    policies: HashMap<Name, Option<Arc<Policy>>>,
    catalog_member: &'a dyn Fn(&Name) -> bool,
    /// Refusals logged at info so far.
    logged: u32,
    /// The signed zones this batch changed: their kept changes are synced once at the
    /// batch's end, beside the journal's write and before any answer goes out
    /// (`sign::finish_batch`).
    signed: std::cell::RefCell<HashMap<Name, sign::Signed>>,
}

impl Batch<'_> {
    /// The answer to one update (`None`: not a message to answer). Its TSIG is the verdict
    /// the job carries, not verified again.
    fn one(&mut self, job: &Job, now: u64) -> Option<Vec<u8>> {
        let (message, peer, operator) = (&job.message[..], job.peer, job.operator);
        let query = Query::parse(message).ok()?;
        let mut out = vec![0u8; ANSWER_MAX];
        let key = match &job.tsig {
            Tsig::Unsigned => None,
            Tsig::Malformed => {
                let w = notify_answer(&query, Rcode::FORMERR, &mut out);
                out.truncate(w.len);
                return Some(out);
            }
            Tsig::Signed(signed) => match &signed.verdict {
                Ok(key) => Some((key, &signed.sig)),
                Err(refusal) => {
                    let failure = refusal.failure();
                    let sig = &signed.sig;
                    let w = tsig_refusal(sig, &failure, now, &mut out, |rcode, o| {
                        notify_answer(&query, rcode, o)
                    });
                    let error = match failure.error() {
                        tsig::BADSIG => "BADSIG",
                        tsig::BADKEY => "BADKEY",
                        tsig::BADTIME => "BADTIME",
                        tsig::BADTRUNC => "BADTRUNC",
                        _ => "error",
                    };
                    info!(
                        "update of {} from {peer} refused: TSIG {error} (key {})",
                        query.qname(),
                        sig.key
                    );
                    out.truncate(w.len);
                    return Some(out);
                }
            },
        };
        let rcode = self.decide(&query, message, key.map(|k| &k.0.name), peer, operator, now);
        let mut w = notify_answer(&query, rcode, &mut out);
        if let Some((key, sig)) = key {
            w.len = Signer::new(key, sig).sign(&mut out, w.len, now);
        }
        out.truncate(w.len);
        Some(out)
    }

    /// The rcode for an update whose TSIG (if any) verified as `key`; an accepted change is
    /// applied to the zone's latest version.
    fn decide(
        &mut self,
        query: &Query<'_>,
        message: &[u8],
        key: Option<&Name>,
        peer: IpAddr,
        operator: bool,
        now: u64,
    ) -> Rcode {
        let apex = query.qname().to_name();
        let zone = match self
            .latest
            .get(&apex)
            .or_else(|| self.set.get(apex.as_ref()))
        {
            Some(z) if !z.is_unavailable() => Arc::clone(z),
            // Not a zone of ours (RFC 2136 §3.1.1), or a secondary with nothing to serve.
            _ => return self.refuse(&apex, peer, Rcode::NOTAUTH, "not a zone served here"),
        };
        let table = self.config.zone_table(&apex);
        let Some(table) = table.filter(|t| t.primary.is_empty() && !(self.catalog_member)(&apex))
        else {
            return self.refuse(
                &apex,
                peer,
                Rcode::REFUSED,
                "a secondary zone (no update_forwarding for this address)",
            );
        };
        let policy = if operator {
            Arc::new(operator_policy())
        } else {
            match self.policy(table) {
                Some(p) => p,
                None => return self.refuse(&apex, peer, Rcode::REFUSED, "no update_policy"),
            }
        };
        let who = Requester {
            key: key.map(|k| k.as_ref()),
            addr: peer,
        };
        match update_as(message, &zone, &policy, &who, table.serial_policy, now) {
            Err(refusal) => self.refuse(&apex, peer, refusal.rcode, &refusal.why),
            Ok(Outcome::Unchanged) => Rcode::NOERROR,
            Ok(Outcome::Change(change)) => match self.version(table, &zone, &change, now) {
                Ok((new, changed)) => {
                    info!(
                        "update of {apex} from {peer}: serial {} -> {}, {} records deleted, {} added",
                        zone.serial(),
                        new.serial(),
                        change.deleted.len(),
                        change.added.len()
                    );
                    // The names the journal diffs this zone at (`None`: the zone whole).
                    let names = self.touched.entry(apex.clone()).or_insert(Some(Vec::new()));
                    match (names, changed) {
                        (Some(names), Some(changed)) => names.extend(changed),
                        (names, _) => *names = None,
                    }
                    self.latest.insert(apex, Arc::new(new));
                    Rcode::NOERROR
                }
                Err(e) => {
                    warn!("update of {apex} from {peer}: SERVFAIL: {e}");
                    Rcode::SERVFAIL
                }
            },
        }
    }

    /// The version `change` makes of `zone`: signed first in a signed zone ([`sign`]).
    fn version(
        &self,
        table: &ZoneConfig,
        zone: &Zone,
        change: &shardns_zone::update::Change,
        now: u64,
    ) -> Result<(Zone, Option<Vec<Name>>), String> {
        if table.dnssec {
            return sign::signed_version(self.config, table, zone, change, now, &self.signed)
                .map_err(|e| format!("a signed zone: {e}"));
        }
        // Left split: the batch's next update to this zone patches it again, sharing the
        // pages it does not write (and so does the next batch's: see `process`).
        let names = change.owners().cloned().collect();
        change
            .apply_split(zone)
            .map(|(new, _)| (new, Some(names)))
            .map_err(|e| format!("the new version does not build: {e}"))
    }

    /// Logs why an update was not applied and gives its rcode: at info for the first few
    /// of a batch, at debug for the rest (a flood of refused updates does not flood the log).
    fn refuse(&mut self, apex: &Name, peer: IpAddr, rcode: Rcode, why: &str) -> Rcode {
        if self.logged < LOG_PER_BATCH {
            self.logged += 1;
            info!("update of {apex} from {peer}: {rcode}: {why}");
        } else {
            debug!("update of {apex} from {peer}: {rcode}: {why}");
        }
        rcode
    }

    /// The zone's policy (`ZoneConfig::policy`), parsed once per batch.
    fn policy(&mut self, table: &ZoneConfig) -> Option<Arc<Policy>> {
        if !table.updatable() {
            return None;
        }
        self.policies
            .entry(table.name.clone())
            .or_insert_with(|| match table.policy() {
                Ok(p) => Some(Arc::new(p)),
                Err(e) => {
                    warn!(
                        "zone {}: update_policy: {e}; refusing its updates",
                        table.name
                    );
                    None
                }
            })
            .clone()
    }
}

/// What the operator may do on the control socket: any name and type of the zone, from
/// wherever the transaction says it comes (the RFC's rules still hold).
fn operator_policy() -> Policy {
    let all = |addr: IpAddr| Grant {
        deny: false,
        who: Who::Prefix(addr, 0),
        names: Names::Zone,
        types: Types::Any,
    };
    Policy {
        grants: vec![
            all(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
            all(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)),
        ],
        limits: Limits {
            max_records: usize::MAX,
            max_octets: usize::MAX,
        },
    }
}

/// The answer `rcode` to `message` (its zone section echoed), signed at `now` with its key
/// when its TSIG verified (`tsig`), unsigned otherwise: the answers made beside the
/// update's own checks (the flood limit's REFUSED, a forward's SERVFAIL). `None`: not a
/// message to answer.
fn answer_signed_if_known(message: &[u8], tsig: &Tsig, rcode: Rcode, now: u64) -> Option<Vec<u8>> {
    let query = Query::parse(message).ok()?;
    let mut out = vec![0u8; ANSWER_MAX];
    let mut w = notify_answer(&query, rcode, &mut out);
    if let Some((key, sig)) = tsig.key() {
        w.len = Signer::new(key, sig).sign(&mut out, w.len, now);
    }
    out.truncate(w.len);
    Some(out)
}

#[cfg(test)]
mod tests;
