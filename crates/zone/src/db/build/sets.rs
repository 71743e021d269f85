//! Merging a node's records into RRsets ([`merge_sets`]: sorted by type, duplicates
//! collapsed, TTLs checked, rdata written straight into the zone's), for a range of nodes
//! on one thread ([`SetInputs::build`]), and the per-node checks ([`node_checks`]).

use super::{key_type, set_key, Src};
use crate::db::flags;
use crate::db::store::{Arrays, RRsetEntry};
use crate::db::NodeId;
use crate::scan::{Diag, Records};
use shardns_wire::{rdata, NameRef, RType};
use std::path::PathBuf;

/// Step 3's read-only inputs, shared by the threads that build RRsets.
pub(super) struct SetInputs<'a> {
    pub(super) chunks: &'a [Records],
    pub(super) srcs: &'a [Src],
    /// Record indices grouped by node: node `i`'s are `order[start[i]..start[i + 1]]`;
    /// empty when the records came grouped (then node `i`'s are `start[i]..start[i + 1]`).
    pub(super) order: &'a [u32],
    pub(super) start: &'a [u32],
    pub(super) files: &'a [PathBuf],
    pub(super) arrays: &'a Arrays,
}

/// The RRsets of a range of nodes, with offsets local to this part.
#[derive(Default)]
pub(super) struct Part {
    pub(super) rrsets: Vec<RRsetEntry>,
    /// Where this part's slice of the zone's rdata starts, and how much of it was written.
    pub(super) rdata_at: usize,
    pub(super) rdata_len: usize,
    /// Per node of the range: first RRset (local), RRset count, flags.
    pub(super) nodes: Vec<(u32, u16, u8)>,
    pub(super) diags: Vec<Diag>,
    pub(super) warnings: Vec<Diag>,
}

impl SetInputs<'_> {
    fn diag(&self, src: Src, message: String) -> Diag {
        let item = &self.chunks[src.chunk as usize].items[src.item as usize];
        Diag {
            file: self
                .files
                .get(item.file as usize)
                .cloned()
                .unwrap_or_default(),
            line: item.line,
            message,
        }
    }

    /// Merges the RRsets of nodes `ids`, writing their rdata into `out`, the slice of the
    /// zone's rdata that starts at `out_at` (as long as the records' rdata and lengths, so
    /// it has room whatever is dropped). `sets_room`: the room to reserve for RRsets.
    pub(super) fn build(
        &self,
        ids: std::ops::Range<usize>,
        out: &mut [u8],
        out_at: usize,
        sets_room: usize,
    ) -> Part {
        let mut part = Part {
            rrsets: Vec::with_capacity(sets_room),
            nodes: Vec::with_capacity(ids.len()),
            rdata_at: out_at,
            ..Part::default()
        };
        let mut out = RdataOut::new(out, out_at);
        let mut recs: Vec<(u32, Src)> = Vec::new();
        let mut seen = Vec::new();
        for id in ids {
            let (a, b) = (self.start[id] as usize, self.start[id + 1] as usize);
            recs.clear();
            recs.extend((a..b).map(|x| {
                let r = if self.order.is_empty() {
                    x as u32
                } else {
                    self.order[x]
                };
                let s = self.srcs[r as usize];
                let chunk = &self.chunks[s.chunk as usize];
                let item = &chunk.items[s.item as usize];
                (set_key(item.rtype, chunk.rdata(item)), s)
            }));
            let first_in_file = recs.first().map(|r| r.1);
            recs.sort_by_key(|(k, _)| *k);
            let node_start = part.rrsets.len();
            merge_sets(
                &recs,
                |s: Src| {
                    let chunk = &self.chunks[s.chunk as usize];
                    let item = &chunk.items[s.item as usize];
                    (item.ttl, chunk.rdata(item))
                },
                |s, message, error| {
                    let d = self.diag(s, message);
                    if error {
                        part.diags.push(d);
                    } else {
                        part.warnings.push(d);
                    }
                },
                &mut part.rrsets,
                &mut out,
                &mut seen,
            );
            let sets = &part.rrsets[node_start..];
            let (f, problems) = node_checks(sets, id == 0);
            if problems.iter().any(Option::is_some) {
                let name = NameRef::from_wire_prefix(self.arrays.name_wire(id as NodeId))
                    .map_or_else(|_| String::new(), |(n, _)| n.to_string());
                let src = first_in_file.expect("a node with problems has records");
                for p in problems.into_iter().flatten() {
                    part.diags.push(self.diag(src, format!("{name}: {p}")));
                }
            }
            part.nodes.push((node_start as u32, sets.len() as u16, f));
        }
        part.rdata_len = out.len;
        part
    }
}

/// Where a build writes RRsets' rdata: a slice of the zone's rdata with room for every
/// record, starting at offset `base` of it; `len` octets written so far.
pub(super) struct RdataOut<'a> {
    buf: &'a mut [u8],
    base: usize,
    pub(super) len: usize,
}

impl<'a> RdataOut<'a> {
    pub(super) fn new(buf: &'a mut [u8], base: usize) -> Self {
        Self { buf, base, len: 0 }
    }
}

/// Merges one node's records, sorted by [`set_key`], into RRsets appended to `rrsets`, their
/// rdata written on in `out` (each record a 2-octet length and the data). Bad rdata is an
/// error; identical records collapse (RFC 2181 §5); a TTL other than the set's first
/// record's is a warning and the first is kept (§5.2). `rec` gives a record's TTL and rdata, `report` takes a
/// record's error (`true`) or warning; `seen` is scratch.
pub(super) fn merge_sets<'d, R: Copy>(
    recs: &[(u32, R)],
    rec: impl Fn(R) -> (u32, &'d [u8]),
    mut report: impl FnMut(R, String, bool),
    rrsets: &mut Vec<RRsetEntry>,
    out: &mut RdataOut<'_>,
    seen: &mut Vec<(usize, usize)>,
) {
    let mut i = 0;
    while i < recs.len() {
        let key = recs[i].0;
        let rtype = key_type(key);
        let mut j = i;
        while j < recs.len() && recs[j].0 == key {
            j += 1;
        }
        let ttl = rec(recs[i].1).0;
        let entry_at = (out.base + out.len) as u32;
        let mut count = 0u16;
        seen.clear();
        for &(_, s) in &recs[i..j] {
            let (item_ttl, data) = rec(s);
            if let Err(e) = rdata::validate(rtype, data) {
                report(s, format!("{rtype}: {e}"), true);
                continue;
            }
            // RFC 2181 §5: an RRset is a set; identical records collapse.
            if seen.iter().any(|&(at, len)| &out.buf[at..at + len] == data) {
                continue;
            }
            if item_ttl != ttl {
                report(
                    s,
                    format!("{rtype} TTL {item_ttl} differs from the RRset's TTL {ttl}; using {ttl} (RFC 2181 §5.2)"),
                    false,
                );
            }
            if count == u16::MAX {
                report(s, format!("too many {rtype} records at one name"), true);
                break;
            }
            let at = out.len;
            out.buf[at..at + 2].copy_from_slice(&(data.len() as u16).to_be_bytes());
            out.buf[at + 2..at + 2 + data.len()].copy_from_slice(data);
            seen.push((at + 2, data.len()));
            out.len = at + 2 + data.len();
            count += 1;
        }
        if count > 0 {
            rrsets.push(RRsetEntry {
                rtype,
                count,
                ttl,
                rdata: entry_at,
            });
        }
        i = j;
    }
}

/// Per-node checks on a node's RRsets: its flags, and CNAME beside other data or an SOA away
/// from the apex.
pub(in crate::db) fn node_checks(
    sets: &[RRsetEntry],
    apex: bool,
) -> (u8, [Option<&'static str>; 4]) {
    let find = |t: RType| sets.iter().find(|s| s.rtype == t);
    let mut f = 0;
    let mut problems = [None; 4];
    if let Some(cname) = find(RType::CNAME) {
        f |= flags::CNAME;
        if sets.iter().any(|s| {
            !matches!(
                s.rtype,
                RType::CNAME | RType::RRSIG | RType::NSEC | RType::NSEC3
            )
        }) {
            problems[0] = Some("CNAME and other data at the same name (RFC 1034 §3.6.2)");
        }
        if cname.count > 1 {
            problems[1] = Some("more than one CNAME record");
        }
        if apex {
            problems[2] = Some("CNAME at the zone apex");
        }
    }
    if find(RType::NSEC3).is_some()
        && sets
            .iter()
            .all(|s| matches!(s.rtype, RType::NSEC3 | RType::RRSIG))
    {
        f |= flags::NSEC3_ONLY;
    }
    if let Some(dname) = find(RType::DNAME) {
        f |= flags::DNAME;
        if dname.count > 1 {
            problems[3] = Some("more than one DNAME record");
        }
    }
    if !apex {
        if find(RType::NS).is_some() {
            f |= flags::DELEGATION;
        }
        if find(RType::SOA).is_some() {
            problems[2] = Some("SOA record away from the zone apex");
        }
    }
    (f, problems)
}
