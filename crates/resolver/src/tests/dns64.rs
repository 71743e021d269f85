//! DNS64 (RFC 6147) on the simulated network: synthesis for names without AAAA records,
//! real AAAA records kept, exclusions, NXDOMAIN and CD left alone, the reverse mapping and
//! `ipv4only.arpa.`; and the RFC 6052 address formats.

use std::net::Ipv6Addr;

use shardns_wire::{RType, Rcode};

use super::sim::*;
use crate::{Config, Dns64Prefix, Resolution};

pub(super) fn dns64_config() -> Config {
    Config {
        dns64: true,
        ..config()
    }
}

/// The world, with `v6.example.test.` (A and AAAA), `mapped.example.test.` (A, and an AAAA
/// in the excluded `::ffff:0:0/96`), and `2.0.192.in-addr.arpa.` on the root's server.
pub(super) fn dns64_world() -> Net {
    let mut net = world();
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.servers.get_mut(&addr(ip)).unwrap().zones[0]
            .records
            .extend(records(
                "v6.example.test. 300 A 192.0.2.6
                 v6.example.test. 300 AAAA 2001:db8::6
                 mapped.example.test. 300 A 192.0.2.7
                 mapped.example.test. 300 AAAA ::ffff:192.0.2.7",
            ));
    }
    net.add(
        "10.0.0.1",
        vec![zone(
            "2.0.192.in-addr.arpa.",
            "80.2.0.192.in-addr.arpa. 300 PTR www.example.test.",
        )],
    );
    net
}

pub(super) fn aaaa(a: &Resolution) -> Vec<Ipv6Addr> {
    a.answers
        .iter()
        .filter(|r| r.rtype == RType::AAAA)
        .map(|r| Ipv6Addr::from(<[u8; 16]>::try_from(&r.rdata[..]).unwrap()))
        .collect()
}

pub(super) fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

#[test]
fn aaaa_is_synthesized_for_a_name_with_only_a_records() {
    let mut sim = Sim::new(dns64_world(), dns64_config());
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:250")]);
    assert_eq!(a.answers[0].owner, n("www.example.test."));
    // The lesser of the A TTL (300) and the AAAA denial's SOA TTL (300), counted down.
    assert!(a.answers[0].ttl <= 300 && a.answers[0].ttl > 290);
    assert!(a.authority.is_empty());
    assert!(
        !a.secure,
        "a synthesized answer is never AD (RFC 6147 §5.5)"
    );
    // From the cache the second time: the same.
    let mark = sim.log.len();
    assert_eq!(
        aaaa(&sim.resolve("www.example.test.", RType::AAAA)),
        [v6("64:ff9b::c000:250")]
    );
    assert_eq!(sim.log.len(), mark);
}

#[test]
fn without_dns64_the_answer_is_nodata() {
    let mut sim = Sim::new(dns64_world(), config());
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(a.answers.is_empty());
}

#[test]
fn real_aaaa_records_are_kept_and_excluded_ones_ignored() {
    let mut sim = Sim::new(dns64_world(), dns64_config());
    assert_eq!(
        aaaa(&sim.resolve("v6.example.test.", RType::AAAA)),
        [v6("2001:db8::6")]
    );
    // ::ffff:0:0/96 is excluded by default (RFC 6147 §5.1.4): synthesized from the A.
    assert_eq!(
        aaaa(&sim.resolve("mapped.example.test.", RType::AAAA)),
        [v6("64:ff9b::c000:207")]
    );
    // Excluding 2001:db8::/32 too makes v6.example.test's AAAA synthesized.
    let config = Config {
        dns64_exclude: vec!["2001:db8::/32".parse().unwrap()],
        ..dns64_config()
    };
    let mut sim = Sim::new(dns64_world(), config);
    assert_eq!(
        aaaa(&sim.resolve("v6.example.test.", RType::AAAA)),
        [v6("64:ff9b::c000:206")]
    );
}

#[test]
fn nxdomain_and_cd_are_not_synthesized() {
    let mut sim = Sim::new(dns64_world(), dns64_config());
    let a = sim.resolve("nope.example.test.", RType::AAAA);
    assert_eq!(a.rcode, Rcode::NXDOMAIN);
    assert!(a.answers.is_empty());
    let id = sim
        .engine
        .resolve_cd(n("www.example.test.").as_ref(), RType::AAAA, true, sim.now);
    sim.run();
    let (_, a) = sim.done.iter().find(|(t, _)| *t == id).unwrap();
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(
        a.answers.is_empty(),
        "CD: the client gets the data as it is"
    );
}

#[test]
fn another_prefix_is_used_as_configured() {
    let config = Config {
        dns64_prefix: "2001:db8:122::/48".parse().unwrap(),
        ..dns64_config()
    };
    let mut sim = Sim::new(dns64_world(), config);
    assert_eq!(
        aaaa(&sim.resolve("www.example.test.", RType::AAAA)),
        [v6("2001:db8:122:c000:2:5000::")]
    );
}

#[test]
fn ptr_under_the_prefix_follows_the_ipv4_reverse_name() {
    let mut sim = Sim::new(dns64_world(), dns64_config());
    // 64:ff9b::c000:250 = 192.0.2.80.
    let q = "0.5.2.0.0.0.0.c.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.b.9.f.f.4.6.0.0.ip6.arpa.";
    let a = sim.resolve(q, RType::PTR);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(a.answers[0].rtype, RType::CNAME);
    assert_eq!(a.answers[0].owner, n(q));
    assert_eq!(a.answers[0].rdata, n("80.2.0.192.in-addr.arpa.").as_wire());
    assert_eq!(a.answers[1].rtype, RType::PTR);
    assert_eq!(a.answers[1].rdata, n("www.example.test.").as_wire());
    // Outside the prefix: asked as it is (and nobody serves ip6.arpa here).
    let other = "0.5.2.0.0.0.0.c.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.";
    let mark = sim.log.len();
    sim.resolve(other, RType::PTR);
    assert!(sim
        .queries_since(mark)
        .iter()
        .any(|q| q.1.ends_with("ip6.arpa.")));
}

#[test]
fn ipv4only_arpa_is_answered_locally() {
    let mut sim = Sim::new(dns64_world(), dns64_config());
    let mark = sim.log.len();
    let a = sim.resolve("ipv4only.arpa.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 0, 170], [192, 0, 0, 171]]);
    let a = sim.resolve("IPv4only.ARPA.", RType::AAAA);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:aa"), v6("64:ff9b::c000:ab")]);
    assert_eq!(sim.log.len(), mark, "nothing asked upstream");
}

#[test]
fn rfc6052_address_formats() {
    // RFC 6052 §2.4's table: 192.0.2.33 under each prefix length.
    let v4 = [192, 0, 2, 33];
    for (prefix, want) in [
        ("2001:db8::/32", "2001:db8:c000:221::"),
        ("2001:db8:100::/40", "2001:db8:1c0:2:21::"),
        ("2001:db8:122::/48", "2001:db8:122:c000:2:2100::"),
        ("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"),
        ("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"),
        ("2001:db8:122:344::/96", "2001:db8:122:344::c000:221"),
    ] {
        let p: Dns64Prefix = prefix.parse().unwrap();
        let got = p.synthesize(v4);
        assert_eq!(Ipv6Addr::from(got), v6(want), "{prefix}");
        assert_eq!(p.extract(got), Some(v4), "{prefix}");
    }
    assert!("64:ff9b::/33".parse::<Dns64Prefix>().is_err());
    assert!(
        "2001:db8:0:0:ff00::/64".parse::<Dns64Prefix>().is_err(),
        "u octet set"
    );
    assert_eq!(Dns64Prefix::default().to_string(), "64:ff9b::/96");
}
