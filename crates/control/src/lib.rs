//! shardns-control: the zone control plane. Everything that decides *which* zones the
//! workers answer from, and keeps them current, lives here; the runtime (`shardns-server`:
//! workers, sockets, transports, dispatch) only reads what this crate publishes.
//!
//! Owns, by room:
//! - `zones`: the zone library (reading the configured zones on every core, reloads that
//!   read only what changed, inotify watches) and the embedded default zone;
//! - `reload`: the main thread's reloads (SIGHUP, `shardns reload`) and the Unix control
//!   socket that asks for them (`commands`, `socket`);
//! - `secondary`: zones transferred from primaries (SOA timers, the transfer threads, NOTIFY
//!   received, catalog consumers), `catalog` the catalogs we produce (RFC 9432);
//! - `journal`: each zone's history for IXFR, on disk; `notify`: NOTIFY sent to
//!   secondaries; `signing`: automatic DNSSEC signing, keys and the re-signing timer;
//!   `parent`: the parent's DS checked (and pushed) while a KSK rollover waits for it;
//! - `update`: dynamic update (RFC 2136: the queue from the workers, TSIG, policies, signed
//!   zones, forwarding, transactions, the flood limit); `zonefile`: zones changed by updates
//!   written back to their files; `request`: what the control socket and the timers ask
//!   of the main thread;
//! - `acl`: who may transfer which zone; `stats`: the control plane's counters;
//!   `signed`: the signed refusal of a request whose TSIG failed.
//!
//! The dependency runs one way: the runtime holds a [`Plane`] (the zone set behind an
//! `ArcSwap`, the transfer ACL, the journals, the NOTIFY and UPDATE inboxes) and gives the control
//! plane a [`Host`] for the little it needs back (wake the workers, the statistics text).
//! Nothing here imports a worker, and nothing here runs on one but `secondary::Inbox::notify`,
//! `update::Inbox::submit` and the journals' reads, which a worker calls for NOTIFY, UPDATE
//! and IXFR.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod catalog;
pub mod journal;
pub mod notify;
pub mod parent;
pub mod reload;
pub mod request;
pub mod secondary;
pub mod signed;
pub mod signing;
pub mod stats;
pub mod update;
pub mod zonefile;
pub mod zones;

pub use acl::TransferAcl;
pub use stats::ControlStats;
pub use zones::EmbeddedZone;

use arc_swap::ArcSwap;
use shardns_config::{Config, ConfigError, Overrides};
use shardns_zone::ZoneSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// What the control plane publishes to the workers, and the state it keeps beside it.
/// The runtime holds one for the life of the process.
pub struct Plane {
    /// The zone snapshot; workers re-read it once per loop iteration.
    pub zones: ArcSwap<ZoneSet>,
    /// Who may transfer which zone; replaced with the zones on reload, read only by
    /// transfer queries.
    pub transfer_acl: ArcSwap<TransferAcl>,
    /// Set once, to stop the workers and the control plane's threads.
    pub shutdown: AtomicBool,
    /// The control plane's counters.
    pub stats: ControlStats,
    /// When the server started.
    pub started: Instant,
    /// The secondary zones, for NOTIFY (`None`: the server has none).
    pub secondary: Option<secondary::Inbox>,
    /// The journaled zones' histories, for IXFR.
    pub journals: journal::Journals,
    /// Where workers queue the UPDATE messages they read.
    pub updates: update::Inbox,
}

impl Plane {
    /// A plane serving `set`, with the transfer ACL `config` gives; `updates` is the queue
    /// whose receiver the main thread drains (`update::process`).
    pub fn new(
        config: &Config,
        set: ZoneSet,
        secondary: Option<secondary::Inbox>,
        updates: update::Inbox,
    ) -> Self {
        updates.configure(config);
        Self {
            zones: ArcSwap::from_pointee(set),
            transfer_acl: ArcSwap::from_pointee(TransferAcl::new(config)),
            shutdown: AtomicBool::new(false),
            stats: ControlStats::default(),
            started: Instant::now(),
            secondary,
            journals: Default::default(),
            updates,
        }
    }
}

/// What the control plane asks of the runtime that serves its zones.
pub trait Host: Send + Sync {
    /// The published state.
    fn plane(&self) -> &Plane;
    /// Wakes every worker, so it picks up a new zone set now rather than at its next query.
    fn wake_workers(&self);
    /// The statistics in Prometheus text form (`shardns stats`).
    fn stats_text(&self) -> String;
    /// How many workers serve.
    fn workers(&self) -> usize;
}

/// Where the configuration comes from: an optional file, command-line values on top, and
/// the zone to serve when none is configured. Read again at a reload when the config file
/// or the zone list changed.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Setup {
    /// The TOML config file.
    pub config_path: Option<PathBuf>,
    /// Command-line values, applied over the file.
    pub overrides: Overrides,
    /// Served when the configuration names no zone (and recursion is off).
    pub default_zone: Option<EmbeddedZone>,
    /// Root hints text used when recursion is on and no `root_hints` file is configured
    /// (the binary bundles the IANA hints; absent: the resolver crate's built-in copy).
    pub default_root_hints: Option<&'static str>,
}

impl Setup {
    /// A setup from a config file (or none), overrides and a default zone.
    pub fn new(
        config_path: Option<PathBuf>,
        overrides: Overrides,
        default_zone: Option<EmbeddedZone>,
    ) -> Self {
        Self {
            config_path,
            overrides,
            default_zone,
            default_root_hints: None,
        }
    }

    /// Sets the root hints used when none are configured.
    pub fn with_root_hints(mut self, hints: &'static str) -> Self {
        self.default_root_hints = Some(hints);
        self
    }

    /// Reads the config file (if any) and applies the overrides.
    pub fn config(&self) -> Result<Config, ConfigError> {
        let mut config = match &self.config_path {
            Some(p) => Config::from_file(p)?,
            None => Config::default(),
        };
        config.apply(&self.overrides);
        let named = self
            .config_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("command line"));
        shardns_config::check_signing(&config, &named)?;
        Ok(config)
    }
}
