//! Loopback and unspecified addresses learned from DNS data are not asked (issue 30,
//! defect 4; Unbound's `do-not-query-localhost: yes`), unless the operator allows them;
//! configured addresses (hints, forwarders) are always used.

use shardns_wire::{RType, Rcode};

use super::sim::*;
use crate::{Config, Ede, Hints, ZoneServers};

/// The test world with `lo.test.` delegated to servers on loopback and unspecified
/// addresses only (glue), and `far.test.` to a server whose name, under `org.`, resolves
/// to 127.0.0.3. Each of those servers answers.
fn loopback_world() -> Net {
    let mut net = world();
    let glue = "lo.test. 86400 NS ns1.lo.test.
                lo.test. 86400 NS ns2.lo.test.
                lo.test. 86400 NS ns3.lo.test.
                ns1.lo.test. 86400 A 127.0.0.2
                ns2.lo.test. 86400 AAAA ::1
                ns3.lo.test. 86400 A 0.0.0.0
                far.test. 86400 NS ns.far.org.";
    let tld = net.servers.get_mut(&addr("10.0.1.1")).unwrap();
    tld.zones[0].records.extend(records(glue));
    let org = net.servers.get_mut(&addr("10.0.2.1")).unwrap();
    org.zones[0]
        .records
        .extend(records("ns.far.org. 86400 A 127.0.0.3"));
    for ip in ["127.0.0.2", "::1", "0.0.0.0"] {
        net.add(ip, vec![zone("lo.test.", "www.lo.test. 300 A 192.0.2.66")]);
    }
    net.add(
        "127.0.0.3",
        vec![zone("far.test.", "www.far.test. 300 A 192.0.2.67")],
    );
    net
}

fn dual_stack() -> Config {
    Config {
        ipv6: true,
        ..config()
    }
}

fn asked_loopback(sim: &Sim) -> Vec<String> {
    sim.log
        .iter()
        .filter(|s| s.server.ip().is_loopback() || s.server.ip().is_unspecified())
        .map(|s| format!("{} {}", s.server, s.qname))
        .collect()
}

/// A referral whose glue is on loopback (the issue's `ns2.example.com A 127.0.0.2`), and
/// an NS name that resolves to loopback: used to be followed (the client's query went to
/// 127.0.0.2 and 127.0.0.3); now nothing is sent there and the resolution fails.
#[test]
fn loopback_addresses_from_referrals_are_not_asked() {
    let mut sim = Sim::new(loopback_world(), dual_stack());
    for name in ["www.lo.test.", "www.far.test."] {
        let a = sim.resolve(name, RType::A);
        assert_eq!(a.rcode, Rcode::SERVFAIL, "{name}: {a:?}");
        assert_eq!(a.ede.unwrap().code, Ede::NO_REACHABLE_AUTHORITY, "{name}");
    }
    assert_eq!(asked_loopback(&sim), Vec::<String>::new());
    // The data itself is not refused: a client may look the address up.
    let a = sim.resolve("ns.far.org.", RType::A);
    assert_eq!(rdata_a(&a), [[127, 0, 0, 3]]);
}

/// `allow_loopback_upstreams` (for lab hierarchies on loopback): followed as before.
#[test]
fn loopback_addresses_are_asked_when_allowed() {
    let cfg = Config {
        allow_loopback_upstreams: true,
        ..dual_stack()
    };
    let mut sim = Sim::new(loopback_world(), cfg);
    assert_eq!(
        rdata_a(&sim.resolve("www.lo.test.", RType::A)),
        [[192, 0, 2, 66]]
    );
    assert_eq!(
        rdata_a(&sim.resolve("www.far.test.", RType::A)),
        [[192, 0, 2, 67]]
    );
    assert!(!asked_loopback(&sim).is_empty());
}

/// Addresses the operator configured are used as given: root hints and forwarders on
/// loopback, with the switch off.
#[test]
fn configured_loopback_addresses_are_used() {
    let mut net = loopback_world();
    let root = net.servers.remove(&addr("10.0.0.1")).unwrap();
    net.servers.insert(addr("127.0.0.1"), root);
    let cfg = Config {
        hints: Hints::parse(". NS a.root.test.\na.root.test. A 127.0.0.1\n").unwrap(),
        forward_zones: vec![ZoneServers {
            zone: n("lo.test."),
            servers: vec![addr("127.0.0.2")],
        }],
        ..dual_stack()
    };
    net.servers
        .get_mut(&addr("127.0.0.2"))
        .unwrap()
        .behaviour
        .recursive = true;
    let mut sim = Sim::new(net, cfg);
    assert_eq!(
        rdata_a(&sim.resolve("www.example.test.", RType::A)),
        [[192, 0, 2, 80]]
    );
    assert_eq!(
        rdata_a(&sim.resolve("www.lo.test.", RType::A)),
        [[192, 0, 2, 66]]
    );
    // Still not the learned one.
    assert_eq!(
        sim.resolve("www.far.test.", RType::A).rcode,
        Rcode::SERVFAIL
    );
    assert!(sim
        .log
        .iter()
        .all(|s| s.server.ip().to_string() != "127.0.0.3"));
}
