//! dnstap::proto -- the dnstap protobuf messages, encoded by hand.
//!
//! dnstap.proto (the dnstap project's schema, proto2) has two messages we write: `Dnstap`
//! (identity = 1, version = 2, message = 14, type = 15, always MESSAGE = 1) and `Message`
//! (type = 1, socket_family = 2, socket_protocol = 3, query_address = 4, query_port = 6,
//! query_time_sec = 8, query_time_nsec = 9 (fixed32), query_message = 10,
//! response_time_sec = 12, response_time_nsec = 13 (fixed32), response_message = 14,
//! policy = 15), and in `Policy` (added to the schema in 2021 for response policies:
//! type = 1, action = 3, match = 4, value = 5); `Dnstap.extra` = 3 carries the policy
//! zone's name. That
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

/// `Policy.Action` values.
pub(crate) const POLICY_NXDOMAIN: u8 = 1;
pub(crate) const POLICY_NODATA: u8 = 2;
pub(crate) const POLICY_PASS: u8 = 3;
pub(crate) const POLICY_DROP: u8 = 4;
pub(crate) const POLICY_TRUNCATE: u8 = 5;
pub(crate) const POLICY_LOCAL_DATA: u8 = 6;

/// `Policy.Match` values.
pub(crate) const MATCH_QNAME: u8 = 1;
pub(crate) const MATCH_CLIENT_IP: u8 = 2;
pub(crate) const MATCH_RESPONSE_IP: u8 = 3;
pub(crate) const MATCH_NS_NAME: u8 = 4;
pub(crate) const MATCH_NS_IP: u8 = 5;

/// `Policy.type` for a response policy zone.
const POLICY_TYPE_RPZ: &[u8] = b"RPZ";

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
    /// A response policy applied to the message.
    pub(crate) policy: Option<PolicyTap<'a>>,
}

/// `Message.policy`: a response policy zone's hit (type "RPZ").
#[derive(Debug, Clone, Copy)]
pub(crate) struct PolicyTap<'a> {
    /// A `POLICY_*` action.
    pub(crate) action: u8,
    /// A `MATCH_*` value: what matched.
    pub(crate) matched: u8,
    /// The matched value: the query name in wire form, or the address's octets.
    pub(crate) value: Option<&'a [u8]>,
    /// The policy zone's name (presentation form), in `Dnstap.extra`.
    pub(crate) zone: &'a [u8],
}

impl PolicyTap<'_> {
    fn len(&self) -> usize {
        bytes_len(POLICY_TYPE_RPZ.len()) + 2 + 2 + self.value.map_or(0, |v| bytes_len(v.len()))
    }

    fn write(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, POLICY_TYPE_RPZ);
        put_uint(out, 3, self.action.into());
        put_uint(out, 4, self.matched.into());
        if let Some(v) = self.value {
            put_bytes(out, 5, v);
        }
    }
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
        if let Some(p) = &self.policy {
            n += bytes_len(p.len());
        }
        n
    }

    /// The size of the `Dnstap` message around it.
    fn dnstap_len(&self, identity: &[u8], version: &[u8]) -> usize {
        let extra = self.policy.map_or(0, |p| bytes_len(p.zone.len()));
        bytes_len(identity.len())
            + bytes_len(version.len())
            + extra
            + bytes_len(self.message_len())
            + 2
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
        if let Some(p) = &self.policy {
            put_bytes(out, 3, p.zone);
        }
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
        if let Some(p) = &self.policy {
            put_key(out, 15, LEN);
            put_varint(out, p.len() as u64);
            p.write(out);
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
            policy: None,
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
    fn a_policy_goes_in_the_message_and_its_zone_in_extra() {
        let e = Event {
            kind: CLIENT_RESPONSE,
            family: INET,
            protocol: UDP,
            peer: Some("192.0.2.1:40000".parse().unwrap()),
            query_time: (1_700_000_000, 1),
            query: None,
            response_time: Some((1_700_000_000, 2)),
            response: Some(&[9, 9]),
            policy: Some(PolicyTap {
                action: POLICY_NXDOMAIN,
                matched: MATCH_QNAME,
                value: Some(b"\x01a\x00"),
                zone: b"rpz.",
            }),
        };
        let mut out = Vec::with_capacity(e.frame_len(b"id", b"v1"));
        e.write_frame(b"id", b"v1", &mut out);
        assert_eq!(out.len(), e.frame_len(b"id", b"v1"));
        // identity, version, extra = "rpz.", then the message.
        assert_eq!(&out[12..18], &[0x1a, 4, b'r', b'p', b'z', b'.']);
        assert_eq!(out[18], 0x72);
        // The message ends with response_message, then policy (15): type "RPZ", action 1,
        // match 1, value; then Dnstap.type.
        let policy = [
            0x7a, 14, 0x0a, 3, b'R', b'P', b'Z', 0x18, 1, 0x20, 1, 0x2a, 3, 1, b'a', 0,
        ];
        let end = out.len() - 2;
        assert_eq!(&out[end - policy.len()..end], &policy);
        assert_eq!(
            &out[end - policy.len() - 4..end - policy.len()],
            &[0x72, 2, 9, 9]
        );
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
