//! DNSSEC answers from pre-signed zones (RFC 4035 §3.1, RFC 5155 §7.2): the same zone signed
//! with NSEC, NSEC3 and NSEC3 opt-out by BIND's dnssec-signzone (tests/data/signed-*.zone).
//! The owners expected here are the ones Knot DNS 3.2 returns for the same files; the
//! end-to-end differential test against knotd lives in the shardns crate.

use super::*;
use crate::scan::ScanOptions;
use shardns_wire::{Message, Name, Record};
use std::path::Path;

fn signed(kind: &str) -> ZoneSet {
    let text = match kind {
        "nsec" => include_str!("../../tests/data/signed-nsec.zone"),
        "nsec3" => include_str!("../../tests/data/signed-nsec3.zone"),
        _ => include_str!("../../tests/data/signed-optout.zone"),
    };
    let opts = ScanOptions::new("example.".parse::<Name>().unwrap());
    let (z, _) = crate::load_zone_text(text.as_bytes(), Path::new("signed.zone"), &opts)
        .unwrap_or_else(|e| panic!("load: {e}"));
    assert!(z.is_signed());
    ZoneSet::new(vec![z])
}

fn ask(zones: &ZoneSet, qname: &str, qtype: RType, dnssec_ok: bool, size: u16) -> Message {
    let edns = Some(shardns_testkit::Edns {
        udp_size: size,
        version: 0,
        dnssec_ok,
    });
    let query = shardns_testkit::query(7, qname, qtype, edns);
    let mut out = vec![0u8; 65535];
    let o = respond_to_message(zones, &query, Transport::Udp, &mut out).expect("a response");
    Message::parse(&out[..o.len]).expect("our response parses")
}

fn do1(zones: &ZoneSet, qname: &str, qtype: RType) -> Message {
    ask(zones, qname, qtype, true, 1232)
}

/// `owner type` of each record (RRSIGs as `owner RRSIG covered`), sorted, lower-cased.
fn shape(records: &[Record]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .filter(|r| r.rtype != RType::OPT)
        .map(|r| {
            let t = if r.rtype == RType::RRSIG {
                format!(
                    "RRSIG {}",
                    RType(u16::from_be_bytes([r.rdata[0], r.rdata[1]]))
                )
            } else {
                r.rtype.to_string()
            };
            format!("{} {t}", r.owner).to_ascii_lowercase()
        })
        .collect();
    v.sort();
    v
}

fn sorted(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_ascii_lowercase()).collect();
    v.sort();
    v
}

#[test]
fn signatures_come_with_do_and_only_with_do() {
    for kind in ["nsec", "nsec3", "optout"] {
        let z = signed(kind);
        let m = do1(&z, "www.example.", RType::A);
        assert_eq!(
            shape(&m.answers),
            sorted(&["www.example. A", "www.example. RRSIG A"])
        );
        let m = ask(&z, "www.example.", RType::A, false, 1232);
        assert_eq!(shape(&m.answers), sorted(&["www.example. A"]));
        let m = ask(&z, "nx.example.", RType::A, false, 1232);
        assert_eq!(shape(&m.authority), sorted(&["example. SOA"]), "{kind}");
        // Additional addresses carry their signatures too.
        let m = do1(&z, "example.", RType::MX);
        assert_eq!(
            shape(&m.additional),
            sorted(&[
                "mail.example. A",
                "mail.example. AAAA",
                "mail.example. RRSIG A",
                "mail.example. RRSIG AAAA"
            ])
        );
    }
}

#[test]
fn nsec_denials() {
    let z = signed("nsec");
    // Name error: the NSEC covering the name and the one covering *.example.
    let m = do1(&z, "nx.example.", RType::A);
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
    assert_eq!(
        shape(&m.authority),
        sorted(&[
            "example. SOA",
            "example. RRSIG SOA",
            "ns2.example. NSEC",
            "ns2.example. RRSIG NSEC",
            "example. NSEC",
            "example. RRSIG NSEC",
        ])
    );
    // The SOA's signature has the negative TTL, like the SOA (RFC 2308 §3).
    assert!(m.authority.iter().all(|r| r.ttl == 300));
    // No data: the name's own NSEC.
    let m = do1(&z, "www.example.", RType::MX);
    assert_eq!(m.rcode(), Rcode::NOERROR);
    assert!(shape(&m.authority).contains(&"www.example. nsec".to_string()));
    // An empty non-terminal: the NSEC that covers it.
    let m = do1(&z, "c.ent.example.", RType::A);
    // (canonical order: dn.example. < ent.example. < ... < a.b.c.ent.example.)
    assert!(shape(&m.authority).contains(&"dn.example. nsec".to_string()));
    // A wildcard answer: the expansion signed (labels 2), and the qname's cover.
    let m = do1(&z, "x.wild.example.", RType::A);
    assert_eq!(
        shape(&m.answers),
        sorted(&["x.wild.example. A", "x.wild.example. RRSIG A"])
    );
    // (x.wild.example. sorts after *.wild.example., whose NSEC covers it.)
    assert_eq!(
        shape(&m.authority),
        sorted(&["*.wild.example. NSEC", "*.wild.example. RRSIG NSEC"])
    );
    // A wildcard without the type: the qname's cover and the wildcard's own NSEC, here
    // one record, written once.
    let m = do1(&z, "x.wild.example.", RType::MX);
    assert_eq!(
        shape(&m.authority),
        sorted(&[
            "example. SOA",
            "example. RRSIG SOA",
            "*.wild.example. NSEC",
            "*.wild.example. RRSIG NSEC"
        ])
    );
    // Referrals: DS for the signed child, the cut's NSEC for the unsigned one.
    let m = do1(&z, "www.secure.example.", RType::A);
    assert_eq!(
        shape(&m.authority),
        sorted(&[
            "secure.example. NS",
            "secure.example. DS",
            "secure.example. RRSIG DS"
        ])
    );
    let m = do1(&z, "www.sub.example.", RType::A);
    assert_eq!(
        shape(&m.authority),
        sorted(&[
            "sub.example. NS",
            "sub.example. NSEC",
            "sub.example. RRSIG NSEC"
        ])
    );
    assert_eq!(shape(&m.additional), sorted(&["ns.sub.example. A"]));
}

#[test]
fn nsec3_denials() {
    let z = signed("nsec3");
    // Name error: closest encloser (the apex), next closer's cover, wildcard's cover.
    let m = do1(&z, "nx.example.", RType::A);
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
    let owners: Vec<String> = shape(&m.authority)
        .into_iter()
        .filter(|s| s.ends_with(" nsec3") && !s.contains(" rrsig "))
        .collect();
    assert_eq!(
        owners,
        sorted(&[
            "3msev9usmd4br9s97v51r2tdvmr9iqo1.example. NSEC3",
            "8agm2crj5dm2hpi9emkk214ccj3738k9.example. NSEC3",
            "dsq717d99rrrn3n4o1o20ntk5ldjknt3.example. NSEC3",
        ])
    );
    assert_eq!(m.authority.len(), 2 + 3 * 2);
    // NSEC3 owner names are not names of the zone (RFC 5155 §7.2.8).
    let m = do1(
        &z,
        "3msev9usmd4br9s97v51r2tdvmr9iqo1.example.",
        RType::NSEC3,
    );
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
}

#[test]
fn nsec3_opt_out_proves_an_unsigned_delegation_by_its_closest_provable_encloser() {
    let z = signed("optout");
    for qtype in [RType::DS, RType::A] {
        let qname = if qtype == RType::DS {
            "sub.example."
        } else {
            "www.sub.example."
        };
        let m = do1(&z, qname, qtype);
        let owners: Vec<String> = shape(&m.authority)
            .into_iter()
            .filter(|s| s.ends_with(" nsec3") && !s.contains(" rrsig "))
            .collect();
        assert_eq!(
            owners,
            sorted(&[
                "044rrqcqpug5lgjem8m68pqunoaff06b.example. NSEC3",
                "3msev9usmd4br9s97v51r2tdvmr9iqo1.example. NSEC3",
            ]),
            "{qname} {qtype}"
        );
    }
}

#[test]
fn a_signature_that_does_not_fit_truncates() {
    // An NSEC3 name error with signatures is 726 octets (Knot's too).
    let z = signed("nsec3");
    let m = ask(&z, "nx.example.", RType::A, true, 512);
    assert!(m.header.tc());
    // Our policy (docs/ANSWERS.md): a truncated response keeps only the question and OPT.
    assert!(m.answers.is_empty() && m.authority.is_empty());
    assert!(!ask(&z, "nx.example.", RType::A, true, 1232).header.tc());
    assert!(!ask(&z, "nx.example.", RType::A, false, 512).header.tc());
    let m = ask(&z, "example.", RType::DNSKEY, true, 512);
    assert!(
        !m.header.tc(),
        "two P-256 keys and their signatures fit in 512"
    );
}

#[test]
fn a_query_for_rrsig_gets_the_signatures_of_the_first_rrset_as_knot_does() {
    let z = signed("nsec");
    for dnssec_ok in [false, true] {
        let m = ask(&z, "www.example.", RType::RRSIG, dnssec_ok, 1232);
        assert_eq!(shape(&m.answers), sorted(&["www.example. RRSIG A"]));
    }
}

#[test]
fn the_wildcard_covers_found_at_build_are_the_ones_hashing_finds() {
    for kind in ["nsec3", "optout"] {
        let z = signed(kind);
        let zone = z.zones().next().unwrap();
        let chain = zone.denial.as_ref().unwrap().nsec3.as_ref().unwrap();
        let mut checked = 0;
        for id in 0..zone.node_count() as u32 {
            let node = zone.node(id);
            let Some(cover) = chain.wildcard_covering(id) else {
                continue;
            };
            let mut star = NameBuf::new();
            star.set_concat(&[1, b'*'], node.name()).unwrap();
            assert_eq!(
                Some(cover),
                chain.covering(star.as_ref()),
                "{}",
                node.name()
            );
            checked += 1;
        }
        assert!(checked > 10, "{kind}: {checked}");
    }
}
