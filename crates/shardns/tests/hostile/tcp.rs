//! TCP: the hostile inputs pipelined as frames on one connection, and the framing attacks
//! (empty frames, frames shorter or longer than announced, half-open connections, clients
//! that vanish mid-frame, pipelined garbage, 65,535-octet frames), with the open-connection
//! count back at its baseline afterwards.

use crate::assert_service;
use crate::common::*;
use crate::messages::Rng;
use crate::oracle::{check_response, classify, u16_at};
use crate::tally::{count_tcp, hex, Tally};
use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Cuts a byte stream into complete TCP frames (RFC 1035 §4.2.2), as a server must.
fn deframe(mut bytes: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    while let Some(len) = u16_at(bytes, 0) {
        let Some(f) = bytes.get(2..2 + usize::from(len)) else {
            break;
        };
        frames.push(f);
        bytes = &bytes[2 + usize::from(len)..];
    }
    frames
}

/// What a TCP exchange gave back.
struct TcpResult {
    responses: Vec<Vec<u8>>,
    /// The server closed the connection (EOF or reset).
    closed: bool,
    /// The sentinel query (if any) was answered.
    sentinel_answered: bool,
}

/// Writes `bytes` on a new connection (from a second thread, so a server that answers
/// while we write never stalls on a full socket), then reads responses until the
/// `sentinel` ID is answered, the server closes, or `limit` passes.
fn tcp_stream(
    addr: SocketAddr,
    bytes: Vec<u8>,
    sentinel: Option<u16>,
    limit: Duration,
) -> TcpResult {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&bytes);
    });
    let end = Instant::now() + limit;
    let mut out = TcpResult {
        responses: Vec::new(),
        closed: false,
        sentinel_answered: false,
    };
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match read_frame(&mut s) {
            Ok(r) => {
                if sentinel.is_some_and(|id| u16_at(&r, 0) == Some(id)) {
                    out.sentinel_answered = true;
                    out.responses.push(r);
                    break;
                }
                out.responses.push(r);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
            Err(_) => {
                out.closed = true;
                break;
            }
        }
    }
    // Unblocks the writer too if the server stopped reading.
    let _ = s.shutdown(std::net::Shutdown::Both);
    writer.join().unwrap();
    out
}

/// Sends `frames` pipelined in one stream with a valid query last; checks each response
/// against the oracle (matched by ID; the IDs are made unique) and that every frame that
/// must be answered was, and the valid query too.
pub(crate) fn tcp_pipeline(
    addr: SocketAddr,
    kind: &'static str,
    frames: &[Vec<u8>],
    tally: &mut Tally,
) {
    let mut msgs: Vec<Vec<u8>> = frames.to_vec();
    for (i, m) in msgs.iter_mut().enumerate() {
        if m.len() >= 2 {
            m[..2].copy_from_slice(&(0x2000 + i as u16).to_be_bytes());
        }
    }
    let sentinel = query(0xfffe, "www.hostile.test", 1, None);
    let mut stream: Vec<u8> = msgs.iter().flat_map(|m| frame(m)).collect();
    stream.extend_from_slice(&frame(&sentinel));
    let r = tcp_stream(addr, stream, Some(0xfffe), Duration::from_secs(10));
    assert!(
        r.sentinel_answered,
        "{kind}: valid query after {} frames unanswered (closed: {}, {} responses)",
        msgs.len(),
        r.closed,
        r.responses.len()
    );
    let mut by_id: HashMap<u16, Vec<u8>> = HashMap::new();
    for resp in &r.responses {
        let id = u16_at(resp, 0).expect("a response shorter than 2 octets");
        assert!(
            by_id.insert(id, resp.clone()).is_none(),
            "{kind}: two responses with ID {id:#x}"
        );
    }
    let sentinel_resp = by_id.remove(&0xfffe).unwrap();
    check_response(&sentinel, &classify(&sentinel), &sentinel_resp, true).unwrap();
    let t = tally.0.entry(kind).or_default();
    for (i, m) in msgs.iter().enumerate() {
        let exp = classify(m);
        t.tcp += 1;
        match by_id.remove(&(0x2000 + i as u16)).filter(|_| m.len() >= 2) {
            None => {
                assert!(
                    !exp.must_answer(),
                    "{kind}: frame {i} unanswered over TCP: {}, expected {exp:?}",
                    hex(m)
                );
                t.silent += 1;
            }
            Some(resp) => match check_response(m, &exp, &resp, true) {
                Ok(rcode) => *t.rcodes.entry(rcode).or_default() += 1,
                Err(e) => panic!(
                    "{kind} frame {i} over TCP: {e}\nquery    {}\nresponse {}",
                    hex(m),
                    hex(&resp)
                ),
            },
        }
    }
    assert!(
        by_id.is_empty(),
        "{kind}: {} responses to nothing we sent",
        by_id.len()
    );
}

fn open_connections(server: &Server) -> f64 {
    server.stat("shardns_tcp_connections_open")
}

fn wait_open_connections(server: &Server, want: f64, limit: Duration) {
    let end = Instant::now() + limit;
    while open_connections(server) != want {
        assert!(
            Instant::now() < end,
            "open TCP connections stay at {}, expected {want}",
            open_connections(server)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn tcp_framing_attacks(server: &Server, tally: &mut Tally) {
    let addr = server.addr4();
    let good = |id: u16| query(id, "www.hostile.test", 1, None);
    let baseline = open_connections(server);

    // Zero-length frames: nothing to answer (no ID); the valid query after them is.
    for n in [1usize, 2, 100, 1000] {
        let mut stream = vec![0u8; 2 * n];
        stream.extend_from_slice(&frame(&good(0x0a00)));
        let r = tcp_stream(addr, stream, Some(0x0a00), Duration::from_secs(5));
        assert!(
            r.sentinel_answered,
            "{n} zero-length frames: valid query unanswered (closed: {})",
            r.closed
        );
        assert_eq!(r.responses.len(), 1, "{n} zero-length frames answered");
        count_tcp(tally, "tcp empty frame", 1);
    }
    // Interleaved: empty, query, empty, query...
    let mut stream = Vec::new();
    for i in 0..50u16 {
        stream.extend_from_slice(&[0, 0]);
        stream.extend_from_slice(&frame(&good(0x0b00 + i)));
    }
    let r = tcp_stream(addr, stream, Some(0x0b00 + 49), Duration::from_secs(5));
    assert!(
        r.sentinel_answered && r.responses.len() == 50,
        "interleaved empty frames"
    );
    count_tcp(tally, "tcp empty frame", 1);

    // Frames shorter than announced, then the client half-closes: nothing is answered and
    // the server closes its side.
    let q = good(0x0c00);
    for (announce, send) in [
        (100usize, 50usize),
        (65535, 10),
        (q.len(), q.len() - 1),
        (12, 0),
        (12, 11),
    ] {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&(announce as u16).to_be_bytes()).unwrap();
        s.write_all(
            &q.iter()
                .copied()
                .chain(std::iter::repeat(0))
                .take(send)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(
            closed_by_server(&mut s, Duration::from_secs(5)),
            "announced {announce}, sent {send}, half-closed: not closed silently"
        );
        count_tcp(tally, "tcp short frame", 1);
    }
    // Frames longer than announced: the first frame is cut short (FORMERR or nothing), the
    // rest of its bytes start the next frame. Every response must fit the frames the stream
    // really holds; the connection ends by the idle timeout or is closed at once.
    for (cut, tail) in [
        (1usize, 0usize),
        (3, 0),
        (q.len() - 4, 4),
        (q.len() - 12, 30),
        (2, 500),
    ] {
        let mut stream = ((q.len() - cut) as u16).to_be_bytes().to_vec();
        stream.extend_from_slice(&q);
        let mut rng = Rng(cut as u64 * 7919 + tail as u64 + 1);
        stream.extend_from_slice(&rng.bytes(tail));
        stream.extend_from_slice(&frame(&good(0x0c01)));
        let frames: Vec<Vec<u8>> = deframe(&stream).into_iter().map(<[u8]>::to_vec).collect();
        let r = tcp_stream(addr, stream, Some(0x0c01), Duration::from_secs(4));
        for resp in &r.responses {
            let ok = frames.iter().any(|f| {
                f.len() >= 2
                    && f[..2] == resp[..2]
                    && check_response(f, &classify(f), resp, true).is_ok()
            });
            assert!(
                ok,
                "frame {cut} octets longer than announced: response {} fits no frame sent",
                hex(resp)
            );
        }
        count_tcp(tally, "tcp long frame", 1);
    }

    // A length prefix then silence, and one octet of a length prefix: closed by the idle
    // timeout (1 s here) while other clients are served.
    let mut half_open = Vec::new();
    for prefix in [&[0u8, 40][..], &[0], &[0, 40, 1, 2, 3]] {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(prefix).unwrap();
        half_open.push((prefix.len(), s, Instant::now()));
    }
    assert_service(server, "half-open connections");
    for (len, mut s, since) in half_open {
        assert!(
            closed_by_server(&mut s, Duration::from_secs(5)),
            "{len} octets then silence: never closed"
        );
        let waited = since.elapsed();
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
            "closed after {waited:?}"
        );
        count_tcp(tally, "tcp half-open", 1);
    }

    // Clients that close (or reset) mid-frame.
    for i in 0..60u16 {
        let mut s = TcpStream::connect(addr).unwrap();
        let q = good(0x0d00 + i);
        let mut bytes = frame(&q);
        bytes.truncate(2 + usize::from(i) % q.len());
        s.write_all(&bytes).unwrap();
        if i % 2 == 1 {
            reset_on_close(&s);
        }
        drop(s);
        count_tcp(tally, "tcp close mid-frame", 1);
    }
    wait_open_connections(server, baseline, Duration::from_secs(5));

    // Pipelined garbage: 2,000 random frames of 0 to 100 octets in one write.
    let mut rng = Rng(0x5eed);
    let garbage: Vec<Vec<u8>> = (0..2000)
        .map(|_| {
            let len = (rng.next() % 101) as usize;
            let mut m = rng.bytes(len);
            if len > 2 {
                m[2] &= 0x7f;
            }
            m
        })
        .collect();
    for chunk in garbage.chunks(1000) {
        tcp_pipeline(addr, "tcp garbage frames", chunk, tally);
    }
    let t = tally.0.entry("tcp garbage frames").or_default();
    t.inputs += garbage.len();

    // One 65,535-octet frame of garbage (and one with a valid question at its start).
    let mut big = rng.bytes(65535);
    big[2] &= 0x7f;
    let mut big_query = query(0x0e00, "www.hostile.test", 1, None);
    big_query.resize(65535, 0xee);
    for (i, m) in [big, big_query].into_iter().enumerate() {
        tcp_pipeline(addr, "tcp 65535 frame", &[m], tally);
        tally.0.entry("tcp 65535 frame").or_default().inputs += 1;
        let _ = i;
    }
    wait_open_connections(server, baseline, Duration::from_secs(5));
}

/// Makes closing `s` send a reset (SO_LINGER with a zero timeout).
fn reset_on_close(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `s` is an open socket; the option value is a valid `linger` of the size given.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER)");
}
