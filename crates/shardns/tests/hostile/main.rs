//! End-to-end: well over a thousand hostile inputs, generated from a few valid queries, thrown
//! at a running server over UDP and TCP. Each is judged by an oracle written here from the
//! RFCs, not from our code: a datagram shorter than a header or with QR set gets nothing; an
//! unknown opcode gets NOTIMP; a malformed query FORMERR (or nothing); an EDNS version other
//! than 0 BADVERS; a well-formed query the answer the zone data says, or REFUSED outside the
//! zone. Every response must parse with hickory-proto, echo the ID and opcode, and fit the
//! transport. After each batch, valid queries over UDP and TCP must still get the zone's
//! answers. The TCP half adds framing attacks: empty frames, frames shorter or longer than
//! announced, half-open connections, clients that vanish mid-frame, floods of pipelined
//! garbage and a 65,535-octet frame.
//!
//! `robustness.rs` covers idle connections, limits and a hand-written list of malformed
//! datagrams; this test generates its inputs and judges each one against the oracle.
//!
//! This file owns the zone, the server and the test that runs everything; the rest is in
//! `oracle` (what the RFCs say a response must be), `messages` (building raw messages),
//! `inputs` (the hostile inputs), `udp` and `tcp` (sending them, and the TCP framing
//! attacks) and `tally` (what was seen, for the summary and failure reports).

#[path = "../common/mod.rs"]
mod common;
mod inputs;
mod messages;
mod oracle;
mod tally;
mod tcp;
mod udp;

use common::*;
use inputs::hostile_inputs;
use messages::{edns_query, opt};
use oracle::{check_response, classify, FORMERR};
use std::collections::HashSet;
use std::time::Instant;
use tally::Tally;
use tcp::{tcp_framing_attacks, tcp_pipeline};
use udp::udp_batch;

const APEX: &str = "hostile.test";

const ZONE: &str = "\
$TTL 300
@     SOA  ns1 hostmaster 7 7200 3600 1209600 300
@     NS   ns1
@     NS   ns2
@     MX   10 mail
@     TXT  \"hostile test zone\"
ns1   A    192.0.2.53
ns2   AAAA 2001:db8::53
www   A    192.0.2.80
www   A    192.0.2.81
www   AAAA 2001:db8::80
mail  A    192.0.2.25
mail  MX   10 mail
";

/// Valid queries over UDP (IPv4 and IPv6) and TCP get the zone's answers.
fn assert_service(server: &Server, after: &str) {
    let cases: Vec<Vec<u8>> = [
        ("www.hostile.test", 1),
        ("www.hostile.test", 28),
        ("mail.hostile.test", 15),
        ("hostile.test", 2),
        ("hostile.test", 6),
        ("hostile.test", 16),
        ("nope.hostile.test", 1),
        ("ns2.hostile.test", 1),
        ("example.org", 1),
    ]
    .iter()
    .enumerate()
    .flat_map(|(i, (name, t))| {
        [
            query(0x0100 + i as u16, name, *t, None),
            edns_query(0x0200 + i as u16, name, *t, &opt(1232, 0, 0, 0, &[])),
        ]
    })
    .collect();
    for addr in [server.addr4(), server.addr6()] {
        let sock = udp_client(addr);
        for q in &cases {
            let r = udp_exchange(&sock, q)
                .unwrap_or_else(|| panic!("after {after}: no UDP answer from {addr}"));
            if let Err(e) = check_response(q, &classify(q), &r, false) {
                panic!("after {after}: UDP {addr}: {e}");
            }
        }
    }
    let rs = tcp_exchange(server.addr4(), &cases);
    for (q, r) in cases.iter().zip(&rs) {
        if let Err(e) = check_response(q, &classify(q), r, true) {
            panic!("after {after}: TCP: {e}");
        }
    }
}

fn start() -> Server {
    let dir = TempDir::new("hostile");
    let zone = dir.write("hostile.test.zone", ZONE);
    let zone_arg = format!("{APEX}.={}", zone.display());
    Server::start_in(
        dir,
        &[
            "--workers",
            "2",
            "--zone",
            &zone_arg,
            "--tcp-idle-timeout-ms",
            "1000",
        ],
    )
}

#[test]
fn hostile_datagrams_and_streams_get_what_the_rfcs_say() {
    let started = Instant::now();
    let mut server = start();
    assert_service(&server, "start");
    let mut tally = Tally::default();

    // Distinct inputs only.
    let mut seen = HashSet::new();
    let inputs: Vec<_> = hostile_inputs()
        .into_iter()
        .filter(|(_, _, m)| seen.insert(m.clone()))
        .collect();
    let mut kinds: Vec<&'static str> = Vec::new();
    for (kind, _, _) in &inputs {
        if !kinds.contains(kind) {
            kinds.push(kind);
        }
    }
    for (kind, _, _) in &inputs {
        tally.0.entry(kind).or_default().inputs += 1;
    }
    assert!(inputs.len() >= 1000, "{} distinct inputs", inputs.len());

    // UDP: every kind over IPv4, then everything but the bit flips over IPv6.
    for kind in &kinds {
        let batch: Vec<_> = inputs.iter().filter(|i| i.0 == *kind).cloned().collect();
        udp_batch(server.addr4(), &batch, &mut tally);
        assert_service(&server, kind);
    }
    let v6: Vec<_> = inputs
        .iter()
        .filter(|i| i.0 != "bit flip")
        .cloned()
        .collect();
    udp_batch(server.addr6(), &v6, &mut tally);
    assert_service(&server, "the IPv6 batch");

    // The same messages as TCP frames, pipelined 200 to a connection.
    for kind in &kinds {
        let frames: Vec<Vec<u8>> = inputs
            .iter()
            .filter(|i| i.0 == *kind && i.2.len() <= 65535)
            .map(|i| i.2.clone())
            .collect();
        for chunk in frames.chunks(200) {
            tcp_pipeline(server.addr4(), kind, chunk, &mut tally);
        }
    }
    assert_service(&server, "the TCP frames");

    tcp_framing_attacks(&server, &mut tally);
    assert_service(&server, "the TCP framing attacks");

    tally.print();
    let formerr_seen: usize = tally
        .0
        .values()
        .map(|t| t.rcodes.get(&FORMERR).copied().unwrap_or(0))
        .sum();
    let malformed = server.stat("shardns_malformed_total");
    println!("FORMERR responses seen: {formerr_seen}; shardns_malformed_total: {malformed}");
    assert!(malformed >= 1.0);
    assert!(!server.log().contains("panicked"), "{}", server.log());
    println!("hostile test took {:?}", started.elapsed());
    // A clean exit after all of it.
    assert!(server.terminate().success());
}
