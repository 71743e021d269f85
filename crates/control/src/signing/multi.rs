//! signing::multi -- multi-signer zones (RFC 8901 model 2, `dnskey_management =
//! "incremental"`, Knot's `dnskey-management: incremental`): the apex's DNSKEY, CDS and
//! CDNSKEY records of the zone's data (its file, and dynamic updates, the way the providers
//! exchange their ZSKs and KSKs) that are not ours are kept and published beside ours
//! ([`shardns_dnssec::Foreign`]); ours stay whatever the data says, and the foreign ones
//! never sign.
//!
//! "Ours" is every key of the key directory for the zone, whatever its state, so that a key
//! of ours that retired does not come back because another provider still lists it. With
//! `"full"` (the default) the zone's key records are dropped, as the signer always did.

use super::SignSpec;
use shardns_dnssec::cds::{CDNSKEY_DELETE, CDS_DELETE};
use shardns_dnssec::digest::Fingerprint;
use shardns_dnssec::{
    ds_rdata, key_tag, DigestType, DnskeyManagement, Foreign, RecordList, StoredKey, ZoneKey,
};
use shardns_wire::{Name, RType};
use shardns_zone::update::Change;
use shardns_zone::Zone;

/// True if the zone keeps the key records of its data (multi-signer).
pub fn keeps_keys(spec: &SignSpec) -> bool {
    spec.dnskey_management == DnskeyManagement::Incremental
}

/// An apex key record type: DNSKEY, CDS or CDNSKEY.
fn key_type(rtype: RType) -> bool {
    matches!(rtype, RType::DNSKEY | RType::CDS | RType::CDNSKEY)
}

/// The records of `records` the signer makes anew for the zone at `apex` (they are left
/// out of the unsigned records): those of `signing::updates::signer_owned`, less the apex's
/// key records when the zone keeps them.
pub fn signer_owned(spec: &SignSpec, apex: &Name, owner: &Name, rtype: RType) -> bool {
    super::updates::signer_owned(apex, owner, rtype) && !(keeps_keys(spec) && key_type(rtype))
}

/// Why `change` (a dynamic update of the zone at `apex`) is to be signed with the zone
/// whole: it adds or deletes apex key records of a zone that keeps them, which the
/// incremental signer leaves out (it signs with our keys' RRsets only). `None`: it may be
/// signed incrementally.
pub fn needs_whole(spec: &SignSpec, apex: &Name, change: &Change) -> Option<String> {
    let touches = change
        .deleted
        .iter()
        .chain(&change.added)
        .any(|r| key_type(r.1) && r.0.as_ref().eq_ci(&apex.as_ref()));
    (keeps_keys(spec) && touches)
        .then(|| "it changes the DNSKEY, CDS or CDNSKEY records of a multi-signer zone".into())
}

/// The fingerprint's part for the setting: nothing for `"full"`, so that the signed zones
/// kept before the setting existed keep their fingerprints.
pub fn fingerprint(spec: &SignSpec, f: &mut Fingerprint) {
    if keeps_keys(spec) {
        f.part(b"dnskey-management incremental");
    }
}

/// Takes the apex's DNSKEY, CDS and CDNSKEY records out of `records` (the zone at `apex`,
/// before signing) when the zone keeps them, and gives those that are not ours (`keys`:
/// the zone's keys in the key directory): the foreign ones to publish. The delete forms
/// (RFC 8078 §4) are never taken: whether the zone asks for its DS to go is our setting
/// (`cds_cdnskey_publish = "delete-dnssec"`), not the data's. `"full"`: nothing, and the
/// records stay for the signer to drop.
pub fn take_foreign(
    spec: &SignSpec,
    apex: &Name,
    records: &mut RecordList,
    keys: &[StoredKey],
) -> Foreign {
    let mut foreign = Foreign::default();
    if !keeps_keys(spec) {
        return foreign;
    }
    let ours: Vec<&[u8]> = keys.iter().map(|k| k.key.dnskey_rdata()).collect();
    let our_cds = |rdata: &[u8]| {
        let digest = rdata.get(3).copied().and_then(DigestType::from_number);
        digest.is_some_and(|d| {
            ours.iter()
                .any(|k| ds_rdata(apex.as_ref(), k, d).as_deref() == Some(rdata))
        })
    };
    let mut items = std::mem::take(&mut records.items);
    items.retain(|r| {
        if !key_type(r.rtype) || !records.owner(r).eq_ci(&apex.as_ref()) {
            return true;
        }
        let rdata = records.rdata(r);
        let (list, theirs) = match r.rtype {
            RType::DNSKEY => (&mut foreign.dnskey, !ours.contains(&rdata)),
            RType::CDNSKEY => (
                &mut foreign.cdnskey,
                !ours.contains(&rdata) && rdata != CDNSKEY_DELETE,
            ),
            _ => (&mut foreign.cds, !our_cds(rdata) && rdata != CDS_DELETE),
        };
        if theirs && !list.iter().any(|d| d[..] == *rdata) {
            list.push(rdata.to_vec());
        }
        false
    });
    records.items = items;
    foreign
}

/// Every foreign DNSKEY is of an algorithm one of our keys signs the zone with at this
/// signing (`keys`): a validator wants a signature of every algorithm of the DNSKEY RRset
/// (RFC 4035 §2.2), so the providers sign with the same algorithms (RFC 8901 §4). The
/// error says which key; the zone is not signed (its previous version kept, an update
/// answered SERVFAIL).
pub fn check_algorithms(foreign: &Foreign, keys: &[ZoneKey<'_>]) -> Result<(), String> {
    let ours: Vec<u8> = keys
        .iter()
        .filter(|k| k.signs_zone)
        .map(|k| k.key.algorithm().number())
        .collect();
    for k in &foreign.dnskey {
        let alg = k.get(3).copied().unwrap_or(0);
        if !ours.contains(&alg) {
            return Err(format!(
                "the DNSKEY of another signer with tag {} is of algorithm {alg}, which none \
                 of our keys signs the zone with ({ours:?}): the zone would not validate \
                 (every signer of a multi-signer zone signs with the same algorithms)",
                key_tag(k)
            ));
        }
    }
    Ok(())
}

/// The foreign key records `zone` (a version signed by us) publishes at its apex, for the
/// incremental signer, which then finds the zone's key RRsets as it would make them.
pub fn foreign_of(spec: &SignSpec, zone: &Zone, keys: &[StoredKey]) -> Foreign {
    if !keeps_keys(spec) {
        return Foreign::default();
    }
    let apex = zone.apex_node();
    let mut records = RecordList::default();
    let at = records.push_name(zone.apex());
    for set in apex.rrsets().filter(|s| key_type(s.rtype)) {
        for data in set.rdatas() {
            records.push(at, set.rtype, shardns_wire::Class::IN, set.ttl, data);
        }
    }
    take_foreign(spec, &zone.apex().to_name(), &mut records, keys)
}

#[cfg(test)]
mod tests;
