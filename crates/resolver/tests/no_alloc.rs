//! The cache-hit path must not touch the heap: a counting global
//! allocator sees zero allocations across thousands of cached answers of every kind, with
//! and without DO (a DO client also gets the RRSIGs and NSEC proofs kept with each set),
//! and each plain hit takes exactly one shard lock.

use std::net::SocketAddr;
use std::sync::Arc;

use shardns_resolver::{CacheAnswer, Config, Engine, Event, Hints, Resolver};
use shardns_testkit::CountingAlloc;
use shardns_wire::{Class, MessageWriter, Name, RType, Rcode, Section};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

/// The RDATA of an RRSIG by `example.` covering `covered` (not a valid signature: the
/// test world has no trust anchor, so nothing is verified; the records are only kept).
fn rrsig(covered: RType, labels: u8) -> Vec<u8> {
    let mut rd = covered.0.to_be_bytes().to_vec();
    rd.extend_from_slice(&[13, labels]);
    for v in [3600u32, 2_000_000_000, 1_600_000_000] {
        rd.extend_from_slice(&v.to_be_bytes());
    }
    rd.extend_from_slice(&12345u16.to_be_bytes());
    rd.extend_from_slice(n("example.").as_wire());
    rd.extend_from_slice(&[0x5a; 64]);
    rd
}

/// A root server that is authoritative for everything it is asked, and "signs" it.
fn respond(query: &[u8]) -> Vec<u8> {
    shardns_testkit::reply(query, true, |question, w, h| {
        let www = n("www.example.");
        let sig = |w: &mut MessageWriter<'_>, section, owner: &Name, t: RType| {
            w.put_record(
                section,
                owner.as_ref(),
                RType::RRSIG,
                Class::IN,
                3600,
                &rrsig(t, 2),
            )
            .unwrap()
        };
        let a = |w: &mut MessageWriter<'_>| {
            w.put_record(
                Section::Answer,
                www.as_ref(),
                RType::A,
                Class::IN,
                3600,
                &[192, 0, 2, 1],
            )
            .unwrap();
            sig(w, Section::Answer, &www, RType::A);
        };
        match question.qname.to_string().as_str() {
            "www.example." => a(w),
            "alias.example." => {
                w.put_record(
                    Section::Answer,
                    n("alias.example.").as_ref(),
                    RType::CNAME,
                    Class::IN,
                    3600,
                    www.as_wire(),
                )
                .unwrap();
                sig(w, Section::Answer, &n("alias.example."), RType::CNAME);
                a(w);
            }
            _ => {
                let mut soa = n("ns.example.").as_wire().to_vec();
                soa.extend_from_slice(n("host.example.").as_wire());
                for v in [1u32, 7200, 900, 86400, 600] {
                    soa.extend_from_slice(&v.to_be_bytes());
                }
                w.put_record(
                    Section::Authority,
                    n("example.").as_ref(),
                    RType::SOA,
                    Class::IN,
                    3600,
                    &soa,
                )
                .unwrap();
                sig(w, Section::Authority, &n("example."), RType::SOA);
                let mut nsec = n("www.example.").as_wire().to_vec();
                nsec.extend_from_slice(&[0, 1, 0x40]);
                let owner = n("mx.example.");
                w.put_record(
                    Section::Authority,
                    owner.as_ref(),
                    RType::NSEC,
                    Class::IN,
                    3600,
                    &nsec,
                )
                .unwrap();
                sig(w, Section::Authority, &owner, RType::NSEC);
                h.set_rcode(Rcode::NXDOMAIN);
            }
        }
    })
}

fn fill(resolver: &Arc<Resolver>) {
    let mut engine = Engine::new(Arc::clone(resolver), [1; 32]);
    for q in ["www.example.", "alias.example.", "nx.example."] {
        engine.resolve(n(q).as_ref(), RType::A, 0);
        let mut done = false;
        while let Some(ev) = engine.poll() {
            match ev {
                Event::Transmit(t) => {
                    let server: SocketAddr = t.server;
                    engine.handle_response(t.query, server, &respond(t.payload()), 5);
                }
                Event::Done(..) => done = true,
                Event::Close(_) => {}
            }
        }
        assert!(done, "{q} resolved");
    }
}

#[test]
fn cache_hits_do_not_allocate() {
    let mut config = Config::default();
    // Validation on, but the fake root is unsigned: no trust anchor, so every answer is
    // insecure (the hit path still checks each set's security).
    config.trust_anchors = shardns_resolver::TrustAnchors::none();
    config.hints = Hints::parse(". NS a.root.\na.root. A 127.0.0.1@5300\n").unwrap();
    config.qname_minimisation = false;
    config.ipv6 = false;
    let resolver = Arc::new(Resolver::new(config));
    fill(&resolver);
    let cache = resolver.cache();
    // (question, rcode, locks, answer records and authority records without DO, with DO)
    let questions = [
        (
            n("www.example."),
            RType::A,
            Rcode::NOERROR,
            1,
            [(1, 0), (2, 0)],
        ),
        (
            n("WWW.EXAMPLE."),
            RType::A,
            Rcode::NOERROR,
            1,
            [(1, 0), (2, 0)],
        ),
        (
            n("alias.example."),
            RType::A,
            Rcode::NOERROR,
            2,
            [(2, 0), (4, 0)],
        ),
        (
            n("nx.example."),
            RType::AAAA,
            Rcode::NXDOMAIN,
            1,
            [(0, 1), (0, 4)],
        ),
    ];
    let mut buf = [0u8; 1232];
    let locks_before = cache.lock_acquisitions();
    let mut locks = 0u64;
    let ((), allocations) = GLOBAL.count(|| {
        for i in 0..10_000u64 {
            for (qname, qtype, want, want_locks, want_counts) in &questions {
                for dnssec_ok in [false, true] {
                    let mut w = MessageWriter::new(&mut buf, 1232);
                    w.put_question(qname.as_ref(), *qtype, Class::IN).unwrap();
                    let now = 1_000 + i;
                    match cache.answer_query(qname.as_ref(), *qtype, now, false, dnssec_ok, &mut w)
                    {
                        CacheAnswer::Hit {
                            rcode,
                            truncated: false,
                            locks: l,
                            ..
                        } => {
                            assert_eq!(rcode, *want);
                            assert_eq!(l, *want_locks);
                            let counts = (w.count(Section::Answer), w.count(Section::Authority));
                            assert_eq!(counts, want_counts[usize::from(dnssec_ok)], "{qname}");
                            locks += u64::from(l);
                        }
                        other => panic!("{qname}: {other:?}"),
                    }
                }
            }
        }
    });
    assert_eq!(allocations, 0, "allocations on the cache-hit path");
    assert_eq!(cache.lock_acquisitions() - locks_before, locks);
}

/// A policy zone check (what the answer path does with RPZ configured) does not touch the
/// heap, whether a trigger matches or not: exact and wildcard names, client prefixes, the
/// special actions, local data written and a CNAME built.
#[test]
fn policy_checks_do_not_allocate() {
    use shardns_resolver::{PolicyAction, PolicyOverride, PolicyZoneBuilder, Rpz};
    let mut b = PolicyZoneBuilder::new(n("rpz.test."), PolicyOverride::Given, true);
    let cname = |t: &str| n(t).as_wire().to_vec();
    let records: [(&str, RType, Vec<u8>); 6] = [
        ("bad.example.rpz.test.", RType::CNAME, cname(".")),
        ("*.wild.example.rpz.test.", RType::CNAME, cname("*.")),
        ("ld.example.rpz.test.", RType::A, vec![192, 0, 2, 50]),
        ("go.example.rpz.test.", RType::CNAME, cname("garden.test.")),
        (
            "*.sub.example.rpz.test.",
            RType::CNAME,
            cname("*.garden.test."),
        ),
        (
            "24.0.2.0.192.rpz-client-ip.rpz.test.",
            RType::CNAME,
            cname("rpz-drop."),
        ),
    ];
    for (owner, rtype, rdata) in &records {
        b.add(n(owner).as_ref(), *rtype, 60, rdata, 0).unwrap();
    }
    let rpz = Rpz::new(vec![Arc::new(b.finish())]);
    let names: Vec<Name> = [
        "bad.example.",
        "x.y.wild.example.",
        "ld.example.",
        "go.example.",
        "a.sub.example.",
        "www.example.",
        "deep.name.under.nothing.test.",
    ]
    .iter()
    .map(|s| n(s))
    .collect();
    let clients: [Option<std::net::IpAddr>; 3] = [
        None,
        Some("192.0.2.9".parse().unwrap()),
        Some("198.51.100.1".parse().unwrap()),
    ];
    let mut buf = vec![0u8; 1232];
    let mut hits = 0;
    let ((), allocations) = GLOBAL.count(|| {
        for _ in 0..500 {
            for name in &names {
                for &client in &clients {
                    let Some(hit) = rpz.check(name.as_ref(), client, &mut |_| {}) else {
                        continue;
                    };
                    hits += 1;
                    let mut w = MessageWriter::new(&mut buf, 1232);
                    match hit.action {
                        PolicyAction::Data(d) => {
                            d.write(name.as_ref(), RType::A, &mut w).unwrap();
                        }
                        PolicyAction::Cname(target, _) => assert!(!target.as_ref().is_root()),
                        _ => {}
                    }
                }
            }
        }
    });
    assert_eq!(hits, 500 * (5 * 2 + 7));
    assert_eq!(allocations, 0, "policy checks allocated");
}

/// Serve-stale on the hit path (`Resolver::answer_stale`, issue 30): in a question's
/// failure-recheck window its stale answer is written without touching the heap.
#[test]
fn stale_answers_on_the_hit_path_do_not_allocate() {
    let mut config = Config::default();
    config.trust_anchors = shardns_resolver::TrustAnchors::none();
    config.hints = Hints::parse(". NS a.root.\na.root. A 127.0.0.1@5300\n").unwrap();
    config.qname_minimisation = false;
    config.ipv6 = false;
    config.serve_stale = true;
    let resolver = Arc::new(Resolver::new(config));
    fill(&resolver);
    // Past the TTLs (3600 s), the root refuses: each resolution fails and is answered
    // stale, which opens the failure-recheck window.
    let later = 3_700_000;
    let mut engine = Engine::new(Arc::clone(&resolver), [2; 32]);
    let questions = [
        ("www.example.", 1),
        ("alias.example.", 2),
        ("nx.example.", 1),
    ];
    for (q, _) in questions {
        engine.resolve(n(q).as_ref(), RType::A, later);
        while let Some(ev) = engine.poll() {
            if let Event::Transmit(t) = ev {
                let refused = shardns_testkit::reply(t.payload(), false, |_, _, h| {
                    h.set_rcode(Rcode::REFUSED);
                });
                engine.handle_response(t.query, t.server, &refused, later + 1);
            }
        }
    }
    let mut buf = [0u8; 1232];
    let names: Vec<(Name, u32)> = questions.iter().map(|&(q, l)| (n(q), l)).collect();
    let ((), allocations) = GLOBAL.count(|| {
        for i in 0..10_000u64 {
            for (qname, want_locks) in &names {
                let q = qname;
                let mut w = MessageWriter::new(&mut buf, 1232);
                w.put_question(qname.as_ref(), RType::A, Class::IN).unwrap();
                let now = later + 2 + i;
                match resolver.answer_stale(qname.as_ref(), RType::A, now, (false, true), &mut w) {
                    CacheAnswer::Hit {
                        locks,
                        ede: Some(ede),
                        ..
                    } => {
                        assert_eq!(locks, *want_locks, "{q}");
                        assert!(ede.code == 3 || ede.code == 19, "{q}: {ede:?}");
                    }
                    other => panic!("{q}: {other:?}"),
                }
            }
        }
    });
    assert_eq!(allocations, 0, "allocations on the stale hit path");
}
