//! Tests of the parent DS check: the goals a rollover's keys give at each step, what meets
//! them, the push's backoff, the confirmations kept, and a DS query answered over UDP and
//! (truncated) again over TCP by a server of the test's own on loopback.

use super::task::{self, Confirmed, Goal, KeyView};
use super::*;
use shardns_dnssec::roll::{self, RollKind, RollTimings};
use shardns_dnssec::{ds_rdata, key_tag, Algorithm, KeyMeta, Role};

const T: RollTimings = RollTimings {
    dnskey_ttl: 10,
    max_ttl: 10,
    propagation: 5,
    parent_ds_ttl: 20,
    parent_propagation: 5,
    zsk_lifetime: None,
    ksk_lifetime: None,
};

fn apex() -> Name {
    "child.test.".parse().unwrap()
}

/// A CSK whose DNSKEY has `byte` as its public key's octets.
fn key(byte: u8, created: u64) -> KeyView {
    let mut dnskey = vec![1, 1, 3, 13];
    dnskey.extend([byte; 64]);
    let meta = KeyMeta {
        zone: apex(),
        role: Role::Csk,
        algorithm: Algorithm::EcdsaP256Sha256,
        tag: key_tag(&dnskey),
        created,
        publish: Some(created),
        activate: Some(created),
        inactive: None,
        delete: None,
        sync_publish: None,
        sync_delete: None,
        ds_publish: None,
    };
    KeyView { meta, dnskey }
}

fn ds(k: &KeyView, digest: DigestType) -> Vec<u8> {
    ds_rdata(apex().as_ref(), &k.dnskey, digest).unwrap()
}

fn want(keys: &[KeyView], done: &Confirmed, now: u64) -> Option<Want> {
    task::want(
        &apex(),
        keys,
        CdsPublish::Rollover,
        DigestType::Sha256,
        done,
        now,
    )
}

fn metas(keys: &[KeyView]) -> Vec<KeyMeta> {
    keys.iter().map(|k| k.meta.clone()).collect()
}

fn set_metas(keys: &mut [KeyView], metas: &[KeyMeta]) {
    for (k, m) in keys.iter_mut().zip(metas) {
        k.meta = m.clone();
    }
}

/// Through a double-DS rollover: nothing before it, the new DS while it waits (met by a
/// parent with both DS or the new alone, never by the old alone or none), nothing while it
/// runs, the old DS to be gone once the old key is withdrawn, nothing once that is noted.
#[test]
fn a_double_ds_rollover_asks_for_the_new_ds_then_the_old_ones_absence() {
    let mut keys = vec![key(1, 1000)];
    let done = Confirmed::default();
    assert_eq!(want(&keys, &done, 2000), None, "one key, no rollover");
    let (old_ds, old_ds1) = (
        ds(&keys[0], DigestType::Sha256),
        ds(&keys[0], DigestType::Sha1),
    );

    // 1. A new key waits for its DS.
    let mut new = key(2, 2000);
    roll::schedule_new(&mut new.meta, RollKind::Ksk, &T, 2000);
    keys.push(new);
    let mut m = metas(&keys);
    roll::tick(&mut m, &T, 2000);
    set_metas(&mut keys, &m);
    let w = want(&keys, &done, 2001).expect("a check");
    let new_ds = ds(&keys[1], DigestType::Sha256);
    assert_eq!(
        w.goal,
        Goal::Submit {
            tag: keys[1].meta.tag,
            dnskey: keys[1].dnskey.clone()
        }
    );
    let mut both = vec![old_ds.clone(), new_ds.clone()];
    both.sort();
    assert_eq!(w.ds, both, "the push: old and new DS");
    let a = apex();
    assert!(task::meets(&a, &w.goal, &both));
    assert!(task::meets(&a, &w.goal, std::slice::from_ref(&new_ds)));
    assert!(task::meets(
        &a,
        &w.goal,
        &[old_ds1.clone(), ds(&keys[1], DigestType::Sha384)]
    ));
    assert!(!task::meets(&a, &w.goal, std::slice::from_ref(&old_ds)));
    assert!(!task::meets(&a, &w.goal, &[]));
    // A DS with the new key's tag and a wrong digest does not count.
    let mut forged = new_ds.clone();
    *forged.last_mut().unwrap() ^= 1;
    assert!(!task::meets(&a, &w.goal, &[forged]));

    // 2. Confirmed: nothing to wait for until the old key is withdrawn.
    let mut m = metas(&keys);
    roll::confirm_ds(&mut m, None, &T, 2010).unwrap();
    roll::tick(&mut m, &T, 2010);
    set_metas(&mut keys, &m);
    let end = keys[0].meta.sync_delete.expect("the old key's end");
    assert_eq!(want(&keys, &done, 2011), None);
    assert_eq!(want(&keys, &done, end - 1), None);

    // 4. Withdrawn: the parent is to drop the old DS and keep the new.
    let w = want(&keys, &done, end).expect("a check");
    assert!(matches!(&w.goal, Goal::Withdraw { gone, .. } if gone.len() == 1));
    assert_eq!(w.ds, vec![new_ds.clone()], "the push: the new DS alone");
    assert!(task::meets(&a, &w.goal, std::slice::from_ref(&new_ds)));
    assert!(!task::meets(&a, &w.goal, &both));
    assert!(
        !task::meets(&a, &w.goal, &[old_ds1]),
        "SHA-1 DS of the old key"
    );
    assert!(
        !task::meets(&a, &w.goal, &[]),
        "no DS at all breaks the chain"
    );
    let noted = Confirmed {
        withdrawn: [keys[0].meta.tag].into(),
        insecure: false,
    };
    assert_eq!(want(&keys, &noted, end + 100), None);
}

/// With a push and nothing under way: a DS of the current key, pushed if missing.
#[test]
fn a_push_keeps_a_ds_of_the_current_key_at_the_parent() {
    let keys = vec![key(5, 1000)];
    let k = ds(&keys[0], DigestType::Sha256);
    let w = task::present(&apex(), &keys, DigestType::Sha256, 2000).expect("a check");
    assert_eq!(w.ds, vec![k.clone()]);
    assert!(task::meets(&apex(), &w.goal, std::slice::from_ref(&k)));
    assert!(!task::meets(&apex(), &w.goal, &[]), "no DS: pushed");
    let other = ds(&key(6, 1000), DigestType::Sha256);
    assert!(!task::meets(&apex(), &w.goal, std::slice::from_ref(&other)));
    assert!(
        task::meets(&apex(), &w.goal, &[other, k]),
        "another signer's DS kept"
    );
    assert_eq!(task::present(&apex(), &[], DigestType::Sha256, 2000), None);
}

#[test]
fn delete_dnssec_asks_for_no_ds_until_seen() {
    let keys = vec![key(1, 1000)];
    let k = ds(&keys[0], DigestType::Sha256);
    let w = task::want(
        &apex(),
        &keys,
        CdsPublish::DeleteDnssec,
        DigestType::Sha256,
        &Confirmed::default(),
        2000,
    )
    .expect("a check");
    assert_eq!(w.goal, Goal::Insecure);
    assert!(w.ds.is_empty(), "the push deletes the DS RRset");
    assert!(task::meets(&apex(), &w.goal, &[]));
    assert!(!task::meets(&apex(), &w.goal, &[k]));
    let seen = Confirmed {
        insecure: true,
        ..Confirmed::default()
    };
    let again = task::want(
        &apex(),
        &keys,
        CdsPublish::DeleteDnssec,
        DigestType::Sha256,
        &seen,
        2000,
    );
    assert_eq!(again, None);
}

#[test]
fn push_backoff_grows_to_the_interval() {
    assert_eq!(push::backoff(1, 3600), 120);
    assert_eq!(push::backoff(2, 3600), 240);
    assert_eq!(push::backoff(5, 3600), 1920);
    assert_eq!(push::backoff(6, 3600), 3600);
    assert_eq!(push::backoff(60, 3600), 3600);
    assert_eq!(push::backoff(1, 2), 1);
    assert_eq!(push::backoff(3, 2), 2);
}

#[test]
fn confirmations_survive_in_the_state_file() {
    let dir = std::env::temp_dir().join(format!("shardns-parent-{}", std::process::id()));
    let f = DoneFile::new(&dir, &apex());
    assert_eq!(f.read(), Confirmed::default());
    let done = Confirmed {
        withdrawn: [7, 40000].into(),
        insecure: true,
    };
    f.write(&done);
    assert_eq!(f.read(), done);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A DNS answer to `query` (its ID and question) with the DS records `ds` of the question's
/// name, AA set, TC if asked.
fn answer(query: &[u8], ds: &[Vec<u8>], tc: bool) -> Vec<u8> {
    let q = shardns_wire::Message::parse(query).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096);
    let qn = &q.questions[0];
    w.put_question(qn.qname.as_ref(), qn.qtype, shardns_wire::Class::IN)
        .unwrap();
    if !tc {
        for rdata in ds {
            w.put_record(
                shardns_wire::Section::Answer,
                qn.qname.as_ref(),
                RType::DS,
                shardns_wire::Class::IN,
                60,
                rdata,
            )
            .unwrap();
        }
    }
    let mut h = shardns_wire::Header {
        id: q.header.id,
        ..Default::default()
    };
    h.set_qr(true);
    h.set_aa(true);
    h.set_tc(tc);
    w.finish(&h).to_vec()
}

use shardns_wire::MessageWriter;

/// The query over UDP is answered truncated: asked again over TCP, whose answer counts.
/// A stray datagram with another ID first is ignored.
#[test]
fn ds_query_over_udp_then_tcp_on_truncation() {
    use std::io::{Read, Write};
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = udp.local_addr().unwrap().port();
    let tcp = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let k = key(3, 1000);
    let set = vec![ds(&k, DigestType::Sha256)];
    let served = set.clone();
    let server = std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        let (n, from) = udp.recv_from(&mut buf).unwrap();
        let mut stray = answer(&buf[..n], &served, false);
        stray[0] ^= 0xff;
        udp.send_to(&stray, from).unwrap();
        udp.send_to(&answer(&buf[..n], &served, true), from)
            .unwrap();
        let (mut s, _) = tcp.accept().unwrap();
        let mut len = [0u8; 2];
        s.read_exact(&mut len).unwrap();
        let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
        s.read_exact(&mut q).unwrap();
        let a = answer(&q, &served, false);
        s.write_all(&(a.len() as u16).to_be_bytes()).unwrap();
        s.write_all(&a).unwrap();
    });
    let got = query::ds_set(([127, 0, 0, 1], port).into(), &apex(), 0x4242, None).unwrap();
    server.join().unwrap();
    assert_eq!(got, set);
    // Nobody there: an error, not an empty set.
    let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    assert!(query::ds_set(addr, &apex(), 1, None).is_err());
}

/// The push: the parent zone found by the SOA above ours, then one UPDATE of it over TCP
/// that deletes our DS RRset and adds the set, TTL as given; NOERROR is success, another
/// rcode an error that says it.
#[test]
fn push_sends_one_update_replacing_the_ds_rrset() {
    use shardns_wire::{Class, Opcode, RType, Section};
    use std::io::{Read, Write};
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = udp.local_addr().unwrap().port();
    let tcp = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let k = key(4, 1000);
    let set = vec![ds(&k, DigestType::Sha256), ds(&k, DigestType::Sha384)];
    let server = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for rcode in [0u8, 5] {
            let mut buf = [0u8; 1500];
            let (n, from) = udp.recv_from(&mut buf).unwrap();
            let q = shardns_wire::Message::parse(&buf[..n]).unwrap();
            assert_eq!(q.questions[0].qtype, RType::SOA);
            // The SOA of `test.`, our parent, in the answer.
            let mut out = vec![0u8; 512];
            let mut w = MessageWriter::new(&mut out, 512);
            let qn = &q.questions[0];
            w.put_question(qn.qname.as_ref(), RType::SOA, Class::IN)
                .unwrap();
            let mut soa = vec![0, 0];
            soa.extend([0u8; 20]);
            w.put_record(
                Section::Answer,
                qn.qname.as_ref(),
                RType::SOA,
                Class::IN,
                60,
                &soa,
            )
            .unwrap();
            let mut h = shardns_wire::Header {
                id: q.header.id,
                ..Default::default()
            };
            h.set_qr(true);
            h.set_aa(true);
            let a = w.finish(&h).to_vec();
            udp.send_to(&a, from).unwrap();
            let (mut s, _) = tcp.accept().unwrap();
            let mut len = [0u8; 2];
            s.read_exact(&mut len).unwrap();
            let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
            s.read_exact(&mut msg).unwrap();
            seen.push(raw_update(&msg));
            // The answer: the header (QR, the rcode) and the zone section.
            let zone_end = 12 + b"\x04test\x00".len() + 4;
            let mut a = msg[..zone_end].to_vec();
            a[2] |= 0x80;
            a[3] = rcode;
            a[6..12].fill(0);
            s.write_all(&(a.len() as u16).to_be_bytes()).unwrap();
            s.write_all(&a).unwrap();
        }
        seen
    });
    let to = ([127, 0, 0, 1], port).into();
    let zone = push::push(to, None, &apex(), &set, 300, [1, 2]).unwrap();
    assert_eq!(zone.to_string(), "test.");
    let e = push::push(to, None, &apex(), &[], 300, [3, 4]).unwrap_err();
    assert!(e.contains("REFUSED"), "{e}");
    let seen = server.join().unwrap();
    let u = &seen[0];
    assert!(u.header.opcode() == Opcode::UPDATE);
    assert_eq!(u.questions[0].qname.to_string(), "test.");
    assert_eq!(u.header.ancount, 0, "no prerequisite");
    let a = apex();
    let first = &u.authority[0];
    assert_eq!(
        (first.rtype, first.class, first.rdata.len()),
        (RType::DS, Class::ANY, 0),
        "the DS RRset deleted first"
    );
    assert!(first.owner.as_ref().eq_ci(&a.as_ref()));
    let added: Vec<_> = u.authority[1..]
        .iter()
        .map(|r| (r.rtype, r.class, r.ttl, r.rdata.clone()))
        .collect();
    let want: Vec<_> = set
        .iter()
        .map(|d| (RType::DS, Class::IN, 300, d.clone()))
        .collect();
    assert_eq!(added, want);
    // An empty set: the RRset deleted, nothing added (going insecure).
    assert_eq!(seen[1].authority.len(), 1);
}

/// An UPDATE read without its rdata parsed (a deletion's is empty, which fits no type).
fn raw_update(msg: &[u8]) -> shardns_wire::Message {
    use shardns_wire::message::Reader;
    use shardns_wire::{Class, NameBuf, Question, RType, Record};
    let header = shardns_wire::Header::parse(msg).unwrap();
    let mut r = Reader::new(msg, 12);
    let mut name = NameBuf::new();
    r.name(&mut name).unwrap();
    let (qtype, qclass) = (RType(r.u16().unwrap()), Class(r.u16().unwrap()));
    let mut m = shardns_wire::Message {
        header,
        questions: vec![Question {
            qname: name.as_ref().to_name(),
            qtype,
            qclass,
        }],
        ..Default::default()
    };
    for _ in 0..header.ancount + header.nscount {
        r.name(&mut name).unwrap();
        let (rtype, class, ttl) = (
            RType(r.u16().unwrap()),
            Class(r.u16().unwrap()),
            r.u32().unwrap(),
        );
        let len = usize::from(r.u16().unwrap());
        let rdata = r.bytes(len).unwrap().to_vec();
        m.authority.push(Record {
            owner: name.as_ref().to_name(),
            rtype,
            class,
            ttl,
            rdata,
        });
    }
    m
}

/// Which zones are watched, and with what: the push server asked when no agents are named
/// (with the push key), nothing for an unsigned zone or without a parent server.
#[test]
fn parent_specs_from_the_config() {
    let text = "[server]\nkey_directory = \"/k\"\n\
        [[key]]\nname = \"q\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n\
        [[key]]\nname = \"p\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAB\"\n\
        [[zone]]\nname = \"a.\"\nfile = \"a\"\ndnssec = true\n\
        parent_agents = [\"127.0.0.10\"]\nparent_agents_key = \"q\"\nds_push = \"127.0.0.11:5300\"\n\
        ds_push_key = \"p\"\n\
        [[zone]]\nname = \"b.\"\nfile = \"b\"\ndnssec = true\nds_push = \"127.0.0.11\"\nds_push_key = \"p\"\n\
        [[zone]]\nname = \"c.\"\nfile = \"c\"\nds_push = \"127.0.0.11\"\n\
        [[zone]]\nname = \"d.\"\nfile = \"d\"\ndnssec = true\n";
    let config = Config::from_toml(text, Path::new("/etc/shardns.toml")).unwrap();
    let spec = |i: usize| ParentSpec::of(&config, &config.zones[i]);
    let a = spec(0).unwrap();
    assert_eq!(a.agents, vec!["127.0.0.10:53".parse().unwrap()]);
    assert_eq!(a.agents_key.as_ref().unwrap().name.to_string(), "q.");
    assert_eq!(a.push, Some("127.0.0.11:5300".parse().unwrap()));
    assert_eq!(a.push_key.as_ref().unwrap().name.to_string(), "p.");
    assert_eq!((a.interval, a.ds_ttl), (3600, 86_400));
    let b = spec(1).unwrap();
    assert_eq!(b.agents, vec!["127.0.0.11:53".parse().unwrap()]);
    assert_eq!(b.agents_key.as_ref().unwrap().name.to_string(), "p.");
    assert_eq!(spec(2), None, "not signed");
    assert_eq!(spec(3), None, "no parent server");
}

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn rr(owner: &str, rtype: RType, rdata: &[u8]) -> shardns_wire::Record {
    shardns_wire::Record {
        owner: name(owner),
        rtype,
        class: shardns_wire::Class::IN,
        ttl: 60,
        rdata: rdata.to_vec(),
    }
}

/// A resolver's answer: `rcode`, these answer and authority records.
fn reply(
    rcode: Rcode,
    answers: Vec<shardns_wire::Record>,
    authority: Vec<shardns_wire::Record>,
) -> shardns_wire::Message {
    let mut header = shardns_wire::Header::default();
    header.set_qr(true);
    header.set_rcode(rcode);
    shardns_wire::Message {
        header,
        questions: Vec::new(),
        answers,
        authority,
        additional: Vec::new(),
    }
}

use shardns_wire::{RType, Rcode};

/// A lab parent: `test.` above `child.sub.test.` (`sub.test.` is no zone: its NXDOMAIN
/// names `test.` in its SOA), served by `ns1.test.` (IPv4) and `ns2.example.` (IPv6), the
/// NS set once in each case; `fail` makes that question fail.
fn lab_answer(
    q: &Name,
    t: RType,
    fail: Option<(&str, RType)>,
) -> Result<shardns_wire::Message, String> {
    let ns = |n: &str| name(n).as_wire().to_vec();
    if fail.is_some_and(|(n, ft)| name(n) == *q && ft == t) {
        return Err("SERVFAIL".into());
    }
    let soa = || vec![rr("test.", RType::SOA, &[0; 22])];
    Ok(match (q.to_string().as_str(), t) {
        ("sub.test.", RType::SOA) => reply(Rcode::NXDOMAIN, vec![], soa()),
        ("test.", RType::NS) => reply(
            Rcode::NOERROR,
            vec![
                rr("test.", RType::NS, &ns("ns1.test.")),
                rr("TEST.", RType::NS, &ns("ns2.example.")),
                rr("test.", RType::NS, &ns("NS1.test.")),
                rr("other.", RType::NS, &ns("ns9.other.")),
            ],
            vec![],
        ),
        ("ns1.test.", RType::A) => reply(
            Rcode::NOERROR,
            vec![
                rr("ns1.test.", RType::A, &[127, 0, 0, 10]),
                rr("ns1.test.", RType::A, &[0, 0, 0, 0]),
            ],
            vec![],
        ),
        ("ns2.example.", RType::AAAA) => {
            let mut v6 = [0u8; 16];
            v6[15] = 1;
            reply(
                Rcode::NOERROR,
                vec![rr("ns2.example.", RType::AAAA, &v6)],
                vec![],
            )
        }
        // No such record: NODATA.
        _ => reply(Rcode::NOERROR, vec![], soa()),
    })
}

/// The zone cut above ours (through a name that is no zone), its NS set once each, their
/// A and AAAA records (an unspecified address left out), port 53; the questions asked.
#[test]
fn the_parents_servers_are_found_by_resolving() {
    let mut asked = Vec::new();
    let found = resolve::find(
        &mut |q, t| {
            asked.push(format!("{q} {t}"));
            lab_answer(q, t, None)
        },
        &name("child.sub.test."),
    )
    .unwrap();
    assert_eq!(found.zone, name("test."));
    assert_eq!(
        found.servers,
        vec![
            "127.0.0.10:53".parse().unwrap(),
            "[::1]:53".parse().unwrap()
        ]
    );
    assert_eq!(
        asked,
        [
            "sub.test. SOA",
            "test. NS",
            "ns1.test. A",
            "ns1.test. AAAA",
            "ns2.example. A",
            "ns2.example. AAAA"
        ]
    );
    // A zone apex above ours answers its own SOA; one that answers nothing is walked past.
    let found = resolve::find(
        &mut |q, t| match (q.to_string().as_str(), t) {
            ("a.test.", RType::SOA) => Ok(reply(Rcode::NOERROR, vec![], vec![])),
            ("test.", RType::SOA) => Ok(reply(
                Rcode::NOERROR,
                vec![rr("test.", RType::SOA, &[0; 22])],
                vec![],
            )),
            _ => lab_answer(q, t, None),
        },
        &name("b.a.test."),
    )
    .unwrap();
    assert_eq!(found.zone, name("test."));
}

/// Every failure fails the lookup, with what failed: a question the resolver cannot
/// answer, a name server without an address, a zone without NS, no SOA up to the root.
#[test]
fn a_failed_lookup_finds_no_servers() {
    let apex = name("child.sub.test.");
    for (fail, says) in [
        (("sub.test.", RType::SOA), "SERVFAIL"),
        (("test.", RType::NS), "SERVFAIL"),
        (("ns2.example.", RType::AAAA), "SERVFAIL"),
    ] {
        let e = resolve::find(&mut |q, t| lab_answer(q, t, Some(fail)), &apex).unwrap_err();
        assert!(e.contains(says), "{fail:?}: {e}");
    }
    let no_address = |q: &Name, t: RType| match (q.to_string().as_str(), t) {
        ("ns2.example.", RType::AAAA) => Ok(reply(Rcode::NXDOMAIN, vec![], vec![])),
        _ => lab_answer(q, t, None),
    };
    let e = resolve::find(&mut { no_address }, &apex).unwrap_err();
    assert!(e.contains("ns2.example. of test. has no address"), "{e}");
    let no_ns = |q: &Name, t: RType| match t {
        RType::NS => Ok(reply(Rcode::NOERROR, vec![], vec![])),
        _ => lab_answer(q, t, None),
    };
    let e = resolve::find(&mut { no_ns }, &apex).unwrap_err();
    assert!(e.contains("no NS records for test."), "{e}");
    let nothing = |_: &Name, _: RType| Ok(reply(Rcode::NOERROR, vec![], vec![]));
    let e = resolve::find(&mut { nothing }, &apex).unwrap_err();
    assert!(e.contains("no SOA found above child.sub.test."), "{e}");
}

/// Over the network: the first resolver answers SERVFAIL, the second (asked with RD set)
/// the lab's data; a resolver that answers nothing at all fails the lookup.
#[test]
fn resolvers_are_asked_in_turn_with_rd_set() {
    let bad = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let good = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (bad_addr, good_addr) = (bad.local_addr().unwrap(), good.local_addr().unwrap());
    let serve = |sock: std::net::UdpSocket, servfail: bool| {
        std::thread::spawn(move || {
            // Quiet this long: the test is over.
            sock.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut buf = [0u8; 1500];
            let (mut asked, mut with_rd) = (0, 0);
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                let q = shardns_wire::Message::parse(&buf[..n]).unwrap();
                asked += 1;
                with_rd += usize::from(q.header.rd());
                let qn = &q.questions[0];
                let m = if servfail {
                    reply(Rcode::SERVFAIL, vec![], vec![])
                } else {
                    lab_answer(&qn.qname, qn.qtype, None).unwrap()
                };
                let mut out = vec![0u8; 1500];
                let mut w = MessageWriter::new(&mut out, 1500);
                w.put_question(qn.qname.as_ref(), qn.qtype, shardns_wire::Class::IN)
                    .unwrap();
                for (section, records) in [
                    (shardns_wire::Section::Answer, &m.answers),
                    (shardns_wire::Section::Authority, &m.authority),
                ] {
                    for r in records {
                        w.put_record(section, r.owner.as_ref(), r.rtype, r.class, r.ttl, &r.rdata)
                            .unwrap();
                    }
                }
                let mut h = m.header;
                h.id = q.header.id;
                let reply = w.finish(&h).to_vec();
                sock.send_to(&reply, from).unwrap();
            }
            (asked, with_rd)
        })
    };
    let threads = [serve(bad, true), serve(good, false)];
    let mut ids = Ids { seed: 7, count: 0 };
    let found = resolve::parent_servers(&[bad_addr, good_addr], &name("child.sub.test."), &mut ids)
        .unwrap();
    assert_eq!(found.zone, name("test."));
    assert_eq!(found.servers.len(), 2, "{found:?}");
    let e = resolve::parent_servers(&[bad_addr], &name("child.sub.test."), &mut ids).unwrap_err();
    assert!(
        e.contains(&format!("{bad_addr}: sub.test. SOA answered SERVFAIL")),
        "{e}"
    );
    // Each of the 6 questions went to the first, then to the second; the last lookup's
    // first question to the first alone; every one with RD set.
    let [bad, good] = threads.map(|t| t.join().unwrap());
    assert_eq!((bad, good), ((7, 7), (6, 6)));
}

/// `parent_agents = "resolve"`: no listed server, the resolvers kept; the push key stays
/// the push's.
#[test]
fn a_resolving_spec_from_the_config() {
    let text = "[server]\nkey_directory = \"/k\"\n\
        [[zone]]\nname = \"a.\"\nfile = \"a\"\ndnssec = true\n\
        parent_agents = \"resolve\"\nparent_resolvers = [\"127.0.0.53\", \"127.0.0.54:5300\"]\n";
    let config = Config::from_toml(text, Path::new("/etc/shardns.toml")).unwrap();
    let spec = ParentSpec::of(&config, &config.zones[0]).unwrap();
    assert!(spec.agents.is_empty());
    assert_eq!(
        spec.resolvers,
        vec![
            "127.0.0.53:53".parse().unwrap(),
            "127.0.0.54:5300".parse().unwrap()
        ]
    );
}

/// An algorithm rollover (13 to 15): the new DS awaited beside the old one, then, once the
/// CDS names the new key alone, every DS of the old algorithm to be gone (the DS set pushed
/// the new key's alone) while the old DNSKEY stays, whatever `done` says; the old key is
/// withdrawn only after that is confirmed, the parent's DS TTL and propagation later.
#[test]
fn an_algorithm_rollover_waits_for_the_old_algorithms_ds_to_go() {
    let t0 = 10_000;
    let old = key(1, 1000);
    let mut dnskey = vec![1, 1, 3, 15];
    dnskey.extend([2; 32]);
    let mut new = key(0, t0);
    new.meta.algorithm = Algorithm::Ed25519;
    new.meta.tag = key_tag(&dnskey);
    new.dnskey = dnskey;
    roll::algorithm::schedule_new(&mut new.meta, &T, t0);
    let mut keys = vec![old, new];
    let (old_ds, new_ds) = (
        ds(&keys[0], DigestType::Sha256),
        ds(&keys[1], DigestType::Sha256),
    );
    let done = Confirmed::default();
    // The new key's CDS at t0 + 30: its DS awaited, both pushed.
    let w = want(&keys, &done, t0 + 30).expect("the new DS");
    assert!(matches!(w.goal, Goal::Submit { tag, .. } if tag == keys[1].meta.tag));
    assert_eq!(w.ds.len(), 2);
    let c = t0 + 40;
    let mut m = metas(&keys);
    roll::confirm_ds(&mut m, None, &T, c).unwrap();
    roll::tick(&mut m, &T, c);
    set_metas(&mut keys, &m);
    assert_eq!(
        want(&keys, &done, c + 24),
        None,
        "both DS wanted until the DS change"
    );
    // The DS change at c + 25: the old algorithm's DS to go, the new DS pushed alone.
    let mut all_done = done.clone();
    all_done.withdrawn.insert(keys[0].meta.tag);
    for d in [&done, &all_done] {
        let w = want(&keys, d, c + 25).expect("the old DS to go");
        assert_eq!(
            w.goal,
            Goal::OldAlgorithm {
                old: vec![keys[0].meta.tag],
                algorithms: vec![13],
                current: vec![keys[1].dnskey.clone()],
            }
        );
        assert_eq!(w.ds, std::slice::from_ref(&new_ds));
        assert!(
            w.goal.what().contains("old algorithm 13"),
            "{}",
            w.goal.what()
        );
    }
    let w = want(&keys, &done, c + 25).unwrap();
    let a = apex();
    let mut both = vec![old_ds.clone(), new_ds.clone()];
    both.sort();
    assert!(!task::meets(&a, &w.goal, &both), "old DS present");
    assert!(!task::meets(&a, &w.goal, std::slice::from_ref(&old_ds)));
    // Any DS of algorithm 13, another key's too, keeps the wait.
    let other = ds(&key(9, 1000), DigestType::Sha256);
    assert!(!task::meets(&a, &w.goal, &[new_ds.clone(), other]));
    assert!(task::meets(&a, &w.goal, std::slice::from_ref(&new_ds)));
    // Present: no withdrawal, however long it takes.
    let later = c + 10_000;
    assert!(keys[0].meta.is_published(later));
    assert_eq!(roll::next_event(&metas(&keys), &T, later), None);
    // Gone at r: the old DNSKEY withdrawn at r + 25 (the DS TTL and propagation).
    let r = c + 100;
    let mut m = metas(&keys);
    roll::algorithm::confirm_old_ds_gone(&mut m, &T, r).unwrap();
    set_metas(&mut keys, &m);
    assert!(keys[0].meta.is_published(r + 24) && !keys[0].meta.is_published(r + 25));
    assert_eq!(keys[0].meta.inactive, Some(r + 25 + 15));
    // Noted in `done`, nothing more is asked; a crash before the note asks once more.
    assert_eq!(want(&keys, &all_done, r + 1), None);
    let w = want(&keys, &done, r + 1).expect("the withdrawn key's DS");
    assert!(matches!(w.goal, Goal::Withdraw { .. }));
    assert!(task::meets(&a, &w.goal, std::slice::from_ref(&new_ds)));
}
