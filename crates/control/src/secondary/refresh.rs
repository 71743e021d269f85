//! secondary::refresh -- the transfer threads (`shardns-xfr-in`, `limits.transfers_in` of
//! them): each takes one [`Job`] at a time from the secondary thread, a refresh of one zone
//! from one primary (the SOA query, then IXFR or AXFR if the primary has a newer serial,
//! then, for a zone with `dnssec = true`, the new version signed (`signer`), then the copy
//! written), or a signing again of a signed zone whose signatures are due, and reports
//! back. All the waiting on the network (and the signing) happens here, so the secondary
//! thread keeps its timers (EXPIRE above all) whatever a primary does.

use super::signer::{self, How, SignedVersion};
use super::{client, keeper, store, SecondaryZone};
use crate::Host;
use client::{Bounds, Failure};
use shardns_wire::RType;
use shardns_zone::xfr::incoming::{Form, Limits, Outcome};
use shardns_zone::xfr::is_newer;
use shardns_zone::Zone;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

/// Which slot a job is for: its zone and the slot's generation (a catalog member removed
/// and added again while a job ran is another slot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SlotId {
    pub(super) name: shardns_wire::Name,
    pub(super) generation: u64,
}

/// A refresh of one zone from one primary.
pub(super) struct Job {
    pub(super) slot: SlotId,
    pub(super) zone: SecondaryZone,
    pub(super) primary: SocketAddr,
    /// The version we have: compared with the primary's serial, the base of an IXFR.
    pub(super) current: Option<Arc<Zone>>,
    /// The version signed from `current` (a zone signed as it arrives): the base of an
    /// incremental signing.
    pub(super) signed: Option<SignedVersion>,
    /// Not a refresh: sign `current` again (its signatures are due; no primary is asked).
    pub(super) resign: bool,
    /// The version we have is served (for the log).
    pub(super) serving: bool,
    /// AXFR whatever the serials say (`shardns zone retransfer`).
    pub(super) force_axfr: bool,
    /// Message IDs: the SOA query, the IXFR, the AXFR.
    pub(super) ids: [u16; 3],
}

/// What a job says back, on the channel the secondary thread reads.
pub(super) enum Report {
    /// A new version, to serve now (the one signed from it, for a zone signed as it
    /// arrives; signed incrementally, the names at which it differs from the signed
    /// version before); the job goes on to write the copy.
    Got(
        SlotId,
        Arc<Zone>,
        Option<SignedVersion>,
        Option<Vec<shardns_wire::Name>>,
    ),
    /// A re-signing job is over: the version signed again, or why not.
    Resigned(SlotId, Result<SignedVersion, String>),
    /// The job is over: the primary has our serial (`Ok(false)`), a version was
    /// transferred (`Ok(true)`, after `Got`), or it failed (why).
    Done {
        slot: SlotId,
        primary: SocketAddr,
        result: Result<bool, String>,
    },
}

/// What every transfer thread shares.
pub(super) struct Pool {
    pub(super) shared: Arc<dyn Host>,
    pub(super) limits: Limits,
    pub(super) timeout: Duration,
    pub(super) idle: Duration,
    pub(super) reports: Sender<Report>,
    /// Wakes the secondary thread (the NOTIFY inbox's channel: one slot, never waited on).
    pub(super) wake: SyncSender<()>,
}

impl Pool {
    /// Starts `threads` transfer threads taking jobs from `jobs`; they end when its sender
    /// is dropped.
    pub(super) fn start(self, threads: usize, jobs: Receiver<Job>) -> io::Result<()> {
        let pool = Arc::new(self);
        let jobs = Arc::new(Mutex::new(jobs));
        for k in 0..threads {
            let (pool, jobs) = (Arc::clone(&pool), Arc::clone(&jobs));
            std::thread::Builder::new()
                .name(format!("shardns-xfr-in-{k}"))
                .spawn(move || loop {
                    // Held only while waiting for a job, never while running one.
                    let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(job) = job else { return };
                    pool.run(job);
                })?;
        }
        Ok(())
    }

    fn report(&self, r: Report) {
        if self.reports.send(r).is_ok() {
            let _ = self.wake.try_send(());
        }
    }

    fn run(&self, job: Job) {
        let (slot, primary) = (job.slot.clone(), job.primary);
        if job.resign {
            let result = resign(&job);
            let keep = result.as_ref().ok().map(|(v, f)| (v.clone(), f.clone()));
            self.report(Report::Resigned(slot, result.map(|(v, _)| v)));
            if let (Some((version, Some(fingerprint))), Some(spec)) = (keep, &job.zone.sign) {
                let from = keeper::Origin::Fingerprint(fingerprint);
                keeper::keep_later(Arc::clone(spec), version.zone, version.due, from);
            }
            return;
        }
        let result = self.refresh(&job);
        self.report(Report::Done {
            slot,
            primary,
            result,
        });
    }

    /// Asks `job.primary` for the zone's serial and transfers a newer version.
    fn refresh(&self, job: &Job) -> Result<bool, String> {
        let (zone, primary) = (&job.zone, job.primary);
        // A catalog is asked by IXFR at once: knotd refuses ordinary queries to the
        // catalogs it generates, and a primary with nothing newer answers an IXFR with its
        // SOA alone (RFC 1995 §4), which is the SOA query's answer.
        let serial = if zone.catalog.is_some() {
            None
        } else {
            let tls = zone.tls.as_ref();
            match client::soa_serial(
                primary,
                tls,
                &zone.name,
                zone.key.as_ref(),
                job.ids[0],
                self.idle,
            ) {
                Ok(s) => Some(s),
                Err(e) => {
                    warn!("zone {}: SOA query to {primary} failed: {e}", zone.name);
                    return Err(format!("SOA query to {primary}: {e}"));
                }
            }
        };
        if let Some((cur, serial)) = job
            .current
            .as_ref()
            .zip(serial)
            .filter(|(c, serial)| !job.force_axfr && !is_newer(*serial, c.serial()))
        {
            if serial != cur.serial() {
                warn!(
                    "zone {}: {primary} has serial {serial}, not newer than ours ({}); keeping ours",
                    zone.name,
                    cur.serial()
                );
            }
            touch(zone);
            return Ok(false);
        }
        match self.transfer(job, serial) {
            Ok(new) => Ok(new),
            Err(e) => {
                self.shared
                    .plane()
                    .stats
                    .xfr_in_failed
                    .fetch_add(1, Relaxed);
                error!(
                    "zone {}: transfer from {primary} failed, {}: {e}",
                    zone.name,
                    if job.serving {
                        "keeping the version served"
                    } else {
                        "still nothing to serve"
                    }
                );
                Err(format!("transfer from {primary}: {e}"))
            }
        }
    }

    /// Transfers the zone from the job's primary, whose serial is `serial`: IXFR from our
    /// version if we have one (AXFR if that cannot be done), else AXFR. `Ok(true)`: a new
    /// version was reported and its copy written; `Ok(false)`: ours is current after all.
    fn transfer(&self, job: &Job, serial: Option<u32>) -> Result<bool, String> {
        let (zone, primary) = (&job.zone, job.primary);
        // A retransfer asked for: AXFR, as if we had no version.
        let base = job.current.clone().filter(|_| !job.force_axfr);
        let started = Instant::now();
        let bounds = Bounds {
            deadline: started + self.timeout,
            idle: self.idle,
        };
        let mut bytes = 0u64;
        let key = zone.key.as_ref();
        let tls = zone.tls.as_ref();
        let mut result = Err(Failure::Io(io::ErrorKind::NotFound.into()));
        let mut tried_ixfr = false;
        if let Some(base) = &base {
            tried_ixfr = true;
            result = client::transfer(
                primary,
                tls,
                &zone.name,
                RType::IXFR,
                Some(base),
                key,
                job.ids[1],
                self.limits,
                bounds,
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
            result = client::transfer(
                primary,
                tls,
                &zone.name,
                RType::AXFR,
                None,
                key,
                job.ids[2],
                self.limits,
                bounds,
                &mut bytes,
            );
        }
        self.shared
            .plane()
            .stats
            .xfr_in_bytes
            .fetch_add(bytes, Relaxed);
        let t = result.map_err(|e| e.to_string())?;
        let (new, form, patched, changed) = match t.outcome {
            Outcome::SoaOnly(s) => {
                // Up to date after all (the SOA query and the transfer crossed a change).
                if base.as_ref().is_some_and(|b| !is_newer(s, b.serial())) {
                    touch(zone);
                    return Ok(false);
                }
                return Err(format!("the primary sent its SOA (serial {s}) and no zone"));
            }
            Outcome::Zone {
                zone,
                warnings,
                form,
                patched,
                changed,
            } => {
                for w in warnings.iter().take(10) {
                    warn!("zone {}: {w}", zone.apex());
                }
                (zone, form, patched, changed)
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
            Form::Incremental => ("IXFR", &self.shared.plane().stats.xfr_in_ixfr),
            Form::Whole if tried_ixfr => {
                ("IXFR in AXFR form", &self.shared.plane().stats.xfr_in_axfr)
            }
            Form::Whole => ("AXFR", &self.shared.plane().stats.xfr_in_axfr),
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
        let base = match (form, &base, &job.signed) {
            (Form::Incremental, Some(b), Some(s)) => Some(signer::Base {
                unsigned: b,
                signed: s,
                changed: changed.as_deref(),
            }),
            _ => None,
        };
        self.serve(job, new, base)?;
        Ok(true)
    }

    /// Serves `new`, transferred onto `base` (IXFR) or whole: a zone signed as it arrives
    /// is signed first, and is not served if that fails (the version served stays). Then
    /// the copies are written (the thread waits for the disk, not the answers).
    fn serve(
        &self,
        job: &Job,
        new: Arc<Zone>,
        base: Option<signer::Base<'_>>,
    ) -> Result<(), String> {
        let zone = &job.zone;
        let signed = signer::sign_transferred(zone, &new, base)?;
        let touched = match &signed {
            Some((_, How::Incremental(names))) => Some(names.clone()),
            _ => None,
        };
        self.report(Report::Got(
            job.slot.clone(),
            Arc::clone(&new),
            signed.as_ref().map(|s| s.0.clone()),
            touched,
        ));
        keep_copies(zone, job.primary, &new, signed.as_ref());
        Ok(())
    }
}

/// Writes the copy of `new` (from `primary`) kept in the zone's `file`, and the version
/// signed incrementally from it in the key directory.
fn keep_copies(
    zone: &SecondaryZone,
    primary: SocketAddr,
    new: &Arc<Zone>,
    signed: Option<&(SignedVersion, How)>,
) {
    if let Some(path) = &zone.file {
        let written = Instant::now();
        match store::write_copy(path, new, &format!("from {primary}")) {
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
    // The signed version, kept by a thread of its own.
    if let (Some((version, how)), Some(spec)) = (signed, &zone.sign) {
        let from = match how {
            How::Whole(None) => return,
            How::Whole(Some(fingerprint)) => keeper::Origin::Fingerprint(fingerprint.clone()),
            How::Incremental(_) => keeper::Origin::Unsigned(Arc::clone(new)),
        };
        keeper::keep_later(
            Arc::clone(spec),
            Arc::clone(&version.zone),
            version.due,
            from,
        );
    }
}

/// A re-signing job: the version we have signed again (fresh signatures, a new serial),
/// and the fingerprint to keep it under.
fn resign(job: &Job) -> Result<(SignedVersion, Option<String>), String> {
    let (Some(spec), Some(current)) = (&job.zone.sign, &job.current) else {
        return Err("no version to sign".into());
    };
    let clock = signer::signer_time(&job.zone.name, spec);
    let (version, fingerprint) = signer::sign_whole_unkept(current, spec, clock.1)?;
    Ok((signer::due_on_wall(version, clock), fingerprint))
}

/// Records on the kept copy that the zone was found current now (its mtime).
fn touch(zone: &SecondaryZone) {
    if let Some(path) = &zone.file {
        if let Err(e) = store::touch(path) {
            warn!(
                "zone {}: cannot record the refresh on {}: {e}",
                zone.name,
                path.display()
            );
        }
    }
}
