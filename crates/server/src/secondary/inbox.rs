//! secondary::inbox -- a NOTIFY (RFC 1996) as a worker takes it: answered at once, and
//! handed to the secondary thread without waiting: a flag per zone, and a wake-up through
//! a queue of one (a full queue means the thread is woken already), so no notice is lost
//! and a flood of them costs the thread one refresh per zone.
//!
//! NOERROR with AA for a zone we are a secondary of, from one of its primaries' addresses
//! (and signed with its `primary_key`, if it has one; the answer is then signed too);
//! REFUSED from any other address or without the key; NOTAUTH for a zone that is not one of
//! our secondary zones; FORMERR for a NOTIFY that is not about an SOA of class IN.

use super::{SecondaryZone, SlotStatus};
use crate::stats::ControlStats;
use shardns_wire::tsig::{self, Key, Signer};
use shardns_wire::{Class, Name, NameRef, Query, RType, Rcode};
use shardns_zone::{notify_answer, Written};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};

/// What the workers and the control socket share with the thread about one zone.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    /// A NOTIFY (or `shardns zone refresh`) came since the thread last looked.
    pub(crate) pending: AtomicBool,
    /// The operator asked for an AXFR (`shardns zone retransfer`).
    pub(crate) forced: AtomicBool,
    /// Where it stands, as the thread last wrote it (`shardns zone status`).
    pub(crate) status: Mutex<SlotStatus>,
}

/// One secondary zone as a NOTIFY is checked against it.
struct Entry {
    apex: Name,
    primaries: Vec<IpAddr>,
    key: Option<Key>,
    flags: Arc<Flags>,
    /// Brought by a catalog (not configured).
    member: bool,
}

/// The secondary zones, for the workers: which NOTIFY to take, and where to send it. The
/// zones of a consumed catalog come and go while the server runs: the table is behind a
/// mutex, which a worker takes only for a NOTIFY (never for a query), and the secondary
/// thread for each member added, moved or removed.
pub(crate) struct Inbox {
    /// By the apex's case-insensitive hash.
    zones: Mutex<HashMap<u64, Vec<Entry>>>,
    wake: SyncSender<()>,
}

impl Inbox {
    /// An empty inbox with the wake-up queue (of one) the thread reads.
    pub(crate) fn new(wake: SyncSender<()>) -> Self {
        Self {
            zones: Mutex::new(HashMap::new()),
            wake,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<Entry>>> {
        self.zones.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True if the zone at `apex` was brought by a catalog.
    pub(crate) fn is_catalog_member(&self, apex: NameRef<'_>) -> bool {
        self.table()
            .get(&apex.hash_ci())
            .and_then(|same| same.iter().find(|e| e.apex.as_ref().eq_ci(&apex)))
            .is_some_and(|e| e.member)
    }

    /// Takes NOTIFY for `zone` from now on (replacing what it had for the same apex: a
    /// member moved to another template); the flags the thread reads for it.
    /// `member`: brought by a catalog.
    pub(crate) fn add(&self, zone: &SecondaryZone, flags: Arc<Flags>, member: bool) {
        let entry = Entry {
            apex: zone.name.clone(),
            primaries: zone.primaries.iter().map(|a| a.ip()).collect(),
            key: zone.key.clone(),
            flags,
            member,
        };
        let mut table = self.table();
        let same = table.entry(zone.name.as_ref().hash_ci()).or_default();
        same.retain(|e| !e.apex.as_ref().eq_ci(&zone.name.as_ref()));
        same.push(entry);
    }

    /// No longer takes NOTIFY for the zone at `apex` (a member removed from its catalog).
    pub(crate) fn remove(&self, apex: &Name) {
        let mut table = self.table();
        let h = apex.as_ref().hash_ci();
        if let Some(same) = table.get_mut(&h) {
            same.retain(|e| !e.apex.as_ref().eq_ci(&apex.as_ref()));
            if same.is_empty() {
                table.remove(&h);
            }
        }
    }

    fn flags(&self, apex: NameRef<'_>) -> Option<Arc<Flags>> {
        self.table()
            .get(&apex.hash_ci())
            .and_then(|same| same.iter().find(|e| e.apex.as_ref().eq_ci(&apex)))
            .map(|e| Arc::clone(&e.flags))
    }

    /// Asks the thread to refresh the zone at `apex` now (`axfr`: by AXFR, whatever the
    /// serials say); false if it is not one of our secondary zones.
    pub(crate) fn request_refresh(&self, apex: NameRef<'_>, axfr: bool) -> bool {
        let Some(flags) = self.flags(apex) else {
            return false;
        };
        if axfr {
            flags.forced.store(true, Relaxed);
        }
        flags.pending.store(true, Relaxed);
        let _ = self.wake.try_send(());
        true
    }

    /// Where the secondary zone at `apex` stands (`None`: not one of ours).
    pub(crate) fn status(&self, apex: NameRef<'_>) -> Option<SlotStatus> {
        let flags = self.flags(apex)?;
        let status = flags.status.lock().unwrap_or_else(|e| e.into_inner());
        Some(status.clone())
    }

    /// Answers the NOTIFY `query` from `peer` into `out`, and queues a refresh if it is
    /// taken. `now` (seconds since the epoch) checks and makes TSIG signatures.
    pub(crate) fn notify(
        &self,
        query: &Query<'_>,
        peer: Option<IpAddr>,
        now: u64,
        out: &mut [u8],
        stats: &ControlStats,
    ) -> Written {
        if query.qtype() != RType::SOA || query.qclass() != Class::IN {
            return notify_answer(query, Rcode::FORMERR, out);
        }
        let qname = query.qname();
        let table = self.table();
        let entry = table
            .get(&qname.hash_ci())
            .and_then(|same| same.iter().find(|e| e.apex.as_ref().eq_ci(&qname)));
        let Some(entry) = entry else {
            stats.notify_in_refused.fetch_add(1, Relaxed);
            return notify_answer(query, Rcode::NOTAUTH, out);
        };
        if !peer.is_some_and(|ip| entry.primaries.contains(&ip)) {
            stats.notify_in_refused.fetch_add(1, Relaxed);
            return notify_answer(query, Rcode::REFUSED, out);
        }
        let signer = match (tsig::read(query.bytes()), &entry.key) {
            (Err(_), _) => return notify_answer(query, Rcode::FORMERR, out),
            (Ok(None), None) => None,
            (Ok(None), Some(_)) => {
                stats.notify_in_refused.fetch_add(1, Relaxed);
                return notify_answer(query, Rcode::REFUSED, out);
            }
            (Ok(Some(sig)), key) => {
                let keys = key.as_slice();
                match tsig::verify(query.bytes(), &sig, keys, now) {
                    Ok(k) => Some(Signer::new(k, &sig)),
                    Err(error) => {
                        stats.notify_in_refused.fetch_add(1, Relaxed);
                        let mut w = notify_answer(query, Rcode::NOTAUTH, out);
                        w.len = tsig::append_error(out, w.len, &sig, error, now);
                        return w;
                    }
                }
            }
        };
        stats.notify_in_accepted.fetch_add(1, Relaxed);
        entry.flags.pending.store(true, Relaxed);
        // A full queue: the thread is woken already, and will see the flag.
        let _ = self.wake.try_send(());
        let mut w = notify_answer(query, Rcode::NOERROR, out);
        if let Some(mut s) = signer {
            if w.len + s.room() <= out.len() {
                w.len = s.sign(out, w.len, now);
            }
        }
        w
    }
}
