//! Signing what an update changes in a signed zone, before the answer is sent: the
//! unsigned [`Change`] an update made of the current signed version in, the signed change
//! out, so that the new version applied from it ([`Change::apply`]) holds what signing
//! the new zone whole ([`shardns_dnssec::sign_list`]) would give, and a validator sees the
//! new records as secure at once.
//!
//! This module owns the incremental half of signing (the full signer owns the rest: the
//! first signing, key rollovers, refreshing signatures): for every RRset the update
//! changed, the old RRSIGs deleted and new ones made (an RRset removed loses its RRSIGs;
//! at a zone cut only DS is signed, occluded names and glue never); the NSEC or NSEC3
//! records that change when a name appears, disappears or changes its types (the
//! predecessor's next pointer, the new name's record, the gone name's removed; with NSEC3
//! the empty non-terminals a name makes or leaves, and opt-out as the zone has it), with
//! their RRSIGs; and the new SOA's RRSIG. Why here and not in the server: it is a function
//! of the zone version and the change alone (sans-I/O, no clock: the caller passes the
//! signature window in [`SignParams`]), so the property that matters, "the same as a full
//! signing", is tested against the full signer on random zones and updates.
//!
//! The cost follows the change, not the zone: a touched name's RRsets are signed again,
//! its chain neighbours found by a binary search in the zone's denial index (NSEC owners in
//! canonical order, NSEC3 hashes in order) and steps over the names the change removes.
//! A cut or DNAME made or unmade at an existing name changes every name below it (each
//! becomes occluded, or authoritative again): those names are signed again and take their
//! place in the chain (or leave it), work that follows the names below.
//!
//! One exception reads the whole zone, once, without hashing or signing: a pass over the
//! nodes' parent links when a change needs to know the names below a name (a cut or
//! DNAME made or unmade at an existing name; with NSEC3, a name left with no data, or an
//! empty non-terminal whose names below may all be gone), since the zone keeps no list of
//! a node's children. About 15 ns a node (0.3 ms for a 24,000-node zone), against
//! some 50 µs for the signing of a small change and half a second for the whole zone's
//! signing (10,000 names, one thread, release build).
//!
//! What it refuses ([`ResignKind`]; the caller signs the zone whole instead, or answers
//! SERVFAIL): a zone not signed with `params.denial`; keys other than those the zone was
//! signed with (a rollover is the full signer's); an SOA TTL or MINIMUM that moves the
//! TTL of every NSEC/NSEC3 record (or of the key RRsets); a change not read against this
//! version; a new name whose NSEC3 hash is another's. The signer's own
//! records in a change are left out of the signed change, as the full signer drops them:
//! RRSIG, NSEC, NSEC3 and NSEC3PARAM anywhere, DNSKEY, CDS and CDNSKEY at the apex.

mod chain;
mod nsec;
mod nsec3;
mod state;

use super::{Change, ChangeRecord};
use crate::db::{NodeRef, Zone};
pub use crate::error::ResignKind;
use crate::Error;
use shardns_dnssec::cds::apex_records;
use shardns_dnssec::chain::denial_ttl;
use shardns_dnssec::sign::{sign_rrset, RrsetToSign, RrsigFields, Scratch};
use shardns_dnssec::{Denial, SignParams, SigningKey, ZoneKey};
use shardns_wire::{Class, Name, RType};
use state::{same_set, Kind, View};
use std::collections::BTreeSet;

impl From<shardns_dnssec::Error> for ResignKind {
    fn from(e: shardns_dnssec::Error) -> Self {
        Self::Key(e.to_string())
    }
}

/// Signs `change`, an update read against `zone` (a version signed by the full signer or
/// by earlier calls of this), with the keys `keys` (as [`shardns_dnssec::sign_list`] takes
/// them), the denial and signature window of `params` (`SignParams::new(now, &policy)`
/// with the zone's denial: the window is that of the time of the update; `params.serial`
/// is not read, the serial is the change's, nor `threads`: one thread signs). Returns the
/// change with its signatures and chain records, for [`Change::apply`] on `zone`: its
/// `deleted` and `added` are the change's (less the signer's own records) followed by the
/// RRSIGs and NSEC or NSEC3 records deleted and added.
pub fn sign_change(
    zone: &Zone,
    change: &Change,
    keys: &[ZoneKey<'_>],
    params: &SignParams,
) -> Result<Change, Error> {
    signed(zone, change, keys, params).map_err(Error::Resign)
}

fn signed(
    zone: &Zone,
    change: &Change,
    keys: &[ZoneKey<'_>],
    params: &SignParams,
) -> Result<Change, ResignKind> {
    let apex = zone.apex_node();
    let soa = apex.rrset(RType::SOA).ok_or(ResignKind::Stale)?;
    if soa.ttl != change.old_soa.0 || soa.rdatas().next() != Some(&change.old_soa.1[..]) {
        return Err(ResignKind::Stale);
    }
    let ttl = denial_ttl(change.soa.0, &change.soa.1);
    check_denial(zone, params, ttl)?;
    check_keys(zone, keys, params, change.soa.0)?;

    let signer_owned = |o: &Name, t: RType| match t {
        RType::RRSIG | RType::NSEC | RType::NSEC3 | RType::NSEC3PARAM => true,
        RType::DNSKEY | RType::CDS | RType::CDNSKEY => o.as_ref().eq_ci(&zone.apex()),
        _ => false,
    };
    let keep = |list: &[ChangeRecord]| -> Vec<ChangeRecord> {
        list.iter()
            .filter(|r| !signer_owned(&r.0, r.1))
            .cloned()
            .collect()
    };
    let (deleted, added) = (keep(&change.deleted), keep(&change.added));
    let mut view = View::new(zone, &deleted, &added);
    view.touch_occluded();
    let mut out = Out {
        apex: apex.name().to_name(),
        keys: keys
            .iter()
            .filter(|k| k.signs_zone)
            .map(|k| k.key)
            .collect(),
        params,
        scratch: Scratch::default(),
        deleted,
        added,
    };
    sign_rrsets(&view, &mut out)?;
    // The SOA: its new RRSIGs.
    out.unsign(apex, RType::SOA);
    let owner = out.apex.clone();
    out.sign(&owner, RType::SOA, change.soa.0, &[&change.soa.1])?;
    match &params.denial {
        Denial::Nsec => nsec::patch(&view, &mut out, ttl)?,
        Denial::Nsec3 { params: p, opt_out } => {
            nsec3::patch(&mut view, &mut out, ttl, p, *opt_out)?
        }
    }
    Ok(Change {
        deleted: out.deleted,
        added: out.added,
        old_soa: change.old_soa.clone(),
        soa: change.soa.clone(),
    })
}

/// The zone is signed with `params.denial`, its chain's TTL `ttl`.
fn check_denial(zone: &Zone, params: &SignParams, ttl: u32) -> Result<(), ResignKind> {
    let denial = zone.denial.as_ref().ok_or(ResignKind::NotSigned)?;
    let apex = zone.apex_node();
    let nsec3param = apex.rrset(RType::NSEC3PARAM);
    let chain_ttl = match &params.denial {
        Denial::Nsec => {
            if denial.nsec3.is_some() || nsec3param.is_some() {
                return Err(ResignKind::NotSigned);
            }
            apex.rrset(RType::NSEC).ok_or(ResignKind::NotSigned)?.ttl
        }
        Denial::Nsec3 { params: p, opt_out } => {
            let chain = denial.nsec3.as_ref().ok_or(ResignKind::NotSigned)?;
            let want = p.nsec3param_rdata();
            let same = nsec3param.is_some_and(|s| s.len() == 1 && s.rdatas().eq([&want[..]]));
            let own = chain
                .matching(0)
                .and_then(|id| zone.node(id).rrset(RType::NSEC3))
                .ok_or(ResignKind::NotSigned)?;
            let flags = own.rdatas().next().and_then(|d| d.get(1).copied());
            if !same || flags != Some(u8::from(*opt_out)) {
                return Err(ResignKind::NotSigned);
            }
            own.ttl
        }
    };
    if chain_ttl != ttl {
        return Err(ResignKind::DenialTtl);
    }
    Ok(())
}

/// The zone's key RRsets are those `keys` and `params.foreign` give (at the TTL `params`
/// and the new SOA TTL give), and its SOA and DNSKEY RRsets are signed by the keys that sign them.
fn check_keys(
    zone: &Zone,
    keys: &[ZoneKey<'_>],
    params: &SignParams,
    soa_ttl: u32,
) -> Result<(), ResignKind> {
    let apex = zone.apex_node();
    let key_ttl = params.dnskey_ttl.unwrap_or(soa_ttl);
    let mut want: [BTreeSet<Vec<u8>>; 3] = Default::default();
    for k in keys.iter().filter(|k| k.dnskey) {
        want[0].insert(k.key.dnskey_rdata().to_vec());
    }
    // A multi-signer zone's other providers' records, as the full signer adds them.
    want[0].extend(params.foreign.dnskey.iter().cloned());
    let eligible = keys.iter().filter(|k| k.cds).map(|k| k.key.dnskey_rdata());
    let (cdnskey, cds) =
        apex_records(zone.apex(), eligible, &params.cds).ok_or(ResignKind::Keys)?;
    let (cdnskey, cds) = params.foreign.merge_cds(cdnskey, cds);
    want[1].extend(cdnskey);
    want[2].extend(cds);
    for (rtype, want) in [RType::DNSKEY, RType::CDNSKEY, RType::CDS]
        .iter()
        .zip(&want)
    {
        let have = apex.rrset(*rtype);
        let same = match have {
            None => want.is_empty(),
            Some(s) => {
                s.ttl == key_ttl && s.rdatas().map(<[u8]>::to_vec).collect::<BTreeSet<_>>() == *want
            }
        };
        if !same {
            return Err(ResignKind::Keys);
        }
    }
    let tags = |pick: fn(&ZoneKey<'_>) -> bool| -> BTreeSet<(u8, u16)> {
        keys.iter()
            .filter(|k| pick(k))
            .map(|k| (k.key.algorithm().number(), k.key.tag()))
            .collect()
    };
    let signed_by = |rtype: RType| -> BTreeSet<(u8, u16)> {
        apex.rrset(rtype)
            .and_then(|s| apex.signatures(&s))
            .map(|sigs| {
                sigs.rdatas()
                    .filter_map(RrsigFields::parse)
                    .map(|(f, _)| (f.algorithm, f.key_tag))
                    .collect()
            })
            .unwrap_or_default()
    };
    let zone_keys = tags(|k| k.signs_zone);
    if zone_keys.is_empty()
        || signed_by(RType::SOA) != zone_keys
        || signed_by(RType::DNSKEY) != tags(|k| k.signs_keys)
    {
        return Err(ResignKind::Keys);
    }
    Ok(())
}

/// The signed change being made.
pub(super) struct Out<'a> {
    /// The apex as the zone stores it: the RRSIGs' signer.
    apex: Name,
    /// The keys that sign the zone's RRsets (all but the key RRsets).
    keys: Vec<&'a SigningKey>,
    params: &'a SignParams,
    scratch: Scratch,
    pub(super) deleted: Vec<ChangeRecord>,
    pub(super) added: Vec<ChangeRecord>,
}

impl Out<'_> {
    /// Adds the RRSIGs of the RRset `owner` `rtype` (TTL `ttl`, records `rdatas`).
    pub(super) fn sign(
        &mut self,
        owner: &Name,
        rtype: RType,
        ttl: u32,
        rdatas: &[&[u8]],
    ) -> Result<(), shardns_dnssec::Error> {
        self.scratch.rrset.clear();
        for d in rdatas {
            self.scratch.rrset.push(rtype, d);
        }
        self.scratch.rrset.finish();
        let what = RrsetToSign {
            owner: owner.as_ref(),
            class: Class::IN,
            rtype,
            ttl,
        };
        for key in &self.keys {
            let rdata = sign_rrset(
                key,
                what,
                self.apex.as_ref(),
                self.params.inception,
                self.params.expiration,
                &mut self.scratch,
            )?;
            self.added.push((owner.clone(), RType::RRSIG, ttl, rdata));
        }
        Ok(())
    }

    /// Deletes the RRSIGs the zone holds for `node`'s RRset of `rtype`.
    pub(super) fn unsign(&mut self, node: NodeRef<'_>, rtype: RType) {
        let Some(set) = node.rrset(rtype) else { return };
        if let Some(sigs) = node.signatures(&set) {
            let owner = node.name().to_name();
            for d in sigs.rdatas() {
                self.deleted
                    .push((owner.clone(), RType::RRSIG, sigs.ttl, d.to_vec()));
            }
        }
    }

    /// Puts the denial record `owner` `rtype` `ttl` `rdata` in place of the one `old`
    /// holds (if any), signed; nothing if it is the same.
    pub(super) fn denial(
        &mut self,
        owner: &Name,
        rtype: RType,
        ttl: u32,
        rdata: Vec<u8>,
        old: Option<NodeRef<'_>>,
    ) -> Result<(), shardns_dnssec::Error> {
        if let Some(node) = old {
            if let Some(set) = node.rrset(rtype) {
                if set.ttl == ttl && set.len() == 1 && set.rdatas().eq([&rdata[..]]) {
                    return Ok(());
                }
            }
            self.remove_denial(node, rtype);
        }
        self.sign(owner, rtype, ttl, &[&rdata])?;
        self.added.push((owner.clone(), rtype, ttl, rdata));
        Ok(())
    }

    /// Deletes `node`'s denial record of `rtype` and its RRSIGs.
    pub(super) fn remove_denial(&mut self, node: NodeRef<'_>, rtype: RType) {
        let Some(set) = node.rrset(rtype) else { return };
        let owner = node.name().to_name();
        for d in set.rdatas() {
            self.deleted
                .push((owner.clone(), rtype, set.ttl, d.to_vec()));
        }
        self.unsign(node, rtype);
    }
}

/// New RRSIGs for the RRsets the change touched: deleted where the RRset changed or its
/// name changed what it is (became a cut, ...), made where the new RRset is signed.
fn sign_rrsets(view: &View<'_>, out: &mut Out<'_>) -> Result<(), ResignKind> {
    let zone = view.zone;
    for k in &view.order {
        let t = &view.touched[k];
        let name = t.name.as_ref();
        let (was, is) = (view.kind(name, false), view.kind(name, true));
        let types: BTreeSet<RType> = t.old.keys().chain(t.new.keys()).copied().collect();
        for rtype in types {
            if rtype == RType::SOA && is == Kind::Apex {
                continue;
            }
            let (old, new) = (t.old.get(&rtype), t.new.get(&rtype));
            if was == is && same_set(old, new) {
                continue;
            }
            if let Some(id) = t.node {
                out.unsign(zone.node(id), rtype);
            }
            if let Some((ttl, rdatas)) = new.filter(|_| is.signs(rtype)) {
                let rdatas: Vec<&[u8]> = rdatas.iter().map(Vec::as_slice).collect();
                out.sign(&t.name, rtype, *ttl, &rdatas)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
