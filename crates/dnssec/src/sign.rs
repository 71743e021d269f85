//! RRsets in canonical form (RFC 4034 §6), RRSIG rdata (RFC 4034 §3), and signing and
//! verifying one RRset (RFC 4034 §3.1.8.1, RFC 4035 §5.3).
//!
//! [`Canonical`] holds one RRset's rdata in canonical form back to back in one buffer,
//! sorted and without duplicates; a signing thread reuses one, so signing a million RRsets
//! costs no allocation per record.

use crate::alg::Algorithm;
use crate::error::Error;
use crate::key::{verify, SigningKey};
use shardns_wire::name::{lower, MAX_NAME_LEN};
use shardns_wire::{Class, NameRef, RType};

/// Length of the RRSIG rdata fields before the signer's name.
pub const RRSIG_FIXED_LEN: usize = 18;

/// Types whose rdata names are lower-cased in canonical form: RFC 4034 §6.2's list, less
/// NSEC (RFC 6840 §5.1), with the offset of the first name and how many follow in a row.
/// NAPTR, PX and A6 are special-cased in [`canonical_rdata`].
fn name_fields(rtype: RType) -> Option<(usize, usize)> {
    Some(match rtype.0 {
        // NS MD MF CNAME MB MG MR PTR DNAME
        2..=5 | 7..=9 | 12 | 39 => (0, 1),
        // SOA MINFO RP
        6 | 14 | 17 => (0, 2),
        // MX AFSDB RT KX
        15 | 18 | 21 | 36 => (2, 1),
        // PX
        26 => (2, 2),
        // SRV
        33 => (6, 1),
        // SIG RRSIG
        24 | 46 => (RRSIG_FIXED_LEN, 1),
        // NXT
        30 => (0, 1),
        _ => return None,
    })
}

/// Appends `rdata` in canonical form (RFC 4034 §6.2): the names inside the rdata of the
/// types listed there are lower-cased; everything else is copied as it is. Rdata that does
/// not parse is copied as it is (it cannot be validated either way).
pub fn canonical_rdata(rtype: RType, rdata: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(rdata);
    let data = &mut out[start..];
    let (mut pos, names) = match rtype.0 {
        // NAPTR: order, preference, three character-strings, then the replacement name.
        35 => {
            let mut pos = 4;
            for _ in 0..3 {
                match data.get(pos) {
                    Some(&n) => pos += 1 + usize::from(n),
                    None => return,
                }
            }
            (pos, 1)
        }
        // A6: prefix length, the address suffix, and a prefix name if the length is not 0.
        38 => match data.first() {
            Some(&p) if p > 0 && p <= 128 => (1 + (128 - usize::from(p)).div_ceil(8), 1),
            _ => return,
        },
        _ => match name_fields(rtype) {
            Some(f) => f,
            None => return,
        },
    };
    for _ in 0..names {
        let Some(rest) = data.get(pos..) else { return };
        let Ok((_, n)) = NameRef::from_wire_prefix(rest) else {
            return;
        };
        for b in &mut data[pos..pos + n] {
            *b = lower(*b);
        }
        pos += n;
    }
}

/// One RRset's rdata in canonical form and order (RFC 4034 §6.3): sorted as unsigned octet
/// strings, duplicates removed. Reuse it: [`clear`](Self::clear) keeps the buffers.
#[derive(Default, Debug)]
pub struct Canonical {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl Canonical {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the set, keeping its buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// Adds one record's rdata.
    pub fn push(&mut self, rtype: RType, rdata: &[u8]) {
        let start = self.bytes.len();
        canonical_rdata(rtype, rdata, &mut self.bytes);
        self.spans.push((start, self.bytes.len()));
    }

    /// Sorts and removes duplicates; call after the last [`push`](Self::push).
    pub fn finish(&mut self) {
        let bytes = &self.bytes;
        self.spans
            .sort_unstable_by(|a, b| bytes[a.0..a.1].cmp(&bytes[b.0..b.1]));
        self.spans
            .dedup_by(|a, b| bytes[a.0..a.1] == bytes[b.0..b.1]);
    }

    /// The rdata, in canonical order once [`finish`](Self::finish)ed.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.spans.iter().map(|&(a, b)| &self.bytes[a..b])
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// The RRSIG Labels field for an owner (RFC 4034 §3.1.3): its labels, not counting the root
/// or a leading `*`.
pub fn rrsig_labels(owner: NameRef<'_>) -> u8 {
    let n = owner.label_count();
    (n - usize::from(owner.is_wildcard())) as u8
}

/// The fields of an RRSIG before the signature (RFC 4034 §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RrsigFields<'a> {
    /// Type covered.
    pub type_covered: RType,
    /// Algorithm number.
    pub algorithm: u8,
    /// Labels of the owner, without a leading `*` ([`rrsig_labels`]).
    pub labels: u8,
    /// The RRset's TTL as signed.
    pub original_ttl: u32,
    /// Signature expiration, seconds since 1970 modulo 2^32 (RFC 4034 §3.1.5).
    pub expiration: u32,
    /// Signature inception, likewise.
    pub inception: u32,
    /// Key tag of the DNSKEY that made the signature.
    pub key_tag: u16,
    /// The zone's apex.
    pub signer: NameRef<'a>,
}

impl<'a> RrsigFields<'a> {
    /// Appends the fields in wire form, the signer's name lower-cased (RFC 4034 §3.1.8.1,
    /// RFC 6840 §5.1).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.type_covered.0.to_be_bytes());
        out.push(self.algorithm);
        out.push(self.labels);
        out.extend_from_slice(&self.original_ttl.to_be_bytes());
        out.extend_from_slice(&self.expiration.to_be_bytes());
        out.extend_from_slice(&self.inception.to_be_bytes());
        out.extend_from_slice(&self.key_tag.to_be_bytes());
        out.extend(self.signer.as_wire().iter().map(|&b| lower(b)));
    }

    /// Reads RRSIG rdata: the fields and the signature.
    pub fn parse(rdata: &'a [u8]) -> Option<(Self, &'a [u8])> {
        let f = rdata.get(..RRSIG_FIXED_LEN)?;
        let u32_at = |i: usize| u32::from_be_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
        let (signer, n) = NameRef::from_wire_prefix(&rdata[RRSIG_FIXED_LEN..]).ok()?;
        let fields = Self {
            type_covered: RType(u16::from_be_bytes([f[0], f[1]])),
            algorithm: f[2],
            labels: f[3],
            original_ttl: u32_at(4),
            expiration: u32_at(8),
            inception: u32_at(12),
            key_tag: u16::from_be_bytes([f[16], f[17]]),
            signer,
        };
        Some((fields, &rdata[RRSIG_FIXED_LEN + n..]))
    }

    /// True if `now` (seconds since 1970, modulo 2^32) lies between inception and
    /// expiration, compared in serial number arithmetic (RFC 4034 §3.1.5, RFC 1982).
    pub fn valid_at(&self, now: u32) -> bool {
        now.wrapping_sub(self.inception) as i32 >= 0
            && self.expiration.wrapping_sub(now) as i32 >= 0
    }
}

/// Appends the data an RRSIG signs (RFC 4034 §3.1.8.1): the RRSIG fields, then each record
/// of the RRset in canonical form and order with the original TTL. The owner is lower-cased
/// and, if `fields.labels` is fewer than its labels, replaced by the wildcard it was
/// expanded from (RFC 4035 §5.3.2). `fields_wire` is [`RrsigFields::write`]'s output.
pub fn signed_data(
    fields_wire: &[u8],
    fields: &RrsigFields<'_>,
    owner: NameRef<'_>,
    class: Class,
    rrset: &Canonical,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(fields_wire);
    let mut name = [0u8; MAX_NAME_LEN];
    let mut n = 0;
    let labels = usize::from(fields.labels);
    let owner = if owner.label_count() > labels {
        name[..2].copy_from_slice(b"\x01*");
        n = 2;
        owner.suffix(labels)
    } else {
        owner
    };
    for &b in owner.as_wire() {
        if n < MAX_NAME_LEN {
            name[n] = lower(b);
            n += 1;
        }
    }
    for rdata in rrset.iter() {
        out.extend_from_slice(&name[..n]);
        out.extend_from_slice(&fields.type_covered.0.to_be_bytes());
        out.extend_from_slice(&class.0.to_be_bytes());
        out.extend_from_slice(&fields.original_ttl.to_be_bytes());
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(rdata);
    }
}

/// Buffers one signing thread reuses from RRset to RRset.
#[derive(Default, Debug)]
pub struct Scratch {
    /// The RRset in canonical form.
    pub rrset: Canonical,
    fields: Vec<u8>,
    data: Vec<u8>,
}

/// What to sign: one RRset. `rrset` must be [`Canonical::finish`]ed.
#[derive(Clone, Copy, Debug)]
pub struct RrsetToSign<'a> {
    /// Owner name (any case).
    pub owner: NameRef<'a>,
    /// Class.
    pub class: Class,
    /// Type.
    pub rtype: RType,
    /// TTL, which becomes the RRSIG's original TTL and TTL.
    pub ttl: u32,
}

/// Signs one RRset, whose records are in `scratch.rrset`, and returns the RRSIG rdata.
pub fn sign_rrset(
    key: &SigningKey,
    what: RrsetToSign<'_>,
    signer: NameRef<'_>,
    inception: u32,
    expiration: u32,
    scratch: &mut Scratch,
) -> Result<Vec<u8>, Error> {
    let mut rdata = Vec::new();
    sign_rrset_into(
        key, what, signer, inception, expiration, scratch, &mut rdata,
    )?;
    Ok(rdata)
}

/// Signs one RRset like [`sign_rrset`] and appends the RRSIG rdata to `out` (one buffer for
/// many signatures).
pub fn sign_rrset_into(
    key: &SigningKey,
    what: RrsetToSign<'_>,
    signer: NameRef<'_>,
    inception: u32,
    expiration: u32,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let fields = RrsigFields {
        type_covered: what.rtype,
        algorithm: key.algorithm().number(),
        labels: rrsig_labels(what.owner),
        original_ttl: what.ttl,
        expiration,
        inception,
        key_tag: key.tag(),
        signer,
    };
    scratch.fields.clear();
    fields.write(&mut scratch.fields);
    scratch.data.clear();
    signed_data(
        &scratch.fields,
        &fields,
        what.owner,
        what.class,
        &scratch.rrset,
        &mut scratch.data,
    );
    let sig = key.sign(&scratch.data)?;
    out.extend_from_slice(&scratch.fields);
    out.extend_from_slice(&sig);
    Ok(())
}

/// Checks an RRSIG over an RRset with a DNSKEY (RFC 4035 §5.3, without the time check,
/// which is [`RrsigFields::valid_at`], and without checking the signer against the zone).
/// `rdatas` are the RRset's records in any order and case.
pub fn verify_rrsig<'r>(
    rrsig_rdata: &[u8],
    owner: NameRef<'_>,
    class: Class,
    rtype: RType,
    rdatas: impl IntoIterator<Item = &'r [u8]>,
    dnskey_rdata: &[u8],
) -> Result<(), Error> {
    let (fields, signature) = RrsigFields::parse(rrsig_rdata).ok_or(Error::MalformedRrsig)?;
    if fields.type_covered != rtype {
        return Err(Error::TypeCovered);
    }
    if usize::from(fields.labels) > owner.label_count() {
        return Err(Error::Labels);
    }
    if dnskey_rdata.len() < 5 {
        return Err(Error::MalformedRrsig);
    }
    let flags = u16::from_be_bytes([dnskey_rdata[0], dnskey_rdata[1]]);
    if dnskey_rdata[2] != 3
        || dnskey_rdata[3] != fields.algorithm
        || flags & crate::key::FLAG_ZONE == 0
        || crate::digest::key_tag(dnskey_rdata) != fields.key_tag
    {
        return Err(Error::WrongKey);
    }
    let alg = Algorithm::from_number(fields.algorithm)
        .ok_or(Error::UnknownAlgorithm(fields.algorithm))?;
    let mut rrset = Canonical::new();
    for rdata in rdatas {
        rrset.push(rtype, rdata);
    }
    rrset.finish();
    let fields_wire = &rrsig_rdata[..rrsig_rdata.len() - signature.len()];
    // The signer's name is signed in lower case whatever case the RRSIG carries.
    let mut lowered = fields_wire.to_vec();
    for b in &mut lowered[RRSIG_FIXED_LEN..] {
        *b = lower(*b);
    }
    let mut data = Vec::new();
    signed_data(&lowered, &fields, owner, class, &rrset, &mut data);
    if verify(alg, &dnskey_rdata[4..], &data, signature) {
        Ok(())
    } else {
        Err(Error::BadSignature)
    }
}

#[cfg(test)]
mod tests;
