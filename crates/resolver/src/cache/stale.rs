//! Serve-stale (RFC 8767): an answer built from expired sets, for a resolution that failed
//! or is taking too long.
//!
//! Owns: [`Cache::stale_answer`]. Expired sets stay in their slot for
//! [`Cache::stale_keep_ms`] past expiry (`shard::update_sets` keeps them; nothing else
//! reads them: every other reader counts only unexpired sets). Eviction treats them like
//! any other set. Never: bogus data (a stale answer is only what validation accepted).

use shardns_wire::{NameBuf, NameRef, RType, Rcode, Record};

use super::lookup::{classify_within, lookup_set, record, Lookup};
use super::{Cache, HashedName, Rank};
use crate::reply::{Ede, Resolution};
use crate::validate::Security;

/// Longest CNAME chain a stale answer follows (as the hit path's).
const MAX_STALE_CHAIN: usize = 8;

impl Cache {
    /// The answer to (`qname`, `qtype`) from cached sets, expired ones (less than
    /// `stale_keep_ms` past expiry) included; `None` if serve-stale is off, if a set of
    /// the chain is missing, or if nothing of it has expired (then it is not stale, and
    /// the resolver answers from the cache itself). Expired records get `reply_ttl`. With
    /// `checking` (validation on, CD clear) only secure and insecure sets are used. The
    /// EDE is 3 (Stale Answer), or 19 (Stale NXDOMAIN Answer) for an NXDOMAIN.
    pub(crate) fn stale_answer(
        &self,
        qname: NameRef<'_>,
        qtype: RType,
        now: u64,
        reply_ttl: u32,
        checking: bool,
    ) -> Option<Resolution> {
        if self.stale_keep_ms == 0 {
            return None;
        }
        let mut out = Resolution::servfail(Ede::new(Ede::STALE_ANSWER, "stale answer"));
        out.rcode = Rcode::NOERROR;
        out.secure = self.validating && checking;
        let mut stale = false;
        let mut ended = false;
        let mut owner = NameBuf::new();
        owner.set(qname);
        for _ in 0..=MAX_STALE_CHAIN {
            let key = HashedName::new(owner.as_ref());
            let mut g = self.lock(&key);
            let slot = g.find_mut(&key)?;
            let (set, found) = classify_within(slot, qtype, Rank::Answer, now, self.stale_keep_ms)?;
            if checking && !matches!(set.sec, Security::Secure | Security::Insecure) {
                return None;
            }
            out.secure &= set.sec == Security::Secure;
            let expired = set.expires() <= now;
            stale |= expired;
            let ttl = if expired {
                reply_ttl
            } else {
                set.remaining_ttl(now)
            };
            for rr in set.dnssec() {
                let r = record(rr.owner.unwrap_or(owner.as_ref()), rr.rtype, ttl, rr.rdata);
                if rr.authority {
                    out.dnssec_authority.push(r);
                } else {
                    out.dnssec_answer.push(r);
                }
            }
            let mut looked = lookup_set(set, found, owner.as_ref(), qtype, now);
            drop(g);
            match &mut looked {
                Lookup::Positive(rs) | Lookup::Cname(rs) => set_ttl(rs, ttl),
                Lookup::NxDomain(soa) | Lookup::NoData(soa) => set_ttl(soa.as_mut_slice(), ttl),
                Lookup::Miss => {}
            }
            ended = true;
            match looked {
                Lookup::Miss => return None,
                Lookup::Positive(rs) => {
                    out.answers.extend(rs);
                    break;
                }
                Lookup::Cname(rs) => {
                    let target = rs.last().and_then(|r| NameRef::from_wire(&r.rdata).ok())?;
                    let mut next = NameBuf::new();
                    next.set(target);
                    out.answers.extend(rs);
                    owner = next;
                    ended = false;
                }
                Lookup::NxDomain(soa) => {
                    out.rcode = Rcode::NXDOMAIN;
                    out.ede = Some(Ede::new(Ede::STALE_NXDOMAIN, "stale NXDOMAIN answer"));
                    out.authority.extend(soa);
                    break;
                }
                Lookup::NoData(soa) => {
                    out.authority.extend(soa);
                    break;
                }
            }
        }
        // A chain longer than the hit path follows is no answer.
        (stale && ended).then_some(out)
    }
}

fn set_ttl(records: &mut [Record], ttl: u32) {
    for r in records {
        r.ttl = ttl;
    }
}
