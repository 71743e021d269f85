//! Tests: the zone section, every prerequisite form, every prescan refusal.

use super::*;
use crate::scan::{scan_text, ScanOptions};
use shardns_wire::message::Header;
use std::path::Path;

const APEX: &str = "example.test.";
const ZONE: &str = "$TTL 300\n@ SOA ns hostmaster 10 3600 600 86400 60\n@ NS ns\n@ NS ns2\n\
ns A 192.0.2.1\nns2 A 192.0.2.2\nwww A 192.0.2.10\nwww A 192.0.2.11\nwww TXT \"hello\"\n\
alias CNAME www\nmx MX 10 Mail.Example.TEST.\na.b.c A 192.0.2.3\nsub NS ns.sub\nns.sub A 192.0.2.4\n";

fn name(s: &str) -> Name {
    Name::from_text(s, Some(APEX.parse::<Name>().unwrap().as_ref())).unwrap()
}

fn zone_of(text: &str) -> Zone {
    let origin: Name = APEX.parse().unwrap();
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("db.test"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    Zone::build(origin, scanned).unwrap().0
}

fn zone() -> Zone {
    zone_of(ZONE)
}

/// The wire rdata of `text` for `rtype` (names relative to the apex).
fn rd(rtype: RType, text: &str) -> Vec<u8> {
    let origin: Name = APEX.parse().unwrap();
    let line = format!("x 1 IN {rtype} {text}\n");
    let s = scan_text(
        line.as_bytes(),
        Path::new("rd"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    let c = &s.chunks[0];
    c.rdata(&c.items[0]).to_vec()
}

/// One record of a test message: owner, type, class, TTL, rdata.
type T = (&'static str, RType, Class, u32, Vec<u8>);

fn add(owner: &'static str, rtype: RType, ttl: u32, text: &str) -> T {
    (owner, rtype, Class::IN, ttl, rd(rtype, text))
}
fn del_set(owner: &'static str, rtype: RType) -> T {
    (owner, rtype, Class::ANY, 0, Vec::new())
}

/// An UPDATE message for `zone`: prerequisites, updates, additional records.
fn msg_for(zone: &str, pre: &[T], upd: &[T], extra: &[T]) -> Vec<u8> {
    let mut h = Header {
        id: 7,
        qdcount: 1,
        ancount: pre.len() as u16,
        nscount: upd.len() as u16,
        arcount: extra.len() as u16,
        ..Header::default()
    };
    h.set_opcode(Opcode::UPDATE);
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(name(zone).as_wire());
    out.extend_from_slice(&[0, 6, 0, 1]);
    for (owner, t, c, ttl, data) in pre.iter().chain(upd).chain(extra) {
        out.extend_from_slice(name(owner).as_wire());
        out.extend_from_slice(&t.0.to_be_bytes());
        out.extend_from_slice(&c.0.to_be_bytes());
        out.extend_from_slice(&ttl.to_be_bytes());
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(data);
    }
    out
}

fn msg(pre: &[T], upd: &[T]) -> Vec<u8> {
    msg_for(APEX, pre, upd, &[])
}

fn rcode(z: &Zone, m: &[u8]) -> Rcode {
    match check(m, z) {
        Ok(()) => Rcode::NOERROR,
        Err(r) => r.rcode,
    }
}

#[test]
fn the_zone_section_is_checked() {
    let z = zone();
    assert_eq!(
        rcode(&z, &msg_for("other.test.", &[], &[], &[])),
        Rcode::NOTAUTH
    );
    assert_eq!(rcode(&z, &msg_for("www", &[], &[], &[])), Rcode::NOTAUTH);
    let mut m = msg(&[], &[]);
    m[5] = 2; // ZOCOUNT 2
    assert_eq!(rcode(&z, &m), Rcode::FORMERR);
    let mut m = msg(&[], &[]);
    let at = 12 + name(APEX).as_wire().len();
    m[at + 1] = 2; // ZTYPE NS
    assert_eq!(rcode(&z, &m), Rcode::FORMERR);
    let mut m = msg(&[], &[]);
    m[2] = 0; // opcode QUERY
    assert_eq!(rcode(&z, &m), Rcode::FORMERR);
    let mut m = msg(&[], &[]);
    m.push(0);
    assert_eq!(rcode(&z, &m), Rcode::FORMERR, "trailing octet");
    let m = msg(&[], &[(APEX, RType::A, Class::IN, 300, vec![1, 2, 3])]);
    assert_eq!(rcode(&z, &m), Rcode::FORMERR, "short A rdata");
    // The additional section: OPT, and TSIG only last.
    let opt = (".", RType::OPT, Class(1232), 0, Vec::new());
    let tsig = ("key", RType::TSIG, Class::ANY, 0, Vec::new());
    assert_eq!(
        rcode(&z, &msg_for(APEX, &[], &[], &[opt.clone(), tsig.clone()])),
        Rcode::NOERROR
    );
    assert_eq!(
        rcode(&z, &msg_for(APEX, &[], &[], &[tsig, opt.clone()])),
        Rcode::FORMERR
    );
    let a = add("www", RType::A, 1, "192.0.2.1");
    assert_eq!(rcode(&z, &msg_for(APEX, &[], &[], &[a])), Rcode::FORMERR);
}

#[test]
fn every_prerequisite_form_and_its_rcode() {
    let z = zone();
    let any = |o: &'static str, t| (o, t, Class::ANY, 0, Vec::new());
    let none = |o: &'static str, t| (o, t, Class::NONE, 0, Vec::new());
    let ok = |p: &[T]| rcode(&z, &msg(p, &[]));
    // RRset exists (value independent).
    assert_eq!(ok(&[any("www", RType::A)]), Rcode::NOERROR);
    assert_eq!(ok(&[any("WWW", RType::TXT)]), Rcode::NOERROR);
    assert_eq!(ok(&[any("www", RType::MX)]), Rcode::NXRRSET);
    assert_eq!(ok(&[any("nothere", RType::A)]), Rcode::NXRRSET);
    // RRset does not exist.
    assert_eq!(ok(&[none("www", RType::MX)]), Rcode::NOERROR);
    assert_eq!(ok(&[none("www", RType::A)]), Rcode::YXRRSET);
    // Name is in use / not in use (an empty non-terminal is not in use).
    assert_eq!(ok(&[any("www", RType::ANY)]), Rcode::NOERROR);
    assert_eq!(ok(&[any("b.c", RType::ANY)]), Rcode::NXDOMAIN);
    assert_eq!(ok(&[any("nothere", RType::ANY)]), Rcode::NXDOMAIN);
    assert_eq!(ok(&[none("nothere", RType::ANY)]), Rcode::NOERROR);
    assert_eq!(ok(&[none("b.c", RType::ANY)]), Rcode::NOERROR);
    assert_eq!(ok(&[none("www", RType::ANY)]), Rcode::YXDOMAIN);
    // RRset exists (value dependent): the whole set, in any order, names in any case.
    let a10 = add("www", RType::A, 0, "192.0.2.10");
    let a11 = add("www", RType::A, 0, "192.0.2.11");
    assert_eq!(ok(&[a11.clone(), a10.clone()]), Rcode::NOERROR);
    assert_eq!(
        ok(std::slice::from_ref(&a10)),
        Rcode::NXRRSET,
        "part of the set"
    );
    let a12 = add("www", RType::A, 0, "192.0.2.12");
    assert_eq!(ok(&[a10, a11, a12]), Rcode::NXRRSET, "more than the set");
    assert_eq!(
        ok(&[add("mx", RType::MX, 0, "10 mail.example.test.")]),
        Rcode::NOERROR
    );
    assert_eq!(
        ok(&[add("MX", RType::MX, 0, "10 MAIL.EXAMPLE.TEST.")]),
        Rcode::NOERROR
    );
    assert_eq!(
        ok(&[add("txt", RType::TXT, 0, "\"Hello\"")]),
        Rcode::NXRRSET
    );
    assert_eq!(
        ok(&[add("www", RType::TXT, 0, "\"HELLO\"")]),
        Rcode::NXRRSET
    );
    // FORMERR: TTL, RDLENGTH, class; NOTZONE outside the zone.
    assert_eq!(ok(&[add("www", RType::A, 1, "192.0.2.10")]), Rcode::FORMERR);
    assert_eq!(
        ok(&[("www", RType::A, Class::ANY, 0, vec![192, 0, 2, 10])]),
        Rcode::FORMERR
    );
    assert_eq!(
        ok(&[("www", RType::A, Class::NONE, 0, vec![192, 0, 2, 10])]),
        Rcode::FORMERR
    );
    assert_eq!(
        ok(&[("www", RType::A, Class::CH, 0, Vec::new())]),
        Rcode::FORMERR
    );
    assert_eq!(ok(&[any("www.other.", RType::A)]), Rcode::NOTZONE);
    // In order: the first failure decides.
    assert_eq!(
        ok(&[any("nothere", RType::ANY), any("x.other.", RType::A)]),
        Rcode::NXDOMAIN
    );
}

#[test]
fn every_prescan_refusal() {
    let z = zone();
    let one = |u: T| rcode(&z, &msg(&[], &[u]));
    for t in [
        RType::ANY,
        RType::AXFR,
        RType::IXFR,
        RType::MAILA,
        RType::MAILB,
        RType::OPT,
        RType::TSIG,
        RType::TKEY,
    ] {
        assert_eq!(
            one(("www", t, Class::IN, 300, Vec::new())),
            Rcode::FORMERR,
            "{t}"
        );
        assert_eq!(
            one(("www", t, Class::NONE, 0, Vec::new())),
            Rcode::FORMERR,
            "{t}"
        );
        if t != RType::ANY {
            assert_eq!(
                one(("www", t, Class::ANY, 0, Vec::new())),
                Rcode::FORMERR,
                "{t}"
            );
        }
    }
    assert_eq!(
        one(("www", RType::A, Class::ANY, 5, Vec::new())),
        Rcode::FORMERR
    );
    assert_eq!(
        one(("www", RType::A, Class::ANY, 0, vec![1, 2, 3, 4])),
        Rcode::FORMERR
    );
    assert_eq!(
        one(("www", RType::A, Class::NONE, 5, vec![1, 2, 3, 4])),
        Rcode::FORMERR
    );
    assert_eq!(
        one(("www", RType::A, Class::IN, 5, Vec::new())),
        Rcode::FORMERR
    );
    assert_eq!(
        one(("www", RType::A, Class::NONE, 0, Vec::new())),
        Rcode::FORMERR
    );
    assert_eq!(
        one(("www", RType::A, Class::CH, 5, vec![1, 2, 3, 4])),
        Rcode::FORMERR
    );
    assert_eq!(
        one(add("www.other.", RType::A, 5, "192.0.2.1")),
        Rcode::NOTZONE
    );
    assert_eq!(one(del_set("other.", RType::A)), Rcode::NOTZONE);
    for t in [RType::RRSIG, RType::NSEC, RType::NSEC3] {
        assert_eq!(one(del_set("www", t)), Rcode::REFUSED, "{t}");
    }
    // Nothing applied when a later record fails.
    let m = msg(
        &[],
        &[
            add("new", RType::A, 5, "192.0.2.1"),
            del_set("x.other.", RType::A),
        ],
    );
    assert_eq!(rcode(&z, &m), Rcode::NOTZONE);
    // Prerequisites come before the prescan (RFC 2136 §3.2 then §3.4).
    let m = msg(
        &[("nothere", RType::ANY, Class::ANY, 0, Vec::new())],
        &[del_set("x.other.", RType::A)],
    );
    assert_eq!(rcode(&z, &m), Rcode::NXDOMAIN);
}
