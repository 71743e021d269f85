//! Unit tests of the TCP state: framing, the connection table's lists, client counts.

use super::clients::COUNT_MASK;
use super::*;
use std::net::IpAddr;
use std::net::TcpListener;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

fn framed(msgs: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::new();
    for m in msgs {
        v.extend_from_slice(&(m.len() as u16).to_be_bytes());
        v.extend_from_slice(m);
    }
    v
}

/// Feeds `data` in pieces of `step` bytes and collects every frame.
fn feed(data: &[u8], step: usize) -> Vec<Vec<u8>> {
    let mut fb = FrameBuf::new(vec![0; 4]);
    let mut frames = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let (spare, _) = fb.spare();
        let n = spare.len().min(step).min(data.len() - pos);
        spare[..n].copy_from_slice(&data[pos..pos + n]);
        fb.filled(n);
        pos += n;
        while let Some(r) = fb.next_frame() {
            frames.push(fb.frame(r).to_vec());
        }
    }
    assert_eq!(fb.buffered(), 0);
    frames
}

#[test]
fn frames_split_anywhere() {
    let big = vec![9u8; 3000];
    let msgs: [&[u8]; 5] = [b"abc", b"", &big, b"x", b"hello world"];
    let data = framed(&msgs);
    for step in [1, 2, 3, 7, 100, 5000] {
        let got = feed(&data, step);
        assert_eq!(got.len(), msgs.len(), "step {step}");
        for (g, m) in got.iter().zip(msgs) {
            assert_eq!(g.as_slice(), m, "step {step}");
        }
    }
}

#[test]
fn grows_only_for_a_large_frame_and_caps_at_max() {
    let mut fb = FrameBuf::new(Vec::new());
    assert_eq!(fb.spare().0.len(), INPUT_INITIAL);
    let (spare, _) = fb.spare();
    spare[..2].copy_from_slice(&65535u16.to_be_bytes());
    fb.filled(2);
    let (spare, grew) = fb.spare();
    assert!(grew);
    assert_eq!(spare.len(), MAX_FRAME - 2);
    let n = spare.len();
    assert!(!fb.has_frame());
    fb.filled(n);
    assert!(fb.has_frame());
    assert_eq!(fb.next_frame(), Some((2, MAX_FRAME)));
}

#[test]
fn partial_length_prefix_waits() {
    let mut fb = FrameBuf::new(Vec::new());
    let (spare, _) = fb.spare();
    spare[0] = 0;
    fb.filled(1);
    assert!(fb.next_frame().is_none());
    let (spare, grew) = fb.spare();
    assert!(!grew);
    spare[..2].copy_from_slice(&[1, b'z']);
    fb.filled(2);
    let r = fb.next_frame().unwrap();
    assert_eq!(fb.frame(r), b"z");
}

fn conn(now: Instant) -> Conn {
    // A real socket pair so the table holds real streams.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    Conn::new(s, None, false, Vec::new(), now)
}

#[test]
fn table_orders_by_activity_and_reuses_slots() {
    let t0 = Instant::now();
    let mut t = ConnTable::with_capacity(2);
    let (a, ga, _) = t.insert(conn(t0));
    let (b, _, _) = t.insert(conn(t0 + Duration::from_secs(1)));
    let (c, _, _) = t.insert(conn(t0 + Duration::from_secs(2)));
    assert_eq!(t.len(), 3);
    assert_eq!(t.oldest(), Some((a, t0)));
    t.touch(a, t0 + Duration::from_secs(3));
    assert_eq!(t.oldest().unwrap().0, b);
    t.remove(b).unwrap();
    assert_eq!(t.oldest().unwrap().0, c);
    t.touch(c, t0 + Duration::from_secs(4));
    assert_eq!(t.oldest().unwrap().0, a);
    // A stale token no longer reaches the slot once it is reused.
    t.remove(a).unwrap();
    assert!(t.get_mut(a, ga).is_none());
    let (a2, ga2, _) = t.insert(conn(t0));
    assert_eq!(a2, a);
    assert_ne!(ga2, ga);
    assert!(t.get_mut(a, ga).is_none());
    assert!(t.get_mut(a2, ga2).is_some());
    assert_eq!(t.oldest().unwrap().0, c);
    assert_eq!(t.occupied(), vec![a.min(c), a.max(c)]);
    t.remove(c);
    t.remove(a2);
    assert_eq!(t.len(), 0);
    assert!(t.oldest().is_none());
    assert!(t.remove(a2).is_none());
}

#[test]
fn partial_list_orders_by_query_start() {
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    let mut t = ConnTable::with_capacity(4);
    let (a, ga, _) = t.insert(conn(t0));
    let (b, _, _) = t.insert(conn(t0));
    let (c, _, _) = t.insert(conn(t0));
    assert!(t.oldest_partial().is_none());
    t.set_partial(b, at(10));
    t.set_partial(a, at(20));
    assert_eq!(t.oldest_partial(), Some((b, at(10))));
    assert!(t.get_mut(a, ga).unwrap().in_partial());
    // A new query on b restarts its clock.
    t.set_partial(b, at(30));
    assert_eq!(t.oldest_partial(), Some((a, at(20))));
    t.clear_partial(a);
    assert!(!t.get_mut(a, ga).unwrap().in_partial());
    assert_eq!(t.oldest_partial(), Some((b, at(30))));
    t.clear_partial(a); // not in the list: no change
    t.set_partial(c, at(40));
    // Activity and partial lists are independent.
    t.touch(b, at(50));
    assert_eq!(t.oldest().unwrap().0, a);
    assert_eq!(t.oldest_partial().unwrap().0, b);
    // Removing a connection takes it out of both.
    t.remove(b).unwrap();
    assert_eq!(t.oldest_partial(), Some((c, at(40))));
    t.remove(c).unwrap();
    assert!(t.oldest_partial().is_none());
    assert_eq!(t.oldest().unwrap().0, a);
}

#[test]
fn each_client_has_its_own_activity_list() {
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    let mut t = ConnTable::with_capacity(4);
    let conn_for = |client_slot, now| {
        let mut c = conn(now);
        c.client_slot = client_slot;
        c
    };
    let (a, b) = (10, 20);
    let a1 = t.insert(conn_for(a, at(1))).0;
    let b1 = t.insert(conn_for(b, at(2))).0;
    let a2 = t.insert(conn_for(a, at(3))).0;
    let untracked = t.insert(conn_for(UNTRACKED, at(4))).0;
    assert_eq!(t.oldest_of_client(a), Some(a1));
    assert_eq!(t.oldest_of_client(b), Some(b1));
    assert_eq!(
        t.oldest_of_client(UNTRACKED),
        None,
        "uncounted clients have no list"
    );
    // Activity moves a connection to the back of its client's list too.
    t.touch(a1, at(5));
    assert_eq!(t.oldest_of_client(a), Some(a2));
    assert_eq!(t.oldest().unwrap().0, b1);
    t.remove(a2).unwrap();
    assert_eq!(t.oldest_of_client(a), Some(a1));
    t.remove(a1).unwrap();
    assert_eq!(t.oldest_of_client(a), None);
    t.remove(b1).unwrap();
    t.remove(untracked).unwrap();
    assert_eq!(t.len(), 0);
    assert!(t.oldest().is_none());
}

#[test]
fn client_counts_limit_each_address() {
    let counts = ClientCounts::new(2, 16, 12345);
    let a: IpAddr = "192.0.2.1".parse().unwrap();
    let b: IpAddr = "2001:db8::1".parse().unwrap();
    let a1 = counts.acquire(Some(a)).unwrap();
    let a2 = counts.acquire(Some(a)).unwrap();
    assert_eq!(a1, a2, "one slot per address");
    assert_ne!(a1, UNTRACKED);
    assert_eq!(
        counts.acquire(Some(a)),
        Err(a1),
        "at the limit: the address's slot"
    );
    assert_eq!(counts.count(a), 2);
    // Another address is counted apart.
    let b1 = counts.acquire(Some(b)).unwrap();
    assert_ne!(b1, UNTRACKED);
    assert_eq!(counts.count(b), 1);
    counts.release(a1);
    assert_eq!(counts.count(a), 1);
    let a3 = counts.acquire(Some(a)).unwrap();
    assert_eq!(counts.acquire(Some(a)), Err(a3));
    counts.release(a2);
    counts.release(a3);
    assert_eq!(counts.count(a), 0);
    // A freed slot is reused, by anyone.
    assert!(counts.acquire(Some(a)).is_ok());
    // No address, or no limit: let in, not counted.
    assert_eq!(counts.acquire(None), Ok(UNTRACKED));
    let off = ClientCounts::new(0, 16, 1);
    for _ in 0..10 {
        assert_eq!(off.acquire(Some(a)), Ok(UNTRACKED));
    }
    off.release(UNTRACKED);
}

#[test]
fn client_counts_with_many_addresses() {
    // As many addresses as connections allowed: a quarter of the table.
    let counts = ClientCounts::new(1, 1000, 7);
    let mut held = Vec::new();
    for i in 0..1000u32 {
        let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
        let s = counts
            .acquire(Some(ip))
            .expect("first connection of an address");
        held.push((ip, s));
    }
    let tracked = held.iter().filter(|(_, s)| *s != UNTRACKED).count();
    assert_eq!(tracked, 1000);
    for (ip, s) in &held {
        if *s != UNTRACKED {
            assert_eq!(counts.acquire(Some(*ip)), Err(*s), "{ip}");
        }
    }
    for (_, s) in held {
        counts.release(s);
    }
    assert!(counts
        .slots
        .iter()
        .all(|v| v.load(Relaxed) & COUNT_MASK == 0));
}
