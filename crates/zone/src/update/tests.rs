//! Tests: every prerequisite form, every prescan refusal, each rule of the apply step, and
//! a zone after an update against the same records built in full.

use super::*;
use crate::scan::{scan_text, ScanOptions};
use shardns_wire::message::Header;
use std::path::Path;

pub(super) const APEX: &str = "example.test.";
pub(super) const ZONE: &str = "$TTL 300\n@ SOA ns hostmaster 10 3600 600 86400 60\n@ NS ns\n@ NS ns2\n\
ns A 192.0.2.1\nns2 A 192.0.2.2\nwww A 192.0.2.10\nwww A 192.0.2.11\nwww TXT \"hello\"\n\
alias CNAME www\nmx MX 10 Mail.Example.TEST.\na.b.c A 192.0.2.3\nsub NS ns.sub\nns.sub A 192.0.2.4\n";

pub(super) fn name(s: &str) -> Name {
    Name::from_text(s, Some(APEX.parse::<Name>().unwrap().as_ref())).unwrap()
}

pub(super) fn zone_of(text: &str) -> Zone {
    let origin: Name = APEX.parse().unwrap();
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("db.test"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    Zone::build(origin, scanned).unwrap().0
}

pub(super) fn zone() -> Zone {
    zone_of(ZONE)
}

/// The wire rdata of `text` for `rtype` (names relative to the apex).
pub(super) fn rd(rtype: RType, text: &str) -> Vec<u8> {
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
pub(super) type T = (&'static str, RType, Class, u32, Vec<u8>);

pub(super) fn add(owner: &'static str, rtype: RType, ttl: u32, text: &str) -> T {
    (owner, rtype, Class::IN, ttl, rd(rtype, text))
}
pub(super) fn del_set(owner: &'static str, rtype: RType) -> T {
    (owner, rtype, Class::ANY, 0, Vec::new())
}
pub(super) fn del_rr(owner: &'static str, rtype: RType, text: &str) -> T {
    (owner, rtype, Class::NONE, 0, rd(rtype, text))
}

/// An UPDATE message for `zone`: prerequisites, updates, additional records.
pub(super) fn msg_for(zone: &str, pre: &[T], upd: &[T], extra: &[T]) -> Vec<u8> {
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

pub(super) fn msg(pre: &[T], upd: &[T]) -> Vec<u8> {
    msg_for(APEX, pre, upd, &[])
}

fn run(z: &Zone, m: &[u8]) -> Result<Outcome, Refusal> {
    update(m, z, SerialPolicy::Increment, 0)
}

fn rcode(z: &Zone, m: &[u8]) -> Rcode {
    match run(z, m) {
        Ok(_) => Rcode::NOERROR,
        Err(r) => r.rcode,
    }
}

/// Every record of a zone, sorted, names lower-cased and rdata canonical.
pub(super) fn records(z: &Zone) -> Vec<(String, RType, u32, Vec<u8>)> {
    let mut v: Vec<_> = z
        .records()
        .map(|r| {
            (
                r.owner.to_string().to_ascii_lowercase(),
                r.rtype,
                r.ttl,
                canonical(r.rtype, &r.rdata),
            )
        })
        .collect();
    v.sort();
    v
}

/// Applies an accepted update; checks the patched zone against a full build of the
/// resulting records; returns the new zone.
fn applied(z: &Zone, m: &[u8]) -> Zone {
    let Outcome::Change(c) = run(z, m).expect("accepted") else {
        panic!("no change")
    };
    let (patched, _) = c.apply(z).expect("applies");
    let scanned = Scanned {
        chunks: vec![c.records(z)],
        files: vec![PathBuf::from("full")],
        warnings: Vec::new(),
        text: Vec::new(),
    };
    let (full, _) = Zone::build(z.apex().to_name(), scanned).expect("builds");
    assert_eq!(records(&patched), records(&full));
    assert_eq!(patched.serial(), c.serial());
    patched
}

pub(super) fn has(z: &Zone, owner: &str, rtype: RType, text: &str) -> bool {
    let want = canonical(rtype, &rd(rtype, text));
    z.find(name(owner).as_ref()).is_some_and(|n| {
        n.rrsets()
            .filter(|s| s.rtype == rtype)
            .any(|s| s.rdatas().any(|d| canonical(rtype, d) == want))
    })
}

fn ttl(z: &Zone, owner: &str, rtype: RType) -> Option<u32> {
    z.find(name(owner).as_ref())?.rrset(rtype).map(|s| s.ttl)
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
    assert_eq!(run(&z, &msg(&[], &[])), Ok(Outcome::Unchanged));
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

#[test]
fn a_failed_last_prerequisite_changes_nothing() {
    let z = zone();
    let m = msg(
        &[
            ("www", RType::A, Class::ANY, 0, Vec::new()),
            ("www", RType::ANY, Class::NONE, 0, Vec::new()),
        ],
        &[add("new", RType::A, 5, "192.0.2.1")],
    );
    assert_eq!(rcode(&z, &m), Rcode::YXDOMAIN);
    assert_eq!(z.serial(), 10);
    assert!(!has(&z, "new", RType::A, "192.0.2.1"));
}

#[test]
fn adds_duplicates_and_ttls() {
    let z = zone();
    let n = applied(
        &z,
        &msg(
            &[],
            &[
                add("new", RType::A, 60, "192.0.2.50"),
                add("www", RType::A, 300, "192.0.2.12"),
            ],
        ),
    );
    assert!(has(&n, "new", RType::A, "192.0.2.50"));
    assert!(has(&n, "www", RType::A, "192.0.2.12"));
    assert_eq!(n.serial(), 11);
    // A duplicate (names compared without regard to case) is ignored.
    let m = msg(&[], &[add("mx", RType::MX, 300, "10 mail.example.test.")]);
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    let m = msg(&[], &[add("www", RType::A, 300, "192.0.2.10")]);
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    // The new record's TTL becomes the RRset's.
    let n = applied(&z, &msg(&[], &[add("www", RType::A, 30, "192.0.2.12")]));
    assert_eq!(ttl(&n, "www", RType::A), Some(30));
    assert_eq!(
        n.find(name("www").as_ref())
            .unwrap()
            .rrset(RType::A)
            .unwrap()
            .len(),
        3
    );
    // A duplicate with another TTL is ignored too (Knot).
    let m = msg(&[], &[add("www", RType::A, 40, "192.0.2.10")]);
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    // A TTL with the top bit set is 0 (RFC 2181 §8).
    let n = applied(
        &z,
        &msg(&[], &[add("big", RType::A, 0x8000_0000, "192.0.2.1")]),
    );
    assert_eq!(ttl(&n, "big", RType::A), Some(0));
}

#[test]
fn delete_forms() {
    let z = zone();
    let n = applied(&z, &msg(&[], &[del_set("www", RType::A)]));
    assert!(ttl(&n, "www", RType::A).is_none());
    assert!(has(&n, "www", RType::TXT, "\"hello\""));
    let n = applied(&z, &msg(&[], &[del_set("www", RType::ANY)]));
    assert!(n.find(name("www").as_ref()).is_none());
    let n = applied(&z, &msg(&[], &[del_rr("www", RType::A, "192.0.2.10")]));
    assert!(!has(&n, "www", RType::A, "192.0.2.10"));
    assert!(has(&n, "www", RType::A, "192.0.2.11"));
    let n = applied(
        &z,
        &msg(&[], &[del_rr("mx", RType::MX, "10 MAIL.example.test.")]),
    );
    assert!(
        n.find(name("mx").as_ref()).is_none(),
        "case-insensitive rdata"
    );
    // Deleting what is not there changes nothing.
    let m = msg(
        &[],
        &[
            del_rr("www", RType::A, "192.0.2.99"),
            del_set("nothere", RType::A),
        ],
    );
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    // Delete then add in one message: in order.
    let n = applied(
        &z,
        &msg(
            &[],
            &[
                del_set("www", RType::A),
                add("www", RType::A, 5, "192.0.2.99"),
            ],
        ),
    );
    assert!(has(&n, "www", RType::A, "192.0.2.99"));
    assert!(!has(&n, "www", RType::A, "192.0.2.10"));
    // A delegation and its glue.
    let n = applied(&z, &msg(&[], &[del_set("sub", RType::NS)]));
    assert!(ttl(&n, "sub", RType::NS).is_none());
    let n = applied(&z, &msg(&[], &[add("new.sub2", RType::NS, 5, "ns")]));
    assert!(has(&n, "new.sub2", RType::NS, "ns"));
}

#[test]
fn apex_soa_and_ns_rules() {
    let z = zone();
    let m = msg(&[], &[del_set(APEX, RType::SOA), del_set(APEX, RType::NS)]);
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    let m = msg(
        &[],
        &[del_rr(
            APEX,
            RType::SOA,
            "ns hostmaster 10 3600 600 86400 60",
        )],
    );
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    // All RRsets of the apex: all but SOA and NS.
    let z2 = zone_of(&format!("{ZONE}@ TXT apex\n@ MX 1 mx\n"));
    let n = applied(&z2, &msg(&[], &[del_set(APEX, RType::ANY)]));
    assert!(ttl(&n, APEX, RType::TXT).is_none() && ttl(&n, APEX, RType::MX).is_none());
    assert_eq!(n.apex_node().rrset(RType::NS).unwrap().len(), 2);
    // The last apex NS stays, one record at a time.
    let n = applied(
        &z,
        &msg(
            &[],
            &[
                del_rr(APEX, RType::NS, "ns"),
                del_rr(APEX, RType::NS, "NS2"),
            ],
        ),
    );
    assert!(has(&n, APEX, RType::NS, "ns2") && !has(&n, APEX, RType::NS, "ns"));
    // A non-apex NS set may go entirely.
    let n = applied(&z, &msg(&[], &[del_rr("sub", RType::NS, "ns.sub")]));
    assert!(ttl(&n, "sub", RType::NS).is_none());
    // SOA: a lower serial is ignored, a higher one kept as is (no policy on top).
    let m = msg(
        &[],
        &[add(APEX, RType::SOA, 300, "ns hostmaster 9 1 1 1 1")],
    );
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    let n = applied(
        &z,
        &msg(
            &[],
            &[add(APEX, RType::SOA, 300, "ns hostmaster 50 1 1 1 1")],
        ),
    );
    assert_eq!(n.serial(), 50);
    // The same serial with other fields: ignored (Knot).
    let m = msg(
        &[],
        &[add(APEX, RType::SOA, 300, "ns hostmaster 10 7 7 7 7")],
    );
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    // An SOA away from the apex is ignored.
    let m = msg(
        &[],
        &[add("www", RType::SOA, 300, "ns hostmaster 99 1 1 1 1")],
    );
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
}

#[test]
fn cname_and_other_data_never_side_by_side() {
    let z = zone();
    // CNAME to a name with other data: ignored; other data at a CNAME: ignored.
    let m = msg(&[], &[add("www", RType::CNAME, 300, "ns")]);
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    let m = msg(&[], &[add("alias", RType::A, 300, "192.0.2.1")]);
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    // A CNAME replaces a CNAME.
    let n = applied(&z, &msg(&[], &[add("alias", RType::CNAME, 300, "ns")]));
    assert!(has(&n, "alias", RType::CNAME, "ns") && !has(&n, "alias", RType::CNAME, "www"));
    // Other data after the CNAME is deleted, in the same message.
    let n = applied(
        &z,
        &msg(
            &[],
            &[
                del_set("alias", RType::CNAME),
                add("alias", RType::A, 300, "192.0.2.1"),
            ],
        ),
    );
    assert!(has(&n, "alias", RType::A, "192.0.2.1"));
    // A DNAME replaces a DNAME (one at most).
    let z2 = zone_of(&format!("{ZONE}d DNAME one.test.\n"));
    let n = applied(&z2, &msg(&[], &[add("d", RType::DNAME, 300, "two.test.")]));
    assert!(has(&n, "d", RType::DNAME, "two.test.") && !has(&n, "d", RType::DNAME, "one.test."));
    // A DNAME at a name with names below that hold records: ignored (Knot); once they
    // are deleted in the same message, added.
    let m = msg(&[], &[add("b.c", RType::DNAME, 300, "elsewhere.test.")]);
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    let n = applied(
        &z,
        &msg(
            &[],
            &[
                del_set("a.b.c", RType::ANY),
                add("b.c", RType::DNAME, 300, "elsewhere.test."),
            ],
        ),
    );
    assert!(has(&n, "b.c", RType::DNAME, "elsewhere.test."));
    // Data below a DNAME (of the zone, or added before in the message): ignored.
    let m = msg(&[], &[add("x.d", RType::A, 300, "192.0.2.1")]);
    assert_eq!(run(&z2, &m), Ok(Outcome::Unchanged));
    let m = msg(
        &[],
        &[
            add("e", RType::DNAME, 300, "one.test."),
            add("x.y.e", RType::CNAME, 300, "www"),
        ],
    );
    let n = applied(&z, &m);
    assert!(n.find(name("x.y.e").as_ref()).is_none());
    // A new name: the first wins.
    let n = applied(
        &z,
        &msg(
            &[],
            &[
                add("c", RType::CNAME, 300, "www"),
                add("c", RType::TXT, 300, "x"),
            ],
        ),
    );
    assert!(has(&n, "c", RType::CNAME, "www") && ttl(&n, "c", RType::TXT).is_none());
}

#[test]
fn serial_policies() {
    assert_eq!(SerialPolicy::Increment.next(10, 0), 11);
    assert_eq!(
        SerialPolicy::Increment.next(u32::MAX, 0),
        0,
        "RFC 1982 wrap"
    );
    assert_eq!(
        SerialPolicy::UnixTime.next(10, 1_700_000_000),
        1_700_000_000
    );
    assert_eq!(
        SerialPolicy::UnixTime.next(1_800_000_000, 1_700_000_000),
        1_800_000_001
    );
    // 2026-11-27 21:00 UTC.
    let now = 1_795_813_200;
    assert_eq!(SerialPolicy::DateSerial.next(10, now), 2_026_112_700);
    assert_eq!(
        SerialPolicy::DateSerial.next(2_026_112_700, now),
        2_026_112_701
    );
    assert_eq!(
        SerialPolicy::DateSerial.next(2_026_112_805, now),
        2_026_112_806
    );
    assert_eq!(date_serial_of(0), 1_970_010_100);
    assert_eq!(date_serial_of(951_782_400), 2_000_022_900, "a leap day");
    // Through a whole update: the wrap, and an SOA lower by RFC 1982 once wrapped.
    let z = zone_of(&ZONE.replace(" 10 3600", " 4294967295 3600"));
    let n = applied(&z, &msg(&[], &[add("new", RType::A, 5, "192.0.2.1")]));
    assert_eq!(n.serial(), 0);
    let m = msg(
        &[],
        &[add(
            APEX,
            RType::SOA,
            300,
            "ns hostmaster 4294967200 1 1 1 1",
        )],
    );
    assert_eq!(run(&z, &m), Ok(Outcome::Unchanged));
    let n = applied(
        &z,
        &msg(
            &[],
            &[add(APEX, RType::SOA, 300, "ns hostmaster 5 1 1 1 1")],
        ),
    );
    assert_eq!(n.serial(), 5, "5 is after 4294967295");
    let m = msg(&[], &[add("new", RType::A, 5, "192.0.2.1")]);
    let Ok(Outcome::Change(c)) = update(&m, &z, SerialPolicy::UnixTime, 1_700_000_000) else {
        panic!()
    };
    assert_eq!(c.serial(), 1_700_000_000);
}

fn date_serial_of(now: u64) -> u32 {
    SerialPolicy::DateSerial.next(0, now)
}

/// A response's flags and each section's records as sorted text (order within a section
/// and compression are free).
fn summary(response: &[u8]) -> (u16, [Vec<String>; 3]) {
    let m = shardns_wire::Message::parse(response).expect("a response parses");
    let sorted = |rs: &[shardns_wire::Record]| {
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

/// `a` and `b` answer every name of either (and of `old`), its parent and a name below it,
/// for each of a set of types, alike.
fn answer_alike(old: &Zone, a: Zone, b: Zone) {
    let mut names = std::collections::BTreeSet::new();
    for z in [old, &a, &b] {
        for r in z.records() {
            let owner = r.owner.to_string().to_ascii_lowercase();
            names.insert(format!("zz0.{owner}"));
            if let Some(p) = r.owner.as_ref().parent().filter(|p| p.ends_with(&z.apex())) {
                names.insert(p.to_string().to_ascii_lowercase());
            }
            names.insert(owner);
        }
    }
    let (a, b) = (crate::ZoneSet::new(vec![a]), crate::ZoneSet::new(vec![b]));
    let (mut out_a, mut out_b) = (vec![0u8; 65535], vec![0u8; 65535]);
    for n in &names {
        let qname: Name = n.parse().unwrap();
        for qtype in [
            RType::A,
            RType::NS,
            RType::SOA,
            RType::CNAME,
            RType::MX,
            RType::TXT,
            RType::AAAA,
            RType::DNAME,
            RType::ANY,
        ] {
            let h = Header {
                id: 1,
                qdcount: 1,
                ..Header::default()
            };
            let mut q = h.to_bytes().to_vec();
            q.extend_from_slice(qname.as_wire());
            q.extend_from_slice(&qtype.0.to_be_bytes());
            q.extend_from_slice(&[0, 1]);
            let got = crate::respond_to_message(&a, &q, crate::Transport::Tcp, &mut out_a);
            let want = crate::respond_to_message(&b, &q, crate::Transport::Tcp, &mut out_b);
            match (got, want) {
                (Some(g), Some(w)) => assert_eq!(
                    summary(&out_a[..g.len]),
                    summary(&out_b[..w.len]),
                    "{n} {qtype}: the patched zone answers otherwise than the full build"
                ),
                (g, w) => assert_eq!(g.is_some(), w.is_some(), "{n} {qtype}"),
            }
        }
    }
}

/// An accepted update: the version `Change::apply` makes (the patch, or a full build) and a
/// full build of its records answer alike; the new version.
fn applied_and_answered(z: &Zone, m: &[u8]) -> Option<Zone> {
    let Outcome::Change(c) = run(z, m).ok()? else {
        return None;
    };
    let (patched, _) = c.apply(z).expect("an accepted update applies");
    let scanned = Scanned {
        chunks: vec![c.records(z)],
        files: vec![PathBuf::from("full")],
        warnings: Vec::new(),
        text: Vec::new(),
    };
    let (full, _) = Zone::build(z.apex().to_name(), scanned).expect("builds");
    let (again, _) = c.apply(z).expect("applies again");
    assert_eq!(records(&patched), records(&full));
    answer_alike(z, patched, full);
    Some(again)
}

#[test]
fn patched_equals_built_for_many_updates() {
    let z = zone();
    let cases: Vec<Vec<T>> = vec![
        vec![add("a.b.c", RType::TXT, 7, "t")],
        vec![del_set("a.b.c", RType::ANY)],
        vec![
            del_set("ns.sub", RType::A),
            add("deep.new.name", RType::AAAA, 9, "2001:db8::1"),
        ],
        vec![
            add("sub", RType::NS, 300, "ns2"),
            del_rr("sub", RType::NS, "ns.sub"),
        ],
        vec![
            add("*.w", RType::A, 3, "192.0.2.77"),
            add("w", RType::TXT, 3, "x"),
        ],
        vec![add("DNAME", RType::DNAME, 3, "elsewhere.test.")],
        vec![
            add("www", RType::A, 1, "192.0.2.10"),
            del_rr("www", RType::TXT, "hello"),
        ],
        vec![
            add(APEX, RType::NS, 300, "ns3"),
            del_rr(APEX, RType::NS, "ns"),
        ],
        // A cut made at a name with names below it: the patch cannot, a full build does.
        vec![add("c", RType::NS, 300, "ns")],
        vec![
            del_set("a.b.c", RType::ANY),
            add("b.c", RType::DNAME, 300, "elsewhere.test."),
        ],
    ];
    for upd in cases {
        let n = applied_and_answered(&z, &msg(&[], &upd)).expect("a change");
        assert_eq!(n.serial(), 11);
        // And a second update on the patched version.
        applied_and_answered(&n, &msg(&[], &[add("again", RType::A, 5, "192.0.2.5")]))
            .expect("a change");
    }
}

/// Random messages of a few records each, drawn from a small set of names, types and
/// forms (a fixed xorshift seed): every accepted one, applied to the version before,
/// answers as the full build of its records does.
#[test]
fn any_accepted_update_answers_as_a_full_build() {
    let names = [
        APEX, "www", "alias", "mx", "a.b.c", "b.c", "c", "sub", "ns.sub", "new", "x.new", "*.w",
    ];
    let types = [
        RType::A,
        RType::NS,
        RType::CNAME,
        RType::MX,
        RType::TXT,
        RType::DNAME,
    ];
    let text = |t: RType, i: u64| match t {
        RType::A => format!("192.0.2.{}", i % 4),
        RType::NS | RType::CNAME => ["ns", "www", "ns.sub", "new"][i as usize % 4].to_string(),
        RType::MX => format!("{} mx", i % 3),
        RType::TXT => format!("t{}", i % 3),
        _ => ["one.test.", "two.test."][i as usize % 2].to_string(),
    };
    let mut state = 0x2136_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut z = zone();
    let mut accepted = 0;
    for _ in 0..300 {
        let mut upd = Vec::new();
        for _ in 0..1 + next() % 4 {
            let owner = names[next() as usize % names.len()];
            let t = types[next() as usize % types.len()];
            upd.push(match next() % 5 {
                0 => del_set(owner, t),
                1 => del_set(owner, RType::ANY),
                2 => del_rr(owner, t, &text(t, next())),
                _ => add(owner, t, 60 + (next() % 3) as u32, &text(t, next())),
            });
        }
        if let Some(n) = applied_and_answered(&z, &msg(&[], &upd)) {
            z = n;
            accepted += 1;
        }
    }
    assert!(accepted > 100, "{accepted} of 300 accepted with a change");
}
