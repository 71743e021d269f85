//! Judging a validating frame's outcome (see `crate::validate` for the design): which
//! zone's keys each RRset needs, the DS and DNSKEY questions to ask when they are not
//! known, the verdict once they are, and what a DS or DNSKEY frame teaches the key cache.
//!
//! Owns: [`judge`] (need or verdict), [`learn`] (key cache and the re-stamped cache
//! entries after a verdict, in the submodule `learn`). Never: cryptography (`validate`
//! calls `shardns_dnssec`).

mod learn;

pub(super) use learn::learn;

use std::sync::Arc;

use shardns_dnssec::digest::ds_digest;
use shardns_dnssec::sign::RrsigFields;
use shardns_dnssec::{key_tag, DigestType};
use shardns_wire::{NameBuf, NameRef, RType, Record};

use super::response::covered;
use super::{name_buf, Frame, FrameOutcome, Note};
use crate::reply::Ede;
use crate::validate::{
    algorithm_supported, check_denial, check_wildcard, digest_supported, verify_rrset, Budget,
    Denial, DenialKind, DenialRr, KeyEntry, Limits, Security, VerifiedRr,
};
use crate::Resolver;

/// What judging a frame gave.
// The name is inline (no allocation); a `Judged` is moved once.
#[allow(clippy::large_enum_variant)]
pub(super) enum Judged {
    /// Ask this question first (a DS or DNSKEY of a zone), then judge again.
    Need(NameBuf, RType),
    Verdict(Verdict),
}

/// The security of a frame's outcome.
#[derive(Clone, Copy, Debug)]
pub(super) struct Verdict {
    pub(super) sec: Security,
    /// EDE code of a bogus verdict.
    pub(super) ede: u16,
    /// For a DS question: the denial showed a delegation (or an Opt-Out span).
    delegation: bool,
}

impl Verdict {
    pub(super) fn bogus(ede: u16) -> Self {
        Self::new(Security::Bogus, ede)
    }
    fn new(sec: Security, ede: u16) -> Self {
        Self {
            sec,
            ede,
            delegation: false,
        }
    }
    fn and(mut self, sec: Security, ede: u16) -> Self {
        if self.sec != Security::Bogus && sec == Security::Bogus {
            self.ede = ede;
        }
        self.sec = self.sec.and(sec);
        self
    }
}

/// What is known of a zone's keys.
enum KeyStatus {
    Keys(Arc<[Vec<u8>]>),
    /// Its DNSKEY RRset must be checked against these DS records (or the anchor).
    Ds(Arc<[Vec<u8>]>),
    Anchor,
    NeedDs,
    Insecure,
    Bogus(u16),
    /// No zone starts at this name (a DS denial without NS bit).
    NoCut,
}

fn key_status(res: &Resolver, zone: NameRef<'_>, now: u64) -> KeyStatus {
    let anchors = &res.config.trust_anchors;
    if anchors.is_negative(zone) {
        return KeyStatus::Insecure;
    }
    let Some(anchor) = anchors.closest(zone) else {
        return KeyStatus::Insecure;
    };
    if !anchors.usable(anchor) {
        return KeyStatus::Insecure;
    }
    match res.keys.get(zone, now) {
        Some(KeyEntry::Keys(k)) => KeyStatus::Keys(k),
        Some(KeyEntry::Ds(d)) => KeyStatus::Ds(d),
        Some(KeyEntry::Insecure) => KeyStatus::Insecure,
        Some(KeyEntry::Bogus(code)) => KeyStatus::Bogus(code),
        Some(KeyEntry::NoCut) => KeyStatus::NoCut,
        None if anchor.eq_ci(&zone) => KeyStatus::Anchor,
        None => KeyStatus::NeedDs,
    }
}

/// The zone an RRset belongs to: the signer of its RRSIGs (if it is an ancestor of the
/// owner), else the zone whose servers gave it.
fn zone_of<'f>(
    owner: NameRef<'_>,
    rtype: RType,
    sigs: &'f [Record],
    asked: NameRef<'f>,
) -> NameRef<'f> {
    sigs.iter()
        .filter(|s| s.owner.as_ref().eq_ci(&owner) && covered(&s.rdata) == Some(rtype))
        .filter_map(|s| RrsigFields::parse(&s.rdata))
        .map(|(f, _)| f.signer)
        .find(|signer| owner.ends_with(signer))
        .unwrap_or(asked)
}

/// The zone whose keys judge an RRset: [`zone_of`], except for an RRset without RRSIGs
/// where that zone has keys. A parent and a child served by the same servers answer for the
/// child without a referral, so unsigned data there may belong to an insecure child: the
/// names from below the zone down to the owner are tried in turn, one DS question each
/// (as Unbound does), until a delegation (its zone) or the owner (the signed zone: the
/// data is then bogus, RRSIGs missing). `Err(name)`: ask the DS of `name` first.
fn data_zone<'f>(
    res: &Resolver,
    owner: NameRef<'f>,
    rtype: RType,
    sigs: &'f [Record],
    asked: NameRef<'f>,
    now: u64,
) -> Result<NameRef<'f>, NameRef<'f>> {
    let zone = zone_of(owner, rtype, sigs, asked);
    let signed = sigs
        .iter()
        .any(|s| s.owner.as_ref().eq_ci(&owner) && covered(&s.rdata) == Some(rtype));
    if signed
        || !owner.ends_with(&zone)
        || !matches!(key_status(res, zone, now), KeyStatus::Keys(_))
    {
        return Ok(zone);
    }
    // A DS RRset lives in the parent of its owner: the owner is no candidate.
    let last = owner.label_count() - usize::from(rtype == RType::DS);
    for labels in zone.label_count() + 1..=last {
        let cand = owner.suffix(labels);
        match key_status(res, cand, now) {
            KeyStatus::NeedDs => return Err(cand),
            KeyStatus::NoCut => continue,
            // No proof either way: the data is judged in the signed zone (RRSIGs missing).
            KeyStatus::Bogus(_) => return Ok(zone),
            _ => return Ok(cand),
        }
    }
    Ok(zone)
}

impl Note {
    fn owner<'c>(&self, chain: &'c [Record]) -> (NameRef<'c>, RType) {
        let r = &chain[self.start];
        (r.owner.as_ref(), r.rtype)
    }
}

/// The zone of a negative outcome: the signer of the denial's RRSIGs, else the SOA's
/// owner, else the zone that answered.
fn negative_zone<'f>(f: &'f Frame, soa: Option<&'f Record>) -> NameRef<'f> {
    let qname = f.qname.as_ref();
    f.ev.proof
        .iter()
        .filter(|r| r.rtype == RType::RRSIG)
        .filter_map(|s| RrsigFields::parse(&s.rdata))
        .map(|(f, _)| f.signer)
        .find(|signer| qname.ends_with(signer))
        .or(soa.map(|s| s.owner.as_ref()))
        .unwrap_or(f.ev.proof_zone.as_ref())
}

/// The question to ask before `zone`'s data (a `dnskey_rrset` at its apex, or other data)
/// can be judged, if any.
fn need(res: &Resolver, zone: NameRef<'_>, dnskey_rrset: bool, now: u64) -> Option<Judged> {
    match key_status(res, zone, now) {
        KeyStatus::NeedDs => Some(Judged::Need(name_buf(zone), RType::DS)),
        KeyStatus::Ds(_) | KeyStatus::Anchor if !dnskey_rrset => {
            Some(Judged::Need(name_buf(zone), RType::DNSKEY))
        }
        _ => None,
    }
}

/// Judges frame `f`'s `outcome`: the question to ask first, or the verdict.
pub(super) fn judge(
    res: &Resolver,
    f: &Frame,
    outcome: &FrameOutcome,
    limits: &Limits,
    budget: &mut Budget,
    now: u64,
) -> Judged {
    let soa = match outcome {
        FrameOutcome::Fail(ede) => {
            return Judged::Verdict(Verdict::new(Security::Bogus, ede.code));
        }
        FrameOutcome::NxDomain(soa) | FrameOutcome::NoData(soa) => Some(soa.as_ref()),
        FrameOutcome::Answer => None,
    };
    // First every key needed, so that nothing is verified twice.
    for note in f.ev.notes.iter().filter(|n| n.cached.is_none() && !n.synth) {
        let (owner, rtype) = note.owner(&f.chain);
        if rtype == RType::RRSIG {
            continue;
        }
        let zone = match data_zone(res, owner, rtype, &f.ev.sigs, note.zone.as_ref(), now) {
            Ok(zone) => zone,
            Err(cand) => return Judged::Need(name_buf(cand), RType::DS),
        };
        let apex_keys = rtype == RType::DNSKEY && owner.eq_ci(&zone);
        if let Some(n) = need(res, zone, apex_keys, now) {
            return n;
        }
    }
    if let (Some(soa), None) = (soa, f.ev.cached_negative) {
        let zone = negative_zone(f, soa);
        if let Some(n) = need(res, zone, false, now) {
            return n;
        }
    }
    if soa.is_none() && f.ev.notes.is_empty() {
        // Nothing to judge (cannot happen for an answer): not secure.
        return Judged::Verdict(Verdict::new(Security::Insecure, 0));
    }
    let mut v = Verdict::new(Security::Secure, 0);
    for note in &f.ev.notes {
        if let Some((sec, ede)) = note.cached {
            v = v.and(sec, ede);
            continue;
        }
        if note.synth {
            continue;
        }
        if note.owner(&f.chain).1 == RType::RRSIG {
            // RRSIGs are not signed themselves: an answer to an RRSIG question cannot be
            // validated, so it goes out as it came, without AD (as Unbound does). A denial
            // for the type is validated like any other.
            v = v.and(Security::Insecure, 0);
            continue;
        }
        let (sec, ede) = judge_rrset(res, f, note, limits, budget, now);
        v = v.and(sec, ede);
    }
    match (soa, f.ev.cached_negative) {
        (Some(_), Some((sec, ede))) => v = v.and(sec, ede),
        (Some(soa), None) => {
            let kind = match outcome {
                FrameOutcome::NxDomain(_) => DenialKind::NxDomain,
                _ => DenialKind::NoData(f.qtype),
            };
            let zone = negative_zone(f, soa);
            let (sec, ede, delegation) = judge_denial(res, f, zone, soa, kind, limits, budget, now);
            v = v.and(sec, ede);
            v.delegation = delegation;
        }
        (None, _) => {}
    }
    Judged::Verdict(v)
}

/// The NSEC/NSEC3 records of the frame's proof in `zone`, each RRset verified with `keys`,
/// and the longest they may be kept (their signatures' validity). Every one of them must
/// verify: a proof holding a bogus record is bogus, even if the others would do (as
/// Unbound has it for the authority section), so `Err` is the failing RRset's EDE code.
fn verified_proof<'f>(
    f: &'f Frame,
    zone: NameRef<'_>,
    keys: &[Vec<u8>],
    limits: &Limits,
    budget: &mut Budget,
) -> Result<(Vec<DenialRr<'f>>, u32), u16> {
    let mut out: Vec<DenialRr<'f>> = Vec::new();
    let mut ttl_cap = u32::MAX;
    for r in &f.ev.proof {
        if !matches!(r.rtype, RType::NSEC | RType::NSEC3) || !r.owner.as_ref().ends_with(&zone) {
            continue;
        }
        if out
            .iter()
            .any(|d| d.owner.eq_ci(&r.owner.as_ref()) && d.rtype == r.rtype)
        {
            continue;
        }
        let owner = r.owner.as_ref();
        let rdatas: Vec<&[u8]> =
            f.ev.proof
                .iter()
                .filter(|x| x.rtype == r.rtype && x.owner.as_ref().eq_ci(&owner))
                .map(|x| &x.rdata[..])
                .collect();
        // Signed by a zone below (the proof of a wildcard CNAME in a child, kept before
        // the chain led here): another zone's record, not part of this proof.
        let elsewhere =
            |sig: &[u8]| RrsigFields::parse(sig).is_some_and(|(s, _)| !s.signer.eq_ci(&zone));
        let mut sigs = proof_sigs(f, owner, r.rtype).peekable();
        if sigs.peek().is_some() && proof_sigs(f, owner, r.rtype).all(elsewhere) {
            continue;
        }
        let v = verify_rrset(owner, r.rtype, &rdatas, sigs, zone, keys, limits, budget)
            .map_err(|e| e.0)?;
        ttl_cap = ttl_cap.min(v.ttl_cap);
        out.extend(rdatas.iter().map(|rd| DenialRr {
            owner,
            rtype: r.rtype,
            rdata: rd,
        }));
    }
    Ok((out, ttl_cap))
}

/// The RRSIGs among the frame's proof records at `owner` covering `rtype`.
fn proof_sigs<'f>(
    f: &'f Frame,
    owner: NameRef<'f>,
    rtype: RType,
) -> impl Iterator<Item = &'f [u8]> {
    f.ev.proof
        .iter()
        .filter(move |x| {
            x.rtype == RType::RRSIG
                && x.owner.as_ref().eq_ci(&owner)
                && covered(&x.rdata) == Some(rtype)
        })
        .map(|x| &x.rdata[..])
}

fn denial_verdict(d: Denial) -> (Security, u16) {
    match d {
        Denial::Proven { .. } => (Security::Secure, 0),
        Denial::OptOut | Denial::Insecure => (Security::Insecure, 0),
        Denial::Missing => (Security::Bogus, Ede::NSEC_MISSING),
        Denial::Limit => (Security::Bogus, Ede::DNSSEC_BOGUS),
    }
}

#[allow(clippy::too_many_arguments)]
fn judge_denial(
    res: &Resolver,
    f: &Frame,
    zone: NameRef<'_>,
    soa: Option<&Record>,
    kind: DenialKind,
    limits: &Limits,
    budget: &mut Budget,
    now: u64,
) -> (Security, u16, bool) {
    let keys = match key_status(res, zone, now) {
        KeyStatus::Keys(k) => k,
        KeyStatus::Insecure => return (Security::Insecure, 0, true),
        KeyStatus::Bogus(code) => return (Security::Bogus, code, false),
        KeyStatus::NoCut => return (Security::Bogus, Ede::DNSSEC_BOGUS, false),
        _ => return (Security::Bogus, Ede::DNSKEY_MISSING, false),
    };
    // The SOA that comes with the denial is part of it (its negative TTL is what the answer
    // is cached for): it must verify like the NSEC/NSEC3 records (RFC 4035 §5.4).
    let soa_cap = match soa {
        Some(s) => {
            let owner = s.owner.as_ref();
            let sigs = proof_sigs(f, owner, RType::SOA);
            match verify_rrset(
                owner,
                RType::SOA,
                &[&s.rdata[..]],
                sigs,
                zone,
                &keys,
                limits,
                budget,
            ) {
                Ok(v) => v.ttl_cap,
                Err(e) => return (Security::Bogus, e.0, false),
            }
        }
        None => u32::MAX,
    };
    let (proof, proof_cap) = match verified_proof(f, zone, &keys, limits, budget) {
        Ok(p) => p,
        Err(code) => return (Security::Bogus, code, false),
    };
    let d = check_denial(&proof, f.qname.as_ref(), kind, zone, limits, budget);
    if matches!(d, Denial::Proven { .. }) && res.config.aggressive_nsec {
        keep_ranges(res, f, zone, soa, &proof, soa_cap.min(proof_cap), now);
    }
    let delegation = matches!(d, Denial::Proven { delegation: true } | Denial::OptOut);
    let (sec, ede) = denial_verdict(d);
    (sec, ede, delegation)
}

/// After a secure NSEC denial in `zone` (its SOA and every record of the proof verified):
/// keeps the NSEC records and the SOA for aggressive use (RFC 8198), no longer than
/// `ttl_cap` (their signatures' validity).
fn keep_ranges(
    res: &Resolver,
    f: &Frame,
    zone: NameRef<'_>,
    soa: Option<&Record>,
    proof: &[DenialRr<'_>],
    ttl_cap: u32,
    now: u64,
) {
    let Some(soa) = soa.filter(|s| s.owner.as_ref().eq_ci(&zone)) else {
        return;
    };
    if !proof.iter().any(|r| r.rtype == RType::NSEC) {
        return;
    }
    let sigs_at = |owner: NameRef<'_>, t: RType| -> Vec<Vec<u8>> {
        f.ev.proof
            .iter()
            .filter(|r| {
                r.rtype == RType::RRSIG
                    && r.owner.as_ref().eq_ci(&owner)
                    && covered(&r.rdata) == Some(t)
            })
            .map(|r| r.rdata.clone())
            .collect()
    };
    let mut nsecs: Vec<VerifiedRr<'_>> = Vec::new();
    for r in proof.iter().filter(|r| r.rtype == RType::NSEC) {
        if nsecs.iter().any(|n| n.owner.eq_ci(&r.owner)) {
            continue;
        }
        let ttl =
            f.ev.proof
                .iter()
                .filter(|x| x.rtype == RType::NSEC && x.owner.as_ref().eq_ci(&r.owner))
                .map(|x| x.ttl)
                .min()
                .unwrap_or(0);
        nsecs.push(VerifiedRr {
            owner: r.owner,
            rdata: r.rdata,
            ttl: ttl.min(ttl_cap),
            sigs: sigs_at(r.owner, RType::NSEC),
        });
    }
    let soa = VerifiedRr {
        owner: zone,
        rdata: &soa.rdata,
        ttl: soa.ttl.min(ttl_cap),
        sigs: sigs_at(zone, RType::SOA),
    };
    res.nsec
        .put(zone, soa, nsecs, res.config.max_negative_ttl, now);
}

/// Judges one RRset of the chain.
fn judge_rrset(
    res: &Resolver,
    f: &Frame,
    note: &Note,
    limits: &Limits,
    budget: &mut Budget,
    now: u64,
) -> (Security, u16) {
    let (owner, rtype) = note.owner(&f.chain);
    let zone = data_zone(res, owner, rtype, &f.ev.sigs, note.zone.as_ref(), now)
        .unwrap_or_else(|_| zone_of(owner, rtype, &f.ev.sigs, note.zone.as_ref()));
    let rdatas: Vec<&[u8]> = f.chain[note.start..note.end]
        .iter()
        .map(|r| &r.rdata[..])
        .collect();
    let sigs = || {
        f.ev.sigs
            .iter()
            .filter(move |s| s.owner.as_ref().eq_ci(&owner))
            .map(|s| &s.rdata[..])
    };
    let keys: Arc<[Vec<u8>]> = match key_status(res, zone, now) {
        KeyStatus::Keys(k) => k,
        KeyStatus::Insecure => return (Security::Insecure, 0),
        KeyStatus::Bogus(code) => return (Security::Bogus, code),
        KeyStatus::NeedDs => return (Security::Bogus, Ede::DNSKEY_MISSING),
        KeyStatus::NoCut => return (Security::Bogus, Ede::DNSSEC_BOGUS),
        KeyStatus::Ds(ds) if rtype == RType::DNSKEY && owner.eq_ci(&zone) => {
            match trusted_keys(zone, &rdatas, Some(&ds), None, limits) {
                Some(k) => k.into(),
                None => return (Security::Bogus, Ede::DNSKEY_MISSING),
            }
        }
        KeyStatus::Anchor if rtype == RType::DNSKEY && owner.eq_ci(&zone) => {
            let anchors = &res.config.trust_anchors;
            let ds: Vec<Vec<u8>> = anchors.ds_of(zone).map(<[u8]>::to_vec).collect();
            let keys: Vec<&[u8]> = anchors.dnskey_of(zone).collect();
            match trusted_keys(zone, &rdatas, Some(&ds), Some(&keys), limits) {
                Some(k) => k.into(),
                None => return (Security::Bogus, Ede::DNSKEY_MISSING),
            }
        }
        KeyStatus::Ds(_) | KeyStatus::Anchor => return (Security::Bogus, Ede::DNSKEY_MISSING),
    };
    match verify_rrset(owner, rtype, &rdatas, sigs(), zone, &keys, limits, budget) {
        Ok(v) => {
            if usize::from(v.labels) < owner.label_count() {
                // A wildcard expansion: the name itself must not exist.
                let proof = match verified_proof(f, zone, &keys, limits, budget) {
                    Ok((proof, _)) => proof,
                    Err(code) => return (Security::Bogus, code),
                };
                let d = check_wildcard(&proof, owner, v.labels, zone, limits, budget);
                return denial_verdict(d);
            }
            (Security::Secure, 0)
        }
        Err(e) => (Security::Bogus, e.0),
    }
}

/// The DNSKEYs of `rdatas` (a zone's DNSKEY RRset) that a DS record of `ds` or an
/// anchor of `anchors` vouches for; `None` if none does.
fn trusted_keys(
    zone: NameRef<'_>,
    rdatas: &[&[u8]],
    ds: Option<&[Vec<u8>]>,
    anchors: Option<&[&[u8]]>,
    limits: &Limits,
) -> Option<Vec<Vec<u8>>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for key in rdatas.iter().copied() {
        if key.len() < 4 || !algorithm_supported(key[3]) {
            continue;
        }
        let tag = key_tag(key);
        let by_anchor = anchors.is_some_and(|a| a.contains(&key));
        let by_ds = ds.is_some_and(|ds| {
            ds.iter()
                .take(usize::from(limits.max_key_collisions) * 4)
                .any(|d| {
                    if d.len() < 5 {
                        return false;
                    }
                    let dtag = u16::from_be_bytes([d[0], d[1]]);
                    if dtag != tag || d[2] != key[3] || !digest_supported(d[3]) {
                        return false;
                    }
                    let Some(dt) = DigestType::from_number(d[3]) else {
                        return false;
                    };
                    let mut out = [0u8; 48];
                    let n = ds_digest(zone, key, dt, &mut out);
                    d[4..] == out[..n]
                })
        });
        if by_anchor || by_ds {
            out.push(key.to_vec());
        }
    }
    (!out.is_empty()).then_some(out)
}
