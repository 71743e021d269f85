//! worker::proxy -- the PROXY protocol v2 header (`server.proxy_protocol_from`) on UDP
//! datagrams and at the start of TCP, TLS and HTTPS connections: the header's source
//! becomes the query's peer (RRL, ACLs, logs, dnstap, the resolver's access control),
//! while the answer goes back to the proxy.
//!
//! Only a listed proxy's header is read: anyone else's bytes are DNS (or TLS) as they come.
//! From a listed proxy, a datagram or connection without a valid header is dropped and
//! counted by reason, as dnsdist and PowerDNS do.

use crate::origin::{Origin, ProxyAddr, Via};
use crate::stats::WorkerStats;
use crate::tcp::Conn;
use shardns_config::AclEntry;
use shardns_wire::proxy::{self, Proxied, ProxyError, FIXED, MAX_HEADER};
use std::io::{self, Read};
use std::net::IpAddr;

/// True if `ip` is one of the configured proxies.
#[inline]
pub(super) fn is_proxy(list: &[AclEntry], ip: IpAddr) -> bool {
    list.iter().any(|e| e.contains(ip))
}

/// A datagram that came on UDP socket `origin` (with its peer decoded): unchanged unless
/// its peer is in `list`; then the DNS message after the header, with the client as the
/// peer and the proxy kept for the way back, or `None` (counted) to drop it.
#[cold]
#[inline(never)]
pub(super) fn datagram<'a>(
    bytes: &'a [u8],
    origin: Origin,
    list: &[AclEntry],
    stats: &WorkerStats,
) -> Option<(&'a [u8], Origin)> {
    let (Some(peer), Via::Udp { socket }) = (origin.peer, origin.via) else {
        return Some((bytes, origin));
    };
    if !is_proxy(list, peer.ip()) {
        return Some((bytes, origin));
    }
    let (proxied, len) = match proxy::parse(bytes, false) {
        Ok(x) => x,
        Err(e) => {
            stats.proxy_errors[e.index()].add(1);
            stats.dropped.add(1);
            return None;
        }
    };
    let client = match proxied {
        Proxied::Proxy { source, .. } => source,
        Proxied::Local => peer,
    };
    let via = Via::UdpProxied {
        socket: u16::try_from(socket).ok().or_else(|| {
            stats.dropped.add(1);
            None
        })?,
        proxy: ProxyAddr::new(peer),
    };
    Some((&bytes[len..], Origin::new(via, origin.v6, Some(client))))
}

/// Reads a connection's PROXY header (into its empty input buffer, never past the header's
/// end, so what follows is left in the socket for TLS or the DNS framing): `Ok(true)` once
/// it is read (the peer replaced by the header's source), `Ok(false)` to wait for more, an
/// error (counted) to close the connection.
pub(super) fn read_header(conn: &mut Conn, stats: &WorkerStats) -> io::Result<bool> {
    let fail = |e: ProxyError| {
        stats.proxy_errors[e.index()].add(1);
        Err(io::Error::other(e.reason()))
    };
    loop {
        let have = conn.input.unread().len();
        // The fixed part first, then exactly the rest its length field names.
        let want = match proxy::parse(conn.input.unread(), true) {
            Ok((proxied, _)) => {
                if let Proxied::Proxy { source, .. } = proxied {
                    conn.peer = Some(source);
                }
                conn.input.clear();
                conn.proxy_header = false;
                return Ok(true);
            }
            Err(ProxyError::Truncated) if have < FIXED => FIXED,
            Err(ProxyError::Truncated) => {
                let u = conn.input.unread();
                FIXED + usize::from(u16::from_be_bytes([u[14], u[15]]))
            }
            Err(e) => return fail(e),
        };
        debug_assert!(want <= MAX_HEADER && want > have);
        let room = conn.input.room();
        let Some(room) = room.get_mut(..want - have) else {
            return fail(ProxyError::Length);
        };
        match (&conn.stream).read(room) {
            // Closed before the header was whole.
            Ok(0) => return fail(ProxyError::Truncated),
            Ok(n) => conn.input.filled(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn proxy_addresses_come_back_in_the_socket_family() {
        let v4: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:53".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:4000".parse().unwrap();
        assert_eq!(ProxyAddr::new(v4).addr(false), v4);
        assert_eq!(ProxyAddr::new(v6).addr(true), v6);
        // A dual-stack socket's peer keeps its mapped form.
        assert_eq!(ProxyAddr::new(mapped).addr(true), mapped);
    }

    #[test]
    fn only_listed_proxies() {
        let list: Vec<AclEntry> = vec!["127.0.0.1/32".parse().unwrap(), "::1".parse().unwrap()];
        assert!(is_proxy(&list, "127.0.0.1".parse().unwrap()));
        assert!(is_proxy(&list, "::1".parse().unwrap()));
        assert!(!is_proxy(&list, "127.0.0.2".parse().unwrap()));
        assert!(!is_proxy(&[], "127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn a_datagram_header_names_the_client_and_keeps_the_proxy() {
        let stats = WorkerStats::default();
        let proxy: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        // Laid out from the spec: signature, PROXY v2, INET/DGRAM, 12 octets of addresses.
        let mut d = b"\r\n\r\n\0\r\nQUIT\n\x21\x12\x00\x0c".to_vec();
        d.extend_from_slice(&[127, 0, 0, 2, 127, 0, 0, 1, 0x30, 0x39, 0, 53]);
        d.extend_from_slice(b"query");
        let list: Vec<AclEntry> = vec!["127.0.0.1".parse().unwrap()];
        let udp = |peer| Origin::new(Via::Udp { socket: 3 }, false, Some(peer));
        let (q, o) = datagram(&d, udp(proxy), &list, &stats).unwrap();
        assert_eq!(q, b"query");
        assert_eq!(o.peer, Some("127.0.0.2:12345".parse().unwrap()));
        assert_eq!(
            o.via,
            Via::UdpProxied {
                socket: 3,
                proxy: ProxyAddr::new(proxy)
            }
        );
        assert_eq!(o.name(), "udp");
        // No header from a listed proxy: dropped, counted.
        assert!(datagram(b"\x12\x34\x01\x00", udp(proxy), &list, &stats).is_none());
        assert_eq!(stats.proxy_errors[ProxyError::Signature.index()].get(), 1);
        assert_eq!(stats.dropped.get(), 1);
        // Not a listed proxy: the bytes are DNS, the peer its own.
        let other: SocketAddr = "127.0.0.2:4000".parse().unwrap();
        let (q, o) = datagram(&d, udp(other), &list, &stats).unwrap();
        assert_eq!(
            (q, o.peer, o.via),
            (&d[..], Some(other), Via::Udp { socket: 3 })
        );
    }
}
