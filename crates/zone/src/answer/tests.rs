//! Answers checked against the RFCs' own examples: RFC 1034 §6.2, RFC 4592 §2.2.1,
//! plus CNAME chains, DNAME (RFC 6672), negative answers (RFC 2308), EDNS and truncation.

use super::*;
use crate::scan::ScanOptions;
use shardns_wire::{Message, Name};
use std::path::Path;

fn zone(origin: &str, text: &str) -> ZoneSet {
    let opts = ScanOptions::new(origin.parse::<Name>().unwrap());
    let (z, _) = crate::load_zone_text(text.as_bytes(), Path::new("test.zone"), &opts)
        .unwrap_or_else(|e| panic!("load: {e}"));
    ZoneSet::new(vec![z])
}

fn rfc1034() -> ZoneSet {
    zone(".", include_str!("../../tests/data/rfc1034-root.zone"))
}

fn rfc4592() -> ZoneSet {
    zone("example.", include_str!("../../tests/data/rfc4592.zone"))
}

struct Query {
    edns: Option<(u16, u8, bool)>,
    transport: Transport,
}

const PLAIN: Query = Query {
    edns: None,
    transport: Transport::Udp,
};

fn query_bytes(qname: &str, qtype: RType, q: &Query) -> Vec<u8> {
    let edns = q
        .edns
        .map(|(udp_size, version, dnssec_ok)| shardns_testkit::Edns {
            udp_size,
            version,
            dnssec_ok,
        });
    shardns_testkit::query(0x1234, qname, qtype, edns)
}

fn ask_with(zones: &ZoneSet, qname: &str, qtype: RType, q: &Query) -> Message {
    let query = query_bytes(qname, qtype, q);
    let mut out = vec![0u8; 65535];
    let o = respond_to_message(zones, &query, q.transport, &mut out).expect("a response");
    let m = Message::parse(&out[..o.len]).expect("our response parses");
    // Where the answer code says its OPT record is: where reading the response finds it.
    let read = shardns_wire::edns::opt_at_end(&out[..o.len]);
    assert_eq!(o.opt, read.map_or(OptAt::Absent, |at| OptAt::At(at as u16)));
    assert_eq!(m.opt().is_some(), read.is_some());
    assert_eq!(m.header.id, 0x1234);
    assert!(m.header.qr() && m.header.rd());
    assert_eq!(m.rcode(), o.rcode);
    assert_eq!(m.header.tc(), o.truncated);
    m
}

fn ask(zones: &ZoneSet, qname: &str, qtype: RType) -> Message {
    ask_with(zones, qname, qtype, &PLAIN)
}

/// A section as a sorted list of lower-cased presentation lines.
fn lines(records: &[shardns_wire::Record]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .filter(|r| r.rtype != RType::OPT)
        .map(|r| r.to_string().to_ascii_lowercase())
        .collect();
    v.sort();
    v
}

fn set(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_ascii_lowercase()).collect();
    v.sort();
    v
}

const ROOT_SOA: &str =
    ". 86400 IN SOA SRI-NIC.ARPA. HOSTMASTER.SRI-NIC.ARPA. 870611 1800 300 604800 86400";

#[test]
fn rfc1034_6_2_1_a() {
    let m = ask(&rfc1034(), "SRI-NIC.ARPA.", RType::A);
    assert!(m.header.aa());
    assert_eq!(m.rcode(), Rcode::NOERROR);
    assert_eq!(
        lines(&m.answers),
        set(&[
            "SRI-NIC.ARPA. 86400 IN A 26.0.0.73",
            "SRI-NIC.ARPA. 86400 IN A 10.0.0.51"
        ])
    );
    assert!(m.authority.is_empty() && m.additional.is_empty());
}

#[test]
fn rfc1034_6_2_2_any_over_tcp_and_udp() {
    let tcp = Query {
        edns: None,
        transport: Transport::Tcp,
    };
    let m = ask_with(&rfc1034(), "SRI-NIC.ARPA.", RType::ANY, &tcp);
    assert_eq!(
        lines(&m.answers),
        set(&[
            "SRI-NIC.ARPA. 86400 IN A 26.0.0.73",
            "SRI-NIC.ARPA. 86400 IN A 10.0.0.51",
            "SRI-NIC.ARPA. 86400 IN MX 0 SRI-NIC.ARPA.",
            "SRI-NIC.ARPA. 86400 IN HINFO \"DEC-2060\" \"TOPS20\"",
        ])
    );
    // RFC 8482 §4.1: over UDP one RRset is enough.
    let m = ask(&rfc1034(), "SRI-NIC.ARPA.", RType::ANY);
    assert!(m.header.aa());
    let types: std::collections::BTreeSet<_> = m.answers.iter().map(|r| r.rtype).collect();
    assert_eq!(types.len(), 1);
}

#[test]
fn rfc1034_6_2_3_mx_with_additional() {
    let m = ask(&rfc1034(), "SRI-NIC.ARPA.", RType::MX);
    assert_eq!(
        lines(&m.answers),
        set(&["SRI-NIC.ARPA. 86400 IN MX 0 SRI-NIC.ARPA."])
    );
    assert_eq!(
        lines(&m.additional),
        set(&[
            "SRI-NIC.ARPA. 86400 IN A 26.0.0.73",
            "SRI-NIC.ARPA. 86400 IN A 10.0.0.51"
        ])
    );
}

#[test]
fn rfc1034_6_2_4_nodata_has_soa() {
    // RFC 1034 shows an empty response; RFC 2308 §2.2 adds the SOA for negative caching.
    let m = ask(&rfc1034(), "SRI-NIC.ARPA.", RType::NS);
    assert!(m.header.aa());
    assert_eq!(m.rcode(), Rcode::NOERROR);
    assert!(m.answers.is_empty());
    assert_eq!(lines(&m.authority), set(&[ROOT_SOA]));
}

#[test]
fn rfc1034_6_2_5_nxdomain() {
    let m = ask(&rfc1034(), "SIR-NIC.ARPA.", RType::A);
    assert!(m.header.aa());
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
    assert!(m.answers.is_empty());
    assert_eq!(lines(&m.authority), set(&[ROOT_SOA]));
}

#[test]
fn rfc1034_6_2_6_referral() {
    let m = ask(&rfc1034(), "BRL.MIL.", RType::A);
    assert!(!m.header.aa());
    assert_eq!(m.rcode(), Rcode::NOERROR);
    assert!(m.answers.is_empty());
    assert_eq!(
        lines(&m.authority),
        set(&[
            "MIL. 86400 IN NS SRI-NIC.ARPA.",
            "MIL. 86400 IN NS A.ISI.EDU."
        ])
    );
    assert_eq!(
        lines(&m.additional),
        set(&[
            "A.ISI.EDU. 86400 IN A 26.3.0.103",
            "SRI-NIC.ARPA. 86400 IN A 26.0.0.73",
            "SRI-NIC.ARPA. 86400 IN A 10.0.0.51",
        ])
    );
}

#[test]
fn rfc1034_6_2_7_cname_into_a_delegation() {
    // RFC 1034 answers with C.ISI.EDU's A from the root zone; that record is glue below
    // the EDU cut, not authoritative data (RFC 2181 §5.4.1), so like BIND and Knot we give
    // the CNAME and refer the rest to EDU.
    let m = ask(&rfc1034(), "USC-ISIC.ARPA.", RType::A);
    assert!(m.header.aa());
    assert_eq!(
        lines(&m.answers),
        set(&["USC-ISIC.ARPA. 86400 IN CNAME C.ISI.EDU."])
    );
    assert_eq!(
        lines(&m.authority),
        set(&[
            "EDU. 86400 IN NS SRI-NIC.ARPA.",
            "EDU. 86400 IN NS C.ISI.EDU."
        ])
    );
}

#[test]
fn rfc1034_6_2_8_cname_query() {
    let m = ask(&rfc1034(), "USC-ISIC.ARPA.", RType::CNAME);
    assert_eq!(
        lines(&m.answers),
        set(&["USC-ISIC.ARPA. 86400 IN CNAME C.ISI.EDU."])
    );
    assert!(m.authority.is_empty());
}

#[test]
fn rfc4592_synthesized() {
    let z = rfc4592();
    let m = ask(&z, "host3.example.", RType::MX);
    assert!(m.header.aa());
    assert_eq!(
        lines(&m.answers),
        set(&["host3.example. 3600 IN MX 10 host1.example."])
    );
    assert_eq!(
        lines(&m.additional),
        set(&["host1.example. 3600 IN A 192.0.2.1"])
    );
    // The wildcard matches but has no A: NODATA.
    let m = ask(&z, "host3.example.", RType::A);
    assert_eq!(m.rcode(), Rcode::NOERROR);
    assert!(m.answers.is_empty());
    assert_eq!(m.authority.len(), 1);
    assert_eq!(m.authority[0].rtype, RType::SOA);
    // Two labels below the closest encloser still match.
    let m = ask(&z, "foo.bar.example.", RType::TXT);
    assert_eq!(
        lines(&m.answers),
        set(&["foo.bar.example. 3600 IN TXT \"this is a wildcard\""])
    );
}

#[test]
fn rfc4592_not_synthesized() {
    let z = rfc4592();
    // host1.example exists: NODATA, not the wildcard's MX.
    let m = ask(&z, "host1.example.", RType::MX);
    assert_eq!((m.rcode(), m.answers.len()), (Rcode::NOERROR, 0));
    // sub.*.example exists.
    let m = ask(&z, "sub.*.example.", RType::MX);
    assert_eq!((m.rcode(), m.answers.len()), (Rcode::NOERROR, 0));
    // The closest encloser is the empty non-terminal _tcp.host1.example, which has no wildcard.
    let m = ask(&z, "_telnet._tcp.host1.example.", RType::SRV);
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
    assert_eq!(m.authority[0].rtype, RType::SOA);
    // Below a delegation: a referral.
    let m = ask(&z, "host.subdel.example.", RType::A);
    assert!(!m.header.aa());
    assert_eq!(
        lines(&m.authority),
        set(&[
            "subdel.example. 3600 IN NS ns.example.com.",
            "subdel.example. 3600 IN NS ns.example.net."
        ])
    );
    // The closest encloser is *.example itself; *.*.example does not exist.
    let m = ask(&z, "ghost.*.example.", RType::MX);
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
    // host2.example is an empty non-terminal: it exists, so NODATA, and it blocks the wildcard.
    let m = ask(&z, "host2.example.", RType::TXT);
    assert_eq!((m.rcode(), m.answers.len()), (Rcode::NOERROR, 0));
    assert!(m.header.aa());
}

const CHAINS: &str = "\
$TTL 300
@        SOA  ns hostmaster 2024010101 3600 600 86400 60
@        NS   ns
ns       A    192.0.2.53
a        CNAME b
b        CNAME c
c        A    192.0.2.3
loop1    CNAME loop2
loop2    CNAME loop1
dangling CNAME nothere
out      CNAME www.example.net.
*.wild   CNAME c
d        DNAME target.example.org.
dd       DNAME sub.example.test.
l        DNAME aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.org.
sub      A    192.0.2.99
x.sub    A    192.0.2.98
mail     MX   10 ns
mail     MX   20 mx.example.net.
srv      SRV  0 0 53 ns
deleg    NS   ns.deleg
ns.deleg A    192.0.2.77
big      TXT  \"0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\"
big      TXT  \"1123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\"
big      TXT  \"2123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\"
big      TXT  \"3123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\"
big      TXT  \"4123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\"
big      TXT  \"5123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\"
";

fn chains() -> ZoneSet {
    zone("example.test.", CHAINS)
}

#[test]
fn cname_chain_followed_inside_the_zone() {
    let m = ask(&chains(), "A.example.test.", RType::A);
    assert!(m.header.aa());
    assert_eq!(
        lines(&m.answers),
        set(&[
            "a.example.test. 300 IN CNAME b.example.test.",
            "b.example.test. 300 IN CNAME c.example.test.",
            "c.example.test. 300 IN A 192.0.2.3",
        ])
    );
    // The question's case is kept.
    assert_eq!(m.questions[0].qname.to_string(), "A.example.test.");
}

#[test]
fn cname_loop_stops() {
    let m = ask(&chains(), "loop1.example.test.", RType::A);
    assert_eq!(m.rcode(), Rcode::NOERROR);
    assert_eq!(
        lines(&m.answers),
        set(&[
            "loop1.example.test. 300 IN CNAME loop2.example.test.",
            "loop2.example.test. 300 IN CNAME loop1.example.test.",
        ])
    );
}

#[test]
fn cname_to_missing_name_is_nxdomain() {
    // RFC 6604 §3: the RCODE is that of the last name in the chain.
    let m = ask(&chains(), "dangling.example.test.", RType::A);
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.authority[0].rtype, RType::SOA);
    assert_eq!(m.authority[0].ttl, 60);
}

#[test]
fn cname_leaving_the_zone_stops() {
    let m = ask(&chains(), "out.example.test.", RType::A);
    assert_eq!(m.rcode(), Rcode::NOERROR);
    assert_eq!(
        lines(&m.answers),
        set(&["out.example.test. 300 IN CNAME www.example.net."])
    );
    assert!(m.authority.is_empty());
}

#[test]
fn wildcard_cname_is_synthesized_with_the_qname() {
    let m = ask(&chains(), "anything.wild.example.test.", RType::A);
    assert_eq!(
        lines(&m.answers),
        set(&[
            "anything.wild.example.test. 300 IN CNAME c.example.test.",
            "c.example.test. 300 IN A 192.0.2.3"
        ])
    );
}

#[test]
fn dname_substitution() {
    let m = ask(&chains(), "www.d.example.test.", RType::A);
    assert!(m.header.aa());
    assert_eq!(
        lines(&m.answers),
        set(&[
            "d.example.test. 300 IN DNAME target.example.org.",
            "www.d.example.test. 300 IN CNAME www.target.example.org.",
        ])
    );
    // DNAME into the same zone is followed.
    let m = ask(&chains(), "x.dd.example.test.", RType::A);
    assert_eq!(
        lines(&m.answers),
        set(&[
            "dd.example.test. 300 IN DNAME sub.example.test.",
            "x.dd.example.test. 300 IN CNAME x.sub.example.test.",
            "x.sub.example.test. 300 IN A 192.0.2.98",
        ])
    );
    // The DNAME owner itself is not redirected.
    let m = ask(&chains(), "d.example.test.", RType::A);
    assert_eq!((m.rcode(), m.answers.len()), (Rcode::NOERROR, 0));
}

#[test]
fn dname_too_long_is_yxdomain() {
    // 239 octets below a 16-octet owner whose target has 74: 297 after substitution.
    let long = format!(
        "{}.{}.{}.{}.l.example.test.",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(30)
    );
    let m = ask(&chains(), &long, RType::A);
    assert_eq!(m.rcode(), Rcode::YXDOMAIN);
    assert_eq!(m.answers.len(), 1, "the DNAME itself is still given");
}

#[test]
fn additional_for_mx_and_srv_in_zone_only() {
    let m = ask(&chains(), "mail.example.test.", RType::MX);
    assert_eq!(
        lines(&m.additional),
        set(&["ns.example.test. 300 IN A 192.0.2.53"])
    );
    let m = ask(&chains(), "srv.example.test.", RType::SRV);
    assert_eq!(
        lines(&m.additional),
        set(&["ns.example.test. 300 IN A 192.0.2.53"])
    );
}

#[test]
fn minimal_positive_answer_and_apex_ns() {
    let m = ask(&chains(), "c.example.test.", RType::A);
    assert!(m.authority.is_empty() && m.additional.is_empty());
    let m = ask(&chains(), "example.test.", RType::NS);
    assert!(m.header.aa());
    assert_eq!(
        lines(&m.additional),
        set(&["ns.example.test. 300 IN A 192.0.2.53"])
    );
}

#[test]
fn referral_with_glue_and_ds_at_the_cut() {
    let m = ask(&chains(), "www.deleg.example.test.", RType::A);
    assert!(!m.header.aa());
    assert_eq!(
        lines(&m.authority),
        set(&["deleg.example.test. 300 IN NS ns.deleg.example.test."])
    );
    assert_eq!(
        lines(&m.additional),
        set(&["ns.deleg.example.test. 300 IN A 192.0.2.77"])
    );
    // DS at the cut is the parent's data: an authoritative NODATA here.
    let m = ask(&chains(), "deleg.example.test.", RType::DS);
    assert!(m.header.aa());
    assert_eq!(m.authority[0].rtype, RType::SOA);
    // Glue is not authoritative: a query for it is referred.
    let m = ask(&chains(), "ns.deleg.example.test.", RType::A);
    assert!(!m.header.aa());
}

#[test]
fn refused_outside_our_zones() {
    let m = ask(&chains(), "example.org.", RType::A);
    assert_eq!(m.rcode(), Rcode::REFUSED);
    assert!(!m.header.aa());
}

#[test]
fn edns_echo_badvers_and_truncation() {
    let z = chains();
    let edns = Query {
        edns: Some((4096, 0, true)),
        transport: Transport::Udp,
    };
    let m = ask_with(&z, "c.example.test.", RType::A, &edns);
    let opt = m.opt().expect("OPT echoed");
    assert_eq!(opt.class.0, EDNS_UDP_SIZE);
    assert_eq!(opt.ttl & 0x8000, 0x8000, "DO echoed");
    let bad = Query {
        edns: Some((4096, 1, false)),
        transport: Transport::Udp,
    };
    let m = ask_with(&z, "c.example.test.", RType::A, &bad);
    assert_eq!(m.rcode(), Rcode::BADVERS);
    assert!(m.answers.is_empty());
    // Six 100-octet TXT records do not fit in 512 octets without EDNS: TC, then TCP has all.
    let m = ask(&z, "big.example.test.", RType::TXT);
    assert!(m.header.tc());
    assert!(m.answers.is_empty());
    let tcp = Query {
        edns: None,
        transport: Transport::Tcp,
    };
    let m = ask_with(&z, "big.example.test.", RType::TXT, &tcp);
    assert!(!m.header.tc());
    assert_eq!(m.answers.len(), 6);
    // With EDNS 1232 they fit over UDP.
    let m = ask_with(&z, "big.example.test.", RType::TXT, &edns);
    assert_eq!(m.answers.len(), 6);
}

#[test]
fn malformed_queries() {
    let z = chains();
    let mut out = vec![0u8; 4096];
    // Too short for a header, or a response: dropped.
    assert!(respond_to_message(&z, &[0; 11], Transport::Udp, &mut out).is_none());
    let mut q = query_bytes("c.example.test.", RType::A, &PLAIN);
    q[2] |= 0x80;
    assert!(respond_to_message(&z, &q, Transport::Udp, &mut out).is_none());
    // Bad label length, compression loop, wrong counts, trailing garbage: FORMERR.
    let good = query_bytes("c.example.test.", RType::A, &PLAIN);
    let mut cases = Vec::new();
    let mut bad_label = good.clone();
    bad_label[12] = 0x50;
    cases.push(bad_label);
    let mut looped = good[..12].to_vec();
    looped.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
    cases.push(looped);
    let mut two_questions = good.clone();
    two_questions[5] = 2;
    cases.push(two_questions);
    let mut extra_answer = good.clone();
    extra_answer[7] = 1;
    cases.push(extra_answer);
    let mut trailing = good.clone();
    trailing.push(0);
    cases.push(trailing);
    cases.push(good[..good.len() - 1].to_vec());
    for q in cases {
        let o = respond_to_message(&z, &q, Transport::Udp, &mut out).expect("answered");
        assert_eq!(o.rcode, Rcode::FORMERR, "{q:?}");
        let h = Header::parse(&out[..o.len]).unwrap();
        assert!(h.qr());
    }
    // Unknown opcode: NOTIMP.
    let mut q = good.clone();
    q[2] |= 5 << 3;
    assert_eq!(
        respond_to_message(&z, &q, Transport::Udp, &mut out)
            .unwrap()
            .rcode,
        Rcode::NOTIMP
    );
}

#[test]
fn lookup_classifies_names() {
    let z = rfc4592();
    let zone = z.zones().next().unwrap();
    let n = |s: &str| -> Name { s.parse().unwrap() };
    assert!(matches!(
        lookup(zone, n("host1.example.").as_ref(), RType::A),
        Found::Exact(_)
    ));
    assert!(matches!(
        lookup(zone, n("a.b.example.").as_ref(), RType::A),
        Found::Wildcard(_)
    ));
    assert!(matches!(
        lookup(zone, n("x.subdel.example.").as_ref(), RType::A),
        Found::Referral(_)
    ));
    assert!(matches!(
        lookup(zone, n("subdel.example.").as_ref(), RType::DS),
        Found::Exact(_)
    ));
    // The closest encloser comes with a name error: what a denial proof starts from.
    assert!(matches!(
        lookup(zone, n("no.host1.example.").as_ref(), RType::A),
        Found::NxDomain(e) if e.name().to_string() == "host1.example."
    ));
}

#[test]
fn outcome_says_when_the_qname_came_from_a_wildcard() {
    let wildcard = |zones: &ZoneSet, qname: &str, qtype: RType| {
        let query = query_bytes(qname, qtype, &PLAIN);
        let mut out = vec![0u8; 65535];
        respond_to_message(zones, &query, Transport::Udp, &mut out)
            .expect("a response")
            .wildcard
    };
    let z = rfc4592();
    // *.example: the encloser example. has one label, whatever the depth below it.
    assert_eq!(wildcard(&z, "host3.example.", RType::MX), Some(1));
    assert_eq!(wildcard(&z, "foo.bar.example.", RType::TXT), Some(1));
    // NODATA from the wildcard is still from the wildcard.
    assert_eq!(wildcard(&z, "host3.example.", RType::A), Some(1));
    // Names that exist, NXDOMAIN and referrals are not.
    assert_eq!(wildcard(&z, "host1.example.", RType::A), None);
    assert_eq!(wildcard(&z, "sub.*.example.", RType::TXT), None);
    assert_eq!(
        wildcard(&z, "_telnet._tcp.host1.example.", RType::SRV),
        None
    );
    assert_eq!(wildcard(&z, "host.subdel.example.", RType::A), None);
    // The first step of a chain decides: *.wild.example.test is a CNAME (encloser 3 labels),
    // and an alias whose target is wildcard-synthesised is not.
    let c = chains();
    assert_eq!(
        wildcard(&c, "anything.wild.example.test.", RType::A),
        Some(3)
    );
    assert_eq!(wildcard(&c, "www.example.test.", RType::A), None);
}

#[test]
fn each_query_is_classified_once() {
    let z = chains();
    let mut out = vec![0u8; 4096];
    let mut classify = |bytes: &[u8]| {
        let q = shardns_wire::Query::parse(bytes).expect("parses");
        respond(&z, &q, Transport::Udp, &mut out)
    };
    let in_zone = query_bytes("c.example.test.", RType::A, &PLAIN);
    assert!(matches!(classify(&in_zone), Reply::Answer(w) if w.rcode == Rcode::NOERROR));
    let nxdomain = query_bytes("nope.example.test.", RType::A, &PLAIN);
    assert!(matches!(classify(&nxdomain), Reply::Answer(w) if w.rcode == Rcode::NXDOMAIN));
    // Outside every zone: nothing written, for the resolver role or `refuse`.
    let outside = query_bytes("www.elsewhere.example.", RType::A, &PLAIN);
    assert_eq!(classify(&outside), Reply::NotOurs);
    // Transfers of class IN go to the transfer policy, whether or not the zone is ours.
    for name in ["example.test.", "elsewhere.example."] {
        for t in [RType::AXFR, RType::IXFR] {
            assert_eq!(classify(&query_bytes(name, t, &PLAIN)), Reply::Transfer);
        }
    }
    // Class CH: neither a transfer nor a name of ours, an error for every role.
    let mut chaos = query_bytes("example.test.", RType::AXFR, &PLAIN);
    let n = chaos.len();
    chaos[n - 1] = 3;
    assert!(matches!(classify(&chaos), Reply::Error(w) if w.rcode == Rcode::REFUSED));
    let v1 = Query {
        edns: Some((1232, 1, false)),
        transport: Transport::Udp,
    };
    let badvers = query_bytes("www.elsewhere.example.", RType::A, &v1);
    assert!(matches!(classify(&badvers), Reply::Error(w) if w.rcode == Rcode::BADVERS));
    let mut update = in_zone.clone();
    update[2] |= 5 << 3;
    assert_eq!(classify(&update), Reply::Update);
    let opt = query_bytes("c.example.test.", RType::OPT, &PLAIN);
    assert!(matches!(classify(&opt), Reply::Error(w) if w.rcode == Rcode::FORMERR));
    // NOTIFY goes to the secondary role, whatever the zone; without one, NOTIMP as before.
    let mut notify = query_bytes("example.test.", RType::SOA, &PLAIN);
    notify[2] = 4 << 3 | 4; // opcode NOTIFY, AA
    assert_eq!(classify(&notify), Reply::Notify);
    let q = shardns_wire::Query::parse(&notify).unwrap();
    let w = notify_answer(&q, Rcode::NOERROR, &mut out);
    let m = Message::parse(&out[..w.len]).unwrap();
    assert!(m.header.qr() && m.header.aa() && m.header.opcode() == Opcode::NOTIFY);
    assert_eq!((m.questions.len(), m.answers.len()), (1, 0));
    let w = notify_answer(&q, Rcode::REFUSED, &mut out);
    let m = Message::parse(&out[..w.len]).unwrap();
    assert!(!m.header.aa() && m.rcode() == Rcode::REFUSED);
    let w = respond_to_message(&z, &notify, Transport::Udp, &mut out).unwrap();
    assert_eq!(w.rcode, Rcode::NOTIMP);

    // What a server without other roles sends for the last two kinds: REFUSED, with the
    // question, not authoritative.
    let q = shardns_wire::Query::parse(&outside).unwrap();
    let w = refuse(&q, Transport::Udp, &mut out);
    let m = Message::parse(&out[..w.len]).unwrap();
    assert_eq!(m.rcode(), Rcode::REFUSED);
    assert!(!m.header.aa());
    assert_eq!(m.questions.len(), 1);
}

#[test]
fn an_unavailable_zone_answers_servfail() {
    let z = ZoneSet::new(vec![Zone::unavailable("gone.test.".parse().unwrap())]);
    let mut out = vec![0u8; 4096];
    for name in ["gone.test.", "www.gone.test."] {
        let q = query_bytes(name, RType::A, &PLAIN);
        let q = shardns_wire::Query::parse(&q).unwrap();
        let reply = respond(&z, &q, Transport::Udp, &mut out);
        assert!(
            matches!(reply, Reply::Error(w) if w.rcode == Rcode::SERVFAIL),
            "{reply:?}"
        );
        let m = Message::parse(
            &out[..match reply {
                Reply::Error(w) => w.len,
                _ => 0,
            }],
        )
        .unwrap();
        assert!(!m.header.aa() && m.answers.is_empty());
    }
    let zone = z
        .get("gone.test.".parse::<Name>().unwrap().as_ref())
        .unwrap();
    assert!(zone.is_unavailable() && zone.serial() == 0);
}

/// Every name of `text`'s zone (and a child of each that does not exist) asked for several
/// types, with and without DNSSEC: the zone packed into one allocation (as small zones are
/// served) and the same zone in its five arrays (as big zones are) answer byte for byte alike.
fn packed_and_split_answer_alike(origin: &str, text: &str) {
    let opts = ScanOptions::new(origin.parse::<Name>().unwrap());
    let load = || {
        crate::load_zone_text(text.as_bytes(), Path::new("t.zone"), &opts)
            .unwrap()
            .0
    };
    let packed = load();
    assert!(packed.is_packed(), "a small zone is packed");
    let mut split = load();
    split.unpack();
    assert!(!split.is_packed());
    assert_eq!(
        packed.records().collect::<Vec<_>>(),
        split.records().collect::<Vec<_>>()
    );
    let names: Vec<String> = packed
        .records()
        .map(|r| r.owner.to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let (packed, split) = (ZoneSet::new(vec![packed]), ZoneSet::new(vec![split]));
    let types = [
        RType::A,
        RType::AAAA,
        RType::NS,
        RType::MX,
        RType::SOA,
        RType::TXT,
        RType::CNAME,
        RType::DS,
        RType::ANY,
    ];
    let (mut a, mut b) = (vec![0u8; 65535], vec![0u8; 65535]);
    let mut asked = 0;
    for name in &names {
        let parent = name.trim_start_matches("*.");
        let nx = match parent {
            "." => format!("nx-{asked}."),
            _ => format!("nx-{asked}.{parent}"),
        };
        for qname in [name.as_str(), nx.as_str()] {
            for &t in &types {
                for dnssec_ok in [false, true] {
                    let edns = Some(shardns_testkit::Edns {
                        udp_size: 1232,
                        version: 0,
                        dnssec_ok,
                    });
                    let q = shardns_testkit::query(9, qname, t, edns);
                    let x = respond_to_message(&packed, &q, Transport::Udp, &mut a);
                    let y = respond_to_message(&split, &q, Transport::Udp, &mut b);
                    let (x, y) = (x.expect("an answer"), y.expect("an answer"));
                    assert_eq!(&a[..x.len], &b[..y.len], "{qname} {t}");
                    asked += 1;
                }
            }
        }
    }
    assert!(asked >= names.len() * 36);
}

#[test]
fn packed_and_split_zones_answer_alike() {
    packed_and_split_answer_alike(".", include_str!("../../tests/data/rfc1034-root.zone"));
    packed_and_split_answer_alike("example.", include_str!("../../tests/data/rfc4592.zone"));
    for kind in ["nsec", "nsec3", "optout"] {
        let text = match kind {
            "nsec" => include_str!("../../tests/data/signed-nsec.zone"),
            "nsec3" => include_str!("../../tests/data/signed-nsec3.zone"),
            _ => include_str!("../../tests/data/signed-optout.zone"),
        };
        packed_and_split_answer_alike("example.", text);
    }
}
