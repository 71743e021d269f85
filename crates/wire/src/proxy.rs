//! proxy -- the PROXY protocol version 2 header (HAProxy's `proxy-protocol.txt`, §2.2), which
//! a load balancer (dnsdist, HAProxy) puts before a datagram or at the start of a connection
//! to say who the client is.
//!
//! Only the binary version 2 is read. The parse is bounded by the header's own length field
//! (at most [`MAX_HEADER`] octets are ever looked at), allocates nothing, and takes the
//! addresses only: TLVs are walked to check that they fill the header exactly, then skipped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The 12 octets every version 2 header starts with.
pub const SIGNATURE: [u8; 12] = [
    0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a,
];
/// The fixed part: signature, version and command, family and protocol, length.
pub const FIXED: usize = 16;
/// The longest header accepted, fixed part included. dnsdist sends at most 512 octets of
/// addresses and TLVs by default; HAProxy's TLVs (TLS details) stay below this. A longer
/// one is refused rather than buffered (a connection reads it into its first input buffer).
pub const MAX_HEADER: usize = 1024;

/// What a valid header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proxied {
    /// LOCAL (the proxy's own health check), or PROXY with an unspecified family: the
    /// connection's own peer is the client.
    Local,
    /// PROXY: the client's address and the address it sent to.
    Proxy {
        /// The client.
        source: SocketAddr,
        /// The address the client sent to (the proxy's listener).
        destination: SocketAddr,
    },
}

/// Why a header was refused; [`ProxyError::reason`] is the statistics label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyError {
    /// Not the version 2 signature (no header, or another protocol's bytes).
    Signature,
    /// A version other than 2.
    Version,
    /// A command other than LOCAL and PROXY.
    Command,
    /// An unknown address family or protocol, a UNIX socket address, or the other
    /// transport's protocol (STREAM on a datagram, DGRAM on a connection).
    Family,
    /// The length field is shorter than the family's addresses, or longer than
    /// [`MAX_HEADER`] allows.
    Length,
    /// Fewer octets than the header says it has (a connection may still send the rest).
    Truncated,
    /// A TLV runs past the end of the header.
    Tlv,
}

impl ProxyError {
    /// Every reason, in [`ProxyError::index`] order.
    pub const ALL: [ProxyError; 7] = [
        Self::Signature,
        Self::Version,
        Self::Command,
        Self::Family,
        Self::Length,
        Self::Truncated,
        Self::Tlv,
    ];

    /// The label of `shardns_proxy_errors_total{reason=...}`.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Signature => "signature",
            Self::Version => "version",
            Self::Command => "command",
            Self::Family => "family",
            Self::Length => "length",
            Self::Truncated => "truncated",
            Self::Tlv => "tlv",
        }
    }

    /// A dense index below `ALL.len()`, for counters.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Reads the header at the start of `buf`; `stream` says whether it came on a connection
/// (protocol STREAM expected) or in a datagram (DGRAM). Returns what it says and its length
/// (the DNS message or the TLS records start there).
///
/// On a connection whose first octets have not all arrived, [`ProxyError::Truncated`] means
/// "read more" only while the octets so far are a valid start (the signature and the
/// version are checked as soon as they are there).
pub fn parse(buf: &[u8], stream: bool) -> Result<(Proxied, usize), ProxyError> {
    let seen = buf.len().min(SIGNATURE.len());
    if buf[..seen] != SIGNATURE[..seen] {
        return Err(ProxyError::Signature);
    }
    let Some(&ver_cmd) = buf.get(12) else {
        return Err(ProxyError::Truncated);
    };
    if ver_cmd >> 4 != 2 {
        return Err(ProxyError::Version);
    }
    let local = match ver_cmd & 0x0f {
        0 => true,
        1 => false,
        _ => return Err(ProxyError::Command),
    };
    if buf.len() < FIXED {
        return Err(ProxyError::Truncated);
    }
    let (family, protocol) = (buf[13] >> 4, buf[13] & 0x0f);
    let total = FIXED + usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    if total > MAX_HEADER {
        return Err(ProxyError::Length);
    }
    // 0 UNSPEC, 1 STREAM, 2 DGRAM: the other transport's protocol is a confused proxy.
    let wrong = if stream { 2 } else { 1 };
    if protocol > 2 || protocol == wrong {
        return Err(ProxyError::Family);
    }
    let addresses = match family {
        0 => 0,
        1 => 12,
        2 => 36,
        3 => 216,
        _ => return Err(ProxyError::Family),
    };
    if total < FIXED + addresses {
        return Err(ProxyError::Length);
    }
    let Some(header) = buf.get(..total) else {
        return Err(ProxyError::Truncated);
    };
    skip_tlvs(&header[FIXED + addresses..])?;
    // LOCAL: the addresses (if any) are ignored; UNSPEC: the proxy does not know them.
    if local || family == 0 {
        return Ok((Proxied::Local, total));
    }
    let a = &header[FIXED..FIXED + addresses];
    let (source, destination) = match family {
        1 => {
            let ip = |o: usize| IpAddr::V4(Ipv4Addr::new(a[o], a[o + 1], a[o + 2], a[o + 3]));
            (
                SocketAddr::new(ip(0), port(a, 8)),
                SocketAddr::new(ip(4), port(a, 10)),
            )
        }
        2 => {
            let ip = |o: usize| {
                let mut b = [0u8; 16];
                b.copy_from_slice(&a[o..o + 16]);
                IpAddr::V6(Ipv6Addr::from(b))
            };
            (
                SocketAddr::new(ip(0), port(a, 32)),
                SocketAddr::new(ip(16), port(a, 34)),
            )
        }
        // A UNIX socket's path says nothing a DNS server can act on.
        _ => return Err(ProxyError::Family),
    };
    Ok((
        Proxied::Proxy {
            source,
            destination,
        },
        total,
    ))
}

fn port(a: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([a[at], a[at + 1]])
}

/// Walks the TLVs (type, 16-bit length, value) that follow the addresses: each must end
/// inside the header, and they must fill it.
fn skip_tlvs(mut rest: &[u8]) -> Result<(), ProxyError> {
    while !rest.is_empty() {
        let [_, hi, lo, ..] = *rest else {
            return Err(ProxyError::Tlv);
        };
        let end = 3 + usize::from(u16::from_be_bytes([hi, lo]));
        rest = rest.get(end..).ok_or(ProxyError::Tlv)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
