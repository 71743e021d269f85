//! Tests of the triggers checked after resolution: QNAME triggers on a CNAME chain's
//! targets, NSDNAME and NSIP (`Rpz::check_resolved`), their precedence against IP
//! triggers, between zones and along the chain, the QNAME triggers of later zones waiting
//! for an earlier zone's data triggers (`Rpz::waits_from`), and their IXFR changes.

use std::net::IpAddr;
use std::sync::Arc;

use shardns_wire::{Name, RType};

use super::tests::{zone, APEX};
use super::*;

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn server(name: &str, addrs: &[&str], at: usize) -> NameServer {
    NameServer {
        name: n(name),
        addresses: addrs.iter().map(|a| a.parse().unwrap()).collect(),
        at,
    }
}

/// (action, trigger, zone, at) of the applied hit for a chain of names.
fn resolved(
    rpz: &Rpz,
    chain: &[&str],
    addrs: &[&str],
    servers: &[NameServer],
) -> Option<(&'static str, Trigger, usize, usize)> {
    let chain: Vec<Name> = chain.iter().map(|c| n(c)).collect();
    let refs: Vec<_> = chain.iter().map(|c| c.as_ref()).collect();
    let addrs: Vec<IpAddr> = addrs.iter().map(|a| a.parse().unwrap()).collect();
    rpz.check_resolved(&refs, &addrs, servers, (None, usize::MAX), &mut |_| {})
        .map(|h| (h.action.label(), h.trigger, h.zone, h.at))
}

fn rpz(zones: &[&str]) -> Rpz {
    let zones = zones.iter().enumerate().map(|(i, text)| {
        let origin = format!("z{i}.rpz.");
        Arc::new(zone(&origin, Override::Given, &format!("{APEX}{text}")).unwrap())
    });
    Rpz::new(zones.collect())
}

#[test]
fn nsdname_triggers_match_exact_and_wildcard_server_names() {
    let r = rpz(&["ns.evil.example.rpz-nsdname CNAME .\n\
         *.bad-hosting.example.rpz-nsdname CNAME *.\n\
         32.7.2.0.192.rpz-nsip A 192.0.2.250\n"]);
    assert!(r.has_ns_triggers());
    assert!(!r.has_answer_triggers());
    assert_eq!(r.zones()[0].ns_triggers(), (1, 1, 1));
    assert_eq!(r.zones()[0].triggers(), (0, 0, 0, 0));
    let chain = ["www.victim.example."];
    let ns = |name: &str, addr: &str| vec![server(name, &[addr], 0)];
    assert_eq!(
        resolved(&r, &chain, &[], &ns("NS.Evil.Example.", "198.51.100.1")),
        Some(("nxdomain", Trigger::Nsdname, 0, 0))
    );
    assert_eq!(
        resolved(
            &r,
            &chain,
            &[],
            &ns("a.b.bad-hosting.example.", "198.51.100.1")
        )
        .unwrap()
        .0,
        "nodata"
    );
    // A wildcard is for the names below it only.
    assert!(resolved(&r, &chain, &[], &ns("bad-hosting.example.", "198.51.100.1")).is_none());
    assert_eq!(
        resolved(&r, &chain, &[], &ns("ns.good.example.", "192.0.2.7")),
        Some(("local-data", Trigger::Nsip, 0, 0))
    );
    assert!(resolved(&r, &chain, &[], &ns("ns.good.example.", "192.0.2.8")).is_none());
    // The policy CNAME's owner is the name whose servers matched.
    let r = rpz(&["*.evil.example.rpz-nsdname CNAME *.garden.example.\n"]);
    let hit = r
        .check_resolved(
            &[n("a.example.").as_ref(), n("b.example.").as_ref()],
            &[],
            &[server("x.evil.example.", &[], 1)],
            (None, usize::MAX),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(hit.at, 1);
    match hit.action {
        Action::Cname(t, _) => assert_eq!(t.as_ref().to_string(), "b.example.garden.example."),
        a => panic!("{a:?}"),
    }
}

#[test]
fn resolved_triggers_follow_bind_precedence() {
    // Within a zone: IP before NSDNAME before NSIP.
    let r = rpz(&["32.1.2.0.192.rpz-ip CNAME rpz-drop.\n\
         ns.evil.example.rpz-nsdname CNAME .\n\
         32.9.2.0.192.rpz-nsip CNAME *.\n"]);
    let servers = [server("ns.evil.example.", &["192.0.2.9"], 0)];
    assert_eq!(
        resolved(&r, &["q.example."], &["192.0.2.1"], &servers)
            .unwrap()
            .1,
        Trigger::Ip
    );
    assert_eq!(
        resolved(&r, &["q.example."], &["192.0.2.2"], &servers)
            .unwrap()
            .1,
        Trigger::Nsdname
    );
    let other = [server("ns.other.example.", &["192.0.2.9"], 0)];
    assert_eq!(
        resolved(&r, &["q.example."], &[], &other).unwrap().1,
        Trigger::Nsip
    );
    // Between zones: the first zone with any match, whatever the kind.
    let r = rpz(&[
        "32.9.2.0.192.rpz-nsip CNAME *.\n",
        "32.1.2.0.192.rpz-ip CNAME .\nns.evil.example.rpz-nsdname CNAME .\n",
    ]);
    assert_eq!(
        resolved(&r, &["q.example."], &["192.0.2.1"], &servers),
        Some(("nodata", Trigger::Nsip, 0, 0))
    );
    // NSIP: the longest prefix among all the addresses of one name's servers; the names
    // of the chain in turn (the query name's servers first).
    let r = rpz(&["24.0.2.0.192.rpz-nsip CNAME .\n32.5.2.0.192.rpz-nsip CNAME *.\n"]);
    let one = [
        server("a.example.", &["192.0.2.1"], 0),
        server("b.example.", &["192.0.2.5"], 0),
    ];
    assert_eq!(
        resolved(&r, &["q.example."], &[], &one),
        Some(("nodata", Trigger::Nsip, 0, 0))
    );
    let two = [
        server("a.example.", &["192.0.2.1"], 0),
        server("b.example.", &["192.0.2.5"], 1),
    ];
    assert_eq!(
        resolved(&r, &["q.example.", "t.example."], &[], &two),
        Some(("nxdomain", Trigger::Nsip, 0, 0))
    );
    assert!(resolved(&r, &[], &[], &two).is_none());
    // A later name's QNAME trigger comes after the earlier name's servers, whatever the
    // zone order.
    let r = rpz(&[
        "t.example CNAME *.\n",
        "ns.evil.example.rpz-nsdname CNAME .\n",
    ]);
    let evil = [server("ns.evil.example.", &[], 0)];
    assert_eq!(
        resolved(&r, &["q.example.", "t.example."], &[], &evil),
        Some(("nxdomain", Trigger::Nsdname, 1, 0))
    );
    assert_eq!(
        resolved(&r, &["q.example.", "t.example."], &[], &[]),
        Some(("nodata", Trigger::Qname, 0, 1))
    );
}

#[test]
fn cname_targets_meet_qname_triggers_only() {
    let r = rpz(&["32.1.0.0.127.rpz-client-ip CNAME .\nbad.example CNAME *.\n"]);
    let client: Option<IpAddr> = Some("127.0.0.1".parse().unwrap());
    let (q, bad, good) = (n("q.example."), n("bad.example."), n("good.example."));
    let chain = [q.as_ref(), bad.as_ref()];
    let hit = r
        .check_resolved(&chain, &[], &[], (client, usize::MAX), &mut |_| {})
        .unwrap();
    assert_eq!(
        (hit.action.label(), hit.trigger, hit.at),
        ("nodata", Trigger::Qname, 1)
    );
    // The client's address is the query's, checked once before resolution.
    let good = [q.as_ref(), good.as_ref()];
    assert!(r
        .check_resolved(&good, &[], &[], (client, usize::MAX), &mut |_| {})
        .is_none());
}

#[test]
fn later_zones_qname_triggers_wait_for_an_earlier_zones_data_triggers() {
    let r = rpz(&[
        "32.1.2.0.192.rpz-ip CNAME rpz-drop.\n",
        "ns.evil.example.rpz-nsdname CNAME .\n",
        "q.example CNAME *.\n32.1.0.0.127.rpz-client-ip CNAME rpz-tcp-only.\n",
    ]);
    // An A question may meet zone 0's IP trigger: zones 1 and 2 wait; a TXT question
    // cannot, so zone 1's NSDNAME trigger is the first that makes zone 2 wait.
    assert_eq!(r.waits_from(true), 1);
    assert_eq!(r.waits_from(false), 2);
    assert_eq!(rpz(&["q.example CNAME .\n"]).waits_from(true), 1);
    let q = n("q.example.");
    assert!(r.check_before(q.as_ref(), None, 1, &mut |_| {}).is_none());
    assert_eq!(
        r.check_before(q.as_ref(), None, 3, &mut |_| {})
            .unwrap()
            .zone,
        2
    );
    let chain = [q.as_ref()];
    let evil = [server("ns.evil.example.", &[], 0)];
    let ip: Vec<IpAddr> = vec!["192.0.2.1".parse().unwrap()];
    let check = |addrs: &[IpAddr], servers: &[NameServer], client: Option<&str>| {
        let client = client.map(|c| c.parse().unwrap());
        r.check_resolved(&chain, addrs, servers, (client, 1), &mut |_| {})
            .map(|h| (h.zone, h.trigger))
    };
    assert_eq!(check(&ip, &[], None), Some((0, Trigger::Ip)));
    assert_eq!(check(&[], &evil, None), Some((1, Trigger::Nsdname)));
    assert_eq!(check(&[], &[], None), Some((2, Trigger::Qname)));
    assert_eq!(
        check(&[], &[], Some("127.0.0.1")),
        Some((2, Trigger::ClientIp))
    );
    // What was met before the cache (a PASSTHRU, at the resolution's end) is seen again,
    // uncounted.
    let hits = r.zones()[2].hits();
    assert!(r.decided_before(q.as_ref(), None, 3));
    assert!(!r.decided_before(q.as_ref(), None, 2));
    assert_eq!(r.zones()[2].hits(), hits);
}

#[test]
fn ns_triggers_change_by_ixfr() {
    let r = rpz(&["ns.evil.example.rpz-nsdname CNAME .\n"]);
    let z = &r.zones()[0];
    let owner = n("ns.evil.example.rpz-nsdname.z0.rpz.");
    let nsip = n("32.9.2.0.192.rpz-nsip.z0.rpz.");
    let root = [0u8];
    let changes = [
        Change {
            add: false,
            owner: owner.as_ref(),
            rtype: RType::CNAME,
            ttl: 60,
            rdata: &root,
        },
        Change {
            add: true,
            owner: nsip.as_ref(),
            rtype: RType::CNAME,
            ttl: 60,
            rdata: &root,
        },
    ];
    let next = z.patched(changes, 8).unwrap();
    assert_eq!(next.ns_triggers(), (0, 0, 1));
    assert_eq!(z.ns_triggers(), (1, 0, 0));
    let r = Rpz::new(vec![Arc::new(next)]);
    let servers = [server("ns.evil.example.", &["192.0.2.9"], 0)];
    assert_eq!(
        resolved(&r, &["q.example."], &[], &servers).unwrap().1,
        Trigger::Nsip
    );
}

#[test]
fn a_bare_nsdname_label_is_an_error() {
    let e = zone(
        "rpz.test.",
        Override::Given,
        &format!("{APEX}rpz-nsdname CNAME .\n"),
    );
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("NSDNAME trigger without a name"));
}

#[test]
fn name_servers_come_from_the_cache_above_each_name_but_the_top_level() {
    use crate::cache::{Cache, Rank};
    use crate::validate::Stamp;
    let c = Cache::new(1 << 20, 0, 86400, 3600);
    let put = |owner: &str, rtype, rank, rdatas: &[Vec<u8>]| {
        let rd = rdatas.iter().map(|r| &r[..]);
        assert!(c.insert_rrset(
            n(owner).as_ref(),
            rtype,
            rank,
            60,
            rd,
            &[],
            Stamp::UNCHECKED,
            0
        ));
    };
    let wire = |s: &str| n(s).as_ref().as_wire().to_vec();
    // The TLD's servers (one label: left out with min-ns-dots 1), a referral's NS set with
    // glue, and a second-level zone's own NS set.
    put("test.", RType::NS, Rank::Referral, &[wire("ns.test.")]);
    put(
        "ns.test.",
        RType::A,
        Rank::Additional,
        &[vec![127, 0, 0, 92]],
    );
    let ns_set = [wire("z.example-host.test."), wire("a.example-host.test.")];
    put("evil.test.", RType::NS, Rank::Referral, &ns_set);
    put(
        "a.example-host.test.",
        RType::A,
        Rank::Additional,
        &[vec![192, 0, 2, 1]],
    );
    let v6 = vec![0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    put("a.example-host.test.", RType::AAAA, Rank::Additional, &[v6]);
    put(
        "sub.www.evil.test.",
        RType::NS,
        Rank::AuthAuthority,
        &[wire("ns.sub.test.")],
    );
    let chain = [n("x.sub.www.evil.test."), n("alias.test.")];
    let refs: Vec<_> = chain.iter().map(|c| c.as_ref()).collect();
    let got = name_servers(&c, &refs, 1_000, MIN_NS_DOTS);
    let names: Vec<(String, usize, usize)> = got
        .iter()
        .map(|s| (s.name.to_string(), s.addresses.len(), s.at))
        .collect();
    // The closest cut first; within a set, the smallest name first; no addresses known
    // for ns.sub.test.; nothing for `test.` itself or for alias.test. (no cut below test.).
    assert_eq!(
        names,
        [
            ("ns.sub.test.".to_string(), 0, 0),
            ("a.example-host.test.".to_string(), 2, 0),
            ("z.example-host.test.".to_string(), 0, 0),
        ]
    );
    // min-ns-dots 0: the TLD's servers too, for both names.
    let all = name_servers(&c, &refs, 1_000, 0);
    assert!(all.iter().any(|s| s.name == n("ns.test.") && s.at == 1));
    assert_eq!(all.iter().filter(|s| s.name == n("ns.test.")).count(), 2);
    // Expired sets are not used.
    assert!(name_servers(&c, &refs, 61_000, MIN_NS_DOTS).is_empty());
}
