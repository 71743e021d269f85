//! offline -- an offline KSK, as Knot 3.3's KSR/SKR: the zone's server holds only its
//! ZSKs; the KSK is on another machine, which signs the DNSKEY (and CDS, CDNSKEY) RRsets
//! ahead of time, one set for each period of the ZSK timeline.
//!
//! - [`zsk_periods`]: the server's side of a key signing request (KSR): the ZSKs in the
//!   DNSKEY RRset over a span of time, cut where that set changes (a ZSK published or
//!   withdrawn by a pre-publication rollover, whose times the key files hold).
//! - [`sign_request`]: the KSK's side: for each period the whole DNSKEY RRset (the ZSKs
//!   asked for and the KSKs published then), the CDNSKEY and CDS RRsets if published, and
//!   their RRSIGs by the active KSKs, valid over the period and `overlap` past its end (a
//!   signed key response, SKR).
//! - [`check_response`]: the server's check of an SKR before it takes it: periods in order
//!   and without gaps, each period's ZSKs those of the server's timeline, every RRSIG made
//!   by a SEP key of its period's DNSKEY RRset, verifying, and valid over the whole period.
//! - [`Response::period_at`]: the period the signer serves at a given time.
//!
//! The text forms of the two documents are the control plane's (`signing::offline`), which
//! has a zone file reader. Sans-I/O: times are passed in.

use crate::alg::Algorithm;
use crate::cds::{self, CdsParams};
use crate::error::Error;
use crate::key::{rsa_split, FLAG_REVOKE, FLAG_SEP, FLAG_ZONE};
use crate::keys::{KeyMeta, Role, StoredKey};
use crate::sign::{sign_rrset, verify_rrsig, RrsetToSign, RrsigFields, Scratch};
use shardns_wire::{Class, Name, RType, Record};

/// A period of a KSR: from `from` (included) to `to` (excluded), seconds since 1970, the
/// DNSKEY rdatas of the ZSKs published then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestPeriod {
    /// Start, included.
    pub from: u64,
    /// End, excluded.
    pub to: u64,
    /// The ZSKs' DNSKEY rdatas, sorted.
    pub zsks: Vec<Vec<u8>>,
}

/// A key signing request: the zone, the TTL its DNSKEY RRset is served with, and the ZSKs
/// of each period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The zone.
    pub zone: Name,
    /// The DNSKEY (and CDS, CDNSKEY) TTL, which the RRSIGs sign as their original TTL.
    pub ttl: u32,
    /// The periods, in order, each starting where the previous ends.
    pub periods: Vec<RequestPeriod>,
}

/// A period of an SKR: the apex's DNSKEY RRset, CDNSKEY and CDS if published, and the
/// RRSIGs of those, from `from` to `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponsePeriod {
    /// Start, included.
    pub from: u64,
    /// End, excluded.
    pub to: u64,
    /// The records: DNSKEY, CDNSKEY, CDS and RRSIG, all at the apex.
    pub records: Vec<Record>,
}

impl ResponsePeriod {
    /// The rdatas of the records of `rtype`.
    pub fn rdatas(&self, rtype: RType) -> Vec<&[u8]> {
        self.records
            .iter()
            .filter(|r| r.rtype == rtype)
            .map(|r| r.rdata.as_slice())
            .collect()
    }

    /// The ZSKs of the DNSKEY RRset (no SEP flag), sorted.
    pub fn zsks(&self) -> Vec<Vec<u8>> {
        let mut zsks: Vec<Vec<u8>> = self
            .rdatas(RType::DNSKEY)
            .into_iter()
            .filter(|k| flags(k) & FLAG_SEP == 0)
            .map(<[u8]>::to_vec)
            .collect();
        zsks.sort();
        zsks
    }
}

/// A signed key response: the zone and its periods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The zone.
    pub zone: Name,
    /// The periods, in order, each starting where the previous ends.
    pub periods: Vec<ResponsePeriod>,
}

impl Response {
    /// The period that covers `now`, if any.
    pub fn period_at(&self, now: u64) -> Option<&ResponsePeriod> {
        self.periods.iter().find(|p| p.from <= now && now < p.to)
    }

    /// When the last period ends (0 with none).
    pub fn end(&self) -> u64 {
        self.periods.last().map_or(0, |p| p.to)
    }
}

fn flags(dnskey: &[u8]) -> u16 {
    dnskey
        .get(..2)
        .map_or(0, |f| u16::from_be_bytes([f[0], f[1]]))
}

fn offline(why: impl Into<String>) -> Error {
    Error::Offline(why.into())
}

/// The ZSK periods of `keys` (the zone's keys; only ZSKs count) from `from` to `to`: cut
/// at every time a ZSK is published or withdrawn, adjacent periods with the same keys
/// merged. Fails if at some moment of the span no ZSK signs (pregenerate further).
pub fn zsk_periods(keys: &[StoredKey], from: u64, to: u64) -> Result<Vec<RequestPeriod>, Error> {
    if from >= to {
        return Err(offline(format!("empty span: {from} is not before {to}")));
    }
    let zsks: Vec<&StoredKey> = keys.iter().filter(|k| k.meta.role == Role::Zsk).collect();
    let events = |m: &KeyMeta| [m.publish, m.activate, m.inactive, m.delete];
    let mut cuts: Vec<u64> = zsks
        .iter()
        .flat_map(|k| events(&k.meta))
        .flatten()
        .filter(|&t| t > from && t < to)
        .chain([from])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut periods: Vec<RequestPeriod> = Vec::new();
    for (i, &at) in cuts.iter().enumerate() {
        if !zsks.iter().any(|k| k.meta.is_active(at)) {
            return Err(offline(format!(
                "no ZSK signs at {} (pregenerate ZSKs that far)",
                crate::keys::format_time(at)
            )));
        }
        let mut set: Vec<Vec<u8>> = zsks
            .iter()
            .filter(|k| k.meta.is_published(at))
            .map(|k| k.key.dnskey_rdata().to_vec())
            .collect();
        set.sort();
        let end = cuts.get(i + 1).copied().unwrap_or(to);
        match periods.last_mut() {
            Some(last) if last.zsks == set => last.to = end,
            _ => periods.push(RequestPeriod {
                from: at,
                to: end,
                zsks: set,
            }),
        }
    }
    Ok(periods)
}

/// Checks a ZSK's DNSKEY rdata from a KSR: a zone key without SEP or REVOKE, protocol 3,
/// an algorithm we know, a public key of that algorithm's shape.
pub fn check_zsk(rdata: &[u8]) -> Result<Algorithm, Error> {
    let bad = |why: &str| offline(format!("ZSK DNSKEY rdata: {why}"));
    if rdata.len() < 5 {
        return Err(bad("shorter than its fixed fields"));
    }
    let f = flags(rdata);
    if f & FLAG_ZONE == 0 || f & (FLAG_SEP | FLAG_REVOKE) != 0 {
        return Err(bad(&format!("flags {f}, a ZSK has 256")));
    }
    if rdata[2] != 3 {
        return Err(bad(&format!("protocol {}, not 3", rdata[2])));
    }
    let alg = Algorithm::from_number(rdata[3])
        .filter(|a| a.can_sign())
        .ok_or_else(|| bad(&format!("unknown algorithm {}", rdata[3])))?;
    let key = &rdata[4..];
    let fits = match alg {
        Algorithm::EcdsaP256Sha256 => key.len() == 64,
        Algorithm::EcdsaP384Sha384 => key.len() == 96,
        Algorithm::Ed25519 => key.len() == 32,
        _ => rsa_split(key).is_some_and(|(_, m)| (128..=512).contains(&m.len())),
    };
    if !fits {
        return Err(bad(&format!(
            "a public key of {} octets for {alg}",
            key.len()
        )));
    }
    Ok(alg)
}

/// How the KSK side signs a request: the CDS settings, and how far the RRSIGs reach
/// before a period (`backdate`) and after it (`overlap`: at least the DNSKEY TTL, so a
/// cached RRset outlives the period with a valid signature).
#[derive(Clone, Copy, Debug)]
pub struct SignKsr {
    /// Which CDS and CDNSKEY records, and the digest.
    pub cds: CdsParams,
    /// Seconds before a period's start its RRSIGs' inception is.
    pub backdate: u32,
    /// Seconds after a period's end its RRSIGs' expiration is.
    pub overlap: u32,
}

/// The KSK's side: signs `request` with the KSKs of `ksks` (the zone's keys in the KSK's
/// key directory; those of role KSK count). A period is cut again where a KSK is
/// published, starts or stops signing, or is withdrawn. Fails on a malformed request
/// (periods out of order or with gaps, a ZSK that does not parse, another zone) or a
/// period no KSK signs.
pub fn sign_request(
    request: &Request,
    ksks: &[StoredKey],
    how: &SignKsr,
) -> Result<Response, Error> {
    let zone = &request.zone;
    check_periods(request.periods.iter().map(|p| (p.from, p.to)))?;
    let ksks: Vec<&StoredKey> = ksks.iter().filter(|k| k.meta.role == Role::Ksk).collect();
    if let Some(k) = ksks
        .iter()
        .find(|k| !k.meta.zone.as_ref().eq_ci(&zone.as_ref()))
    {
        return Err(offline(format!(
            "KSK {} is of {}, not {zone}",
            k.meta.tag, k.meta.zone
        )));
    }
    if how.overlap < request.ttl {
        return Err(offline(format!(
            "overlap {} s is shorter than the DNSKEY TTL {} s: a cached DNSKEY RRset would \
             outlive its signature",
            how.overlap, request.ttl
        )));
    }
    let mut periods = Vec::new();
    for p in &request.periods {
        if p.zsks.is_empty() {
            return Err(offline(format!("period {}: no ZSK", p.from)));
        }
        // RRSIG times compare in serial arithmetic (RFC 4034 §3.1.5): a signature valid
        // for 2^31 s or more would not be valid over its whole span.
        let span = (p.to.saturating_add(u64::from(how.overlap)))
            .saturating_sub(p.from.saturating_sub(u64::from(how.backdate)));
        if span >= 1 << 31 {
            return Err(offline(format!(
                "period {} to {}: its RRSIGs would be valid for {span} s with the backdate and \
                 overlap, past the 2^31 s RRSIG times can span: ask for shorter periods",
                crate::keys::format_time(p.from),
                crate::keys::format_time(p.to)
            )));
        }
        for z in &p.zsks {
            check_zsk(z).map_err(|e| offline(format!("period {}: {e}", p.from)))?;
        }
        let mut cuts: Vec<u64> = ksks
            .iter()
            .flat_map(|k| k.meta.times().map(|(_, t)| t))
            .flatten()
            .filter(|&t| t > p.from && t < p.to)
            .chain([p.from, p.to])
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            periods.push(sign_period(
                zone,
                request.ttl,
                &p.zsks,
                &ksks,
                w[0],
                w[1],
                how,
            )?);
        }
    }
    Ok(Response {
        zone: zone.clone(),
        periods,
    })
}

/// One period of the response: its key RRsets and their RRSIGs.
fn sign_period(
    zone: &Name,
    ttl: u32,
    zsks: &[Vec<u8>],
    ksks: &[&StoredKey],
    from: u64,
    to: u64,
    how: &SignKsr,
) -> Result<ResponsePeriod, Error> {
    let apex = zone.as_ref();
    let published: Vec<&&StoredKey> = ksks.iter().filter(|k| k.meta.is_published(from)).collect();
    let signers: Vec<&&StoredKey> = published
        .iter()
        .copied()
        .filter(|k| k.meta.is_active(from))
        .collect();
    if signers.is_empty() {
        return Err(offline(format!(
            "no KSK of {zone} is active at {} (the key directory's KSK times)",
            crate::keys::format_time(from)
        )));
    }
    let mut dnskeys: Vec<Vec<u8>> = zsks.to_vec();
    dnskeys.extend(published.iter().map(|k| k.key.dnskey_rdata().to_vec()));
    dnskeys.sort();
    dnskeys.dedup();
    let eligible = published
        .iter()
        .filter(|k| k.meta.has_cds(from))
        .map(|k| k.key.dnskey_rdata());
    let (cdnskey, cds) = cds::apex_records(apex, eligible, &how.cds)
        .ok_or_else(|| offline("a KSK's DNSKEY is too short"))?;
    let mut records = Vec::new();
    let inception = from.saturating_sub(u64::from(how.backdate)) as u32;
    let expiration = (to + u64::from(how.overlap)) as u32;
    let mut scratch = Scratch::default();
    for (rtype, set) in [
        (RType::DNSKEY, dnskeys),
        (RType::CDNSKEY, cdnskey),
        (RType::CDS, cds),
    ] {
        if set.is_empty() {
            continue;
        }
        scratch.rrset.clear();
        for rdata in &set {
            scratch.rrset.push(rtype, rdata);
        }
        scratch.rrset.finish();
        let what = RrsetToSign {
            owner: apex,
            class: Class::IN,
            rtype,
            ttl,
        };
        let mut sigs = Vec::new();
        for k in &signers {
            let rdata = sign_rrset(&k.key, what, apex, inception, expiration, &mut scratch)
                .map_err(|e| offline(format!("KSK {}: {e}", k.meta.tag)))?;
            sigs.push(rdata);
        }
        let record = |rtype, rdata| Record {
            owner: zone.clone(),
            rtype,
            class: Class::IN,
            ttl,
            rdata,
        };
        records.extend(set.into_iter().map(|r| record(rtype, r)));
        records.extend(sigs.into_iter().map(|r| record(RType::RRSIG, r)));
    }
    Ok(ResponsePeriod { from, to, records })
}

/// Periods in order, non-empty, each starting where the previous ends, at least one.
fn check_periods(spans: impl Iterator<Item = (u64, u64)>) -> Result<(), Error> {
    let mut last: Option<u64> = None;
    let mut n = 0;
    for (from, to) in spans {
        n += 1;
        if from >= to {
            return Err(offline(format!("period {from}..{to} is empty")));
        }
        if let Some(end) = last.filter(|&end| end != from) {
            return Err(offline(format!(
                "period {from}..{to} does not start where the previous one ends ({end})"
            )));
        }
        last = Some(to);
    }
    if n == 0 {
        return Err(offline("no period"));
    }
    Ok(())
}

/// The server's check of an SKR against its own ZSK timeline (`expected`, from
/// [`zsk_periods`] over the response's span): see the module documentation. The error
/// says which period and what is wrong.
pub fn check_response(response: &Response, expected: &[RequestPeriod]) -> Result<(), Error> {
    check_periods(response.periods.iter().map(|p| (p.from, p.to)))?;
    for p in &response.periods {
        check_period(&response.zone, p, expected).map_err(|e| {
            offline(format!(
                "period {} to {}: {e}",
                crate::keys::format_time(p.from),
                crate::keys::format_time(p.to)
            ))
        })?;
    }
    Ok(())
}

fn check_period(zone: &Name, p: &ResponsePeriod, expected: &[RequestPeriod]) -> Result<(), Error> {
    let want = expected
        .iter()
        .find(|e| e.from <= p.from && p.to <= e.to)
        .ok_or_else(|| offline("not within one period of the ZSK timeline of the key directory"))?;
    for (i, r) in p.records.iter().enumerate() {
        if p.records[..i].contains(r) {
            return Err(offline(format!("a record given twice: {r}")));
        }
        if !r.owner.as_ref().eq_ci(&zone.as_ref()) {
            return Err(offline(format!("a record of {} outside the apex", r.owner)));
        }
        // The RRSIGs are verified as class IN: a record of another class would be served
        // under signatures that do not cover it.
        if r.class != Class::IN {
            return Err(offline(format!("a record of class {}: {r}", r.class)));
        }
        if ![RType::DNSKEY, RType::CDNSKEY, RType::CDS, RType::RRSIG].contains(&r.rtype) {
            return Err(offline(format!("a {} record", r.rtype)));
        }
    }
    if p.zsks() != want.zsks {
        return Err(offline(
            "its ZSKs are not those the key directory publishes then (another KSR, or keys \
             changed since it was made)",
        ));
    }
    let seps: Vec<&[u8]> = p
        .rdatas(RType::DNSKEY)
        .into_iter()
        .filter(|k| flags(k) & FLAG_SEP != 0)
        .collect();
    if seps.is_empty() {
        return Err(offline("no KSK in the DNSKEY RRset"));
    }
    // CDNSKEY and CDS go together, and a CDNSKEY is a key of the RRset (RFC 7344 §4.1) or
    // the delete form (RFC 8078 §4).
    let (cdnskeys, cds) = (p.rdatas(RType::CDNSKEY), p.rdatas(RType::CDS));
    if cdnskeys.is_empty() != cds.is_empty() {
        return Err(offline("CDNSKEY without CDS, or CDS without CDNSKEY"));
    }
    let dnskeys = p.rdatas(RType::DNSKEY);
    let delete = cdnskeys == [&cds::CDNSKEY_DELETE[..]];
    if !delete && cdnskeys.iter().any(|k| !dnskeys.contains(k)) {
        return Err(offline("a CDNSKEY that is not a key of the DNSKEY RRset"));
    }
    let (from, to) = (p.from as u32, p.to as u32);
    for rtype in [RType::DNSKEY, RType::CDNSKEY, RType::CDS] {
        let set: Vec<&Record> = p.records.iter().filter(|r| r.rtype == rtype).collect();
        let sigs: Vec<&Record> = p
            .records
            .iter()
            .filter(|r| r.rtype == RType::RRSIG)
            .filter(|r| RrsigFields::parse(&r.rdata).is_some_and(|(f, _)| f.type_covered == rtype))
            .collect();
        if set.is_empty() {
            if sigs.is_empty() {
                continue;
            }
            return Err(offline(format!(
                "an RRSIG of {rtype} without {rtype} records"
            )));
        }
        if sigs.is_empty() {
            return Err(offline(format!("no RRSIG of the {rtype} RRset")));
        }
        if set.iter().any(|r| r.ttl != set[0].ttl) {
            return Err(offline(format!("{rtype} records of different TTLs")));
        }
        for sig in sigs {
            let (f, _) = RrsigFields::parse(&sig.rdata).ok_or(Error::MalformedRrsig)?;
            if !f.valid_at(from) || !f.valid_at(to) {
                return Err(offline(format!(
                    "the RRSIG of {rtype} by key {} is not valid over the whole period",
                    f.key_tag
                )));
            }
            if f.original_ttl != set[0].ttl {
                return Err(offline(format!("the RRSIG of {rtype} signs another TTL")));
            }
            let verified = seps.iter().any(|k| {
                verify_rrsig(
                    &sig.rdata,
                    zone.as_ref(),
                    Class::IN,
                    rtype,
                    set.iter().map(|r| r.rdata.as_slice()),
                    k,
                )
                .is_ok()
            });
            if !verified {
                return Err(offline(format!(
                    "the RRSIG of {rtype} by key {} does not verify with a KSK of the period",
                    f.key_tag
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
