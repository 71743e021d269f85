//! One cached RRset or negative entry, and the encoding of its data.
//!
//! Owns: [`Set`] (type, [`Kind`], rank, absolute expiry, data) and the pre-encoded data
//! format, `u16` length + uncompressed rdata, repeated, which the hit path copies into a
//! message as it is; the DNSSEC records kept after it for DO clients ([`DnssecRr`]: the
//! RRSIGs of the set, the NSEC/NSEC3 proof of a denial or wildcard answer and its RRSIGs,
//! the SOA's RRSIGs); plus the byte charge of a set against the memory bound.

use shardns_wire::{NameRef, RType};

use super::Rank;
use crate::validate::Security;

const EXPIRY_MASK: u64 = (1 << 48) - 1;

/// Bytes charged per heap allocation on top of its size (allocator header and rounding).
pub(super) const ALLOC_OVERHEAD: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `data` is the RRset: (`u16` length, rdata) repeated.
    Positive,
    /// A CNAME synthesised from a DNAME: `data` is the DNAME owner, (`u16` length, DNAME
    /// rdata), then the CNAME rdata as for `Positive`.
    Synth,
    /// No data of this type (`rtype`), or no such name (`rtype` 0): `data` is the SOA's
    /// owner, (`u16` length, rdata), or empty.
    Negative,
}

pub(super) struct Set {
    pub(super) rtype: RType,
    pub(super) kind: Kind,
    pub(super) rank: Rank,
    /// What DNSSEC validation made of the set (`Indeterminate` until a validating
    /// resolution has checked it). Fits in the padding: `Set` stays 32 bytes.
    pub(super) sec: Security,
    /// For a `Bogus` set, the Extended DNS Error code it is answered with (RFC 8914 codes
    /// fit in a byte; kept small so that `Set` stays 32 bytes).
    pub(super) ede: u8,
    /// Where the DNSSEC records ([`DnssecRrs`]) start in `data`; `data.len()` if none.
    pub(super) dnssec_at: u16,
    /// Absolute expiry, milliseconds on the driver's clock, in the low 48 bits (8,900
    /// years); the high 16 bits are the prefetch window in seconds (a tenth of the TTL,
    /// 0: none, or already prefetched). Packed so that `Set` stays 32 bytes.
    pub(super) expiry: u64,
    /// The set's own data (as [`Kind`] says), then its DNSSEC records.
    pub(super) data: Box<[u8]>,
}

impl Set {
    pub(super) fn cost(&self) -> usize {
        self.data.len() + ALLOC_OVERHEAD
    }
    /// The set's expiry and prefetch window (a tenth of `ttl`, as Unbound's prefetch).
    pub(super) fn pack_expiry(now: u64, ttl: u32) -> u64 {
        let expires = (now + u64::from(ttl) * 1000) & EXPIRY_MASK;
        let window = u64::from((ttl / 10).min(u32::from(u16::MAX)));
        expires | window << 48
    }
    /// Absolute expiry, milliseconds on the driver's clock.
    #[inline]
    pub(super) fn expires(&self) -> u64 {
        self.expiry & EXPIRY_MASK
    }
    /// True once `now` is inside the prefetch window and the set was not prefetched yet.
    #[inline]
    pub(super) fn prefetch_due(&self, now: u64) -> bool {
        let window_ms = (self.expiry >> 48) * 1000;
        window_ms != 0 && now + window_ms >= self.expires()
    }
    /// Marks the set as prefetched: it does not ask again (the refresh replaces it).
    pub(super) fn clear_prefetch(&mut self) {
        self.expiry &= EXPIRY_MASK;
    }
    pub(super) fn remaining_ttl(&self, now: u64) -> u32 {
        (self.expires().saturating_sub(now) / 1000) as u32
    }
    pub(super) fn records(&self) -> usize {
        match self.kind {
            Kind::Positive => Rdatas(self.rdata()).count(),
            Kind::Synth => 2,
            Kind::Negative => 0,
        }
    }
    /// The set's own data, without its DNSSEC records.
    #[inline]
    pub(super) fn rdata(&self) -> &[u8] {
        self.data.get(..usize::from(self.dnssec_at)).unwrap_or(&[])
    }
    /// The DNSSEC records kept with the set, for DO clients.
    #[inline]
    pub(super) fn dnssec(&self) -> DnssecRrs<'_> {
        DnssecRrs(self.data.get(usize::from(self.dnssec_at)..).unwrap_or(&[]))
    }
}

/// A DNSSEC record kept with a cached set and shown only to clients that set DO: an RRSIG
/// of the set (answer section), or a record of the proof of a denial or of a wildcard
/// expansion (authority section: NSEC, NSEC3, their RRSIGs, the SOA's RRSIGs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DnssecRr<'a> {
    /// Written in the authority section (else the answer section).
    pub(crate) authority: bool,
    /// Its owner; `None`: the owner of the set (as the question spelled it).
    pub(crate) owner: Option<NameRef<'a>>,
    pub(crate) rtype: RType,
    /// Its TTL when received: the set is kept no longer than its DNSSEC records.
    pub(crate) ttl: u32,
    pub(crate) rdata: &'a [u8],
}

const DNSSEC_AUTHORITY: u8 = 1;
const DNSSEC_OWNER: u8 = 2;

/// Bytes [`push_dnssec`] writes for `rr`.
pub(super) fn dnssec_len(rr: &DnssecRr<'_>) -> usize {
    1 + rr.owner.map_or(0, |o| o.len()) + 4 + rr.rdata.len()
}

/// Appends `rr`: flags, the owner if it is not the set's, type, `u16` length, rdata.
pub(super) fn push_dnssec(data: &mut Vec<u8>, rr: &DnssecRr<'_>) {
    let mut flags = 0;
    if rr.authority {
        flags |= DNSSEC_AUTHORITY;
    }
    if rr.owner.is_some() {
        flags |= DNSSEC_OWNER;
    }
    data.push(flags);
    if let Some(o) = rr.owner {
        data.extend_from_slice(o.as_wire());
    }
    data.extend_from_slice(&rr.rtype.0.to_be_bytes());
    push_rdata(data, rr.rdata);
}

/// Iterates over the DNSSEC records of a set (their `ttl` is 0: the set's counts).
#[derive(Clone)]
pub(super) struct DnssecRrs<'a>(&'a [u8]);

impl<'a> Iterator for DnssecRrs<'a> {
    type Item = DnssecRr<'a>;
    fn next(&mut self) -> Option<DnssecRr<'a>> {
        let (&flags, mut rest) = self.0.split_first()?;
        let mut owner = None;
        if flags & DNSSEC_OWNER != 0 {
            let (o, n) = NameRef::from_wire_prefix(rest).ok()?;
            owner = Some(o);
            rest = &rest[n..];
        }
        let rtype = RType(u16::from_be_bytes([*rest.first()?, *rest.get(1)?]));
        let rdata = Rdatas(&rest[2..]).next()?;
        self.0 = &rest[4 + rdata.len()..];
        Some(DnssecRr {
            authority: flags & DNSSEC_AUTHORITY != 0,
            owner,
            rtype,
            ttl: 0,
            rdata,
        })
    }
}

pub(super) fn push_rdata(data: &mut Vec<u8>, rd: &[u8]) {
    data.extend_from_slice(&(rd.len() as u16).to_be_bytes());
    data.extend_from_slice(rd);
}

/// Iterates over the rdatas of pre-encoded data.
pub(super) struct Rdatas<'a>(pub(super) &'a [u8]);

impl<'a> Iterator for Rdatas<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let len = u16::from_be_bytes([*self.0.first()?, *self.0.get(1)?]) as usize;
        let rd = self.0.get(2..2 + len)?;
        self.0 = &self.0[2 + len..];
        Some(rd)
    }
}

/// Splits "owner name, (u16 length, rdata), rest".
pub(super) fn split_owned(data: &[u8]) -> Option<(NameRef<'_>, &[u8], &[u8])> {
    let (owner, n) = NameRef::from_wire_prefix(data).ok()?;
    let rest = &data[n..];
    let rd = Rdatas(rest).next()?;
    Some((owner, rd, &rest[2 + rd.len()..]))
}
