//! Authoritative answering: one query in, one response out, into the caller's buffer.

use crate::db::ZoneSet;
use shardns_wire::{RType, Rcode};

/// How the query arrived; decides the size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: 512 octets without EDNS, else the client's size capped by ours.
    Udp,
    /// TCP: up to 65535 octets.
    Tcp,
}

/// What was answered, for statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Response length in `out`.
    pub len: usize,
    /// Response code (extended).
    pub rcode: Rcode,
    /// The question's type (`None` if there was no readable question).
    pub qtype: Option<RType>,
    /// TC was set.
    pub truncated: bool,
}

/// Answers `query` into `out`. `None` means drop the datagram (too short for a header, or a
/// response). `out` should hold 65535 octets for TCP; for UDP at least 4096.
pub fn respond(zones: &ZoneSet, query: &[u8], transport: Transport, out: &mut [u8]) -> Option<Outcome> {
    let _ = (zones, query, transport, out);
    None
}
