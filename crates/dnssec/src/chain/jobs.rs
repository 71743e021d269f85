//! The RRsets to sign ([`jobs`], in canonical order of their owners) and signing them on
//! all cores ([`sign_jobs`]), each thread into blocks of its own, keeping a previous
//! version's signatures that still do.

use super::{earliest_of, offset, Kind, Node, SignParams, ZoneKey};
use crate::error::Error;
use crate::list::{RecordList, Rr, BLOCK};
use crate::reuse::Previous;
use crate::sign::{rrsig_labels, sign_rrset_into, RrsetToSign, RrsigFields, Scratch};
use shardns_wire::{NameRef, RType};

/// One RRset to sign: its records, and whether the key RRsets' signers sign it.
pub(super) struct Job<'a> {
    rrset: &'a [Rr],
    keys: bool,
}

/// Every authoritative RRset and the chain's (`denial`), in canonical order of their
/// owners (the chain's records merged in), so that the signatures come out in the order the
/// list is read in and each block of them can be freed once read
/// (`RecordList::release_before`).
#[inline]
pub(super) fn jobs<'a>(list: &'a RecordList, nodes: &[Node], denial: &'a [Rr]) -> Vec<Job<'a>> {
    let items = &list.items;
    let mut jobs = Vec::with_capacity(items.len() + denial.len());
    let mut d = 0;
    for node in nodes {
        let owner = list.owner(&items[node.start]);
        while d < denial.len() && list.owner(&denial[d]).canonical_cmp(&owner).is_lt() {
            jobs.push(Job {
                rrset: std::slice::from_ref(&denial[d]),
                keys: false,
            });
            d += 1;
        }
        let mut i = node.start;
        while i < node.end {
            let rtype = items[i].rtype;
            let mut j = i + 1;
            while j < node.end && items[j].rtype == rtype {
                j += 1;
            }
            let signed = match node.kind {
                Kind::Apex | Kind::Normal => true,
                Kind::Cut => rtype == RType::DS,
                Kind::Occluded => false,
            };
            if signed {
                let keys = node.kind == Kind::Apex
                    && matches!(rtype, RType::DNSKEY | RType::CDS | RType::CDNSKEY);
                jobs.push(Job {
                    rrset: &items[i..j],
                    keys,
                });
            }
            i = j;
        }
        while d < denial.len() && list.owner(&denial[d]).canonical_cmp(&owner).is_eq() {
            jobs.push(Job {
                rrset: std::slice::from_ref(&denial[d]),
                keys: false,
            });
            d += 1;
        }
    }
    jobs.extend(
        denial[d..]
            .chunks(1)
            .map(|rrset| Job { rrset, keys: false }),
    );
    jobs
}

/// What one signing thread made: blocks of RRSIG rdata back to back, each with its records
/// (their `rdata` offsets are into the block; their owners are the zone list's), closed
/// near [`BLOCK`] octets; and the kept signatures' records (their `rdata` offsets are the
/// previous version's).
#[derive(Default)]
pub(super) struct Part {
    pub(super) blocks: Vec<(Vec<u8>, Vec<Rr>)>,
    pub(super) kept_items: Vec<Rr>,
    pub(super) made: usize,
    pub(super) kept: usize,
    pub(super) earliest: u32,
}

/// A block is closed once it holds this much: a job's signatures (one per key, each under
/// 1 KiB) then fit in the rest without the block growing past [`BLOCK`].
const BLOCK_FULL: usize = BLOCK - (64 << 10);

/// Signs the jobs on `params.threads` threads (every core for 0), in contiguous chunks,
/// keeping the signatures of `previous` that still do.
pub(super) fn sign_jobs(
    apex: NameRef<'_>,
    list: &RecordList,
    jobs: &[Job<'_>],
    keys: &[ZoneKey<'_>],
    params: &SignParams,
    previous: Option<&Previous>,
) -> Result<Vec<Part>, Error> {
    let threads = if params.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        params.threads
    };
    // A thread is worth starting for a few hundred RRsets.
    let threads = threads.clamp(1, jobs.len().div_ceil(256).max(1));
    let chunk = jobs.len().div_ceil(threads).max(1);
    // Keys whose signatures may be kept: those the previous version published.
    let reusable: Vec<bool> = keys
        .iter()
        .map(|k| previous.is_some_and(|p| p.has_dnskey(apex, k.key.dnskey_rdata())))
        .collect();
    let run = |part: &[Job<'_>]| -> Result<Part, Error> {
        let mut scratch = Scratch::default();
        let mut old_rrset = crate::sign::Canonical::new();
        let mut olds: Vec<(RrsigFields<'_>, &Rr)> = Vec::new();
        let mut out = Part {
            earliest: params.expiration,
            ..Part::default()
        };
        let (mut bytes, mut items) = (Vec::new(), Vec::new());
        for job in part {
            if bytes.len() >= BLOCK_FULL {
                out.blocks
                    .push((std::mem::take(&mut bytes), std::mem::take(&mut items)));
            }
            let first = &job.rrset[0];
            let owner = list.owner(first);
            scratch.rrset.clear();
            for r in job.rrset {
                scratch.rrset.push(r.rtype, list.rdata(r));
            }
            scratch.rrset.finish();
            let what = RrsetToSign {
                owner,
                class: first.class,
                rtype: first.rtype,
                ttl: first.ttl,
            };
            olds.clear();
            if let Some(p) = previous {
                if let Some(sigs) = p.signatures(
                    owner,
                    first.rtype,
                    first.ttl,
                    &scratch.rrset,
                    &mut old_rrset,
                ) {
                    olds.extend(sigs);
                }
            }
            let labels = rrsig_labels(owner);
            let expiration = params.expiration_of(owner, first.rtype);
            for (k, &reusable) in keys.iter().zip(&reusable) {
                if !((job.keys && k.signs_keys) || (!job.keys && k.signs_zone)) {
                    continue;
                }
                let at = offset(bytes.len());
                let old = olds.iter().find(|(f, _)| {
                    reusable
                        && f.algorithm == k.key.algorithm().number()
                        && f.key_tag == k.key.tag()
                        && f.labels == labels
                        && f.original_ttl == first.ttl
                        && f.signer.eq_ci(&apex)
                });
                if let Some((f, rr)) = old {
                    // Left where the previous version has it.
                    out.kept_items.push(Rr {
                        owner: first.owner,
                        ..**rr
                    });
                    out.kept += 1;
                    if earliest_of(params.inception, f.expiration, out.earliest) {
                        out.earliest = f.expiration;
                    }
                    continue;
                }
                sign_rrset_into(
                    k.key,
                    what,
                    apex,
                    params.inception,
                    expiration,
                    &mut scratch,
                    &mut bytes,
                )?;
                out.made += 1;
                if earliest_of(params.inception, expiration, out.earliest) {
                    out.earliest = expiration;
                }
                items.push(Rr {
                    owner: first.owner,
                    rdata: at,
                    rdlen: (bytes.len() - at as usize) as u16,
                    rtype: RType::RRSIG,
                    class: first.class,
                    ttl: first.ttl,
                });
            }
        }
        out.blocks.push((bytes, items));
        Ok(out)
    };
    if threads == 1 {
        return Ok(vec![run(jobs).map_err(Error::signing)?]);
    }
    let results: Vec<Result<Part, Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| s.spawn(move || run(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.push(r.map_err(Error::signing)?);
    }
    Ok(out)
}
