//! stats::slots -- which counter slot a query type or an RCODE is counted in, and the label
//! each slot has in the Prometheus text (a transport's slot is `Origin::slot`).

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
