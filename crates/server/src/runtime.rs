//! runtime -- the life of a server process: start (configuration, zones, roles, sockets,
//! workers, control plane), serve until SIGTERM or SIGINT while the main thread reloads on
//! SIGHUP, then stop the workers and release what they held.
//!
//! ```text
//! run: config → zones::ZoneLibrary::load (and inotify watches) → listen::bind_all (+ xdp::setup)
//!      → Shared → notify thread, secondary thread, control thread, stats HTTP thread
//!      → one Worker thread per core
//!      → signals: SIGHUP → control::reload_now (zones rebuilt, ArcSwap::store)
//!                 SIGUSR1 → reload::publish (transferred zones, ArcSwap::store)
//!                 SIGTERM/SIGINT → shutdown flag, wake and join the workers
//! ```

mod settings;

use crate::extras::{EdnsPolicy, UnixClock};
use crate::recursion::{Recursion, RecursionShared};
use crate::rrl::Rrl;
use crate::stats::WorkerStats;
use crate::worker::{QuicConfig, TlsConfig, Worker, WorkerOptions, WorkerSockets};
use crate::{dnstap, http, listen, xdp};
use crate::{io_error, urandom, Error, Shared};
use arc_swap::ArcSwap;
use settings::{edns_policy, quic_config, reload_extras, tls_config};
use shardns_config::Config;
use shardns_control::{journal, notify, reload as control, secondary, zones, Host, Plane, Setup};
use shardns_sys::{self as sys, seed};
use shardns_sys::{self, EventFd};
use shardns_wire::Name;
use shardns_zone::ZoneSet;
use std::collections::HashSet;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tracing::{debug, error, info, warn};

/// Runs the server until SIGTERM or SIGINT. Zones that fail to load at startup are logged
/// and left out (an error only if every zone fails); a reload, later, keeps a failing
/// zone's previous version.
pub fn run(setup: Setup) -> Result<(), Error> {
    // Watching the directories (inotify) starts before anything is read, so that a reload
    // finds what changed since without looking at every file.
    let mut library = zones::ZoneLibrary::new(true);
    let config_file = setup
        .config_path
        .as_ref()
        .map(|p| library.stamp_config_file(p));
    let config = setup.config()?;
    let zone_list = config
        .server
        .zone_list
        .as_ref()
        .map(|p| library.stamp_config_file(p));
    let specs = zones::specs(&config, setup.default_zone).map_err(Error::Zones)?;
    check_open_file_limit(&config);
    for w in config.warnings() {
        warn!("{w}");
    }

    let mut report = load_zones(
        &mut library,
        &specs,
        config_file.into_iter().chain(zone_list).collect(),
    )?;
    let recursion = crate::recursion::shared(&config, &setup)?;
    // Secondary zones answer SERVFAIL until their thread has a version for them.
    let (secondary, inbox) = match secondary::prepare(&config) {
        Some((role, inbox)) => (Some(role), Some(inbox)),
        None => (None, None),
    };
    // Zones served from files: no catalog may bring them.
    let configured: HashSet<Name> = specs.iter().map(|s| s.name.clone()).collect();
    let mut producer = shardns_control::catalog::Producer::default();
    let produced = producer.changes(&config, shardns_sys::unix_now());
    let set = match &secondary {
        Some(role) => library.apply_outside(role.stand_ins()),
        None => report.set,
    };
    let set = if produced.is_empty() {
        set
    } else {
        library.apply_outside(produced)
    };

    let tls = tls_config(&config)?;
    let quic = quic_config(&config)?;
    let edns = edns_policy(&config, None)?;
    let workers = config.worker_count();
    let mut sockets = listen::bind_all(&config, workers)?;
    // XDP mode: held until the workers have stopped; dropping it detaches the program.
    let xdp_program = attach_xdp(&config, &mut sockets, workers);
    // Without a control socket (it cannot be made) the server still serves; a warning says so.
    let mut control_socket = control::ControlSocket::open(
        config.control_socket_path(),
        config.control_socket_is_default(),
    );
    let http_listener = bind_stats_http(&config)?;

    let (updates, update_rx) = shardns_control::update::Inbox::new();
    let shared = new_shared(&config, workers, set, (inbox, updates), edns, tls, quic)?;
    read_journals(
        &shared,
        &config,
        &library,
        std::mem::take(&mut report.added),
    );
    shared
        .plane
        .stats
        .zones
        .store(library.len() as u64, Relaxed);
    let notifier = notify::Notifier::start(host(&shared), urandom(seed::random_u64())?)
        .map_err(io_error("starting the notify thread"))?;
    announce_zones(&config, &shared, &notifier);

    // Before the secondary thread starts: its first SIGUSR1 may come at once, and without a
    // handler it would end the process.
    let mut signals = install_signals()?;

    // The secondary thread wakes the main thread with SIGUSR1 to serve what it transferred.
    let transferred = start_secondary(secondary, &config, &shared, configured)?;

    // The dnstap log: the writer first, then the workers with their taps.
    let (dnstap_writer, taps) = start_dnstap(&config, &shared, workers)?;
    let handles = spawn_workers(&config, &shared, sockets, recursion.as_ref(), taps)?;

    let listen = config.listen_addrs();
    let log_queries = config.log.queries;
    let (reloads, requests) = std::sync::mpsc::channel();
    // Signed zones are read again, by name, before their signatures expire.
    let resigner = shardns_control::signing::Resigner::start(reloads.clone())
        .map_err(io_error("starting the re-signing thread"))?;
    for (zone, at) in report.resign {
        resigner.schedule(zone, at);
    }
    let parent = start_parent_check(&reloads, &config)?;
    // Zones changed by updates are written back to their files when due.
    let flusher = shardns_control::zonefile::Flusher::start(reloads.clone())
        .map_err(io_error("starting the zone-file thread"))?;
    let mut reloader = control::Reloader {
        setup,
        config,
        library,
        retired: Vec::new(),
        retired_zones: Vec::new(),
        notifier,
        resigner,
        parent,
        producer,
        flusher,
    };
    control_socket
        .start(host(&shared), reloads)
        .map_err(io_error("starting the control thread"))?;
    if let Some(l) = http_listener {
        start_http(l, &shared)?;
    }
    log_ready(
        &reloader.config,
        &shared,
        workers,
        &listen,
        log_queries,
        &control_socket,
    );

    // Serving already: now the slow memory hint for big zones.
    reloader.library.back_with_huge_pages();
    serve_signals(
        &mut signals,
        &mut reloader,
        &shared,
        &requests,
        transferred.as_ref(),
        &update_rx,
    );
    stop(
        &shared,
        handles,
        dnstap_writer,
        xdp_program,
        &mut control_socket,
    );
    info!("stopped");
    Ok(())
}

/// The thread that checks (and pushes) the DS of `config`'s zones at their parents.
fn start_parent_check(
    reloads: &std::sync::mpsc::Sender<shardns_control::request::ReloadRequest>,
    config: &Config,
) -> Result<shardns_control::parent::DsChecker, Error> {
    let parent = shardns_control::parent::DsChecker::start(reloads.clone())
        .map_err(io_error("starting the parent DS check thread"))?;
    parent.configure(config);
    Ok(parent)
}

/// The dnstap log (`[dnstap]`): its writer thread started, and one tap per worker.
fn start_dnstap(
    config: &Config,
    shared: &Arc<Shared>,
    workers: usize,
) -> Result<(Option<dnstap::Writer>, Vec<dnstap::Tap>), Error> {
    let mut dnstap = dnstap::Dnstap::new(&config.dnstap, workers).map_err(|e| Error::Io {
        what: "dnstap".into(),
        source: io::Error::new(io::ErrorKind::InvalidInput, e),
    })?;
    let dnstap_writer = match dnstap.as_mut() {
        Some(d) => Some(
            d.start(Arc::clone(shared))
                .map_err(io_error("starting the dnstap thread"))?,
        ),
        None => None,
    };
    let taps = dnstap.map(|d| d.taps).unwrap_or_default();
    Ok((dnstap_writer, taps))
}

/// The statistics HTTP address (`stats.http`) bound, if configured.
fn bind_stats_http(config: &Config) -> Result<Option<TcpListener>, Error> {
    let http_listener = match config.stats.http {
        Some(addr) => Some(TcpListener::bind(addr).map_err(|source| Error::Socket {
            what: format!("statistics HTTP address {addr}"),
            source,
        })?),
        None => None,
    };
    Ok(http_listener)
}

/// The handlers of SIGHUP, SIGUSR1, SIGTERM and SIGINT, read by [`serve_signals`].
fn install_signals() -> Result<signal_hook::iterator::Signals, Error> {
    let signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGUSR1,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ])
    .map_err(io_error("installing signal handlers"))?;
    Ok(signals)
}

/// The secondary role's thread, if there are secondary zones; the receiver of what it
/// transferred.
fn start_secondary(
    secondary: Option<secondary::Role>,
    config: &Config,
    shared: &Arc<Shared>,
    configured: HashSet<Name>,
) -> Result<Option<Receiver<secondary::Transferred>>, Error> {
    let transferred = match secondary {
        Some(role) => Some(
            role.start(
                config,
                host(shared),
                urandom(seed::random_u64())?,
                configured,
            )
            .map_err(io_error("starting the secondary thread"))?,
        ),
        None => None,
    };
    Ok(transferred)
}

/// The journals as the last run left them (`added`, kept, would pin the first versions).
fn read_journals(
    shared: &Shared,
    config: &Config,
    library: &zones::ZoneLibrary,
    added: Vec<Arc<shardns_zone::Zone>>,
) {
    let file_of = |apex: &Name| library.file_of(apex);
    journal::record_all(&shared.plane.journals, config, file_of, None, &added);
    // Once, after both: what loading (scan buffers, records before the build) and
    // replaying and reading the journals freed (BENCHMARKS "Dynamic update").
    sys::release_free_memory();
}

/// Loads the zones at startup, then records the configuration files read: an error only
/// if every zone failed; each broken one is logged.
fn load_zones(
    library: &mut zones::ZoneLibrary,
    specs: &[zones::ZoneSpec],
    config_files: Vec<(PathBuf, Option<zones::FileStamp>)>,
) -> Result<zones::LoadReport, Error> {
    let started = Instant::now();
    let report = library.load(specs);
    library.config_read(config_files);
    for w in &report.warnings {
        warn!("{w}");
    }
    // Every zone broken: nothing to serve, and most likely a mistake; say so and stop. Some
    // broken among many (a hosting provider's customers' files): serve the rest, as Knot
    // and NSD do, and report each broken one once.
    if report.loaded == 0 {
        crate::zone_failures(&report)?;
    }
    for f in &report.failures {
        error!("zone {} failed to load, not served:\n{}", f.name, f.error);
    }
    info!(
        "loaded {} zones in {:.3} s ({} failed)",
        report.loaded,
        started.elapsed().as_secs_f64(),
        report.failures.len()
    );
    Ok(report)
}

/// The state shared by every thread: the zones, the limits and counters, the wakers.
fn new_shared(
    config: &Config,
    workers: usize,
    set: ZoneSet,
    (inbox, updates): (Option<secondary::Inbox>, shardns_control::update::Inbox),
    edns: EdnsPolicy,
    tls: Option<TlsConfig>,
    quic: Option<QuicConfig>,
) -> Result<Arc<Shared>, Error> {
    let wakers = (0..workers)
        .map(|_| EventFd::new())
        .collect::<io::Result<Vec<_>>>()
        .map_err(io_error("eventfd"))?;
    Ok(Arc::new(Shared {
        plane: Plane::new(config, set, inbox, updates),
        tcp_open: AtomicUsize::new(0),
        tcp_clients: crate::tcp::ClientCounts::new(
            config.limits.tcp_connections_per_client,
            config.limits.tcp_connections,
            urandom(seed::random_u64())?,
        ),
        wakers,
        evictions: (0..workers).map(|_| Default::default()).collect(),
        stats: (0..workers).map(|_| WorkerStats::default()).collect(),
        late: (0..workers).map(|_| Default::default()).collect(),
        edns: ArcSwap::from_pointee(edns),
        unix_clock: UnixClock::new(),
        tls,
        quic,
        recursion: std::sync::OnceLock::new(),
    }))
}

/// The runtime as the control plane's threads hold it.
fn host(shared: &Arc<Shared>) -> Arc<dyn Host> {
    Arc::clone(shared) as Arc<dyn Host>
}

/// Secondaries may have missed versions while we were down: tell them what we have.
fn announce_zones(config: &Config, shared: &Shared, notifier: &notify::Notifier) {
    let notify = config.notify_index();
    if !notify.is_empty() {
        for zone in shared.plane.zones.load().zones() {
            let targets = notify.targets(&zone.apex().to_name());
            if !targets.is_empty() {
                notifier.announce(notify::Job {
                    zone: Arc::clone(zone),
                    targets: targets.to_vec(),
                });
            }
        }
    }
}

/// The addresses listened on, then the line that says the server is ready.
fn log_ready(
    config: &Config,
    shared: &Shared,
    workers: usize,
    listen: &[SocketAddr],
    log_queries: bool,
    control_socket: &control::ControlSocket,
) {
    for a in listen {
        info!("listening on {a} (UDP and TCP)");
    }
    let tls_listen = sockets_tls_addrs(config);
    for a in &tls_listen {
        info!("listening on {a} (DNS over TLS)");
    }
    for a in &config.server.https_listen {
        info!("listening on {a} (DNS over HTTPS)");
    }
    for a in &config.server.quic_listen {
        info!("listening on {a} (DNS over QUIC)");
    }
    info!(
        "shardns ready: {workers} workers, {} zones, {control_socket}{}",
        shared.plane.stats.zones.load(Relaxed),
        if log_queries {
            ", query logging on"
        } else {
            ""
        }
    );
}

/// Serves the signals until SIGTERM or SIGINT: SIGHUP reloads, SIGUSR1 publishes what the
/// secondary thread transferred.
fn serve_signals(
    signals: &mut signal_hook::iterator::Signals,
    reloader: &mut control::Reloader,
    shared: &Shared,
    requests: &Receiver<control::ReloadRequest>,
    transferred: Option<&Receiver<secondary::Transferred>>,
    updates: &Receiver<shardns_control::update::Job>,
) {
    for signal in signals.forever() {
        match signal {
            signal_hook::consts::SIGHUP => {
                debug!("SIGHUP: the queued requests, or a reload");
                control::reload_now(reloader, shared, requests);
                reload_extras(&reloader.config, shared);
            }
            signal_hook::consts::SIGUSR1 => {
                if let Some(rx) = transferred {
                    control::publish(reloader, shared, rx);
                }
                shardns_control::update::process(reloader, shared, updates);
            }
            _ => {
                info!("shutting down");
                break;
            }
        }
    }
}

/// Stops the workers, then the dnstap writer; waits for the signed versions being kept;
/// detaches XDP and removes the control socket.
fn stop(
    shared: &Shared,
    handles: Vec<JoinHandle<()>>,
    dnstap_writer: Option<dnstap::Writer>,
    xdp_program: Option<xdp::XdpProgram>,
    control_socket: &mut control::ControlSocket,
) {
    shared.plane.shutdown.store(true, Relaxed);
    shared.wake_workers();
    for h in handles {
        if h.join().is_err() {
            error!("a worker panicked");
        }
    }
    // The workers' taps are gone: the writer writes what is left and stops.
    if let Some(w) = dnstap_writer {
        w.join();
    }
    if !secondary::keeper::wait(Duration::from_secs(30)) {
        warn!("stopped before a signed version was kept: a restart signs it anew");
    }
    drop(xdp_program);
    control_socket.close();
}

/// The bound DNS-over-TLS addresses as configured (port 0 shows as 0).
fn sockets_tls_addrs(config: &Config) -> Vec<SocketAddr> {
    config.server.tls_listen.clone()
}

/// Warns when the open-file limit cannot hold `limits.tcp_connections` (raised first to
/// the hard limit).
fn check_open_file_limit(config: &Config) {
    match sys::raise_nofile_limit() {
        Ok(n) if (n as usize) < config.limits.tcp_connections + 64 => warn!(
            "the open-file limit ({n}) is below limits.tcp_connections ({}); connections will be refused early",
            config.limits.tcp_connections
        ),
        Ok(_) => {}
        Err(e) => warn!("cannot read the open-file limit: {e}"),
    }
}

/// XDP mode (`server.xdp_interface`): the program attached and one AF_XDP socket handed to
/// each worker; on failure the sockets serve UDP and the log says why.
fn attach_xdp(
    config: &Config,
    sockets: &mut [WorkerSockets],
    workers: usize,
) -> Option<xdp::XdpProgram> {
    let iface = xdp::interface(config)?;
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

/// Starts one worker thread per set of sockets, each with its own resolver engine and
/// rate limiter (own secrets, no sharing).
fn spawn_workers(
    config: &Config,
    shared: &Arc<Shared>,
    sockets: Vec<WorkerSockets>,
    recursion: Option<&Arc<RecursionShared>>,
    taps: Vec<dnstap::Tap>,
) -> Result<Vec<JoinHandle<()>>, Error> {
    if let Some(r) = recursion {
        // For the statistics: the policy zones' counters.
        let _ = shared.recursion.set(Arc::clone(r));
    }
    let mut taps = taps.into_iter();
    let opts = WorkerOptions {
        udp_batch: config.limits.udp_batch,
        tcp_per_worker: config.limits.tcp_connections_per_worker,
        tcp_total: config.limits.tcp_connections,
        tcp_idle_timeout: Duration::from_millis(config.limits.tcp_idle_timeout_ms),
        tcp_read_timeout: Duration::from_millis(config.limits.tcp_read_timeout_ms),
        tcp_max_queries: Some(config.limits.tcp_queries_per_connection)
            .filter(|&n| n != 0)
            .unwrap_or(u32::MAX),
        udp_max_response: config.limits.udp_max_response,
        log_queries: config.log.queries,
        tls_handshake_timeout: Duration::from_millis(config.limits.tls_handshake_timeout_ms),
        https_streams: config.limits.https_streams_per_connection,
        https_resets_per_second: config.limits.https_resets_per_second,
        proxy_from: config.server.proxy_protocol_from.clone(),
    };
    if config.rrl.enabled {
        let r = &config.rrl;
        info!(
            "response rate limiting on: {} per second, window {} s, slip {}, prefixes /{} and /{}",
            r.rate, r.window, r.slip, r.ipv4_prefix, r.ipv6_prefix
        );
    }
    let mut handles = Vec::with_capacity(sockets.len());
    for (id, socks) in sockets.into_iter().enumerate() {
        let rec = match recursion {
            Some(r) => Some(Recursion::new(
                Arc::clone(r),
                urandom(seed::random())?,
                Instant::now(),
            )),
            None => None,
        };
        let rrl = if config.rrl.enabled {
            Some(Rrl::new(
                &config.rrl,
                urandom(seed::random_u64())?,
                Instant::now(),
            ))
        } else {
            None
        };
        let w = Worker::new(
            id,
            Arc::clone(shared),
            socks,
            opts.clone(),
            rec,
            rrl,
            taps.next(),
        )
        .map_err(io_error("setting up a worker"))?;
        let h = std::thread::Builder::new()
            .name(format!("shardns-worker-{id}"))
            .spawn(move || w.run())
            .map_err(io_error("starting a worker thread"))?;
        handles.push(h);
    }
    Ok(handles)
}

/// The statistics over HTTP (`stats.http`), on a thread of its own.
fn start_http(listener: TcpListener, shared: &Arc<Shared>) -> Result<(), Error> {
    let addr = listener.local_addr().ok();
    let shared = Arc::clone(shared);
    std::thread::Builder::new()
        .name("shardns-stats-http".into())
        .spawn(move || http::serve(listener, shared))
        .map_err(io_error("starting the statistics thread"))?;
    if let Some(a) = addr {
        info!("statistics at http://{a}/metrics");
    }
    Ok(())
}
