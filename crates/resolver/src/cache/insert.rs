//! Caching positive data: RRsets, and CNAMEs synthesised from DNAMEs (RFC 6672).
//!
//! Owns: [`Cache::insert_rrset`] and [`Cache::insert_synth`] (which encode the data and
//! clamp the TTL to the configured bounds), and [`Cache::insert`], the one way any set,
//! negative ones included, gets into a shard: under the trust rules, then eviction while
//! the shard is over its budget. Encoded data is sized exactly: one allocation per set.

use shardns_wire::{NameRef, RType};

use super::set::{dnssec_len, push_dnssec, push_rdata, DnssecRr, Kind, Set};
use super::{Cache, HashedName, Rank};
use crate::validate::{Security, Stamp};

impl Cache {
    /// Caches an RRset, with its DNSSEC records (`dnssec`: its RRSIGs, and the proof of a
    /// wildcard expansion) for DO clients. Returns false if it was not stored (zero TTL, or
    /// better data held).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_rrset<'r, I>(
        &self,
        owner: NameRef<'_>,
        rtype: RType,
        rank: Rank,
        ttl: u32,
        rdatas: I,
        dnssec: &[DnssecRr<'_>],
        stamp: Stamp,
        now: u64,
    ) -> bool
    where
        I: IntoIterator<Item = &'r [u8]>,
        I::IntoIter: Clone,
    {
        let rdatas = rdatas.into_iter();
        // Sized exactly: one allocation, and no reallocation when boxed.
        let own: usize = rdatas.clone().map(|rd| 2 + rd.len()).sum();
        let mut data = Vec::with_capacity(own + dnssec_bytes(dnssec));
        for rd in rdatas {
            push_rdata(&mut data, rd);
        }
        let ttl = ttl.clamp(self.min_ttl, self.max_ttl);
        self.insert(
            owner,
            rtype,
            Kind::Positive,
            rank,
            ttl,
            data,
            dnssec,
            stamp,
            now,
        )
    }

    /// Caches a CNAME synthesised from a DNAME (RFC 6672) at `owner`; `dname` is the
    /// DNAME's (owner, RDATA, TTL), `dnssec` the DNAME's RRSIGs (with their owner).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_synth(
        &self,
        owner: NameRef<'_>,
        dname: (NameRef<'_>, &[u8], u32),
        cname_target: NameRef<'_>,
        dnssec: &[DnssecRr<'_>],
        rank: Rank,
        stamp: Stamp,
        now: u64,
    ) -> bool {
        let (downer, drdata, dttl) = dname;
        let mut data = Vec::with_capacity(
            downer.len() + 2 + drdata.len() + 2 + cname_target.len() + dnssec_bytes(dnssec),
        );
        data.extend_from_slice(downer.as_wire());
        push_rdata(&mut data, drdata);
        push_rdata(&mut data, cname_target.as_wire());
        let ttl = dttl.clamp(self.min_ttl, self.max_ttl);
        self.insert(
            owner,
            RType::CNAME,
            Kind::Synth,
            rank,
            ttl,
            data,
            dnssec,
            stamp,
            now,
        )
    }

    /// Stores a set: `data` is its own data (sized to hold `dnssec` too, which is appended
    /// here).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert(
        &self,
        owner: NameRef<'_>,
        rtype: RType,
        kind: Kind,
        rank: Rank,
        ttl: u32,
        mut data: Vec<u8>,
        dnssec: &[DnssecRr<'_>],
        stamp: Stamp,
        now: u64,
    ) -> bool {
        // A checked set lives no longer than its signatures (or, bogus, than the bogus TTL),
        // and no set longer than the DNSSEC records shown with it.
        let ttl = dnssec
            .iter()
            .map(|rr| rr.ttl)
            .fold(ttl.min(stamp.ttl_cap), u32::min);
        if ttl == 0 {
            return false;
        }
        // The own data of a set comes from one message: it always fits.
        let Ok(dnssec_at) = u16::try_from(data.len()) else {
            return false;
        };
        for rr in dnssec {
            push_dnssec(&mut data, rr);
        }
        let key = HashedName::new(owner);
        let mut new = Set {
            rtype,
            kind,
            rank,
            sec: stamp.sec,
            ede: u8::try_from(stamp.ede).unwrap_or(u8::MAX),
            dnssec_at,
            expiry: Set::pack_expiry(now, ttl),
            data: data.into_boxed_slice(),
        };
        if stamp.sec == Security::Bogus {
            // A bogus verdict is not worth refreshing early.
            new.clear_prefetch();
        }
        let mut g = self.lock(&key);
        let stored = g.insert(&key, new, now, self.stale_keep_ms);
        if g.bytes > self.shard_budget {
            g.evict(self.shard_budget);
        }
        stored
    }
}

/// Bytes the DNSSEC records `dnssec` take in a set's data.
pub(super) fn dnssec_bytes(dnssec: &[DnssecRr<'_>]) -> usize {
    dnssec.iter().map(dnssec_len).sum()
}
