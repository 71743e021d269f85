//! Unit tests of the cache: hit path, lookups, negative entries, trust and eviction.

use shardns_wire::{Class, Header, Message, MessageWriter, Name, NameRef, RType, Rcode, Record};

use super::lookup::record;
use super::{negative_ttl, Cache, CacheAnswer, Lookup, Rank};
use crate::validate::Stamp;

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn soa(zone: &str, ttl: u32, minimum: u32) -> Record {
    let mut rd = n(&format!("ns.{zone}")).as_wire().to_vec();
    rd.extend_from_slice(n(&format!("host.{zone}")).as_wire());
    for v in [1u32, 3600, 600, 86400, minimum] {
        rd.extend_from_slice(&v.to_be_bytes());
    }
    Record {
        owner: n(zone),
        rtype: RType::SOA,
        class: Class::IN,
        ttl,
        rdata: rd,
    }
}

fn answer(cache: &Cache, q: &str, qtype: RType, now: u64) -> (CacheAnswer, Message) {
    let mut buf = [0u8; 1232];
    let mut w = MessageWriter::new(&mut buf, 1232);
    w.put_question(n(q).as_ref(), qtype, Class::IN).unwrap();
    let r = cache.answer(n(q).as_ref(), qtype, now, &mut w);
    let msg = w.finish(&Header::default()).to_vec();
    (r, Message::parse(&msg).unwrap())
}

/// Names are found in any case (ASCII letters only): octets that differ by 0x20 but
/// are not letters are different names.
#[test]
fn names_match_without_regard_to_case_of_letters_only() {
    let c = Cache::new(1 << 20, 0, 86400, 3600);
    let stored = NameRef::from_wire(b"\x04Ho[t\x0aExample-Zz\x00").unwrap();
    c.insert_rrset(
        stored,
        RType::A,
        Rank::AuthAnswer,
        60,
        [&[1, 2, 3, 4][..]],
        &[],
        Stamp::UNCHECKED,
        0,
    );
    for (wire, hit) in [
        (&b"\x04ho[t\x0aexample-zz\x00"[..], true),
        (b"\x04HO[T\x0aEXAMPLE-ZZ\x00", true),
        (b"\x04ho{t\x0aexample-zz\x00", false),
        (b"\x04ho[t\x0aexample\x0dzz\x00", false),
    ] {
        let name = NameRef::from_wire(wire).unwrap();
        let found = matches!(
            c.lookup(name, RType::A, Rank::Answer, 0).0,
            Lookup::Positive(_)
        );
        assert_eq!(found, hit, "{name}");
    }
    assert_eq!(c.stats().names, 1);
}

#[test]
fn hit_decrements_ttl_and_takes_one_lock() {
    let c = Cache::new(1 << 20, 0, 86400, 3600);
    let www = n("www.example.");
    c.insert_rrset(
        www.as_ref(),
        RType::A,
        Rank::AuthAnswer,
        300,
        [&[192, 0, 2, 1][..], &[192, 0, 2, 2]],
        &[],
        Stamp::UNCHECKED,
        1_000,
    );
    let (r, m) = answer(&c, "WWW.example.", RType::A, 1_000 + 100_500);
    assert_eq!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            truncated: false,
            locks: 1,
            secure: false,
            ede: None,
            prefetch: false,
        }
    );
    assert_eq!(m.answers.len(), 2);
    assert_eq!(m.answers[0].ttl, 199);
    assert_eq!(m.answers[0].owner.to_string(), "WWW.example.");
    // Expired after 300 s.
    let (r, m) = answer(&c, "www.example.", RType::A, 1_000 + 300_000);
    assert!(matches!(r, CacheAnswer::Miss { .. }));
    assert!(m.answers.is_empty());
}

#[test]
fn cname_chain_and_partial_chain_miss() {
    let c = Cache::new(1 << 20, 0, 86400, 3600);
    c.insert_rrset(
        n("a.example.").as_ref(),
        RType::CNAME,
        Rank::AuthAnswer,
        60,
        [n("b.other.").as_wire()],
        &[],
        Stamp::UNCHECKED,
        0,
    );
    let (r, m) = answer(&c, "a.example.", RType::A, 0);
    assert_eq!(r, CacheAnswer::Miss { locks: 2 });
    assert!(
        m.answers.is_empty(),
        "a partial chain leaves the writer as it was"
    );
    c.insert_rrset(
        n("b.other.").as_ref(),
        RType::A,
        Rank::AuthAnswer,
        30,
        [&[10, 0, 0, 1][..]],
        &[],
        Stamp::UNCHECKED,
        0,
    );
    let (r, m) = answer(&c, "a.example.", RType::A, 0);
    assert_eq!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            truncated: false,
            locks: 2,
            secure: false,
            ede: None,
            prefetch: false,
        }
    );
    assert_eq!(m.answers.len(), 2);
    assert_eq!(m.answers[1].owner, n("b.other."));
    // Asking for the CNAME itself does not follow it.
    let (_, m) = answer(&c, "a.example.", RType::CNAME, 0);
    assert_eq!(m.answers.len(), 1);
}

#[test]
fn negative_entries_use_soa_ttl() {
    let c = Cache::new(1 << 20, 0, 86400, 3600);
    let s = soa("example.", 900, 300);
    assert_eq!(negative_ttl(&s), 300);
    c.insert_negative(
        n("nx.example.").as_ref(),
        None,
        Some((&s).into()),
        &[],
        Rank::AuthAnswer,
        Stamp::UNCHECKED,
        0,
    );
    c.insert_negative(
        n("www.example.").as_ref(),
        Some(RType::AAAA),
        Some((&s).into()),
        &[],
        Rank::AuthAnswer,
        Stamp::UNCHECKED,
        0,
    );
    let (r, m) = answer(&c, "nx.example.", RType::MX, 10_000);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NXDOMAIN,
            ..
        }
    ));
    assert_eq!(m.authority.len(), 1);
    assert_eq!(m.authority[0].ttl, 290);
    let (r, m) = answer(&c, "www.example.", RType::AAAA, 0);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            ..
        }
    ));
    assert!(m.answers.is_empty());
    assert_eq!(m.authority[0].rtype, RType::SOA);
    assert!(matches!(
        answer(&c, "www.example.", RType::A, 0).0,
        CacheAnswer::Miss { .. }
    ));
    assert!(matches!(
        answer(&c, "nx.example.", RType::A, 300_000).0,
        CacheAnswer::Miss { .. }
    ));
    // Without an SOA nothing is cached.
    assert!(!c.insert_negative(
        n("x.example.").as_ref(),
        None,
        None,
        &[],
        Rank::AuthAnswer,
        Stamp::UNCHECKED,
        0
    ));
}

#[test]
fn glue_never_overwrites_an_answer() {
    let c = Cache::new(1 << 20, 0, 86400, 3600);
    let ns = n("ns1.example.");
    assert!(c.insert_rrset(
        ns.as_ref(),
        RType::A,
        Rank::AuthAnswer,
        3600,
        [&[192, 0, 2, 53][..]],
        &[],
        Stamp::UNCHECKED,
        0
    ));
    assert!(!c.insert_rrset(
        ns.as_ref(),
        RType::A,
        Rank::Additional,
        3600,
        [&[6, 6, 6, 6][..]],
        &[],
        Stamp::UNCHECKED,
        0
    ));
    let got = c.lookup(ns.as_ref(), RType::A, Rank::Additional, 0).0;
    assert_eq!(
        got,
        Lookup::Positive(vec![record(ns.as_ref(), RType::A, 3600, &[192, 0, 2, 53])])
    );
    // Glue alone is usable for iteration but never answers a client.
    let g = n("ns2.example.");
    c.insert_rrset(
        g.as_ref(),
        RType::A,
        Rank::Additional,
        3600,
        [&[192, 0, 2, 54][..]],
        &[],
        Stamp::UNCHECKED,
        0,
    );
    assert_eq!(
        c.lookup(g.as_ref(), RType::A, Rank::Answer, 0).0,
        Lookup::Miss
    );
    assert!(matches!(
        answer(&c, "ns2.example.", RType::A, 0).0,
        CacheAnswer::Miss { .. }
    ));
    // An authoritative answer replaces the glue.
    assert!(c.insert_rrset(
        g.as_ref(),
        RType::A,
        Rank::AuthAnswer,
        3600,
        [&[192, 0, 2, 55][..]],
        &[],
        Stamp::UNCHECKED,
        0
    ));
    assert!(matches!(
        answer(&c, "ns2.example.", RType::A, 0).0,
        CacheAnswer::Hit { .. }
    ));
}

#[test]
fn eviction_keeps_memory_bounded() {
    let budget = 64 * 4096;
    let c = Cache::new(budget, 0, 86400, 3600);
    for i in 0..20_000u32 {
        let name = n(&format!("host{i}.example."));
        c.insert_rrset(
            name.as_ref(),
            RType::A,
            Rank::AuthAnswer,
            3600,
            [&i.to_be_bytes()[..]],
            &[],
            Stamp::UNCHECKED,
            0,
        );
    }
    let s = c.stats();
    assert!(s.bytes <= budget, "{s:?}");
    assert!(s.evictions > 0);
    assert!(s.names > 500, "{s:?}");
    assert_eq!(s.records, s.names);
    // Every name still counted is still found.
    let last = n("host19999.example.");
    assert!(matches!(
        c.lookup(last.as_ref(), RType::A, Rank::Answer, 0).0,
        Lookup::Positive(_)
    ));
    c.clear();
    assert_eq!(c.stats().bytes, 0);
}

#[test]
fn bytes_per_record_is_reported() {
    let c = Cache::new(1 << 30, 0, 86400, 3600);
    for i in 0..1000u32 {
        let name = n(&format!("host{i}.example.com."));
        c.insert_rrset(
            name.as_ref(),
            RType::A,
            Rank::AuthAnswer,
            3600,
            [&i.to_be_bytes()[..]],
            &[],
            Stamp::UNCHECKED,
            0,
        );
    }
    let s = c.stats();
    assert_eq!((s.names, s.records, s.rrsets), (1000, 1000, 1000));
    let per = s.bytes / s.records;
    assert!((100..300).contains(&per), "{per} bytes per A record");
}

/// A cache holding `www.old.example.` CNAME `www.new.example.`, synthesised from the
/// DNAME `old.example.` -> `new.example.`.
fn cache_with_synthesised_cname() -> Cache {
    let c = Cache::new(1 << 20, 0, 86400, 3600);
    let dname = Record {
        owner: n("old.example."),
        rtype: RType::DNAME,
        class: Class::IN,
        ttl: 600,
        rdata: n("new.example.").as_wire().to_vec(),
    };
    c.insert_synth(
        n("www.old.example.").as_ref(),
        (dname.owner.as_ref(), &dname.rdata, dname.ttl),
        n("www.new.example.").as_ref(),
        &[],
        Rank::AuthAnswer,
        Stamp::UNCHECKED,
        0,
    );
    c
}

#[test]
fn synthesised_cname_renders_dname_first() {
    let c = cache_with_synthesised_cname();
    c.insert_rrset(
        n("www.new.example.").as_ref(),
        RType::A,
        Rank::AuthAnswer,
        600,
        [&[1, 2, 3, 4][..]],
        &[],
        Stamp::UNCHECKED,
        0,
    );
    let (r, m) = answer(&c, "www.old.example.", RType::A, 0);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            ..
        }
    ));
    let types: Vec<_> = m.answers.iter().map(|r| r.rtype).collect();
    assert_eq!(types, [RType::DNAME, RType::CNAME, RType::A]);
    match c
        .lookup(n("www.old.example.").as_ref(), RType::A, Rank::Answer, 0)
        .0
    {
        Lookup::Cname(v) => assert_eq!(v.len(), 2),
        other => panic!("{other:?}"),
    }
}

/// Found by the differential test against Unbound: a CNAME query at a name with a
/// synthesised CNAME rendered the stored DNAME owner and RDATA as if they were CNAME
/// RDATA. It must give the DNAME and the CNAME, and stop there (RFC 1034 §3.6.2).
#[test]
fn cname_query_at_a_synthesised_cname() {
    let c = cache_with_synthesised_cname();
    let (r, m) = answer(&c, "www.old.example.", RType::CNAME, 0);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            truncated: false,
            locks: 1,
            ..
        }
    ));
    let got: Vec<_> = m
        .answers
        .iter()
        .map(|r| (r.owner.to_string(), r.rtype, r.rdata.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "old.example.".to_string(),
                RType::DNAME,
                n("new.example.").as_wire().to_vec()
            ),
            (
                "www.old.example.".to_string(),
                RType::CNAME,
                n("www.new.example.").as_wire().to_vec()
            ),
        ]
    );
    match c
        .lookup(
            n("www.old.example.").as_ref(),
            RType::CNAME,
            Rank::Answer,
            0,
        )
        .0
    {
        Lookup::Positive(v) => {
            let types: Vec<_> = v.iter().map(|r| r.rtype).collect();
            assert_eq!(types, [RType::DNAME, RType::CNAME]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_set_stays_32_bytes() {
    // The security stamp, EDE code and the offset of the DNSSEC records fit in what was
    // padding: the per-set overhead of the cache did not grow.
    assert_eq!(size_of::<super::set::Set>(), 32);
}
