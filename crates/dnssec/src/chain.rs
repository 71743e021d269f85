//! Signing a whole zone: the NSEC chain (RFC 4034 §4, RFC 4035 §2.3) or the NSEC3 chain
//! (RFC 5155 §7.1), the apex's DNSKEY, CDS and CDNSKEY RRsets (RFC 7344), and an RRSIG on
//! every authoritative RRset, made on all cores.
//!
//! What is authoritative (RFC 4035 §2.2): every RRset at and below the apex except those
//! below a zone cut or a DNAME (occluded: glue and the like) and, at a zone cut, anything
//! but DS (NS at a cut is the child's, and other data there is glue). Occluded names and
//! empty non-terminals get no NSEC; with NSEC3, empty non-terminals do get one, and with
//! opt-out unsigned delegations (and the empty non-terminals only they make) do not.
//!
//! Keys: a [`ZoneKey`] says whether a key signs the key RRsets (DNSKEY, CDS, CDNSKEY: a
//! KSK's job), the rest of the zone (a ZSK's), or both (a CSK: one key, one DS). The keys
//! marked so are published in the DNSKEY RRset (all but a new KSK of a double-DS rollover
//! whose DS the parent does not have yet); the keys marked for CDS (in the DNSKEY RRset
//! too) get CDS and CDNSKEY as the zone's mode says (`cds`: Knot's `cds-cdnskey-publish`,
//! with SHA-256 or SHA-384 CDS, or the RFC 8078 delete form).
//!
//! Input records of types the signer makes are dropped and made anew: RRSIG, NSEC, NSEC3
//! and NSEC3PARAM anywhere, DNSKEY, CDS and CDNSKEY at the apex. An RRset whose records have
//! different TTLs gets the lowest for all (RFC 2181 §5.2), since one RRSIG covers them.
//! Other signers' key records (`SignParams::foreign`, [`crate::multi`]) are published
//! beside ours.
//!
//! This file holds the parameters, the steps of [`sign_list`] and the classification of
//! names; `nsec` makes the NSEC or NSEC3 chain, `jobs` lists the RRsets to sign and signs
//! them on all cores.

mod jobs;
mod nsec;

use crate::cds::{self, CdsParams};
use crate::error::Error;
use crate::key::SigningKey;
use crate::list::RecordList;
use crate::multi::Foreign;
use crate::nsec3::Nsec3Params;
use crate::reuse::Previous;
use jobs::{jobs, sign_jobs};
pub use nsec::write_bitmap;
use nsec::{nsec3_chain, nsec_chain};
use shardns_wire::{Class, Name, NameRef, RType, Record};

/// How non-existence is proven.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Denial {
    /// NSEC (RFC 4034 §4): the default.
    #[default]
    Nsec,
    /// NSEC3 (RFC 5155) with these parameters ([`Nsec3Params::default`] is RFC 9276's 0
    /// extra iterations and no salt).
    Nsec3 {
        /// Iterations and salt.
        params: Nsec3Params,
        /// Opt-out (RFC 5155 §6): unsigned delegations get no NSEC3 of their own.
        opt_out: bool,
    },
}

/// Signature timing, Knot's defaults: signatures valid 14 days, made again 7 days before
/// they expire, inception an hour in the past for clocks that are behind, no jitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Seconds from now to expiration.
    pub validity: u32,
    /// Re-sign this many seconds before the earliest expiration.
    pub refresh: u32,
    /// Inception this many seconds before now.
    pub backdate: u32,
    /// Each RRSIG expires up to this many seconds before `validity` ends (BIND's
    /// `signatures-jitter`), so that they do not all fall due, and get made again, at once.
    pub jitter: u32,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            validity: 14 * 86_400,
            refresh: 7 * 86_400,
            backdate: 3600,
            jitter: 0,
        }
    }
}

impl Policy {
    /// Inception and expiration for signatures made at `now` (seconds since 1970), in the
    /// modulo-2^32 form of RRSIG times (RFC 4034 §3.1.5).
    pub fn window(&self, now: u64) -> (u32, u32) {
        let inception = now.saturating_sub(u64::from(self.backdate)) as u32;
        let expiration = (now + u64::from(self.validity)) as u32;
        (inception, expiration)
    }

    /// When a zone whose signatures expire at `expiration` (seconds since 1970) should be
    /// signed again.
    pub fn refresh_at(&self, expiration: u64) -> u64 {
        expiration.saturating_sub(u64::from(self.refresh))
    }
}

/// One key of the zone and what it does.
#[derive(Clone, Copy, Debug)]
pub struct ZoneKey<'a> {
    /// The key.
    pub key: &'a SigningKey,
    /// Published in the DNSKEY RRset. A key that signs must be.
    pub dnskey: bool,
    /// Signs the DNSKEY, CDS and CDNSKEY RRsets (a KSK or CSK).
    pub signs_keys: bool,
    /// Signs every other RRset (a ZSK or CSK).
    pub signs_zone: bool,
    /// Published as CDS and CDNSKEY, for the parent to take as DS (RFC 7344, RFC 8078).
    pub cds: bool,
}

impl<'a> ZoneKey<'a> {
    /// A combined signing key: signs everything, published as CDS/CDNSKEY.
    pub fn csk(key: &'a SigningKey) -> Self {
        Self {
            key,
            dnskey: true,
            signs_keys: true,
            signs_zone: true,
            cds: true,
        }
    }

    /// A key-signing key: signs the key RRsets, published as CDS/CDNSKEY.
    pub fn ksk(key: &'a SigningKey) -> Self {
        Self {
            key,
            dnskey: true,
            signs_keys: true,
            signs_zone: false,
            cds: true,
        }
    }

    /// A zone-signing key: signs everything but the key RRsets.
    pub fn zsk(key: &'a SigningKey) -> Self {
        Self {
            key,
            dnskey: true,
            signs_keys: false,
            signs_zone: true,
            cds: false,
        }
    }

    /// A key that is only published (before it becomes active, or after it retired).
    pub fn published(key: &'a SigningKey) -> Self {
        Self {
            key,
            dnskey: true,
            signs_keys: false,
            signs_zone: false,
            cds: false,
        }
    }
}

/// What to sign with and how.
#[derive(Clone, Debug)]
pub struct SignParams {
    /// NSEC or NSEC3.
    pub denial: Denial,
    /// RRSIG inception (seconds since 1970, modulo 2^32).
    pub inception: u32,
    /// RRSIG expiration, likewise.
    pub expiration: u32,
    /// TTL of DNSKEY, CDS and CDNSKEY; `None` takes the SOA's TTL (Knot's default).
    pub dnskey_ttl: Option<u32>,
    /// A new SOA serial to sign with; `None` keeps the zone's. The caller decides when
    /// the serial moves (the signed zone changed) and to what.
    pub serial: Option<u32>,
    /// Signing threads; 0 uses every core.
    pub threads: usize,
    /// Which CDS and CDNSKEY records, and the CDS digest.
    pub cds: CdsParams,
    /// How much earlier than `expiration` an RRSIG may expire, and the seed that picks how
    /// much for each RRset ([`SignParams::expiration_of`]).
    pub jitter: Jitter,
    /// The other signers' DNSKEY, CDS and CDNSKEY records (multi-signer), published
    /// beside ours; empty by default.
    pub foreign: Foreign,
}

/// The spread of RRSIG expirations: each RRset's signatures expire `expiration` less a
/// pseudo-random amount in `0..=spread` picked by a hash of `seed`, owner and type (a new
/// random seed at every signing; a fixed one in tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Jitter {
    /// The largest amount, seconds (0: every signature expires at `expiration`).
    pub spread: u32,
    /// The hash's seed.
    pub seed: u64,
}

impl SignParams {
    /// NSEC, the SOA's serial and TTLs, every core, and the policy's window and jitter
    /// (with a random seed) from `now`.
    pub fn new(now: u64, policy: &Policy) -> Self {
        let (inception, expiration) = policy.window(now);
        let mut seed = [0u8; 8];
        if policy.jitter > 0 {
            // A failed generator leaves seed 0: still a spread, only a predictable one.
            let _ = aws_lc_rs::rand::fill(&mut seed);
        }
        Self {
            denial: Denial::Nsec,
            inception,
            expiration,
            dnskey_ttl: None,
            serial: None,
            threads: 0,
            cds: CdsParams::default(),
            foreign: Foreign::default(),
            jitter: Jitter {
                spread: policy.jitter,
                seed: u64::from_le_bytes(seed),
            },
        }
    }

    /// The expiration of the RRSIGs of the RRset `owner`/`rtype`: `expiration`, less the
    /// jitter's amount for it.
    pub fn expiration_of(&self, owner: NameRef<'_>, rtype: RType) -> u32 {
        if self.jitter.spread == 0 {
            return self.expiration;
        }
        use std::hash::{Hash, Hasher};
        // SipHash with fixed keys: the same amount for the same seed, whatever the thread.
        let mut h = std::hash::DefaultHasher::new();
        self.jitter.seed.hash(&mut h);
        for b in owner.as_wire() {
            h.write_u8(b.to_ascii_lowercase());
        }
        rtype.0.hash(&mut h);
        let back = h.finish() % (u64::from(self.jitter.spread) + 1);
        self.expiration.wrapping_sub(back as u32)
    }
}

/// A signed zone.
#[derive(Debug, Clone)]
pub struct SignedZone {
    /// Every record: the zone's, the chain, the keys and the signatures, in canonical order
    /// of owner, then type, then rdata.
    pub records: Vec<Record>,
    /// RRsets signed.
    pub rrsets_signed: usize,
    /// RRSIGs made.
    pub signatures: usize,
}

/// A signed zone in compact form ([`sign_list`]).
#[derive(Debug, Clone)]
pub struct SignedList {
    /// Every record: the zone's, the chain, the keys and the signatures, in canonical order
    /// of owner, then type, then rdata.
    pub list: RecordList,
    /// RRsets signed (with new or kept signatures).
    pub rrsets_signed: usize,
    /// RRSIGs made.
    pub signatures: usize,
    /// RRSIGs kept from the previous version.
    pub kept: usize,
    /// The earliest expiration of a signature of the zone (RRSIG time, modulo 2^32).
    pub earliest_expiration: u32,
}

impl SignedList {
    /// When the earliest signature expires, in seconds since 1970, given the time `now`
    /// it was signed at.
    pub fn expires(&self, now: u64) -> u64 {
        now + u64::from((self.earliest_expiration.wrapping_sub(now as u32) as i32).max(0) as u32)
    }
}

/// The negative-caching TTL of NSEC and NSEC3 records: the lower of the SOA's TTL and its
/// MINIMUM field (RFC 9077 §3, updating RFC 4034 §4 and RFC 5155 §3).
pub fn denial_ttl(soa_ttl: u32, soa_rdata: &[u8]) -> u32 {
    soa_minimum(soa_rdata).map_or(soa_ttl, |m| m.min(soa_ttl))
}

/// The offset of the SOA serial in SOA rdata (after the two names).
fn soa_serial_at(rdata: &[u8]) -> Option<usize> {
    let (_, a) = NameRef::from_wire_prefix(rdata).ok()?;
    let (_, b) = NameRef::from_wire_prefix(rdata.get(a..)?).ok()?;
    (rdata.len() == a + b + 20).then_some(a + b)
}

fn soa_minimum(rdata: &[u8]) -> Option<u32> {
    let at = soa_serial_at(rdata)? + 16;
    Some(u32::from_be_bytes(rdata[at..at + 4].try_into().ok()?))
}

/// What a name is in the zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Apex,
    /// Authoritative data, not a cut.
    Normal,
    /// A zone cut (NS below the apex): only DS (and the NS for the bitmap) are ours.
    Cut,
    /// Below a cut or a DNAME: not ours, no NSEC, no RRSIG.
    Occluded,
}

/// One owner name of the sorted records.
struct Node {
    start: usize,
    end: usize,
    kind: Kind,
}

/// Signs a zone: the records of the zone at `apex` in, the signed zone out. See the
/// module documentation for what is signed and how. [`sign_list`] does the same in
/// compact form, and can keep the signatures of a previous version.
pub fn sign_zone(
    apex: &Name,
    records: Vec<Record>,
    keys: &[ZoneKey<'_>],
    params: &SignParams,
) -> Result<SignedZone, Error> {
    let list = RecordList::from_records(&records);
    drop(records);
    let signed = sign_list(apex, list, keys, params, None)?;
    Ok(SignedZone {
        records: signed.list.to_records(),
        rrsets_signed: signed.rrsets_signed,
        signatures: signed.signatures,
    })
}

/// Signs a zone in compact form: the records of the zone at `apex` in, the signed zone
/// out. With a `previous` signed version, the signatures of the RRsets that did not change
/// are kept rather than made anew ([`Previous`]); the signed list takes over the previous
/// version's blocks, where the kept signatures stay.
pub fn sign_list(
    apex: &Name,
    mut list: RecordList,
    keys: &[ZoneKey<'_>],
    params: &SignParams,
    previous: Option<Previous>,
) -> Result<SignedList, Error> {
    let apex_ref = apex.as_ref();
    if !keys.iter().any(|k| k.signs_keys) {
        return Err(Error::NoSigningKey { for_keys: true });
    }
    if !keys.iter().any(|k| k.signs_zone) {
        return Err(Error::NoSigningKey { for_keys: false });
    }
    strip(apex_ref, &mut list)?;

    let (class, nsec_ttl) = apex_records(apex_ref, &mut list, keys, params)?;

    list.sort();
    let mut items = std::mem::take(&mut list.items);
    items.dedup_by(|b, a| {
        a.rtype == b.rtype && list.rdata(a) == list.rdata(b) && list.owner(a).eq_ci(&list.owner(b))
    });
    list.items = items;
    let nodes = classify(apex_ref, &mut list);

    // The denial chain, its names and rdata in the same buffer.
    let denial = match &params.denial {
        Denial::Nsec => nsec_chain(&mut list, &nodes, class, nsec_ttl),
        Denial::Nsec3 { params: p, opt_out } => {
            nsec3_chain(apex, &mut list, &nodes, p, *opt_out, class, nsec_ttl)?
        }
    };

    // Every authoritative RRset and the chain's, in canonical order of their owners.
    let jobs = jobs(&list, &nodes, &denial);
    drop(nodes);
    let parts = sign_jobs(apex_ref, &list, &jobs, keys, params, previous.as_ref())?;
    let rrsets_signed = jobs.len();
    drop(jobs);
    // The previous version's blocks (its records dropped), where the kept signatures are.
    let adopted = previous.map(|p| list.adopt(p.into_list()));
    let (mut signatures, mut kept) = (0, 0);
    let mut earliest = params.expiration;
    let sig_items: usize = parts
        .iter()
        .flat_map(|p| &p.blocks)
        .map(|(_, items)| items.len())
        .sum::<usize>()
        + parts.iter().map(|p| p.kept_items.len()).sum::<usize>();
    list.items.reserve_exact(sig_items + denial.len());
    list.items.extend(denial);
    // The signatures stay in the blocks they were made in (attached, not copied).
    for part in parts {
        signatures += part.made;
        kept += part.kept;
        if earliest_of(params.inception, part.earliest, earliest) {
            earliest = part.earliest;
        }
        for (block, items) in part.blocks {
            list.attach(block, items);
        }
        if let Some(adopted) = adopted {
            list.push_adopted(adopted, part.kept_items);
        }
    }
    list.sort();
    Ok(SignedList {
        list,
        rrsets_signed,
        signatures,
        kept,
        earliest_expiration: earliest,
    })
}

/// The apex's records the signer sets: the SOA (exactly one; its serial set if
/// `params` says so), the key RRsets and NSEC3PARAM, pushed onto `list`. Returns the SOA's
/// class and the TTL of the denial records.
#[inline]
fn apex_records(
    apex_ref: NameRef<'_>,
    list: &mut RecordList,
    keys: &[ZoneKey<'_>],
    params: &SignParams,
) -> Result<(Class, u32), Error> {
    // The SOA: exactly one, at the apex; the serial may move.
    let mut soas = list
        .items
        .iter()
        .filter(|r| r.rtype == RType::SOA && list.owner(r).eq_ci(&apex_ref));
    let soa = *soas.next().ok_or(Error::Soa)?;
    if soas.next().is_some() {
        return Err(Error::Soa);
    }
    let soa_at = soa_serial_at(list.rdata(&soa)).ok_or(Error::Soa)?;
    if let Some(serial) = params.serial {
        let at = soa.rdata as usize + soa_at;
        list.bytes[at..at + 4].copy_from_slice(&serial.to_be_bytes());
    }
    let (class, soa_ttl) = (soa.class, soa.ttl);
    let nsec_ttl = denial_ttl(soa_ttl, list.rdata(&soa));

    // The apex's key RRsets and NSEC3PARAM.
    let key_ttl = params.dnskey_ttl.unwrap_or(soa_ttl);
    let at = list.push_name(apex_ref);
    let ours = keys
        .iter()
        .filter(|k| k.dnskey)
        .map(|k| k.key.dnskey_rdata());
    for r in ours.chain(params.foreign.dnskey.iter().map(|r| &r[..])) {
        list.push(at, RType::DNSKEY, class, key_ttl, r);
    }
    let eligible = keys.iter().filter(|k| k.cds).map(|k| k.key.dnskey_rdata());
    let (cdnskey, cds) = cds::apex_records(apex_ref, eligible, &params.cds)
        .expect("a SigningKey's DNSKEY rdata has its fixed fields");
    let (cdnskey, cds) = params.foreign.merge_cds(cdnskey, cds);
    for r in &cdnskey {
        list.push(at, RType::CDNSKEY, class, key_ttl, r);
    }
    for r in &cds {
        list.push(at, RType::CDS, class, key_ttl, r);
    }
    if let Denial::Nsec3 { params: p, .. } = &params.denial {
        if p.salt.len() > 255 {
            return Err(Error::Nsec3Salt);
        }
        // TTL 0 as BIND gives it: only the primary reads NSEC3PARAM (RFC 5155 §4).
        list.push(at, RType::NSEC3PARAM, class, 0, &p.nsec3param_rdata());
    }
    Ok((class, nsec_ttl))
}

/// True if expiration `a` comes before `b`, both after `inception` (RFC 1982).
fn earliest_of(inception: u32, a: u32, b: u32) -> bool {
    a.wrapping_sub(inception) < b.wrapping_sub(inception)
}

fn offset(len: usize) -> u32 {
    u32::try_from(len).expect("a record list holds under 4 GiB")
}

/// Drops what the signer makes anew and checks every owner is in the zone.
fn strip(apex: NameRef<'_>, list: &mut RecordList) -> Result<(), Error> {
    if let Some(r) = list.items.iter().find(|r| !list.owner(r).ends_with(&apex)) {
        return Err(Error::OutOfZone(list.owner(r).to_name()));
    }
    let mut items = std::mem::take(&mut list.items);
    items.retain(|r| !match r.rtype {
        RType::RRSIG | RType::NSEC | RType::NSEC3 | RType::NSEC3PARAM => true,
        RType::DNSKEY | RType::CDS | RType::CDNSKEY => list.owner(r).eq_ci(&apex),
        _ => false,
    });
    list.items = items;
    Ok(())
}

/// Groups sorted records by owner and classifies each owner; gives every RRset the lowest
/// TTL of its records.
fn classify(apex: NameRef<'_>, list: &mut RecordList) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut items = std::mem::take(&mut list.items);
    // The cut or DNAME owner whose subtree we are in. Canonical order puts a name's
    // descendants right after it, so one is enough.
    let mut occluder: Option<usize> = None;
    let mut i = 0;
    while i < items.len() {
        let owner = list.owner(&items[i]);
        let mut j = i + 1;
        while j < items.len() && list.owner(&items[j]).eq_ci(&owner) {
            j += 1;
        }
        let below = occluder.is_some_and(|o| {
            let o = list.owner(&items[o]);
            owner.len() > o.len() && owner.ends_with(&o)
        });
        let has = |t: RType| items[i..j].iter().any(|r| r.rtype == t);
        let kind = if below {
            Kind::Occluded
        } else if owner.eq_ci(&apex) {
            Kind::Apex
        } else if has(RType::NS) {
            Kind::Cut
        } else {
            Kind::Normal
        };
        if !below {
            occluder = (kind == Kind::Cut || has(RType::DNAME)).then_some(i);
        }
        // One TTL per RRset.
        let mut k = i;
        while k < j {
            let mut l = k + 1;
            while l < j && items[l].rtype == items[k].rtype {
                l += 1;
            }
            let ttl = items[k..l].iter().map(|r| r.ttl).min().unwrap_or(0);
            items[k..l].iter_mut().for_each(|r| r.ttl = ttl);
            k = l;
        }
        nodes.push(Node {
            start: i,
            end: j,
            kind,
        });
        i = j;
    }
    list.items = items;
    nodes
}

#[cfg(test)]
mod tests;
