//! secondary -- the secondary role: zones transferred from primaries (`[[zone]] primary`,
//! `--secondary`), kept fresh by their SOA timers and by NOTIFY. One thread of their own
//! (`shardns-secondary`, never a worker) keeps the timers and never waits on the network;
//! the refreshes run on a small pool of transfer threads (`shardns-xfr-in-N`,
//! `[limits] transfers_in` of them), several at once.
//!
//! ```text
//!  start: a stand-in (SERVFAIL) per zone; the copy kept in `file`, if not expired, served
//!  secondary thread: per zone, when due (REFRESH, RETRY after a failure, at once after a
//!          NOTIFY), longest due first: a Job to the transfer threads, at most
//!          `transfers_in` at once and `transfers_in_per_primary` asking one primary
//!          (a slow primary holds back only its own zones)
//!  transfer thread (refresh): SOA query to the primary (client::soa_serial)
//!          → newer (RFC 1982)? IXFR from our version, else AXFR (client::transfer,
//!            shardns_zone::xfr::incoming); AXFR again when the IXFR cannot be applied
//!          → `dnssec = true`: the new version signed (signer: whole after an AXFR, the
//!            change after an IXFR); a version that does not sign fails the refresh
//!          → Report::Got(new version) → the copy written (store) → Report::Done
//!          (a signed version kept in the key directory by a thread of its own: keeper)
//!  secondary thread: a signed zone's signatures due → a Job that signs it again
//!  secondary thread, on a report: Arc<Zone> → main thread (SIGUSR1, `reload::publish`):
//!            ZoneSet::update, ArcSwap::store, NOTIFY to our own secondaries; timers again;
//!            a failure: the next primary at once, RETRY when all failed
//!          → EXPIRE passed without a successful refresh: the stand-in again (SERVFAIL),
//!            on time whatever the transfers do (a version that comes after is served)
//!  workers: NOTIFY → inbox (answered at once; a flag and a wake-up for the thread)
//! ```
//!
//! Transfers never touch the answer path: the workers go on answering from the version they
//! hold until the main thread swaps the new one in. A transfer holds one message at a time
//! plus the records read so far, within `[limits] transfer_in_*`; a message that does not
//! come whole within `transfer_in_idle_ms` (no progress) or a transfer past
//! `transfer_in_timeout_ms` ends it, and the zone is retried. Timers: REFRESH and RETRY
//! of the zone's SOA (at least [`MIN_REFRESH`] and [`MIN_RETRY`], at most a day), each
//! shortened by up to a tenth at random (jitter, so that many secondaries do not ask at the
//! same moment); EXPIRE (at least [`MIN_EXPIRE`]) counted from the last successful refresh.
//! A zone that has never had a version is retried after 5 s, doubling up to 5 minutes.

mod catalog;
pub(crate) mod client;
mod fetch;
mod inbox;
pub mod keeper;
mod refresh;
mod schedule;
mod signer;
mod store;

pub use fetch::{fetch, Fetched};
use inbox::Flags;
pub use inbox::{Inbox, MemberForward};
use store::timers;

use crate::Host;
use shardns_config::{Config, PrimaryTls};
use shardns_wire::{tsig::Key, Name};
use shardns_zone::xfr::incoming::Limits;
use shardns_zone::{Zone, ZoneChange};
use std::collections::{HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tracing::{error, info, warn};

/// Shortest REFRESH followed, whatever the SOA says.
pub const MIN_REFRESH: u32 = 2;
/// Shortest RETRY followed.
pub const MIN_RETRY: u32 = 1;
/// Shortest EXPIRE followed.
pub const MIN_EXPIRE: u32 = 3;
/// Longest REFRESH and RETRY followed.
const MAX_INTERVAL: u32 = 86_400;

/// What the secondary thread hands the main thread: new versions to serve, and for some of
/// them (a signed zone's version signed incrementally) the names at which each differs
/// from the version before, so that its journal's diff is made at them alone.
pub type Transferred = (Vec<ZoneChange>, crate::journal::Touched);

/// One secondary zone as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct SecondaryZone {
    /// The zone's apex.
    pub name: Name,
    /// Where its copy is kept (`None`: in memory only).
    pub file: Option<PathBuf>,
    /// The primaries to transfer from, in order.
    pub primaries: Vec<SocketAddr>,
    /// XoT: the SOA queries and transfers over TLS to the primaries (RFC 9103).
    pub tls: Option<PrimaryTls>,
    /// Signs our queries, and must sign a NOTIFY.
    pub key: Option<Key>,
    /// A catalog zone (RFC 9432) whose members become secondary zones: how they are set up.
    pub catalog: Option<Arc<catalog::Consumer>>,
    /// `dnssec = true`: signed as it arrives and served signed (`signer`).
    pub sign: Option<Arc<crate::signing::SignSpec>>,
    /// A member's template's `update_forwarding` (a configured zone's is read from config).
    pub update_forwarding: Vec<shardns_config::AclEntry>,
}

/// The secondary zones of `config` (its `[[zone]]` tables with `primary`).
pub fn zones(config: &Config) -> Vec<SecondaryZone> {
    config
        .zones
        .iter()
        .filter(|z| z.is_secondary())
        .map(|z| {
            let key = key_named(config, z.primary_key.as_ref());
            SecondaryZone {
                name: z.name.clone(),
                file: (!z.file.as_os_str().is_empty()).then(|| z.file.clone()),
                primaries: z.primary.clone(),
                tls: z.primary_tls.clone(),
                catalog: (z.catalog == Some(shardns_config::CatalogRole::Consume))
                    .then(|| Arc::new(catalog::Consumer::new(config, z, &key))),
                key,
                update_forwarding: Vec::new(),
                sign: crate::signing::SignSpec::of(
                    z,
                    config.server.key_directory.as_deref(),
                    &config.keystores,
                )
                .map(Arc::new),
            }
        })
        .collect()
}

/// The `[[key]]` named `name` (the config checked that it exists).
fn key_named(config: &Config, name: Option<&Name>) -> Option<Key> {
    let name = name?;
    config
        .keys
        .iter()
        .find(|c| &c.0.name == name)
        .map(|c| c.0.clone())
}

/// Warns when a reload's config changes the secondary zones: they are set up at start.
pub fn warn_if_changed(running: &Config, new: &Config) {
    if zones(running) != zones(new) {
        warn!("reload: the secondary zones (primary, primary_key, primary_tls, file, catalog, templates, dnssec) changed; that takes a restart");
    }
}

/// Where one secondary zone stands, for `shardns zone status`.
#[derive(Debug, Clone, Default)]
pub struct SlotStatus {
    /// The serial of the version we have (served or not).
    pub serial: Option<u32>,
    /// That version is served (else SERVFAIL: expired, or never transferred).
    pub serving: bool,
    /// The last successful refresh.
    pub last_refresh: Option<SystemTime>,
    /// When the next SOA query is due.
    pub next_check: Option<SystemTime>,
    /// When the version served expires.
    pub expire_at: Option<SystemTime>,
    /// The primary the version came from or was last confirmed by.
    pub source: Option<SocketAddr>,
    /// Refreshes failed in a row, and the last failure.
    pub failures: u32,
    /// Why the last refresh failed.
    pub last_error: Option<String>,
    /// The primaries asked, in turn.
    pub primaries: Vec<SocketAddr>,
    /// The catalog that brought the zone (`None`: configured).
    pub catalog: Option<Name>,
    /// A zone signed as it arrives: the serial of the signed version (the one served), and
    /// when its signatures are refreshed.
    pub signed: Option<(u32, SystemTime)>,
}

/// The role before it starts: its zones, each with the flags the workers' [`Inbox`]
/// shares with it.
pub struct Role {
    zones: Vec<(SecondaryZone, Arc<Flags>)>,
    wake: Receiver<()>,
    /// The same channel's sender, for the transfer threads' reports.
    waker: SyncSender<()>,
}

/// The role for `config`, and the inbox the workers hand NOTIFY to; `None` without
/// secondary zones.
pub fn prepare(config: &Config) -> Option<(Role, Inbox)> {
    let zones = zones(config);
    if zones.is_empty() {
        return None;
    }
    let (tx, wake) = mpsc::sync_channel(1);
    let waker = tx.clone();
    let inbox = Inbox::new(tx);
    let zones = zones
        .into_iter()
        .map(|z| {
            let flags = Arc::new(Flags::default());
            inbox.add(&z, Arc::clone(&flags), false);
            (z, flags)
        })
        .collect();
    Some((Role { zones, wake, waker }, inbox))
}

impl Role {
    /// What to serve for each zone until the thread has more: SERVFAIL.
    pub fn stand_ins(&self) -> Vec<ZoneChange> {
        self.zones
            .iter()
            .map(|(z, _)| ZoneChange::Put(Arc::new(Zone::unavailable(z.name.clone()))))
            .collect()
    }

    /// Starts the thread. New versions come back on the receiver, each batch with a
    /// SIGUSR1 to the process: the main thread serves them (`reload::publish`). `configured`:
    /// the zones served from files, which no catalog may bring.
    pub fn start(
        self,
        config: &Config,
        shared: Arc<dyn Host>,
        seed: u64,
        configured: HashSet<Name>,
    ) -> io::Result<Receiver<Transferred>> {
        let (tx, rx) = mpsc::channel();
        let l = &config.limits;
        let (jobs, queue) = mpsc::channel();
        let (reports, reported) = mpsc::channel();
        refresh::Pool {
            shared: Arc::clone(&shared),
            limits: Limits {
                messages: l.transfer_in_max_messages,
                records: l.transfer_in_max_records,
                bytes: l.transfer_in_max_bytes,
            },
            timeout: Duration::from_millis(l.transfer_in_timeout_ms),
            idle: Duration::from_millis(l.transfer_in_idle_ms),
            reports,
            wake: self.waker,
        }
        .start(l.transfers_in as usize, queue)?;
        let slots: Vec<Slot> = self
            .zones
            .into_iter()
            .map(|(zone, flags)| Slot::new(zone, flags, None))
            .collect();
        let by_name = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.zone.name.clone(), i))
            .collect();
        let mut configured = configured;
        configured.extend(slots.iter().map(|s| s.zone.name.clone()));
        let thread = Thread {
            slots,
            by_name,
            configured,
            wake: self.wake,
            publish: tx,
            shared,
            jobs,
            reports: reported,
            busy: HashMap::new(),
            in_flight: 0,
            max_in: l.transfers_in as usize,
            max_per_primary: l.transfers_in_per_primary as usize,
            rng: seed | 1,
        };
        std::thread::Builder::new()
            .name("shardns-secondary".into())
            .spawn(move || thread.run())?;
        Ok(rx)
    }
}

/// One secondary zone on the thread.
struct Slot {
    zone: SecondaryZone,
    /// What the workers and the control socket set and read for it.
    flags: Arc<Flags>,
    /// Brought by a catalog (`None`: configured).
    member: Option<catalog::MemberOf>,
    /// The version we have (not a stand-in), as transferred (unsigned for a signed zone);
    /// the base of the next IXFR.
    current: Option<Arc<Zone>>,
    /// A zone signed as it arrives: the version signed from `current`, the one served
    /// (always there when `current` is).
    signed: Option<signer::SignedVersion>,
    /// `current` is served (else the stand-in is: expired, or never had a version).
    serving: bool,
    next_check: Instant,
    /// When the version served expires (`None` when none is).
    expire_at: Option<Instant>,
    /// Refreshes failed in a row.
    failures: u32,
    /// The primary that answered last: asked first.
    preferred: usize,
    last_refresh: Option<SystemTime>,
    /// The primary the version came from or was last confirmed by.
    source: Option<SocketAddr>,
    last_error: Option<String>,
    /// The operator asked for an AXFR (`shardns zone retransfer`): the next refresh
    /// transfers the whole zone whatever the serials say.
    force_axfr: bool,
    /// A transfer thread is refreshing it.
    in_flight: bool,
    /// Primaries that failed in this refresh, after `preferred`: the next one is asked.
    attempt: usize,
    /// A NOTIFY (or `zone refresh`, `retransfer`, a catalog reset) came while a refresh
    /// ran: another one after it.
    again: bool,
    /// The refresh running was asked to transfer by AXFR (a retransfer asked for since
    /// is still to do).
    forced_job: bool,
    /// Tells this slot from an earlier one of the same zone (a catalog member removed
    /// and added again) in the transfer threads' reports.
    generation: u64,
    /// The serial of `current` when a refresh last ended (a catalog is read again when
    /// it changes).
    applied: Option<u32>,
}

/// The generation of the next slot.
static GENERATION: AtomicU64 = AtomicU64::new(0);

impl Slot {
    fn new(zone: SecondaryZone, flags: Arc<Flags>, member: Option<catalog::MemberOf>) -> Self {
        Slot {
            zone,
            flags,
            member,
            current: None,
            signed: None,
            serving: false,
            next_check: Instant::now(),
            expire_at: None,
            failures: 0,
            preferred: 0,
            last_refresh: None,
            source: None,
            last_error: None,
            force_axfr: false,
            in_flight: false,
            attempt: 0,
            again: false,
            forced_job: false,
            generation: GENERATION.fetch_add(1, Relaxed),
            applied: None,
        }
    }

    /// When the signed version is due to be signed again (`None`: not a signed zone).
    fn resign_at(&self, now: Instant) -> Option<Instant> {
        let due = self.signed.as_ref()?.due;
        let wait = due.saturating_sub(crate::signing::unix_now());
        Some(now + Duration::from_secs(wait))
    }

    /// The version to serve: the signed one of a signed zone, else the one transferred.
    fn served(&self) -> Option<Arc<Zone>> {
        match &self.signed {
            Some(s) => Some(Arc::clone(&s.zone)),
            None => self.current.clone().filter(|_| self.zone.sign.is_none()),
        }
    }

    fn id(&self) -> refresh::SlotId {
        refresh::SlotId {
            name: self.zone.name.clone(),
            generation: self.generation,
        }
    }
}

struct Thread {
    slots: Vec<Slot>,
    /// Each slot's index in `slots`.
    by_name: HashMap<Name, usize>,
    /// Zones a catalog may not bring: those served from files, and configured secondaries.
    configured: HashSet<Name>,
    wake: Receiver<()>,
    publish: Sender<Transferred>,
    shared: Arc<dyn Host>,
    /// To the transfer threads, and their reports back.
    jobs: Sender<refresh::Job>,
    reports: Receiver<refresh::Report>,
    /// Refreshes running, per primary and in all.
    busy: HashMap<SocketAddr, usize>,
    in_flight: usize,
    max_in: usize,
    max_per_primary: usize,
    rng: u64,
}

impl Thread {
    fn run(mut self) {
        self.load_kept_copies();
        // The catalogs' copies bring their members (and the members' copies) back.
        let catalogs: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots[i].zone.catalog.is_some())
            .collect();
        for i in catalogs.into_iter().rev() {
            self.apply_catalog(i);
        }
        for slot in &mut self.slots {
            slot.applied = slot.current.as_ref().map(|z| z.serial());
        }
        self.count_unavailable();
        for i in 0..self.slots.len() {
            self.report(i);
        }
        loop {
            if self.shared.plane().shutdown.load(Relaxed) {
                return;
            }
            let now = Instant::now();
            for slot in &mut self.slots {
                if slot.flags.pending.swap(false, Relaxed) {
                    if slot.flags.forced.swap(false, Relaxed) {
                        info!(
                            "zone {}: retransfer asked for, transferring by AXFR",
                            slot.zone.name
                        );
                        slot.force_axfr = true;
                    } else {
                        info!(
                            "zone {}: NOTIFY from a primary or a refresh asked for, refreshing",
                            slot.zone.name
                        );
                    }
                    // A refresh running now may have started before the change: another
                    // one when it ends.
                    slot.again = slot.in_flight;
                    slot.next_check = now;
                }
            }
            while let Ok(r) = self.reports.try_recv() {
                self.take(r);
            }
            let now = Instant::now();
            for i in 0..self.slots.len() {
                let s = &self.slots[i];
                if s.serving && s.expire_at.is_some_and(|t| t <= now) {
                    self.expire(i);
                    self.report(i);
                }
            }
            self.dispatch_resign(now);
            self.dispatch(now);
            // Zones due but held back by the limits wait for a report (which wakes us).
            let next = self
                .slots
                .iter()
                .flat_map(|s| {
                    [
                        Some(s.next_check).filter(|t| !s.in_flight && *t > now),
                        s.expire_at.filter(|_| s.serving),
                        s.resign_at(now).filter(|t| !s.in_flight && *t > now),
                    ]
                })
                .flatten()
                .fold(now + Duration::from_secs(3600), Instant::min);
            match self.wake.recv_timeout(next.saturating_duration_since(now)) {
                Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// At start: the copies kept on disk that have not expired are served at once, and
    /// every zone is refreshed now.
    fn load_kept_copies(&mut self) {
        let mut puts = Vec::new();
        for slot in &mut self.slots {
            puts.extend(store::load_kept_copy(slot));
        }
        self.send(puts);
    }

    /// Writes where zone `i` stands on the board `shardns zone status` reads.
    fn report(&self, i: usize) {
        let slot = &self.slots[i];
        let (now, wall) = (Instant::now(), SystemTime::now());
        let at = |t: Instant| wall + t.saturating_duration_since(now);
        let status = SlotStatus {
            serial: slot.current.as_ref().map(|z| z.serial()),
            serving: slot.serving,
            last_refresh: slot.last_refresh,
            next_check: Some(at(slot.next_check)),
            expire_at: slot.expire_at.filter(|_| slot.serving).map(at),
            source: slot.source,
            failures: slot.failures,
            last_error: slot.last_error.clone(),
            primaries: slot.zone.primaries.clone(),
            catalog: slot.member.as_ref().map(|m| m.catalog().clone()),
            signed: slot.signed.as_ref().map(|v| {
                let due = SystemTime::UNIX_EPOCH + Duration::from_secs(v.due);
                (v.zone.serial(), due)
            }),
        };
        *slot.flags.status.lock().unwrap_or_else(|e| e.into_inner()) = status;
    }

    /// Hands changes to the main thread and wakes it.
    fn send(&self, changes: Vec<ZoneChange>) {
        self.send_touched(changes, crate::journal::Touched::new());
    }

    /// [`Thread::send`], with the names at which some versions differ from the ones before.
    fn send_touched(&self, changes: Vec<ZoneChange>, touched: crate::journal::Touched) {
        if changes.is_empty() {
            return;
        }
        if self.publish.send((changes, touched)).is_ok() {
            if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGUSR1) {
                error!("cannot wake the main thread to serve a transferred zone: {e}");
            }
        }
    }

    fn next_id(&mut self) -> u16 {
        (self.next_random() >> 48) as u16
    }

    /// splitmix64.
    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `secs`, shortened by up to a tenth at random.
    fn jitter(&mut self, secs: u32) -> Duration {
        let full = Duration::from_secs(secs.into());
        let cut = self.next_random() % 1000;
        full - full * (cut as u32) / 10_000
    }

    /// A refresh succeeded: the timers start again from the SOA of our version, and a zone
    /// that had expired is served again.
    fn refreshed(&mut self, i: usize) {
        let (Some(current), Some(served)) = (self.slots[i].current.clone(), self.slots[i].served())
        else {
            return;
        };
        let (refresh, _, expire) = timers(&current);
        let wait = self.jitter(refresh);
        let now = Instant::now();
        let slot = &mut self.slots[i];
        slot.failures = 0;
        slot.last_error = None;
        slot.last_refresh = Some(SystemTime::now());
        slot.next_check = now + wait;
        slot.expire_at = Some(now + Duration::from_secs(expire.into()));
        if !slot.serving {
            slot.serving = true;
            info!(
                "zone {}: serial {} confirmed by a primary; serving it again",
                slot.zone.name,
                current.serial()
            );
            self.send(vec![ZoneChange::Put(served)]);
        }
        self.count_unavailable();
    }

    /// EXPIRE passed without a successful refresh: SERVFAIL from now on.
    fn expire(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        slot.serving = false;
        slot.expire_at = None;
        error!(
            "zone {} expired: no successful refresh from its primaries for EXPIRE ({} s); answering SERVFAIL for it until a transfer succeeds",
            slot.zone.name,
            slot.current.as_ref().map_or(0, |z| timers(z).2)
        );
        let stand_in = Arc::new(Zone::unavailable(slot.zone.name.clone()));
        self.shared
            .plane()
            .stats
            .secondary_expired
            .fetch_add(1, Relaxed);
        self.send(vec![ZoneChange::Put(stand_in)]);
        self.count_unavailable();
    }

    fn count_unavailable(&self) {
        let n = self.slots.iter().filter(|s| !s.serving).count();
        self.shared
            .plane()
            .stats
            .secondary_unavailable
            .store(n as u64, Relaxed);
    }
}
