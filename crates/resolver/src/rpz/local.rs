//! rpz::local -- the records of a local-data action ([`LocalData`]), and their writing
//! into an answer.

use shardns_wire::writer::Full;
use shardns_wire::{Class, MessageWriter, NameRef, RType, Record, Section};

/// One record of a local-data action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LocalRecord {
    pub(super) rtype: RType,
    pub(super) ttl: u32,
    pub(super) rdata: Box<[u8]>,
}

/// The records of one local-data trigger (BIND: any records other than the special
/// CNAMEs). A CNAME among them is the only record (checked when the zone is built).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LocalData {
    pub(super) records: Vec<LocalRecord>,
}

impl LocalData {
    /// Writes the records of type `qtype` (all of them for ANY) into the answer section,
    /// owned by `owner`; returns how many. None written is a NODATA answer.
    pub fn write(
        &self,
        owner: NameRef<'_>,
        qtype: RType,
        w: &mut MessageWriter<'_>,
    ) -> Result<usize, Full> {
        let mut n = 0;
        for r in &self.records {
            if r.rtype == qtype || qtype == RType::ANY {
                w.put_record(Section::Answer, owner, r.rtype, Class::IN, r.ttl, &r.rdata)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The records of type `qtype` (all for ANY) as records owned by `owner`.
    pub fn records(&self, owner: NameRef<'_>, qtype: RType) -> Vec<Record> {
        self.records
            .iter()
            .filter(|r| r.rtype == qtype || qtype == RType::ANY)
            .map(|r| Record {
                owner: owner.to_name(),
                rtype: r.rtype,
                class: Class::IN,
                ttl: r.ttl,
                rdata: r.rdata.to_vec(),
            })
            .collect()
    }

    /// The CNAME target and TTL, if this is a CNAME.
    pub(super) fn cname(&self) -> Option<(NameRef<'_>, u32)> {
        let r = self.records.first()?;
        (r.rtype == RType::CNAME)
            .then(|| NameRef::from_wire(&r.rdata).ok().map(|n| (n, r.ttl)))
            .flatten()
    }
}
