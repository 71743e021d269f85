//! The zones Unbound serves unless told not to (`nodefault`), as Unbound 1.17 answers them
//! (checked against it by `tests/resolver_local.rs`): `localhost.` (redirect: every name
//! below is localhost too), the reverse zones of 127.0.0.0/8 and ::1, the special-use names
//! `home.arpa.` (RFC 8375), `onion.` (RFC 7686), `test.` and `invalid.` (RFC 6761), and the
//! RFC 6303 / AS112 reverse zones of private, link-local, documentation and unspecified
//! addresses. Every one has an NS and an SOA record at its apex.

use shardns_wire::text::Token;
use shardns_wire::{rdata, Name, NameRef, RType};

use super::{LocalRecord, ZoneKind};

/// TTL of every default record (Unbound's).
const TTL: u32 = 10_800;

/// The AS112 / RFC 6303 zones besides 172.16/12 and 100.64/10 (made below).
const AS112: [&str; 17] = [
    "10.in-addr.arpa.",
    "168.192.in-addr.arpa.",
    "254.169.in-addr.arpa.",
    "2.0.192.in-addr.arpa.",
    "100.51.198.in-addr.arpa.",
    "113.0.203.in-addr.arpa.",
    "255.255.255.255.in-addr.arpa.",
    "0.in-addr.arpa.",
    "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa.",
    "d.f.ip6.arpa.",
    "8.e.f.ip6.arpa.",
    "9.e.f.ip6.arpa.",
    "a.e.f.ip6.arpa.",
    "b.e.f.ip6.arpa.",
    "8.b.d.0.1.0.0.2.ip6.arpa.",
    "home.arpa.",
    "onion.",
];

const LOOPBACK6: &str = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa.";

fn name(text: &str) -> Name {
    text.parse().expect("a default zone name")
}

fn record(owner: &Name, rtype: RType, text: &str) -> LocalRecord {
    let tokens: Vec<Token<'_>> = text
        .split_whitespace()
        .map(|t| Token::plain(t.as_bytes()))
        .collect();
    let mut rd = Vec::new();
    rdata::from_text(rtype, &tokens, NameRef::ROOT, &mut rd).expect("default rdata");
    LocalRecord {
        owner: owner.clone(),
        ttl: TTL,
        rtype,
        rdata: rd,
    }
}

/// An apex's NS and SOA.
fn apex_records(apex: &Name) -> Vec<LocalRecord> {
    vec![
        record(apex, RType::NS, "localhost."),
        record(
            apex,
            RType::SOA,
            "localhost. nobody.invalid. 1 3600 1200 604800 10800",
        ),
    ]
}

/// The default zones: apex, type, records.
pub(crate) fn zones() -> Vec<(Name, ZoneKind, Vec<LocalRecord>)> {
    let mut out = Vec::new();
    let localhost = name("localhost.");
    let mut data = apex_records(&localhost);
    data.push(record(&localhost, RType::A, "127.0.0.1"));
    data.push(record(&localhost, RType::AAAA, "::1"));
    out.push((localhost, ZoneKind::Redirect, data));
    for (apex, ptr_owner) in [
        ("127.in-addr.arpa.", "1.0.0.127.in-addr.arpa."),
        (LOOPBACK6, LOOPBACK6),
    ] {
        let apex = name(apex);
        let mut data = apex_records(&apex);
        data.push(record(&name(ptr_owner), RType::PTR, "localhost."));
        out.push((apex, ZoneKind::Static, data));
    }
    let mut plain: Vec<Name> = ["test.", "invalid."].iter().map(|n| name(n)).collect();
    plain.extend(AS112.iter().map(|n| name(n)));
    plain.extend((16..32).map(|i| name(&format!("{i}.172.in-addr.arpa."))));
    plain.extend((64..128).map(|i| name(&format!("{i}.100.in-addr.arpa."))));
    for apex in plain {
        let data = apex_records(&apex);
        out.push((apex, ZoneKind::Static, data));
    }
    out
}
