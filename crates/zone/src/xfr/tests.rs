//! Transfers read back with the wire crate's parser: every record of the zone exactly once
//! between the two SOAs, messages within their size, resumption inside an RRset, and the
//! one-message replies.

use super::*;
use crate::scan::ScanOptions;
use shardns_wire::{Message, Record};
use std::collections::BTreeMap;
use std::path::Path;

fn zone(origin: &str, text: &str) -> Arc<Zone> {
    let opts = ScanOptions::new(origin.parse().unwrap());
    let (z, _) = crate::load_zone_text(text.as_bytes(), Path::new("test.zone"), &opts)
        .unwrap_or_else(|e| panic!("load: {e}"));
    Arc::new(z)
}

const SMALL: &str = "$TTL 300\n\
@ SOA ns hostmaster 2024010107 7200 3600 1209600 60\n\
@ NS ns\n@ NS ns.other.test.\n@ MX 10 mail\n\
ns A 192.0.2.1\nmail A 192.0.2.2\nmail AAAA 2001:db8::2\n\
www CNAME mail\n*.wild TXT \"any\"\n\
sub NS ns.sub\nns.sub A 192.0.2.53\n\
deep.a.b.c A 192.0.2.9\n";

fn axfr_query(zone: &str, edns: bool) -> Vec<u8> {
    let edns = edns.then_some(shardns_testkit::Edns {
        udp_size: 1232,
        version: 0,
        dnssec_ok: false,
    });
    shardns_testkit::query(0x4321, zone, RType::AXFR, edns)
}

/// An IXFR query for `zone` from a client at `serial` (SOA in the authority section).
fn ixfr_query(zone: &str, serial: u32) -> Vec<u8> {
    let mut q = shardns_testkit::query(0x1995, zone, RType::IXFR, None);
    q[9] = 1; // NSCOUNT
    let name: Name = zone.parse().unwrap();
    q.extend_from_slice(name.as_wire());
    q.extend_from_slice(&[0, 6, 0, 1, 0, 0, 0, 0]); // SOA IN, TTL 0
    let rdata = [&[0u8, 0][..], &serial.to_be_bytes(), &[0; 16]].concat(); // ". ." serial ...
    q.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    q.extend_from_slice(&rdata);
    q
}

/// `request` on raw bytes: what does not parse as a query is not a transfer either.
fn read(query: &[u8]) -> Read {
    Query::parse(query).map_or(Read::NotTransfer, |q| request(&q))
}

fn transfer_request(query: &[u8]) -> Request {
    match read(query) {
        Read::Transfer(r) => r,
        other => panic!("not a transfer: {other:?}"),
    }
}

/// Runs a transfer with `buf` octets per message; returns the parsed messages.
fn run(zone: &Arc<Zone>, query: &[u8], buf: usize) -> Vec<Message> {
    let mut t = Transfer::new(zone.clone(), transfer_request(query));
    let mut out = vec![0u8; buf];
    let mut msgs = Vec::new();
    while let Some(len) = t.next_message(&mut out) {
        assert!(len <= buf.min(MESSAGE_SIZE));
        msgs.push(Message::parse(&out[..len]).expect("a message our parser reads"));
        assert!(msgs.len() < 100_000, "a transfer that does not end");
    }
    assert!(t.is_done());
    assert_eq!(t.messages() as usize, msgs.len());
    msgs
}

fn records(msgs: &[Message]) -> Vec<Record> {
    msgs.iter()
        .flat_map(|m| m.answers.iter().cloned())
        .collect()
}

/// Every record of `zone` (SOA included once), as sorted presentation lines.
fn zone_lines(zone: &Zone) -> Vec<String> {
    let mut lines: Vec<String> = zone.records().map(|r| r.to_string()).collect();
    lines.sort();
    lines
}

/// Checks the RFC 5936 shape and that the records are the zone's, each once.
fn check_transfer(zone: &Zone, msgs: &[Message], edns: bool) {
    let all = records(msgs);
    assert!(all.len() >= 2);
    let (first, last) = (&all[0], &all[all.len() - 1]);
    assert_eq!(first.rtype, RType::SOA);
    assert_eq!(first, last, "the transfer ends with the SOA it began with");
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(m.header.id, 0x4321);
        assert!(m.header.qr() && m.header.aa() && !m.header.tc());
        assert_eq!(m.rcode(), Rcode::NOERROR);
        assert_eq!(
            m.questions.len(),
            usize::from(i == 0),
            "question in message 1 only"
        );
        assert!(m.authority.is_empty());
        assert_eq!(
            m.opt().is_some(),
            edns,
            "OPT in every message iff the query had one"
        );
        assert_eq!(m.additional.len(), usize::from(edns));
    }
    let mut got: Vec<String> = all[..all.len() - 1].iter().map(|r| r.to_string()).collect();
    got.sort();
    assert_eq!(got, zone_lines(zone));
}

#[test]
fn small_zone_in_one_message_with_glue_and_wildcards() {
    let z = zone("example.test.", SMALL);
    let msgs = run(&z, &axfr_query("EXAMPLE.test", false), 65535);
    assert_eq!(msgs.len(), 1);
    check_transfer(&z, &msgs, false);
    let m = &msgs[0];
    assert_eq!(
        m.questions[0].qname.to_string(),
        "EXAMPLE.test.",
        "question as asked"
    );
    assert_eq!(m.questions[0].qtype, RType::AXFR);
    let text: Vec<String> = m.answers.iter().map(|r| r.to_string()).collect();
    assert!(text
        .iter()
        .any(|l| l.starts_with("ns.sub.example.test. 300 IN A")));
    assert!(text
        .iter()
        .any(|l| l.starts_with("*.wild.example.test. 300 IN TXT")));
    assert_eq!(m.answers.len(), z.record_count() + 1);
}

#[test]
fn edns_query_gets_opt_in_every_message() {
    let z = zone("example.test.", SMALL);
    let msgs = run(&z, &axfr_query("example.test", true), 200);
    assert!(msgs.len() > 2, "{} messages", msgs.len());
    check_transfer(&z, &msgs, true);
}

#[test]
fn big_rrsets_resume_inside_the_set_across_messages() {
    let mut text = String::from("$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n");
    for i in 0..3000 {
        text.push_str(&format!("txt TXT \"record {i:05} {}\"\n", "x".repeat(60)));
        text.push_str(&format!("h{i} A 10.0.{}.{}\n", i / 256, i % 256));
    }
    let z = zone("big.test.", &text);
    for buf in [65535, 4096, 600] {
        let msgs = run(&z, &axfr_query("big.test", false), buf);
        check_transfer(&z, &msgs, false);
        if buf == 65535 {
            // 3,000 TXT of ~90 octets and 3,000 A in messages of at most 16 KiB.
            assert!((20..=30).contains(&msgs.len()), "{} messages", msgs.len());
        }
    }
}

#[test]
fn a_record_larger_than_a_message_ends_with_servfail() {
    let long = format!("\"{}\"", "y".repeat(250));
    let text =
        format!("@ 60 SOA ns h 1 2 3 4 5\n@ 60 NS ns\nns 60 A 192.0.2.1\nt 60 TXT {long} {long}\n");
    let z = zone("fail.test.", &text);
    let mut t = Transfer::new(z.clone(), transfer_request(&axfr_query("fail.test", false)));
    let mut out = vec![0u8; 300];
    let len = t.next_message(&mut out).unwrap();
    let first = Message::parse(&out[..len]).unwrap();
    assert_eq!(first.rcode(), Rcode::NOERROR);
    let mut last = None;
    while let Some(len) = t.next_message(&mut out) {
        last = Some(Message::parse(&out[..len]).unwrap());
    }
    assert!(t.failed());
    assert_eq!(last.expect("an error message").rcode(), Rcode::SERVFAIL);
}

#[test]
fn a_transfer_keeps_the_version_it_started_with() {
    let z = zone("example.test.", SMALL);
    let mut t = Transfer::new(
        z.clone(),
        transfer_request(&axfr_query("example.test", false)),
    );
    drop(z); // a reload swapped the zone out: the transfer still holds its version
    let mut out = vec![0u8; 65535];
    let len = t.next_message(&mut out).unwrap();
    assert!(t.is_done());
    check_transfer(t.zone(), &[Message::parse(&out[..len]).unwrap()], false);
}

#[test]
fn requests_are_recognised() {
    let r = transfer_request(&axfr_query("example.test", true));
    assert_eq!(
        (r.id, r.qtype, r.edns, r.client_serial),
        (0x4321, RType::AXFR, true, None)
    );
    let r = transfer_request(&ixfr_query("example.test", 2024010106));
    assert_eq!((r.qtype, r.client_serial), (RType::IXFR, Some(2024010106)));
    // Not transfers, or malformed ones the normal path answers.
    for q in [
        shardns_testkit::query(1, "example.test", RType::SOA, None),
        shardns_testkit::query(1, "example.test", RType::AXFR, None)[..20].to_vec(),
        {
            let mut q = axfr_query("example.test", false);
            q[2] |= 0x80; // a response
            q
        },
        {
            let mut q = axfr_query("example.test", false);
            let n = q.len();
            q[n - 1] = 3; // class CH
            q
        },
    ] {
        assert_eq!(read(&q), Read::NotTransfer);
    }
    // IXFR without the client's SOA.
    let q = shardns_testkit::query(7, "example.test", RType::IXFR, None);
    assert!(matches!(read(&q), Read::Malformed(r) if r.id == 7));
}

#[test]
fn serial_arithmetic() {
    assert!(is_current(5, 5));
    assert!(is_current(6, 5));
    assert!(!is_current(4, 5));
    assert!(is_current(1, u32::MAX)); // wrapped: 1 is after 4294967295
    assert!(!is_current(u32::MAX, 1));
}

#[test]
fn replies_carry_the_question_and_the_soa_when_asked() {
    let z = zone("example.test.", SMALL);
    assert_eq!(z.serial(), 2024010107);
    let r = transfer_request(&ixfr_query("example.test", 2024010107));
    let mut out = vec![0u8; 512];
    let (len, tc) = reply(&r, Rcode::NOERROR, Some(&z), &mut out);
    assert!(!tc);
    let m = Message::parse(&out[..len]).unwrap();
    assert!(m.header.aa());
    assert_eq!(m.questions[0].qtype, RType::IXFR);
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].rtype, RType::SOA);
    let r = transfer_request(&axfr_query("example.test", true));
    let (len, _) = reply(&r, Rcode::REFUSED, None, &mut out);
    let m = Message::parse(&out[..len]).unwrap();
    assert_eq!(m.rcode(), Rcode::REFUSED);
    assert!(!m.header.aa() && m.answers.is_empty() && m.opt().is_some());
    // No room for the SOA: TC, so the client asks again over TCP.
    let r = transfer_request(&ixfr_query("example.test", 1));
    let (len, tc) = reply(&r, Rcode::NOERROR, Some(&z), &mut out[..60]);
    let m = Message::parse(&out[..len]).unwrap();
    assert!(tc && m.header.tc() && m.answers.is_empty());
}

#[test]
fn rfc1034_root_zone_transfers_whole() {
    let z = zone(".", include_str!("../../tests/data/rfc1034-root.zone"));
    let msgs = run(&z, &axfr_query(".", false), 512);
    check_transfer(&z, &msgs, false);
}

#[test]
fn node_map_has_no_duplicates() {
    // Each owner's RRsets are written together (one run per node).
    let z = zone("example.test.", SMALL);
    let msgs = run(&z, &axfr_query("example.test", false), 65535);
    let all = records(&msgs);
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    let mut prev = None;
    for r in &all[1..all.len() - 1] {
        let owner = r.owner.to_string().to_ascii_lowercase();
        if prev.as_ref() != Some(&owner) {
            *runs.entry(owner.clone()).or_default() += 1;
            prev = Some(owner);
        }
    }
    assert!(runs.values().all(|&n| n == 1), "{runs:?}");
}

#[test]
fn notify_carries_the_soa_and_its_answer_is_recognised() {
    let z = zone("example.test.", SMALL);
    let mut out = vec![0u8; 512];
    let len = notify(&z, 0xabcd, &mut out);
    let m = Message::parse(&out[..len]).unwrap();
    assert!(m.header.opcode() == Opcode::NOTIFY);
    assert!(m.header.aa() && !m.header.qr());
    assert_eq!(m.questions[0].qname.to_string(), "example.test.");
    assert_eq!(m.questions[0].qtype, RType::SOA);
    assert_eq!(m.answers.len(), 1);
    assert!(m.answers[0].to_string().contains(" 2024010107 "));
    // A response: QR, same opcode and ID.
    let mut resp = out[..len].to_vec();
    resp[2] |= 0x80;
    assert_eq!(notify_response(&resp, 0xabcd), Some(Rcode::NOERROR));
    resp[3] = (resp[3] & 0xf0) | 5;
    assert_eq!(notify_response(&resp, 0xabcd), Some(Rcode::REFUSED));
    assert_eq!(notify_response(&resp, 0xabce), None, "another ID");
    assert_eq!(notify_response(&out[..len], 0xabcd), None, "our own query");
    assert_eq!(notify_response(&resp[..5], 0xabcd), None);
}
