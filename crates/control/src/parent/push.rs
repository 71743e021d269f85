//! parent::push -- the DS set pushed to the parent's primary by dynamic update (RFC 2136,
//! Knot's `ds-push`): one UPDATE of the parent zone (found by asking the server for the SOA
//! above the zone) that deletes the zone's DS RRset and adds the DS set wanted, TSIG-signed
//! with the zone's `ds_push_key`, over TCP. Its retries back off ([`backoff`]).

use super::query;
use shardns_sys::unix_now;
use shardns_wire::tsig::Key;
use shardns_wire::update::Update;
use shardns_wire::{Name, RType, Rcode};
use std::net::SocketAddr;

/// Pushes `ds` (rdata, TTL `ttl`) as the DS set of `apex` to `server`; an empty set
/// deletes the DS RRset (RFC 8078's end). IDs `ids` (two: the SOA query, the update).
/// Returns the parent zone updated, or why not.
pub(super) fn push(
    server: SocketAddr,
    key: Option<&Key>,
    apex: &Name,
    ds: &[Vec<u8>],
    ttl: u32,
    ids: [u16; 2],
) -> Result<Name, String> {
    let zone = query::parent_zone(server, apex, ids[0], key)?;
    let mut update = Update::new(zone.as_ref(), ids[1]);
    update.delete_rrset(apex.as_ref(), RType::DS);
    for rdata in ds {
        update.add(apex.as_ref(), RType::DS, ttl, rdata);
    }
    let mut request = update
        .finish(key, unix_now())
        .map_err(|_| "the update does not fit in a message".to_string())?;
    let answer = query::exchange_tcp(server, request.message()).map_err(|(_, e)| e)?;
    match request.response(&answer, unix_now()) {
        Ok(Some(Rcode::NOERROR)) => Ok(zone),
        Ok(Some(rcode)) => Err(format!("{zone}: answered {rcode}")),
        Ok(None) => Err(format!("{zone}: an answer to another message")),
        Err(e) => Err(format!("{zone}: {e}")),
    }
}

/// Seconds before the next push after `failures` failed pushes in a row: from a thirtieth
/// of the check interval (at least 1 s) doubling each time, at most the interval.
pub(super) fn backoff(failures: u32, interval: u64) -> u64 {
    let first = (interval / 30).max(1);
    let shift = failures.saturating_sub(1).min(20);
    (first << shift).min(interval.max(first))
}
