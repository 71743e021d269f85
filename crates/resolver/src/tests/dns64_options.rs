//! DNS64's options beyond the prefix and exclusions (BIND's `clients`, `mapped`, `suffix`,
//! `recursive-only`, `break-dnssec`; Unbound's `dns64-synthall`, `dns64-ignore-aaaa`) and
//! DNS64 with serve-stale (RFC 8767): a stale AAAA denial or a stale A record still gives
//! a synthesized answer, with EDE 3.

use std::net::IpAddr;

use shardns_wire::{RType, Rcode};

use super::dns64::{aaaa, dns64_config, dns64_world, v6};
use super::sim::*;
use super::validation::signed_config;
use crate::local::Prefix;
use crate::{Ask, Config, Dns64Options, Dns64Prefix, Ede, Resolution};

fn prefix(s: &str) -> Prefix {
    let (a, len) = s.split_once('/').unwrap();
    Prefix {
        addr: a.parse().unwrap(),
        len: len.parse().unwrap(),
    }
}

fn with(options: Dns64Options) -> Config {
    Config {
        dns64_options: options,
        ..dns64_config()
    }
}

/// Resolves a client's question with its flags.
fn ask(sim: &mut Sim, qname: &str, qtype: RType, ask: Ask) -> Resolution {
    let id = sim
        .engine
        .resolve_for(n(qname).as_ref(), qtype, ask, sim.now);
    sim.run();
    let i = sim.done.iter().position(|(t, _)| *t == id).unwrap();
    sim.done.remove(i).1
}

#[test]
fn clients_and_recursive_only_choose_who_gets_dns64() {
    let o = Dns64Options {
        clients: Some(vec![prefix("192.0.2.0/24"), prefix("2001:db8::/32")]),
        ..Dns64Options::default()
    };
    let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
    assert!(o.applies(ip("192.0.2.9"), true));
    assert!(o.applies(ip("::ffff:192.0.2.9"), true), "IPv4-mapped");
    assert!(o.applies(ip("2001:db8::1"), false));
    assert!(!o.applies(ip("198.51.100.1"), true));
    assert!(!o.applies(None, true));
    assert!(Dns64Options::default().applies(None, false));
    let r = Dns64Options {
        recursive_only: true,
        ..Dns64Options::default()
    };
    assert!(r.applies(ip("198.51.100.1"), true));
    assert!(!r.applies(ip("198.51.100.1"), false), "no RD");
    // A client DNS64 does not apply to gets the data as it is.
    let mut sim = Sim::new(dns64_world(), dns64_config());
    let no = Ask {
        dns64: false,
        ..Ask::default()
    };
    let a = ask(&mut sim, "www.example.test.", RType::AAAA, no);
    assert_eq!((a.rcode, a.answers.len()), (Rcode::NOERROR, 0));
    let no_ipv4only = ask(&mut sim, "ipv4only.arpa.", RType::AAAA, no);
    assert!(aaaa(&no_ipv4only).is_empty(), "asked upstream, not local");
    let yes = Ask {
        dns64: true,
        ..Ask::default()
    };
    let a = ask(&mut sim, "www.example.test.", RType::AAAA, yes);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:250")]);
}

#[test]
fn mapped_keeps_only_the_listed_ipv4_addresses() {
    let mut net = dns64_world();
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.servers.get_mut(&addr(ip)).unwrap().zones[0]
            .records
            .extend(records(
                "two.example.test. 300 A 192.0.2.8
                 two.example.test. 300 A 198.51.100.8",
            ));
    }
    let config = with(Dns64Options {
        mapped: Some(vec![prefix("198.51.100.0/24")]),
        ..Dns64Options::default()
    });
    let mut sim = Sim::new(net, config);
    assert_eq!(
        aaaa(&sim.resolve("two.example.test.", RType::AAAA)),
        [v6("64:ff9b::c633:6408")]
    );
    // Nothing mapped: the AAAA denial stands.
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!((a.rcode, a.answers.len()), (Rcode::NOERROR, 0));
    assert_eq!(a.authority[0].rtype, RType::SOA);
}

#[test]
fn suffix_fills_the_bits_after_the_ipv4_address() {
    let p: Dns64Prefix = "2001:db8:122::/48".parse().unwrap();
    let p = p.with_suffix(v6("::ff")).unwrap();
    assert_eq!(
        p.to_string(),
        "2001:db8:122::/48",
        "shown without the suffix"
    );
    let config = Config {
        dns64_prefix: p,
        ..dns64_config()
    };
    let mut sim = Sim::new(dns64_world(), config);
    let got = aaaa(&sim.resolve("www.example.test.", RType::AAAA));
    assert_eq!(got, [v6("2001:db8:122:c000:2:5000:0:ff")]);
    assert_eq!(p.extract(got[0].octets()), Some([192, 0, 2, 80]));
    // The suffix may not reach into the prefix, the IPv4 address or the u octet.
    assert!(p.with_suffix(v6("::1:0:0:0")).is_err());
    let p96 = Dns64Prefix::WELL_KNOWN;
    assert!(p96.with_suffix(v6("::1")).is_err());
    assert_eq!(p96.with_suffix(v6("::")), Ok(p96));
}

#[test]
fn synthall_and_ignore_aaaa_synthesize_over_real_aaaa_records() {
    let mut sim = Sim::new(dns64_world(), dns64_config());
    assert_eq!(
        aaaa(&sim.resolve("v6.example.test.", RType::AAAA)),
        [v6("2001:db8::6")]
    );
    let all = with(Dns64Options {
        synthall: true,
        ..Dns64Options::default()
    });
    let mut sim = Sim::new(dns64_world(), all);
    assert_eq!(
        aaaa(&sim.resolve("v6.example.test.", RType::AAAA)),
        [v6("64:ff9b::c000:206")]
    );
    let some = with(Dns64Options {
        ignore_aaaa: vec![n("v6.example.test.")],
        ..Dns64Options::default()
    });
    let mut sim = Sim::new(dns64_world(), some);
    assert_eq!(
        aaaa(&sim.resolve("v6.example.test.", RType::AAAA)),
        [v6("64:ff9b::c000:206")]
    );
    // Another name's real AAAA stays; an ignored name without A records keeps its denial.
    let some = with(Dns64Options {
        ignore_aaaa: vec![n("example.test.")],
        ..Dns64Options::default()
    });
    let mut sim = Sim::new(dns64_world(), some);
    assert_eq!(
        aaaa(&sim.resolve("v6.example.test.", RType::AAAA)),
        [v6("64:ff9b::c000:206")],
        "a name below an ignored one"
    );
    let config = with(Dns64Options {
        ignore_aaaa: vec![n("other.example.test.")],
        ..Dns64Options::default()
    });
    let mut sim = Sim::new(dns64_world(), config);
    assert_eq!(
        aaaa(&sim.resolve("v6.example.test.", RType::AAAA)),
        [v6("2001:db8::6")]
    );
}

#[test]
fn break_dnssec_off_leaves_a_signed_denial_alone_for_a_do_client() {
    let (net, anchor) = signed_world();
    let on = Config {
        dns64: true,
        ..signed_config(&anchor)
    };
    let mut sim = Sim::new(net, on);
    let do_client = Ask {
        dnssec_ok: true,
        dns64: true,
        cd: false,
    };
    // Default (RFC 6147 §5.5, Unbound): synthesized, never AD.
    let a = ask(&mut sim, "www.secure.test.", RType::AAAA, do_client);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:201")]);
    assert!(!a.secure);
    // A new world has new keys, so its own trust anchor.
    let (net, anchor) = signed_world();
    let off = Config {
        dns64: true,
        dns64_options: Dns64Options {
            break_dnssec: false,
            ..Dns64Options::default()
        },
        ..signed_config(&anchor)
    };
    let mut sim = Sim::new(net, off);
    let a = ask(&mut sim, "www.secure.test.", RType::AAAA, do_client);
    assert_eq!(
        (a.rcode, a.answers.len(), a.secure),
        (Rcode::NOERROR, 0, true),
        "{a:?}"
    );
    // Without DO the client gets the synthesis still (it cannot check the denial).
    let no_do = Ask {
        dnssec_ok: false,
        ..do_client
    };
    let a = ask(&mut sim, "www.secure.test.", RType::AAAA, no_do);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:201")]);
    // An unsigned denial is synthesized for a DO client too.
    let a = ask(&mut sim, "www.insecure.test.", RType::AAAA, do_client);
    assert_eq!(aaaa(&a).len(), 1, "{a:?}");
}

/// example.test's servers answer REFUSED from now on.
fn refuse(sim: &mut Sim) {
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        sim.net
            .servers
            .get_mut(&addr(ip))
            .unwrap()
            .behaviour
            .refused = true;
    }
}

fn stale_dns64() -> Config {
    Config {
        serve_stale: true,
        ..dns64_config()
    }
}

#[test]
fn a_stale_aaaa_denial_and_a_stale_a_are_synthesized_with_ede_3() {
    let mut sim = Sim::new(dns64_world(), stale_dns64());
    assert_eq!(
        aaaa(&sim.resolve("www.example.test.", RType::AAAA)),
        [v6("64:ff9b::c000:250")]
    );
    sim.now += 301_000;
    refuse(&mut sim);
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:250")], "{a:?}");
    assert_eq!(a.ede.map(|e| e.code), Some(Ede::STALE_ANSWER));
    assert_eq!(a.answers[0].ttl, 30, "the stale TTL");
    // In the failure-recheck time: the same, at once, nothing asked.
    sim.now += 5_000;
    let mark = sim.log.len();
    let (a, took) = sim.resolve_timed("www.example.test.", RType::AAAA);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:250")]);
    assert_eq!(a.ede.map(|e| e.code), Some(Ede::STALE_ANSWER));
    assert_eq!((sim.log.len(), took), (mark, 0));
    // A real AAAA record served stale is kept as it is.
    let mut sim = Sim::new(dns64_world(), stale_dns64());
    sim.resolve("v6.example.test.", RType::AAAA);
    sim.now += 301_000;
    refuse(&mut sim);
    let a = sim.resolve("v6.example.test.", RType::AAAA);
    assert_eq!(aaaa(&a), [v6("2001:db8::6")]);
    assert_eq!(a.ede.map(|e| e.code), Some(Ede::STALE_ANSWER));
}

#[test]
fn a_failed_aaaa_question_is_synthesized_from_a_stale_a() {
    let mut sim = Sim::new(dns64_world(), stale_dns64());
    // Only the A record was ever asked for.
    assert_eq!(
        rdata_a(&sim.resolve("www.example.test.", RType::A)),
        [[192, 0, 2, 80]]
    );
    sim.now += 301_000;
    refuse(&mut sim);
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:250")], "{a:?}");
    assert_eq!(a.ede.map(|e| e.code), Some(Ede::STALE_ANSWER));
    // Without serve-stale: SERVFAIL, nothing synthesized.
    let mut sim = Sim::new(dns64_world(), dns64_config());
    sim.resolve("www.example.test.", RType::A);
    sim.now += 301_000;
    refuse(&mut sim);
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!((a.rcode, a.answers.len()), (Rcode::SERVFAIL, 0));
}

#[test]
fn the_client_response_timer_gives_a_synthesized_stale_answer() {
    // The servers stop answering: the client-response timer (1.8 s) answers from stale
    // data while the resolution goes on.
    let mut sim = Sim::new(dns64_world(), stale_dns64());
    sim.resolve("www.example.test.", RType::AAAA);
    sim.now += 301_000;
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        sim.net.servers.get_mut(&addr(ip)).unwrap().behaviour.silent = true;
    }
    let (a, took) = sim.resolve_timed("www.example.test.", RType::AAAA);
    assert_eq!(aaaa(&a), [v6("64:ff9b::c000:250")], "{a:?}");
    assert_eq!(a.ede.map(|e| e.code), Some(Ede::STALE_ANSWER));
    assert!(took <= 2 * 1_800, "{took} ms");
}
