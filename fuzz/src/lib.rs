//! What each fuzz target checks, one function per target (`fuzz_targets/<name>.rs` calls it).
//!
//! The same file is compiled into `crates/shardns/tests/fuzz_corpus.rs`, which replays
//! `fuzz/corpus/*/*` on stable Rust in CI, so every input the fuzzer ever kept stays a test.
//! Each function panics when the library misbehaves: a panic inside the library, a response
//! that does not parse, a name or record that breaks its own invariants.
//!
//! Never: file or network I/O (zone text with `$INCLUDE` is skipped), clocks, randomness.

mod cache;
mod config;
mod doh;
mod journal;
mod offline;
mod proxy;
mod tsig;
mod update;
mod xfr_in;

pub use cache::resolver_cache;
pub use config::config;
pub use doh::doh_request;
pub use journal::journal;
pub use offline::{ksr, ksr_run, pregenerated, skr, skr_run};
pub use proxy::proxy_header;
pub use tsig::tsig;
pub use update::{update, update_run, UpdateEnd};
pub use xfr_in::{xfr_in, xfr_in_run, XfrInEnd};

use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::{rdata, Message, Name, NameBuf, NameRef};
use shardns_zone::answer::EDNS_UDP_SIZE;
use shardns_zone::scan::{scan_text, ScanOptions};
use shardns_zone::{respond_to_message as answer, Transport, Zone, ZoneSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::OnceLock;

/// `Message::parse` on any bytes: never panics, and what it returns matches the header.
/// `tsig::read` and `tsig::verify` on the same bytes: never panic; a TSIG found starts
/// inside the message; a signature that verifies stops verifying when a signed byte changes.
pub fn parse_message(data: &[u8]) {
    if let Ok(Some(sig)) = shardns_wire::tsig::read(data) {
        assert!(sig.start >= 12 && sig.start < data.len());
        // The seeds include requests really signed with this key (fuzz/make_corpus.py signs
        // them with Python's hmac): those verify, and then no changed byte of what the MAC
        // covers may.
        let key: shardns_wire::tsig::Key = "hmac-sha256:fuzz.:c2VjcmV0".parse().expect("key");
        let keys = [key];
        if shardns_wire::tsig::verify(data, &sig, &keys, sig.time).is_ok() {
            for at in [2, 12, sig.start - 1] {
                let mut forged = data.to_vec();
                forged[at] ^= 0x01;
                assert!(shardns_wire::tsig::verify(&forged, &sig, &keys, sig.time).is_err());
            }
        }
    }
    if let Ok(m) = Message::parse(data) {
        assert_eq!(m.questions.len(), usize::from(m.header.qdcount));
        assert_eq!(m.answers.len(), usize::from(m.header.ancount));
        assert_eq!(m.authority.len(), usize::from(m.header.nscount));
        assert_eq!(m.additional.len(), usize::from(m.header.arcount));
        for r in m.answers.iter().chain(&m.authority).chain(&m.additional) {
            assert!(r.owner.as_ref().len() <= MAX_NAME_LEN);
        }
    }
}

/// `NameBuf::read_compressed` at the offset named by the first two bytes and at each of the
/// first 64 offsets of the rest: never panics, and every name it accepts is the one a
/// plain reference decoder reads there.
pub fn name_from_wire(data: &[u8]) {
    let Some((head, msg)) = data.split_first_chunk::<2>() else {
        return;
    };
    let first = usize::from(u16::from_be_bytes(*head)) % msg.len().max(1);
    let mut name = NameBuf::new();
    for pos in std::iter::once(first).chain(0..msg.len().min(64)) {
        let Ok(next) = name.read_compressed(msg, pos) else {
            continue;
        };
        assert!(
            next > pos && next <= msg.len(),
            "end {next} for a name at {pos}"
        );
        let wire = name.as_ref().as_wire();
        assert!(wire.len() <= MAX_NAME_LEN);
        assert!(
            NameRef::from_wire(wire).is_ok(),
            "accepted name is not valid wire form"
        );
        let (expected, expected_next) =
            reference_name(msg, pos).expect("accepted a name the reference rejects");
        assert_eq!(wire, &expected[..], "name at {pos}");
        assert_eq!(next, expected_next, "end of the name at {pos}");
    }
}

/// A deliberately simple name decoder to compare with: labels and pointers, a length limit
/// and a hop limit, nothing else.
fn reference_name(msg: &[u8], mut pos: usize) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut end = None;
    for _ in 0..512 {
        let len = *msg.get(pos)?;
        match len >> 6 {
            0 => {
                out.extend_from_slice(msg.get(pos..pos + 1 + usize::from(len))?);
                pos += 1 + usize::from(len);
                if out.len() > MAX_NAME_LEN {
                    return None;
                }
                if len == 0 {
                    return Some((out, end.unwrap_or(pos)));
                }
            }
            3 => {
                let target = usize::from(len & 0x3f) << 8 | usize::from(*msg.get(pos + 1)?);
                end.get_or_insert(pos + 2);
                pos = target;
            }
            _ => return None,
        }
    }
    None
}

/// `scan_text` on any text (zone `example.`): never panics; every record it returns is inside
/// the zone, has rdata valid for its type, and prints (`rdata::fmt_text`) as text that scans
/// back to the same rdata. Accepted zones are then built with `Zone::build`.
pub fn scan_zone(data: &[u8]) {
    // `$INCLUDE` would read files (even /dev/zero): not what this target is about.
    if data.windows(7).any(|w| w.eq_ignore_ascii_case(b"include")) {
        return;
    }
    let origin = Name::from_text("example.", None).expect("origin");
    let opts = ScanOptions::new(origin.clone());
    let Ok(scanned) = scan_text(data, Path::new("fuzz.zone"), &opts) else {
        return;
    };
    for chunk in &scanned.chunks {
        for item in &chunk.items {
            let owner = chunk.owner(item);
            assert!(owner.ends_with(&origin.as_ref()), "record outside the zone");
            let data = chunk.rdata(item);
            assert!(
                rdata::validate(item.rtype, data).is_ok(),
                "{} rdata the scanner made is invalid",
                item.rtype
            );
            round_trip(&opts, item.rtype, data);
        }
    }
    let _ = Zone::build(origin, scanned);
}

/// Catalog zones (RFC 9432): zone text under `cat.example.` built into a zone and read by
/// `catalog::interpret`: never panics; every member it returns is a valid name outside the
/// catalog, listed once, and a catalog produced from those members reads back the same.
pub fn catalog(data: &[u8]) {
    if data.windows(7).any(|w| w.eq_ignore_ascii_case(b"include")) {
        return;
    }
    let origin = Name::from_text("cat.example.", None).expect("origin");
    let opts = ScanOptions::new(origin.clone());
    let Ok(scanned) = scan_text(data, Path::new("fuzz.zone"), &opts) else {
        return;
    };
    let Ok((zone, _)) = Zone::build(origin.clone(), scanned) else {
        return;
    };
    let Ok(cat) = shardns_zone::catalog::interpret(&zone) else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    for m in &cat.members {
        assert!(
            !m.zone.as_ref().ends_with(&origin.as_ref()),
            "member inside the catalog"
        );
        assert!(!m.zone.as_ref().is_root(), "the root as a member");
        assert!(seen.insert(m.zone.clone()), "member listed twice");
    }
    let members: Vec<(Name, Option<String>)> = cat
        .members
        .iter()
        .map(|m| (m.zone.clone(), m.group.clone()))
        .collect();
    let text = shardns_zone::catalog::produce(origin.as_ref(), 1, &members);
    let again = shardns_zone::load_zone_text(text.as_bytes(), Path::new("produced"), &opts)
        .unwrap_or_else(|e| panic!("a produced catalog does not load: {e}\n{text}"))
        .0;
    let back = shardns_zone::catalog::interpret(&again).expect("a produced catalog reads");
    let mut want = members;
    let mut got: Vec<(Name, Option<String>)> = back
        .members
        .iter()
        .map(|m| (m.zone.clone(), m.group.clone()))
        .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(want, got, "a produced catalog reads back otherwise");
}

/// Prints rdata and scans it back as the apex's only record: the same octets must come back.
fn round_trip(opts: &ScanOptions, rtype: shardns_wire::RType, data: &[u8]) {
    let mut text = String::from("@ 300 IN ");
    let _ = write!(text, "{rtype} ");
    rdata::fmt_text(rtype, data, &mut text).expect("fmt_text");
    text.push('\n');
    let again = scan_text(text.as_bytes(), Path::new("round-trip.zone"), opts)
        .unwrap_or_else(|e| panic!("printed rdata does not scan back: {text:?}: {e}"));
    let chunk = again
        .chunks
        .iter()
        .find(|c| !c.items.is_empty())
        .expect("one record");
    assert_eq!(
        chunk.rdata(&chunk.items[0]),
        data,
        "round trip through {text:?}"
    );
}

/// The zone set `respond` answers from: `diff.test.`, the differential test's main zone, and
/// the DNSSEC lab's three signed zones (NSEC, NSEC3, NSEC3 opt-out), built once.
fn zone_set() -> &'static ZoneSet {
    static ZONES: OnceLock<ZoneSet> = OnceLock::new();
    ZONES.get_or_init(|| {
        let sources: [(&str, &str); 4] = [
            (
                "diff.test.",
                include_str!("../../crates/shardns/tests/diff/diff.test.zone"),
            ),
            (
                "nsec.lab.",
                include_str!("../../crates/shardns/tests/data/dnssec/lab/nsec.lab.zone"),
            ),
            (
                "nsec3.lab.",
                include_str!("../../crates/shardns/tests/data/dnssec/lab/nsec3.lab.zone"),
            ),
            (
                "optout.lab.",
                include_str!("../../crates/shardns/tests/data/dnssec/lab/optout.lab.zone"),
            ),
        ];
        let zones = sources
            .iter()
            .map(|(apex, text)| {
                let origin = Name::from_text(apex, None).expect("origin");
                let scanned = scan_text(
                    text.as_bytes(),
                    Path::new(apex),
                    &ScanOptions::new(origin.clone()),
                )
                .expect("bundled zone scans");
                Zone::build(origin, scanned).expect("bundled zone builds").0
            })
            .collect();
        ZoneSet::new(zones)
    })
}

/// `respond` on any bytes, over UDP and TCP: never panics, and every response parses, has
/// QR set and the query's ID, and fits the transport (512 octets over UDP without EDNS,
/// our EDNS size with it). Before that, the bytes (whole, and cut in two as if two
/// datagrams) are staged as a UDP worker's batch (`ZoneSet::prefetch`): never panics.
pub fn respond(data: &[u8]) {
    let zones = zone_set();
    let (a, b) = data.split_at(data.len() / 2);
    zones.prefetch([data, a, b], |p| assert!(!p.is_null(), "null hint"));
    let query = Message::parse(data).ok();
    let mut out = vec![0u8; 65535];
    for transport in [Transport::Udp, Transport::Tcp] {
        let Some(outcome) = answer(zones, data, transport, &mut out) else {
            continue;
        };
        let response = &out[..outcome.len];
        let m = Message::parse(response)
            .unwrap_or_else(|e| panic!("response does not parse ({e:?}): {response:02x?}"));
        assert!(m.header.qr(), "QR not set");
        assert_eq!(&response[..2], &data[..2], "ID not copied");
        if transport == Transport::Udp {
            assert!(
                outcome.len <= usize::from(EDNS_UDP_SIZE),
                "{} octets over UDP",
                outcome.len
            );
            if query.as_ref().is_some_and(|q| q.opt().is_none()) {
                assert!(
                    outcome.len <= 512,
                    "{} octets over UDP without EDNS",
                    outcome.len
                );
            }
        }
    }
}

/// `xfr::request` on any bytes that parse as a query: never panics; a request it accepts has the query's ID and a
/// transfer type, and every reply and every message of a transfer of the bundled zone
/// (cut into messages of a size taken from the input) parses, carries that ID, and the
/// transfer is the zone: its SOA first and last, every record once between, in a bounded
/// number of messages.
pub fn xfr(data: &[u8]) {
    use shardns_wire::{RType, Rcode};
    use shardns_zone::xfr::{self, Read, Transfer};
    let Ok(query) = shardns_wire::Query::parse(data) else {
        return;
    };
    let req = match xfr::request(&query) {
        Read::NotTransfer => return,
        Read::Transfer(r) | Read::Malformed(r) => r,
    };
    assert_eq!(req.id.to_be_bytes(), [data[0], data[1]], "ID not copied");
    assert!(matches!(req.qtype, RType::AXFR | RType::IXFR));
    // diff.test.: every record of it fits in a 512-octet message.
    let zone = zone_set()
        .zones()
        .find(|z| z.apex().to_string() == "diff.test.")
        .expect("diff.test. is bundled")
        .clone();
    let mut out = vec![0u8; 65535];
    let (len, _) = xfr::reply(&req, Rcode::NOERROR, Some(&zone), &mut out);
    let m = Message::parse(&out[..len]).expect("a reply parses");
    assert_eq!(m.header.id, req.id);
    // Messages from 512 octets up to the largest, by the input's last byte.
    let size = 512 + usize::from(*data.last().unwrap_or(&0)) * 251;
    let mut t = Transfer::new(zone.clone(), req);
    let mut records = Vec::new();
    let mut messages = 0;
    while let Some(len) = t.next_message(&mut out[..size]) {
        let m = Message::parse(&out[..len]).expect("a transfer message parses");
        assert_eq!(m.header.id, t.request().id);
        records.extend(m.answers.iter().map(|r| r.to_string()));
        messages += 1;
        assert!(messages <= 10_000, "a transfer that does not end");
    }
    assert!(!t.failed(), "the bundled zone's records fit in 512 octets");
    // SOA first and last, and between them every record of the zone once, names in the
    // zone's own case (compression must point at the right name, not just a valid one).
    let last = records.pop().expect("records");
    assert!(
        last.contains(" SOA ") && records[0] == last,
        "SOA first and last"
    );
    records.sort();
    assert_eq!(records, *zone_lines(&zone), "the transfer is not the zone");
}

/// Every record of `zone` in presentation form, sorted (computed once).
fn zone_lines(zone: &Zone) -> &'static Vec<String> {
    static LINES: OnceLock<Vec<String>> = OnceLock::new();
    LINES.get_or_init(|| {
        let mut lines: Vec<String> = zone.records().map(|r| r.to_string()).collect();
        lines.sort();
        lines
    })
}

/// Every record of `zone` in presentation form, owners folded to lowercase, sorted.
fn zone_lines_of(zone: &Zone) -> Vec<String> {
    let mut lines: Vec<String> = zone
        .records()
        .map(|r| r.to_string().to_lowercase())
        .collect();
    lines.sort();
    lines
}
