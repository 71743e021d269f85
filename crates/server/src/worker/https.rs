//! worker::https -- DNS over HTTPS (RFC 8484, HTTP/2): a TLS connection of the worker
//! (`tls`, ALPN `h2`) with the `h2` crate's HTTP/2 server between the plaintext and
//! `dispatch`.
//!
//! The design: `h2` is sans-runtime enough to be driven from the worker's own epoll loop,
//! so a DoH connection is one more kind of TCP connection in the worker's table (the same
//! limits, idle and read timeouts, eviction, handshake deadline, resolver deliveries) and
//! nothing is handed to another thread or async runtime. `h2` wants an
//! `AsyncRead + AsyncWrite` object and a task `Context`: the object is [`Io`], an
//! in-memory pipe that `tls::receive` fills with decrypted plaintext and whose output
//! [`drive`] encrypts into the connection's output, and the context's waker only marks the
//! connection for another round in the same turn (everything `h2` waits for arrives as
//! socket readiness, which brings the connection back anyway). Each readiness event polls
//! the connection: requests whose head is whole are answered at once (GET), or once their
//! body is (POST); a miss of the resolver role keeps the stream until the worker delivers
//! its answer ([`deliver`]).
//!
//! Costs beside DoT's: `h2` allocates per stream and takes its own (uncontended) mutex per
//! operation, and the response body is an owned copy, so the DoH path allocates; UDP and
//! TCP are untouched (their connections have no `https`).
//!
//! Limits (docs/CONFIG.md): `limits.https_streams_per_connection` concurrent streams
//! (SETTINGS_MAX_CONCURRENT_STREAMS); `limits.https_resets_per_second` streams the client
//! may reset per connection and second before GOAWAY ENHANCE_YOUR_CALM (CVE-2023-44487;
//! `h2` also closes a connection holding more than 20 reset streams not yet accepted);
//! header lists of [`MAX_HEADER_LIST`](crate::https_conn::MAX_HEADER_LIST) octets; at most [`BODY_BUDGET`] octets of request
//! bodies buffered per connection (a stream past it is reset with REFUSED_STREAM); the
//! HTTP errors of `crate::doh` for requests without a query we take. The connection's
//! state is `crate::https_conn`'s.

use super::stream::FrameCtx;
use crate::dispatch::{Action, Dispatcher};
use crate::doh::{self, Head, Reject, MAX_MESSAGE, MEDIA_TYPE};
use crate::https_conn::{Body, HttpsConn, Io, State, DRAIN_MAX};
use crate::origin::{Origin, Via};
use crate::stats::{WorkerStats, HTTPS_CALM, HTTPS_REJECTED};
use crate::tcp::Conn;
use bytes::Bytes;
use h2::server::{Connection, SendResponse};
use h2::{Reason, RecvStream};
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use http::{Request, Response};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::Instant;

/// Request body octets buffered per connection (POSTs whose body is still arriving).
pub(crate) const BODY_BUDGET: usize = 128 * 1024;
/// Rounds of polling the connection per readiness event (a round answers what arrived and
/// lets `h2` write what that queued).
const ROUNDS: usize = 8;

/// Polls `conn`'s HTTP/2 side: the handshake, new requests (answered through `dispatch`,
/// the answers written into `staging` first), request bodies, and what `h2` has to send
/// (encrypted into the connection's output). True if a request was taken. An error or the
/// end of the HTTP/2 connection marks `conn` done (it closes once its output is sent).
pub(super) fn drive(
    conn: &mut Conn,
    dispatch: &mut Dispatcher<'_>,
    staging: &mut [u8],
    ctx: FrameCtx,
    now: Instant,
    stats: &WorkerStats,
) -> io::Result<bool> {
    let Some(mut h) = conn.https.take() else {
        return Ok(false);
    };
    if h.closing {
        let mut p = h.io.pipe();
        p.rx.clear();
        p.rx_pos = 0;
        drop(p);
        conn.https = Some(h);
        return Ok(false);
    }
    let (v6, peer) = (conn.v6, conn.peer);
    let origin = |stream: u32| {
        let via = Via::Https {
            slot: ctx.slot,
            generation: ctx.generation,
            stream,
        };
        Origin::new(via, v6, peer)
    };
    let waker = h.waker.clone();
    let mut cx = Context::from_waker(&waker);
    let mut active = false;
    let mut ended = false;
    for _ in 0..ROUNDS {
        h.woken.0.store(false, Relaxed);
        if let State::Handshake(hs) = &mut h.state {
            match Pin::new(hs).poll(&mut cx) {
                Poll::Ready(Ok(c)) => h.state = State::Open(c),
                Poll::Ready(Err(_)) => {
                    h.state = State::Closed;
                    ended = true;
                }
                Poll::Pending => {}
            }
        }
        let mut took = 0;
        let mut resets = 0;
        let State::Open(c) = &mut h.state else {
            break;
        };
        // New requests (h2 reads and writes the pipe while polled).
        ended |= accept_requests(
            c,
            &mut cx,
            conn,
            &mut h.bodies,
            &mut h.pending,
            dispatch,
            staging,
            ctx,
            &origin,
            stats,
            &mut took,
            &mut resets,
        );
        // Bodies that arrived.
        poll_bodies(
            &mut h,
            &mut cx,
            dispatch,
            staging,
            &origin,
            stats,
            &mut took,
            &mut resets,
        );
        // Resolutions whose client gave up: counted as resets.
        h.pending.retain_mut(|(_, r)| {
            let reset = r.poll_reset(&mut cx).is_ready();
            resets += u32::from(reset);
            !reset
        });
        h.count_resets(resets, now, stats);
        active |= took > 0;
        if ended || (took == 0 && resets == 0 && !h.woken.0.load(Relaxed)) {
            break;
        }
    }
    if ended {
        h.state = State::Closed;
        h.pending.clear();
        h.bodies.clear();
        h.closing = true;
    }
    let out = std::mem::take(&mut h.io.pipe().tx);
    conn.https = Some(h);
    if !out.is_empty() {
        encrypt_per_response(conn, &out)?;
        let mut out = out;
        out.clear();
        // The buffer goes back for the next turn's output.
        if let Some(h) = conn.https.as_mut() {
            let mut p = h.io.pipe();
            if p.tx.is_empty() {
                p.tx = out;
            }
        }
    }
    Ok(active)
}

/// Takes the new requests of `c` (rejected, answered, or their bodies awaited) until `h2`
/// has no more; counts them in `took` and those reset before we saw them in `resets`. True
/// if the HTTP/2 connection ended.
#[inline]
#[allow(clippy::too_many_arguments)]
fn accept_requests(
    c: &mut Connection<Io, Bytes>,
    cx: &mut Context<'_>,
    conn: &mut Conn,
    bodies: &mut Vec<Body>,
    pending: &mut Vec<(u32, SendResponse<Bytes>)>,
    dispatch: &mut Dispatcher<'_>,
    staging: &mut [u8],
    ctx: FrameCtx,
    origin: &impl Fn(u32) -> Origin,
    stats: &WorkerStats,
    took: &mut u32,
    resets: &mut u32,
) -> bool {
    loop {
        match c.poll_accept(cx) {
            Poll::Ready(Some(Ok((req, mut respond)))) => {
                if respond.poll_reset(cx).is_ready() {
                    // Reset by the client before we saw it (rapid reset).
                    *resets += 1;
                    continue;
                }
                *took += 1;
                conn.queries = conn.queries.saturating_add(1);
                if conn.queries == ctx.max_queries {
                    // `limits.tcp_queries_per_connection`: this is the last request the
                    // connection gets; a GOAWAY tells the client to open another (the
                    // streams already open are still answered, as over TCP).
                    c.graceful_shutdown();
                    stats.tcp_query_limit_closed.add(1);
                }
                let stream = respond.stream_id().as_u32();
                request(
                    req,
                    respond,
                    stream,
                    bodies,
                    pending,
                    dispatch,
                    staging,
                    origin(stream),
                    stats,
                );
            }
            Poll::Ready(Some(Err(e))) => {
                if e.reason() == Some(Reason::ENHANCE_YOUR_CALM) && e.is_go_away() {
                    stats.https[HTTPS_CALM].add(1);
                }
                return true;
            }
            Poll::Ready(None) => {
                return true;
            }
            Poll::Pending => return false,
        }
    }
}

/// Polls the request bodies still arriving: a whole one answered, one too large or over
/// the connection's budget refused, one reset counted in `resets`; answered or refused
/// requests counted in `took`.
#[inline]
#[allow(clippy::too_many_arguments)]
fn poll_bodies(
    h: &mut HttpsConn,
    cx: &mut Context<'_>,
    dispatch: &mut Dispatcher<'_>,
    staging: &mut [u8],
    origin: &impl Fn(u32) -> Origin,
    stats: &WorkerStats,
    took: &mut u32,
    resets: &mut u32,
) {
    let mut i = 0;
    while i < h.bodies.len() {
        match poll_body(&mut h.bodies[i], cx, &mut h.body_octets) {
            BodyState::More => i += 1,
            BodyState::Reset => {
                let b = h.bodies.swap_remove(i);
                h.body_octets -= b.data.len();
                *resets += 1;
            }
            BodyState::Done => {
                let mut b = h.bodies.swap_remove(i);
                h.body_octets -= b.data.len();
                if b.data.len() < 12 {
                    reject(&mut b.respond, Reject::BadRequest, stats);
                } else {
                    answer(
                        &b.data,
                        b.respond,
                        b.stream,
                        &mut h.pending,
                        dispatch,
                        staging,
                        origin(b.stream),
                        stats,
                    );
                }
                *took += 1;
            }
            BodyState::TooLarge => {
                let b = &mut h.bodies[i];
                h.body_octets -= b.data.len();
                b.data = Vec::new();
                reject(&mut b.respond, Reject::TooLarge, stats);
                b.drained = Some(0);
                *took += 1;
            }
            BodyState::Drained => {
                h.bodies.swap_remove(i);
            }
            BodyState::OverBudget => {
                let mut b = h.bodies.swap_remove(i);
                h.body_octets -= b.data.len();
                b.respond.send_reset(Reason::REFUSED_STREAM);
            }
        }
    }
}

/// The resolver role's answer `message` for `stream` of `conn`: sent if the stream is
/// still waiting, then written out as [`drive`] does.
pub(super) fn deliver(conn: &mut Conn, stream: u32, message: &[u8]) -> io::Result<()> {
    let Some(mut h) = conn.https.take() else {
        return Ok(());
    };
    if let Some(i) = h.pending.iter().position(|(s, _)| *s == stream) {
        let (_, mut respond) = h.pending.swap_remove(i);
        respond_message(&mut respond, message);
    }
    let waker = h.waker.clone();
    let mut cx = Context::from_waker(&waker);
    if let State::Open(c) = &mut h.state {
        // Writes what the answer queued; a request that arrives meanwhile waits in h2
        // for the next readiness event (the pipe's input was all read by `drive`).
        for _ in 0..ROUNDS {
            h.woken.0.store(false, Relaxed);
            if c.poll_closed(&mut cx).is_ready() || !h.woken.0.load(Relaxed) {
                break;
            }
        }
    }
    let out = std::mem::take(&mut h.io.pipe().tx);
    conn.https = Some(h);
    encrypt_per_response(conn, &out)
}

/// Encrypts what h2 wrote, one TLS record (or more, past 16 KiB) per response: cut after
/// each frame that ends a stream. Clients may take one response per TLS read: dnsperf
/// 2.10 keeps one message buffer per connection and loses every response but one of a
/// record that holds several (Unbound and BIND write each response on its own too).
fn encrypt_per_response(conn: &mut Conn, out: &[u8]) -> io::Result<()> {
    const DATA: u8 = 0;
    const HEADERS: u8 = 1;
    const END_STREAM: u8 = 0x1;
    let mut start = 0;
    let mut at = 0;
    while out.len() - at >= 9 {
        let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
        let end = at + 9 + len;
        if end > out.len() {
            break;
        }
        let (kind, flags) = (out[at + 3], out[at + 4]);
        at = end;
        if matches!(kind, DATA | HEADERS) && flags & END_STREAM != 0 {
            super::tls::encrypt(conn, &out[start..at])?;
            start = at;
        }
    }
    if start < out.len() {
        super::tls::encrypt(conn, &out[start..])?;
    }
    Ok(())
}

/// What a poll of a request body found.
enum BodyState {
    More,
    Done,
    Reset,
    TooLarge,
    OverBudget,
    /// A rejected request's body ended, or was read as far as it will be.
    Drained,
}

fn poll_body(b: &mut Body, cx: &mut Context<'_>, octets: &mut usize) -> BodyState {
    loop {
        match b.recv.poll_data(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                let _ = b.recv.flow_control().release_capacity(chunk.len());
                if let Some(drained) = b.drained.as_mut() {
                    *drained += chunk.len();
                    if *drained > DRAIN_MAX {
                        return BodyState::Drained;
                    }
                    continue;
                }
                if b.data.len() + chunk.len() > b.limit {
                    return BodyState::TooLarge;
                }
                if *octets + chunk.len() > BODY_BUDGET {
                    return BodyState::OverBudget;
                }
                *octets += chunk.len();
                b.data.extend_from_slice(&chunk);
            }
            Poll::Ready(Some(Err(_))) if b.drained.is_some() => return BodyState::Drained,
            Poll::Ready(None) if b.drained.is_some() => return BodyState::Drained,
            Poll::Ready(Some(Err(_))) => return BodyState::Reset,
            Poll::Ready(None) => return BodyState::Done,
            Poll::Pending => return BodyState::More,
        }
    }
}

/// A new request: rejected, answered (GET), or its body awaited (POST).
#[allow(clippy::too_many_arguments)]
fn request(
    req: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    stream: u32,
    bodies: &mut Vec<Body>,
    pending: &mut Vec<(u32, SendResponse<Bytes>)>,
    dispatch: &mut Dispatcher<'_>,
    staging: &mut [u8],
    origin: Origin,
    stats: &WorkerStats,
) {
    let (parts, recv) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("", |p| p.as_str());
    let header = |name| {
        parts
            .headers
            .get(name)
            .map(|v: &http::HeaderValue| v.as_bytes())
    };
    let (query, rest) = staging.split_at_mut(MAX_MESSAGE);
    match doh::read_head(
        parts.method.as_str().as_bytes(),
        path.as_bytes(),
        header(CONTENT_TYPE),
        header(CONTENT_LENGTH),
        query,
    ) {
        Err(r) => {
            reject(&mut respond, r, stats);
            if !recv.is_end_stream() {
                bodies.push(Body {
                    stream,
                    recv,
                    respond,
                    data: Vec::new(),
                    limit: 0,
                    drained: Some(0),
                });
            }
        }
        Ok(Head::Get { len }) => answer(
            &query[..len],
            respond,
            stream,
            pending,
            dispatch,
            rest,
            origin,
            stats,
        ),
        Ok(Head::Post { limit }) => {
            if recv.is_end_stream() {
                reject(&mut respond, Reject::BadRequest, stats);
                return;
            }
            bodies.push(Body {
                stream,
                recv,
                respond,
                data: Vec::new(),
                limit,
                drained: None,
            });
        }
    }
}

/// Answers `query` through `dispatch`; a resolver miss keeps the stream in `pending`.
#[allow(clippy::too_many_arguments)]
fn answer(
    query: &[u8],
    mut respond: SendResponse<Bytes>,
    stream: u32,
    pending: &mut Vec<(u32, SendResponse<Bytes>)>,
    dispatch: &mut Dispatcher<'_>,
    out: &mut [u8],
    origin: Origin,
    stats: &WorkerStats,
) {
    stats.queries[origin.slot()].add(1);
    let out = &mut out[..MAX_MESSAGE];
    match dispatch.handle(query, origin, out) {
        Action::Send(w) => respond_message(&mut respond, &out[..w.len]),
        Action::Pending => pending.push((stream, respond)),
        // Not a query (a response, say) or dropped by policy.
        Action::Drop => reject(&mut respond, Reject::BadRequest, stats),
        // A zone transfer's many messages do not fit one HTTP response (TCP, XoT and DoQ
        // serve those): counted as aborted.
        Action::Stream(t) => {
            super::stream::transfer_ended(origin.peer, &t, stats);
            reject(&mut respond, Reject::BadRequest, stats);
        }
    }
}

/// A 200 response carrying `message`, fresh for its smallest TTL (RFC 8484 §5.1).
fn respond_message(respond: &mut SendResponse<Bytes>, message: &[u8]) {
    let mut b = Response::builder()
        .status(200)
        .header(CONTENT_TYPE, MEDIA_TYPE)
        .header(CONTENT_LENGTH, message.len());
    if let Some(ttl) = doh::min_ttl(message) {
        b = b.header(CACHE_CONTROL, format!("max-age={ttl}"));
    }
    let Ok(head) = b.body(()) else {
        return;
    };
    if let Ok(mut s) = respond.send_response(head, false) {
        let _ = s.send_data(Bytes::copy_from_slice(message), true);
    }
}

/// An HTTP error without a body.
fn reject(respond: &mut SendResponse<Bytes>, why: Reject, stats: &WorkerStats) {
    stats.https[HTTPS_REJECTED].add(1);
    let mut head = Response::builder().status(why.status());
    if why == Reject::MethodNotAllowed {
        // RFC 9110 §15.5.6: a 405 lists the methods the resource takes.
        head = head.header(ALLOW, "GET, POST");
    }
    if let Ok(head) = head.body(()) {
        let _ = respond.send_response(head, true);
    }
}
