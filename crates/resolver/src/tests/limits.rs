//! The limits on one resolution: chain length and loops, referrals, upstream queries and
//! the deadline.

use shardns_wire::{RType, Rcode};

use super::sim::*;
use crate::{Config, Ede};

#[test]
fn cname_loop_fails_with_ede() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("loop1.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede, Some(Ede::new(Ede::OTHER, "CNAME loop")));
}

#[test]
fn long_cname_chain_is_cut() {
    let mut net = world();
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!(
            "c{i}.example.test. 300 CNAME c{}.example.test.\n",
            i + 1
        ));
    }
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.servers.get_mut(&addr(ip)).unwrap().zones[0]
            .records
            .extend(records(&text));
    }
    let mut sim = Sim::new(net, config());
    let a = sim.resolve("c0.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "CNAME chain too long");
}

#[test]
fn glueless_delegation_loop_fails() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.loopa.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().code, Ede::NO_REACHABLE_AUTHORITY);
    assert!(sim.log.len() < 20, "{} queries", sim.log.len());
}

#[test]
fn query_budget_limits_one_resolution() {
    let mut sim = Sim::new(
        world(),
        Config {
            max_queries: 2,
            ..config()
        },
    );
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "too many upstream queries");
    assert_eq!(sim.log.len(), 2);
}

#[test]
fn resolution_deadline_gives_servfail() {
    let mut sim = Sim::new(
        world(),
        Config {
            max_resolution_ms: 500,
            ..config()
        },
    );
    let a = sim.resolve("www.dead.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "resolution timed out");
    // Only the first try at the silent server went out before the deadline.
    assert_eq!(
        sim.log
            .iter()
            .filter(|s| s.server == addr("10.0.9.8"))
            .count(),
        1
    );
}

#[test]
fn referral_limit() {
    let mut sim = Sim::new(
        world(),
        Config {
            max_referrals: 1,
            ..config()
        },
    );
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "too many referrals");
    assert_eq!(sim.log.len(), 2);
}
