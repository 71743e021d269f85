//! The worker's resolver driver against a fake upstream on loopback.

use super::upstream::upstream_token;
use super::*;
use crate::origin::Via;
use shardns_sys::Events;
use std::net::SocketAddr;
use std::net::UdpSocket;

/// A query or response for `a.fwd. A IN` with one 192.0.2.1 answer if `answer`.
fn message(id: u16, flags: u16, answer: bool) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&flags.to_be_bytes());
    m.extend_from_slice(&[0, 1, 0, u8::from(answer), 0, 0, 0, 0]);
    m.extend_from_slice(b"\x01a\x03fwd\x00\x00\x01\x00\x01");
    if answer {
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1]);
    }
    m
}

#[test]
fn upstream_reads_skip_forgeries_and_stop_at_the_answer() {
    let fake = UdpSocket::bind("127.0.0.1:0").unwrap();
    fake.set_read_timeout(Some(std::time::Duration::from_secs(3)))
        .unwrap();
    let other = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut config = shardns_resolver::Config::default();
    // The fake forwarder is unsigned: no trust anchor (validation finds it insecure
    // without asking for DS records; this test is about the upstream socket).
    config.trust_anchors = shardns_resolver::TrustAnchors::none();
    config.forward_zones = vec![shardns_resolver::ZoneServers {
        zone: "fwd.".parse().unwrap(),
        servers: vec![fake.local_addr().unwrap()],
    }];
    let shared = Arc::new(RecursionShared {
        resolver: Arc::new(Resolver::new(config)),
        rpz: None,
        rpz_xfr: None,
        allow: vec!["127.0.0.0/8".parse().unwrap()],
        max_pending: 4,
        udp_max: 1232,
    });
    let now = Instant::now();
    let mut rec = Recursion::new(shared, [7; 32], now);
    let epoll = Epoll::new().unwrap();
    let stats = WorkerStats::default();
    let peer: SocketAddr = "127.0.0.1:5353".parse().unwrap();
    let client = Origin::new(Via::Udp { socket: 0 }, false, Some(peer));
    let mut out = [0u8; 4096];
    let q = message(0x1234, 0x0100, false);
    let query = Query::parse(&q).unwrap();
    let reply = rec.query(&query, client, &mut out, now, &stats, Default::default());
    assert!(matches!(reply, Handling::Pending));
    rec.drive(
        now,
        &epoll,
        &stats,
        &Default::default(),
        &mut |_, _, _, _, _| panic!("an answer before any response"),
    );

    // The upstream query: answer it after two forgeries, and forge once more after.
    let mut buf = [0u8; 512];
    let (n, resolver) = fake.recv_from(&mut buf).unwrap();
    let id = u16::from_be_bytes([buf[0], buf[1]]);
    assert_eq!(&buf[12..n.min(12 + 11)], &q[12..]);
    let response = |id| message(id, 0x8180, true);
    // From another port: the connected socket never sees it.
    other.send_to(&response(id), resolver).unwrap();
    fake.send_to(&response(id.wrapping_add(1)), resolver)
        .unwrap(); // wrong ID
    fake.send_to(&message(id, 0x0180, true), resolver).unwrap(); // QR clear
    fake.send_to(&response(id), resolver).unwrap();
    fake.send_to(&response(id.wrapping_add(2)), resolver)
        .unwrap();

    let mut events = Events::with_capacity(4);
    epoll.wait(&mut events, 3000).unwrap();
    let (token, ready) = events
        .iter()
        .next()
        .expect("the upstream socket is readable");
    assert_eq!(token >> 56, KIND_UPSTREAM);
    let (slot, generation) = (
        (token & 0xffff_ffff) as u32,
        ((token >> 32) & 0xff_ffff) as u32,
    );
    rec.upstream_ready(slot, generation, ready, now, &epoll);
    // Both forgeries before the answer were read and rejected; the one after it was
    // not read at all: the socket is still readable.
    assert_eq!(rec.engine.stats().rejected, 2);
    epoll.wait(&mut events, 0).unwrap();
    assert_eq!(
        events.iter().map(|(t, _)| t).collect::<Vec<_>>(),
        vec![token],
        "the datagram after the answer was read"
    );

    let mut answers = Vec::new();
    rec.drive(
        now,
        &epoll,
        &stats,
        &Default::default(),
        &mut |c, w, _, _, frame| answers.push((c, frame[..2 + w.len].to_vec())),
    );
    assert_eq!(answers.len(), 1);
    let (c, frame) = &answers[0];
    assert_eq!(c.via, Via::Udp { socket: 0 });
    assert_eq!(c.peer, Some(peer));
    let a = &frame[2..];
    assert_eq!(u16::from_be_bytes([a[0], a[1]]), 0x1234);
    assert_eq!(u16::from_be_bytes([a[6], a[7]]), 1, "one answer");
    assert!(a.ends_with(&[192, 0, 2, 1]));
    // The query is over: its socket is closed.
    assert!(rec.upstreams[slot as usize].is_none());
    assert_eq!(rec.engine.stats().rejected, 2);
}

#[test]
fn upstream_tokens_carry_kind_slot_and_generation() {
    let t = upstream_token(7, 0x0100_0003);
    assert_eq!(t >> 56, KIND_UPSTREAM);
    assert_eq!(t & 0xffff_ffff, 7);
    assert_eq!((t >> 32) & 0xff_ffff, 3);
}
