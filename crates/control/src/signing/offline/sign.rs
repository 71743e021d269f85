//! signing::offline::sign -- the signer with an offline KSK: the zone signed with its ZSKs
//! (their times, set by `pregenerate`, are followed; no key is made or rolled here), then
//! the apex's DNSKEY, CDS and CDNSKEY RRsets and their RRSIGs replaced by those of the
//! imported SKR's period that covers now.
//!
//! The signer is asked for the same RRsets the SKR holds (the SKR's KSKs as published
//! keys, CDS and CDNSKEY if the period has them), so the apex's NSEC or NSEC3 bitmap is
//! right; the DNSKEY RRset it makes must be the SKR's, or the signing fails. Any failure
//! (no SKR, no period for now, keys that do not match) fails the signing with one error
//! logged, and the zone keeps the version it serves: never a DNSKEY RRset without its
//! KSK's signature, never half a rollover.

use super::super::{fingerprint, keystore, serial_gt, soa_serial, SignSpec, SignedFile, StateFile};
use super::{parse_skr, skr_path, zsks_only};
use shardns_dnssec::digest::Fingerprint;
use shardns_dnssec::keys::{format_time, zone_keys};
use shardns_dnssec::offline::ResponsePeriod;
use shardns_dnssec::sign::RrsigFields;
use shardns_dnssec::{
    roll, sign_list, Algorithm, CdsPublish, Previous, RecordList, SigningKey, ZoneKey,
};
use shardns_wire::{Name, RType};
use tracing::{error, info, warn};

/// [`super::super::sign_records`] with an offline KSK (same arguments and result).
pub(in crate::signing) fn sign_records(
    apex: &Name,
    records: RecordList,
    spec: &SignSpec,
    now: u64,
    threads: usize,
) -> Result<(RecordList, u32, u64), String> {
    let signed = sign_inner(apex, records, spec, now, threads);
    if let Err(e) = &signed {
        // Loud: the zone keeps its last signed version, whose key RRsets' signatures
        // expire if nothing is done.
        error!("zone {apex}: offline KSK: {e}; the zone keeps the version it serves");
    }
    signed
}

fn sign_inner(
    apex: &Name,
    records: RecordList,
    spec: &SignSpec,
    now: u64,
    threads: usize,
) -> Result<(RecordList, u32, u64), String> {
    let (_, keys) = keystore::load(apex, spec).map_err(|(e, _)| e)?;
    let keys = zsks_only(apex, keys)?;
    if keys.is_empty() {
        return Err(format!(
            "no ZSK in {}: run `shardns key pregenerate {apex}`",
            spec.key_dir.display()
        ));
    }
    let path = skr_path(&spec.key_dir, apex);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "no SKR imported ({}: {e}): run `shardns key import-skr {apex} FILE`",
            path.display()
        )
    })?;
    let skr = parse_skr(&text, &path)?;
    let period = skr.period_at(now).ok_or_else(|| {
        format!(
            "the imported SKR covers {} to {}, not now ({}): import a new one",
            format_time(skr.periods.first().map_or(0, |p| p.from)),
            format_time(skr.end()),
            format_time(now)
        )
    })?;
    let soa = records
        .items
        .iter()
        .find(|r| r.rtype == RType::SOA && records.owner(r).eq_ci(&apex.as_ref()))
        .ok_or("the zone needs exactly one SOA record at its apex")?;
    let file_serial = soa_serial(records.rdata(soa)).ok_or("a SOA record with bad rdata")?;
    let key_ttl = period
        .records
        .iter()
        .find(|r| r.rtype == RType::DNSKEY)
        .map_or(0, |r| r.ttl);
    let max_ttl = records
        .items
        .iter()
        .map(|r| r.ttl)
        .max()
        .unwrap_or(0)
        .max(key_ttl);
    for w in super::timing_warnings(apex, &spec.key_dir, key_ttl, max_ttl) {
        warn!("{w}");
    }
    let mut timings = spec.roll.timings(key_ttl, max_ttl);
    // No key is made here: a lifetime that is up must not call for a signing (the next
    // ZSK comes from `pregenerate`, with its times in its file).
    timings.zsk_lifetime = None;
    timings.ksk_lifetime = None;
    let state = StateFile::new(&spec.key_dir, apex);
    let last = crate::signing::last_signed(&spec.key_dir, apex)?;

    // What was signed includes the period served: a new SKR or period signs anew.
    let mut f = Fingerprint::default();
    f.part(fingerprint(&records, &keys, spec).as_bytes());
    f.part(format!("{}-{}", period.from, period.to).as_bytes());
    for r in &period.records {
        f.part(r.to_string().as_bytes());
    }
    let fingerprint = f.hex();
    let kept = SignedFile::new(&spec.key_dir, apex);
    if let Some(found) = kept.read_if(Some(&fingerprint), last, now) {
        return Ok(found);
    }
    let serial = match last {
        Some(last) if !serial_gt(file_serial, last) => last.wrapping_add(1),
        _ => file_serial,
    };
    let mut params = spec.sign_params(now);
    params.serial = Some(serial);
    params.threads = threads;
    params.dnskey_ttl = Some(key_ttl);
    let cdnskeys = period.rdatas(RType::CDNSKEY);
    params.cds.publish = if cdnskeys == [&shardns_dnssec::cds::CDNSKEY_DELETE[..]] {
        CdsPublish::DeleteDnssec
    } else if cdnskeys.is_empty() {
        CdsPublish::None
    } else {
        CdsPublish::Always
    };
    let ksks = period_ksks(period)?;
    let mut zk = zone_keys(&keys, now);
    // The signer wants a key for the key RRsets; a ZSK's signatures of them are dropped.
    let signer = zk
        .iter_mut()
        .find(|k| k.signs_zone)
        .ok_or_else(|| format!("no ZSK signs at {}", format_time(now)))?;
    signer.signs_keys = true;
    zk.extend(ksks.iter().map(|k| ZoneKey {
        cds: cdnskeys.contains(&k.dnskey_rdata()),
        ..ZoneKey::published(k)
    }));
    let previous = kept
        .read_any()
        .map(|list| Previous::new(list, now, spec.policy.refresh));
    let signed = sign_list(apex, records, &zk, &params, previous).map_err(|e| e.to_string())?;
    let (expires, signatures) = (signed.expires(now), signed.signatures);
    let list = replace_key_rrsets(apex, signed.list, period)?;
    state.write(serial, &timings, now)?;
    let metas: Vec<_> = keys.iter().map(|k| k.meta.clone()).collect();
    let refresh_at = spec
        .policy
        .refresh_at(expires)
        .min(roll::next_event(&metas, &timings, now).unwrap_or(u64::MAX))
        .min(period.to);
    kept.write(&fingerprint, serial, refresh_at, &list)?;
    info!(
        "zone {apex}: signed with serial {serial} (offline KSK: key RRsets of the SKR period \
         {} to {}); {} new signatures; signed again in {} s",
        format_time(period.from),
        format_time(period.to),
        signatures,
        refresh_at.saturating_sub(now)
    );
    Ok((list, serial, refresh_at))
}

/// The period's KSKs (SEP keys of its DNSKEY RRset), public halves only.
fn period_ksks(period: &ResponsePeriod) -> Result<Vec<SigningKey>, String> {
    period
        .rdatas(RType::DNSKEY)
        .into_iter()
        .filter(|k| k.len() > 4 && k[1] & 1 == 1)
        .map(|k| {
            let alg = Algorithm::from_number(k[3])
                .ok_or_else(|| format!("a KSK of algorithm {} in the SKR", k[3]))?;
            Ok(SigningKey::detached(
                alg,
                u16::from_be_bytes([k[0], k[1]]),
                &[],
                &k[4..],
            ))
        })
        .collect()
}

/// The signed zone with the apex's DNSKEY, CDS and CDNSKEY RRsets and their RRSIGs taken
/// from `period`, once its DNSKEY RRset is checked to be the one the signer made.
fn replace_key_rrsets(
    apex: &Name,
    mut list: RecordList,
    period: &ResponsePeriod,
) -> Result<RecordList, String> {
    let at_apex = |list: &RecordList, r: &shardns_dnssec::Rr| list.owner(r).eq_ci(&apex.as_ref());
    let mut made: Vec<&[u8]> = list
        .items
        .iter()
        .filter(|r| r.rtype == RType::DNSKEY && at_apex(&list, r))
        .map(|r| list.rdata(r))
        .collect();
    let mut theirs = period.rdatas(RType::DNSKEY);
    made.sort();
    theirs.sort();
    if made != theirs {
        return Err(format!(
            "the SKR's DNSKEY RRset for {} to {} is not the key directory's ZSKs and the \
             SKR's KSKs (keys changed since the KSR was made?)",
            format_time(period.from),
            format_time(period.to)
        ));
    }
    // The apex's NSEC or NSEC3 bitmap was made for the signer's types: the SKR's must match.
    for t in [RType::CDS, RType::CDNSKEY] {
        let made = list.items.iter().any(|r| r.rtype == t && at_apex(&list, r));
        if made == period.rdatas(t).is_empty() {
            return Err(format!(
                "the SKR's {t} records for {} do not fit its DNSKEY RRset",
                format_time(period.from)
            ));
        }
    }
    let is_key = |t: RType| matches!(t, RType::DNSKEY | RType::CDS | RType::CDNSKEY);
    let keep: Vec<bool> = list
        .items
        .iter()
        .map(|r| {
            let covered = (r.rtype == RType::RRSIG)
                .then(|| RrsigFields::parse(list.rdata(r)).map(|(f, _)| f.type_covered))
                .flatten();
            !(at_apex(&list, r) && (is_key(r.rtype) || covered.is_some_and(is_key)))
        })
        .collect();
    let mut keep = keep.into_iter();
    list.items.retain(|_| keep.next().unwrap_or(true));
    for r in &period.records {
        list.push_record(r);
    }
    list.sort();
    Ok(list)
}
