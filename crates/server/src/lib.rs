//! The shardns runtime: share-nothing workers serving DNS over UDP, TCP and AF_XDP.
//!
//! [`run`] (`runtime`) has the zone control plane (`shardns-control`) load the zones,
//! binds one SO_REUSEPORT UDP socket and one TCP listener per listen address *per worker*
//! (`listen`; one more TCP listener per `tls_listen` address for DNS over TLS), and starts
//! the workers and the control plane's threads. Each worker (`worker`) is a named unto
//! itself: it reads its own sockets in an epoll loop, hands each query to `dispatch` (parse
//! once, classify once, answer from the zones, the transfer policy or the resolver) into its
//! own preallocated buffers, writes the responses, and counts into its own statistics
//! (`stats`). Workers share only what the control plane publishes (its `Plane`: the zone
//! snapshot, an `Arc` behind an `ArcSwap` re-read with one atomic load per loop iteration,
//! never locked; the transfer ACL; the journals; the shutdown flag) and the connection counts.
//!
//! ```text
//!            SO_REUSEPORT spreads clients
//!   UDP/TCP ───────────┬──────────────────┐
//!                 worker 0   ...     worker N-1     recvmmsg → dispatch → sendmmsg
//!                     └── Arc<ZoneSet> ──┘          (no queue, no lock, no clock per query)
//!   control plane (shardns-control), on threads of its own: reloads, transfers in,
//!                NOTIFY out, re-signing → ArcSwap::store(new ZoneSet)
//!   stats: summed over the workers' counters when read (control socket, HTTP)
//! ```
//!
//! Beside the zones: `transfers` (what a worker answers to AXFR/IXFR; it streams them,
//! `worker::stream`), `recursion` (each worker's resolver engine with its own upstream
//! sockets, in the same epoll loop), `rrl` (each worker's response rate limiter, a fixed
//! table with no lock). `xdp` steers an interface's UDP queries to AF_XDP sockets, one per
//! worker.
//!
//! `xdp` and the `shardns-sys` crate hold the only `unsafe` code (epoll, eventfd,
//! recvmmsg/sendmmsg, accept4; the bpf() system call, the AF_XDP socket and its rings).
//! Never on a worker: locks, allocation per query, clock system calls per query, logging
//! unless query logging is switched on. (DNS over HTTPS is the one exception: the `h2`
//! crate allocates per stream and takes its own uncontended mutex; see `worker::https`.)
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod cookie;
mod dispatch;
mod dnstap;
pub mod doh;
mod extras;
mod http;
mod https_conn;
mod listen;
pub mod logging;
mod origin;
mod querylog;
mod recursion;
mod rrl;
mod runtime;
mod stats;
mod tcp;
mod transfers;
mod worker;
pub mod xdp;

pub use runtime::run;
pub use shardns_config::local::LocalZone;
pub use shardns_config::{
    parse_duration, AclEntry, Config, ConfigError, ForwardZone, Limits, Overrides, ResolverConfig,
    RrlConfig, SecondaryFlag, ZoneConfig,
};
pub use shardns_control::reload::request;
pub use shardns_control::{EmbeddedZone, Setup};
pub use shardns_dnssec::Algorithm as SignAlgorithm;
pub use shardns_wire::tsig::Key as TsigKey;
pub use shardns_wire::Name;

/// The journal file's format, for the fuzz target `journal` (`fuzz/src/journal.rs`): not
/// an API.
#[doc(hidden)]
pub mod journal_file {
    pub use shardns_control::journal::{encode, parse, Parsed};
}

use arc_swap::ArcSwap;
use shardns_control::{Host, Plane};
use shardns_sys::EventFd;
use stats::WorkerStats;
use std::fmt;
use std::io;
use std::sync::atomic::AtomicUsize;

/// Why the server could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The config file is unreadable or invalid.
    Config(ConfigError),
    /// Zones failed to load (every error, one `file:line: message` per line).
    Zones(String),
    /// A socket could not be set up.
    Socket {
        /// What the socket is for.
        what: String,
        /// The cause.
        source: io::Error,
    },
    /// Something else the server needs failed (threads, signals, epoll).
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::Zones(e) => write!(f, "{e}"),
            Self::Socket { what, source } => write!(f, "{what}: {source}"),
            Self::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Answers made off a worker, for it to send: where each goes, and the message.
pub(crate) type Mailbox = Vec<(origin::Origin, Vec<u8>)>;

/// State shared by the workers, and the control plane's [`Plane`] they read from.
pub(crate) struct Shared {
    /// The zones, the transfer ACL, the journals, the NOTIFY inbox, the shutdown flag.
    pub(crate) plane: Plane,
    /// Open TCP connections over all workers (changed on accept and close only).
    pub(crate) tcp_open: AtomicUsize,
    /// Open TCP connections per client address (changed on accept and close only).
    pub(crate) tcp_clients: tcp::ClientCounts,
    /// One waker per worker.
    pub(crate) wakers: Vec<EventFd>,
    /// One mailbox per worker: a client at its TCP connection limit whose new connection
    /// another worker accepted; the worker closes that client's least recently active
    /// connection if it has one, else passes the request on (see `worker::conn`).
    pub(crate) evictions: Vec<std::sync::atomic::AtomicU64>,
    /// One counter block per worker, each written only by its worker.
    pub(crate) stats: Vec<WorkerStats>,
    /// One mailbox per worker: answers made off the worker (a dynamic update's, by the
    /// control plane) for it to send to the client, with the waker rung. Rare: a lock.
    pub(crate) late: Vec<std::sync::Mutex<Mailbox>>,
    /// NSID and cookie secrets (`[server]`), replaced at a reload.
    pub(crate) edns: ArcSwap<extras::EdnsPolicy>,
    /// Seconds since the epoch for cookie timestamps, from the workers' loop clocks.
    pub(crate) unix_clock: extras::UnixClock,
    /// DNS over TLS: the certificate and key (`None`: no `server.tls_listen`).
    pub(crate) tls: Option<worker::TlsConfig>,
    /// DNS over QUIC: the certificate and endpoint settings (`None`: no `server.quic_listen`).
    pub(crate) quic: Option<worker::QuicConfig>,
    /// The resolver role, once the workers are started (for its policy zones' counters).
    pub(crate) recursion: std::sync::OnceLock<std::sync::Arc<recursion::RecursionShared>>,
}

impl Shared {
    pub(crate) fn worker_stats(&self) -> Vec<&WorkerStats> {
        self.stats.iter().collect()
    }

    /// The Prometheus text: the workers' and control plane's counters, then the policy
    /// zones' (`/metrics` and `shardns stats`).
    pub(crate) fn metrics_text(&self) -> String {
        let mut s = stats::render_prometheus(
            &self.worker_stats(),
            &self.plane.stats,
            self.plane.started.elapsed().as_secs_f64(),
        );
        recursion::rpz::render_counters(&mut s, self.recursion.get().map(|r| &**r));
        s
    }

    /// Hands `answer` (a whole DNS message) to worker `worker` to send to `origin`.
    pub(crate) fn deliver_late(&self, worker: usize, origin: origin::Origin, answer: Vec<u8>) {
        if let Some(mailbox) = self.late.get(worker) {
            mailbox
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((origin, answer));
            self.wakers[worker].wake();
        }
    }
}

impl Host for Shared {
    fn plane(&self) -> &Plane {
        &self.plane
    }

    fn wake_workers(&self) {
        for w in &self.wakers {
            w.wake();
        }
    }

    fn stats_text(&self) -> String {
        self.metrics_text()
    }

    fn workers(&self) -> usize {
        self.stats.len()
    }
}

/// Loads the configured zones and reports every problem; serves nothing. For
/// `shardns check`. Returns the number of zones and the warnings.
pub fn check(setup: &Setup) -> Result<(usize, Vec<String>), Error> {
    let config = setup.config()?;
    if config.resolver.recursion {
        resolver_config(&config, setup)?;
        recursion::rpz::load(&config.resolver.rpz)?;
    }
    let specs = shardns_control::zones::specs(&config, setup.default_zone).map_err(Error::Zones)?;
    // Read once: nothing to watch.
    let mut library = shardns_control::zones::ZoneLibrary::new(false);
    let report = library.load(&specs);
    zone_failures(&report)?;
    let mut warnings = config.warnings();
    warnings.extend(report.warnings.iter().map(ToString::to_string));
    Ok((report.loaded, warnings))
}

pub(crate) fn zone_failures(report: &shardns_control::zones::LoadReport) -> Result<(), Error> {
    if report.failures.is_empty() {
        return Ok(());
    }
    let text: Vec<String> = report
        .failures
        .iter()
        .map(|f| format!("zone {} failed to load:\n{}", f.name, f.error))
        .collect();
    Err(Error::Zones(text.join("\n")))
}

/// The resolver's configuration from `[resolver]`: hints from the configured file, else
/// the setup's bundled text, else the resolver crate's copy of the IANA hints.
pub(crate) fn resolver_config(
    config: &Config,
    setup: &Setup,
) -> Result<shardns_resolver::Config, Error> {
    use shardns_resolver::{Hints, ZoneServers};
    let r = &config.resolver;
    let mut rc = shardns_resolver::Config::default();
    rc.hints = match (&r.root_hints, setup.default_root_hints) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                what: format!("reading root hints {}", path.display()),
                source,
            })?;
            Hints::parse(&text).map_err(|e| Error::Zones(format!("{}: {e}", path.display())))?
        }
        (None, Some(text)) => {
            Hints::parse(text).map_err(|e| Error::Zones(format!("bundled root hints: {e}")))?
        }
        (None, None) => Hints::iana(),
    };
    for f in &r.forward {
        match rc.forward_zones.iter_mut().find(|z| z.zone == f.zone) {
            Some(z) => z.servers.push(f.server),
            None => rc.forward_zones.push(ZoneServers {
                zone: f.zone.clone(),
                servers: vec![f.server],
            }),
        }
    }
    rc.cache_bytes = r.cache_size;
    rc.min_ttl = r.min_ttl;
    rc.max_ttl = r.max_ttl.max(r.min_ttl);
    rc.max_negative_ttl = r.max_negative_ttl;
    rc.upstream_port = r.upstream_port;
    rc.max_depth = r.max_depth;
    rc.max_queries = r.max_upstream_queries;
    rc.max_referrals = r.max_referrals;
    rc.max_chain = r.max_cname_chain;
    rc.max_resolution_ms = r.resolution_timeout_ms;
    rc.server_hold_after = r.server_hold_after;
    rc.server_hold_ms = r.server_hold_ms;
    rc.server_hold_max_ms = r.server_hold_max_ms.max(r.server_hold_ms);
    rc.validation = r.validation;
    rc.aggressive_nsec = r.aggressive_nsec;
    rc.serve_stale = r.serve_stale;
    rc.serve_stale_max = r.serve_stale_max;
    rc.serve_stale_reply_ttl = r.serve_stale_reply_ttl;
    rc.serve_stale_client_timeout_ms = r.serve_stale_client_timeout_ms;
    rc.serve_stale_recheck_ms = r.serve_stale_recheck_ms;
    rc.prefetch = r.prefetch;
    rc.dns64 = r.dns64;
    rc.dns64_prefix = r
        .dns64_prefix
        .parse()
        .map_err(|e| Error::Zones(format!("resolver.dns64_prefix: {e}")))?;
    if let Some(x) = &r.dns64_exclude {
        rc.dns64_exclude = x
            .iter()
            .map(|s| s.parse())
            .collect::<Result<_, String>>()
            .map_err(|e| Error::Zones(format!("resolver.dns64_exclude: {e}")))?;
    }
    rc.dns64_options = dns64_options(r)?;
    let suffix = r.dns64_suffix.parse().map_err(|e| format!("{e}"));
    rc.dns64_prefix = suffix
        .and_then(|s| rc.dns64_prefix.with_suffix(s))
        .map_err(|e| Error::Zones(format!("resolver.dns64_suffix: {e}")))?;
    rc.qname_minimisation = r.qname_minimisation;
    rc.qname_minimisation_strict = r.qname_minimisation_strict;
    rc.allow_loopback_upstreams = r.allow_loopback_upstreams;
    if let Some(path) = &r.trust_anchor {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: format!("reading trust anchor {}", path.display()),
            source,
        })?;
        rc.trust_anchors = shardns_resolver::TrustAnchors::parse(&text)
            .map_err(|e| Error::Zones(format!("{}: {e}", path.display())))?;
    }
    rc.trust_anchors.negative = r.negative_trust_anchors.clone();
    rc.local = recursion::build_local(r).map_err(|e| Error::Zones(format!("resolver: {e}")))?;
    Ok(rc)
}

/// BIND's and Unbound's other DNS64 options from `[resolver]`.
fn dns64_options(r: &ResolverConfig) -> Result<shardns_resolver::Dns64Options, Error> {
    use shardns_resolver::local::Prefix;
    let prefixes = |list: &Option<Vec<AclEntry>>| {
        list.as_ref().map(|l| {
            l.iter()
                .map(|a| Prefix {
                    addr: a.addr,
                    len: a.len,
                })
                .collect::<Vec<_>>()
        })
    };
    let mapped = prefixes(&r.dns64_mapped);
    if mapped.iter().flatten().any(|p| p.addr.is_ipv6()) {
        return Err(Error::Zones(
            "resolver.dns64_mapped: IPv4 prefixes only (the A records' addresses)".into(),
        ));
    }
    Ok(shardns_resolver::Dns64Options {
        clients: prefixes(&r.dns64_clients),
        recursive_only: r.dns64_recursive_only,
        mapped,
        break_dnssec: r.dns64_break_dnssec,
        synthall: r.dns64_synthall,
        ignore_aaaa: r.dns64_ignore_aaaa.clone(),
    })
}

/// A system call's result for the secret random seeds (`shardns_sys::seed`), as the
/// server's error.
fn urandom<T>(r: io::Result<T>) -> Result<T, Error> {
    r.map_err(io_error("reading /dev/urandom"))
}
