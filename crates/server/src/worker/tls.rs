//! worker::tls -- DNS over TLS (RFC 7858): a TCP connection of the worker with a rustls
//! `ServerConnection` between the socket and the RFC 7766 framing.
//!
//! rustls does no I/O of its own: [`receive`] moves ciphertext from the socket into it
//! (`read_tls`), lets it decrypt (`process_new_packets`), and moves the plaintext into the
//! connection's input buffer, where `stream` cuts and answers frames as for TCP;
//! `stream::queue_output` hands responses to it (`writer`) and appends the ciphertext it
//! makes (`write_tls`) to the connection's output, sent by the same code as TCP's. So a
//! TLS connection is a TCP connection (the same table, limits, idle and read timeouts,
//! eviction, pipelining, transfers, the resolver's later answers) with one more step on
//! each side, and the handshake is just bytes in and out: it never blocks the loop. A
//! handshake must end within `limits.tls_handshake_timeout_ms` ([`Handshakes`]).
//!
//! Memory per connection: rustls's buffers (a record, 16 KiB, in; what the client sent
//! and we did not read yet, at most its 16 KiB plaintext limit, as plaintext is moved out
//! before more is read) plus the TCP connection's own.
//!
//! The certificate: [`TlsConfig`] holds the rustls `ServerConfig` behind an `ArcSwap`;
//! accept takes the current one, a reload ([`TlsConfig::reload`]) stores a new one, and
//! the connections already open keep theirs.

use crate::stats::{WorkerStats, TLS_DONE, TLS_FAILED};
use crate::tcp::Conn;
use arc_swap::ArcSwap;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use std::collections::VecDeque;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Reads of the socket into rustls per readiness event (each at most a buffer of 4 KiB,
/// rustls's read size), so one busy connection cannot hold the worker.
const READS_PER_TURN: usize = 16;

/// The server's TLS setup: the files, and the configs made from them (DoT's, and DoH's,
/// which differ only in the ALPN protocol they offer).
pub(crate) struct TlsConfig {
    current: ArcSwap<ServerConfig>,
    https: ArcSwap<ServerConfig>,
    files: (PathBuf, PathBuf),
}

impl TlsConfig {
    /// Reads the certificate chain and key (PEM).
    pub(crate) fn load(cert: &Path, key: &Path) -> Result<Self, String> {
        let (config, https) = server_configs(cert, key)?;
        Ok(Self {
            current: ArcSwap::from(config),
            https: ArcSwap::from(https),
            files: (cert.to_path_buf(), key.to_path_buf()),
        })
    }

    /// Reads the files again (paths from a reloaded config, if it names them); on failure
    /// the previous certificate stays in use.
    pub(crate) fn reload(&self, files: Option<(&Path, &Path)>) -> Result<(), String> {
        let (cert, key) = files.unwrap_or((&self.files.0, &self.files.1));
        let (config, https) = server_configs(cert, key)?;
        self.current.store(config);
        self.https.store(https);
        Ok(())
    }

    /// A server side for a new connection, with the current certificate: DoH's (`https`)
    /// or DoT's.
    pub(crate) fn accept(&self, https: bool) -> Result<ServerConnection, rustls::Error> {
        ServerConnection::new(if https {
            self.https.load_full()
        } else {
            self.current.load_full()
        })
    }
}

/// DoT's config (ALPN "dot") and DoH's (ALPN "h2": RFC 8484 §5.2 asks for HTTP/2 or
/// later, and `h2` is what DoH clients offer).
type Configs = (Arc<ServerConfig>, Arc<ServerConfig>);

fn server_configs(cert: &Path, key: &Path) -> Result<Configs, String> {
    let dot = server_config(cert, key)?;
    let mut https = (*dot).clone();
    https.alpn_protocols = vec![b"h2".to_vec()];
    Ok((dot, Arc::new(https)))
}

/// A rustls server config from PEM files: TLS 1.2 and 1.3 with rustls's safe defaults
/// (aws-lc-rs's cipher suites), no client certificates, ALPN "dot" (RFC 7858's identifier).
fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    config.alpn_protocols = vec![b"dot".to_vec()];
    Ok(Arc::new(config))
}

/// What [`receive`] did.
pub(super) struct Received {
    /// Plaintext arrived or the handshake finished (the connection was active).
    pub(super) active: bool,
    /// Plaintext is left in rustls because the input buffer is full: answer, then call
    /// again (epoll will not say so: the socket has nothing new).
    pub(super) more: bool,
}

/// Moves what the socket has (if `readable`) through rustls into `conn.input`, and what
/// rustls has to send (handshake messages, alerts) into `conn.output`. An error closes the
/// connection (a failed handshake is counted).
pub(super) fn receive(
    conn: &mut Conn,
    readable: bool,
    stats: &WorkerStats,
) -> io::Result<Received> {
    let Conn {
        tls,
        stream,
        input,
        output,
        peer_closed,
        https,
        ..
    } = conn;
    let Some(tls) = tls.as_mut() else {
        return Ok(Received {
            active: false,
            more: false,
        });
    };
    let mut active = false;
    if readable && !*peer_closed {
        let handshaking = tls.is_handshaking();
        for _ in 0..READS_PER_TURN {
            // False while decrypted data waits to be read (rustls refuses more then).
            if !tls.wants_read() {
                break;
            }
            match tls.read_tls(&mut &*stream) {
                Ok(0) => {
                    *peer_closed = true;
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if let Err(e) = tls.process_new_packets() {
                // The alert rustls queued goes out if the socket takes it.
                let _ = tls.write_tls(output);
                let _ = (&*stream).write_all_nonblocking(output);
                if tls.is_handshaking() {
                    stats.tls_handshakes[TLS_FAILED].add(1);
                }
                return Err(io::Error::other(e));
            }
        }
        if handshaking && !tls.is_handshaking() {
            stats.tls_handshakes[TLS_DONE].add(1);
            active = true;
        }
    }
    while tls.wants_write() {
        tls.write_tls(output)?;
    }
    let mut more = false;
    if let Some(h) = https {
        // DNS over HTTPS: the plaintext goes to the HTTP/2 side's pipe.
        for _ in 0..READS_PER_TURN {
            match h.fill(&mut tls.reader()) {
                Ok((_, true)) => {
                    more = true;
                    break;
                }
                Ok((0, _)) => {
                    *peer_closed = true;
                    break;
                }
                Ok(_) => active = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    *peer_closed = true;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        return Ok(Received { active, more });
    }
    loop {
        let (spare, grew) = input.spare();
        if grew {
            stats.request_allocations.add(1);
        }
        if spare.is_empty() {
            more = true;
            break;
        }
        match tls.reader().read(spare) {
            // A close_notify: the client sends nothing more.
            Ok(0) => {
                *peer_closed = true;
                break;
            }
            Ok(n) => {
                input.filled(n);
                active = true;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            // The TCP connection ended without close_notify: as a TCP close.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                *peer_closed = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Received { active, more })
}

/// Encrypts `data` for `conn` and appends the records to its output.
pub(super) fn encrypt(conn: &mut Conn, data: &[u8]) -> io::Result<()> {
    let Conn { tls, output, .. } = conn;
    let Some(tls) = tls.as_mut() else {
        return Ok(());
    };
    io::Write::write_all(&mut tls.writer(), data)?;
    while tls.wants_write() {
        tls.write_tls(output)?;
    }
    Ok(())
}

/// A close_notify alert, sent if the socket takes it now (best effort, at close).
pub(super) fn close_notify(conn: &mut Conn) {
    let Conn {
        tls,
        stream,
        output,
        sent,
        ..
    } = conn;
    let Some(tls) = tls.as_mut() else {
        return;
    };
    if tls.is_handshaking() || *sent < output.len() {
        return;
    }
    output.clear();
    *sent = 0;
    tls.send_close_notify();
    if tls.write_tls(output).is_ok() {
        let _ = (&*stream).write_all_nonblocking(output);
    }
}

/// Writes what the socket takes now, without waiting.
trait WriteNow {
    fn write_all_nonblocking(self, data: &[u8]) -> io::Result<()>;
}

impl WriteNow for &std::net::TcpStream {
    fn write_all_nonblocking(mut self, data: &[u8]) -> io::Result<()> {
        let mut rest = data;
        // Bounded: each write takes at least one octet or stops.
        while !rest.is_empty() {
            match io::Write::write(&mut self, rest) {
                Ok(0) => break,
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The handshakes in progress on one worker, oldest first, each with its deadline; a
/// connection closed before its deadline leaves a stale entry, dropped when it comes up.
/// Bounded: at `max` entries the oldest is dropped (its connection closed if it is still
/// in its handshake).
pub(super) struct Handshakes {
    queue: VecDeque<(u32, u32, Instant)>,
    timeout: Duration,
    max: usize,
}

impl Handshakes {
    pub(super) fn new(timeout: Duration, max: usize) -> Self {
        Self {
            queue: VecDeque::new(),
            timeout,
            max: max.max(1),
        }
    }

    /// Adds connection (`slot`, `generation`), accepted at `now`; returns an older entry
    /// that had to make room.
    pub(super) fn push(&mut self, slot: u32, generation: u32, now: Instant) -> Option<(u32, u32)> {
        let dropped = if self.queue.len() >= self.max {
            self.queue.pop_front().map(|(s, g, _)| (s, g))
        } else {
            None
        };
        self.queue.push_back((slot, generation, now + self.timeout));
        dropped
    }

    /// The next entry whose deadline is at or before `now`.
    pub(super) fn due(&mut self, now: Instant) -> Option<(u32, u32)> {
        let &(slot, generation, deadline) = self.queue.front()?;
        if deadline > now {
            return None;
        }
        self.queue.pop_front();
        Some((slot, generation))
    }

    /// The earliest deadline.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.queue.front().map(|&(_, _, d)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshakes_come_due_in_order_and_stay_bounded() {
        let t0 = Instant::now();
        let mut h = Handshakes::new(Duration::from_secs(5), 2);
        assert_eq!(h.push(1, 0, t0), None);
        assert_eq!(h.push(2, 0, t0 + Duration::from_secs(1)), None);
        assert_eq!(h.push(3, 0, t0 + Duration::from_secs(2)), Some((1, 0)));
        assert_eq!(h.next_deadline(), Some(t0 + Duration::from_secs(6)));
        assert_eq!(h.due(t0 + Duration::from_secs(5)), None);
        assert_eq!(h.due(t0 + Duration::from_secs(6)), Some((2, 0)));
        assert_eq!(h.due(t0 + Duration::from_secs(6)), None);
        assert_eq!(h.due(t0 + Duration::from_secs(60)), Some((3, 0)));
        assert_eq!(h.next_deadline(), None);
    }

    #[test]
    fn missing_or_bad_files_are_reported() {
        let dir = std::env::temp_dir();
        let cert = dir.join(format!("shardns-tls-test-{}.pem", std::process::id()));
        std::fs::write(&cert, "not PEM").unwrap();
        let err = TlsConfig::load(&cert, &cert).err().unwrap();
        assert!(err.contains("no certificate"), "{err}");
        let err = TlsConfig::load(Path::new("/nonexistent/cert.pem"), &cert)
            .err()
            .unwrap();
        assert!(err.contains("/nonexistent/cert.pem"), "{err}");
        let _ = std::fs::remove_file(&cert);
    }
}
