//! Tests of the sys module, on loopback: UDP batches both ways, epoll and eventfd.

use super::mmsg::{Flushed, UDP_QUERY_MAX};
use super::*;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

#[test]
fn batch_round_trip_on_loopback() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut batch = UdpBatch::new(8);
    assert_eq!(
        batch.recv(server.as_raw_fd()).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    for i in 0..3u8 {
        client
            .send_to(&[i; 5], server.local_addr().unwrap())
            .unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let n = batch.recv(server.as_raw_fd()).unwrap();
    assert_eq!(n, 3);
    for i in 0..n {
        assert_eq!(batch.peer(i), Some(client.local_addr().unwrap()));
        assert_eq!(batch.query(i), Some(&[i as u8; 5][..]));
        let (q, out) = batch.query_and_response(i, i);
        let q = q.unwrap().to_vec();
        assert_eq!(q, vec![i as u8; 5]);
        out[..5].copy_from_slice(&q);
        out[0] += 10;
        batch.queue(i, 5);
    }
    assert_eq!(batch.send(server.as_raw_fd(), 0).unwrap(), 3);
    let mut buf = [0u8; 16];
    for i in 0..3u8 {
        let (len, from) = client.recv_from(&mut buf).unwrap();
        assert_eq!(from, server.local_addr().unwrap());
        assert_eq!(&buf[..len], &[i + 10, i, i, i, i]);
    }
}

#[test]
fn oversized_datagram_is_flagged() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .send_to(&vec![7u8; UDP_QUERY_MAX + 10], server.local_addr().unwrap())
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut batch = UdpBatch::new(2);
    assert_eq!(batch.recv(server.as_raw_fd()).unwrap(), 1);
    assert!(batch.query_and_response(0, 0).0.is_none());
    assert_eq!(batch.query(0), None);
    assert_eq!(batch.query(1), None, "past the datagrams received");
}

#[test]
fn send_batch_groups_by_socket() {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    let to = client.local_addr().unwrap();
    let mut batch = SendBatch::new(4, 8);
    // Interleaved sockets; socket 2 is unknown to `fd_of`.
    for (socket, byte) in [(0, 1u8), (1, 2), (0, 3), (2, 4)] {
        assert!(batch.push(socket, to, &[byte; 3]));
    }
    assert!(batch.is_full());
    assert!(
        !batch.push(0, to, &[5; 3]),
        "a fifth datagram in a batch of four"
    );
    let fds = [a.as_raw_fd(), b.as_raw_fd()];
    let done = batch.flush(|i| fds.get(i).copied());
    assert_eq!(
        done,
        Flushed {
            calls: 2,
            sent: 3,
            dropped: 1
        }
    );
    assert_eq!(batch.len(), 0);
    let mut got = Vec::new();
    let mut buf = [0u8; 16];
    for _ in 0..3 {
        let (n, from) = client.recv_from(&mut buf).unwrap();
        got.push((from, buf[..n].to_vec()));
    }
    got.sort_by_key(|(_, d)| d[0]);
    let (a, b) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    assert_eq!(got, vec![(a, vec![1; 3]), (b, vec![2; 3]), (a, vec![3; 3])]);
    // Too long for a slot: refused. An empty batch flushes with no call.
    assert!(!batch.push(0, to, &[0; 9]));
    assert_eq!(batch.flush(|i| fds.get(i).copied()), Flushed::default());
}

#[test]
fn eventfd_wakes_epoll() {
    let ep = Epoll::new().unwrap();
    let ev = EventFd::new().unwrap();
    ep.add(ev.fd(), 7, READABLE).unwrap();
    let mut events = Events::with_capacity(4);
    ep.wait(&mut events, 0).unwrap();
    assert_eq!(events.iter().count(), 0);
    ev.wake();
    ep.wait(&mut events, 1000).unwrap();
    assert_eq!(events.iter().collect::<Vec<_>>(), vec![(7, READABLE)]);
    ev.drain();
    ep.wait(&mut events, 0).unwrap();
    assert_eq!(events.iter().count(), 0);
}

#[test]
fn bytes_moved_piece_by_piece_are_the_bytes() {
    let v: Vec<u8> = (0..100_003u32).map(|i| (i * 7 % 251) as u8).collect();
    for piece in [1, 7, 4096, 100_003, 1 << 20] {
        assert_eq!(&arc_from_bytes(v.clone(), piece)[..], &v[..], "{piece}");
    }
    assert!(arc_from_bytes(Vec::new(), 16).is_empty());
}
