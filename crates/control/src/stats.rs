//! stats -- the control plane's counters (reloads, zones, NOTIFY, transfers in, catalogs):
//! a few writes a second at most, from the control plane's threads (and NOTIFY received
//! on a worker), read by the runtime's Prometheus text.

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;

/// Server-wide numbers kept by the control thread. A comment names each group of fields.
#[derive(Debug, Default)]
#[allow(missing_docs)]
pub struct ControlStats {
    /// Reloads that loaded everything they read, and those where something failed.
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// Zones served now.
    pub zones: AtomicU64,
    /// Zone loads that failed (each keeps its previous version, if it had one).
    pub zone_load_errors: AtomicU64,
    /// NOTIFY messages sent (retries included), answered, and given up on.
    pub notify_sent: AtomicU64,
    pub notify_acked: AtomicU64,
    pub notify_failed: AtomicU64,
    /// Incoming transfers (secondary zones): whole zones, incremental (IXFR), failed; the
    /// octets of their messages.
    pub xfr_in_axfr: AtomicU64,
    pub xfr_in_ixfr: AtomicU64,
    pub xfr_in_failed: AtomicU64,
    pub xfr_in_bytes: AtomicU64,
    /// NOTIFY received: taken (a refresh follows), refused (not from a primary, no key, not
    /// a secondary zone of ours).
    pub notify_in_accepted: AtomicU64,
    pub notify_in_refused: AtomicU64,
    /// Secondary zones answered SERVFAIL now (expired, or never transferred), and how often
    /// one expired.
    pub secondary_unavailable: AtomicU64,
    pub secondary_expired: AtomicU64,
    /// Member zones brought by consumed catalogs now, and catalog versions not used (no or
    /// another version property, a member listed twice).
    pub catalog_members: AtomicU64,
    pub catalog_rejected: AtomicU64,
    /// dnstap frames the writer thread could not deliver (no reader connected, a write
    /// failed).
    pub dnstap_lost: AtomicU64,
    /// Dynamic updates (RFC 2136) answered: accepted (NOERROR, the operator's transactions
    /// included), refused for who sent them (REFUSED, NOTAUTH: no grant, no or a bad TSIG,
    /// not a primary zone here), refused by a prerequisite (YXDOMAIN, YXRRSET, NXDOMAIN,
    /// NXRRSET), refused for sending too many (`limits.updates_per_second`), the rest
    /// (FORMERR, NOTZONE, SERVFAIL); and those the full queue refused before the main
    /// thread saw them (as of the last batch).
    pub updates_accepted: AtomicU64,
    pub updates_refused: AtomicU64,
    pub updates_prerequisite: AtomicU64,
    pub updates_rate_limited: AtomicU64,
    pub updates_other: AtomicU64,
    pub updates_queue_full: AtomicU64,
    /// Updates to a secondary zone forwarded to its primary (`update::forward`), shared
    /// with the forwarding threads.
    pub updates_forwarded: Arc<ForwardCounts>,
}

/// What became of the updates forwarded to a primary.
#[derive(Debug, Default)]
pub struct ForwardCounts {
    /// Forwards waiting for their primary now.
    pub in_flight: AtomicUsize,
    /// Updates relayed with the primary's answer.
    pub answered: AtomicU64,
    /// Updates no primary answered (SERVFAIL).
    pub failed: AtomicU64,
    /// Updates that found too many forwards waiting (SERVFAIL at once).
    pub overflow: AtomicU64,
}
