//! secondary::schedule -- the secondary thread's side of the transfer threads: which due
//! zones get a refresh now (within `limits.transfers_in` and
//! `limits.transfers_in_per_primary`), and what a report changes.

use super::{refresh, signer, timers, Thread};
use shardns_zone::ZoneChange;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tracing::{error, info, warn};

impl Thread {
    /// Hands the zones that are due to the transfer threads, longest due first, within
    /// `limits.transfers_in` at once and `limits.transfers_in_per_primary` per primary.
    pub(super) fn dispatch(&mut self, now: Instant) {
        if self.in_flight >= self.max_in {
            return;
        }
        let mut due: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                let s = &self.slots[i];
                !s.in_flight && s.next_check <= now && !s.zone.primaries.is_empty()
            })
            .collect();
        due.sort_by_key(|&i| self.slots[i].next_check);
        for i in due {
            if self.in_flight >= self.max_in {
                return;
            }
            let s = &self.slots[i];
            let n = s.zone.primaries.len();
            let primary = s.zone.primaries[(s.preferred + s.attempt) % n];
            let busy = self.busy.entry(primary).or_insert(0);
            if *busy >= self.max_per_primary {
                continue;
            }
            *busy += 1;
            self.in_flight += 1;
            let ids = [self.next_id(), self.next_id(), self.next_id()];
            let s = &mut self.slots[i];
            s.in_flight = true;
            s.forced_job = s.force_axfr;
            let job = refresh::Job {
                slot: s.id(),
                zone: s.zone.clone(),
                primary,
                current: s.current.clone(),
                signed: s.signed.clone(),
                resign: false,
                serving: s.serving,
                force_axfr: s.force_axfr,
                ids,
            };
            if self.jobs.send(job).is_err() {
                error!("the transfer threads are gone; zone refreshes stop");
            }
        }
    }

    /// A report of a transfer thread: a new version served, or a refresh over.
    pub(super) fn take(&mut self, r: refresh::Report) {
        match r {
            refresh::Report::Got(id, zone, signed, changed) => {
                // Served even if the zone expired while the transfer ran.
                let Some(i) = self.slot_of(&id) else { return };
                let slot = &mut self.slots[i];
                slot.current = Some(zone);
                slot.signed = signed;
                slot.serving = true;
                let Some(served) = slot.served() else { return };
                let touched = changed
                    .map(|names| (slot.zone.name.clone(), names))
                    .into_iter()
                    .collect();
                self.send_touched(vec![ZoneChange::Put(served)], touched);
                self.refreshed(i);
                self.report(i);
            }
            refresh::Report::Resigned(id, result) => {
                self.in_flight = self.in_flight.saturating_sub(1);
                if let Some(i) = self.slot_of(&id) {
                    self.resigned(i, result);
                }
            }
            refresh::Report::Done {
                slot,
                primary,
                result,
            } => {
                if let Some(n) = self.busy.get_mut(&primary) {
                    *n = n.saturating_sub(1);
                }
                self.in_flight = self.in_flight.saturating_sub(1);
                // A member removed while its refresh ran: nothing to do.
                if let Some(i) = self.slot_of(&slot) {
                    self.done(i, primary, result);
                }
            }
        }
    }

    /// The slot a report is for, if it is still there.
    fn slot_of(&self, id: &refresh::SlotId) -> Option<usize> {
        let &i = self.by_name.get(&id.name)?;
        (self.slots[i].generation == id.generation).then_some(i)
    }

    /// A refresh of slot `i` from `primary` is over: the next primary is asked at once
    /// after a failure, RETRY later when every one failed.
    fn done(&mut self, i: usize, primary: SocketAddr, result: Result<bool, String>) {
        let had = self.slots[i].applied;
        let slot = &mut self.slots[i];
        slot.in_flight = false;
        match result {
            Ok(transferred) => {
                let n = slot.zone.primaries.len().max(1);
                slot.preferred = (slot.preferred + slot.attempt) % n;
                slot.attempt = 0;
                slot.source = Some(primary);
                if transferred {
                    slot.force_axfr &= !slot.forced_job;
                } else {
                    self.refreshed(i);
                }
            }
            Err(e) => {
                slot.last_error = Some(e);
                slot.attempt += 1;
                if slot.attempt < slot.zone.primaries.len() {
                    slot.next_check = Instant::now();
                } else {
                    slot.attempt = 0;
                    self.failed(i);
                }
            }
        }
        let slot = &mut self.slots[i];
        if std::mem::take(&mut slot.again) {
            slot.next_check = Instant::now();
        }
        let has = slot.current.as_ref().map(|z| z.serial());
        slot.applied = has;
        self.report(i);
        if self.slots[i].zone.catalog.is_some() && has != had {
            self.apply_catalog(i);
        }
    }

    /// Every primary failed: try again after RETRY (or the back-off of a zone that has
    /// never had a version).
    fn failed(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        slot.failures += 1;
        let retry = match &slot.current {
            Some(z) => timers(z).1,
            None => (5u32 << (slot.failures - 1).min(6)).min(300),
        };
        let wait = self.jitter(retry);
        let slot = &mut self.slots[i];
        slot.next_check = Instant::now() + wait;
        warn!(
            "zone {}: refresh failed from every primary ({} in a row); next try in {:.0} s",
            slot.zone.name,
            slot.failures,
            wait.as_secs_f64()
        );
    }

    /// Hands the signed zones whose signatures are due (and that no refresh holds) to the
    /// transfer threads to be signed again, within `limits.transfers_in` at once. No
    /// primary is asked: signatures are refreshed whatever the primaries do.
    pub(super) fn dispatch_resign(&mut self, now: Instant) {
        for i in 0..self.slots.len() {
            if self.in_flight >= self.max_in {
                return;
            }
            let s = &self.slots[i];
            let Some(&primary) = s.zone.primaries.first() else {
                continue;
            };
            if s.in_flight || s.resign_at(now).is_none_or(|t| t > now) {
                continue;
            }
            self.in_flight += 1;
            let s = &mut self.slots[i];
            s.in_flight = true;
            info!(
                "zone {}: signatures due for refresh: signing again",
                s.zone.name
            );
            let job = refresh::Job {
                slot: s.id(),
                zone: s.zone.clone(),
                primary,
                current: s.current.clone(),
                signed: s.signed.clone(),
                resign: true,
                serving: s.serving,
                force_axfr: false,
                ids: [0; 3],
            };
            if self.jobs.send(job).is_err() {
                error!("the transfer threads are gone; zone refreshes stop");
            }
        }
    }

    /// A re-signing of slot `i` is over: the new version served (if the zone is), or
    /// tried again later, the version served kept.
    fn resigned(&mut self, i: usize, result: Result<signer::SignedVersion, String>) {
        let slot = &mut self.slots[i];
        slot.in_flight = false;
        match result {
            Ok(version) => {
                let zone = Arc::clone(&version.zone);
                slot.signed = Some(version);
                if slot.serving {
                    self.send(vec![ZoneChange::Put(zone)]);
                }
            }
            Err(e) => {
                // As for a zone read from its file: a minute, backing off to an eighth of
                // `signature_refresh`.
                let retry = match (&slot.zone.sign, &mut slot.signed) {
                    (Some(spec), Some(s)) => {
                        let retry = crate::signing::retry_after(spec, s.failures);
                        s.failures = s.failures.saturating_add(1);
                        s.due = crate::signing::unix_now() + retry;
                        retry
                    }
                    _ => 0,
                };
                error!(
                    "zone {}: cannot sign it again, keeping the signed version served; trying again in {retry} s: {e}",
                    slot.zone.name
                );
            }
        }
        if std::mem::take(&mut self.slots[i].again) {
            self.slots[i].next_check = Instant::now();
        }
        self.report(i);
    }
}
