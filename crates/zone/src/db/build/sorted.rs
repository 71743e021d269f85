//! Building a zone from records that come grouped by owner ([`Zone::build_sorted`]: a
//! signer's output): [`SortedRecords`], and each name's RRsets merged as its records are
//! read, what was read given back as the build goes.

use super::sets::{merge_sets, node_checks, RdataOut};
use super::{set_key, Builder};
use crate::db::store::Zone;
use crate::error::Error;
use crate::scan::Diag;
use shardns_wire::{NameRef, RType};

/// Records grouped by owner, for [`Zone::build_sorted`]: read by index, in order, once.
pub trait SortedRecords {
    /// Number of records.
    fn len(&self) -> usize;
    /// True if there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Record `i`'s owner.
    fn owner(&self, i: usize) -> NameRef<'_>;
    /// Record `i`'s type.
    fn rtype(&self, i: usize) -> RType;
    /// Record `i`'s TTL.
    fn ttl(&self, i: usize) -> u32;
    /// Record `i`'s rdata.
    fn rdata(&self, i: usize) -> &[u8];
    /// The records before `i` will not be read again: what holds only them may be freed.
    fn consumed(&mut self, _i: usize) {}
}

/// How many records [`Zone::build_sorted`] reads between two calls of
/// [`SortedRecords::consumed`].
const CONSUMED_STEP: usize = 1 << 16;

impl Builder {
    /// [`Builder::run`] for records grouped by owner ([`Zone::build_sorted`]): each name's
    /// RRsets are merged as its records are read, and `src` is told what was read.
    pub(super) fn run_sorted<S: SortedRecords>(
        mut self,
        src: &mut S,
    ) -> Result<(Zone, Vec<Diag>), Error> {
        let apex = self.zone.apex.clone();
        self.intern(apex.as_ref());
        let n = src.len();
        let rdata_len: usize = (0..n).map(|i| 2 + src.rdata(i).len()).sum();
        // Room for every record; what is dropped (duplicates, errors) is cut at the end.
        let mut rdata = vec![0u8; rdata_len];
        let mut out = RdataOut::new(&mut rdata, 0);
        self.arrays.rrsets.reserve(n);
        let file = self.files.first().cloned().unwrap_or_default();
        let mut recs: Vec<(u32, usize)> = Vec::new();
        let mut seen = Vec::new();
        let mut next = CONSUMED_STEP;
        let mut i = 0;
        while i < n {
            let records = &*src;
            let owner = records.owner(i);
            let mut j = i + 1;
            while j < n && records.owner(j).eq_ci(&owner) {
                j += 1;
            }
            // The scanner and the signer keep out-of-zone names away; stay safe regardless.
            if owner.ends_with(&apex.as_ref()) {
                let id = self.intern(owner);
                if self.arrays.nodes[id as usize].nrrsets != 0 {
                    self.diags.push(Diag {
                        file: file.clone(),
                        line: 0,
                        message: format!("{owner}: its records do not come together"),
                    });
                }
                recs.clear();
                recs.extend((i..j).map(|k| (set_key(records.rtype(k), records.rdata(k)), k)));
                recs.sort_by_key(|(key, _)| *key);
                let node_start = self.arrays.rrsets.len();
                let (diags, warnings) = (&mut self.diags, &mut self.warnings);
                merge_sets(
                    &recs,
                    |k| (records.ttl(k), records.rdata(k)),
                    |_, message, error| {
                        let d = Diag {
                            file: file.clone(),
                            line: 0,
                            message,
                        };
                        if error {
                            diags.push(d);
                        } else {
                            warnings.push(d);
                        }
                    },
                    &mut self.arrays.rrsets,
                    &mut out,
                    &mut seen,
                );
                let sets = &self.arrays.rrsets[node_start..];
                let (f, problems) = node_checks(sets, id == 0);
                for p in problems.into_iter().flatten() {
                    self.diags.push(Diag {
                        file: file.clone(),
                        line: 0,
                        message: format!("{owner}: {p}"),
                    });
                }
                let count = sets.len() as u16;
                let node = &mut self.arrays.nodes[id as usize];
                node.rrsets = node_start as u32;
                node.nrrsets = count;
                node.flags |= f;
            }
            i = j;
            if i >= next {
                src.consumed(i);
                next = i + CONSUMED_STEP;
            }
        }
        src.consumed(n);
        let len = out.len;
        rdata.truncate(len);
        self.arrays.rdata = rdata;
        self.finish()
    }
}

/// A signer's output ([`shardns_dnssec::sign_list`]: canonical order) as it is; the blocks
/// of signatures read are freed as the zone is built.
impl SortedRecords for shardns_dnssec::RecordList {
    fn len(&self) -> usize {
        self.items.len()
    }
    fn owner(&self, i: usize) -> NameRef<'_> {
        shardns_dnssec::RecordList::owner(self, &self.items[i])
    }
    fn rtype(&self, i: usize) -> RType {
        self.items[i].rtype
    }
    fn ttl(&self, i: usize) -> u32 {
        self.items[i].ttl
    }
    fn rdata(&self, i: usize) -> &[u8] {
        shardns_dnssec::RecordList::rdata(self, &self.items[i])
    }
    fn consumed(&mut self, i: usize) {
        self.release_before(i);
    }
}

impl<T: SortedRecords + ?Sized> SortedRecords for &mut T {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn owner(&self, i: usize) -> NameRef<'_> {
        (**self).owner(i)
    }
    fn rtype(&self, i: usize) -> RType {
        (**self).rtype(i)
    }
    fn ttl(&self, i: usize) -> u32 {
        (**self).ttl(i)
    }
    fn rdata(&self, i: usize) -> &[u8] {
        (**self).rdata(i)
    }
    fn consumed(&mut self, i: usize) {
        (**self).consumed(i)
    }
}
