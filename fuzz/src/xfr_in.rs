//! `xfr_in`: what a secondary reads from a hostile primary. The input is cut into DNS
//! messages fed to `xfr::incoming::Incoming` as the answer to our AXFR or IXFR query for
//! a bundled zone (`diff.test.`, or `nsec.lab.`, signed with NSEC so the patch's denial
//! index path runs), and the result is checked against a full build of the same records.

use shardns_wire::{Message, Name, RType};
use shardns_zone::xfr::incoming::{self, Incoming, Limits, Outcome, Progress};
use shardns_zone::{load_zone_text, respond_to_message, ScanOptions, Transport, Zone, ZoneSet};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

const NOW: u64 = 1_700_000_000;
const ID: u16 = 0x5a5a;
/// At most this many messages are read from one input (one run stays fast).
const MAX_MESSAGES: usize = 16;
/// At most this many names are asked (in canonical wire order) when comparing answers.
pub(crate) const MAX_NAMES: usize = 600;
/// The types every name is asked for when a patched zone is compared with a full build.
pub(crate) const QTYPES: [RType; 13] = [
    RType::A,
    RType::NS,
    RType::SOA,
    RType::CNAME,
    RType::MX,
    RType::TXT,
    RType::AAAA,
    RType::DS,
    RType::RRSIG,
    RType::NSEC,
    RType::DNSKEY,
    RType::DNAME,
    RType::ANY,
];

/// Input: a selector byte (bit 0: IXFR from the base's serial, else AXFR; bit 1: base
/// `nsec.lab.`, else `diff.test.`), then messages, each a 2-octet length and that many
/// octets (the ID is set to the query's, so the fuzzer need not guess it).
///
/// Checks: no panic; an error leaves the base as it was; an accepted zone has the records
/// a full build of them has, and a zone patched from the base (IXFR) answers every name
/// (of it, of the base, their parents and a name below each; the first 600) for every
/// type in `QTYPES`,
/// with DNSSEC records asked for, exactly as the full build does: same flags and RCODE,
/// same records in each section.
pub fn xfr_in(data: &[u8]) {
    let _ = xfr_in_run(data);
}

/// What became of an `xfr_in` input (the replay test checks that the seeds reach each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XfrInEnd {
    /// Too short, or refused by the reader.
    Rejected,
    /// An IXFR answered with an SOA alone.
    SoaOnly,
    /// A zone built in full.
    Built,
    /// A zone patched from the base, and compared with the full build.
    Patched,
}

/// [`xfr_in`], saying how the input ended.
pub fn xfr_in_run(data: &[u8]) -> XfrInEnd {
    let Some((&sel, mut rest)) = data.split_first() else {
        return XfrInEnd::Rejected;
    };
    let apex_text = if sel & 2 == 0 {
        "diff.test."
    } else {
        "nsec.lab."
    };
    let base = base_zone(apex_text);
    let before = super::zone_lines_of(&base);
    let apex = base.apex().to_name();
    let qtype = if sel & 1 == 1 {
        RType::IXFR
    } else {
        RType::AXFR
    };
    let req = incoming::request(&apex, qtype, ID, Some(&base), None, NOW);
    let limits = Limits {
        messages: MAX_MESSAGES as u32,
        records: 1_000,
        bytes: 1 << 20,
    };
    let mut t = Incoming::new(req, Some(Arc::clone(&base)), limits);
    let mut failed = false;
    for _ in 0..MAX_MESSAGES {
        let Some((len, tail)) = rest.split_first_chunk::<2>() else {
            break;
        };
        let len = usize::from(u16::from_be_bytes(*len)).min(tail.len());
        let mut msg = tail[..len].to_vec();
        rest = &tail[len..];
        if msg.len() >= 2 {
            msg[..2].copy_from_slice(&ID.to_be_bytes());
        }
        match t.feed(&msg, NOW) {
            Ok(Progress::More) => {}
            Ok(Progress::Done) => break,
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    let outcome = if failed { None } else { t.finish().ok() };
    assert_eq!(
        super::zone_lines_of(&base),
        before,
        "the base changed under a transfer"
    );
    let (zone, patched) = match outcome {
        None => return XfrInEnd::Rejected,
        Some(Outcome::SoaOnly(_)) => return XfrInEnd::SoaOnly,
        Some(Outcome::Zone { zone, patched, .. }) => (zone, patched),
    };
    // A full build of the records the transfer gave.
    let full = full_build(&zone, &apex, "the zone accepted");
    if patched.is_none() {
        return XfrInEnd::Built;
    }
    answers_alike(&base, zone, full, &apex, "the patched zone");
    XfrInEnd::Patched
}

/// The zone its own records build in full (their text scanned again), checked to hold the
/// same records as `zone`; `what` names `zone` in the failure.
pub(crate) fn full_build(zone: &Zone, apex: &Name, what: &str) -> Zone {
    let mut text = String::new();
    for r in zone.records() {
        text.push_str(&r.to_string());
        text.push('\n');
    }
    let opts = ScanOptions::new(apex.clone());
    let full = match load_zone_text(text.as_bytes(), Path::new("full build"), &opts) {
        Ok((z, _)) => z,
        Err(e) => panic!("{what} does not build in full: {e}\n{text}"),
    };
    assert_eq!(
        super::zone_lines_of(zone),
        super::zone_lines_of(&full),
        "{what} is not its records' full build"
    );
    full
}

/// Checks that `zone` (made from `base` by a patch) answers every name of the three zones
/// and their neighbours, for every type of [`QTYPES`], as `full` does.
pub(crate) fn answers_alike(base: &Zone, zone: Zone, full: Zone, apex: &Name, what: &str) {
    let names = names_to_ask(&[base, &zone, &full], apex);
    let patched = ZoneSet::new(vec![zone]);
    let full = ZoneSet::new(vec![full]);
    let mut a = vec![0u8; 65535];
    let mut b = vec![0u8; 65535];
    for name in names.iter().take(MAX_NAMES) {
        for qtype in QTYPES {
            let q = query(name, qtype);
            let got = respond_to_message(&patched, &q, Transport::Tcp, &mut a).map(|w| w.len);
            let want = respond_to_message(&full, &q, Transport::Tcp, &mut b).map(|w| w.len);
            let (Some(got), Some(want)) = (got, want) else {
                assert_eq!(got.is_some(), want.is_some(), "one answers, not the other");
                continue;
            };
            assert_eq!(
                summary(&a[..got]),
                summary(&b[..want]),
                "{} {qtype}: {what} answers otherwise than the full build",
                NameText(name)
            );
        }
    }
}

/// The bundled zone `apex` as built (once) for `respond`.
pub(crate) fn base_zone(apex: &str) -> Arc<Zone> {
    super::zone_set()
        .zones()
        .find(|z| z.apex().to_string() == apex)
        .expect("bundled zone")
        .clone()
}

/// Every owner of the zones, each one's parent (empty non-terminals) and a name below it
/// (wildcards, NXDOMAIN proofs), in wire form, inside the zone.
pub(crate) fn names_to_ask(zones: &[&Zone], apex: &Name) -> BTreeSet<Vec<u8>> {
    let mut names = BTreeSet::new();
    for z in zones {
        for r in z.records() {
            let wire = r.owner.as_wire().to_ascii_lowercase();
            let mut below = b"\x03zz0".to_vec();
            below.extend_from_slice(&wire);
            if below.len() <= 255 {
                names.insert(below);
            }
            if wire.len() > apex.as_wire().len() {
                names.insert(wire[1 + usize::from(wire[0])..].to_vec());
            }
            names.insert(wire);
        }
    }
    names
}

/// A query for `name` (wire form) and `qtype`, with EDNS and DO.
pub(crate) fn query(name: &[u8], qtype: RType) -> Vec<u8> {
    let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    q.extend_from_slice(name);
    q.extend_from_slice(&qtype.0.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    q.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
    q
}

/// A response's flags and each section's records as sorted text (order and compression
/// are free).
pub(crate) fn summary(response: &[u8]) -> (u16, [Vec<String>; 3]) {
    let m = Message::parse(response).expect("a response parses");
    let sorted = |rs: &[shardns_wire::message::Record]| {
        let mut v: Vec<String> = rs.iter().map(|r| r.to_string().to_lowercase()).collect();
        v.sort();
        v
    };
    (
        m.header.flags,
        [
            sorted(&m.answers),
            sorted(&m.authority),
            sorted(&m.additional),
        ],
    )
}

pub(crate) struct NameText<'a>(pub(crate) &'a [u8]);

impl std::fmt::Display for NameText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match shardns_wire::NameRef::from_wire(self.0) {
            Ok(n) => write!(f, "{n}"),
            Err(_) => write!(f, "{:02x?}", self.0),
        }
    }
}
