//! origin -- where a query came from and how its answer leaves: the one type a transport
//! is spelled in.
//!
//! An [`Origin`] is made by the transport that read the query (`worker::udp`,
//! `worker::xdp_port`, `worker::stream`, `worker::quic`, `worker::https`), goes with the
//! query through `dispatch`, and is kept by the resolver role for an answer that comes later
//! (`recursion::Recursion::query`), which leaves through the same door as an early one
//! (`dispatch::Exit::send`). Everything else a transport decides is derived from it by a
//! method: the [`Transport`] whose size rules the response follows, the statistics slot
//! (and its labels), whether padding applies, and, in `dnstap`, the protocol and family.
//! A new transport is a new [`Via`] case: the compiler then points at every match to extend.
//!
//! Small and `Copy` (no allocation, nothing dropped): it is made for every query.

use shardns_wire::Transport;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Where a query came from: the transport with its handle on the client, the address family
/// and the client's address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    /// The transport and the worker's handle on the client (where a later answer goes).
    pub(crate) via: Via,
    /// Over IPv6 (the statistics' and dnstap's family).
    pub(crate) v6: bool,
    /// The client's address, when the transport decoded it (UDP decodes it only when
    /// something needs it); behind a PROXY protocol proxy, the client its header named.
    pub(crate) peer: Option<SocketAddr>,
}

/// A transport, with the worker's handle on the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// Listening UDP socket `socket` of the worker.
    Udp { socket: usize },
    /// Listening UDP socket `socket`, through a PROXY protocol proxy (`server.proxy_protocol_from`):
    /// the answer goes to `proxy`, the peer is the client the header named.
    UdpProxied { socket: u16, proxy: ProxyAddr },
    /// An AF_XDP frame for the address of UDP socket `socket`: answered in place in the
    /// frame; a later (resolver) answer leaves through that socket.
    Xdp { socket: usize },
    /// TCP connection (`slot`, `generation`) of the worker.
    Tcp { slot: u32, generation: u32 },
    /// DNS over TLS (RFC 7858) on TCP connection (`slot`, `generation`) of the worker.
    Tls { slot: u32, generation: u32 },
    /// DNS over QUIC (RFC 9250): stream `stream` of connection `conn` (a quinn-proto
    /// connection handle) of the worker.
    Quic { conn: usize, stream: u64 },
    /// DNS over HTTPS (RFC 8484): HTTP/2 stream `stream` of TLS connection (`slot`,
    /// `generation`) of the worker.
    Https {
        slot: u32,
        generation: u32,
        stream: u32,
    },
}

/// A proxy's address, kept small enough for an [`Origin`] (the way back of a later UDP
/// answer; the client's address is the origin's peer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProxyAddr {
    ip: [u8; 16],
    port: u16,
}

impl ProxyAddr {
    pub(crate) fn new(a: SocketAddr) -> Self {
        let ip = match a.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        };
        Self { ip, port: a.port() }
    }

    /// The address again, in the family of the socket the datagram came on (`v6`).
    pub(crate) fn addr(&self, v6: bool) -> SocketAddr {
        let ip = Ipv6Addr::from(self.ip);
        match ip.to_ipv4_mapped() {
            Some(v4) if !v6 => SocketAddr::new(v4.into(), self.port),
            _ => SocketAddr::new(ip.into(), self.port),
        }
    }
}

/// Statistics slots: one per transport and address family.
pub(crate) const SLOTS: usize = 12;
/// The labels of each slot (`transport`, `family` in the Prometheus output), by
/// [`Origin::slot`].
pub(crate) const SLOT_LABELS: [(&str, &str); SLOTS] = [
    ("udp", "4"),
    ("udp", "6"),
    ("tcp", "4"),
    ("tcp", "6"),
    ("xdp", "4"),
    ("xdp", "6"),
    ("tls", "4"),
    ("tls", "6"),
    ("quic", "4"),
    ("quic", "6"),
    ("https", "4"),
    ("https", "6"),
];

impl Origin {
    /// A query from `via` over IPv6 (`v6`) or IPv4, from `peer`.
    #[inline]
    pub(crate) fn new(via: Via, v6: bool, peer: Option<SocketAddr>) -> Self {
        Self { via, v6, peer }
    }

    /// Datagram or stream rules for the response (AF_XDP carries UDP).
    #[inline]
    pub(crate) fn transport(&self) -> Transport {
        match self.via {
            Via::Udp { .. } | Via::UdpProxied { .. } | Via::Xdp { .. } => Transport::Udp,
            Via::Tcp { .. } | Via::Tls { .. } | Via::Quic { .. } | Via::Https { .. } => {
                Transport::Tcp
            }
        }
    }

    /// True for the stream transports (TCP, TLS, QUIC, HTTPS).
    #[inline]
    pub(crate) fn is_stream(&self) -> bool {
        self.transport() == Transport::Tcp
    }

    /// True for the encrypted transports (padding applies, RFC 8467).
    #[inline]
    pub(crate) fn encrypted(&self) -> bool {
        matches!(
            self.via,
            Via::Tls { .. } | Via::Quic { .. } | Via::Https { .. }
        )
    }

    /// The statistics slot (an index below [`SLOTS`]; its labels in [`SLOT_LABELS`]).
    #[inline]
    pub(crate) fn slot(&self) -> usize {
        let kind = match self.via {
            Via::Udp { .. } | Via::UdpProxied { .. } => 0,
            Via::Tcp { .. } => 1,
            Via::Xdp { .. } => 2,
            Via::Tls { .. } => 3,
            Via::Quic { .. } => 4,
            Via::Https { .. } => 5,
        };
        2 * kind + usize::from(self.v6)
    }

    /// The transport's name in logs and statistics (`udp`, `xdp`, `tcp`, `tls`, `quic`,
    /// `https`).
    pub(crate) fn name(&self) -> &'static str {
        SLOT_LABELS[self.slot()].0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_their_labels() {
        let peer = None;
        let cases = [
            (Via::Udp { socket: 1 }, "udp"),
            (Via::Xdp { socket: 1 }, "xdp"),
            (
                Via::Tcp {
                    slot: 1,
                    generation: 2,
                },
                "tcp",
            ),
            (
                Via::Tls {
                    slot: 1,
                    generation: 2,
                },
                "tls",
            ),
            (Via::Quic { conn: 1, stream: 4 }, "quic"),
            (
                Via::Https {
                    slot: 1,
                    generation: 2,
                    stream: 3,
                },
                "https",
            ),
        ];
        let mut seen = [false; SLOTS];
        for (via, name) in cases {
            for v6 in [false, true] {
                let o = Origin::new(via, v6, peer);
                assert_eq!(SLOT_LABELS[o.slot()], (name, if v6 { "6" } else { "4" }));
                assert!(!seen[o.slot()]);
                seen[o.slot()] = true;
                let stream = !matches!(via, Via::Udp { .. } | Via::Xdp { .. });
                assert_eq!(o.is_stream(), stream);
                assert_eq!(o.encrypted(), stream && !matches!(via, Via::Tcp { .. }));
            }
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn origin_stays_small() {
        // Made for every query and passed by value: no larger than the three values it
        // replaced (a path byte, the peer, the later answer's handle).
        assert!(size_of::<Origin>() <= 64);
    }
}
