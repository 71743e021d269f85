//! The shardns runtime: share-nothing workers serving DNS over UDP and TCP.
//!
//! [`run`] loads the zones, binds one SO_REUSEPORT UDP socket and one TCP listener per
//! listen address *per worker*, and starts the workers. Each worker (`worker`) is a named
//! unto itself: it reads its own sockets in an epoll loop, answers with
//! `shardns_zone::respond` into its own preallocated buffers, writes the responses, and
//! counts into its own statistics. Workers share only the zone snapshot (an `Arc` behind
//! an `ArcSwap`, re-read with one atomic load per loop iteration, never locked) and the
//! shutdown flag.
//!
//! ```text
//!            SO_REUSEPORT spreads clients
//!   UDP/TCP ───────────┬──────────────────┐
//!                 worker 0   ...     worker N-1     recvmmsg → respond → sendmmsg
//!                     └── Arc<ZoneSet> ──┘          (no queue, no lock, no clock per query)
//!   main thread: SIGHUP / control socket (path SIGHUP) → reload → ArcSwap::store(new ZoneSet)
//!                → new serials → notify thread → NOTIFY to secondaries (UDP, retried)
//!   stats: summed over the workers' counters when read (control socket, HTTP)
//! ```
//!
//! Zone transfers (`xfr`): a worker streams an allowed AXFR/IXFR on its TCP connection from
//! the zone version the transfer started with, a few messages per loop turn; `notify` tells
//! the secondaries in `notify` when a serial changes.
//!
//! With `[resolver] recursion = true` each worker also drives its own resolver engine
//! (`recursion`): queries our zones do not hold are answered from the shared, sharded cache
//! or resolved with the worker's own upstream sockets, registered in the same epoll loop.
//! With `[rrl] enabled = true` each worker passes its UDP responses through its own
//! response rate limiter (`rrl`), a fixed table with no lock.
//!
//! With `server.xdp_interface` set, an XDP program steers the interface's UDP queries to
//! AF_XDP sockets, one per receive queue, each owned by the worker of that index (`xdp`);
//! they are answered by the same code as socket queries.
//!
//! `sys` and `xdp` hold the only `unsafe` code (epoll, eventfd, recvmmsg/sendmmsg, accept4;
//! the bpf() system call, the AF_XDP socket and its shared rings).
//! Never on a worker: locks, allocation per query, clock system calls per query, logging
//! unless query logging is switched on.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod control;
mod dispatch;
mod http;
pub mod logging;
mod notify;
mod recursion;
mod rrl;
mod stats;
mod sys;
mod tcp;
mod transfers;
mod worker;
pub mod xdp;
mod zones;

pub use config::{
    AclEntry, Config, ConfigError, ForwardZone, Limits, Overrides, ResolverConfig, RrlConfig,
    ZoneConfig,
};
pub use shardns_wire::tsig::Key as TsigKey;
pub use zones::EmbeddedZone;

use arc_swap::ArcSwap;
use shardns_zone::ZoneSet;
use socket2::{Domain, Protocol, Socket, Type};
use stats::{ControlStats, WorkerStats};
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use sys::EventFd;
use tracing::{error, info, warn};
use worker::{Worker, WorkerOptions, WorkerSockets};

/// Where the configuration comes from: an optional file, command-line values on top, and
/// the zone to serve when none is configured. Re-read on every reload.
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
        Ok(config)
    }
}

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

/// State shared by the workers and the control plane.
pub(crate) struct Shared {
    /// The zone snapshot; workers re-read it once per loop iteration.
    pub(crate) zones: ArcSwap<ZoneSet>,
    /// Who may transfer which zone; replaced with the zones on reload, read only by
    /// transfer queries.
    pub(crate) transfer_acl: ArcSwap<transfers::TransferAcl>,
    /// Set once, to stop the workers.
    pub(crate) shutdown: AtomicBool,
    /// Open TCP connections over all workers (changed on accept and close only).
    pub(crate) tcp_open: AtomicUsize,
    /// Open TCP connections per client address (changed on accept and close only).
    pub(crate) tcp_clients: tcp::ClientCounts,
    /// One waker per worker.
    pub(crate) wakers: Vec<EventFd>,
    /// One counter block per worker, each written only by its worker.
    pub(crate) stats: Vec<WorkerStats>,
    pub(crate) control: ControlStats,
    pub(crate) started: Instant,
}

impl Shared {
    pub(crate) fn wake_workers(&self) {
        for w in &self.wakers {
            w.wake();
        }
    }

    pub(crate) fn worker_stats(&self) -> Vec<&WorkerStats> {
        self.stats.iter().collect()
    }
}

/// Loads the configured zones and reports every problem; serves nothing. For
/// `shardns check`. Returns the number of zones and the warnings.
pub fn check(setup: &Setup) -> Result<(usize, Vec<String>), Error> {
    let config = setup.config()?;
    if config.resolver.recursion {
        resolver_config(&config, setup)?;
    }
    let specs = zones::specs(&config, setup.default_zone).map_err(Error::Zones)?;
    let mut library = zones::ZoneLibrary::default();
    let report = library.load(&specs);
    zone_failures(&report)?;
    Ok((
        report.loaded,
        report.warnings.iter().map(ToString::to_string).collect(),
    ))
}

fn zone_failures(report: &zones::LoadReport) -> Result<(), Error> {
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

/// Runs the server until SIGTERM or SIGINT. Zones that fail to load at startup are an
/// error (a reload, later, keeps their previous version instead).
pub fn run(setup: Setup) -> Result<(), Error> {
    let config = setup.config()?;
    let specs = zones::specs(&config, setup.default_zone).map_err(Error::Zones)?;

    match sys::raise_nofile_limit() {
        Ok(n) if (n as usize) < config.limits.tcp_connections + 64 => warn!(
            "the open-file limit ({n}) is below limits.tcp_connections ({}); connections will be refused early",
            config.limits.tcp_connections
        ),
        Ok(_) => {}
        Err(e) => warn!("cannot read the open-file limit: {e}"),
    }

    let started = Instant::now();
    let mut library = zones::ZoneLibrary::default();
    let report = library.load(&specs);
    for w in &report.warnings {
        warn!("{w}");
    }
    zone_failures(&report)?;
    info!(
        "loaded {} zones in {:.3} s",
        report.loaded,
        started.elapsed().as_secs_f64()
    );

    let recursion = if config.resolver.recursion {
        let rc = resolver_config(&config, &setup)?;
        info!(
            "recursion on: {} root servers, {} forward zones, {} ACL entries",
            rc.hints.servers.len(),
            rc.forward_zones.len(),
            config.resolver.allow.len()
        );
        Some(Arc::new(recursion::RecursionShared {
            resolver: Arc::new(shardns_resolver::Resolver::new(rc)),
            allow: config.resolver.allow.clone(),
            max_pending: config.resolver.max_pending,
            udp_max: config.limits.udp_max_response,
        }))
    } else {
        None
    };

    let workers = config.worker_count();
    let mut sockets = bind_all(&config, workers)?;
    // XDP mode: held until the workers have stopped; dropping it detaches the program.
    let xdp_program = match &config.server.xdp_interface {
        Some(iface) => {
            let endpoints: Vec<SocketAddr> = sockets[0]
                .udp
                .iter()
                .filter_map(|s| s.local_addr().ok())
                .collect();
            match xdp::setup(iface, &endpoints, workers) {
                Ok((prog, xsks)) => {
                    info!(
                        "XDP on {iface}: UDP queries on {} receive queue(s) read with AF_XDP (generic mode, copy)",
                        xsks.len()
                    );
                    for (socks, xsk) in sockets.iter_mut().zip(xsks) {
                        socks.xsk = Some(xsk);
                    }
                    Some(prog)
                }
                Err(e) => {
                    error!("XDP on {iface} is off, UDP is served by sockets: {e}");
                    None
                }
            }
        }
        None => None,
    };
    // Without a control socket (it cannot be made) the server still serves; a warning says so.
    let mut control_socket = control::ControlSocket::open(config.control_socket_path());
    let http_listener = match config.stats.http {
        Some(addr) => Some(TcpListener::bind(addr).map_err(|source| Error::Socket {
            what: format!("statistics HTTP address {addr}"),
            source,
        })?),
        None => None,
    };

    let wakers = (0..workers)
        .map(|_| EventFd::new())
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_error("eventfd"))?;
    let shared = Arc::new(Shared {
        zones: ArcSwap::from_pointee(report.set),
        transfer_acl: ArcSwap::from_pointee(transfers::TransferAcl::new(&config)),
        shutdown: AtomicBool::new(false),
        tcp_open: AtomicUsize::new(0),
        tcp_clients: tcp::ClientCounts::new(
            config.limits.tcp_connections_per_client,
            config.limits.tcp_connections,
            seed_u64(&random_seed().map_err(io_error("reading /dev/urandom"))?),
        ),
        wakers,
        stats: (0..workers).map(|_| WorkerStats::default()).collect(),
        control: ControlStats::default(),
        started: Instant::now(),
    });
    shared.control.zones.store(library.len() as u64, Relaxed);
    let notifier = notify::Notifier::start(
        Arc::clone(&shared),
        seed_u64(&random_seed().map_err(io_error("reading /dev/urandom"))?),
    )
    .map_err(io_error("starting the notify thread"))?;
    // Secondaries may have missed versions while we were down: tell them what we have.
    for zone in shared.zones.load().zones() {
        notifier.announce(notify::Job {
            zone: Arc::clone(zone),
            targets: config.notify_targets(&zone.apex().to_name()).to_vec(),
        });
    }

    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ])
    .map_err(io_error("installing signal handlers"))?;

    let opts = WorkerOptions {
        udp_batch: config.limits.udp_batch,
        tcp_per_worker: config.limits.tcp_connections_per_worker,
        tcp_total: config.limits.tcp_connections,
        tcp_idle_timeout: Duration::from_millis(config.limits.tcp_idle_timeout_ms),
        tcp_read_timeout: Duration::from_millis(config.limits.tcp_read_timeout_ms),
        tcp_max_queries: match config.limits.tcp_queries_per_connection {
            0 => u32::MAX,
            n => n,
        },
        udp_max_response: config.limits.udp_max_response,
        log_queries: config.log.queries,
    };
    if config.rrl.enabled {
        let r = &config.rrl;
        info!(
            "response rate limiting on: {} per second, window {} s, slip {}, prefixes /{} and /{}",
            r.rate, r.window, r.slip, r.ipv4_prefix, r.ipv6_prefix
        );
    }
    let mut handles = Vec::with_capacity(workers);
    for (id, socks) in sockets.into_iter().enumerate() {
        let rec = match &recursion {
            Some(r) => {
                let seed = random_seed().map_err(io_error("reading /dev/urandom"))?;
                Some(recursion::Recursion::new(
                    Arc::clone(r),
                    seed,
                    Instant::now(),
                ))
            }
            None => None,
        };
        let rrl = if config.rrl.enabled {
            let seed = random_seed().map_err(io_error("reading /dev/urandom"))?;
            Some(rrl::Rrl::new(&config.rrl, seed_u64(&seed), Instant::now()))
        } else {
            None
        };
        let w = Worker::new(id, Arc::clone(&shared), socks, opts.clone(), rec, rrl)
            .map_err(io_error("setting up a worker"))?;
        let h = std::thread::Builder::new()
            .name(format!("shardns-worker-{id}"))
            .spawn(move || w.run())
            .map_err(io_error("starting a worker thread"))?;
        handles.push(h);
    }

    let listen = config.listen_addrs();
    let log_queries = config.log.queries;
    let mut reloader = control::Reloader {
        setup,
        config,
        library,
        retired: Vec::new(),
        retired_zones: Vec::new(),
        notifier,
    };
    let (reloads, requests) = std::sync::mpsc::channel();
    control_socket
        .start(Arc::clone(&shared), reloads)
        .map_err(io_error("starting the control thread"))?;
    if let Some(l) = http_listener {
        let addr = l.local_addr().ok();
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("shardns-stats-http".into())
            .spawn(move || http::serve(l, shared))
            .map_err(io_error("starting the statistics thread"))?;
        if let Some(a) = addr {
            info!("statistics at http://{a}/metrics");
        }
    }
    for a in &listen {
        info!("listening on {a} (UDP and TCP)");
    }
    info!(
        "shardns ready: {workers} workers, {} zones, {control_socket}{}",
        shared.control.zones.load(Relaxed),
        if log_queries {
            ", query logging on"
        } else {
            ""
        }
    );

    for signal in signals.forever() {
        match signal {
            signal_hook::consts::SIGHUP => {
                info!("SIGHUP: reloading");
                control::reload_now(&mut reloader, &shared, &requests);
            }
            _ => {
                info!("shutting down");
                break;
            }
        }
    }
    shared.shutdown.store(true, Relaxed);
    shared.wake_workers();
    for h in handles {
        if h.join().is_err() {
            error!("a worker panicked");
        }
    }
    drop(xdp_program);
    control_socket.close();
    info!("stopped");
    Ok(())
}

/// The resolver's configuration from `[resolver]`: hints from the configured file, else
/// the setup's bundled text, else the resolver crate's copy of the IANA hints.
fn resolver_config(config: &Config, setup: &Setup) -> Result<shardns_resolver::Config, Error> {
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
    rc.upstream_port = r.upstream_port;
    rc.max_depth = r.max_depth;
    rc.max_queries = r.max_upstream_queries;
    rc.max_referrals = r.max_referrals;
    rc.max_chain = r.max_cname_chain;
    rc.max_resolution_ms = r.resolution_timeout_ms;
    rc.server_hold_after = r.server_hold_after;
    rc.server_hold_ms = r.server_hold_ms;
    rc.server_hold_max_ms = r.server_hold_max_ms.max(r.server_hold_ms);
    Ok(rc)
}

/// 32 secret random bytes for a worker's resolver engine (query IDs, source ports).
fn random_seed() -> io::Result<[u8; 32]> {
    use std::io::Read;
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut seed)?;
    Ok(seed)
}

/// The first eight bytes of a seed, as a number.
fn seed_u64(seed: &[u8; 32]) -> u64 {
    u64::from_le_bytes(seed[..8].try_into().expect("eight bytes"))
}

/// A hash of a few words under a secret `seed`, so that clients cannot aim at a slot of a
/// table indexed by it (not cryptographic: a multiply-rotate per word, then the murmur3
/// finaliser, so every output bit depends on every input bit).
#[inline]
pub(crate) fn keyed_hash(seed: u64, words: &[u64]) -> u64 {
    let mut h = seed;
    for &v in words {
        h = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Binds every worker's sockets. Binding happens here, before any worker starts, so a
/// busy address is reported at once; each socket then belongs to one worker. A default
/// IPv6 address the host does not have is skipped with a warning.
fn bind_all(config: &Config, workers: usize) -> Result<Vec<WorkerSockets>, Error> {
    let defaults = config.server.listen.is_empty();
    let mut per_worker: Vec<WorkerSockets> =
        (0..workers).map(|_| WorkerSockets::default()).collect();
    let mut bound_any = false;
    for mut addr in config.listen_addrs() {
        for (i, socks) in per_worker.iter_mut().enumerate() {
            let udp = match bind_udp(addr, config.limits.udp_receive_buffer) {
                Ok(s) => s,
                Err(e)
                    if i == 0
                        && defaults
                        && addr.is_ipv6()
                        && matches!(
                            e.raw_os_error(),
                            Some(libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT)
                        ) =>
                {
                    warn!("skipping {addr}: {e}");
                    break;
                }
                Err(source) => {
                    return Err(Error::Socket {
                        what: format!("UDP {addr}"),
                        source,
                    })
                }
            };
            if addr.port() == 0 {
                // Every worker (and TCP) must share the port the kernel picked.
                addr = udp
                    .local_addr()
                    .map_err(io_error("reading a socket address"))?;
            }
            let tcp = bind_tcp(addr).map_err(|source| Error::Socket {
                what: format!("TCP {addr}"),
                source,
            })?;
            socks.udp.push(udp);
            socks.tcp.push(tcp);
            bound_any = true;
        }
    }
    if !bound_any {
        return Err(Error::Socket {
            what: "listen addresses".into(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "none could be bound"),
        });
    }
    Ok(per_worker)
}

fn new_socket(addr: SocketAddr, ty: Type, protocol: Protocol) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), ty, Some(protocol))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

fn bind_udp(addr: SocketAddr, receive_buffer: usize) -> io::Result<UdpSocket> {
    let s = new_socket(addr, Type::DGRAM, Protocol::UDP)?;
    if receive_buffer > 0 {
        set_receive_buffer(&s, receive_buffer)?;
    }
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Sets SO_RCVBUF, past `net.core.rmem_max` when the process may (SO_RCVBUFFORCE needs
/// CAP_NET_ADMIN), as BIND and Unbound do: the buffer is what absorbs a burst or a pause of
/// the worker (a hypervisor stealing its core), and the sysctl's common default holds only
/// ~250 small queries. Unprivileged, the kernel caps it at the sysctl; said once in the log.
fn set_receive_buffer(s: &Socket, bytes: usize) -> io::Result<()> {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let forced = sys::force_receive_buffer(s, bytes);
    if forced {
        return Ok(());
    }
    s.set_recv_buffer_size(bytes)?;
    // The kernel reports twice the size it keeps for data (its bookkeeping overhead).
    let got = s.recv_buffer_size()? / 2;
    if got < bytes && !WARNED.swap(true, Relaxed) {
        warn!(
            "UDP receive buffer {got} bytes, not the {bytes} asked for \
             (limits.udp_receive_buffer): raise net.core.rmem_max or run with CAP_NET_ADMIN"
        );
    }
    Ok(())
}

fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = new_socket(addr, Type::STREAM, Protocol::TCP)?;
    s.set_reuse_address(true)?;
    // Accepted connections inherit this: responses leave without waiting for ACKs.
    s.set_nodelay(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rmem_max() -> usize {
        std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    #[test]
    fn receive_buffer_goes_past_rmem_max_when_permitted() {
        let want = rmem_max().max(1 << 20) * 2;
        let udp = bind_udp("127.0.0.1:0".parse().unwrap(), want).unwrap();
        let got = Socket::from(udp).recv_buffer_size().unwrap() / 2;
        // SO_RCVBUFFORCE works with CAP_NET_ADMIN (root in CI); without it the kernel
        // caps the size at the sysctl, and the server still binds.
        if sys::force_receive_buffer(&UdpSocket::bind("127.0.0.1:0").unwrap(), 4096) {
            assert_eq!(got, want);
        } else {
            assert_eq!(got, rmem_max());
        }
    }
}
