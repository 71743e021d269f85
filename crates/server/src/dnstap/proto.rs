//! dnstap::proto -- the dnstap protobuf messages, encoded by hand.
//!
//! dnstap.proto (the dnstap project's schema, proto2) has two messages we write: `Dnstap`
//! (identity = 1, version = 2, message = 14, type = 15, always MESSAGE = 1) and `Message`
//! (type = 1, socket_family = 2, socket_protocol = 3, query_address = 4, query_port = 6,
//! query_time_sec = 8, query_time_nsec = 9 (fixed32), query_message = 10,
//! response_time_sec = 12, response_time_nsec = 13 (fixed32), response_message = 14). That
//! is a handful of varints, fixed32s and length-delimited byte strings, so no protobuf
//! crate or code generation: [`Event::frame_len`] computes the exact size first (the frame
//! and the nested message are length-prefixed), and [`Event::write_frame`] appends into a
//! buffer that has the room, without allocating.

use std::net::{IpAddr, SocketAddr};

/// `Message.Type` values.
pub(crate) const AUTH_QUERY: u8 = 1;
pub(crate) const AUTH_RESPONSE: u8 = 2;
pub(crate) const CLIENT_QUERY: u8 = 5;
pub(crate) const CLIENT_RESPONSE: u8 = 6;

/// `SocketFamily` values.
pub(crate) const INET: u8 = 1;
pub(crate) const INET6: u8 = 2;

/// `SocketProtocol` values.
pub(crate) const UDP: u8 = 1;
pub(crate) const TCP: u8 = 2;
pub(crate) const DOT: u8 = 3;
pub(crate) const DOH: u8 = 4;
pub(crate) const DOQ: u8 = 7;

/// Wire types.
const VARINT: u8 = 0;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// One dnstap message: a query or a response seen by the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event<'a> {
    /// `AUTH_QUERY` or `AUTH_RESPONSE`.
    pub(crate) kind: u8,
    pub(crate) family: u8,
    pub(crate) protocol: u8,
    /// The client.
    pub(crate) peer: Option<SocketAddr>,
    /// Seconds and nanoseconds since the epoch.
    pub(crate) query_time: (u64, u32),
    pub(crate) query: Option<&'a [u8]>,
    pub(crate) response_time: Option<(u64, u32)>,
    pub(crate) response: Option<&'a [u8]>,
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A field key; every field number here is below 16, so one octet.
fn put_key(out: &mut Vec<u8>, field: u8, wire: u8) {
    out.push((field << 3) | wire);
}

fn bytes_len(n: usize) -> usize {
    1 + varint_len(n as u64) + n
}

fn put_bytes(out: &mut Vec<u8>, field: u8, b: &[u8]) {
    put_key(out, field, LEN);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_uint(out: &mut Vec<u8>, field: u8, v: u64) {
    put_key(out, field, VARINT);
    put_varint(out, v);
}

fn put_fixed32(out: &mut Vec<u8>, field: u8, v: u32) {
    put_key(out, field, FIXED32);
    out.extend_from_slice(&v.to_le_bytes());
}

/// The client's address as dnstap carries it: 4 or 16 octets.
fn address(peer: &SocketAddr) -> ([u8; 16], usize) {
    let mut a = [0; 16];
    match peer.ip() {
        IpAddr::V4(v4) => {
            a[..4].copy_from_slice(&v4.octets());
            (a, 4)
        }
        IpAddr::V6(v6) => {
            a.copy_from_slice(&v6.octets());
            (a, 16)
        }
    }
}

impl Event<'_> {
    /// The size of the `Message`.
    fn message_len(&self) -> usize {
        let mut n = 2 + 2 + 2; // type, family, protocol: one-octet keys and values
        if let Some(p) = &self.peer {
            n += bytes_len(address(p).1) + 1 + varint_len(p.port() as u64);
        }
        n += 1 + varint_len(self.query_time.0) + 5;
        if let Some(q) = self.query {
            n += bytes_len(q.len());
        }
        if let Some((secs, _)) = self.response_time {
            n += 1 + varint_len(secs) + 5;
        }
        if let Some(r) = self.response {
            n += bytes_len(r.len());
        }
        n
    }

    /// The size of the `Dnstap` message around it.
    fn dnstap_len(&self, identity: &[u8], version: &[u8]) -> usize {
        bytes_len(identity.len()) + bytes_len(version.len()) + bytes_len(self.message_len()) + 2
    }

    /// The size of the Frame Streams data frame: a 4-octet length, then the `Dnstap`.
    pub(crate) fn frame_len(&self, identity: &[u8], version: &[u8]) -> usize {
        4 + self.dnstap_len(identity, version)
    }

    /// Appends the data frame; `out` must have [`Self::frame_len`] octets of room.
    pub(crate) fn write_frame(&self, identity: &[u8], version: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&(self.dnstap_len(identity, version) as u32).to_be_bytes());
        put_bytes(out, 1, identity);
        put_bytes(out, 2, version);
        put_key(out, 14, LEN);
        put_varint(out, self.message_len() as u64);
        put_uint(out, 1, self.kind.into());
        put_uint(out, 2, self.family.into());
        put_uint(out, 3, self.protocol.into());
        if let Some(p) = &self.peer {
            let (a, n) = address(p);
            put_bytes(out, 4, &a[..n]);
            put_uint(out, 6, p.port().into());
        }
        put_uint(out, 8, self.query_time.0);
        put_fixed32(out, 9, self.query_time.1);
        if let Some(q) = self.query {
            put_bytes(out, 10, q);
        }
        if let Some((secs, nanos)) = self.response_time {
            put_uint(out, 12, secs);
            put_fixed32(out, 13, nanos);
        }
        if let Some(r) = self.response {
            put_bytes(out, 14, r);
        }
        // Dnstap.type = MESSAGE, last (fields may come in any order).
        put_uint(out, 15, 1);
        debug_assert_eq!(out.len() - start, self.frame_len(identity, version));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_matches_its_computed_length_and_layout() {
        let query = [0xab; 200];
        let e = Event {
            kind: AUTH_RESPONSE,
            family: INET6,
            protocol: UDP,
            peer: Some("[2001:db8::1]:40000".parse().unwrap()),
            query_time: (1_700_000_000, 123_456_789),
            query: Some(&query),
            response_time: Some((1_700_000_000, 123_456_999)),
            response: Some(&[1, 2, 3]),
        };
        let mut out = Vec::with_capacity(e.frame_len(b"id", b"v1"));
        e.write_frame(b"id", b"v1", &mut out);
        assert_eq!(out.len(), e.frame_len(b"id", b"v1"));
        let body = u32::from_be_bytes(out[..4].try_into().unwrap()) as usize;
        assert_eq!(body, out.len() - 4);
        // identity, version, then the nested message's key.
        assert_eq!(&out[4..12], &[0x0a, 2, b'i', b'd', 0x12, 2, b'v', b'1']);
        assert_eq!(out[12], 0x72);
        // Dnstap.type = MESSAGE closes it.
        assert_eq!(&out[out.len() - 2..], &[0x78, 1]);
        // The response message is the nested message's last field.
        assert_eq!(&out[out.len() - 7..out.len() - 2], &[0x72, 3, 1, 2, 3]);
    }

    #[test]
    fn varints_are_sized_right() {
        for v in [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
        }
    }
}
