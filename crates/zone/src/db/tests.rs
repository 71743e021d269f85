//! Tests

use super::*;
use crate::error::Error;
use crate::scan::{scan_text, Diag, ScanOptions};
use shardns_wire::{Name, RType};
use std::path::Path;

fn build(text: &str) -> Result<(Zone, Vec<Diag>), Error> {
    let origin: Name = "example.test.".parse().unwrap();
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("db.example"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    Zone::build(origin, scanned)
}

const HEAD: &str = "$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n";

#[test]
fn empty_non_terminals_and_flags() {
    let (z, w) = build(&format!(
        "{HEAD}a.b.c A 192.0.2.2\n*.w TXT x\nsub NS ns.sub\nns.sub A 192.0.2.3\n"
    ))
    .unwrap();
    assert!(w.is_empty());
    let n = |s: &str| -> Name { s.parse().unwrap() };
    let ent = z
        .find(n("b.c.example.test.").as_ref())
        .expect("empty non-terminal exists");
    assert!(ent.is_empty());
    assert_eq!(ent.parent().unwrap().name().to_string(), "c.example.test.");
    assert!(z.find(n("w.example.test.").as_ref()).unwrap().flags() & flags::WILDCARD_CHILD != 0);
    assert!(z.find(n("SUB.example.test.").as_ref()).unwrap().flags() & flags::DELEGATION != 0);
    assert!(z.find(n("ns.sub.example.test.").as_ref()).unwrap().flags() & flags::BELOW_CUT != 0);
    assert!(z.find(n("x.example.test.").as_ref()).is_none());
    assert_eq!(z.negative_ttl(), 60);
    assert_eq!(z.record_count(), 7);
}

#[test]
fn rrsets_are_sets_with_one_ttl() {
    let (z, w) = build(&format!(
        "{HEAD}a 10 A 192.0.2.9\na 20 A 192.0.2.8\na A 192.0.2.9\n"
    ))
    .unwrap();
    let a = z
        .find("a.example.test.".parse::<Name>().unwrap().as_ref())
        .unwrap();
    let set = a.rrset(RType::A).unwrap();
    assert_eq!(
        (set.len(), set.ttl),
        (2, 10),
        "duplicate dropped, first TTL kept"
    );
    assert_eq!(w.len(), 1);
    assert!(
        w[0].to_string()
            .starts_with("db.example:6: A TTL 20 differs"),
        "{}",
        w[0]
    );
}

#[test]
fn all_semantic_errors_reported_with_lines() {
    let text = "$TTL 300\n@ NS ns\nns A 192.0.2.1\nc CNAME x\nc A 192.0.2.2\nd CNAME x\nd CNAME y\nsub SOA a b 1 2 3 4 5\n";
    let e = build(text).unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("db.example:4: c.example.test.: CNAME and other data"),
        "{s}"
    );
    assert!(
        s.contains("db.example:6: d.example.test.: more than one CNAME"),
        "{s}"
    );
    assert!(
        s.contains("db.example:8: sub.example.test.: SOA record away from the zone apex"),
        "{s}"
    );
    assert!(
        s.contains("db.example: example.test.: no SOA record at the zone apex"),
        "{s}"
    );
}

#[test]
fn name_servers_without_addresses_are_warnings() {
    let (_, w) = build(
        "$TTL 300\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns\n@ NS ns.elsewhere.net.\nsub NS ns.sub\n",
    )
    .unwrap();
    let w: Vec<String> = w.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "db.example: example.test.: NS ns.example.test. has no address records (A or AAAA)",
            "db.example: sub.example.test.: NS ns.sub.example.test. has no glue (A or AAAA) \
             below the delegation",
        ]
    );
    assert!(build("$TTL 300\n@ SOA ns hostmaster 1 2 3 4 5\n")
        .unwrap_err()
        .to_string()
        .contains("no NS records"));
}

/// RFC 1034 §6.1: the EDU. zone C.ISI.EDU. serves. One of its own name servers, C.ISI.EDU.,
/// lies below the ISI.EDU. delegation, which gives glue for others but not for it.
const RFC1034_EDU: &str = include_str!("../../tests/data/rfc1034-edu.zone");

#[test]
fn rfc1034_edu_zone_loads_with_a_warning() {
    let origin: Name = "EDU.".parse().unwrap();
    let scanned = scan_text(
        RFC1034_EDU.as_bytes(),
        Path::new("edu.zone"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    let (z, w) = Zone::build(origin, scanned).unwrap();
    let w: Vec<String> = w.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "edu.zone: EDU.: NS C.ISI.EDU. has no address records (A or AAAA) in the zone: \
          it is below the delegation ISI.EDU., which gives no glue for it"
        ]
    );
    assert_eq!(z.record_count(), 25);
    let n = |s: &str| -> Name { s.parse().unwrap() };
    let isi = z.find(n("isi.edu.").as_ref()).unwrap();
    assert!(isi.flags() & flags::DELEGATION != 0);
    assert_eq!(isi.rrset(RType::NS).unwrap().len(), 3);
    assert!(z.find(n("C.ISI.EDU.").as_ref()).is_none());
}

#[test]
fn two_thread_build_matches_the_data_and_reports_lines() {
    // Enough records for the two-thread RRset build; problems in both halves.
    let mut text = String::from(HEAD);
    for i in 0..30_000 {
        text.push_str(&format!(
            "h{i} A 10.0.{}.{}\nh{i} TXT \"n{i}\"\n",
            i / 256 % 256,
            i % 256
        ));
    }
    text.push_str("c1 CNAME h1\nc1 A 192.0.2.1\n");
    let e = build(&text).unwrap_err();
    assert_eq!(e.diagnostics().len(), 1, "{e}");
    assert_eq!(e.diagnostics()[0].line, 60_005, "{e}");
    text.truncate(text.len() - "c1 A 192.0.2.1\n".len());
    text.push_str("h29999 20 A 10.9.9.9\n");
    let (z, w) = build(&text).unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].line, 60_006);
    assert_eq!(z.record_count(), 3 + 60_000 + 1 + 1);
    for i in [0usize, 14_999, 15_000, 29_999] {
        let node = z
            .find(
                format!("H{i}.example.test.")
                    .parse::<Name>()
                    .unwrap()
                    .as_ref(),
            )
            .unwrap();
        let a = node.rrset(RType::A).unwrap();
        assert_eq!(
            a.rdatas().next().unwrap(),
            &[10, 0, (i / 256 % 256) as u8, (i % 256) as u8]
        );
        let txt = node.rrset(RType::TXT).unwrap();
        assert_eq!(
            &txt.rdatas().next().unwrap()[1..],
            format!("n{i}").as_bytes()
        );
    }
    let h = z
        .find("h29999.example.test.".parse::<Name>().unwrap().as_ref())
        .unwrap();
    assert_eq!(h.rrset(RType::A).unwrap().len(), 2);
    let c = z
        .find("c1.example.test.".parse::<Name>().unwrap().as_ref())
        .unwrap();
    assert!(c.flags() & flags::CNAME != 0);
}

#[test]
fn two_thread_build_with_duplicates_and_owners_seen_again() {
    // Duplicates in the first half: its part writes less rdata than its slice holds, and
    // the second part's rdata is moved down over the gap. Owners seen again further on,
    // out of order, are found again while interning (not made twice).
    // Long TXT records, so that the zone keeps its five arrays (not packed).
    // Without owners seen again the records come grouped by node, and are left in place.
    for again in [false, true] {
        let pad = "x".repeat(100);
        let mut text = String::from(HEAD);
        for i in 0..30_000 {
            text.push_str(&format!(
                "h{i} A 10.0.{}.{}\nh{i} TXT \"n{i}{pad}\"\n",
                i / 256 % 256,
                i % 256
            ));
            if i < 1_000 {
                text.push_str(&format!(
                    "h{i} TXT \"n{i}{pad}\"\nh{i} A 10.0.{}.{}\n",
                    i / 256 % 256,
                    i % 256
                ));
            }
        }
        if again {
            for i in (0..30_000).rev().step_by(997) {
                text.push_str(&format!("H{i} AAAA 2001:db8::{i:x}\n"));
            }
        }
        let aaaa = if again {
            (0..30_000).rev().step_by(997).count()
        } else {
            0
        };
        let (z, w) = build(&text).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(z.node_count(), 1 + 1 + 30_000);
        assert_eq!(z.record_count(), 3 + 60_000 + aaaa);
        let mut rdata = 0;
        for i in 0..30_000usize {
            let node = z
                .find(
                    format!("h{i}.example.test.")
                        .parse::<Name>()
                        .unwrap()
                        .as_ref(),
                )
                .unwrap();
            let a = node.rrset(RType::A).unwrap();
            assert_eq!(a.len(), 1, "h{i}");
            assert_eq!(
                a.rdatas().next().unwrap(),
                &[10, 0, (i / 256 % 256) as u8, (i % 256) as u8]
            );
            let txt = node.rrset(RType::TXT).unwrap();
            assert_eq!(txt.len(), 1, "h{i}");
            assert_eq!(
                &txt.rdatas().next().unwrap()[1..],
                format!("n{i}{pad}").as_bytes()
            );
            let want_aaaa = again && (29_999 - i) % 997 == 0;
            assert_eq!(node.rrset(RType::AAAA).is_some(), want_aaaa, "h{i}");
            for set in node.rrsets() {
                rdata += set.rdatas().map(|d| 2 + d.len()).sum::<usize>();
            }
        }
        for id in 0..2 {
            for set in z.node(id).rrsets() {
                rdata += set.rdatas().map(|d| 2 + d.len()).sum::<usize>();
            }
        }
        assert!(z.arrays()[1].1 > 0, "not packed");
        // No gap is left: the rdata array holds the records kept, back to back.
        assert_eq!(z.arrays()[4].1, rdata);
    }
}

#[test]
fn zone_set_picks_the_longest_apex() {
    let mk = |apex: &str| {
        let origin: Name = apex.parse().unwrap();
        let text = "$TTL 300\n@ SOA ns hostmaster 1 2 3 4 5\n@ NS ns.example.net.\n";
        let scanned = scan_text(
            text.as_bytes(),
            Path::new("z"),
            &ScanOptions::new(origin.clone()),
        )
        .unwrap();
        Zone::build(origin, scanned).unwrap().0
    };
    let set = ZoneSet::new(vec![
        mk("test."),
        mk("example.test."),
        mk("b.a.example.test."),
    ]);
    let find = |q: &str| {
        set.find(q.parse::<Name>().unwrap().as_ref())
            .map(|z| z.apex().to_string())
    };
    assert_eq!(find("x.a.example.test.").as_deref(), Some("example.test."));
    assert_eq!(
        find("x.B.A.example.test.").as_deref(),
        Some("b.a.example.test.")
    );
    assert_eq!(find("other.test.").as_deref(), Some("test."));
    assert_eq!(find("test.").as_deref(), Some("test."));
    assert_eq!(find("example.org."), None);
    assert_eq!(find("."), None);
    assert!(set
        .get("EXAMPLE.test.".parse::<Name>().unwrap().as_ref())
        .is_some());
}

#[test]
fn apexes_long_and_short_are_found_in_any_case_and_not_confused() {
    // Up to 31 octets the apex is compared in the table; longer ones through the zone.
    let short = "a.b.example.test."; // 18 octets in wire form
    let edge = "abcdefghijklmnop.example.test."; // 31
    let long = "a-label-of-some-length.another-one.example.test."; // 49
    let set = ZoneSet::from_shared(vec![tiny(short, 1), tiny(edge, 1), tiny(long, 1)]);
    for apex in [short, edge, long] {
        let upper = apex.to_ascii_uppercase();
        for q in [
            format!("www.{apex}"),
            format!("WWW.{upper}"),
            apex.to_string(),
        ] {
            let z = set.find(q.parse::<Name>().unwrap().as_ref());
            assert_eq!(
                z.map(|z| z.apex().to_string()).as_deref(),
                Some(apex),
                "{q}"
            );
        }
    }
    // Same length, other octets: not a match.
    for q in ["a.c.example.test.", "abcdefghijklmnoq.example.test."] {
        let z = set.find(q.parse::<Name>().unwrap().as_ref());
        assert!(z.is_none(), "{q}");
    }
}

/// A minimal zone at `apex` with serial `serial`.
fn tiny(apex: &str, serial: u32) -> std::sync::Arc<Zone> {
    let origin: Name = apex.parse().unwrap();
    let text = format!("$TTL 300\n@ SOA ns hostmaster {serial} 2 3 4 5\n@ NS ns.example.net.\n");
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("z"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    std::sync::Arc::new(Zone::build(origin, scanned).unwrap().0)
}

#[test]
fn a_set_of_many_zones_is_built_in_linear_work() {
    // A quadratic build (each zone compared with every zone before it) would make
    // 200 million comparisons here; a hash per apex makes one per zone at most.
    let n = 20_000;
    let zones: Vec<_> = (0..n).map(|i| tiny(&format!("z{i}.test."), 1)).collect();
    let set = ZoneSet::from_shared(zones.clone());
    assert_eq!(set.len(), n);
    let work = set.build_work();
    assert!(work.comparisons <= n as u64 / 100, "{work:?}");
    assert_eq!(work.entries_copied, 0, "built from nothing");
    for i in [0, 1, n / 2, n - 1] {
        let q: Name = format!("www.Z{i}.test.").parse().unwrap();
        assert!(std::sync::Arc::ptr_eq(
            set.get(format!("z{i}.test.").parse::<Name>().unwrap().as_ref())
                .unwrap(),
            &zones[i]
        ));
        assert_eq!(
            set.find(q.as_ref()).unwrap().apex().to_string(),
            format!("z{i}.test.")
        );
    }
    assert_eq!(set.zones().count(), n);
    // The same apex twice: the later one is kept.
    let twice = ZoneSet::from_shared(vec![tiny("a.test.", 1), tiny("A.test.", 2)]);
    assert_eq!(twice.len(), 1);
    assert_eq!(twice.zones().next().unwrap().serial(), 2);
}

#[test]
fn an_update_copies_only_the_shards_it_changes() {
    let n = 20_000;
    let set = ZoneSet::from_shared((0..n).map(|i| tiny(&format!("z{i}.test."), 1)).collect());
    let apex = |i: usize| format!("z{i}.test.").parse::<Name>().unwrap();
    let new = tiny("z7.test.", 2);
    let next = set.update([ZoneChange::Put(new.clone())]);
    // One shard holds about n / SHARDS zones: that is all the update copied.
    let work = next.build_work();
    assert!(work.entries_copied <= 2 * (n / SHARDS) as u64, "{work:?}");
    assert_eq!(next.len(), n);
    assert_eq!(next.get(apex(7).as_ref()).unwrap().serial(), 2);
    assert_eq!(
        set.get(apex(7).as_ref()).unwrap().serial(),
        1,
        "the old set is unchanged"
    );
    // Every other zone is the very same zone, not a copy.
    for i in [0, 1, 8, n - 1] {
        assert!(std::sync::Arc::ptr_eq(
            set.get(apex(i).as_ref()).unwrap(),
            next.get(apex(i).as_ref()).unwrap()
        ));
    }
    // Removing and adding, in one update.
    let later = next.update([
        ZoneChange::Remove(apex(3)),
        ZoneChange::Remove("absent.test.".parse().unwrap()),
        ZoneChange::Put(tiny("deep.sub.z3.test.", 1)),
    ]);
    assert_eq!(later.len(), n);
    assert!(later.get(apex(3).as_ref()).is_none());
    let q: Name = "www.deep.sub.z3.test.".parse().unwrap();
    assert_eq!(
        later.find(q.as_ref()).unwrap().apex().to_string(),
        "deep.sub.z3.test."
    );
    let q: Name = "www.z3.test.".parse().unwrap();
    assert!(later.find(q.as_ref()).is_none(), "z3.test. is gone");
    assert!(later.build_work().entries_copied <= 6 * (n / SHARDS) as u64);
    // Emptied, the set finds nothing.
    let empty = ZoneSet::from_shared(vec![tiny("a.test.", 1)])
        .update([ZoneChange::Remove("a.test.".parse().unwrap())]);
    assert!(empty.is_empty());
    assert!(empty
        .find("x.a.test.".parse::<Name>().unwrap().as_ref())
        .is_none());
}

fn build_example(text: &str) -> Result<(Zone, Vec<Diag>), Error> {
    let origin: Name = "example.".parse().unwrap();
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("signed"),
        &ScanOptions::new(origin.clone()),
    )
    .unwrap();
    Zone::build(origin, scanned)
}

/// The signed test zone (NSEC or NSEC3) as one record per line, minus the records `drop`
/// rejects, so a test can break it on purpose.
fn signed_text(kind: &str, drop: impl Fn(&shardns_wire::Record) -> bool) -> String {
    let text = match kind {
        "nsec" => include_str!("../../tests/data/signed-nsec.zone"),
        _ => include_str!("../../tests/data/signed-nsec3.zone"),
    };
    let (zone, warnings) = build_example(text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    zone.records()
        .filter(|r| !drop(r))
        .map(|r| format!("{r}\n"))
        .collect()
}

fn covered(r: &shardns_wire::Record) -> Option<RType> {
    (r.rtype == RType::RRSIG).then(|| RType(u16::from_be_bytes([r.rdata[0], r.rdata[1]])))
}

fn warning_texts(text: &str) -> Vec<String> {
    let (_, warnings) = build_example(text).unwrap();
    warnings.into_iter().map(|d| d.message).collect()
}

#[test]
fn signed_zones_as_signed_load_without_warnings() {
    for kind in ["nsec", "nsec3"] {
        let (zone, w) = build_example(&signed_text(kind, |_| false)).unwrap();
        assert!(zone.is_signed() && w.is_empty(), "{kind}: {w:?}");
    }
    let (zone, _) = build_example(include_str!("../../tests/data/rfc4592.zone")).unwrap();
    assert!(!zone.is_signed());
}

#[test]
fn a_missing_signature_or_nsec_is_a_warning_naming_the_records() {
    let text = signed_text("nsec", |r| {
        let owner = r.owner.to_string();
        (owner == "www.example." && covered(r) == Some(RType::A))
            || (owner == "ns2.example."
                && (r.rtype == RType::NSEC || covered(r) == Some(RType::NSEC)))
    });
    let w = warning_texts(&text);
    assert!(
        w.contains(&"www.example. A: no RRSIG covers this RRset".to_string()),
        "{w:?}"
    );
    assert!(
        w.contains(&"ns2.example.: no NSEC record at this name".to_string()),
        "{w:?}"
    );
    // ns1's NSEC pointed to ns2, which now has none: the chain is broken there.
    assert!(
        w.iter()
            .any(|m| m.starts_with("ns1.example.: NSEC does not point to secure.example.")),
        "{w:?}"
    );
}

#[test]
fn a_broken_nsec3_chain_is_a_warning() {
    // Drop one NSEC3 (and its signature): its predecessor now points at a hash that is
    // missing, and the name it matched (secure.example.) has no NSEC3.
    let victim = "044rrqcqpug5lgjem8m68pqunoaff06b.example.";
    let text = signed_text("nsec3", |r| {
        r.owner.to_string().to_ascii_lowercase() == victim
    });
    let w = warning_texts(&text);
    assert!(w.iter().any(|m| m.contains("broken NSEC3 chain")), "{w:?}");
    assert!(
        w.contains(&"secure.example.: no NSEC3 matches this name".to_string()),
        "{w:?}"
    );
}

#[test]
fn signature_times_are_checked_against_the_time_given() {
    let (zone, _) = build_example(include_str!("../../tests/data/signed-nsec.zone")).unwrap();
    // The file's signatures run from 2026-11-25 12:25:27 to 2027-11-07 17:45:27 UTC.
    assert!(zone.signature_warnings(1_800_000_000).is_empty());
    let late = zone.signature_warnings(1_900_000_000);
    assert_eq!(late.len(), 11, "ten named and a count: {late:?}");
    assert!(late[0].contains("expired at 20271107174527"), "{late:?}");
    assert!(late[10].ends_with("more expired signatures"), "{late:?}");
    let early = zone.signature_warnings(1_700_000_000);
    assert!(
        early[0].contains("not valid until 20261125122527"),
        "{early:?}"
    );
    assert!(build_example(include_str!("../../tests/data/rfc4592.zone"))
        .unwrap()
        .0
        .signature_warnings(0)
        .is_empty());
}

#[test]
fn zones_put_and_removed_in_any_order_are_all_found() {
    // Enough zones that every shard's table holds probe runs, then every third removed
    // (the entries after each move back into its slot) and some put back in another case.
    let n: usize = 6_000;
    let zones: Vec<_> = (0..n).map(|i| tiny(&format!("r{i}.test."), 1)).collect();
    let mut set = ZoneSet::from_shared(zones.clone());
    set = set.update(
        (0..n)
            .step_by(3)
            .map(|i| ZoneChange::Remove(format!("R{i}.test.").parse().unwrap())),
    );
    let removed = n.div_ceil(3);
    assert_eq!(set.len(), n - removed);
    assert_eq!(set.zones().count(), n - removed);
    for (i, z) in zones.iter().enumerate() {
        let apex: Name = format!("r{i}.test.").parse().unwrap();
        match set.get(apex.as_ref()) {
            Some(found) => {
                assert!(i % 3 != 0, "r{i} was removed");
                assert!(std::sync::Arc::ptr_eq(found, z));
            }
            None => assert!(i % 3 == 0, "r{i} lost"),
        }
    }
    // Removing what is not there changes nothing; putting back restores it.
    set = set.update([ZoneChange::Remove("r0.test.".parse().unwrap())]);
    assert_eq!(set.len(), n - removed);
    set = set.update(
        (0..n)
            .step_by(6)
            .map(|i| ZoneChange::Put(tiny(&format!("R{i}.TEST."), 2))),
    );
    assert_eq!(set.len(), n - removed + n.div_ceil(6));
    for i in 0..n {
        let q: Name = format!("www.r{i}.test.").parse().unwrap();
        let found = set.find(q.as_ref()).map(|z| z.serial());
        let want = match i {
            _ if i % 6 == 0 => Some(2),
            _ if i % 3 == 0 => None,
            _ => Some(1),
        };
        assert_eq!(found, want, "r{i}");
    }
}

/// The addresses `ZoneSet::prefetch` hints for `messages`.
fn hints_for(set: &ZoneSet, messages: &[Vec<u8>]) -> Vec<usize> {
    let hints = std::cell::RefCell::new(Vec::new());
    set.prefetch(messages.iter().map(Vec::as_slice), |p| {
        hints.borrow_mut().push(p as usize)
    });
    hints.into_inner()
}

#[test]
fn a_batch_is_prefetched_zone_header_and_data_for_each_query() {
    use shardns_testkit::query;
    let mut zones: Vec<_> = (0..1000).map(|i| tiny(&format!("z{i}.test."), 1)).collect();
    zones.push(tiny("sub.z5.test.", 1)); // a second apex depth
    let set = ZoneSet::from_shared(zones.clone());
    let sub = &zones[1000];
    let batch = vec![
        query(1, "www.z1.test.", RType::A, None),
        query(2, "Z2.TEST.", RType::MX, None),
        query(3, "x.sub.z5.test.", RType::A, None),
        query(4, "www.example.org.", RType::A, None),
    ];
    let hints = hints_for(&set, &batch);
    let header = |z: &std::sync::Arc<Zone>| std::sync::Arc::as_ptr(z) as usize;
    for z in [&zones[1], &zones[2], &zones[5], sub] {
        assert!(hints.contains(&header(z)), "{} header", z.apex());
        let (start, len) = z.arrays()[0];
        assert!(z.is_packed() && len <= 1024);
        for line in (start..start + len).step_by(64) {
            assert!(hints.contains(&line), "{} data at {line:#x}", z.apex());
        }
        assert!(hints.contains(&(start + len - 1)), "{} last line", z.apex());
    }
    for z in [&zones[0], &zones[3], &zones[999]] {
        assert!(!hints.contains(&header(z)), "{} was not queried", z.apex());
    }
    // Slot, two header lines and the data lines for each of the four zones found (z5.test.
    // is the 2-label lookup of x.sub.z5.test.); one slot for each lookup finding nothing:
    // www.z1.test. at depth 3, www.example.org. at depths 3 and 2.
    let found: usize = [&zones[1], &zones[2], &zones[5], sub]
        .iter()
        .map(|z| 3 + z.arrays()[0].1.div_ceil(64) + 1)
        .sum();
    assert_eq!(hints.len(), found + 1 + 2, "{hints:x?}");
}

#[test]
fn malformed_queries_and_empty_sets_prefetch_nothing() {
    use shardns_testkit::query;
    let set = ZoneSet::from_shared((0..100).map(|i| tiny(&format!("z{i}.test."), 1)).collect());
    let good = query(1, "www.z1.test.", RType::A, None);
    let mut two_questions = good.clone();
    two_questions[5] = 2;
    let mut compressed = good.clone();
    compressed[12] = 0xc0;
    let mut cut = good.clone();
    cut.truncate(16);
    let batch = vec![vec![], vec![0; 11], two_questions, compressed, cut];
    assert_eq!(hints_for(&set, &batch), Vec::<usize>::new());
    assert_eq!(
        hints_for(&ZoneSet::default(), std::slice::from_ref(&good)),
        vec![]
    );
    assert!(!hints_for(&set, &[good]).is_empty());
}

#[test]
fn at_most_prefetch_max_lookups_are_staged() {
    use shardns_testkit::query;
    let zones: Vec<_> = (0..200).map(|i| tiny(&format!("z{i}.test."), 1)).collect();
    let set = ZoneSet::from_shared(zones.clone());
    let batch: Vec<_> = (0..100)
        .map(|i| query(1, &format!("www.z{i}.test."), RType::A, None))
        .collect();
    let hints = hints_for(&set, &batch);
    let header = |z: &std::sync::Arc<Zone>| std::sync::Arc::as_ptr(z) as usize;
    assert!(hints.contains(&header(&zones[PREFETCH_MAX - 1])));
    assert!(!hints.contains(&header(&zones[PREFETCH_MAX])));
}

/// Every record of `text` (zone `example.`) as a compact list, in canonical order.
fn sorted_list(text: &str) -> shardns_dnssec::RecordList {
    let scanned = scan_text(
        text.as_bytes(),
        Path::new("signed"),
        &ScanOptions::new("example.".parse().unwrap()),
    )
    .unwrap();
    let mut list = shardns_dnssec::RecordList::default();
    for chunk in &scanned.chunks {
        for item in &chunk.items {
            let owner = list.push_name(chunk.owner(item));
            list.push(owner, item.rtype, item.class, item.ttl, chunk.rdata(item));
        }
    }
    list.sort();
    list
}

/// A sorted list that checks [`SortedRecords::consumed`]: nothing before the last index
/// it was given is read again.
struct Checked {
    list: shardns_dnssec::RecordList,
    consumed: usize,
    calls: usize,
}

impl Checked {
    fn at(&self, i: usize) -> &shardns_dnssec::Rr {
        assert!(
            i >= self.consumed,
            "record {i} read after {} were consumed",
            self.consumed
        );
        &self.list.items[i]
    }
}

impl SortedRecords for Checked {
    fn len(&self) -> usize {
        self.list.items.len()
    }
    fn owner(&self, i: usize) -> shardns_wire::NameRef<'_> {
        self.list.owner(self.at(i))
    }
    fn rtype(&self, i: usize) -> RType {
        self.at(i).rtype
    }
    fn ttl(&self, i: usize) -> u32 {
        self.at(i).ttl
    }
    fn rdata(&self, i: usize) -> &[u8] {
        self.list.rdata(self.at(i))
    }
    fn consumed(&mut self, i: usize) {
        assert!(i >= self.consumed && i <= self.list.items.len());
        self.consumed = i;
        self.calls += 1;
    }
}

fn node_names(z: &Zone) -> Vec<String> {
    (0..z.node_count() as NodeId)
        .map(|id| z.node(id).name().to_string())
        .collect()
}

#[test]
fn a_zone_built_from_sorted_records_is_the_one_build_makes() {
    let mut many = String::from(
        "$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n",
    );
    for i in 0..30_000 {
        many.push_str(&format!(
            "h{i} A 10.0.{}.{}\nh{i} TXT \"record {i}\"\n",
            i / 256 % 256,
            i % 256
        ));
    }
    let texts = [
        signed_text("nsec", |_| false),
        signed_text("nsec3", |_| false),
        include_str!("../../tests/data/rfc4592.zone").to_string(),
        "$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n\
         a.b.c A 192.0.2.2\n*.w TXT x\nsub NS ns.sub\nns.sub A 192.0.2.3\nd DNAME x.test.\n\
         e 10 A 192.0.2.9\ne 20 A 192.0.2.8\ne A 192.0.2.9\n"
            .to_string(),
        many,
    ];
    for text in &texts {
        let list = sorted_list(text);
        // The same records in the same order as a zone file, built the usual way.
        let sorted_text: String = list
            .items
            .iter()
            .map(|r| format!("{}\n", list.display(r)))
            .collect();
        let (want, want_w) = build_example(&sorted_text).unwrap();
        let records = list.items.len();
        let mut src = Checked {
            list,
            consumed: 0,
            calls: 0,
        };
        let (got, got_w) = Zone::build_sorted(
            "example.".parse().unwrap(),
            &mut src,
            vec!["signed".into()],
            vec![],
        )
        .unwrap();
        assert_eq!(src.consumed, records, "every record consumed at the end");
        assert!(
            src.calls > records / (1 << 16),
            "consumed in steps: {}",
            src.calls
        );
        assert_eq!(node_names(&got), node_names(&want));
        assert!(got.records().eq(want.records()));
        assert_eq!(got.is_packed(), want.is_packed());
        assert_eq!(got.is_signed(), want.is_signed());
        assert_eq!(got.arrays().map(|a| a.1), want.arrays().map(|a| a.1));
        let msgs = |w: Vec<Diag>| w.into_iter().map(|d| d.message).collect::<Vec<_>>();
        assert_eq!(msgs(got_w), msgs(want_w));
    }
}

#[test]
fn sorted_records_are_checked_as_a_zone_file_is() {
    let bad = "$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n\
               c CNAME x\nc A 192.0.2.2\nsub SOA a b 1 2 3 4 5\n";
    let e = Zone::build_sorted(
        "example.".parse().unwrap(),
        sorted_list(bad),
        vec!["z".into()],
        vec![],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("z: c.example.: CNAME and other data"), "{e}");
    assert!(
        e.contains("z: sub.example.: SOA record away from the zone apex"),
        "{e}"
    );

    // No SOA: the zone-wide checks run too.
    let e = Zone::build_sorted(
        "example.".parse().unwrap(),
        sorted_list("$TTL 300\n@ NS ns\nns A 192.0.2.1\n"),
        vec!["z".into()],
        vec![],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no SOA record"), "{e}");

    // Records of one name apart: refused, not served wrong.
    let mut list =
        sorted_list("$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n");
    let at = list.push_name("a.example.".parse::<Name>().unwrap().as_ref());
    list.push(at, RType::A, shardns_wire::Class::IN, 300, &[192, 0, 2, 7]);
    let b = list.push_name("b.example.".parse::<Name>().unwrap().as_ref());
    list.push(b, RType::A, shardns_wire::Class::IN, 300, &[192, 0, 2, 8]);
    list.push(at, RType::TXT, shardns_wire::Class::IN, 300, b"\x01x");
    let e = Zone::build_sorted("example.".parse().unwrap(), list, vec!["z".into()], vec![])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a.example.: its records do not come together"),
        "{e}"
    );

    // Bad rdata is an error, an empty source no zone.
    let mut list =
        sorted_list("$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n");
    let at = list.push_name("a.example.".parse::<Name>().unwrap().as_ref());
    list.push(at, RType::A, shardns_wire::Class::IN, 300, &[192, 0, 2]);
    let e = Zone::build_sorted("example.".parse().unwrap(), list, vec!["z".into()], vec![])
        .unwrap_err()
        .to_string();
    assert!(e.contains("z: A:"), "{e}");
    assert!(Zone::build_sorted(
        "example.".parse().unwrap(),
        shardns_dnssec::RecordList::default(),
        vec![],
        vec![]
    )
    .is_err());
}
