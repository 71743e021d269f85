//! Denial of existence: what NSEC (RFC 4035 §5.4, RFC 6840 §4) and NSEC3 (RFC 5155 §8)
//! records prove, once their own signatures have been checked.
//!
//! Owns: [`check_denial`] (NXDOMAIN and NODATA, wildcard NODATA, empty non-terminals, the
//! no-DS proof of an insecure delegation, Opt-Out) and [`check_wildcard`] (that a wildcard
//! expansion was allowed: no closer name exists). NSEC3 hashes go through
//! `shardns_dnssec::nsec3_hash`, counted against the budget; more iterations than the
//! limit make the proof insecure (RFC 9276 §3.2).
//! Never: signature checks (the caller passes only NSEC/NSEC3 RRsets that verified).

use core::cmp::Ordering;

use shardns_dnssec::nsec3::HASH_LEN;
use shardns_dnssec::nsec3_hash;
use shardns_wire::text::base32hex_decode;
use shardns_wire::{NameBuf, NameRef, RType};

use super::{Budget, Limits};

/// What is to be proven about `qname`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DenialKind {
    /// The name does not exist.
    NxDomain,
    /// The name has no RRset of this type.
    NoData(RType),
}

/// What the records proved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Denial {
    /// Proven. `delegation`: the matching NSEC/NSEC3 has the NS bit and not SOA (for a DS
    /// question: the name is a delegation point, so the delegation is insecure).
    Proven { delegation: bool },
    /// An Opt-Out NSEC3 covers the name (RFC 5155 §6): it may be an unsigned delegation.
    OptOut,
    /// NSEC3 iterations over the limit: nothing can be proven securely (RFC 9276).
    Insecure,
    /// Not proven.
    Missing,
    /// The NSEC3 hash budget ran out.
    Limit,
}

/// An NSEC or NSEC3 record (verified), borrowed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DenialRr<'a> {
    pub(crate) owner: NameRef<'a>,
    pub(crate) rtype: RType,
    pub(crate) rdata: &'a [u8],
}

fn has_type(bitmap: &[u8], t: RType) -> bool {
    let (window, bit) = ((t.0 >> 8) as u8, (t.0 & 0xff) as usize);
    let mut data = bitmap;
    while let [w, len, rest @ ..] = data {
        let len = usize::from(*len);
        let Some(block) = rest.get(..len) else {
            return false;
        };
        if *w == window {
            return block
                .get(bit / 8)
                .is_some_and(|b| b & (0x80 >> (bit % 8)) != 0);
        }
        data = &rest[len..];
    }
    false
}

/// The bitmap says the owner is a delegation point: NS and not SOA.
fn delegation(bitmap: &[u8]) -> bool {
    has_type(bitmap, RType::NS) && !has_type(bitmap, RType::SOA)
}

/// Labels `a` and `b` have in common at the end.
pub(super) fn common_labels(a: NameRef<'_>, b: NameRef<'_>) -> usize {
    let (na, nb) = (a.label_count(), b.label_count());
    let mut n = na.min(nb);
    while n > 0 && !a.suffix(n).eq_ci(&b.suffix(n)) {
        n -= 1;
    }
    n
}

/// `*.` in front of `name`.
pub(super) fn wildcard_of(name: NameRef<'_>) -> Option<NameBuf> {
    let mut b = NameBuf::new();
    b.set_concat(b"\x01*", name).ok()?;
    Some(b)
}

// ---- NSEC ----

struct Nsec<'a> {
    owner: NameRef<'a>,
    next: NameRef<'a>,
    bitmap: &'a [u8],
}

fn nsecs<'a>(rrs: &'a [DenialRr<'a>]) -> impl Iterator<Item = Nsec<'a>> + 'a {
    rrs.iter()
        .filter(|r| r.rtype == RType::NSEC)
        .filter_map(|r| {
            let (next, n) = NameRef::from_wire_prefix(r.rdata).ok()?;
            Some(Nsec {
                owner: r.owner,
                next,
                bitmap: &r.rdata[n..],
            })
        })
}

/// The NSEC covers `name`: owner < name < next in canonical order (the last NSEC, whose
/// next name is the apex, covers everything after its owner).
fn nsec_covers(n: &Nsec<'_>, name: NameRef<'_>) -> bool {
    if n.owner.canonical_cmp(&name) != Ordering::Less {
        return false;
    }
    n.owner.canonical_cmp(&n.next) != Ordering::Less
        || name.canonical_cmp(&n.next) == Ordering::Less
}

/// An NSEC that covers `name` and may prove it absent: not one at a delegation point or
/// DNAME above it (RFC 6840 §4.1).
fn nsec_covering<'a>(rrs: &'a [DenialRr<'a>], name: NameRef<'_>) -> Option<Nsec<'a>> {
    nsecs(rrs).find(|n| {
        nsec_covers(n, name)
            && !(name.ends_with(&n.owner)
                && (has_type(n.bitmap, RType::DNAME) || delegation(n.bitmap)))
    })
}

fn nsec_closest_encloser(n: &Nsec<'_>, name: NameRef<'_>) -> usize {
    common_labels(name, n.owner).max(common_labels(name, n.next))
}

fn nsec_denial(
    rrs: &[DenialRr<'_>],
    qname: NameRef<'_>,
    kind: DenialKind,
    zone: NameRef<'_>,
) -> Denial {
    let in_zone = |labels: usize| labels >= zone.label_count();
    match kind {
        DenialKind::NxDomain => {
            let Some(n) = nsec_covering(rrs, qname) else {
                return Denial::Missing;
            };
            // A next name below the name makes it an empty non-terminal: it exists.
            if n.next.ends_with(&qname) {
                return Denial::Missing;
            }
            let ce = nsec_closest_encloser(&n, qname);
            if !in_zone(ce) {
                return Denial::Missing;
            }
            let Some(w) = wildcard_of(qname.suffix(ce)) else {
                return Denial::Missing;
            };
            if nsecs(rrs).any(|n| n.owner.eq_ci(&w.as_ref())) {
                return Denial::Missing;
            }
            match nsec_covering(rrs, w.as_ref()) {
                Some(_) => Denial::Proven { delegation: false },
                None => Denial::Missing,
            }
        }
        DenialKind::NoData(t) => {
            if let Some(m) = nsecs(rrs).find(|n| n.owner.eq_ci(&qname)) {
                if has_type(m.bitmap, t) || has_type(m.bitmap, RType::CNAME) {
                    return Denial::Missing;
                }
                let deleg = delegation(m.bitmap);
                if t == RType::DS {
                    // The child's apex NSEC says nothing of the parent's DS.
                    if has_type(m.bitmap, RType::SOA) && !qname.is_root() {
                        return Denial::Missing;
                    }
                } else if deleg {
                    // The parent's NSEC at a cut says nothing of the child's data.
                    return Denial::Missing;
                }
                return Denial::Proven { delegation: deleg };
            }
            let Some(n) = nsec_covering(rrs, qname) else {
                return Denial::Missing;
            };
            // An empty non-terminal: the next name lies below it.
            if n.next.ends_with(&qname) && !n.next.eq_ci(&qname) {
                return Denial::Proven { delegation: false };
            }
            // A wildcard NODATA: the name does not exist, the wildcard lacks the type.
            let ce = nsec_closest_encloser(&n, qname);
            if !in_zone(ce) {
                return Denial::Missing;
            }
            let Some(w) = wildcard_of(qname.suffix(ce)) else {
                return Denial::Missing;
            };
            match nsecs(rrs).find(|n| n.owner.eq_ci(&w.as_ref())) {
                Some(m) if !has_type(m.bitmap, t) && !has_type(m.bitmap, RType::CNAME) => {
                    Denial::Proven { delegation: false }
                }
                _ => Denial::Missing,
            }
        }
    }
}

// ---- NSEC3 ----

struct Nsec3<'a> {
    hash: [u8; HASH_LEN],
    next: &'a [u8],
    opt_out: bool,
    iterations: u16,
    salt: &'a [u8],
    bitmap: &'a [u8],
}

fn parse_nsec3<'a>(r: &DenialRr<'a>, zone: NameRef<'_>) -> Option<Nsec3<'a>> {
    // The owner is the base32hex hash, one label above the zone apex.
    if r.owner.parent().is_none_or(|p| !p.eq_ci(&zone)) {
        return None;
    }
    let mut h = Vec::with_capacity(HASH_LEN);
    base32hex_decode(r.owner.first_label(), &mut h).ok()?;
    let hash: [u8; HASH_LEN] = h.try_into().ok()?;
    let d = r.rdata;
    let (&alg, d) = d.split_first()?;
    let (&flags, d) = d.split_first()?;
    let (it, d) = d.split_at_checked(2)?;
    let (&salt_len, d) = d.split_first()?;
    let (salt, d) = d.split_at_checked(usize::from(salt_len))?;
    let (&hash_len, d) = d.split_first()?;
    let (next, bitmap) = d.split_at_checked(usize::from(hash_len))?;
    if alg != 1 || next.len() != HASH_LEN {
        return None;
    }
    Some(Nsec3 {
        hash,
        next,
        opt_out: flags & 1 != 0,
        iterations: u16::from_be_bytes([it[0], it[1]]),
        salt,
        bitmap,
    })
}

struct Nsec3Set<'a> {
    records: Vec<Nsec3<'a>>,
    iterations: u16,
    salt: &'a [u8],
}

impl Nsec3Set<'_> {
    fn hash(
        &self,
        name: NameRef<'_>,
        limits: &Limits,
        budget: &mut Budget,
    ) -> Option<[u8; HASH_LEN]> {
        if budget.nsec3_hashes >= limits.max_nsec3_hashes {
            return None;
        }
        budget.nsec3_hashes += 1;
        let mut out = [0u8; HASH_LEN];
        nsec3_hash(name, self.salt, self.iterations, &mut out);
        Some(out)
    }

    fn matching(&self, h: &[u8; HASH_LEN]) -> Option<&Nsec3<'_>> {
        self.records.iter().find(|r| &r.hash == h)
    }

    fn covering(&self, h: &[u8; HASH_LEN]) -> Option<&Nsec3<'_>> {
        self.records.iter().find(|r| {
            let (o, n, h) = (&r.hash[..], r.next, &h[..]);
            if o < n {
                o < h && h < n
            } else {
                // The last NSEC3 of the chain wraps around to the first.
                h > o || h < n
            }
        })
    }
}

fn nsec3_set<'a>(rrs: &'a [DenialRr<'a>], zone: NameRef<'_>) -> Option<Nsec3Set<'a>> {
    let mut records: Vec<Nsec3<'a>> = rrs
        .iter()
        .filter(|r| r.rtype == RType::NSEC3)
        .filter_map(|r| parse_nsec3(r, zone))
        .collect();
    let first = records.first()?;
    let (iterations, salt) = (first.iterations, first.salt);
    // RFC 5155 §8.2: records with other parameters are ignored.
    records.retain(|r| r.iterations == iterations && r.salt == salt);
    Some(Nsec3Set {
        records,
        iterations,
        salt,
    })
}

/// The closest encloser proof (RFC 5155 §8.3): the labels of the closest encloser, and
/// whether the NSEC3 covering the next closer name has Opt-Out.
enum Encloser {
    Found { labels: usize, opt_out: bool },
    None,
    Limit,
}

fn closest_encloser(
    set: &Nsec3Set<'_>,
    qname: NameRef<'_>,
    zone: NameRef<'_>,
    limits: &Limits,
    budget: &mut Budget,
) -> Encloser {
    let total = qname.label_count();
    let mut labels = total;
    let mut next_hash: Option<[u8; HASH_LEN]> = None;
    while labels >= zone.label_count() {
        let Some(h) = set.hash(qname.suffix(labels), limits, budget) else {
            return Encloser::Limit;
        };
        if let Some(m) = set.matching(&h) {
            if labels == total {
                // The name itself exists: no encloser proof for it.
                return Encloser::None;
            }
            // RFC 5155 §8.3: not a delegation or DNAME above the name.
            if delegation(m.bitmap) || has_type(m.bitmap, RType::DNAME) {
                return Encloser::None;
            }
            let Some(nh) = next_hash else {
                return Encloser::None;
            };
            return match set.covering(&nh) {
                Some(c) => Encloser::Found {
                    labels,
                    opt_out: c.opt_out,
                },
                None => Encloser::None,
            };
        }
        next_hash = Some(h);
        if labels == 0 {
            break;
        }
        labels -= 1;
    }
    Encloser::None
}

fn nsec3_denial(
    set: &Nsec3Set<'_>,
    qname: NameRef<'_>,
    kind: DenialKind,
    zone: NameRef<'_>,
    limits: &Limits,
    budget: &mut Budget,
) -> Denial {
    if set.iterations > limits.max_nsec3_iterations {
        return Denial::Insecure;
    }
    match kind {
        DenialKind::NxDomain => {
            let (ce, opt_out) = match closest_encloser(set, qname, zone, limits, budget) {
                Encloser::Found { labels, opt_out } => (labels, opt_out),
                Encloser::None => return Denial::Missing,
                Encloser::Limit => return Denial::Limit,
            };
            let Some(w) = wildcard_of(qname.suffix(ce)) else {
                return Denial::Missing;
            };
            let Some(wh) = set.hash(w.as_ref(), limits, budget) else {
                return Denial::Limit;
            };
            if set.covering(&wh).is_none() {
                return Denial::Missing;
            }
            if opt_out {
                Denial::OptOut
            } else {
                Denial::Proven { delegation: false }
            }
        }
        DenialKind::NoData(t) => {
            let Some(h) = set.hash(qname, limits, budget) else {
                return Denial::Limit;
            };
            if let Some(m) = set.matching(&h) {
                if has_type(m.bitmap, t) || has_type(m.bitmap, RType::CNAME) {
                    return Denial::Missing;
                }
                let deleg = delegation(m.bitmap);
                if t == RType::DS {
                    if has_type(m.bitmap, RType::SOA) && !qname.is_root() {
                        return Denial::Missing;
                    }
                } else if deleg {
                    return Denial::Missing;
                }
                return Denial::Proven { delegation: deleg };
            }
            let (ce, opt_out) = match closest_encloser(set, qname, zone, limits, budget) {
                Encloser::Found { labels, opt_out } => (labels, opt_out),
                Encloser::None => return Denial::Missing,
                Encloser::Limit => return Denial::Limit,
            };
            if t == RType::DS {
                // RFC 5155 §8.6: no NSEC3 at the name, an Opt-Out one over it.
                return if opt_out {
                    Denial::OptOut
                } else {
                    Denial::Missing
                };
            }
            // A wildcard NODATA (RFC 5155 §8.7).
            let Some(w) = wildcard_of(qname.suffix(ce)) else {
                return Denial::Missing;
            };
            let Some(wh) = set.hash(w.as_ref(), limits, budget) else {
                return Denial::Limit;
            };
            match set.matching(&wh) {
                // RFC 5155 §9.2: an Opt-Out NSEC3 over the next closer name proves nothing
                // secure (an unsigned delegation may be there), as Unbound has it.
                Some(m) if !has_type(m.bitmap, t) && !has_type(m.bitmap, RType::CNAME) => {
                    if opt_out {
                        Denial::OptOut
                    } else {
                        Denial::Proven { delegation: false }
                    }
                }
                _ => Denial::Missing,
            }
        }
    }
}

/// What the verified NSEC/NSEC3 records `rrs` of `zone` prove about `qname`.
pub(crate) fn check_denial(
    rrs: &[DenialRr<'_>],
    qname: NameRef<'_>,
    kind: DenialKind,
    zone: NameRef<'_>,
    limits: &Limits,
    budget: &mut Budget,
) -> Denial {
    if rrs.iter().any(|r| r.rtype == RType::NSEC) {
        return nsec_denial(rrs, qname, kind, zone);
    }
    match nsec3_set(rrs, zone) {
        Some(set) => nsec3_denial(&set, qname, kind, zone, limits, budget),
        None => Denial::Missing,
    }
}

/// That `owner`, answered from a wildcard whose RRSIG has `labels` labels, does not exist
/// itself: no closer match (RFC 4035 §5.3.4, RFC 5155 §8.8).
pub(crate) fn check_wildcard(
    rrs: &[DenialRr<'_>],
    owner: NameRef<'_>,
    labels: u8,
    zone: NameRef<'_>,
    limits: &Limits,
    budget: &mut Budget,
) -> Denial {
    let labels = usize::from(labels);
    if labels >= owner.label_count() {
        return Denial::Proven { delegation: false };
    }
    if rrs.iter().any(|r| r.rtype == RType::NSEC) {
        return match nsec_covering(rrs, owner) {
            Some(_) => Denial::Proven { delegation: false },
            None => Denial::Missing,
        };
    }
    let Some(set) = nsec3_set(rrs, zone) else {
        return Denial::Missing;
    };
    if set.iterations > limits.max_nsec3_iterations {
        return Denial::Insecure;
    }
    let next_closer = owner.suffix(labels + 1);
    let Some(h) = set.hash(next_closer, limits, budget) else {
        return Denial::Limit;
    };
    match set.covering(&h) {
        // An Opt-Out span over the next closer name: it may hide an unsigned delegation,
        // so the expansion is not provably secure (RFC 5155 §9.2; Unbound: insecure).
        Some(c) if c.opt_out => Denial::OptOut,
        Some(_) => Denial::Proven { delegation: false },
        None => Denial::Missing,
    }
}
