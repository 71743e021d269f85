//! A stand-in zone for a secondary's zone that has no data to answer from (it expired, or
//! was never transferred): queries for its names get SERVFAIL, as Knot DNS, NSD and BIND
//! answer for an expired zone, and it is never transferred or announced.

use super::Zone;
use crate::scan::{Item, Records, Scanned};
use shardns_wire::{Class, Name, RType};

impl Zone {
    /// A zone at `apex` that answers nothing: every query for a name in it gets SERVFAIL.
    /// It holds an SOA of serial 0 (and an NS), so that what reads a zone's serial still
    /// can; [`Zone::is_unavailable`] tells it from a real zone.
    pub fn unavailable(apex: Name) -> Zone {
        let mut records = Records::default();
        let mut push = |rtype: RType, rdata: &[u8]| {
            let owner = records.bytes.len() as u32;
            records.bytes.extend_from_slice(apex.as_wire());
            let at = records.bytes.len() as u32;
            records.bytes.extend_from_slice(rdata);
            records.items.push(Item {
                owner,
                rdata: at,
                rdlen: rdata.len() as u16,
                file: 0,
                rtype,
                class: Class::IN,
                ttl: 0,
                line: 0,
            });
        };
        // SOA: MNAME and RNAME "invalid.", serial 0, refresh, retry, expire, minimum.
        let mut soa = b"\x07invalid\x00\x07invalid\x00".to_vec();
        for v in [0u32, 3600, 600, 86400, 0] {
            soa.extend_from_slice(&v.to_be_bytes());
        }
        push(RType::SOA, &soa);
        push(RType::NS, b"\x07invalid\x00");
        let scanned = Scanned {
            chunks: vec![records],
            files: vec!["<unavailable>".into()],
            warnings: Vec::new(),
            text: Vec::new(),
        };
        let (mut zone, _) = Zone::build(apex, scanned).expect("an SOA and an NS make a valid zone");
        zone.unavailable = true;
        zone
    }

    /// True for a stand-in made by [`Zone::unavailable`]: answer SERVFAIL, never transfer.
    pub fn is_unavailable(&self) -> bool {
        self.unavailable
    }
}
