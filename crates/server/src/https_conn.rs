//! https_conn -- one DoH connection's HTTP/2 state (RFC 8484): `h2`'s connection, the
//! in-memory pipe between rustls and `h2`, request bodies and streams awaiting the
//! resolver; held by `tcp::Conn`, polled by `worker::https`.
//!
//! A leaf of `tcp` and `worker`: the connection table holds this state without depending
//! on the worker that drives it. The pipe's mutex is never contended (see [`HttpsConn`]).

use crate::doh::MAX_MESSAGE;
use crate::stats::{WorkerStats, HTTPS_CALM};
use bytes::Bytes;
use h2::server::{Connection, Handshake, SendResponse};
use h2::{Reason, RecvStream};
use std::io::{self, Read};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Plaintext held for `h2` before it has read it; past this `tls::receive` stops
/// decrypting until `h2` has taken it (4 rounds of rustls's reads).
const RX_MAX: usize = 64 * 1024;
/// The largest header list a request may have (SETTINGS_MAX_HEADER_LIST_SIZE); a DoH GET
/// of the largest query is under 88 KiB of `:path`, so such queries must use POST.
pub(crate) const MAX_HEADER_LIST: u32 = 16 * 1024;

/// The in-memory pipe between rustls and `h2`.
#[derive(Default)]
pub(crate) struct Pipe {
    pub(crate) rx: Vec<u8>,
    pub(crate) rx_pos: usize,
    pub(crate) tx: Vec<u8>,
}

/// `h2`'s I/O object: reads the plaintext `tls::receive` put in the pipe, writes into it.
/// The mutex is never contended: the worker's thread is the only one to touch it (it is
/// a mutex, not a `RefCell`, because the worker is built before its thread starts).
#[derive(Clone)]
pub(crate) struct Io(Arc<Mutex<Pipe>>);

impl Io {
    pub(crate) fn pipe(&self) -> MutexGuard<'_, Pipe> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut p = self.pipe();
        let avail = p.rx.len() - p.rx_pos;
        if avail == 0 {
            // No waker kept: more plaintext comes with a readiness event, and that
            // polls the connection again.
            return Poll::Pending;
        }
        let n = avail.min(buf.remaining());
        let start = p.rx_pos;
        buf.put_slice(&p.rx[start..start + n]);
        p.rx_pos += n;
        if p.rx_pos == p.rx.len() {
            p.rx.clear();
            p.rx_pos = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.pipe().tx.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The waker `h2` is polled with: it marks the connection for one more round.
#[derive(Default)]
pub(crate) struct Woken(pub(crate) AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Relaxed);
    }
}

pub(crate) enum State {
    Handshake(Handshake<Io, Bytes>),
    Open(Connection<Io, Bytes>),
    Closed,
}

/// A POST whose body is still arriving.
pub(crate) struct Body {
    pub(crate) stream: u32,
    pub(crate) recv: RecvStream,
    pub(crate) respond: SendResponse<Bytes>,
    pub(crate) data: Vec<u8>,
    pub(crate) limit: usize,
    /// Already answered with an HTTP error: the rest of the body is read and dropped (up
    /// to [`DRAIN_MAX`] octets), so the client sees its response and a stream that ends
    /// cleanly rather than reset under its upload (curl 7.88 then reports no response).
    pub(crate) drained: Option<usize>,
}

/// Octets of a rejected request's body read and dropped before the stream is abandoned
/// (reset with NO_ERROR).
pub(crate) const DRAIN_MAX: usize = 128 * 1024;

/// One DoH connection's HTTP/2 side.
pub(crate) struct HttpsConn {
    pub(crate) io: Io,
    pub(crate) state: State,
    pub(crate) woken: Arc<Woken>,
    pub(crate) waker: Waker,
    pub(crate) bodies: Vec<Body>,
    pub(crate) body_octets: usize,
    /// Streams waiting for the resolver role's answer.
    pub(crate) pending: Vec<(u32, SendResponse<Bytes>)>,
    pub(crate) resets: u32,
    pub(crate) resets_since: Instant,
    pub(crate) max_resets: u32,
    /// The HTTP/2 connection ended (GOAWAY sent, an error, the client's GOAWAY): what the
    /// client still sends is read and dropped until it closes, so that the kernel does not
    /// answer unread data with a TCP reset that destroys our GOAWAY before the client reads
    /// it (a lingering close, bounded by the read timeout).
    pub(crate) closing: bool,
    /// Our side of the TCP connection is shut down (after the GOAWAY and close_notify).
    pub(crate) shut: bool,
}

impl std::fmt::Debug for HttpsConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpsConn")
            .field("bodies", &self.bodies.len())
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl HttpsConn {
    pub(crate) fn new(streams: u32, max_resets: u32, now: Instant) -> Self {
        let io = Io(Arc::default());
        let handshake = h2::server::Builder::new()
            .max_concurrent_streams(streams)
            .max_header_list_size(MAX_HEADER_LIST)
            .max_send_buffer_size(MAX_MESSAGE + 1)
            .handshake(io.clone());
        let woken = Arc::new(Woken::default());
        Self {
            io,
            state: State::Handshake(handshake),
            waker: Waker::from(Arc::clone(&woken)),
            woken,
            bodies: Vec::new(),
            body_octets: 0,
            pending: Vec::new(),
            resets: 0,
            resets_since: now,
            max_resets,
            closing: false,
            shut: false,
        }
    }

    /// True while part of a request body has arrived and the rest has not (the read
    /// timeout runs).
    pub(crate) fn receiving(&self) -> bool {
        !self.bodies.is_empty() || self.closing
    }

    /// Moves plaintext from rustls into the pipe; `Ok(true)` if the pipe is full and
    /// rustls may hold more. `Ok(0)` from rustls (close_notify) is returned as is.
    pub(crate) fn fill(&self, reader: &mut impl Read) -> io::Result<(usize, bool)> {
        let mut p = self.io.pipe();
        let start = p.rx.len();
        if start >= RX_MAX {
            return Ok((0, true));
        }
        p.rx.resize(start + 4096, 0);
        let r = reader.read(&mut p.rx[start..]);
        let n = *r.as_ref().unwrap_or(&0);
        p.rx.truncate(start + n);
        r.map(|n| (n, false))
    }

    pub(crate) fn count_resets(&mut self, n: u32, now: Instant, stats: &WorkerStats) {
        if n == 0 {
            return;
        }
        if now.saturating_duration_since(self.resets_since) >= Duration::from_secs(1) {
            self.resets_since = now;
            self.resets = 0;
        }
        self.resets += n;
        if self.resets > self.max_resets {
            if let State::Open(c) = &mut self.state {
                stats.https[HTTPS_CALM].add(1);
                c.abrupt_shutdown(Reason::ENHANCE_YOUR_CALM);
            }
        }
    }
}
