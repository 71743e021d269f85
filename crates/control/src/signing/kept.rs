//! signing::kept -- a served signed zone written as its kept copy (`state/<zone>.signed`)
//! straight from the [`Zone`], name by name, without a list of its records beside it: how a
//! zone signed as it arrives is kept once it is served (`secondary::keeper`).
//!
//! The copy must be in canonical order (RFC 4034 §6.1; the reader takes nothing else). A
//! zone built from a signer's sorted output has its names in that order; each name's
//! records are sorted here (type, then rdata: each covered type's RRSIGs are a set of their
//! own in the zone). A zone whose names are not in order (one patched by an incremental
//! signing adds its new names at the end) is written through a sorted list instead.

use shardns_dnssec::RecordList;
use shardns_wire::{rdata, Class, RType};
use shardns_zone::Zone;
use std::io::{self, Write};

/// True if the zone's names with records come in canonical order, node by node.
pub(super) fn in_canonical_order(zone: &Zone) -> bool {
    let mut last = None;
    for id in 0..zone.node_count() as u32 {
        let node = zone.node(id);
        if node.rrsets().next().is_none() {
            continue;
        }
        let name = node.name();
        if last.is_some_and(|l: shardns_wire::NameRef<'_>| !l.canonical_cmp(&name).is_lt()) {
            return false;
        }
        last = Some(name);
    }
    true
}

/// Writes every record of `zone`, one a line, in canonical order; the names must be in
/// order already ([`in_canonical_order`]).
pub(super) fn write_records(w: &mut impl Write, zone: &Zone) -> io::Result<()> {
    let mut records: Vec<(RType, u32, &[u8])> = Vec::new();
    let mut line = String::with_capacity(256);
    for id in 0..zone.node_count() as u32 {
        let node = zone.node(id);
        records.clear();
        for set in node.rrsets() {
            records.extend(set.rdatas().map(|d| (set.rtype, set.ttl, d)));
        }
        records.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2.cmp(b.2)));
        for &(rtype, ttl, data) in &records {
            use std::fmt::Write as _;
            line.clear();
            let _ = write!(line, "{} {ttl} {} {rtype} ", node.name(), Class::IN);
            let _ = rdata::fmt_text(rtype, data, &mut line);
            line.push('\n');
            w.write_all(line.as_bytes())?;
        }
    }
    Ok(())
}

/// The records of `zone` as a list in canonical order, for a zone whose names are not in
/// order.
pub(super) fn sorted_list(zone: &Zone) -> RecordList {
    let mut records = RecordList::with_capacity(zone.record_count(), 0);
    for id in 0..zone.node_count() as u32 {
        let node = zone.node(id);
        for set in node.rrsets() {
            let at = records.push_name(node.name());
            for data in set.rdatas() {
                records.push(at, set.rtype, Class::IN, set.ttl, data);
            }
        }
    }
    records.sort();
    records
}
