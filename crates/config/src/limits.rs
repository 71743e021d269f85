//! config::limits -- `[limits]`: bounds against abusive clients and primaries.

use super::validate::{batch, per_client, positive, positive_u32, positive_u64, udp_max_response};
use serde::Deserialize;

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Limits {
    /// Open TCP connections per worker; at the limit the least recently active one is
    /// closed to make room.
    #[serde(deserialize_with = "positive")]
    pub tcp_connections_per_worker: usize,
    /// Open TCP connections over all workers; at the limit new connections are closed.
    #[serde(deserialize_with = "positive")]
    pub tcp_connections: usize,
    /// Milliseconds a TCP connection may stay without traffic before it is closed.
    #[serde(deserialize_with = "positive_u64")]
    pub tcp_idle_timeout_ms: u64,
    /// Datagrams read (and answered) per recvmmsg/sendmmsg call, 1 to 1024.
    #[serde(deserialize_with = "batch")]
    pub udp_batch: usize,
    /// SO_RCVBUF for UDP sockets in bytes; past `net.core.rmem_max` only with CAP_NET_ADMIN
    /// (SO_RCVBUFFORCE). 0 keeps the system default. Room for bursts: a full buffer drops
    /// queries.
    pub udp_receive_buffer: usize,
    /// Largest UDP response, 512 to 1232 octets (also capped by the client's EDNS size;
    /// 512 without EDNS). A longer answer is sent truncated (TC=1).
    #[serde(deserialize_with = "udp_max_response")]
    pub udp_max_response: usize,
    /// Open TCP connections per client address over all workers; 0 means no limit.
    #[serde(deserialize_with = "per_client")]
    pub tcp_connections_per_client: usize,
    /// Milliseconds a client may take to send one whole TCP query once it has started
    /// (the first byte of its length prefix, or the end of the query before it).
    #[serde(deserialize_with = "positive_u64")]
    pub tcp_read_timeout_ms: u64,
    /// Queries answered on one TCP connection before it is closed; 0 means no limit.
    pub tcp_queries_per_connection: u32,
    /// Milliseconds an incoming zone transfer (a secondary zone's AXFR or IXFR) may take
    /// from connect to the last message.
    #[serde(deserialize_with = "positive_u64")]
    pub transfer_in_timeout_ms: u64,
    /// Milliseconds one message of an incoming zone transfer (or the answer to an SOA
    /// query over TCP) may take to come whole: a primary that makes no progress for so long
    /// ends the transfer.
    #[serde(deserialize_with = "positive_u64")]
    pub transfer_in_idle_ms: u64,
    /// Refreshes of secondary zones (SOA queries and transfers) run at once, each on a
    /// transfer thread of its own (BIND's `transfers-in`).
    #[serde(deserialize_with = "positive_u32")]
    pub transfers_in: u32,
    /// Of those, how many may ask one primary (address) at once (BIND's
    /// `transfers-per-ns`): a slow primary holds back only its own zones.
    #[serde(deserialize_with = "positive_u32")]
    pub transfers_in_per_primary: u32,
    /// Messages one incoming zone transfer may have.
    #[serde(deserialize_with = "positive_u32")]
    pub transfer_in_max_messages: u32,
    /// Records one incoming zone transfer may have.
    #[serde(deserialize_with = "positive_u64")]
    pub transfer_in_max_records: u64,
    /// Octets one incoming zone transfer may have (messages received, and records kept
    /// with their names uncompressed).
    #[serde(deserialize_with = "positive_u64")]
    pub transfer_in_max_bytes: u64,
    /// Milliseconds a DNS-over-TLS client may take to finish its TLS handshake from the
    /// moment its connection is accepted. TLS connections count against the TCP
    /// connection limits and follow the TCP idle and read timeouts once the handshake is
    /// done.
    #[serde(deserialize_with = "positive_u64")]
    pub tls_handshake_timeout_ms: u64,
    /// HTTP/2 streams (DoH queries) one DNS-over-HTTPS connection may have open at once
    /// (SETTINGS_MAX_CONCURRENT_STREAMS); a stream past it is refused.
    #[serde(deserialize_with = "positive_u32")]
    pub https_streams_per_connection: u32,
    /// HTTP/2 streams a DNS-over-HTTPS client may reset (RST_STREAM) per connection and
    /// second before the connection is closed with GOAWAY ENHANCE_YOUR_CALM (the "rapid
    /// reset" flood, CVE-2023-44487).
    #[serde(deserialize_with = "positive_u32")]
    pub https_resets_per_second: u32,
    /// Dynamic updates (RFC 2136) one requester (the TSIG key, else the client's /32 or
    /// /64) may send per second, on average; past it (and the burst) an update is
    /// REFUSED. 0 means no limit. The operator's transactions are not limited.
    pub updates_per_second: u32,
    /// Updates one requester may send at once after a quiet spell (the token bucket's size).
    #[serde(deserialize_with = "positive_u32")]
    pub updates_burst: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            tcp_connections_per_worker: 1024,
            tcp_connections: 4096,
            tcp_idle_timeout_ms: 10_000,
            udp_batch: 64,
            udp_receive_buffer: 8 << 20,
            udp_max_response: 1232,
            tcp_connections_per_client: 128,
            tcp_read_timeout_ms: 3_000,
            tcp_queries_per_connection: 0,
            transfer_in_timeout_ms: 300_000,
            transfer_in_idle_ms: 10_000,
            transfers_in: 10,
            transfers_in_per_primary: 2,
            transfer_in_max_messages: 1_000_000,
            transfer_in_max_records: 50_000_000,
            transfer_in_max_bytes: 2 << 30,
            tls_handshake_timeout_ms: 5_000,
            https_streams_per_connection: 100,
            https_resets_per_second: 100,
            updates_per_second: 100,
            updates_burst: 200,
        }
    }
}
