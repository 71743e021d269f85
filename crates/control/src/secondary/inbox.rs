//! secondary::inbox -- a NOTIFY (RFC 1996) as a worker takes it: answered at once, and
//! handed to the secondary thread without waiting: a flag per zone, and a wake-up through
//! a queue of one (a full queue means the thread is woken already), so no notice is lost
//! and a flood of them costs the thread one refresh per zone.
//!
//! NOERROR with AA for a zone we are a secondary of, from one of its primaries' addresses
//! (and signed with its `primary_key`, if it has one; the answer is then signed too);
//! REFUSED from any other address or without the key; NOTAUTH for a zone that is not one of
//! our secondary zones; FORMERR for a NOTIFY that is not about an SOA of class IN.
//!
//! A NOTIFY refused for a zone of ours (not a primary's address, unsigned, a TSIG that does
//! not verify) is logged at warn, once per zone and source address per
//! [`REFUSAL_LOG_EVERY`] seconds, so that an operator whose secondary never follows its
//! primary can tell why without a flood of forged notices flooding the log.

use super::{SecondaryZone, SlotStatus};
use crate::signed::tsig_refusal;
use crate::ControlStats;
use shardns_config::{AclEntry, PrimaryTls};
use shardns_wire::tsig::{self, Key, Signer};
use shardns_wire::{Class, Name, NameRef, Query, RType, Rcode};
use shardns_zone::{notify_answer, Written};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use tracing::warn;

/// Seconds between two log lines about NOTIFY refused for the same zone from the same
/// address.
pub(super) const REFUSAL_LOG_EVERY: u64 = 600;
/// Most (zone, address) pairs remembered for that; past it, pairs logged longer ago than
/// [`REFUSAL_LOG_EVERY`] are forgotten, and new ones go unlogged until there is room.
const REFUSAL_LOG_MAX: usize = 1024;

/// What the workers and the control socket share with the thread about one zone.
#[derive(Debug, Default)]
pub struct Flags {
    /// A NOTIFY (or `shardns zone refresh`) came since the thread last looked.
    pub pending: AtomicBool,
    /// The operator asked for an AXFR (`shardns zone retransfer`).
    pub forced: AtomicBool,
    /// Where it stands, as the thread last wrote it (`shardns zone status`).
    pub status: Mutex<SlotStatus>,
}

/// One secondary zone as a NOTIFY is checked against it.
struct Entry {
    apex: Name,
    primaries: Vec<IpAddr>,
    key: Option<Key>,
    flags: Arc<Flags>,
    /// Brought by a catalog (not configured).
    member: bool,
    /// A member whose template forwards updates: where to, and for whom (a configured
    /// zone's forwarding is read from the config: `None`).
    forward: Option<Arc<MemberForward>>,
}

/// Where the updates to a catalog member are forwarded (its template's
/// `update_forwarding`, its primaries), for `crate::update`'s forwarding.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberForward {
    /// The member's primaries, in order.
    pub primaries: Vec<SocketAddr>,
    /// Over TLS to them (`primary_tls`).
    pub tls: Option<PrimaryTls>,
    /// The clients whose updates go on.
    pub clients: Vec<AclEntry>,
}

/// The secondary zones, for the workers: which NOTIFY to take, and where to send it. The
/// zones of a consumed catalog come and go while the server runs: the table is behind a
/// mutex, which a worker takes only for a NOTIFY (never for a query), and the secondary
/// thread for each member added, moved or removed.
pub struct Inbox {
    /// By the apex's case-insensitive hash.
    zones: Mutex<HashMap<u64, Vec<Entry>>>,
    wake: SyncSender<()>,
    /// When a refusal was last logged, by (the apex's hash, the source address).
    refusals_logged: Mutex<HashMap<(u64, Option<IpAddr>), u64>>,
}

impl Inbox {
    /// An empty inbox with the wake-up queue (of one) the thread reads.
    pub fn new(wake: SyncSender<()>) -> Self {
        Self {
            zones: Mutex::new(HashMap::new()),
            wake,
            refusals_logged: Mutex::new(HashMap::new()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<Entry>>> {
        self.zones.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True if the zone at `apex` was brought by a catalog.
    pub fn is_catalog_member(&self, apex: NameRef<'_>) -> bool {
        self.table()
            .get(&apex.hash_ci())
            .and_then(|same| same.iter().find(|e| e.apex.as_ref().eq_ci(&apex)))
            .is_some_and(|e| e.member)
    }

    /// Where an update from `peer` to the catalog member at `apex` goes, if its template's
    /// `update_forwarding` holds `peer` (`None` as well for a configured zone).
    pub fn member_forward(&self, apex: NameRef<'_>, peer: IpAddr) -> Option<Arc<MemberForward>> {
        self.table()
            .get(&apex.hash_ci())
            .and_then(|same| same.iter().find(|e| e.apex.as_ref().eq_ci(&apex)))
            .and_then(|e| e.forward.clone())
            .filter(|f| f.clients.iter().any(|c| c.contains(peer)))
    }

    /// Takes NOTIFY for `zone` from now on (replacing what it had for the same apex: a
    /// member moved to another template); the flags the thread reads for it.
    /// `member`: brought by a catalog.
    pub fn add(&self, zone: &SecondaryZone, flags: Arc<Flags>, member: bool) {
        let entry = Entry {
            apex: zone.name.clone(),
            primaries: zone.primaries.iter().map(|a| a.ip()).collect(),
            key: zone.key.clone(),
            flags,
            member,
            forward: (!zone.update_forwarding.is_empty()).then(|| {
                Arc::new(MemberForward {
                    primaries: zone.primaries.clone(),
                    tls: zone.tls.clone(),
                    clients: zone.update_forwarding.clone(),
                })
            }),
        };
        let mut table = self.table();
        let same = table.entry(zone.name.as_ref().hash_ci()).or_default();
        same.retain(|e| !e.apex.as_ref().eq_ci(&zone.name.as_ref()));
        same.push(entry);
    }

    /// No longer takes NOTIFY for the zone at `apex` (a member removed from its catalog).
    pub fn remove(&self, apex: &Name) {
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
    pub fn request_refresh(&self, apex: NameRef<'_>, axfr: bool) -> bool {
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
    pub fn status(&self, apex: NameRef<'_>) -> Option<SlotStatus> {
        let flags = self.flags(apex)?;
        let status = flags.status.lock().unwrap_or_else(|e| e.into_inner());
        Some(status.clone())
    }

    /// Logs a NOTIFY for the zone at `apex` from `peer` refused for `why`, unless one was
    /// logged for the same pair less than [`REFUSAL_LOG_EVERY`] seconds before `now`.
    /// True if it was logged.
    fn log_refusal(&self, apex: NameRef<'_>, peer: Option<IpAddr>, why: &str, now: u64) -> bool {
        let mut logged = self
            .refusals_logged
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let key = (apex.hash_ci(), peer);
        let recent = |at: u64| now.saturating_sub(at) < REFUSAL_LOG_EVERY;
        if logged.get(&key).is_some_and(|&at| recent(at)) {
            return false;
        }
        if logged.len() >= REFUSAL_LOG_MAX && !logged.contains_key(&key) {
            logged.retain(|_, at| recent(*at));
            if logged.len() >= REFUSAL_LOG_MAX {
                return false;
            }
        }
        logged.insert(key, now);
        drop(logged);
        let from = peer.map_or_else(|| "-".to_string(), |ip| ip.to_string());
        warn!(
            "refused NOTIFY for zone {apex} from {from}: {why} (logged once per zone and \
             address every {REFUSAL_LOG_EVERY} s)"
        );
        true
    }

    /// Answers the NOTIFY `query` from `peer` into `out`, and queues a refresh if it is
    /// taken. `now` (seconds since the epoch) checks and makes TSIG signatures.
    pub fn notify(
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
            self.log_refusal(qname, peer, "not from one of its primaries", now);
            return notify_answer(query, Rcode::REFUSED, out);
        }
        let signer = match (tsig::read(query.bytes()), &entry.key) {
            (Err(_), _) => return notify_answer(query, Rcode::FORMERR, out),
            (Ok(None), None) => None,
            (Ok(None), Some(k)) => {
                stats.notify_in_refused.fetch_add(1, Relaxed);
                let why = format!("not signed, and the zone's primary_key is {}", k.name);
                self.log_refusal(qname, peer, &why, now);
                return notify_answer(query, Rcode::REFUSED, out);
            }
            (Ok(Some(sig)), key) => {
                let keys = key.as_slice();
                match tsig::verify(query.bytes(), &sig, keys, now) {
                    Ok(k) => Some(Signer::new(k, &sig)),
                    Err(failure) => {
                        stats.notify_in_refused.fetch_add(1, Relaxed);
                        let why = match key {
                            Some(k) => format!(
                                "its TSIG (key {}) fails with TSIG error {} against the zone's \
                                 primary_key {}",
                                sig.key,
                                failure.error(),
                                k.name
                            ),
                            None => format!(
                                "signed with key {}, and the zone has no primary_key",
                                sig.key
                            ),
                        };
                        self.log_refusal(qname, peer, &why, now);
                        return tsig_refusal(&sig, &failure, now, out, |rcode, o| {
                            notify_answer(query, rcode, o)
                        });
                    }
                }
            }
        };
        stats.notify_in_accepted.fetch_add(1, Relaxed);
        entry.flags.pending.store(true, Relaxed);
        // A full queue: the thread is woken already, and will see the flag.
        let _ = self.wake.try_send(());
        match signer {
            Some(mut s) => {
                let cut = s.limit(out.len());
                let mut w = notify_answer(query, Rcode::NOERROR, &mut out[..cut]);
                w.len = s.sign(out, w.len, now);
                w
            }
            None => notify_answer(query, Rcode::NOERROR, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_logged_once_per_zone_and_source_for_a_while_in_bounded_memory() {
        let (wake, _rx) = std::sync::mpsc::sync_channel(1);
        let inbox = Inbox::new(wake);
        let a: Name = "a.test.".parse().unwrap();
        let b: Name = "b.test.".parse().unwrap();
        let ip = |i: u32| Some(IpAddr::from(std::net::Ipv4Addr::from(0x7f00_0000 + i)));
        let t = 1_000_000;
        assert!(inbox.log_refusal(a.as_ref(), ip(1), "x", t));
        assert!(!inbox.log_refusal(a.as_ref(), ip(1), "x", t + 1));
        assert!(!inbox.log_refusal(a.as_ref(), ip(1), "x", t + REFUSAL_LOG_EVERY - 1));
        // Another zone, another source: logged.
        assert!(inbox.log_refusal(b.as_ref(), ip(1), "x", t + 1));
        assert!(inbox.log_refusal(a.as_ref(), ip(2), "x", t + 1));
        assert!(inbox.log_refusal(a.as_ref(), ip(1), "x", t + REFUSAL_LOG_EVERY));
        // A flood of sources: the table stays bounded; new pairs are logged again once the
        // old ones are stale.
        for i in 10..10 + 2 * REFUSAL_LOG_MAX as u32 {
            inbox.log_refusal(a.as_ref(), ip(i), "x", t + 2);
        }
        assert!(inbox.refusals_logged.lock().unwrap().len() <= REFUSAL_LOG_MAX);
        assert!(!inbox.log_refusal(b.as_ref(), ip(99_999), "x", t + 3));
        assert!(inbox.log_refusal(b.as_ref(), ip(99_999), "x", t + 2 + REFUSAL_LOG_EVERY + 1));
    }
}
