//! secondary::fetch -- one refresh of a zone kept outside the zone set (a resolver's
//! response policy zone), on the caller's thread: the primary's SOA serial, and the zone by
//! AXFR when the serial is newer than the caller's. The same client code as the secondary
//! zones' refreshes (`client`), without their timers, journal or copy on disk.

use super::client::{self, Bounds};
use shardns_wire::{Name, RType};
use shardns_zone::xfr::incoming::{Limits, Outcome};
use shardns_zone::xfr::is_newer;
use shardns_zone::Zone;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Asks `primary` for `apex`'s serial and transfers the zone (AXFR) if it is newer than
/// `have` (RFC 1982), or if there is no `have`. `ids`: random message IDs for the SOA query
/// and the transfer. Every wait is bounded: each message by `idle`, the transfer by
/// `timeout`. `Ok(None)`: nothing newer.
pub fn fetch(
    primary: SocketAddr,
    apex: &Name,
    have: Option<u32>,
    ids: [u16; 2],
    idle: Duration,
    timeout: Duration,
) -> Result<Option<Zone>, String> {
    let serial = client::soa_serial(primary, None, apex, None, ids[0], idle)
        .map_err(|e| format!("SOA query to {primary}: {e}"))?;
    if have.is_some_and(|h| !is_newer(serial, h)) {
        return Ok(None);
    }
    let bounds = Bounds {
        deadline: Instant::now() + timeout,
        idle,
    };
    let mut bytes = 0;
    let done = client::transfer(
        primary,
        None,
        apex,
        RType::AXFR,
        None,
        None,
        ids[1],
        Limits::default(),
        bounds,
        &mut bytes,
    )
    .map_err(|e| format!("AXFR from {primary}: {e}"))?;
    match done.outcome {
        Outcome::Zone { zone, .. } => Ok(Some(zone)),
        Outcome::SoaOnly(s) => Err(format!("AXFR from {primary}: only the SOA ({s})")),
    }
}
