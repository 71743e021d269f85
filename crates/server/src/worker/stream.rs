//! worker::stream -- the bytes on one TCP connection: whole framed queries in (RFC 7766
//! pipelining: answered in order, each by `dispatch`), responses out with as few system
//! calls as the socket allows, and an allowed zone transfer streamed a few messages per
//! loop turn and only while the client reads, so a big zone or a slow secondary never
//! holds the worker.

use crate::dispatch::{Action, Dispatcher, OrDash};
use crate::origin::{Origin, Via};
use crate::stats::{WorkerStats, XFR_ABORTED, XFR_DONE};
use crate::tcp::{Conn, MAX_FRAME};
use shardns_sys::unix_now;
use shardns_zone::xfr::{self, Transfer};
use std::io::{self, Write};
use std::net::SocketAddr;
use tracing::info;

/// Stop answering a connection's queries while this much output is unsent.
pub(super) const OUTPUT_HIGH_WATER: usize = 64 * 1024;

/// Answers every whole query buffered on `conn` (TLS: decrypted), in order, writing the responses with as
/// few system calls as the socket allows. Stops while too much output is unsent (the rest
/// stays buffered until the client reads). True if a zone transfer wrote messages (the
/// connection is active even when the socket took them all at once).
pub(super) fn answer_frames(
    conn: &mut Conn,
    staging: &mut [u8],
    dispatch: &mut Dispatcher<'_>,
    ctx: FrameCtx,
    stats: &WorkerStats,
) -> io::Result<bool> {
    // A transfer in progress goes first; queries behind it wait until it has ended, so
    // its messages are never interleaved with other responses.
    let streamed = continue_transfer(conn, staging, stats)?;
    let (slot, generation) = (ctx.slot, ctx.generation);
    let via = if conn.tls.is_some() {
        Via::Tls { slot, generation }
    } else {
        Via::Tcp { slot, generation }
    };
    let origin = Origin::new(via, conn.v6, conn.peer);
    let mut used = 0;
    while conn.transfer.is_none()
        && conn.input.has_frame()
        && conn.unsent() < OUTPUT_HIGH_WATER
        && conn.queries < ctx.max_queries
    {
        if staging.len() - used < MAX_FRAME {
            queue_output(conn, &staging[..used], stats)?;
            used = 0;
            continue;
        }
        let Some(range) = conn.input.next_frame() else {
            break;
        };
        conn.queries += 1;
        if conn.queries >= ctx.max_queries {
            // The last query this connection gets answered: read no more, close once the
            // responses are out (RFC 7766 §6.2.3 lets the server close).
            conn.peer_closed = true;
            stats.tcp_query_limit_closed.add(1);
        }
        let query = conn.input.frame(range);
        stats.queries[origin.slot()].add(1);
        let out = &mut staging[used + 2..used + MAX_FRAME];
        match dispatch.handle(query, origin, out) {
            Action::Send(w) => {
                staging[used..used + 2].copy_from_slice(&(w.len as u16).to_be_bytes());
                used += 2 + w.len;
            }
            Action::Stream(t) => {
                conn.transfer = Some(t);
                break;
            }
            Action::Drop | Action::Pending => {}
        }
    }
    if used > 0 {
        queue_output(conn, &staging[..used], stats)?;
    }
    // A transfer that just started sends its first messages now.
    Ok(continue_transfer(conn, staging, stats)? || streamed)
}

/// Writes the next messages of `conn`'s transfer, at most a staging buffer's worth (15
/// messages, 240 KiB) per call and none while too much output is unsent, so one transfer of a big
/// zone cannot hold the worker: it comes back on the next turn of the loop. True if it
/// wrote any.
pub(super) fn continue_transfer(
    conn: &mut Conn,
    staging: &mut [u8],
    stats: &WorkerStats,
) -> io::Result<bool> {
    let Some(mut t) = conn.transfer.take() else {
        return Ok(false);
    };
    t.set_time(unix_now());
    let mut used = 0;
    let room = 2 + xfr::MESSAGE_SIZE;
    while conn.unsent() < OUTPUT_HIGH_WATER && staging.len() - used >= room {
        let Some(len) = t.next_message(&mut staging[used + 2..used + room]) else {
            break;
        };
        staging[used..used + 2].copy_from_slice(&(len as u16).to_be_bytes());
        used += 2 + len;
        stats.xfr_messages.add(1);
        if t.is_done() {
            break;
        }
    }
    let sent = if used > 0 {
        queue_output(conn, &staging[..used], stats).map(|()| true)
    } else {
        Ok(false)
    };
    if t.is_done() {
        transfer_ended(conn.peer, &t, stats);
    } else {
        conn.transfer = Some(t);
    }
    sent
}

/// Counts and logs the end of a transfer: done once its last message is queued, else
/// aborted (the connection closed first, or a record was larger than a message).
#[cold]
pub(super) fn transfer_ended(peer: Option<SocketAddr>, t: &Transfer, stats: &WorkerStats) {
    let done = t.is_done() && !t.failed();
    stats.xfr[if done { XFR_DONE } else { XFR_ABORTED }].add(1);
    let how = if done { "done" } else { "aborted" };
    info!(
        "transfer of {} (serial {}) to {}: {how}, {} records in {} messages",
        t.zone().apex(),
        t.zone().serial(),
        OrDash(peer),
        t.records(),
        t.messages()
    );
}

/// Which connection `answer_frames` serves, and when.
#[derive(Clone, Copy)]
pub(super) struct FrameCtx {
    pub(super) slot: u32,
    pub(super) generation: u32,
    pub(super) max_queries: u32,
}

/// Writes `data` now if nothing is queued before it; keeps whatever the socket refuses.
pub(super) fn queue_output(conn: &mut Conn, data: &[u8], stats: &WorkerStats) -> io::Result<()> {
    if conn.tls.is_some() {
        // DNS over TLS: the records rustls makes of `data` go out the same way.
        let cap = conn.output.capacity();
        super::tls::encrypt(conn, data)?;
        if conn.output.capacity() != cap {
            stats.request_allocations.add(1);
        }
        return flush_output(conn).map(|_| ());
    }
    let mut rest = data;
    if conn.unsent() == 0 {
        match (&conn.stream).write(data) {
            Ok(n) => rest = &data[n..],
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    if !rest.is_empty() {
        let cap = conn.output.capacity();
        conn.output.extend_from_slice(rest);
        if conn.output.capacity() != cap {
            stats.request_allocations.add(1);
        }
    }
    Ok(())
}

/// Sends queued output; true if the socket took anything.
pub(super) fn flush_output(conn: &mut Conn) -> io::Result<bool> {
    let mut progress = false;
    while conn.unsent() > 0 {
        match (&conn.stream).write(&conn.output[conn.sent..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                conn.sent += n;
                progress = true;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if conn.unsent() == 0 {
        conn.sent = 0;
        if conn.output.capacity() > 2 * OUTPUT_HIGH_WATER {
            conn.output = Vec::new();
        } else {
            conn.output.clear();
        }
    }
    Ok(progress)
}
