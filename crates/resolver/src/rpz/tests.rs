use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use shardns_wire::{MessageWriter, Name, RType, Section};
use shardns_zone::scan::{scan_text, ScanOptions};

use super::*;

pub(super) fn zone(origin: &str, policy: Override, text: &str) -> Result<PolicyZone, crate::Error> {
    let origin: Name = origin.parse().unwrap();
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("test.rpz"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    let mut b = PolicyZoneBuilder::new(origin, policy, true);
    for chunk in &scanned.chunks {
        for item in &chunk.items {
            b.add(
                chunk.owner(item),
                item.rtype,
                item.ttl,
                chunk.rdata(item),
                item.line as usize,
            )?;
        }
    }
    Ok(b.finish())
}

pub(super) const APEX: &str = "$TTL 60\n@ SOA ns. admin. 7 1 1 1 1\n@ NS ns.\n";

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

/// The action label, the trigger and the zone index of the applied hit.
fn check(rpz: &Rpz, qname: &str, client: Option<&str>) -> Option<(&'static str, Trigger, usize)> {
    let client: Option<IpAddr> = client.map(|c| c.parse().unwrap());
    rpz.check(n(qname).as_ref(), client, &mut |_| {})
        .map(|h| (h.action.label(), h.trigger, h.zone))
}

fn one(text: &str) -> Rpz {
    Rpz::new(vec![Arc::new(
        zone("rpz.test.", Override::Given, &format!("{APEX}{text}")).unwrap(),
    )])
}

#[test]
fn special_cnames_are_actions_and_apex_is_not_policy() {
    let rpz = one(
        "nx.example CNAME .\nnd.example CNAME *.\npass.example CNAME rpz-passthru.\n\
         drop.example CNAME rpz-drop.\ntcp.example CNAME rpz-tcp-only.\n",
    );
    let z = &rpz.zones()[0];
    assert_eq!(z.serial(), 7);
    assert_eq!(z.triggers(), (5, 0, 0, 0));
    for (q, label) in [
        ("nx.example.", "nxdomain"),
        ("NX.Example.", "nxdomain"),
        ("nd.example.", "nodata"),
        ("pass.example.", "passthru"),
        ("drop.example.", "drop"),
        ("tcp.example.", "tcp-only"),
    ] {
        assert_eq!(check(&rpz, q, None).map(|h| h.0), Some(label), "{q}");
    }
    // The apex's own name is no trigger, nor are names below a trigger.
    assert!(check(&rpz, "rpz.test.", None).is_none());
    assert!(check(&rpz, "www.nx.example.", None).is_none());
    assert!(check(&rpz, "example.", None).is_none());
    assert_eq!(z.hits()[0], 2);
}

#[test]
fn exact_names_before_wildcards_and_closest_wildcard_first() {
    let rpz = one("*.example CNAME .\nwww.example CNAME rpz-passthru.\n\
         *.deep.example CNAME *.\n");
    assert_eq!(check(&rpz, "a.example.", None).unwrap().0, "nxdomain");
    assert_eq!(check(&rpz, "a.b.example.", None).unwrap().0, "nxdomain");
    assert_eq!(check(&rpz, "www.example.", None).unwrap().0, "passthru");
    assert_eq!(check(&rpz, "x.deep.example.", None).unwrap().0, "nodata");
    // BIND: `*.example` does not match `example` itself.
    assert!(check(&rpz, "example.", None).is_none());
}

#[test]
fn local_data_merges_by_owner_and_writes_only_the_asked_type() {
    let rpz = one(
        "ld.example A 192.0.2.1\nother.example TXT \"x\"\nld.example A 192.0.2.2\n\
         ld.example AAAA 2001:db8::1\n*.w.example A 192.0.2.9\n",
    );
    let hit = rpz
        .check(n("ld.example.").as_ref(), None, &mut |_| {})
        .unwrap();
    let Action::Data(data) = hit.action else {
        panic!("{hit:?}")
    };
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    let owner = n("ld.example.");
    assert_eq!(data.write(owner.as_ref(), RType::A, &mut w), Ok(2));
    assert_eq!(data.write(owner.as_ref(), RType::AAAA, &mut w), Ok(1));
    assert_eq!(data.write(owner.as_ref(), RType::MX, &mut w), Ok(0));
    assert_eq!(w.count(Section::Answer), 3);
    assert_eq!(check(&rpz, "q.w.example.", None).unwrap().0, "local-data");
}

#[test]
fn cname_targets_plain_and_wildcard() {
    let rpz = one("a.example CNAME garden.test.\n*.b.example CNAME *.garden.test.\n");
    let target = |q: &str| match rpz.check(n(q).as_ref(), None, &mut |_| {}) {
        Some(Hit {
            action: Action::Cname(t, ttl),
            ..
        }) => (t.as_ref().to_name().to_string(), ttl),
        other => panic!("{other:?}"),
    };
    assert_eq!(target("a.example."), ("garden.test.".into(), 60));
    assert_eq!(
        target("x.b.example."),
        ("x.b.example.garden.test.".into(), 60)
    );
}

#[test]
fn client_ip_triggers_longest_prefix_and_before_qname() {
    let rpz = one(
        "24.0.2.0.192.rpz-client-ip CNAME .\n32.7.2.0.192.rpz-client-ip CNAME rpz-passthru.\n\
         48.zz.db8.2001.rpz-client-ip CNAME rpz-drop.\n128.1.zz.rpz-client-ip CNAME *.\n\
         blocked.example CNAME rpz-tcp-only.\n",
    );
    assert_eq!(rpz.zones()[0].triggers(), (1, 0, 4, 0));
    let c = |ip| check(&rpz, "blocked.example.", Some(ip)).map(|h| (h.0, h.1));
    assert_eq!(c("192.0.2.1"), Some(("nxdomain", Trigger::ClientIp)));
    assert_eq!(c("::ffff:192.0.2.1"), Some(("nxdomain", Trigger::ClientIp)));
    assert_eq!(c("192.0.2.7"), Some(("passthru", Trigger::ClientIp)));
    assert_eq!(c("2001:db8::5"), Some(("drop", Trigger::ClientIp)));
    assert_eq!(c("::1"), Some(("nodata", Trigger::ClientIp)));
    assert_eq!(c("192.0.3.1"), Some(("tcp-only", Trigger::Qname)));
    assert!(check(&rpz, "other.example.", Some("192.0.3.1")).is_none());
}

#[test]
fn bad_triggers_and_conflicts_are_errors_with_lines() {
    for (text, want) in [
        (
            "24.0.2.0.300.rpz-client-ip CNAME .\n",
            "bad address trigger",
        ),
        ("24.1.2.0.192.rpz-client-ip CNAME .\n", "past the prefix"),
        (
            "x.example CNAME .\nx.example A 192.0.2.1\n",
            "special CNAME",
        ),
        (
            "x.example CNAME a.test.\nx.example A 192.0.2.1\n",
            "a CNAME and other",
        ),
    ] {
        let e = zone("rpz.test.", Override::Given, &format!("{APEX}{text}")).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains(want) && (s.contains(":4:") || s.contains(":5:")),
            "{s}"
        );
    }
}

#[test]
fn zones_in_order_overrides_and_counters() {
    let text = format!("{APEX}a.example CNAME .\nb.example A 192.0.2.1\n");
    let first = zone("one.test.", Override::Disabled, &text).unwrap();
    let second = zone("two.test.", Override::Nodata, &text).unwrap();
    let third = zone(
        "three.test.",
        Override::Cname(n("walled.test.")),
        &format!("{APEX}c.example CNAME rpz-drop.\n"),
    )
    .unwrap();
    let rpz = Rpz::new(vec![Arc::new(first), Arc::new(second), Arc::new(third)]);
    let mut seen = Vec::new();
    let hit = rpz
        .check(n("a.example.").as_ref(), None, &mut |h| {
            seen.push((h.zone, h.applied))
        })
        .unwrap();
    // The disabled zone's hit is seen (to log), the second zone's override applies.
    assert_eq!(seen, vec![(0, false), (1, true)]);
    assert_eq!((hit.zone, hit.action.label()), (1, "nodata"));
    assert_eq!(check(&rpz, "c.example.", None).unwrap().0, "cname");
    assert_eq!(rpz.zones()[0].hits()[7], 1);
    assert_eq!(rpz.zones()[1].hits()[1], 1);
    assert_eq!(rpz.zones()[2].hits()[6], 1);
}

fn by_answer(rpz: &Rpz, addrs: &[&str]) -> Option<(&'static str, Trigger, usize)> {
    let addrs: Vec<IpAddr> = addrs.iter().map(|a| a.parse().unwrap()).collect();
    rpz.check_resolved(
        &[n("q.example.").as_ref()],
        &addrs,
        &[],
        (None, 0),
        &mut |_| {},
    )
    .map(|h| (h.action.label(), h.trigger, h.zone))
}

#[test]
fn answer_ip_triggers_take_the_longest_prefix_of_any_address() {
    let first = zone(
        "one.test.",
        Override::Given,
        &format!(
            "{APEX}24.0.2.0.192.rpz-ip CNAME .\n32.9.2.0.192.rpz-ip CNAME *.\n\
             64.zz.db8.2001.rpz-ip A 192.0.2.200\n"
        ),
    )
    .unwrap();
    let second = zone(
        "two.test.",
        Override::Given,
        &format!("{APEX}8.0.0.0.198.rpz-ip CNAME rpz-drop.\n"),
    )
    .unwrap();
    let rpz = Rpz::new(vec![Arc::new(first), Arc::new(second)]);
    assert!(rpz.has_answer_triggers());
    assert_eq!(rpz.zones()[0].triggers(), (0, 0, 0, 3));
    assert_eq!(
        by_answer(&rpz, &["192.0.2.1"]),
        Some(("nxdomain", Trigger::Ip, 0))
    );
    // Of two addresses, the one under the longer prefix decides.
    assert_eq!(
        by_answer(&rpz, &["192.0.2.1", "192.0.2.9"]).unwrap().0,
        "nodata"
    );
    assert_eq!(by_answer(&rpz, &["2001:db8::7"]).unwrap().0, "local-data");
    // The first zone's match wins over the second's, whatever the order of the addresses.
    assert_eq!(
        by_answer(&rpz, &["198.51.100.1", "192.0.2.1"]),
        Some(("nxdomain", Trigger::Ip, 0))
    );
    assert_eq!(by_answer(&rpz, &["198.51.100.1"]).unwrap().1, Trigger::Ip);
    assert!(by_answer(&rpz, &["203.0.113.1"]).is_none());
    assert!(!one("x.example CNAME .\n").has_answer_triggers());
}

#[test]
fn a_big_zone_stays_compact() {
    let mut b = PolicyZoneBuilder::new(n("rpz.test."), Override::Given, false);
    let rdata = [0u8];
    for i in 0..100_000u32 {
        let owner: Name = format!("host{i}.example{}.rpz.test.", i % 100)
            .parse()
            .unwrap();
        b.add(owner.as_ref(), RType::CNAME, 60, &rdata, 0).unwrap();
    }
    let z = b.finish();
    assert_eq!(z.triggers().0, 100_000);
    // About 24 octets of name and 9 of index per trigger.
    assert!(z.memory() < 100_000 * 48, "{}", z.memory());
    let rpz = Rpz::new(vec![Arc::new(z)]);
    assert!(check(&rpz, "host99999.example99.", None).is_some());
    assert!(check(&rpz, "host99999.example98.", None).is_none());
}

/// An IXFR change of `owner` (relative to `rpz.test.`).
fn change<'a>(add: bool, owner: &'a Name, rtype: RType, rdata: &'a [u8]) -> Change<'a> {
    Change {
        add,
        owner: owner.as_ref(),
        rtype,
        ttl: 60,
        rdata,
    }
}

#[test]
fn an_ixfr_patch_changes_the_triggers_it_names_and_leaves_the_old_version() {
    let old = zone(
        "rpz.test.",
        Override::Given,
        &format!(
            "{APEX}nx.example CNAME .\na.example A 192.0.2.1\na.example A 192.0.2.2\n\
             *.w.example CNAME .\nkeep.example CNAME rpz-drop.\n"
        ),
    )
    .unwrap();
    let (nx, a, w, new, client) = (
        n("nx.example.rpz.test."),
        n("a.example.rpz.test."),
        n("*.w.example.rpz.test."),
        n("new.example.rpz.test."),
        n("32.7.2.0.192.rpz-client-ip.rpz.test."),
    );
    let (root, star, drop) = (n("."), n("*."), n("rpz-drop."));
    let changes = [
        change(false, &nx, RType::CNAME, root.as_wire()),
        change(true, &nx, RType::CNAME, star.as_wire()),
        change(false, &a, RType::A, &[192, 0, 2, 1]),
        change(false, &w, RType::CNAME, root.as_wire()),
        change(true, &new, RType::CNAME, drop.as_wire()),
        change(true, &client, RType::CNAME, root.as_wire()),
    ];
    let next = old.patched(changes, 8).unwrap();
    assert_eq!(next.serial(), 8);
    assert_eq!(next.triggers(), (4, 0, 1, 0));
    let (old, next) = (
        Rpz::new(vec![Arc::new(old)]),
        Rpz::new(vec![Arc::new(next)]),
    );
    assert_eq!(check(&old, "nx.example.", None).unwrap().0, "nxdomain");
    assert_eq!(check(&next, "nx.example.", None).unwrap().0, "nodata");
    assert_eq!(check(&old, "x.w.example.", None).unwrap().0, "nxdomain");
    assert!(check(&next, "x.w.example.", None).is_none());
    assert!(check(&old, "new.example.", None).is_none());
    assert_eq!(check(&next, "new.example.", None).unwrap().0, "drop");
    assert_eq!(check(&next, "keep.example.", None).unwrap().0, "drop");
    assert_eq!(
        check(&next, "other.", Some("192.0.2.7")).unwrap().1,
        Trigger::ClientIp
    );
    // The local data left at a.example: one A record.
    let Some(Hit {
        action: Action::Data(data),
        ..
    }) = next.check(n("a.example.").as_ref(), None, &mut |_| {})
    else {
        panic!("a.example. is local data");
    };
    let recs = data.records(n("a.example.").as_ref(), RType::A);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].rdata, [192, 0, 2, 2]);
    // Counters are shared by the versions.
    assert_eq!(old.zones()[0].hits(), next.zones()[0].hits());
}

#[test]
fn a_bad_ixfr_patch_is_an_error_and_changes_nothing() {
    let old = zone(
        "rpz.test.",
        Override::Given,
        &format!("{APEX}nx.example CNAME .\n"),
    )
    .unwrap();
    let (nx, gone, root) = (n("nx.example.rpz.test."), n("gone.rpz.test."), n("."));
    // A deletion of a record the zone does not have: the caller transfers it whole.
    let e = old
        .patched([change(false, &gone, RType::CNAME, root.as_wire())], 8)
        .unwrap_err();
    assert!(e.to_string().contains("not in the zone"), "{e}");
    // A special CNAME with other records at one trigger.
    let e = old
        .patched([change(true, &nx, RType::A, &[192, 0, 2, 1])], 8)
        .unwrap_err();
    assert!(e.to_string().contains("special CNAME"), "{e}");
    assert_eq!(old.serial(), 7);
    assert_eq!(old.triggers(), (1, 0, 0, 0));
}

#[test]
fn an_ixfr_patch_of_a_big_zone_copies_only_the_shards_it_touches() {
    let mut b = PolicyZoneBuilder::new(n("rpz.test."), Override::Given, false);
    for i in 0..100_000u32 {
        let owner = n(&format!("host{i}.example.rpz.test."));
        b.add(owner.as_ref(), RType::CNAME, 60, &[0], 0).unwrap();
    }
    let old = b.finish();
    let owners: Vec<Name> = (0..10u32)
        .map(|i| n(&format!("host{}.example.rpz.test.", i * 7)))
        .chain((0..10u32).map(|i| n(&format!("added{i}.example.rpz.test."))))
        .collect();
    let (root, drop) = (n("."), n("rpz-drop."));
    let changes = owners.iter().enumerate().map(|(i, o)| match i < 10 {
        true => change(false, o, RType::CNAME, root.as_wire()),
        false => change(true, o, RType::CNAME, drop.as_wire()),
    });
    let next = old.patched(changes, 8).unwrap();
    assert_eq!(next.triggers().0, 100_000);
    // 20 names fall in at most 20 of the 4096 shards; the rest are the old version's.
    let copied = next.qnames.unshared_with(&old.qnames);
    assert!((1..=20).contains(&copied), "{copied}");
    let rpz = Rpz::new(vec![Arc::new(next)]);
    assert!(check(&rpz, "host7.example.", None).is_none());
    assert_eq!(check(&rpz, "added3.example.", None).unwrap().0, "drop");
    assert_eq!(check(&rpz, "host8.example.", None).unwrap().0, "nxdomain");
}

#[test]
fn a_zone_of_known_size_gets_shards_of_about_64_names() {
    let mut b = PolicyZoneBuilder::new(n("rpz.test."), Override::Given, false);
    b.reserve(100_000);
    for i in 0..100_000u32 {
        let owner = n(&format!("host{i}.example.rpz.test."));
        b.add(owner.as_ref(), RType::CNAME, 60, &[0], 0).unwrap();
    }
    let old = b.finish();
    // 100,000 / 64 rounded up to a power of two: 2,048 shards, at most 200 octets each
    // on top of the names and their index.
    assert!(old.memory() < 100_000 * 48 + 2048 * 200, "{}", old.memory());
    let (owner, root) = (n("host5.example.rpz.test."), n("."));
    let next = old
        .patched([change(false, &owner, RType::CNAME, root.as_wire())], 8)
        .unwrap();
    assert_eq!(next.qnames.unshared_with(&old.qnames), 1);
    assert_eq!(next.triggers().0, 99_999);
}
