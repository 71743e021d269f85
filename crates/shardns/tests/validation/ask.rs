//! Asking a resolver: one query over UDP (three tries, TCP when truncated), the response
//! parsed by the dnssec test's `wire` (hickory-proto underneath) and its Extended DNS Error
//! codes read from the OPT record.

use crate::corpus::{How, Query};
use crate::wire::{parse_response, Resp, Q};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// A response with what `wire::Resp` does not keep.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    pub(crate) resp: Resp,
    /// EDE INFO-CODEs (RFC 8914), in order.
    pub(crate) ede: Vec<u16>,
    pub(crate) ms: u64,
}

static NEXT_ID: AtomicU16 = AtomicU16::new(1);

/// Asks `server` the question `q`, as `q.how` says.
pub(crate) fn ask(server: SocketAddr, q: &Query) -> Result<Reply, String> {
    let started = Instant::now();
    let mut query = Q {
        name: q.name.clone(),
        qtype: q.qtype,
        edns: Some((1232, q.how != How::Plain)),
        tcp: false,
        rd: true,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
    };
    let wire = |query: &Q| {
        let mut w = query.to_wire();
        if q.how == How::Cd {
            w[3] |= 0x10;
        }
        w
    };
    let mut buf = udp(server, query.id, &wire(&query))?;
    if buf.len() > 2 && buf[2] & 0x02 != 0 {
        query.tcp = true;
        buf = tcp(server, &wire(&query))?;
    }
    let resp = parse_response(&query, &buf)?;
    Ok(Reply {
        resp,
        ede: ede_codes(&buf),
        ms: started.elapsed().as_millis() as u64,
    })
}

fn udp(server: SocketAddr, id: u16, wire: &[u8]) -> Result<Vec<u8>, String> {
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
    // A validating resolver may take a few round trips of its own (bogus zones are retried).
    sock.set_read_timeout(Some(Duration::from_secs(4)))
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 65535];
    let mut last = String::from("no response");
    for _ in 0..3 {
        sock.send_to(wire, server).map_err(|e| e.to_string())?;
        match sock.recv_from(&mut buf) {
            Ok((n, from)) if from == server && n >= 2 && buf[..2] == id.to_be_bytes() => {
                buf.truncate(n);
                return Ok(buf);
            }
            Ok(_) => last = "a stray datagram".into(),
            Err(e) => last = format!("no response ({e})"),
        }
    }
    Err(last)
}

fn tcp(server: SocketAddr, wire: &[u8]) -> Result<Vec<u8>, String> {
    let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(2))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(8)))
        .map_err(|e| e.to_string())?;
    let mut framed = (wire.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(wire);
    s.write_all(&framed).map_err(|e| e.to_string())?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut buf).map_err(|e| e.to_string())?;
    Ok(buf)
}

/// Skips a (possibly compressed) name at `at`; the offset after it.
fn skip_name(buf: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *buf.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xC0 == 0xC0 => return Some(at + 2),
            l => at += 1 + usize::from(l),
        }
    }
}

/// The EDE codes (option 15) of the message's OPT record.
pub(crate) fn ede_codes(buf: &[u8]) -> Vec<u16> {
    let get16 = |at: usize| {
        buf.get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let mut out = Vec::new();
    let (Some(qd), Some(an), Some(ns), Some(ar)) = (get16(4), get16(6), get16(8), get16(10)) else {
        return out;
    };
    let mut at = 12;
    for _ in 0..qd {
        let Some(next) = skip_name(buf, at) else {
            return out;
        };
        at = next + 4;
    }
    for i in 0..(u32::from(an) + u32::from(ns) + u32::from(ar)) {
        let Some(next) = skip_name(buf, at) else {
            return out;
        };
        let (Some(rtype), Some(rdlen)) = (get16(next), get16(next + 8)) else {
            return out;
        };
        let rdata = next + 10;
        if rtype == 41 && i >= u32::from(an) + u32::from(ns) {
            let mut o = rdata;
            while o + 4 <= rdata + usize::from(rdlen) {
                let (Some(code), Some(len)) = (get16(o), get16(o + 2)) else {
                    break;
                };
                if code == 15 {
                    if let Some(info) = get16(o + 4) {
                        out.push(info);
                    }
                }
                o += 4 + usize::from(len);
            }
        }
        at = rdata + usize::from(rdlen);
    }
    out
}
