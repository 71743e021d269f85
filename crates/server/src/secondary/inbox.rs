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

/// One secondary zone as a NOTIFY is checked against it.
struct Entry {
    apex: Name,
    primaries: Vec<IpAddr>,
    key: Option<Key>,
    /// The zone's index in the secondary thread's list.
    index: usize,
}

/// The secondary zones, for the workers: which NOTIFY to take, and where to send it.
pub(crate) struct Inbox {
    /// By the apex's case-insensitive hash.
    zones: HashMap<u64, Vec<Entry>>,
    /// Per zone (by index): a NOTIFY came since the thread last looked.
    pending: Arc<[AtomicBool]>,
    /// Per zone: the operator asked for an AXFR (`shardns zone retransfer`).
    forced: Arc<[AtomicBool]>,
    /// Per zone: where it stands, as the thread last wrote it (`shardns zone status`).
    board: Arc<Mutex<Vec<SlotStatus>>>,
    wake: SyncSender<()>,
}

impl Inbox {
    /// An inbox for `zones` (indexed as the secondary thread holds them), with the flags
    /// and the wake-up queue (of one) the thread reads.
    pub(crate) fn new(
        zones: &[SecondaryZone],
        pending: Arc<[AtomicBool]>,
        forced: Arc<[AtomicBool]>,
        board: Arc<Mutex<Vec<SlotStatus>>>,
        wake: SyncSender<()>,
    ) -> Self {
        let mut map: HashMap<u64, Vec<Entry>> = HashMap::new();
        for (index, z) in zones.iter().enumerate() {
            map.entry(z.name.as_ref().hash_ci())
                .or_default()
                .push(Entry {
                    apex: z.name.clone(),
                    primaries: z.primaries.iter().map(|a| a.ip()).collect(),
                    key: z.key.clone(),
                    index,
                });
        }
        Self {
            zones: map,
            pending,
            forced,
            board,
            wake,
        }
    }

    fn index(&self, apex: NameRef<'_>) -> Option<usize> {
        self.zones
            .get(&apex.hash_ci())
            .and_then(|same| same.iter().find(|e| e.apex.as_ref().eq_ci(&apex)))
            .map(|e| e.index)
    }

    /// Asks the thread to refresh the zone at `apex` now (`axfr`: by AXFR, whatever the
    /// serials say); false if it is not one of our secondary zones.
    pub(crate) fn request_refresh(&self, apex: NameRef<'_>, axfr: bool) -> bool {
        let Some(i) = self.index(apex) else {
            return false;
        };
        if axfr {
            self.forced[i].store(true, Relaxed);
        }
        self.pending[i].store(true, Relaxed);
        let _ = self.wake.try_send(());
        true
    }

    /// Where the secondary zone at `apex` stands (`None`: not one of ours).
    pub(crate) fn status(&self, apex: NameRef<'_>) -> Option<SlotStatus> {
        let i = self.index(apex)?;
        let board = self.board.lock().unwrap_or_else(|e| e.into_inner());
        board.get(i).cloned()
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
        let entry = self
            .zones
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
        self.pending[entry.index].store(true, Relaxed);
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
