//! What the resolver reads from the cache for its own use, under a minimum [`Rank`].
//!
//! Owns: [`Cache::lookup`] (records copied out, [`Lookup`]), [`Cache::probe`] (whether a
//! name exists, copying nothing), [`Cache::visit`] (name servers and their addresses), and
//! [`classify`], the choice of the set that answers a question at a name, which the hit
//! path shares.

use shardns_wire::{Class, NameRef, RType, Record};

use super::negative::NXDOMAIN_TYPE;
use super::set::{split_owned, Kind, Rdatas, Set};
use super::shard::Slot;
use super::{Cache, HashedName, Rank};
use crate::validate::Security;

/// A cached answer copied out for the resolver's own use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    Miss,
    /// The RRset of the asked type.
    Positive(Vec<Record>),
    /// A CNAME at the name (and, if it was synthesised, the DNAME it came from first).
    Cname(Vec<Record>),
    /// The name does not exist; the SOA if one was given.
    NxDomain(Option<Record>),
    /// The name has no data of this type.
    NoData(Option<Record>),
}

/// The DNSSEC records of an answer, for a client that set DO: the RRSIGs of the answer
/// section's RRsets, and the authority section's proof (NSEC/NSEC3 records, their RRSIGs,
/// the SOA's RRSIGs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DnssecRecords {
    pub(crate) answer: Vec<Record>,
    pub(crate) authority: Vec<Record>,
}

impl DnssecRecords {
    pub(crate) fn clear(&mut self) {
        self.answer.clear();
        self.authority.clear();
    }
}

/// What [`Cache::probe`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    Miss,
    /// The name exists: an RRset, NODATA or a CNAME is cached.
    Exists,
    NxDomain,
}

impl Cache {
    /// The answer to (`name`, `qtype`) from data of at least `min_rank`, copied out, with
    /// what validation made of it (and the EDE code of a bogus set).
    #[cfg(test)]
    pub(crate) fn lookup(
        &self,
        name: NameRef<'_>,
        qtype: RType,
        min_rank: Rank,
        now: u64,
    ) -> (Lookup, Security, u16) {
        self.lookup_dnssec(name, qtype, min_rank, now, None)
    }

    /// [`Cache::lookup`], also copying the DNSSEC records kept with the set into `dnssec`.
    pub(crate) fn lookup_dnssec(
        &self,
        name: NameRef<'_>,
        qtype: RType,
        min_rank: Rank,
        now: u64,
        dnssec: Option<&mut DnssecRecords>,
    ) -> (Lookup, Security, u16) {
        let key = HashedName::new(name);
        let mut g = self.lock(&key);
        let Some(slot) = g.find_mut(&key) else {
            return (Lookup::Miss, Security::Indeterminate, 0);
        };
        slot.referenced = true;
        let Some((set, found)) = classify(slot, qtype, min_rank, now) else {
            return (Lookup::Miss, Security::Indeterminate, 0);
        };
        if let Some(out) = dnssec {
            let ttl = set.remaining_ttl(now);
            for rr in set.dnssec() {
                let owner = rr.owner.unwrap_or(name);
                let r = record(owner, rr.rtype, ttl, rr.rdata);
                if rr.authority {
                    out.authority.push(r);
                } else {
                    out.answer.push(r);
                }
            }
        }
        (
            lookup_set(set, found, name, qtype, now),
            set.sec,
            u16::from(set.ede),
        )
    }

    /// What the cache knows about (`name`, `qtype`) from data of at least `min_rank`,
    /// without copying anything out: one lock, no allocation.
    pub(crate) fn probe(&self, name: NameRef<'_>, qtype: RType, min_rank: Rank, now: u64) -> Probe {
        let key = HashedName::new(name);
        let mut g = self.lock(&key);
        let Some(slot) = g.find_mut(&key) else {
            return Probe::Miss;
        };
        slot.referenced = true;
        match classify(slot, qtype, min_rank, now) {
            None => Probe::Miss,
            Some((_, SetMatch::NxDomain)) => Probe::NxDomain,
            Some(_) => Probe::Exists,
        }
    }

    /// Calls `f(rtype, remaining ttl, rdata)` for each record of the positive RRsets of the
    /// given types at `name` with at least `min_rank`; one lock. Returns how many it saw.
    pub(crate) fn visit(
        &self,
        name: NameRef<'_>,
        types: &[RType],
        min_rank: Rank,
        now: u64,
        mut f: impl FnMut(RType, u32, &[u8]),
    ) -> usize {
        let key = HashedName::new(name);
        let mut g = self.lock(&key);
        let Some(slot) = g.find_mut(&key) else {
            return 0;
        };
        slot.referenced = true;
        let mut n = 0;
        for set in &slot.sets {
            if set.kind == Kind::Positive
                && types.contains(&set.rtype)
                && set.rank >= min_rank
                && set.expires() > now
            {
                for rd in Rdatas(set.rdata()) {
                    f(set.rtype, set.remaining_ttl(now), rd);
                    n += 1;
                }
            }
        }
        n
    }
}

/// Copies out what `set` (picked by [`classify`]) answers.
pub(super) fn lookup_set(
    set: &Set,
    found: SetMatch,
    name: NameRef<'_>,
    qtype: RType,
    now: u64,
) -> Lookup {
    let ttl = set.remaining_ttl(now);
    match found {
        SetMatch::Positive => Lookup::Positive(
            Rdatas(set.rdata())
                .map(|rd| record(name, set.rtype, ttl, rd))
                .collect(),
        ),
        SetMatch::Cname => {
            let mut out = Vec::with_capacity(2);
            let mut data: &[u8] = set.rdata();
            if set.kind == Kind::Synth {
                let Some((owner, rdata, rest)) = split_owned(data) else {
                    return Lookup::Miss;
                };
                out.push(record(owner, RType::DNAME, ttl, rdata));
                data = rest;
            }
            out.extend(Rdatas(data).map(|rd| record(name, RType::CNAME, ttl, rd)));
            if qtype == RType::CNAME {
                // The synthesised CNAME (with its DNAME) is the answer itself.
                Lookup::Positive(out)
            } else {
                Lookup::Cname(out)
            }
        }
        SetMatch::NxDomain => Lookup::NxDomain(soa_record(set.rdata(), ttl)),
        SetMatch::NoData => Lookup::NoData(soa_record(set.rdata(), ttl)),
    }
}

/// How the set [`classify`] picked answers the question.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum SetMatch {
    Positive,
    Cname,
    NxDomain,
    NoData,
}

/// Picks the set that answers `qtype` at a name: the RRset or NODATA of that type, else a
/// CNAME, else NXDOMAIN.
#[inline]
pub(super) fn classify(
    slot: &Slot,
    qtype: RType,
    min_rank: Rank,
    now: u64,
) -> Option<(&Set, SetMatch)> {
    classify_within(slot, qtype, min_rank, now, 0)
}

/// [`classify`], counting sets less than `grace` ms past expiry as live (serve-stale).
#[inline(always)]
pub(super) fn classify_within(
    slot: &Slot,
    qtype: RType,
    min_rank: Rank,
    now: u64,
    grace: u64,
) -> Option<(&Set, SetMatch)> {
    let live = |s: &&Set| s.expires().saturating_add(grace) > now && s.rank >= min_rank;
    let mut cname = None;
    let mut nx = None;
    for set in slot.sets.iter().filter(live) {
        if set.rtype == qtype {
            let found = match set.kind {
                Kind::Negative => SetMatch::NoData,
                // A synthesised CNAME answers a CNAME query, but is rendered with its
                // DNAME (its data is not plain RDATA).
                Kind::Synth => SetMatch::Cname,
                _ => SetMatch::Positive,
            };
            return Some((set, found));
        }
        if set.rtype == RType::CNAME && set.kind != Kind::Negative {
            cname = Some(set);
        } else if set.rtype == NXDOMAIN_TYPE {
            nx = Some(set);
        }
    }
    cname
        .map(|s| (s, SetMatch::Cname))
        .or(nx.map(|s| (s, SetMatch::NxDomain)))
}

pub(super) fn record(owner: NameRef<'_>, rtype: RType, ttl: u32, rdata: &[u8]) -> Record {
    Record {
        owner: owner.to_name(),
        rtype,
        class: Class::IN,
        ttl,
        rdata: rdata.to_vec(),
    }
}

fn soa_record(data: &[u8], ttl: u32) -> Option<Record> {
    let (owner, rd, _) = split_owned(data)?;
    Some(record(owner, RType::SOA, ttl, rd))
}
