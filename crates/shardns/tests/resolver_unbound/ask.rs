//! Asking both resolvers every query of the corpus, from several client threads: over UDP
//! with RD and EDNS, over TCP when truncated, each reply reduced to what is compared.

use crate::common;
use crate::corpus::Query;
use crate::topology::{SHARDNS, UNBOUND};
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{RData, RecordType};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Client threads, each asking one query of both resolvers at a time.
const CLIENTS: usize = 12;

/// What a resolver answered, reduced to what is compared.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reply {
    /// `None`: no answer at all (timeout).
    pub(crate) rcode: Option<ResponseCode>,
    pub(crate) aa: bool,
    pub(crate) ra: bool,
    pub(crate) tcp: bool,
    /// How long the answer took, in milliseconds.
    pub(crate) ms: u64,
    /// (lower-case owner, type, RDATA, TTL), sorted.
    pub(crate) answers: Vec<(String, RecordType, String, u32)>,
    /// Owners of SOA records in the authority section.
    pub(crate) soa: Vec<String>,
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(rcode) = self.rcode else {
            return write!(f, "no response");
        };
        write!(
            f,
            "{rcode:?}{}{}{} [",
            if self.aa { " aa" } else { "" },
            if self.ra { " ra" } else { "" },
            if self.tcp { " tcp" } else { "" }
        )?;
        for (i, (o, t, d, ttl)) in self.answers.iter().enumerate() {
            let sep = if i > 0 { ", " } else { "" };
            write!(f, "{sep}{o} {ttl} {t} {d}")?;
        }
        write!(f, "] soa {:?}", self.soa)
    }
}

pub(crate) fn run_corpus(corpus: &[Query]) -> Vec<(Reply, Reply)> {
    let shardns: SocketAddr = format!("{SHARDNS}:53").parse().unwrap();
    let unbound: SocketAddr = format!("{UNBOUND}:53").parse().unwrap();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(vec![(Reply::default(), Reply::default()); corpus.len()]);
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(q) = corpus.get(i) else { break };
                let id = i as u16;
                // Alternate who is asked first, so neither always has the warmer upstreams.
                let (s, u) = if i.is_multiple_of(2) {
                    let s = ask(shardns, q, id);
                    (s, ask(unbound, q, id))
                } else {
                    let u = ask(unbound, q, id);
                    (ask(shardns, q, id), u)
                };
                results.lock().unwrap()[i] = (s, u);
            });
        }
    });
    results.into_inner().unwrap()
}

/// Asks `q` with RD and EDNS (1232) over UDP, re-sending every 2 s for up to 12 s (beyond
/// shardns's 10 s resolution deadline); over TCP
/// when the answer is truncated.
pub(crate) fn ask(server: SocketAddr, q: &Query, id: u16) -> Reply {
    let start = Instant::now();
    let mut r = ask_udp(server, q, id);
    r.ms = start.elapsed().as_millis() as u64;
    r
}

fn ask_udp(server: SocketAddr, q: &Query, id: u16) -> Reply {
    let mut msg = common::query(id, &q.name, u16::from(q.qtype), Some(1232));
    msg[2] |= 0x01;
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    sock.connect(server).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(12);
    let mut buf = vec![0u8; 65535];
    let mut resend = Instant::now();
    while Instant::now() < end {
        if Instant::now() >= resend {
            sock.send(&msg).unwrap();
            resend = Instant::now() + Duration::from_secs(2);
        }
        let Ok(n) = sock.recv(&mut buf) else { continue };
        if n < 12 || buf[..2] != msg[..2] {
            continue;
        }
        let m = common::parse(&buf[..n]);
        if m.metadata.truncation {
            return ask_tcp(server, &msg);
        }
        return reply_of(&m, false);
    }
    Reply::default()
}

fn ask_tcp(server: SocketAddr, msg: &[u8]) -> Reply {
    let Ok(mut s) = TcpStream::connect_timeout(&server, Duration::from_secs(3)) else {
        return Reply::default();
    };
    s.set_read_timeout(Some(Duration::from_secs(12))).unwrap();
    if s.write_all(&common::frame(msg)).is_err() {
        return Reply::default();
    }
    let mut len = [0u8; 2];
    if s.read_exact(&mut len).is_err() {
        return Reply::default();
    }
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    if s.read_exact(&mut buf).is_err() {
        return Reply::default();
    }
    reply_of(&common::parse(&buf), true)
}

fn reply_of(m: &Message, tcp: bool) -> Reply {
    let mut answers: Vec<_> = m
        .answers
        .iter()
        .map(|r| {
            (
                r.name.to_string().to_ascii_lowercase(),
                r.record_type(),
                rdata_text(&r.data),
                r.ttl,
            )
        })
        .collect();
    answers.sort();
    let mut soa: Vec<String> = m
        .authorities
        .iter()
        .filter(|r| r.record_type() == RecordType::SOA)
        .map(|r| r.name.to_string().to_ascii_lowercase())
        .collect();
    soa.sort();
    Reply {
        rcode: Some(m.metadata.response_code),
        aa: m.metadata.authoritative,
        ra: m.metadata.recursion_available,
        tcp,
        ms: 0,
        answers,
        soa,
    }
}

/// RDATA in presentation form, names in lower case. hickory-proto keeps DNAME as unknown
/// bytes: its target (never compressed, RFC 6672 §2.5) is decoded here.
fn rdata_text(data: &RData) -> String {
    match data {
        RData::Unknown { code, rdata } if *code == RecordType::DNAME => {
            let mut out = String::new();
            let mut rest = &rdata.anything[..];
            while let Some((&len, tail)) = rest.split_first() {
                if len == 0 || usize::from(len) > tail.len() {
                    break;
                }
                out.push_str(&String::from_utf8_lossy(&tail[..usize::from(len)]));
                out.push('.');
                rest = &tail[usize::from(len)..];
            }
            if out.is_empty() {
                out.push('.');
            }
            out.to_ascii_lowercase()
        }
        d => d.to_string().to_ascii_lowercase(),
    }
}
