//! secondary -- the secondary role: zones transferred from primaries (`[[zone]] primary`,
//! `--secondary`), kept fresh by their SOA timers and by NOTIFY, on one thread of their own
//! (`shardns-secondary`), never a worker.
//!
//! ```text
//!  start: a stand-in (SERVFAIL) per zone; the copy kept in `file`, if not expired, served
//!  thread: per zone, when due (REFRESH, RETRY after a failure, at once after a NOTIFY):
//!          SOA query to each primary in turn (client::soa_serial)
//!          → newer (RFC 1982)? IXFR from our version, else AXFR (client::transfer,
//!            shardns_zone::xfr::incoming); AXFR again when the IXFR cannot be applied
//!          → new version: Arc<Zone> → main thread (SIGUSR1, `publish`): ZoneSet::update,
//!            ArcSwap::store, NOTIFY to our own secondaries; the copy written (store)
//!          → EXPIRE passed without a successful refresh: the stand-in again (SERVFAIL)
//!  workers: NOTIFY → inbox (answered at once; a flag and a wake-up for the thread)
//! ```
//!
//! Transfers never touch the answer path: the workers go on answering from the version they
//! hold until the main thread swaps the new one in. A transfer holds one message at a time
//! plus the records read so far, within `[limits] transfer_in_*`. Timers: REFRESH and RETRY
//! of the zone's SOA (at least [`MIN_REFRESH`] and [`MIN_RETRY`], at most a day), each
//! shortened by up to a tenth at random (jitter, so that many secondaries do not ask at the
//! same moment); EXPIRE (at least [`MIN_EXPIRE`]) counted from the last successful refresh.
//! A zone that has never had a version is retried after 5 s, doubling up to 5 minutes.

mod catalog;
mod client;
mod inbox;
mod store;

use inbox::Flags;
pub(crate) use inbox::Inbox;

use crate::config::{Config, PrimaryTls};
use crate::control::Reloader;
use crate::Shared;
use client::Failure;
use shardns_wire::tsig::Key;
use shardns_wire::{Name, RType};
use shardns_zone::xfr::incoming::{Form, Limits, Outcome};
use shardns_zone::xfr::is_newer;
use shardns_zone::{Zone, ZoneChange};
use std::collections::{HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tracing::{error, info, warn};

pub(crate) use crate::dispatch::unix_now;

/// Shortest REFRESH followed, whatever the SOA says.
pub(crate) const MIN_REFRESH: u32 = 2;
/// Shortest RETRY followed.
pub(crate) const MIN_RETRY: u32 = 1;
/// Shortest EXPIRE followed.
pub(crate) const MIN_EXPIRE: u32 = 3;
/// Longest REFRESH and RETRY followed.
const MAX_INTERVAL: u32 = 86_400;

/// One secondary zone as configured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SecondaryZone {
    pub(crate) name: Name,
    /// Where its copy is kept (`None`: in memory only).
    pub(crate) file: Option<PathBuf>,
    pub(crate) primaries: Vec<SocketAddr>,
    /// XoT: the SOA queries and transfers over TLS to the primaries (RFC 9103).
    pub(crate) tls: Option<PrimaryTls>,
    /// Signs our queries, and must sign a NOTIFY.
    pub(crate) key: Option<Key>,
    /// A catalog zone (RFC 9432) whose members become secondary zones: how they are set up.
    pub(crate) catalog: Option<Arc<catalog::Consumer>>,
}

/// The secondary zones of `config` (its `[[zone]]` tables with `primary`).
pub(crate) fn zones(config: &Config) -> Vec<SecondaryZone> {
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
                catalog: (z.catalog == Some(crate::config::CatalogRole::Consume))
                    .then(|| Arc::new(catalog::Consumer::new(config, z, &key))),
                key,
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
pub(crate) fn warn_if_changed(running: &Config, new: &Config) {
    if zones(running) != zones(new) {
        warn!("reload: the secondary zones (primary, primary_key, primary_tls, file, catalog, templates) changed; that takes a restart");
    }
}

/// Where one secondary zone stands, for `shardns zone status`.
#[derive(Debug, Clone, Default)]
pub(crate) struct SlotStatus {
    /// The serial of the version we have (served or not).
    pub(crate) serial: Option<u32>,
    /// That version is served (else SERVFAIL: expired, or never transferred).
    pub(crate) serving: bool,
    /// The last successful refresh.
    pub(crate) last_refresh: Option<SystemTime>,
    /// When the next SOA query is due.
    pub(crate) next_check: Option<SystemTime>,
    /// When the version served expires.
    pub(crate) expire_at: Option<SystemTime>,
    /// The primary the version came from or was last confirmed by.
    pub(crate) source: Option<SocketAddr>,
    /// Refreshes failed in a row, and the last failure.
    pub(crate) failures: u32,
    pub(crate) last_error: Option<String>,
    /// The primaries asked, in turn.
    pub(crate) primaries: Vec<SocketAddr>,
    /// The catalog that brought the zone (`None`: configured).
    pub(crate) catalog: Option<Name>,
}

/// The role before it starts: its zones, each with the flags the workers' [`Inbox`]
/// shares with it.
pub(crate) struct Role {
    zones: Vec<(SecondaryZone, Arc<Flags>)>,
    wake: Receiver<()>,
}

/// The role for `config`, and the inbox the workers hand NOTIFY to; `None` without
/// secondary zones.
pub(crate) fn prepare(config: &Config) -> Option<(Role, Inbox)> {
    let zones = zones(config);
    if zones.is_empty() {
        return None;
    }
    let (tx, wake) = mpsc::sync_channel(1);
    let inbox = Inbox::new(tx);
    let zones = zones
        .into_iter()
        .map(|z| {
            let flags = Arc::new(Flags::default());
            inbox.add(&z, Arc::clone(&flags), false);
            (z, flags)
        })
        .collect();
    Some((Role { zones, wake }, inbox))
}

impl Role {
    /// What to serve for each zone until the thread has more: SERVFAIL.
    pub(crate) fn stand_ins(&self) -> Vec<ZoneChange> {
        self.zones
            .iter()
            .map(|(z, _)| ZoneChange::Put(Arc::new(Zone::unavailable(z.name.clone()))))
            .collect()
    }

    /// Starts the thread. New versions come back on the receiver, each batch with a
    /// SIGUSR1 to the process: the main thread serves them ([`publish`]). `configured`:
    /// the zones served from files, which no catalog may bring.
    pub(crate) fn start(
        self,
        config: &Config,
        shared: Arc<Shared>,
        seed: u64,
        configured: HashSet<Name>,
    ) -> io::Result<Receiver<Vec<ZoneChange>>> {
        let (tx, rx) = mpsc::channel();
        let l = &config.limits;
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
            limits: Limits {
                messages: l.transfer_in_max_messages,
                records: l.transfer_in_max_records,
                bytes: l.transfer_in_max_bytes,
            },
            timeout: Duration::from_millis(l.transfer_in_timeout_ms),
            rng: seed | 1,
        };
        std::thread::Builder::new()
            .name("shardns-secondary".into())
            .spawn(move || thread.run())?;
        Ok(rx)
    }
}

/// On the main thread (SIGUSR1): serves the versions the secondary thread sent, tells our
/// own secondaries about new serials (chains), and retires what they replaced.
pub(crate) fn publish(reloader: &mut Reloader, shared: &Shared, rx: &Receiver<Vec<ZoneChange>>) {
    let changes: Vec<ZoneChange> = rx.try_iter().flatten().collect();
    if changes.is_empty() {
        return;
    }
    serve_outside(reloader, shared, changes);
}

/// Serves `changes` to zones not read from files (transferred, stand-ins, removed members
/// of a catalog, produced catalogs): swaps the set, records the journals, tells our own
/// secondaries about new serials, and retires what was replaced.
pub(crate) fn serve_outside(reloader: &mut Reloader, shared: &Shared, changes: Vec<ZoneChange>) {
    if changes.is_empty() {
        return;
    }
    let removed: Vec<Name> = changes
        .iter()
        .filter_map(|c| match c {
            ZoneChange::Remove(n) => Some(n.clone()),
            ZoneChange::Put(_) => None,
        })
        .collect();
    let puts: Vec<Arc<Zone>> = changes
        .iter()
        .filter_map(|c| match c {
            ZoneChange::Put(z) => Some(Arc::clone(z)),
            ZoneChange::Remove(_) => None,
        })
        .collect();
    let set = reloader.library.apply_outside(changes);
    let old = shared.zones.swap(Arc::new(set));
    shared.wake_workers();
    // Into the journal before our own secondaries are told (chains take IXFR from it).
    let config = &reloader.config;
    crate::journal::record_all(
        &shared.journals,
        config,
        |apex| crate::journal::config_file(config, apex),
        Some(&*old),
        &puts,
    );
    // After the journals were recorded: a member added and removed again within one batch
    // keeps no history either.
    for apex in &removed {
        shared.journals.forget(apex);
    }
    let replaced: Vec<Arc<Zone>> = puts
        .iter()
        .map(|z| z.apex())
        .chain(removed.iter().map(|n| n.as_ref()))
        .filter_map(|apex| old.get(apex).cloned())
        .collect();
    let notify = reloader.config.notify_index();
    if !notify.is_empty() {
        for zone in puts.iter().filter(|z| !z.is_unavailable()) {
            let targets = notify.targets(&zone.apex().to_name());
            let changed = old
                .get(zone.apex())
                .is_none_or(|was| was.is_unavailable() || was.serial() != zone.serial());
            if changed && !targets.is_empty() {
                reloader.notifier.announce(crate::notify::Job {
                    zone: Arc::clone(zone),
                    targets: targets.to_vec(),
                });
            }
        }
    }
    reloader.retire(old, replaced);
    shared
        .control
        .zones
        .store(reloader.library.len() as u64, Relaxed);
}

/// One secondary zone on the thread.
struct Slot {
    zone: SecondaryZone,
    /// What the workers and the control socket set and read for it.
    flags: Arc<Flags>,
    /// Brought by a catalog (`None`: configured).
    member: Option<catalog::MemberOf>,
    /// The version we have (not a stand-in); the base of the next IXFR.
    current: Option<Arc<Zone>>,
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
}

impl Slot {
    fn new(zone: SecondaryZone, flags: Arc<Flags>, member: Option<catalog::MemberOf>) -> Self {
        Slot {
            zone,
            flags,
            member,
            current: None,
            serving: false,
            next_check: Instant::now(),
            expire_at: None,
            failures: 0,
            preferred: 0,
            last_refresh: None,
            source: None,
            last_error: None,
            force_axfr: false,
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
    publish: Sender<Vec<ZoneChange>>,
    shared: Arc<Shared>,
    limits: Limits,
    timeout: Duration,
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
        self.count_unavailable();
        for i in 0..self.slots.len() {
            self.report(i);
        }
        loop {
            if self.shared.shutdown.load(Relaxed) {
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
                    slot.next_check = now;
                }
            }
            for i in 0..self.slots.len() {
                let s = &self.slots[i];
                if s.serving && s.expire_at.is_some_and(|t| t <= now) {
                    self.expire(i);
                    self.report(i);
                }
            }
            let due = (0..self.slots.len())
                .filter(|&i| self.slots[i].next_check <= now)
                .min_by_key(|&i| self.slots[i].next_check);
            if let Some(i) = due {
                let had = self.slots[i].current.as_ref().map(|z| z.serial());
                self.refresh(i);
                self.report(i);
                let has = self.slots[i].current.as_ref().map(|z| z.serial());
                if self.slots[i].zone.catalog.is_some() && has != had {
                    self.apply_catalog(i);
                }
                continue;
            }
            let next = self
                .slots
                .iter()
                .flat_map(|s| [Some(s.next_check), s.expire_at.filter(|_| s.serving)])
                .flatten()
                .min()
                .unwrap_or(now + Duration::from_secs(3600));
            let wait = next
                .saturating_duration_since(now)
                .min(Duration::from_secs(3600));
            match self.wake.recv_timeout(wait) {
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
            puts.extend(load_kept_copy(slot));
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
        };
        *slot.flags.status.lock().unwrap_or_else(|e| e.into_inner()) = status;
    }

    /// Hands changes to the main thread and wakes it.
    fn send(&self, changes: Vec<ZoneChange>) {
        if changes.is_empty() {
            return;
        }
        if self.publish.send(changes).is_ok() {
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

    /// Asks the primaries, in turn, for the zone's serial, and transfers a newer version.
    fn refresh(&mut self, i: usize) {
        let zone = self.slots[i].zone.clone();
        let n = zone.primaries.len();
        for k in 0..n {
            let p = (self.slots[i].preferred + k) % n;
            let primary = zone.primaries[p];
            let id = self.next_id();
            // A catalog is asked by IXFR at once: knotd refuses ordinary queries to the
            // catalogs it generates, and a primary with nothing newer answers an IXFR with
            // its SOA alone (RFC 1995 §4), which is the SOA query's answer.
            let serial = if zone.catalog.is_some() {
                None
            } else {
                match client::soa_serial(
                    primary,
                    zone.tls.as_ref(),
                    &zone.name,
                    zone.key.as_ref(),
                    id,
                ) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        warn!("zone {}: SOA query to {primary} failed: {e}", zone.name);
                        self.slots[i].last_error = Some(format!("SOA query to {primary}: {e}"));
                        continue;
                    }
                }
            };
            let current = self.slots[i].current.clone();
            let forced = self.slots[i].force_axfr;
            if let Some((cur, serial)) = current
                .as_ref()
                .zip(serial)
                .filter(|(c, serial)| !forced && !is_newer(*serial, c.serial()))
            {
                if serial != cur.serial() {
                    warn!(
                        "zone {}: {primary} has serial {serial}, not newer than ours ({}); keeping ours",
                        zone.name,
                        cur.serial()
                    );
                }
                self.slots[i].preferred = p;
                self.slots[i].source = Some(primary);
                self.refreshed(i, false);
                return;
            }
            match self.transfer(i, primary, serial) {
                Ok(()) => {
                    self.slots[i].preferred = p;
                    self.slots[i].source = Some(primary);
                    self.slots[i].force_axfr = false;
                    return;
                }
                Err(e) => {
                    self.slots[i].last_error = Some(format!("transfer from {primary}: {e}"));
                    self.shared.control.xfr_in_failed.fetch_add(1, Relaxed);
                    error!(
                        "zone {}: transfer from {primary} failed, {}: {e}",
                        zone.name,
                        if self.slots[i].serving {
                            "keeping the version served"
                        } else {
                            "still nothing to serve"
                        }
                    );
                }
            }
        }
        // Every primary failed: try again after RETRY (or the back-off of a zone that has
        // never had a version).
        let slot = &mut self.slots[i];
        slot.failures += 1;
        let retry = match &slot.current {
            Some(z) => timers(z).1,
            None => (5u32 << (slot.failures - 1).min(6)).min(300),
        };
        let wait = self.jitter(retry);
        self.slots[i].next_check = Instant::now() + wait;
        warn!(
            "zone {}: refresh failed from every primary ({} in a row); next try in {:.0} s",
            zone.name,
            self.slots[i].failures,
            wait.as_secs_f64()
        );
    }

    /// Transfers the zone from `primary`, whose serial is `serial`: IXFR from our version
    /// if we have one (AXFR if that cannot be done), else AXFR.
    fn transfer(
        &mut self,
        i: usize,
        primary: SocketAddr,
        serial: Option<u32>,
    ) -> Result<(), String> {
        let zone = self.slots[i].zone.clone();
        // A retransfer asked for: AXFR, as if we had no version.
        let base = self.slots[i]
            .current
            .clone()
            .filter(|_| !self.slots[i].force_axfr);
        let started = Instant::now();
        let deadline = started + self.timeout;
        let mut bytes = 0u64;
        let key = zone.key.as_ref();
        let mut result = Err(Failure::Io(io::ErrorKind::NotFound.into()));
        let mut tried_ixfr = false;
        if let Some(base) = &base {
            tried_ixfr = true;
            let id = self.next_id();
            result = client::transfer(
                primary,
                zone.tls.as_ref(),
                &zone.name,
                RType::IXFR,
                Some(base),
                key,
                id,
                self.limits,
                deadline,
                &mut bytes,
            );
            let fall_back = match &result {
                Ok(t) => matches!(t.outcome, Outcome::SoaOnly(s) if is_newer(s, base.serial())),
                Err(Failure::Xfr(e)) => e.retry_with_axfr(),
                Err(_) => false,
            };
            if fall_back {
                if let Err(e) = &result {
                    warn!(
                        "zone {}: IXFR from {primary} failed ({e}); trying AXFR",
                        zone.name
                    );
                }
                tried_ixfr = false;
            }
        }
        if !tried_ixfr {
            let id = self.next_id();
            result = client::transfer(
                primary,
                zone.tls.as_ref(),
                &zone.name,
                RType::AXFR,
                None,
                key,
                id,
                self.limits,
                deadline,
                &mut bytes,
            );
        }
        self.shared.control.xfr_in_bytes.fetch_add(bytes, Relaxed);
        let t = result.map_err(|e| e.to_string())?;
        let (new, form, patched) = match t.outcome {
            Outcome::SoaOnly(s) => {
                // Up to date after all (the SOA query and the transfer crossed a change).
                if base.as_ref().is_some_and(|b| !is_newer(s, b.serial())) {
                    self.refreshed(i, false);
                    return Ok(());
                }
                return Err(format!("the primary sent its SOA (serial {s}) and no zone"));
            }
            Outcome::Zone {
                zone,
                warnings,
                form,
                patched,
            } => {
                for w in warnings.iter().take(10) {
                    warn!("zone {}: {w}", zone.apex());
                }
                (zone, form, patched)
            }
        };
        if let Some(b) = base
            .as_ref()
            .filter(|b| !is_newer(new.serial(), b.serial()))
        {
            return Err(format!(
                "the primary sent serial {}, not newer than ours ({}); keeping ours",
                new.serial(),
                b.serial()
            ));
        }
        // Counted by what came: differences, or the whole zone (an AXFR, or an IXFR the
        // primary answered in AXFR form).
        let (kind, counter) = match form {
            Form::Incremental => ("IXFR", &self.shared.control.xfr_in_ixfr),
            Form::Whole if tried_ixfr => ("IXFR in AXFR form", &self.shared.control.xfr_in_axfr),
            Form::Whole => ("AXFR", &self.shared.control.xfr_in_axfr),
        };
        counter.fetch_add(1, Relaxed);
        let new = Arc::new(new);
        info!(
            "zone {}: serial {} -> {} by {kind} from {primary} (announced {}): {} records, {} messages, {} octets in {:.3} s{}{}",
            zone.name,
            base.as_ref().map_or("none".to_string(), |b| b.serial().to_string()),
            new.serial(),
            serial.map_or("-".to_string(), |s| s.to_string()),
            new.record_count(),
            t.messages,
            t.bytes,
            started.elapsed().as_secs_f64(),
            if t.skipped > 0 {
                format!(" ({} records outside the zone skipped; {} read)", t.skipped, t.records)
            } else {
                String::new()
            },
            match patched {
                Some(w) => format!(
                    "; patched, not rebuilt: {} names changed, {} added, {} removed, {} RRsets written",
                    w.nodes_changed, w.nodes_added, w.nodes_removed, w.rrsets_written
                ),
                None => String::new(),
            }
        );
        self.send(vec![ZoneChange::Put(Arc::clone(&new))]);
        let slot = &mut self.slots[i];
        slot.current = Some(Arc::clone(&new));
        slot.serving = true;
        if let Some(path) = &slot.zone.file {
            let written = Instant::now();
            match store::write_copy(path, &new, &format!("from {primary}")) {
                Ok(()) => info!(
                    "zone {}: copy written to {} in {:.3} s",
                    zone.name,
                    path.display(),
                    written.elapsed().as_secs_f64()
                ),
                Err(e) => warn!(
                    "zone {}: cannot keep its copy in {}: {e}",
                    zone.name,
                    path.display()
                ),
            }
        }
        self.refreshed(i, true);
        Ok(())
    }

    /// A refresh succeeded: the timers start again from the SOA of our version, and a zone
    /// that had expired is served again.
    fn refreshed(&mut self, i: usize, written: bool) {
        let Some(current) = self.slots[i].current.clone() else {
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
        if !written {
            if let Some(path) = &slot.zone.file {
                if let Err(e) = store::touch(path) {
                    warn!(
                        "zone {}: cannot record the refresh on {}: {e}",
                        slot.zone.name,
                        path.display()
                    );
                }
            }
        }
        if !slot.serving {
            slot.serving = true;
            info!(
                "zone {}: serial {} confirmed by a primary; serving it again",
                slot.zone.name,
                current.serial()
            );
            self.send(vec![ZoneChange::Put(current)]);
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
        self.shared.control.secondary_expired.fetch_add(1, Relaxed);
        self.send(vec![ZoneChange::Put(stand_in)]);
        self.count_unavailable();
    }

    fn count_unavailable(&self) {
        let n = self.slots.iter().filter(|s| !s.serving).count();
        self.shared
            .control
            .secondary_unavailable
            .store(n as u64, Relaxed);
    }
}

/// The copy kept on disk for `slot`, served at once if it has not expired (else only the
/// base of the next IXFR).
fn load_kept_copy(slot: &mut Slot) -> Option<ZoneChange> {
    let wall = SystemTime::now();
    let path = slot.zone.file.as_ref()?;
    let name = &slot.zone.name;
    let Some((zone, refreshed)) = store::read_copy(path, name) else {
        info!("zone {name}: no copy in {} yet", path.display());
        return None;
    };
    let zone = match zone {
        Ok((zone, _)) => zone,
        Err(e) => {
            warn!(
                "zone {name}: the copy in {} cannot be read, transferring anew:\n{e}",
                path.display()
            );
            return None;
        }
    };
    let (_, _, expire) = timers(&zone);
    let age = wall.duration_since(refreshed).unwrap_or_default();
    let zone = Arc::new(zone);
    if age >= Duration::from_secs(expire.into()) {
        warn!(
                "zone {name}: the copy in {} (serial {}) expired {} s ago; not served until a transfer succeeds",
                path.display(),
                zone.serial(),
                (age - Duration::from_secs(expire.into())).as_secs()
            );
        // Still the base of an IXFR.
        slot.current = Some(zone);
        return None;
    }
    info!(
        "zone {name}: serving the copy in {} (serial {}, refreshed {} s ago)",
        path.display(),
        zone.serial(),
        age.as_secs()
    );
    slot.expire_at = Some(Instant::now() + (Duration::from_secs(expire.into()) - age));
    slot.serving = true;
    slot.current = Some(Arc::clone(&zone));
    Some(ZoneChange::Put(zone))
}

/// REFRESH, RETRY and EXPIRE of a version, within our bounds (seconds).
fn timers(zone: &Zone) -> (u32, u32, u32) {
    let (refresh, retry, expire) = store::soa_timers(zone);
    (
        refresh.clamp(MIN_REFRESH, MAX_INTERVAL),
        retry.clamp(MIN_RETRY, MAX_INTERVAL),
        expire.max(MIN_EXPIRE),
    )
}
