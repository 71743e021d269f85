//! worker::quic::streams -- one connection's streams: a query read and answered, a
//! response the stream did not take kept for later, a zone transfer's messages pumped.

use super::{
    Quic, QuicConn, BUFFERED_MAX, DOQ_EXCESSIVE_LOAD, DOQ_PROTOCOL_ERROR, DOQ_REQUEST_CANCELLED,
    STREAM_MAX, XFR_MESSAGES_PER_TURN, XFR_PER_CONN,
};
use crate::dispatch::{Action, Dispatcher};
use crate::origin::{Origin, Via};
use crate::stats::WorkerStats;
use bytes::Bytes;
use quinn_proto::{ConnectionHandle, ReadError, StreamId, VarInt};
use shardns_zone::xfr;
use std::time::Instant;

/// Takes what stream `id` has; a whole query is answered.
pub(super) fn read_stream(
    q: &mut Quic,
    ch: ConnectionHandle,
    c: &mut QuicConn,
    id: StreamId,
    dispatch: &mut Dispatcher<'_>,
    now: Instant,
    stats: &WorkerStats,
) {
    let mut fin = false;
    let mut reset = None;
    let others = c.buffered_except(id);
    {
        let buf = c.partial.entry(id).or_default();
        let mut recv = c.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            c.partial.remove(&id);
            return;
        };
        loop {
            match chunks.next(STREAM_MAX) {
                Ok(Some(chunk)) => {
                    let total = buf.len() + chunk.bytes.len();
                    if total > STREAM_MAX {
                        reset = Some(DOQ_PROTOCOL_ERROR);
                        break;
                    }
                    if others + total > BUFFERED_MAX {
                        reset = Some(DOQ_EXCESSIVE_LOAD);
                        break;
                    }
                    buf.extend_from_slice(&chunk.bytes);
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(_)) => {
                    reset = Some(DOQ_REQUEST_CANCELLED);
                    break;
                }
            }
        }
        let _ = chunks.finalize();
    }
    let Some(buf) = c.partial.get(&id) else {
        return;
    };
    let want = match buf.get(..2) {
        Some(l) => 2 + u16::from_be_bytes([l[0], l[1]]) as usize,
        None => usize::MAX,
    };
    let error = match reset {
        Some(code) => Some(code),
        // Not one whole message: a stream error.
        None if buf.len() > want || (fin && buf.len() < want) => Some(DOQ_PROTOCOL_ERROR),
        None => None,
    };
    if let Some(code) = error {
        c.partial.remove(&id);
        let _ = c.conn.send_stream(id).reset(VarInt::from_u32(code));
        let _ = c.conn.recv_stream(id).stop(VarInt::from_u32(code));
        if code == DOQ_PROTOCOL_ERROR {
            stats.malformed.add(1);
        } else {
            stats.dropped.add(1);
        }
        return;
    }
    if buf.len() < want {
        return;
    }
    let Some(query) = c.partial.remove(&id) else {
        return;
    };
    let message = &query[2..];
    let peer = c.conn.remote_address();
    let via = Via::Quic {
        conn: ch.0,
        stream: id.into(),
    };
    let origin = Origin::new(via, peer.is_ipv6(), Some(peer));
    stats.queries[origin.slot()].add(1);
    // RFC 9250 §4.2.1: the Message ID is 0; anything else closes the connection.
    if message.len() >= 2 && message[..2] != [0, 0] {
        stats.malformed.add(1);
        c.conn.close(
            now,
            VarInt::from_u32(DOQ_PROTOCOL_ERROR),
            Bytes::from_static(b"message ID not 0"),
        );
        return;
    }
    let (len_field, out) = q.out.split_at_mut(2);
    match dispatch.handle(message, origin, out) {
        Action::Send(w) => {
            len_field.copy_from_slice(&(w.len as u16).to_be_bytes());
            respond(c, id, &q.out[..2 + w.len], stats);
        }
        // The resolver answers later (`Quic::deliver`); the stream waits.
        Action::Pending => {}
        // A zone transfer: its messages on this stream, as the client takes them.
        Action::Stream(t) => {
            if c.transfers.len() >= XFR_PER_CONN {
                super::super::stream::transfer_ended(origin.peer, &t, stats);
                let _ = c
                    .conn
                    .send_stream(id)
                    .reset(VarInt::from_u32(DOQ_EXCESSIVE_LOAD));
                return;
            }
            c.transfers.insert(id, t);
            pump(&mut q.out, c, id, stats);
        }
        Action::Drop => {
            let _ = c
                .conn
                .send_stream(id)
                .reset(VarInt::from_u32(DOQ_REQUEST_CANCELLED));
        }
    }
}

/// Writes `response` (length-prefixed) on stream `id` and finishes it; what the stream does
/// not take now is kept for later while the connection has room.
fn respond(c: &mut QuicConn, id: StreamId, response: &[u8], stats: &WorkerStats) {
    let room = BUFFERED_MAX.saturating_sub(c.buffered_except(id));
    let mut stream = c.conn.send_stream(id);
    let sent = match stream.write(response) {
        Ok(n) if n == response.len() => {
            let _ = stream.finish();
            return;
        }
        Ok(n) => n,
        Err(quinn_proto::WriteError::Blocked) => 0,
        Err(_) => return,
    };
    // The client does not take what it asked for: kept while there is room.
    if response.len() - sent <= room {
        c.unsent.insert(id, (response.to_vec(), sent));
    } else {
        let _ = stream.reset(VarInt::from_u32(DOQ_EXCESSIVE_LOAD));
        stats.dropped.add(1);
    }
}

impl Quic {
    /// A resolver answer (`frame`: length-prefixed) for stream `stream` of connection
    /// `conn`, if both are still there; the connection is driven at the end of the turn.
    pub(in crate::worker) fn deliver(
        &mut self,
        conn: usize,
        stream: u64,
        frame: &[u8],
        stats: &WorkerStats,
    ) {
        let ch = ConnectionHandle(conn);
        let (Some(c), Ok(v)) = (self.conns.get_mut(&ch), VarInt::from_u64(stream)) else {
            stats.dropped.add(1);
            return;
        };
        respond(c, StreamId::from(v), frame, stats);
        self.touched.push(ch);
    }
}

/// Writes the next messages of stream `id`'s zone transfer, if it has one, while the
/// stream takes them whole (at most [`XFR_MESSAGES_PER_TURN`]); the stream is finished after
/// the last one.
pub(super) fn pump(out: &mut [u8], c: &mut QuicConn, id: StreamId, stats: &WorkerStats) {
    if c.unsent.contains_key(&id) {
        return;
    }
    let Some(mut t) = c.transfers.remove(&id) else {
        return;
    };
    t.set_time(shardns_sys::unix_now());
    let room = (2 + xfr::MESSAGE_SIZE).min(out.len());
    let mut broken = false;
    for _ in 0..XFR_MESSAGES_PER_TURN {
        let Some(len) = t.next_message(&mut out[2..room]) else {
            break;
        };
        out[..2].copy_from_slice(&(len as u16).to_be_bytes());
        stats.xfr_messages.add(1);
        let data = &out[..2 + len];
        match c.conn.send_stream(id).write(data) {
            Ok(n) if n == data.len() => {}
            Ok(n) => {
                c.unsent.insert(id, (data.to_vec(), n));
                break;
            }
            Err(quinn_proto::WriteError::Blocked) => {
                c.unsent.insert(id, (data.to_vec(), 0));
                break;
            }
            Err(_) => {
                broken = true;
                break;
            }
        }
        if t.is_done() {
            break;
        }
    }
    if t.is_done() || broken {
        if !c.unsent.contains_key(&id) && !broken {
            let _ = c.conn.send_stream(id).finish();
        }
        super::super::stream::transfer_ended(Some(c.conn.remote_address()), &t, stats);
        return;
    }
    if !c.unsent.contains_key(&id) {
        c.more = true;
    }
    c.transfers.insert(id, t);
}

/// Writes more of a response the stream did not take at once; the stream is finished
/// when it is all gone, unless a zone transfer has more for it.
pub(super) fn write_unsent(c: &mut QuicConn, id: StreamId) {
    let Some((data, sent)) = c.unsent.get_mut(&id) else {
        return;
    };
    let mut stream = c.conn.send_stream(id);
    match stream.write(&data[*sent..]) {
        Ok(n) => {
            *sent += n;
            if *sent == data.len() {
                if !c.transfers.contains_key(&id) {
                    let _ = stream.finish();
                }
                c.unsent.remove(&id);
            }
        }
        Err(quinn_proto::WriteError::Blocked) => {}
        Err(_) => {
            c.unsent.remove(&id);
        }
    }
}
