//! Tests of the rrl module: buckets, slip cadence, prefixes, eviction, classes, slipped
//! responses.

use super::classify::*;
use super::*;
use shardns_wire::message::Message;
use shardns_wire::{Class as DnsClass, Header, MessageWriter, Name, RType, Section};

fn config(rate: u32, slip: u32, window: u32) -> RrlConfig {
    let mut c = RrlConfig::default();
    (c.enabled, c.rate, c.slip, c.window) = (true, rate, slip, window);
    c
}

#[test]
fn bucket_starts_full_then_refills_at_rate() {
    let mut r = Rrl::new(&config(10, 0, 2), 7, Instant::now());
    // A full bucket: rate × window responses at once.
    let passed = (0..25)
        .filter(|_| r.account(42, 1000) == Decision::Pass)
        .count();
    assert_eq!(passed, 20);
    // 10 per second: one every 100 ms, none in between.
    assert_eq!(r.account(42, 1099), Decision::Drop);
    assert_eq!(r.account(42, 1100), Decision::Pass);
    assert_eq!(r.account(42, 1150), Decision::Drop);
    assert_eq!(r.account(42, 1200), Decision::Pass);
    // Half a second's credit, accrued in small steps, is 5 responses.
    for t in 1201..=1700 {
        assert_eq!(r.account(42, t) == Decision::Pass, t % 100 == 0, "t={t}");
    }
    // A long pause refills to the cap, never beyond.
    let passed = (0..100)
        .filter(|_| r.account(42, 1_000_000) == Decision::Pass)
        .count();
    assert_eq!(passed, 20);
}

#[test]
fn steady_flood_gets_the_rate() {
    let mut r = Rrl::new(&config(50, 0, 1), 7, Instant::now());
    // 1000 queries a second for 10 s, one per millisecond.
    let passed = (0..10_000u64)
        .filter(|&t| r.account(9, t) == Decision::Pass)
        .count();
    // The first second's burst (50) plus 50 per second.
    assert!((500..=550).contains(&passed), "{passed}");
}

#[test]
fn slip_cadence() {
    for (slip, want) in [(0u32, [false; 6]), (1, [true; 6])] {
        let mut r = Rrl::new(&config(1, slip, 1), 1, Instant::now());
        assert_eq!(r.account(5, 0), Decision::Pass);
        for (i, w) in want.iter().enumerate() {
            let d = r.account(5, 0);
            assert_eq!(d == Decision::Slip, *w, "slip {slip}, limited {i}");
            assert_ne!(d, Decision::Pass);
        }
    }
    let mut r = Rrl::new(&config(1, 3, 1), 1, Instant::now());
    assert_eq!(r.account(5, 0), Decision::Pass);
    let got: Vec<Decision> = (0..7).map(|_| r.account(5, 0)).collect();
    use Decision::{Drop as D, Slip as S};
    assert_eq!(got, [D, D, S, D, D, S, D]);
    // A refilled bucket starts the cadence again.
    assert_eq!(r.account(5, 5000), Decision::Pass);
    assert_eq!(r.account(5, 5000), Decision::Drop);
    assert_eq!(r.account(5, 5000), Decision::Drop);
    assert_eq!(r.account(5, 5000), Decision::Slip);
}

#[test]
fn prefixes_mask_host_bits() {
    let p = |s: &str, v4, v6| prefix(s.parse().unwrap(), v4, v6);
    assert_eq!(p("192.0.2.77", 24, 56), (4, 0xc000_0200, 0));
    assert_eq!(p("192.0.2.77", 32, 56), (4, 0xc000_024d, 0));
    assert_eq!(p("192.0.2.77", 0, 56), (4, 0, 0));
    assert_eq!(p("192.0.2.77", 20, 56), (4, 0xc000_0000, 0));
    assert_eq!(
        p("2001:db8:1:2ff:3::1", 24, 56),
        (6, 0x2001_0db8_0001_0200, 0)
    );
    assert_eq!(
        p("2001:db8:1:2ff:3::1", 24, 128),
        (6, 0x2001_0db8_0001_02ff, 0x0003_0000_0000_0001)
    );
    assert_eq!(p("2001:db8::1", 24, 0), (6, 0, 0));
    // Same network, same key; other network or family, another key.
    let r = Rrl::new(&config(1, 0, 1), 3, Instant::now());
    let k = |s: &str| r.key(s.parse().unwrap(), Class::Answer, 1, 1);
    assert_eq!(k("10.1.2.3"), k("10.1.2.200"));
    assert_ne!(k("10.1.2.3"), k("10.1.3.3"));
    assert_eq!(k("2001:db8:0:ff::1"), k("2001:db8:0:ff:1::9"));
    assert_ne!(k("2001:db8:0:ff::1"), k("2001:db8:0:100::1"));
    assert_ne!(k("0.0.0.0"), k("::"));
    let kc = |c| r.key("10.1.2.3".parse().unwrap(), c, 1, 1);
    assert_ne!(kc(Class::Answer), kc(Class::NxDomain));
    assert_ne!(
        r.key("10.1.2.3".parse().unwrap(), Class::Answer, 1, 1),
        r.key("10.1.2.3".parse().unwrap(), Class::Answer, 1, 28)
    );
}

#[test]
fn collisions_evict_the_least_recently_used() {
    let mut c = config(1, 0, 1);
    c.table_size = WAYS; // one set: every key collides
    let mut r = Rrl::new(&c, 0, Instant::now());
    assert_eq!(r.table.len(), WAYS);
    // Four keys fill the set and empty their buckets.
    for k in 1..=4u64 {
        assert_eq!(r.account(k * 2 + 1, k), Decision::Pass);
        assert_eq!(r.account(k * 2 + 1, k), Decision::Drop);
    }
    // Key 3 is used again, so key 5 is now the least recently used.
    assert_eq!(r.account(3, 10), Decision::Drop);
    // A fifth key evicts it and starts full.
    assert_eq!(r.account(11, 11), Decision::Pass);
    assert!(r.table.iter().all(|e| e.key != 5));
    assert!(r.table.iter().any(|e| e.key == 3));
    // The survivors kept their state: still empty.
    for k in [3u64, 7, 9, 11] {
        assert_eq!(r.account(k, 12), Decision::Drop, "key {k}");
    }
    // The evicted key comes back full (the price of a table too small).
    assert_eq!(r.account(5, 13), Decision::Pass);
}

#[test]
fn table_size_rounds_up() {
    let mut c = config(1, 0, 1);
    c.table_size = 1000;
    let r = Rrl::new(&c, 0, Instant::now());
    assert_eq!(r.table.len(), 1024);
    assert_eq!(r.set_mask, 1024 / WAYS - 1);
}

/// A response with `answers` A records, then the given authority owner (SOA or NS).
fn response(qname: &str, rcode: Rcode, answers: usize, authority: Option<&str>) -> Vec<u8> {
    let mut buf = vec![0u8; 1232];
    let qname: Name = qname.parse().unwrap();
    let mut w = MessageWriter::new(&mut buf, 1232);
    w.put_question(qname.as_ref(), RType::A, DnsClass::IN)
        .unwrap();
    for i in 0..answers {
        w.put_record(
            Section::Answer,
            qname.as_ref(),
            RType::A,
            DnsClass::IN,
            60,
            &[192, 0, 2, i as u8],
        )
        .unwrap();
    }
    if let Some(owner) = authority {
        let owner: Name = owner.parse().unwrap();
        w.put_record(
            Section::Authority,
            owner.as_ref(),
            RType::NS,
            DnsClass::IN,
            60,
            &[0],
        )
        .unwrap();
    }
    let mut h = Header::default();
    h.set_qr(true);
    h.set_rcode(rcode);
    let len = w.finish(&h).len();
    buf.truncate(len);
    buf
}

fn name_hash(s: &str) -> u64 {
    s.parse::<Name>().unwrap().as_ref().hash_ci()
}

#[test]
fn classes_and_key_names() {
    let c = classify(
        &response("www.example.test", Rcode::NOERROR, 2, None),
        Rcode::NOERROR,
        false,
    );
    assert_eq!(
        (c.class, c.name, c.qtype),
        (Class::Answer, name_hash("WWW.example.test"), 1)
    );
    // Every NXDOMAIN of a zone shares the zone's bucket; CNAMEs before it are skipped.
    let a = classify(
        &response("x1.example.test", Rcode::NXDOMAIN, 0, Some("example.test")),
        Rcode::NXDOMAIN,
        false,
    );
    let b = classify(
        &response("y2.example.test", Rcode::NXDOMAIN, 1, Some("Example.Test")),
        Rcode::NXDOMAIN,
        false,
    );
    assert_eq!((a.class, a.name, a.qtype), (Class::NxDomain, b.name, 0));
    assert_eq!(a.name, name_hash("example.test"));
    // A referral is keyed by its zone cut.
    let c = classify(
        &response(
            "a.b.sub.example.test",
            Rcode::NOERROR,
            0,
            Some("sub.example.test"),
        ),
        Rcode::NOERROR,
        false,
    );
    assert_eq!(
        (c.class, c.name),
        (Class::NoData, name_hash("sub.example.test"))
    );
    // Without authority records: the qname.
    let c = classify(
        &response("n.example.test", Rcode::NOERROR, 0, None),
        Rcode::NOERROR,
        false,
    );
    assert_eq!(
        (c.class, c.name),
        (Class::NoData, name_hash("n.example.test"))
    );
    // Truncated: an answer, whatever the sections hold.
    let c = classify(
        &response("big.example.test", Rcode::NOERROR, 0, None),
        Rcode::NOERROR,
        true,
    );
    assert_eq!(c.class, Class::Answer);
    // Errors: one bucket per prefix, no name.
    for rcode in [Rcode::REFUSED, Rcode::SERVFAIL, Rcode::BADVERS] {
        let c = classify(&response("q.example.test", rcode, 0, None), rcode, false);
        assert_eq!((c.class, c.name, c.qtype), (Class::Error, 0, 0));
    }
    // A bare header (FORMERR) or a runt.
    let c = classify(&[0u8; 12], Rcode::FORMERR, false);
    assert_eq!((c.class, c.question_end), (Class::Error, 12));
    assert_eq!(classify(&[0u8; 5], Rcode::FORMERR, false).question_end, 5);
}

#[test]
fn slipped_response_is_the_question_with_tc() {
    let mut r = response("www.example.test", Rcode::NXDOMAIN, 1, Some("example.test"));
    r[2] |= 0x04; // AA
    let c = classify(&r, Rcode::NXDOMAIN, false);
    let n = slip_response(&mut r, c.question_end);
    let m = Message::parse(&r[..n]).unwrap();
    assert!(m.header.tc() && m.header.aa() && m.header.qr());
    assert_eq!(m.rcode(), Rcode::NXDOMAIN);
    assert_eq!(m.questions.len(), 1);
    assert_eq!(m.questions[0].qname.to_string(), "www.example.test.");
    assert!(m.answers.is_empty() && m.authority.is_empty() && m.additional.is_empty());
    assert_eq!(n, 12 + 18 + 4);
    let mut bare = [0u8; 12];
    bare[5] = 1;
    bare[7] = 3;
    assert_eq!(slip_response(&mut bare, 12), 12);
    assert_eq!(bare[2] & 0x02, 0x02);
    assert_eq!(&bare[4..], &[0; 8]);
}

#[test]
fn check_limits_per_prefix_and_slips_in_place() {
    let mut r = Rrl::new(&config(2, 1, 1), 99, Instant::now());
    let resp = response("www.example.test", Rcode::NOERROR, 1, None);
    let a: IpAddr = "192.0.2.1".parse().unwrap();
    let b: IpAddr = "192.0.2.200".parse().unwrap();
    let other: IpAddr = "198.51.100.1".parse().unwrap();
    let mut out = resp.clone();
    assert_eq!(
        r.check(a, Rcode::NOERROR, false, None, &mut out, 0),
        Verdict::Send
    );
    assert_eq!(out, resp);
    assert_eq!(
        r.check(b, Rcode::NOERROR, false, None, &mut out, 0),
        Verdict::Send
    );
    // The /24 is out of tokens; slip 1 truncates every limited response.
    let v = r.check(a, Rcode::NOERROR, false, None, &mut out, 0);
    assert_eq!(v, Verdict::Slip(12 + 18 + 4));
    assert_eq!(out[2] & 0x02, 0x02);
    let mut out = resp.clone();
    assert_eq!(
        r.check(other, Rcode::NOERROR, false, None, &mut out, 0),
        Verdict::Send
    );
    // Another class for the same prefix has its own bucket.
    let mut nx = response(
        "nope.example.test",
        Rcode::NXDOMAIN,
        0,
        Some("example.test"),
    );
    assert_eq!(
        r.check(a, Rcode::NXDOMAIN, false, None, &mut nx, 0),
        Verdict::Send
    );
}

#[test]
fn wildcard_answers_share_the_wildcards_bucket() {
    let mut r = Rrl::new(&config(1, 0, 1), 5, Instant::now());
    let a: IpAddr = "192.0.2.1".parse().unwrap();
    // *.example.test answers both names: the encloser example.test has 2 labels.
    let mut one = response("r1.example.test", Rcode::NOERROR, 1, None);
    let mut two = response("r2.example.test", Rcode::NOERROR, 1, None);
    assert_eq!(
        r.check(a, Rcode::NOERROR, false, Some(2), &mut one, 0),
        Verdict::Send
    );
    assert_eq!(
        r.check(a, Rcode::NOERROR, false, Some(2), &mut two, 0),
        Verdict::Drop,
        "a second random name under the same wildcard is the same bucket"
    );
    // Not from a wildcard: each name is its own bucket.
    let mut three = response("r3.example.test", Rcode::NOERROR, 1, None);
    assert_eq!(
        r.check(a, Rcode::NOERROR, false, None, &mut three, 0),
        Verdict::Send
    );
    // Another wildcard (*.sub.example.test) is another bucket.
    let mut four = response("r4.sub.example.test", Rcode::NOERROR, 1, None);
    assert_eq!(
        r.check(a, Rcode::NOERROR, false, Some(3), &mut four, 0),
        Verdict::Send
    );
}
