//! Signatures of a previous signed version of the zone, to keep for the RRsets that did not
//! change: incremental re-signing.
//!
//! An RRSIG of the previous version is kept for an RRset of the new one when the RRset is
//! the same (owner, type, TTL and rdata set, compared in canonical form), the key that made
//! it (algorithm and key tag, a key the previous version published) still signs that RRset, its fields are those a new signature
//! would have (labels, original TTL, signer), and it is not due: it is valid now and expires
//! more than the refresh time from now. Everything else is signed anew, so a changed record
//! costs the signatures of its RRset, of the NSEC or NSEC3 records that changed with it, and
//! of the SOA.

use crate::list::{RecordList, Rr};
use crate::sign::{Canonical, RrsigFields};
use shardns_wire::{NameRef, RType};

/// One RRset of the previous version and its signatures: ranges of `Previous::items`.
#[derive(Clone, Copy, Debug)]
struct Group {
    rtype: RType,
    data: (u32, u32),
    sigs: (u32, u32),
}

/// A previous signed version of a zone, indexed by owner and type. Its names and rdata are
/// in blocks ([`RecordList::into_blocks`]) that the new version takes over
/// ([`RecordList::adopt`]), so kept signatures are not copied.
#[derive(Clone, Debug)]
pub struct Previous {
    list: RecordList,
    groups: Vec<Group>,
    now: u32,
    refresh: u32,
}

/// The type an item is grouped under: the covered type for an RRSIG.
fn group_type(list: &RecordList, rr: &Rr) -> RType {
    if rr.rtype == RType::RRSIG {
        let d = list.rdata(rr);
        if d.len() >= 2 {
            return RType(u16::from_be_bytes([d[0], d[1]]));
        }
    }
    rr.rtype
}

impl Previous {
    /// Indexes a previous signed version (any order) for signing at `now` (seconds since
    /// 1970): its signatures are kept if they expire more than `refresh` seconds later.
    pub fn new(mut list: RecordList, now: u64, refresh: u32) -> Self {
        list.into_blocks();
        let mut items = std::mem::take(&mut list.items);
        let within = |a: &Rr, b: &Rr| {
            group_type(&list, a)
                .cmp(&group_type(&list, b))
                .then((a.rtype == RType::RRSIG).cmp(&(b.rtype == RType::RRSIG)))
        };
        // A kept version is in canonical order (as written): its owners need no sorting,
        // only each owner's records.
        let grouped = items
            .windows(2)
            .all(|w| list.owner(&w[0]).canonical_cmp(&list.owner(&w[1])).is_le());
        if grouped {
            let mut i = 0;
            while i < items.len() {
                let owner = list.owner(&items[i]);
                let mut k = i + 1;
                while k < items.len() && list.owner(&items[k]).canonical_cmp(&owner).is_eq() {
                    k += 1;
                }
                items[i..k].sort_unstable_by(within);
                i = k;
            }
        } else {
            items.sort_unstable_by(|a, b| {
                list.owner(a)
                    .canonical_cmp(&list.owner(b))
                    .then_with(|| within(a, b))
            });
        }
        let mut groups = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let t = group_type(&list, &items[i]);
            let owner = list.owner(&items[i]);
            let mut k = i + 1;
            while k < items.len()
                && group_type(&list, &items[k]) == t
                && list.owner(&items[k]).eq_ci(&owner)
            {
                k += 1;
            }
            // Data first, then its RRSIGs (sorted so).
            let j = items[i..k]
                .iter()
                .position(|r| r.rtype == RType::RRSIG)
                .map_or(k, |p| i + p);
            groups.push(Group {
                rtype: t,
                data: (i as u32, j as u32),
                sigs: (j as u32, k as u32),
            });
            i = k;
        }
        list.items = items;
        Self {
            list,
            groups,
            now: now as u32,
            refresh,
        }
    }

    /// Records in the previous version.
    pub fn len(&self) -> usize {
        self.list.items.len()
    }

    /// True if it is empty.
    pub fn is_empty(&self) -> bool {
        self.list.items.is_empty()
    }

    fn find(&self, owner: NameRef<'_>, rtype: RType) -> Option<&Group> {
        let items = &self.list.items;
        self.groups
            .binary_search_by(|g| {
                let first = &items[g.data.0 as usize];
                self.list
                    .owner(first)
                    .canonical_cmp(&owner)
                    .then(g.rtype.cmp(&rtype))
            })
            .ok()
            .map(|i| &self.groups[i])
    }

    /// True if the previous version published this DNSKEY at `apex`: only the signatures
    /// of such a key are kept (a key tag alone could be another key's).
    pub fn has_dnskey(&self, apex: NameRef<'_>, dnskey_rdata: &[u8]) -> bool {
        self.find(apex, RType::DNSKEY).is_some_and(|g| {
            self.list.items[g.data.0 as usize..g.data.1 as usize]
                .iter()
                .any(|r| self.list.rdata(r) == dnskey_rdata)
        })
    }

    /// The list, its records dropped: its blocks, for the new version to adopt.
    pub(crate) fn into_list(self) -> RecordList {
        let mut list = self.list;
        list.items = Vec::new();
        list
    }

    /// The previous signatures of an RRset (its records in `rrset`, finished), if the RRset
    /// was the same with the same TTL, with their records (whose offsets are this version's);
    /// `scratch` is reused for the previous records.
    pub(crate) fn signatures<'s>(
        &'s self,
        owner: NameRef<'_>,
        rtype: RType,
        ttl: u32,
        rrset: &Canonical,
        scratch: &mut Canonical,
    ) -> Option<impl Iterator<Item = (RrsigFields<'s>, &'s Rr)> + 's> {
        let g = self.find(owner, rtype)?;
        let items = &self.list.items;
        let data = &items[g.data.0 as usize..g.data.1 as usize];
        if data.is_empty() || data.iter().any(|r| r.ttl != ttl) {
            return None;
        }
        scratch.clear();
        for r in data {
            scratch.push(rtype, self.list.rdata(r));
        }
        scratch.finish();
        if scratch.len() != rrset.len() || !scratch.iter().eq(rrset.iter()) {
            return None;
        }
        let (now, refresh) = (self.now, self.refresh);
        Some(
            items[g.sigs.0 as usize..g.sigs.1 as usize]
                .iter()
                .filter_map(move |r| {
                    let rdata = self.list.rdata(r);
                    let (fields, _) = RrsigFields::parse(rdata)?;
                    let fresh = fields.valid_at(now)
                        && fields.expiration.wrapping_sub(now) as i32 > refresh as i32;
                    fresh.then_some((fields, r))
                }),
        )
    }
}
