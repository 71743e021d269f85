//! stats::slots -- which counter slot a query type, an RCODE or a transport is counted in,
//! and the label each slot has in the Prometheus text.

use shardns_wire::Transport;
use shardns_wire::{RType, Rcode};

/// Query types counted on their own; everything else is `other`.
pub(super) const QTYPES: [RType; 18] = [
    RType::A,
    RType::NS,
    RType::CNAME,
    RType::SOA,
    RType::PTR,
    RType::MX,
    RType::TXT,
    RType::AAAA,
    RType::SRV,
    RType::NAPTR,
    RType::DS,
    RType::DNSKEY,
    RType::SVCB,
    RType::HTTPS,
    RType::CAA,
    RType::ANY,
    RType::AXFR,
    RType::IXFR,
];
/// The slot after the named types counts all other types.
pub(super) const QTYPE_OTHER: usize = QTYPES.len();
pub(super) const QTYPE_SLOTS: usize = QTYPE_OTHER + 1;

/// The counter slot for a query type (`QTYPE_OTHER` for the rest).
#[inline]
pub(super) fn qtype_index(t: RType) -> usize {
    match t.0 {
        1 => 0,
        2 => 1,
        5 => 2,
        6 => 3,
        12 => 4,
        15 => 5,
        16 => 6,
        28 => 7,
        33 => 8,
        35 => 9,
        43 => 10,
        48 => 11,
        64 => 12,
        65 => 13,
        257 => 14,
        255 => 15,
        252 => 16,
        251 => 17,
        _ => QTYPE_OTHER,
    }
}

pub(super) fn qtype_label(slot: usize) -> String {
    if slot == QTYPE_OTHER {
        "other".to_string()
    } else {
        QTYPES[slot].to_string()
    }
}

/// RCODE slots: 0..=15 on their own, then every extended RCODE together.
pub(super) const RCODE_SLOTS: usize = 17;

#[inline]
pub(super) fn rcode_index(r: Rcode) -> usize {
    (r.0 as usize).min(RCODE_SLOTS - 1)
}

pub(super) fn rcode_label(slot: usize) -> String {
    if slot == RCODE_SLOTS - 1 {
        "other".to_string()
    } else {
        Rcode(slot as u16).to_string()
    }
}

/// The path a query came in on: socket UDP, AF_XDP or TCP, over IPv4 or IPv6. A statistics
/// label (`transport` and `family` in the Prometheus output); [`QueryPath::transport`] is the
/// [`Transport`] whose size rules the response follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueryPath {
    Udp4 = 0,
    Udp6 = 1,
    Tcp4 = 2,
    Tcp6 = 3,
    /// UDP read from an AF_XDP socket (`server.xdp_interface`).
    Xdp4 = 4,
    Xdp6 = 5,
    /// DNS over TLS (RFC 7858): stream rules, encrypted.
    Tls4 = 6,
    Tls6 = 7,
    /// DNS over QUIC (RFC 9250): stream rules, encrypted.
    Quic4 = 8,
    Quic6 = 9,
    /// DNS over HTTPS (RFC 8484): stream rules, encrypted.
    Https4 = 10,
    Https6 = 11,
}

pub(super) const QUERY_PATHS: usize = 12;
pub(super) const QUERY_PATH_LABELS: [(&str, &str); QUERY_PATHS] = [
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

impl QueryPath {
    pub(crate) fn udp(v6: bool) -> Self {
        if v6 {
            Self::Udp6
        } else {
            Self::Udp4
        }
    }
    pub(crate) fn xdp(v6: bool) -> Self {
        if v6 {
            Self::Xdp6
        } else {
            Self::Xdp4
        }
    }
    pub(crate) fn tcp(v6: bool) -> Self {
        if v6 {
            Self::Tcp6
        } else {
            Self::Tcp4
        }
    }
    pub(crate) fn tls(v6: bool) -> Self {
        if v6 {
            Self::Tls6
        } else {
            Self::Tls4
        }
    }
    pub(crate) fn quic(v6: bool) -> Self {
        if v6 {
            Self::Quic6
        } else {
            Self::Quic4
        }
    }
    pub(crate) fn https(v6: bool) -> Self {
        if v6 {
            Self::Https6
        } else {
            Self::Https4
        }
    }
    /// True for the encrypted transports (padding applies, RFC 8467).
    #[inline]
    pub(crate) fn encrypted(self) -> bool {
        matches!(
            self,
            Self::Tls4 | Self::Tls6 | Self::Quic4 | Self::Quic6 | Self::Https4 | Self::Https6
        )
    }
    pub(crate) fn name(self) -> &'static str {
        QUERY_PATH_LABELS[self as usize].0
    }
    /// Datagram or stream rules for the response (AF_XDP carries UDP).
    #[inline]
    pub(crate) fn transport(self) -> Transport {
        match self {
            Self::Tcp4
            | Self::Tcp6
            | Self::Tls4
            | Self::Tls6
            | Self::Quic4
            | Self::Quic6
            | Self::Https4
            | Self::Https6 => Transport::Tcp,
            _ => Transport::Udp,
        }
    }
}
