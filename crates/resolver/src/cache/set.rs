//! One cached RRset or negative entry, and the encoding of its data.
//!
//! Owns: [`Set`] (type, [`Kind`], rank, absolute expiry, data) and the pre-encoded data
//! format, `u16` length + uncompressed rdata, repeated, which the hit path copies into a
//! message as it is; plus the byte charge of a set against the memory bound.

use shardns_wire::{NameRef, RType};

use super::Rank;
use crate::validate::Security;

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
    /// For a `Bogus` set, the Extended DNS Error code it is answered with.
    pub(super) ede: u16,
    /// Absolute expiry, milliseconds on the driver's clock.
    pub(super) expires: u64,
    pub(super) data: Box<[u8]>,
}

impl Set {
    pub(super) fn cost(&self) -> usize {
        self.data.len() + ALLOC_OVERHEAD
    }
    pub(super) fn remaining_ttl(&self, now: u64) -> u32 {
        (self.expires.saturating_sub(now) / 1000) as u32
    }
    pub(super) fn records(&self) -> usize {
        match self.kind {
            Kind::Positive => Rdatas(&self.data).count(),
            Kind::Synth => 2,
            Kind::Negative => 0,
        }
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
