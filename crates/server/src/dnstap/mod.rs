//! dnstap -- a log of the queries and responses in dnstap's format (`[dnstap]`, off by
//! default): protobuf messages ([`proto`]) in Frame Streams ([`fstrm`]) to a Unix socket a
//! reader listens on, or to a file.
//!
//! ```text
//!  worker 0: Dispatcher::handle ─▶ Tap::record: the frame encoded into the worker's batch
//!            buffer (no allocation, no lock) ─▶ full, or the loop turn ends: Tap::flush ─┐
//!  worker 1: ...                                                                        ├─▶ one bounded
//!                                                                                       │   channel
//!  shardns-dnstap thread: writes each batch (blocking, off the workers), gives the      ◀┘
//!  buffer back to its worker through the worker's own return channel
//! ```
//!
//! Share-nothing: a worker owns [`BUFFERS`] buffers of [`BUFFER_SIZE`] octets, made at
//! start; one fills while the writer holds the others. A worker with no free buffer (the
//! writer, or the reader behind the socket, is behind) drops the frame and counts it
//! (`shardns_dnstap_frames_total{result="dropped"}`): a worker never waits for the log. The
//! channels are std's bounded `sync_channel` (a lock-free array queue) used with
//! `try_send`/`try_recv` only on the worker's side. Off, the log costs one branch per query.
//!
//! What is logged: each query (AUTH_QUERY, with the client's address and port, the
//! transport and the loop turn's time), each response (AUTH_RESPONSE, with the query's time
//! and the response's); CLIENT_QUERY and CLIENT_RESPONSE for the queries the resolver role
//! takes, its later answers (a cache miss) included. A response policy zone's hit goes
//! with the response it changed: `Message.policy` (type "RPZ", the action, what matched,
//! the query name or client address that did) and the policy zone's name in
//! `Dnstap.extra` ([`PolicyHit`]). Not logged (yet): the messages of an outgoing zone
//! transfer after its query, the resolver's own upstream queries.

mod fstrm;
mod proto;

pub(crate) use proto::{
    MATCH_CLIENT_IP, MATCH_NS_IP, MATCH_NS_NAME, MATCH_QNAME, MATCH_RESPONSE_IP, POLICY_DROP,
    POLICY_LOCAL_DATA, POLICY_NODATA, POLICY_NXDOMAIN, POLICY_PASS, POLICY_TRUNCATE,
};

/// A response policy zone's hit, kept with its query until the response is logged (no
/// allocation: the zone is shared).
#[derive(Debug, Clone)]
pub(crate) struct PolicyHit {
    /// The policy zone.
    pub(crate) zone: Arc<shardns_resolver::PolicyZone>,
    /// A `POLICY_*` action: what was done (PASS for a disabled zone's hit).
    pub(crate) action: u8,
    /// A `MATCH_*` value: the query name (or a CNAME target's), the client's address, an
    /// answer's address, a name server's name or address.
    pub(crate) matched: u8,
    /// The name that matched is the query's (not a CNAME target's, which is not kept).
    pub(crate) on_query_name: bool,
}

use crate::origin::{Origin, Via};
use crate::stats::{WorkerStats, DNSTAP_DROPPED, DNSTAP_SENT};
use crate::Shared;
use shardns_config::DnstapConfig;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tracing::{info, warn};

/// Buffers per worker.
pub(crate) const BUFFERS: usize = 4;
/// Octets per buffer: room for a frame with the largest message (65,535 octets) and then
/// some.
pub(crate) const BUFFER_SIZE: usize = 128 * 1024;
/// Time between attempts to reach the reader's socket.
const RECONNECT: Duration = Duration::from_secs(1);
/// How long a write to the reader may block the writer thread before the reader is given
/// up on (and reconnected).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A batch of frames for the writer: worker, frame count, the octets.
type Batch = (usize, u32, Vec<u8>);

/// The wall clock from a loop turn's `Instant`, without a system call per query.
#[derive(Debug, Clone, Copy)]
struct WallClock {
    base: Instant,
    base_unix: Duration,
}

impl WallClock {
    fn new() -> Self {
        Self {
            base: Instant::now(),
            base_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }

    fn at(&self, now: Instant) -> (u64, u32) {
        let t = self.base_unix + now.saturating_duration_since(self.base);
        (t.as_secs(), t.subsec_nanos())
    }
}

/// One worker's end of the log.
pub(crate) struct Tap {
    worker: usize,
    to_writer: SyncSender<Batch>,
    free: Receiver<Vec<u8>>,
    /// The buffer being filled (capacity 0: none).
    current: Vec<u8>,
    frames: u32,
    queries: bool,
    responses: bool,
    identity: Arc<[u8]>,
    version: Arc<[u8]>,
    clock: WallClock,
}

impl Origin {
    /// dnstap's `SocketProtocol` and `SocketFamily` of the transport (AF_XDP carries UDP).
    fn dnstap(&self) -> (u8, u8) {
        let protocol = match self.via {
            Via::Udp { .. } | Via::UdpProxied { .. } | Via::Xdp { .. } => proto::UDP,
            Via::Tcp { .. } => proto::TCP,
            Via::Tls { .. } => proto::DOT,
            Via::Quic { .. } => proto::DOQ,
            Via::Https { .. } => proto::DOH,
        };
        // The client's family (a proxied one may differ from the socket's).
        let v6 = self.peer.map_or(self.v6, |p| p.is_ipv6());
        let family = if v6 { proto::INET6 } else { proto::INET };
        (protocol, family)
    }
}

/// A policy zone's name in presentation form, written on the stack.
struct NameText {
    buf: [u8; 1024],
    len: usize,
}

impl Default for NameText {
    fn default() -> Self {
        Self {
            buf: [0; 1024],
            len: 0,
        }
    }
}

impl NameText {
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl std::fmt::Write for NameText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let room = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Tap {
    /// Logs a query (if `queries` is on): AUTH_QUERY, or CLIENT_QUERY if the resolver role
    /// took it (`client`).
    pub(crate) fn query(
        &mut self,
        bytes: &[u8],
        origin: Origin,
        now: Instant,
        stats: &WorkerStats,
        client: bool,
    ) {
        if !self.queries {
            return;
        }
        let (protocol, family) = origin.dnstap();
        let event = proto::Event {
            kind: if client {
                proto::CLIENT_QUERY
            } else {
                proto::AUTH_QUERY
            },
            family,
            protocol,
            peer: origin.peer,
            query_time: self.clock.at(now),
            query: Some(bytes),
            response_time: None,
            response: None,
            policy: None,
        };
        self.record(&event, stats);
    }

    /// Logs a response about to be sent (if `responses` is on): AUTH_RESPONSE, or
    /// CLIENT_RESPONSE from the resolver role (`client`; also its later answers), with the
    /// response policy that made it, if one did (`policy`: the hit and the query name in
    /// wire form).
    pub(crate) fn response(
        &mut self,
        response: &[u8],
        origin: Origin,
        now: Instant,
        stats: &WorkerStats,
        client: bool,
        policy: Option<(&PolicyHit, Option<&[u8]>)>,
    ) {
        if !self.responses {
            return;
        }
        let (protocol, family) = origin.dnstap();
        let t = self.clock.at(now);
        let mut octets = [0u8; 16];
        let mut zone = NameText::default();
        let policy = policy.map(|(hit, qname)| {
            // Presentation form, on the stack (a name too long for it is cut).
            let _ = write!(zone, "{}", hit.zone.name());
            let value = match (hit.matched, origin.peer.map(|p| p.ip())) {
                (MATCH_QNAME, _) if hit.on_query_name => qname,
                (MATCH_CLIENT_IP, Some(IpAddr::V4(a))) => {
                    octets[..4].copy_from_slice(&a.octets());
                    Some(&octets[..4])
                }
                (MATCH_CLIENT_IP, Some(IpAddr::V6(a))) => {
                    octets.copy_from_slice(&a.octets());
                    Some(&octets[..])
                }
                // Which answer address, target or name server matched is not kept.
                _ => None,
            };
            proto::PolicyTap {
                action: hit.action,
                matched: hit.matched,
                value,
                zone: zone.as_bytes(),
            }
        });
        let event = proto::Event {
            kind: if client {
                proto::CLIENT_RESPONSE
            } else {
                proto::AUTH_RESPONSE
            },
            family,
            protocol,
            peer: origin.peer,
            query_time: t,
            query: None,
            response_time: Some(t),
            response: Some(response),
            policy,
        };
        self.record(&event, stats);
    }

    fn record(&mut self, event: &proto::Event<'_>, stats: &WorkerStats) {
        let need = event.frame_len(&self.identity, &self.version);
        if self.current.capacity() - self.current.len() < need {
            self.flush(stats);
            if self.current.capacity() == 0 {
                match self.free.try_recv() {
                    Ok(b) => self.current = b,
                    Err(_) => {
                        stats.dnstap[DNSTAP_DROPPED].add(1);
                        return;
                    }
                }
            }
            if self.current.capacity() < need {
                stats.dnstap[DNSTAP_DROPPED].add(1);
                return;
            }
        }
        event.write_frame(&self.identity, &self.version, &mut self.current);
        self.frames += 1;
    }

    /// Hands the frames buffered so far to the writer (at the end of every loop turn).
    pub(crate) fn flush(&mut self, stats: &WorkerStats) {
        if self.current.is_empty() {
            return;
        }
        let buf = std::mem::take(&mut self.current);
        let frames = std::mem::take(&mut self.frames);
        match self.to_writer.try_send((self.worker, frames, buf)) {
            Ok(()) => stats.dnstap[DNSTAP_SENT].add(frames.into()),
            Err(TrySendError::Full((_, _, mut b)) | TrySendError::Disconnected((_, _, mut b))) => {
                stats.dnstap[DNSTAP_DROPPED].add(frames.into());
                b.clear();
                self.current = b;
            }
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        if !self.current.is_empty() {
            let buf = std::mem::take(&mut self.current);
            let _ = self.to_writer.try_send((self.worker, self.frames, buf));
        }
    }
}

/// Where the writer sends the frames.
#[derive(Debug, Clone)]
enum Target {
    Socket(PathBuf),
    File(PathBuf),
}

/// The writer thread, and the taps for the workers.
pub(crate) struct Dnstap {
    pub(crate) taps: Vec<Tap>,
    writer: Option<WriterEnds>,
}

/// What the writer thread takes: the batches, a way back to each worker, the target.
struct WriterEnds {
    batches: Receiver<Batch>,
    returns: Vec<SyncSender<Vec<u8>>>,
    target: Target,
}

/// The writer thread; joined after the workers (it ends when their taps are gone).
pub(crate) struct Writer(JoinHandle<()>);

impl Writer {
    pub(crate) fn join(self) {
        if self.0.join().is_err() {
            warn!("the dnstap writer panicked");
        }
    }
}

impl Dnstap {
    /// The taps and the writer's ends for `workers` workers; `None` when `[dnstap]` is off.
    /// The file is created now (an error if it cannot be); the socket is reached by the
    /// writer, again and again until a reader listens.
    pub(crate) fn new(config: &DnstapConfig, workers: usize) -> Result<Option<Self>, String> {
        let target = match (&config.socket, &config.file) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => {
                return Err("dnstap: socket and file are both set; choose one".into())
            }
            (Some(s), None) => Target::Socket(s.clone()),
            (None, Some(f)) => Target::File(f.clone()),
        };
        if let Target::File(f) = &target {
            File::create(f).map_err(|e| format!("dnstap file {}: {e}", f.display()))?;
        }
        let identity: Arc<[u8]> = match &config.identity {
            Some(i) => i.as_bytes().into(),
            None => host_name().into_bytes().into(),
        };
        let version: Arc<[u8]> = format!("shardns {}", env!("CARGO_PKG_VERSION"))
            .into_bytes()
            .into();
        let (to_writer, from_workers) = mpsc::sync_channel(workers * BUFFERS);
        let clock = WallClock::new();
        let mut returns = Vec::with_capacity(workers);
        let mut taps = Vec::with_capacity(workers);
        for worker in 0..workers {
            let (give, free) = mpsc::sync_channel(BUFFERS);
            for _ in 0..BUFFERS {
                let _ = give.try_send(Vec::with_capacity(BUFFER_SIZE));
            }
            returns.push(give);
            taps.push(Tap {
                worker,
                to_writer: to_writer.clone(),
                free,
                current: Vec::new(),
                frames: 0,
                queries: config.queries,
                responses: config.responses,
                identity: Arc::clone(&identity),
                version: Arc::clone(&version),
                clock,
            });
        }
        Ok(Some(Self {
            taps,
            writer: Some(WriterEnds {
                batches: from_workers,
                returns,
                target,
            }),
        }))
    }

    /// Starts the writer thread.
    pub(crate) fn start(&mut self, shared: Arc<Shared>) -> io::Result<Writer> {
        let WriterEnds {
            batches,
            returns,
            target,
        } = self
            .writer
            .take()
            .ok_or_else(|| io::Error::other("dnstap writer already started"))?;
        let h = std::thread::Builder::new()
            .name("shardns-dnstap".into())
            .spawn(move || write_loop(&batches, &returns, &target, &shared))?;
        Ok(Writer(h))
    }
}

/// The host name, for the identity (`shardns` if it cannot be read).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "shardns".into())
}

/// The writer's connection to its reader or file.
enum Output {
    Socket(UnixStream),
    File(File),
}

impl Output {
    fn open(target: &Target) -> io::Result<Self> {
        match target {
            Target::File(path) => {
                let mut f = File::create(path)?;
                f.write_all(&fstrm::control(fstrm::START, true))?;
                Ok(Self::File(f))
            }
            Target::Socket(path) => {
                let mut s = UnixStream::connect(path)?;
                s.set_read_timeout(Some(WRITE_TIMEOUT))?;
                s.set_write_timeout(Some(WRITE_TIMEOUT))?;
                fstrm::open_bidirectional(&mut s)?;
                Ok(Self::Socket(s))
            }
        }
    }

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Self::Socket(s) => s.write_all(data),
            Self::File(f) => f.write_all(data),
        }
    }

    fn close(self) -> io::Result<()> {
        match self {
            Self::Socket(mut s) => fstrm::close_bidirectional(&mut s),
            Self::File(mut f) => {
                f.write_all(&fstrm::control(fstrm::STOP, false))?;
                f.sync_data()
            }
        }
    }
}

/// The writer thread: batches in, written in order, buffers back to their workers; ends
/// when every tap is gone (the workers stopped).
fn write_loop(
    rx: &Receiver<Batch>,
    returns: &[SyncSender<Vec<u8>>],
    target: &Target,
    shared: &Shared,
) {
    let mut out: Option<Output> = None;
    let mut next_try = Instant::now();
    let mut told = false;
    // A file is opened once: after a failed write its last frame may be cut, so nothing
    // more is written to it.
    let mut file_opened = false;
    let mut connect = |out: &mut Option<Output>| {
        if out.is_some() || Instant::now() < next_try || file_opened {
            return;
        }
        file_opened = matches!(target, Target::File(_));
        match Output::open(target) {
            Ok(o) => {
                info!("dnstap: writing to {target:?}");
                told = false;
                *out = Some(o);
            }
            Err(e) => {
                if !told {
                    warn!("dnstap: {target:?}: {e} (trying again every second)");
                    told = true;
                }
                next_try = Instant::now() + RECONNECT;
            }
        }
    };
    connect(&mut out);
    loop {
        match rx.recv_timeout(RECONNECT) {
            Ok((worker, frames, mut buf)) => {
                connect(&mut out);
                let written = match out.as_mut() {
                    Some(o) => match o.write_all(&buf) {
                        Ok(()) => true,
                        Err(e) => {
                            warn!("dnstap: writing to {target:?}: {e}");
                            out = None;
                            false
                        }
                    },
                    None => false,
                };
                if !written {
                    shared
                        .plane
                        .stats
                        .dnstap_lost
                        .fetch_add(frames.into(), Relaxed);
                }
                buf.clear();
                if let Some(r) = returns.get(worker) {
                    let _ = r.try_send(buf);
                }
            }
            Err(RecvTimeoutError::Timeout) => connect(&mut out),
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    if let Some(o) = out {
        if let Err(e) = o.close() {
            warn!("dnstap: closing {target:?}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_map_to_dnstap_protocols() {
        let o = |via, v6| Origin::new(via, v6, None).dnstap();
        let conn = |slot| (slot, 1);
        let (slot, generation) = conn(3);
        assert_eq!(o(Via::Xdp { socket: 0 }, true), (proto::UDP, proto::INET6));
        assert_eq!(
            o(Via::Tls { slot, generation }, false),
            (proto::DOT, proto::INET)
        );
        assert_eq!(
            o(Via::Quic { conn: 1, stream: 0 }, false),
            (proto::DOQ, proto::INET)
        );
        let https = Via::Https {
            slot,
            generation,
            stream: 1,
        };
        assert_eq!(o(https, true), (proto::DOH, proto::INET6));
        assert_eq!(o(https, false), (4, 1));
        assert_eq!(o(Via::Quic { conn: 1, stream: 0 }, true), (7, 2));
    }

    #[test]
    fn frames_are_dropped_and_counted_when_no_buffer_is_free() {
        let mut config = DnstapConfig::default();
        config.file =
            Some(std::env::temp_dir().join(format!("shardns-dnstap-{}", std::process::id())));
        let mut d = Dnstap::new(&config, 1).unwrap().unwrap();
        let mut tap = d.taps.pop().unwrap();
        let stats = WorkerStats::default();
        let origin = Origin::new(
            Via::Udp { socket: 0 },
            false,
            Some("192.0.2.1:5300".parse().unwrap()),
        );
        let query = [0u8; 60_000];
        let now = Instant::now();
        // No writer runs: the worker's buffers fill (two frames each), then frames drop.
        for _ in 0..(2 * BUFFERS + 3) {
            tap.query(&query, origin, now, &stats, false);
        }
        tap.flush(&stats);
        assert_eq!(stats.dnstap[DNSTAP_SENT].get(), 2 * BUFFERS as u64);
        assert_eq!(stats.dnstap[DNSTAP_DROPPED].get(), 3);
        if let Some(f) = &config.file {
            let _ = std::fs::remove_file(f);
        }
    }
}
