//! What a judged frame teaches the caches ([`learn`]): a DS or DNSKEY answer's key entry
//! for its zone, and every cache entry of the frame re-stamped with the verdict.

use shardns_wire::{NameRef, RType, Record};

use super::Verdict;
use crate::cache::{negative_ttl, DnssecRr, Soa};
use crate::iterate::response::covered;
use crate::iterate::{Frame, FrameOutcome};
use crate::reply::Ede;
use crate::validate::{algorithm_supported, digest_supported, KeyEntry, Security, Stamp};
use crate::Resolver;

/// After the verdict `v` on frame `f` (with `outcome`): the cache entries it judged are
/// stamped, and a DS or DNSKEY frame of validation teaches the key cache about its zone.
pub(in crate::iterate) fn learn(
    res: &Resolver,
    f: &Frame,
    outcome: &FrameOutcome,
    v: Verdict,
    now: u64,
) {
    let cfg = &res.config;
    let stamp = |sec: Security, ede: u16| Stamp {
        sec,
        ede,
        ttl_cap: if sec == Security::Bogus {
            cfg.bogus_ttl
        } else {
            u32::MAX
        },
    };
    // Re-stamp what was fetched (not what came from the cache, judged before), with the
    // DNSSEC records DO clients get.
    for note in f.ev.notes.iter().filter(|n| n.cached.is_none()) {
        let recs = &f.chain[note.start..note.end];
        let Some(first) = recs.first() else { continue };
        let ttl = recs.iter().map(|r| r.ttl).min().unwrap_or(0);
        let st = stamp(v.sec, v.ede);
        if note.synth {
            let dname = f.chain[..note.start]
                .iter()
                .rev()
                .find(|r| r.rtype == RType::DNAME);
            if let (Some(d), Ok(target)) = (dname, NameRef::from_wire(&first.rdata)) {
                let sigs = sigs_of(&f.ev.sigs, d.owner.as_ref(), RType::DNAME, true);
                res.cache.insert_synth(
                    first.owner.as_ref(),
                    (d.owner.as_ref(), &d.rdata, d.ttl),
                    target,
                    &sigs,
                    note.rank,
                    st,
                    now,
                );
            }
            continue;
        }
        let owner = first.owner.as_ref();
        let mut dnssec = sigs_of(&f.ev.sigs, owner, first.rtype, false);
        let wildcard = dnssec.iter().any(|s| {
            s.rdata
                .get(3)
                .is_some_and(|&l| usize::from(l) < owner.label_count())
        });
        if wildcard {
            dnssec.extend(proof_of(&f.ev.proof));
        }
        res.cache.insert_rrset(
            owner,
            first.rtype,
            note.rank,
            ttl,
            recs.iter().map(|r| &r.rdata[..]),
            &dnssec,
            st,
            now,
        );
    }
    if let (Some(rank), None) = (f.ev.negative_rank, f.ev.cached_negative) {
        let (rtype, soa) = match outcome {
            FrameOutcome::NxDomain(soa) => (None, soa),
            FrameOutcome::NoData(soa) => (Some(f.qtype), soa),
            _ => (None, &None),
        };
        let proof: Vec<DnssecRr<'_>> = proof_of(&f.ev.proof).collect();
        res.cache.insert_negative(
            f.qname.as_ref(),
            rtype,
            soa.as_ref().map(Soa::from),
            &proof,
            rank,
            stamp(v.sec, v.ede),
            now,
        );
    }
    if !f.key_frame {
        return;
    }
    let zone = f.origin.as_ref();
    let answer_ttl = f.chain.iter().map(|r| r.ttl).min();
    let negative_ttl = match outcome {
        FrameOutcome::NxDomain(Some(soa)) | FrameOutcome::NoData(Some(soa)) => {
            Some(negative_ttl(soa).min(cfg.max_negative_ttl))
        }
        _ => None,
    };
    let ttl = answer_ttl
        .or(negative_ttl)
        .unwrap_or(cfg.bogus_ttl)
        .clamp(1, cfg.max_ttl.max(1));
    let chain_of = |t: RType| -> Vec<Vec<u8>> {
        f.chain
            .iter()
            .filter(|r| r.rtype == t && r.owner.as_ref().eq_ci(&zone))
            .map(|r| r.rdata.clone())
            .collect()
    };
    let entry = match (v.sec, f.qtype, outcome) {
        (Security::Bogus, _, _) => {
            KeyEntry::Bogus(if v.ede == 0 { Ede::DNSSEC_BOGUS } else { v.ede })
        }
        (Security::Insecure | Security::Indeterminate, _, _) => KeyEntry::Insecure,
        (Security::Secure, RType::DS, FrameOutcome::Answer) => {
            let mut ds: Vec<Vec<u8>> = chain_of(RType::DS)
                .into_iter()
                .filter(|d| d.len() > 4 && algorithm_supported(d[2]) && digest_supported(d[3]))
                .collect();
            // RFC 4509 §3: SHA-1 DS records are ignored when one with SHA-256 (or a
            // stronger digest) is there, so a forged SHA-1 one cannot downgrade the set.
            if ds.iter().any(|d| d[3] != 1) {
                ds.retain(|d| d[3] != 1);
            }
            if ds.is_empty() {
                // Only algorithms or digests we do not validate: insecure (RFC 6840 §5.2).
                KeyEntry::Insecure
            } else {
                KeyEntry::Ds(ds.into())
            }
        }
        (Security::Secure, RType::DS, _) if v.delegation => KeyEntry::Insecure,
        // A secure denial of DS at a name that is no delegation point: no zone is there,
        // so data claiming to be from one is bogus (`KeyStatus::NoCut`).
        (Security::Secure, RType::DS, _) => KeyEntry::NoCut,
        (Security::Secure, RType::DNSKEY, FrameOutcome::Answer) => {
            KeyEntry::Keys(chain_of(RType::DNSKEY).into())
        }
        (Security::Secure, _, _) => KeyEntry::Bogus(Ede::DNSKEY_MISSING),
    };
    let ttl = if matches!(entry, KeyEntry::Bogus(_)) {
        cfg.bogus_ttl
    } else {
        ttl
    };
    res.keys.put(zone, entry, ttl, now);
}

/// The RRSIGs of `sigs` at `owner` covering `rtype`, as DNSSEC records of the answer
/// section (with their owner if `owned`, else the set's).
fn sigs_of<'r>(
    sigs: &'r [Record],
    owner: NameRef<'_>,
    rtype: RType,
    owned: bool,
) -> Vec<DnssecRr<'r>> {
    sigs.iter()
        .filter(|s| s.owner.as_ref().eq_ci(&owner) && covered(&s.rdata) == Some(rtype))
        .map(|s| DnssecRr {
            authority: false,
            owner: owned.then(|| s.owner.as_ref()),
            rtype: s.rtype,
            ttl: s.ttl,
            rdata: &s.rdata,
        })
        .collect()
}

/// A frame's proof records (NSEC, NSEC3, their RRSIGs, the SOA's), as DNSSEC records of
/// the authority section.
fn proof_of(proof: &[Record]) -> impl Iterator<Item = DnssecRr<'_>> {
    proof.iter().map(|r| DnssecRr {
        authority: true,
        owner: Some(r.owner.as_ref()),
        rtype: r.rtype,
        ttl: r.ttl,
        rdata: &r.rdata,
    })
}
