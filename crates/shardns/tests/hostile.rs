//! End-to-end: well over a thousand hostile inputs, generated from a few valid queries, thrown
//! at a running server over UDP and TCP. Each is judged by an oracle written here from the
//! RFCs, not from our code: a datagram shorter than a header or with QR set gets nothing; an
//! unknown opcode gets NOTIMP; a malformed query FORMERR (or nothing); an EDNS version other
//! than 0 BADVERS; a well-formed query the answer the zone data says, or REFUSED outside the
//! zone. Every response must parse with hickory-proto, echo the ID and opcode, and fit the
//! transport. After each batch, valid queries over UDP and TCP must still get the zone's
//! answers. The TCP half adds framing attacks: empty frames, frames shorter or longer than
//! announced, half-open connections, clients that vanish mid-frame, floods of pipelined
//! garbage and a 65,535-octet frame.
//!
//! `robustness.rs` covers idle connections, limits and a hand-written list of malformed
//! datagrams; this file generates its inputs and judges each one against the oracle.

mod common;

use common::*;
use hickory_proto::op::Message;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

const APEX: &str = "hostile.test";

const ZONE: &str = "\
$TTL 300
@     SOA  ns1 hostmaster 7 7200 3600 1209600 300
@     NS   ns1
@     NS   ns2
@     MX   10 mail
@     TXT  \"hostile test zone\"
ns1   A    192.0.2.53
ns2   AAAA 2001:db8::53
www   A    192.0.2.80
www   A    192.0.2.81
www   AAAA 2001:db8::80
mail  A    192.0.2.25
mail  MX   10 mail
";

/// The zone's records as (owner, type, hickory's presentation of the rdata).
const RECORDS: &[(&str, u16, &str)] = &[
    (
        "hostile.test",
        6,
        "ns1.hostile.test. hostmaster.hostile.test. 7 7200 3600 1209600 300",
    ),
    ("hostile.test", 2, "ns1.hostile.test."),
    ("hostile.test", 2, "ns2.hostile.test."),
    ("hostile.test", 15, "10 mail.hostile.test."),
    ("hostile.test", 16, "hostile test zone"),
    ("ns1.hostile.test", 1, "192.0.2.53"),
    ("ns2.hostile.test", 28, "2001:db8::53"),
    ("www.hostile.test", 1, "192.0.2.80"),
    ("www.hostile.test", 1, "192.0.2.81"),
    ("www.hostile.test", 28, "2001:db8::80"),
    ("mail.hostile.test", 1, "192.0.2.25"),
    ("mail.hostile.test", 15, "10 mail.hostile.test."),
];

const NOERROR: u16 = 0;
const FORMERR: u16 = 1;
const NXDOMAIN: u16 = 3;
const NOTIMP: u16 = 4;
const REFUSED: u16 = 5;
const BADVERS: u16 = 16;

// ---------------------------------------------------------------------------------------
// The oracle: what RFC 1035, 6891 and 7766 say a server does with a message.

#[derive(Debug, Clone, PartialEq)]
struct Question {
    labels: Vec<Vec<u8>>,
    qtype: u16,
    qclass: u16,
}

impl Question {
    /// The name in lower case, dot-separated, without the final dot (for the zone table).
    fn lower(&self) -> String {
        let mut s = String::new();
        for (i, l) in self.labels.iter().enumerate() {
            if i > 0 {
                s.push('.');
            }
            s.push_str(&String::from_utf8_lossy(&l.to_ascii_lowercase()));
        }
        s
    }
    fn in_zone(&self) -> bool {
        let n = self.labels.len();
        n >= 2
            && self.labels[n - 2].eq_ignore_ascii_case(b"hostile")
            && self.labels[n - 1].eq_ignore_ascii_case(b"test")
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Edns {
    udp_size: u16,
}

#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// Shorter than a header, or a response: never answered.
    Silence,
    /// Malformed: FORMERR or nothing.
    FormErr,
    /// An opcode other than QUERY: NOTIMP (FORMERR if the server also finds it malformed).
    NotImp,
    /// A well-formed query with an EDNS version other than 0: BADVERS (RFC 6891 §6.1.3).
    BadVers(Question),
    /// A well-formed query. `lenient`: it does something RFCs discourage but a server may
    /// accept (a compression pointer in the question, a malformed option list, records in a
    /// query): FORMERR or nothing is then also acceptable.
    Query {
        q: Question,
        edns: Option<Edns>,
        lenient: bool,
    },
}

impl Expect {
    /// Whether a correct server must send a response.
    fn must_answer(&self) -> bool {
        match self {
            Expect::Silence | Expect::FormErr => false,
            Expect::NotImp | Expect::BadVers(_) => true,
            Expect::Query { lenient, .. } => !lenient,
        }
    }
}

/// A name read at `start` (a plain decoder: labels, pointers, 255 octets, hop limit).
struct NameRead {
    labels: Vec<Vec<u8>>,
    end: usize,
    /// A pointer that points forward, into the header, or at another pointer: nothing
    /// a compressor writes, but not forbidden outright either.
    odd_pointer: bool,
    pointer: bool,
}

fn read_name(m: &[u8], start: usize) -> Option<NameRead> {
    let mut pos = start;
    let mut end = None;
    let mut labels = Vec::new();
    let (mut wire_len, mut hops, mut odd, mut pointer) = (1usize, 0, false, false);
    loop {
        let b = *m.get(pos)?;
        match b >> 6 {
            0 if b == 0 => {
                return Some(NameRead {
                    labels,
                    end: end.unwrap_or(pos + 1),
                    odd_pointer: odd,
                    pointer,
                })
            }
            0 => {
                let l = m.get(pos + 1..pos + 1 + usize::from(b))?;
                wire_len += 1 + usize::from(b);
                if wire_len > 255 {
                    return None;
                }
                labels.push(l.to_vec());
                pos += 1 + usize::from(b);
            }
            3 => {
                let target = usize::from(b & 0x3f) << 8 | usize::from(*m.get(pos + 1)?);
                end.get_or_insert(pos + 2);
                pointer = true;
                if target >= pos || target < 12 || m.get(target).is_some_and(|t| t >> 6 == 3) {
                    odd = true;
                }
                hops += 1;
                // Without a loop, no position is visited twice.
                if hops > m.len() {
                    return None;
                }
                pos = target;
            }
            _ => return None,
        }
    }
}

/// Where the name at `pos` ends, read as a server skips a name it does not need: labels up
/// to a root label or a pointer, without following the pointer.
fn skip_name(m: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let b = *m.get(pos)?;
        match b >> 6 {
            0 if b == 0 => return Some(pos + 1),
            0 => pos += 1 + usize::from(b),
            3 => return m.get(pos + 1).map(|_| pos + 2),
            _ => return None,
        }
    }
}

fn u16_at(m: &[u8], pos: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*m.get(pos)?, *m.get(pos + 1)?]))
}

/// True if `data` is a well-formed EDNS option list.
fn options_ok(mut data: &[u8]) -> bool {
    while !data.is_empty() {
        let Some(len) = u16_at(data, 2) else {
            return false;
        };
        let Some(rest) = data.get(4 + usize::from(len)..) else {
            return false;
        };
        data = rest;
    }
    true
}

/// What a server should do with the message `m`.
fn classify(m: &[u8]) -> Expect {
    if m.len() < 12 || m[2] & 0x80 != 0 {
        return Expect::Silence;
    }
    if (m[2] >> 3) & 0x0f != 0 {
        return Expect::NotImp;
    }
    let count = |i: usize| usize::from(u16::from_be_bytes([m[4 + 2 * i], m[5 + 2 * i]]));
    if count(0) != 1 {
        return Expect::FormErr;
    }
    let Some(qn) = read_name(m, 12) else {
        return Expect::FormErr;
    };
    let (Some(qtype), Some(qclass)) = (u16_at(m, qn.end), u16_at(m, qn.end + 2)) else {
        return Expect::FormErr;
    };
    let q = Question {
        labels: qn.labels,
        qtype,
        qclass,
    };
    let mut lenient = qn.pointer;
    let mut pos = qn.end + 4;
    let mut edns = None;
    let mut version = 0;
    let (answer_and_authority, total) = (count(1) + count(2), count(1) + count(2) + count(3));
    for i in 0..total {
        let owner = match (read_name(m, pos), skip_name(m, pos)) {
            (Some(owner), _) => owner,
            // A pointer loop or a name over 255 octets in a record a server has no reason
            // to decompress: it may skip the name (labels, then a pointer) without noticing.
            (None, Some(end)) => {
                lenient = true;
                NameRead {
                    labels: vec![b"?".to_vec()],
                    end,
                    odd_pointer: true,
                    pointer: true,
                }
            }
            (None, None) => return Expect::FormErr,
        };
        lenient |= owner.odd_pointer;
        let Some(rtype) = u16_at(m, owner.end) else {
            return Expect::FormErr;
        };
        let (Some(class), Some(ttl_hi), Some(_), Some(rdlen)) = (
            u16_at(m, owner.end + 2),
            u16_at(m, owner.end + 4),
            u16_at(m, owner.end + 6),
            u16_at(m, owner.end + 8),
        ) else {
            return Expect::FormErr;
        };
        let start = owner.end + 10;
        let Some(rdata) = m.get(start..start + usize::from(rdlen)) else {
            return Expect::FormErr;
        };
        pos = start + usize::from(rdlen);
        if rtype == 41 {
            // RFC 6891 §6.1.1: one OPT, in the additional section, owned by the root.
            if i < answer_and_authority || edns.is_some() || !owner.labels.is_empty() {
                return Expect::FormErr;
            }
            lenient |= owner.pointer || !options_ok(rdata);
            version = ttl_hi as u8;
            edns = Some(Edns { udp_size: class });
        } else {
            lenient = true;
        }
    }
    if pos != m.len() {
        return Expect::FormErr;
    }
    if edns.is_some() && version != 0 {
        return Expect::BadVers(q);
    }
    Expect::Query { q, edns, lenient }
}

/// The RCODEs a correct server may give a well-formed query, and the exact answer section
/// (sorted `TYPE rdata` strings) when the zone data decides it.
fn expected(q: &Question, tcp: bool) -> (Vec<u16>, Option<Vec<String>>) {
    if q.qclass != 1 && q.qclass != 255 {
        return (vec![REFUSED, NOTIMP], None);
    }
    match q.qtype {
        41 | 249 | 250 => return (vec![FORMERR, NOTIMP, REFUSED], None),
        251 | 252 if tcp => return (vec![REFUSED, NOTIMP], None),
        251 | 252 => return (vec![REFUSED, NOTIMP, FORMERR], None),
        0 => return (vec![NOTIMP, FORMERR, REFUSED], None),
        _ => {}
    }
    if !q.in_zone() {
        return (vec![REFUSED], None);
    }
    if q.qclass == 255 || (128..=255).contains(&q.qtype) {
        return (vec![NOERROR, NXDOMAIN, NOTIMP, REFUSED], None);
    }
    let name = q.lower();
    if !RECORDS.iter().any(|r| r.0 == name) {
        return (vec![NXDOMAIN], Some(Vec::new()));
    }
    let mut want: Vec<String> = RECORDS
        .iter()
        .filter(|r| r.0 == name && r.1 == q.qtype)
        .map(|r| format!("{} {}", hickory_proto::rr::RecordType::from(r.1), r.2).to_lowercase())
        .collect();
    want.sort();
    (vec![NOERROR], Some(want))
}

/// Checks `resp`, a response to `input`, against the oracle; returns its RCODE.
fn check_response(input: &[u8], exp: &Expect, resp: &[u8], tcp: bool) -> Result<u16, String> {
    if *exp == Expect::Silence {
        return Err("answered a message that must get no response".into());
    }
    let m = Message::from_vec(resp).map_err(|e| format!("response does not parse: {e}"))?;
    if resp[..2] != input[..2] {
        return Err("ID not echoed".into());
    }
    if resp[2] & 0x80 == 0 {
        return Err("QR not set".into());
    }
    if (resp[2] ^ input[2]) & 0x78 != 0 {
        return Err("opcode not echoed".into());
    }
    let rcode = u16::from(m.metadata.response_code);
    let check_rcode = |allowed: &[u16]| {
        if allowed.contains(&rcode) {
            Ok(())
        } else {
            Err(format!("RCODE {rcode}, expected one of {allowed:?}"))
        }
    };
    let no_answers = || {
        if m.answers.is_empty() {
            Ok(())
        } else {
            Err(format!("RCODE {rcode} with {} answers", m.answers.len()))
        }
    };
    match exp {
        Expect::Silence => unreachable!(),
        Expect::FormErr => {
            check_rcode(&[FORMERR])?;
            no_answers()?;
        }
        Expect::NotImp => {
            check_rcode(&[NOTIMP, FORMERR])?;
            no_answers()?;
        }
        Expect::BadVers(q) => {
            check_rcode(&[BADVERS])?;
            no_answers()?;
            if m.edns.is_none() {
                return Err("BADVERS without an OPT record".into());
            }
            check_question(resp, q)?;
        }
        Expect::Query { q, edns, lenient } => {
            let (mut allowed, want) = expected(q, tcp);
            if *lenient {
                allowed.push(FORMERR);
            }
            check_rcode(&allowed)?;
            if rcode == FORMERR {
                no_answers()?;
                return Ok(rcode);
            }
            check_question(resp, q)?;
            if edns.is_some() != m.edns.is_some() {
                return Err(format!(
                    "query EDNS {}, response EDNS {}",
                    edns.is_some(),
                    m.edns.is_some()
                ));
            }
            if !tcp {
                let limit = edns.map_or(512, |e| usize::from(e.udp_size).max(512));
                if resp.len() > limit {
                    return Err(format!("{} octets over UDP, limit {limit}", resp.len()));
                }
            }
            if let Some(want) = want {
                if m.metadata.truncation {
                    return Err("truncated".into());
                }
                if !m.metadata.authoritative {
                    return Err("AA not set on an answer from the zone".into());
                }
                let owner = format!("{}.", q.lower());
                for r in &m.answers {
                    if r.name.to_lowercase().to_string() != owner {
                        return Err(format!("answer owner {} for {owner}", r.name));
                    }
                }
                // Names compare without case (a target may be compressed to the question).
                let got: Vec<String> = answers(&m).iter().map(|a| a.to_lowercase()).collect();
                if got != want {
                    return Err(format!("answers {got:?}, zone has {want:?}"));
                }
            }
        }
    }
    Ok(rcode)
}

/// The response's question must be the query's, as the query spelled it.
fn check_question(resp: &[u8], q: &Question) -> Result<(), String> {
    if u16_at(resp, 4) != Some(1) {
        return Err("response without the question".into());
    }
    let n = read_name(resp, 12).ok_or("unreadable question name in the response")?;
    let got = Question {
        labels: n.labels,
        qtype: u16_at(resp, n.end).unwrap_or(0),
        qclass: u16_at(resp, n.end + 2).unwrap_or(0),
    };
    if got != *q {
        return Err(format!("question {got:?}, asked {q:?}"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Building messages.

fn set_count(m: &mut [u8], section: usize, v: u16) {
    m[4 + 2 * section..6 + 2 * section].copy_from_slice(&v.to_be_bytes());
}

/// An EDNS option: code and data.
type EdnsOption<'a> = (u16, &'a [u8]);

/// An OPT record: UDP size, extended RCODE, version, flags, options.
fn opt(size: u16, ext: u8, version: u8, flags: u16, options: &[(u16, &[u8])]) -> Vec<u8> {
    let mut rdata = Vec::new();
    for (code, data) in options {
        rdata.extend_from_slice(&code.to_be_bytes());
        rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
        rdata.extend_from_slice(data);
    }
    opt_raw(size, ext, version, flags, &rdata)
}

fn opt_raw(size: u16, ext: u8, version: u8, flags: u16, rdata: &[u8]) -> Vec<u8> {
    let mut r = vec![0, 0, 41];
    r.extend_from_slice(&size.to_be_bytes());
    r.extend_from_slice(&[ext, version]);
    r.extend_from_slice(&flags.to_be_bytes());
    r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    r.extend_from_slice(rdata);
    r
}

/// A query: header with `counts`, a question (`qname` in wire form), then `rest`.
fn raw_query(id: u16, counts: [u16; 4], qname: &[u8], qtype: u16, rest: &[u8]) -> Vec<u8> {
    let mut m = header(id, 0, counts);
    m.extend_from_slice(qname);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(rest);
    m
}

/// A well-formed query for `name`/`qtype` with an OPT record.
fn edns_query(id: u16, name: &str, qtype: u16, opt_rr: &[u8]) -> Vec<u8> {
    raw_query(id, [1, 0, 0, 1], &wire_name(name), qtype, opt_rr)
}

/// A small deterministic generator (xorshift64*): the inputs are the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The valid queries the bit flips and truncations start from.
fn seeds() -> Vec<Vec<u8>> {
    vec![
        query(0x1001, "www.hostile.test", 1, None),
        edns_query(
            0x1002,
            "mail.hostile.test",
            15,
            &opt(1232, 0, 0, 0x8000, &[]),
        ),
        edns_query(
            0x1003,
            "hostile.test",
            6,
            &opt(4096, 0, 0, 0, &[(3, &[]), (10, &[1, 2, 3, 4, 5, 6, 7, 8])]),
        ),
    ]
}

/// Every hostile datagram, as (kind, description, bytes).
fn hostile_inputs() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut v: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let seeds = seeds();
    let www = wire_name("www.hostile.test");

    for (s, q) in seeds.iter().enumerate() {
        for bit in 0..q.len() * 8 {
            let mut m = q.clone();
            m[bit / 8] ^= 0x80 >> (bit % 8);
            v.push(("bit flip", format!("seed {s} bit {bit}"), m));
        }
        for cut in 0..q.len() {
            v.push((
                "truncation",
                format!("seed {s} cut at {cut}"),
                q[..cut].to_vec(),
            ));
        }
    }

    // Compression pointers.
    let ptr = |at: usize| vec![0xc0 | (at >> 8) as u8, at as u8];
    for target in 0..=12 {
        v.push((
            "pointer",
            format!("question name points to offset {target}"),
            raw_query(0x2000, [1, 0, 0, 0], &ptr(target), 1, &[]),
        ));
    }
    for (what, at) in [("past the end", 0xff), ("far past the end", 0x3fff)] {
        v.push((
            "pointer",
            format!("question pointer {what}"),
            raw_query(0x2001, [1, 0, 0, 0], &ptr(at), 1, &[]),
        ));
    }
    v.push((
        "pointer",
        "question ends in half a pointer".into(),
        header(0x2002, 0, [1, 0, 0, 0])
            .into_iter()
            .chain([3, b'w', b'w', b'w', 0xc0])
            .collect(),
    ));
    // Loops of k labels, each pointing to the next, the last to the first.
    for k in 1..=8usize {
        let mut name = Vec::new();
        for i in 0..k {
            let next = 12 + 4 * ((i + 1) % k);
            name.extend_from_slice(&[1, b'a' + i as u8]);
            name.extend_from_slice(&ptr(next));
        }
        v.push((
            "pointer",
            format!("{k}-step pointer loop"),
            raw_query(0x2003, [1, 0, 0, 0], &name, 1, &[]),
        ));
    }
    // A forward pointer to a real name after the question (in an additional record's owner).
    {
        let q_len = 12 + 2 + 4;
        let mut m = raw_query(0x2004, [1, 0, 0, 1], &ptr(q_len), 1, &[]);
        m.extend_from_slice(&record(&www, 1, &[192, 0, 2, 1]));
        v.push(("pointer", "forward pointer in the question".into(), m));
    }
    // A pointer chain: pointers to pointers, ending at the question name.
    for hops in [2usize, 16, 100, 200] {
        let mut m = raw_query(0x2005, [1, 0, 0, 1], &www, 1, &[]);
        let first = m.len();
        // The chain lives in the rdata of a TXT record whose owner is the chain's end.
        let chain_at = first + www.len() + 10;
        let chain: Vec<u8> = (0..hops)
            .flat_map(|i| ptr(if i == 0 { 12 } else { chain_at + 2 * (i - 1) }))
            .collect();
        let mut rr = www.clone();
        rr.extend_from_slice(&[0, 16, 0, 1, 0, 0, 1, 44]);
        rr.extend_from_slice(&(chain.len() as u16).to_be_bytes());
        rr.extend_from_slice(&chain);
        m.extend_from_slice(&rr);
        set_count(&mut m, 3, 2);
        m.extend_from_slice(&record(&ptr(chain_at + 2 * (hops - 1)), 1, &[192, 0, 2, 2]));
        v.push(("pointer", format!("chain of {hops} pointers"), m));
    }
    // The OPT owner: a pointer to the root (lenient), to the question (not the root).
    {
        let mut m = query(0x2006, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        let root_at = 12 + www.len() - 1;
        m.extend_from_slice(&ptr(root_at));
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[])[1..]);
        v.push(("pointer", "OPT owner points to the root label".into(), m));
        let mut m = query(0x2007, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        m.extend_from_slice(&ptr(12));
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[])[1..]);
        v.push(("pointer", "OPT owner points to the question".into(), m));
        let mut m = query(0x2008, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        let at = m.len();
        m.extend_from_slice(&record(&ptr(at), 1, &[1, 2, 3, 4]));
        v.push(("pointer", "additional owner points to itself".into(), m));
    }

    // Counts.
    let q = query(0x3000, "www.hostile.test", 1, None);
    for qd in [
        0u16, 2, 3, 4, 5, 8, 16, 100, 255, 256, 1000, 4096, 32767, 32768, 65534, 65535,
    ] {
        let mut m = q.clone();
        set_count(&mut m, 0, qd);
        v.push(("counts", format!("QDCOUNT {qd}, one question"), m));
    }
    for copies in 2..=5u16 {
        let mut m = header(0x3001, 0, [copies, 0, 0, 0]);
        for _ in 0..copies {
            m.extend_from_slice(&q[12..]);
        }
        v.push(("counts", format!("{copies} questions"), m));
    }
    v.push((
        "counts",
        "header only, QDCOUNT 0".into(),
        header(0x3002, 0, [0; 4]),
    ));
    for section in 1..=3 {
        for n in [1u16, 2, 255, 4096, 65535] {
            let mut m = q.clone();
            set_count(&mut m, section, n);
            v.push((
                "counts",
                format!("section {section} count {n}, no records"),
                m,
            ));
        }
    }
    let mut m = q.clone();
    for s in 0..4 {
        set_count(&mut m, s, 65535);
    }
    v.push(("counts", "every count 65535".into(), m));
    let mut m = edns_query(0x3003, "www.hostile.test", 1, &opt(1232, 0, 0, 0, &[]));
    set_count(&mut m, 3, 65535);
    v.push(("counts", "ARCOUNT 65535, one OPT".into(), m));

    // Label lengths.
    for b in 64..=255u8 {
        let mut name = wire_name("www.hostile.test");
        name[0] = b;
        v.push((
            "label length",
            format!("first label length {b:#04x}"),
            raw_query(0x4000, [1, 0, 0, 0], &name, 1, &[]),
        ));
    }
    for b in [64u8, 0x41, 0x80, 0xbf] {
        let mut name = wire_name("www.hostile.test");
        name[4] = b;
        v.push((
            "label length",
            format!("second label length {b:#04x}"),
            raw_query(0x4001, [1, 0, 0, 0], &name, 1, &[]),
        ));
    }
    for (what, name) in [
        ("label longer than the message", vec![63, b'a', b'b', 0]),
        (
            "empty label inside the name",
            vec![3, b'w', b'w', b'w', 0, 7, b'h', 0],
        ),
        ("no root label", vec![3, b'w', b'w', b'w']),
    ] {
        v.push((
            "label length",
            what.into(),
            header(0x4002, 0, [1, 0, 0, 0])
                .into_iter()
                .chain(name)
                .collect(),
        ));
    }

    // Name lengths at and over 255 octets.
    let under_zone = |total: usize| {
        // Labels of 63 and a last one so the wire name (with hostile.test.) is `total` octets.
        let tail = wire_name(APEX);
        let mut body = total - tail.len();
        let mut n = Vec::new();
        while body > 0 {
            let l = (body - 1).min(63);
            assert!(l > 0, "cannot make a name of {total} octets");
            n.push(l as u8);
            n.extend(std::iter::repeat_n(b'x', l));
            body -= l + 1;
        }
        n.extend_from_slice(&tail);
        n
    };
    for total in [253usize, 254, 255, 256, 257, 300] {
        v.push((
            "long name",
            format!("{total}-octet name under the zone"),
            raw_query(0x5000, [1, 0, 0, 0], &under_zone(total), 1, &[]),
        ));
    }
    for labels in [127usize, 128, 200] {
        let mut n: Vec<u8> = (0..labels).flat_map(|_| [1, b'a']).collect();
        n.push(0);
        v.push((
            "long name",
            format!("{labels} one-octet labels"),
            raw_query(0x5001, [1, 0, 0, 0], &n, 1, &[]),
        ));
    }
    // Over 255 only through a pointer: 4 x 63 octets, then a pointer to the question.
    {
        let mut m = raw_query(0x5002, [1, 0, 0, 1], &www, 1, &[]);
        let mut owner = Vec::new();
        for _ in 0..4 {
            owner.push(63);
            owner.extend(std::iter::repeat_n(b'y', 63));
        }
        owner.extend_from_slice(&ptr(12));
        m.extend_from_slice(&record(&owner, 1, &[1, 2, 3, 4]));
        v.push((
            "long name",
            "record owner over 255 through a pointer".into(),
            m,
        ));
    }

    // EDNS.
    let eq = |id: u16, o: Vec<u8>| edns_query(id, "www.hostile.test", 1, &o);
    for version in [1u8, 2, 3, 7, 15, 16, 64, 127, 128, 200, 254, 255] {
        v.push((
            "edns",
            format!("version {version}"),
            eq(0x6000, opt(1232, 0, version, 0, &[])),
        ));
    }
    for size in [0u16, 1, 511, 512, 513, 1232, 4096, 65535] {
        v.push((
            "edns",
            format!("UDP size {size}"),
            eq(0x6001, opt(size, 0, 0, 0, &[])),
        ));
    }
    v.push((
        "edns",
        "every flag set".into(),
        eq(0x6002, opt(1232, 0, 0, 0xffff, &[])),
    ));
    for ext in [1u8, 15, 255] {
        v.push((
            "edns",
            format!("extended RCODE {ext} in a query"),
            eq(0x6003, opt(1232, ext, 0, 0, &[])),
        ));
    }
    let big = vec![0u8; 1100];
    let huge = vec![0u8; 3900];
    let options: [(&str, &[EdnsOption<'_>]); 17] = [
        ("unknown option", &[(65001, &[1, 2, 3, 4])]),
        ("NSID", &[(3, &[])]),
        ("NSID with data", &[(3, &[1, 2, 3])]),
        ("client cookie", &[(10, &[1; 8])]),
        ("full cookie", &[(10, &[1; 24])]),
        ("cookie of 1", &[(10, &[1])]),
        ("cookie of 7", &[(10, &[1; 7])]),
        ("cookie of 9", &[(10, &[1; 9])]),
        ("cookie of 41", &[(10, &[1; 41])]),
        ("two cookies", &[(10, &[1; 8]), (10, &[2; 8])]),
        ("client subnet, empty", &[(8, &[])]),
        ("client subnet, bad family", &[(8, &[0, 9, 24, 0, 1, 2, 3])]),
        ("padding 0", &[(12, &[])]),
        ("padding 1100", &[(12, &big)]),
        ("padding 3900", &[(12, &huge)]),
        ("option code 0", &[(0, &[])]),
        ("option code 65535", &[(65535, &[9; 3])]),
    ];
    for (what, o) in options {
        v.push(("edns", what.into(), eq(0x6004, opt(1232, 0, 0, 0, o))));
    }
    let many: Vec<(u16, &[u8])> = (0..200).map(|i| (65001 + i, &[][..])).collect();
    v.push((
        "edns",
        "200 options".into(),
        eq(0x6005, opt(1232, 0, 0, 0, &many)),
    ));
    let lists: [&[u8]; 6] = [
        &[0],
        &[0, 3],
        &[0, 3, 0],
        &[0, 3, 0, 5],
        &[0, 3, 255, 255],
        &[0, 3, 0, 1, 9, 0],
    ];
    for rdata in lists {
        v.push((
            "edns",
            format!("option list {rdata:?}"),
            eq(0x6006, opt_raw(1232, 0, 0, 0, rdata)),
        ));
    }
    {
        let mut o = opt(1232, 0, 0, 0, &[]);
        let n = o.len();
        o[n - 2..].copy_from_slice(&100u16.to_be_bytes());
        v.push(("edns", "OPT rdata past the end".into(), eq(0x6007, o)));
    }
    for copies in [2u16, 3, 10] {
        let mut m = query(0x6008, "www.hostile.test", 1, None);
        set_count(&mut m, 3, copies);
        for _ in 0..copies {
            m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        }
        v.push(("edns", format!("{copies} OPT records"), m));
    }
    {
        let mut m = query(0x6009, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 2);
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        m.extend_from_slice(&opt(1232, 0, 1, 0, &[]));
        v.push(("edns", "two OPTs, versions 0 and 1".into(), m));
        for section in [1usize, 2] {
            let mut m = query(0x600a, "www.hostile.test", 1, None);
            set_count(&mut m, section, 1);
            m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
            v.push(("edns", format!("OPT in section {section}"), m));
        }
        let mut m = query(0x600b, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 1);
        m.extend_from_slice(&[1, b'x']);
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        v.push(("edns", "OPT owned by x.".into(), m));
        let mut m = query(0x600c, "www.hostile.test", 1, None);
        set_count(&mut m, 3, 2);
        m.extend_from_slice(&record(&www, 1, &[192, 0, 2, 9]));
        m.extend_from_slice(&opt(1232, 0, 0, 0, &[]));
        v.push(("edns", "an A record next to the OPT".into(), m));
    }

    // Responses sent to the server.
    for (s, q) in seeds.iter().enumerate() {
        for rcode in 0..16u8 {
            let mut m = q.clone();
            m[2] |= 0x80;
            m[3] = (m[3] & 0xf0) | rcode;
            v.push((
                "response",
                format!("seed {s} as a response, RCODE {rcode}"),
                m,
            ));
        }
        let mut m = q.clone();
        m[2] |= 0x80 | 0x04 | 0x02; // QR, AA, TC
        v.push((
            "response",
            format!("seed {s} as a response with AA and TC"),
            m,
        ));
        let mut m = q.clone();
        m[2] |= 0x80 | (4 << 3);
        v.push(("response", format!("seed {s} as a NOTIFY response"), m));
    }

    // Opcodes other than QUERY.
    for (s, q) in seeds.iter().enumerate().take(2) {
        for op in 1..16u8 {
            let mut m = q.clone();
            m[2] = (m[2] & 0x87) | (op << 3);
            v.push(("opcode", format!("seed {s} opcode {op}"), m));
        }
    }
    let mut m = header(0x7000, 5 << 11, [1, 1, 1, 1]);
    m.extend_from_slice(&[0xde, 0xad]);
    v.push(("opcode", "UPDATE with a garbage body".into(), m));

    // Large datagrams and random garbage.
    for len in [600usize, 4096, 65000] {
        let mut m = query(0x7100, "www.hostile.test", 1, None);
        m.resize(len, 0);
        v.push(("large", format!("query padded with zeros to {len}"), m));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut m = rng.bytes(65507);
    m[2] &= 0x7f;
    v.push(("large", "65,507 random octets".into(), m));
    v.push(("large", "empty datagram".into(), Vec::new()));
    for i in 0..100 {
        let len = 12 + (rng.next() % 500) as usize;
        let mut m = rng.bytes(len);
        m[2] &= 0x7f; // a query: responses are covered above
        if i % 2 == 0 {
            // Half with plausible counts, so parsing goes further.
            m[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, (i % 3) as u8]);
        }
        v.push(("random", format!("random datagram {i} ({len} octets)"), m));
    }
    v
}

// ---------------------------------------------------------------------------------------
// Sending and tallying.

#[derive(Default)]
struct KindTally {
    inputs: usize,
    udp: usize,
    tcp: usize,
    silent: usize,
    rcodes: BTreeMap<u16, usize>,
}

#[derive(Default)]
struct Tally(BTreeMap<&'static str, KindTally>);

impl Tally {
    fn print(&self) {
        println!(
            "{:<16} {:>7} {:>6} {:>6} {:>7}  RCODEs seen",
            "kind", "inputs", "udp", "tcp", "silent"
        );
        let mut total = KindTally::default();
        for (kind, t) in &self.0 {
            println!(
                "{kind:<16} {:>7} {:>6} {:>6} {:>7}  {:?}",
                t.inputs, t.udp, t.tcp, t.silent, t.rcodes
            );
            total.inputs += t.inputs;
            total.udp += t.udp;
            total.tcp += t.tcp;
            total.silent += t.silent;
        }
        println!(
            "{:<16} {:>7} {:>6} {:>6} {:>7}",
            "total", total.inputs, total.udp, total.tcp, total.silent
        );
    }
}

/// A valid query's ID must differ from the hostile input's so their answers cannot mix.
fn good_query(bad: &[u8]) -> Vec<u8> {
    let id = u16_at(bad, 0).unwrap_or(0) ^ 0xa5a5;
    query(id, "www.hostile.test", 1, None)
}

/// Sends `bad` then a valid query on `sock`; returns what came back before the valid
/// query's answer (which it checks against the zone).
fn udp_probe(sock: &UdpSocket, what: &str, bad: &[u8]) -> Vec<Vec<u8>> {
    let good = good_query(bad);
    sock.send(bad)
        .unwrap_or_else(|e| panic!("{what}: send: {e}"));
    sock.send(&good).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65535];
    loop {
        let n = sock
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("{what}: the server stopped answering: {e}"));
        let r = &buf[..n];
        if r.len() >= 12 && r[..2] == good[..2] {
            if let Err(e) = check_response(&good, &classify(&good), r, false) {
                panic!("{what}: the valid query after it: {e}");
            }
            return got;
        }
        got.push(r.to_vec());
    }
}

/// Throws every input at `addr` over UDP; each answer is checked by the oracle.
fn udp_batch(addr: SocketAddr, inputs: &[(&'static str, String, Vec<u8>)], tally: &mut Tally) {
    let sock = udp_client(addr);
    for (kind, what, bad) in inputs {
        let exp = classify(bad);
        let got = udp_probe(&sock, what, bad);
        let t = tally.0.entry(kind).or_default();
        t.udp += 1;
        match got.as_slice() {
            [] => {
                // A query never needs more than 4,096 octets: a longer datagram may be dropped.
                assert!(
                    !exp.must_answer() || bad.len() > 4096,
                    "{what}: no response to {}, expected {exp:?}",
                    hex(bad)
                );
                t.silent += 1;
            }
            [r] => match check_response(bad, &exp, r, false) {
                Ok(rcode) => *t.rcodes.entry(rcode).or_default() += 1,
                Err(e) => panic!(
                    "{what} over UDP: {e}\nquery    {}\nresponse {}\nexpected {exp:?}",
                    hex(bad),
                    hex(r)
                ),
            },
            many => panic!("{what}: {} responses", many.len()),
        }
    }
}

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
fn tcp_pipeline(addr: SocketAddr, kind: &'static str, frames: &[Vec<u8>], tally: &mut Tally) {
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

/// A message for a failure report: its length and at most its first 96 octets.
fn hex(m: &[u8]) -> String {
    let shown: Vec<String> = m.iter().take(96).map(|b| format!("{b:02x}")).collect();
    let more = if m.len() > 96 { " ..." } else { "" };
    format!("({} octets) {}{more}", m.len(), shown.join(" "))
}

/// Valid queries over UDP (IPv4 and IPv6) and TCP get the zone's answers.
fn assert_service(server: &Server, after: &str) {
    let cases: Vec<Vec<u8>> = [
        ("www.hostile.test", 1),
        ("www.hostile.test", 28),
        ("mail.hostile.test", 15),
        ("hostile.test", 2),
        ("hostile.test", 6),
        ("hostile.test", 16),
        ("nope.hostile.test", 1),
        ("ns2.hostile.test", 1),
        ("example.org", 1),
    ]
    .iter()
    .enumerate()
    .flat_map(|(i, (name, t))| {
        [
            query(0x0100 + i as u16, name, *t, None),
            edns_query(0x0200 + i as u16, name, *t, &opt(1232, 0, 0, 0, &[])),
        ]
    })
    .collect();
    for addr in [server.addr4(), server.addr6()] {
        let sock = udp_client(addr);
        for q in &cases {
            let r = udp_exchange(&sock, q)
                .unwrap_or_else(|| panic!("after {after}: no UDP answer from {addr}"));
            if let Err(e) = check_response(q, &classify(q), &r, false) {
                panic!("after {after}: UDP {addr}: {e}");
            }
        }
    }
    let rs = tcp_exchange(server.addr4(), &cases);
    for (q, r) in cases.iter().zip(&rs) {
        if let Err(e) = check_response(q, &classify(q), r, true) {
            panic!("after {after}: TCP: {e}");
        }
    }
}

fn start() -> Server {
    let dir = TempDir::new("hostile");
    let zone = dir.write("hostile.test.zone", ZONE);
    let zone_arg = format!("{APEX}.={}", zone.display());
    Server::start_in(
        dir,
        &[
            "--workers",
            "2",
            "--zone",
            &zone_arg,
            "--tcp-idle-timeout-ms",
            "1000",
        ],
    )
}

#[test]
fn oracle_judges_the_seed_queries_as_the_zone_says() {
    // The oracle itself must be able to fail: the seeds are queries with known answers.
    for s in seeds() {
        assert!(
            matches!(classify(&s), Expect::Query { lenient: false, .. }),
            "{s:02x?}"
        );
    }
    let q = query(1, "www.hostile.test", 1, None);
    let Expect::Query { q: question, .. } = classify(&q) else {
        panic!()
    };
    assert_eq!(
        expected(&question, false),
        (
            vec![NOERROR],
            Some(vec!["a 192.0.2.80".into(), "a 192.0.2.81".into()])
        )
    );
    assert_eq!(classify(&q[..11]), Expect::Silence);
    assert_eq!(classify(&q[..20]), Expect::FormErr);
    let mut two = query(1, "www.hostile.test", 1, None);
    set_count(&mut two, 3, 2);
    two.extend_from_slice(&opt(512, 0, 0, 0, &[]));
    two.extend_from_slice(&opt(512, 0, 0, 0, &[]));
    assert_eq!(classify(&two), Expect::FormErr);
}

#[test]
fn hostile_datagrams_and_streams_get_what_the_rfcs_say() {
    let started = Instant::now();
    let mut server = start();
    assert_service(&server, "start");
    let mut tally = Tally::default();

    // Distinct inputs only.
    let mut seen = HashSet::new();
    let inputs: Vec<_> = hostile_inputs()
        .into_iter()
        .filter(|(_, _, m)| seen.insert(m.clone()))
        .collect();
    let mut kinds: Vec<&'static str> = Vec::new();
    for (kind, _, _) in &inputs {
        if !kinds.contains(kind) {
            kinds.push(kind);
        }
    }
    for (kind, _, _) in &inputs {
        tally.0.entry(kind).or_default().inputs += 1;
    }
    assert!(inputs.len() >= 1000, "{} distinct inputs", inputs.len());

    // UDP: every kind over IPv4, then everything but the bit flips over IPv6.
    for kind in &kinds {
        let batch: Vec<_> = inputs.iter().filter(|i| i.0 == *kind).cloned().collect();
        udp_batch(server.addr4(), &batch, &mut tally);
        assert_service(&server, kind);
    }
    let v6: Vec<_> = inputs
        .iter()
        .filter(|i| i.0 != "bit flip")
        .cloned()
        .collect();
    udp_batch(server.addr6(), &v6, &mut tally);
    assert_service(&server, "the IPv6 batch");

    // The same messages as TCP frames, pipelined 200 to a connection.
    for kind in &kinds {
        let frames: Vec<Vec<u8>> = inputs
            .iter()
            .filter(|i| i.0 == *kind && i.2.len() <= 65535)
            .map(|i| i.2.clone())
            .collect();
        for chunk in frames.chunks(200) {
            tcp_pipeline(server.addr4(), kind, chunk, &mut tally);
        }
    }
    assert_service(&server, "the TCP frames");

    tcp_framing_attacks(&server, &mut tally);
    assert_service(&server, "the TCP framing attacks");

    tally.print();
    let formerr_seen: usize = tally
        .0
        .values()
        .map(|t| t.rcodes.get(&FORMERR).copied().unwrap_or(0))
        .sum();
    let malformed = server.stat("shardns_malformed_total");
    println!("FORMERR responses seen: {formerr_seen}; shardns_malformed_total: {malformed}");
    assert!(malformed >= 1.0);
    assert!(!server.log().contains("panicked"), "{}", server.log());
    println!("hostile test took {:?}", started.elapsed());
    // A clean exit after all of it.
    assert!(server.terminate().success());
}

/// Counts one TCP case under `kind`.
fn count_tcp(tally: &mut Tally, kind: &'static str, n: usize) {
    let t = tally.0.entry(kind).or_default();
    t.inputs += n;
    t.tcp += n;
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

fn tcp_framing_attacks(server: &Server, tally: &mut Tally) {
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
