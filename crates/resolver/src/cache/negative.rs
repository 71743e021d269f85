//! Negative caching (RFC 2308): NXDOMAIN and NODATA entries with the SOA that proves them.
//!
//! Owns: [`Cache::insert_negative`], the borrowed [`Soa`], the negative TTL rule
//! ([`negative_ttl`], RFC 2308 §5) and the type number NXDOMAIN entries are kept under.

use shardns_wire::{NameRef, RType, Record};

use super::insert::dnssec_bytes;
use super::set::{push_rdata, DnssecRr, Kind};
use super::{Cache, Rank};
use crate::validate::Stamp;

/// Type number under which a name's NXDOMAIN entry is kept (no real type is 0).
pub(super) const NXDOMAIN_TYPE: RType = RType(0);

/// The SOA of a negative answer, borrowed: owner, TTL and RDATA.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Soa<'a> {
    pub(crate) owner: NameRef<'a>,
    pub(crate) ttl: u32,
    pub(crate) rdata: &'a [u8],
}

impl<'a> From<&'a Record> for Soa<'a> {
    fn from(r: &'a Record) -> Self {
        Self {
            owner: r.owner.as_ref(),
            ttl: r.ttl,
            rdata: &r.rdata,
        }
    }
}

impl Cache {
    /// Caches a negative answer (RFC 2308): NXDOMAIN when `rtype` is `None`, else NODATA
    /// for `rtype`. The TTL is the SOA's, capped by its MINIMUM field and the configured
    /// maximum; without an SOA nothing is cached (RFC 2308 §5). `dnssec`: the proof (NSEC
    /// or NSEC3 records, their RRSIGs, the SOA's), shown to DO clients in the authority
    /// section.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_negative(
        &self,
        owner: NameRef<'_>,
        rtype: Option<RType>,
        soa: Option<Soa<'_>>,
        dnssec: &[DnssecRr<'_>],
        rank: Rank,
        stamp: Stamp,
        now: u64,
    ) -> bool {
        let Some(soa) = soa else { return false };
        let ttl = negative_ttl_of(soa.ttl, soa.rdata).min(self.max_negative_ttl);
        let mut data =
            Vec::with_capacity(soa.owner.len() + 2 + soa.rdata.len() + dnssec_bytes(dnssec));
        data.extend_from_slice(soa.owner.as_wire());
        push_rdata(&mut data, soa.rdata);
        self.insert(
            owner,
            rtype.unwrap_or(NXDOMAIN_TYPE),
            Kind::Negative,
            rank,
            ttl,
            data,
            dnssec,
            stamp,
            now,
        )
    }
}

/// RFC 2308 §5: the negative TTL is the lesser of the SOA's TTL and its MINIMUM field.
pub(crate) fn negative_ttl(soa: &Record) -> u32 {
    negative_ttl_of(soa.ttl, &soa.rdata)
}

fn negative_ttl_of(ttl: u32, rdata: &[u8]) -> u32 {
    soa_minimum(rdata).map_or(0, |m| m.min(ttl))
}

fn soa_minimum(rdata: &[u8]) -> Option<u32> {
    let b = rdata.get(rdata.len().checked_sub(4)?..)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}
