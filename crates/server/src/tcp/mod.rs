//! tcp -- DNS over TCP state (RFC 7766, RFC 1035 §4.2.2): 2-octet length framing, one
//! connection's buffers, and one worker's table of connections ordered by last activity.
//!
//! Also the count of open connections per client address over all workers
//! ([`ClientCounts`]).
//!
//! Every operation here is O(1): the table is a slab indexed by the epoll token; the
//! least recently active connection (for idle timeouts and eviction) is the head of an
//! intrusive doubly linked list, and the connection that has been receiving one query the
//! longest (for the read timeout) the head of another. Never: socket calls, clocks (time is
//! passed in), locks.

mod clients;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use clients::{ClientCounts, UNTRACKED};
pub(crate) use table::ConnTable;

use shardns_zone::xfr::Transfer;
use std::net::{SocketAddr, TcpStream};
use std::time::Instant;

/// Largest frame: the 2-octet length plus 65535 octets of message.
pub(crate) const MAX_FRAME: usize = 2 + 65535;
/// Size of a fresh connection's input buffer; grows for larger queries.
pub(crate) const INPUT_INITIAL: usize = 1024;

/// Input bytes of one connection, cut into length-prefixed frames.
#[derive(Debug)]
pub(crate) struct FrameBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl FrameBuf {
    /// Uses `buf` (its length, not capacity) as the initial space.
    pub(crate) fn new(mut buf: Vec<u8>) -> Self {
        if buf.len() < 2 {
            buf.resize(INPUT_INITIAL, 0);
        }
        Self {
            buf,
            start: 0,
            end: 0,
        }
    }

    /// Gives the buffer back (for reuse by the next connection).
    pub(crate) fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    /// Bytes received but not yet taken as frames.
    pub(crate) fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Length of the frame at `start`, once its 2-octet prefix is here.
    fn pending_frame_len(&self) -> Option<usize> {
        (self.buffered() >= 2)
            .then(|| u16::from_be_bytes([self.buf[self.start], self.buf[self.start + 1]]) as usize)
    }

    /// Whether a whole frame is buffered.
    pub(crate) fn has_frame(&self) -> bool {
        self.pending_frame_len()
            .is_some_and(|len| self.buffered() >= 2 + len)
    }

    /// Takes the next whole frame; returns the message's range for [`FrameBuf::frame`].
    pub(crate) fn next_frame(&mut self) -> Option<(usize, usize)> {
        let len = self.pending_frame_len()?;
        if self.buffered() < 2 + len {
            return None;
        }
        let range = (self.start + 2, self.start + 2 + len);
        self.start += 2 + len;
        Some(range)
    }

    /// The message bytes of a range from [`FrameBuf::next_frame`] (valid until the next
    /// [`FrameBuf::spare`]).
    pub(crate) fn frame(&self, range: (usize, usize)) -> &[u8] {
        &self.buf[range.0..range.1]
    }

    /// Space to read into: moves unread bytes to the front and grows the buffer if the
    /// frame being received does not fit. The flag says whether it allocated.
    pub(crate) fn spare(&mut self) -> (&mut [u8], bool) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let need = self.pending_frame_len().map_or(2, |len| 2 + len);
        let grew = need > self.buf.len();
        if grew {
            // Grow to the frame, at least doubling, never past one maximal frame.
            let size = need.max(self.buf.len() * 2).min(MAX_FRAME);
            self.buf.resize(size, 0);
        }
        (&mut self.buf[self.end..], grew)
    }

    /// The bytes received and not taken as frames (a PROXY header being read).
    pub(crate) fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The room after the received bytes, never grown: a PROXY header is read into a
    /// fresh buffer, which holds the longest one accepted.
    pub(crate) fn room(&mut self) -> &mut [u8] {
        &mut self.buf[self.end..]
    }

    /// Drops every received byte (the PROXY header, once read).
    pub(crate) fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Records that `n` bytes were read into [`FrameBuf::spare`].
    pub(crate) fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }
}

/// No neighbour in a list.
pub(super) const NIL: u32 = u32::MAX;
/// The list of every connection, least recently active first (idle timeout, eviction).
pub(super) const ACTIVITY: usize = 0;
/// The list of connections holding part of a query, oldest first (read timeout).
pub(super) const PARTIAL: usize = 1;
/// One list per client address (by its [`ClientCounts`] slot), least recently active
/// first: the connection a client at its limit gives up for a new one.
pub(super) const CLIENT: usize = 2;

/// A connection's neighbours in one list.
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    pub(super) prev: u32,
    pub(super) next: u32,
}

pub(super) const UNLINKED: Link = Link {
    prev: NIL,
    next: NIL,
};

/// One client connection.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) v6: bool,
    pub(crate) input: FrameBuf,
    /// Response bytes the socket did not take yet; `output[sent..]` is still to go.
    pub(crate) output: Vec<u8>,
    pub(crate) sent: usize,
    /// The epoll interest currently registered.
    pub(crate) interest: u32,
    /// No more queries are read: the client shut down its sending side (or the read
    /// failed), or the connection reached its query limit. It closes once its output is sent.
    pub(crate) peer_closed: bool,
    /// Queries taken from this connection.
    pub(crate) queries: u32,
    /// From a `server.proxy_protocol_from` address, whose PROXY header is still to come:
    /// nothing else is read until it has (`worker::proxy`).
    pub(crate) proxy_header: bool,
    /// This client's slot in [`ClientCounts`] ([`UNTRACKED`] if none).
    pub(crate) client_slot: u32,
    /// An outgoing zone transfer being streamed; further queries wait until it ends.
    pub(crate) transfer: Option<Box<Transfer>>,
    /// DNS over TLS: the TLS server side between the socket and the framing (`None`:
    /// plain TCP).
    pub(crate) tls: Option<Box<rustls::ServerConnection>>,
    /// DNS over HTTPS: the HTTP/2 server between the TLS plaintext and the queries
    /// (`None`: DoT or plain TCP). Its state is `https_conn`'s, driven by `worker::https`.
    pub(crate) https: Option<Box<crate::https_conn::HttpsConn>>,
    pub(super) last_active: Instant,
    /// When the query being received started (valid while in the partial list).
    pub(super) partial_since: Instant,
    pub(super) in_partial: bool,
    pub(super) links: [Link; 3],
}

impl Conn {
    pub(crate) fn new(
        stream: TcpStream,
        peer: Option<SocketAddr>,
        v6: bool,
        input: Vec<u8>,
        now: Instant,
    ) -> Self {
        Self {
            stream,
            peer,
            v6,
            input: FrameBuf::new(input),
            output: Vec::new(),
            sent: 0,
            interest: 0,
            peer_closed: false,
            queries: 0,
            proxy_header: false,
            client_slot: UNTRACKED,
            transfer: None,
            tls: None,
            https: None,
            last_active: now,
            partial_since: now,
            in_partial: false,
            links: [UNLINKED; 3],
        }
    }

    /// Response bytes waiting for the socket.
    pub(crate) fn unsent(&self) -> usize {
        self.output.len() - self.sent
    }

    /// True while part of a query is buffered and the rest has not arrived.
    pub(crate) fn receiving(&self) -> bool {
        match &self.https {
            Some(h) => h.receiving(),
            None => self.input.buffered() > 0 && !self.input.has_frame(),
        }
    }

    /// True if the connection is in the partial list (see [`ConnTable::set_partial`]).
    pub(crate) fn in_partial(&self) -> bool {
        self.in_partial
    }
}
