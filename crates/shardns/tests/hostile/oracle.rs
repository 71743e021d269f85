//! The oracle: what RFC 1035, 6891 and 7766 say a server does with a message. It reads a
//! hostile input with a plain decoder of its own ([`classify`]), says which RCODEs and which
//! answer section the zone data allows ([`expected`]), and checks a response against that
//! ([`check_response`]); with a test that the oracle itself can fail.

use crate::common::*;
use crate::inputs::seeds;
use crate::messages::{opt, set_count};
use hickory_proto::op::Message;

/// The zone's records (`ZONE` in main.rs) as (owner, type, hickory's presentation of the
/// rdata).
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
pub(crate) const FORMERR: u16 = 1;
const NXDOMAIN: u16 = 3;
pub(crate) const NOTIMP: u16 = 4;
pub(crate) const REFUSED: u16 = 5;
pub(crate) const NOTAUTH: u16 = 9;
pub(crate) const BADVERS: u16 = 16;
const BADCOOKIE: u16 = 23;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Question {
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
pub(crate) struct Edns {
    udp_size: u16,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    /// Shorter than a header, or a response: never answered.
    Silence,
    /// Malformed: FORMERR or nothing.
    FormErr,
    /// An opcode other than QUERY: NOTIMP (FORMERR if the server also finds it malformed).
    NotImp,
    /// An UPDATE (RFC 2136) to a server that lets nobody update: REFUSED (as BIND, and
    /// Knot for a zone whose ACL has no update), NOTAUTH (not a zone of ours, RFC 2136
    /// §3.1.1), FORMERR or NOTIMP.
    Update,
    /// A well-formed query with an EDNS version other than 0: BADVERS (RFC 6891 §6.1.3).
    BadVers(Question),
    /// A well-formed query. `lenient`: it does something RFCs discourage but a server may
    /// accept (a compression pointer in the question, a malformed option list, records in a
    /// query): FORMERR or nothing is then also acceptable.
    Query {
        q: Question,
        edns: Option<Edns>,
        lenient: bool,
        /// A COOKIE option with a server cookie the server did not make: BADCOOKIE with no
        /// answer is as correct as an answer (RFC 7873 §5.2.3-5.2.4).
        foreign_cookie: bool,
    },
}

impl Expect {
    /// Whether a correct server must send a response.
    pub(crate) fn must_answer(&self) -> bool {
        match self {
            Expect::Silence | Expect::FormErr => false,
            Expect::NotImp | Expect::Update | Expect::BadVers(_) => true,
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

pub(crate) fn u16_at(m: &[u8], pos: usize) -> Option<u16> {
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
pub(crate) fn classify(m: &[u8]) -> Expect {
    if m.len() < 12 || m[2] & 0x80 != 0 {
        return Expect::Silence;
    }
    match (m[2] >> 3) & 0x0f {
        0 => {}
        5 => return Expect::Update,
        _ => return Expect::NotImp,
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
    let mut foreign_cookie = false;
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
            match cookies(rdata) {
                Cookie::Malformed => return Expect::FormErr,
                Cookie::Full => foreign_cookie = true,
                // RFC 7873 does not say: an answer or FORMERR.
                Cookie::Twice => lenient = true,
                Cookie::None | Cookie::Client => {}
            }
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
    Expect::Query {
        q,
        edns,
        lenient,
        foreign_cookie,
    }
}

/// What the COOKIE options (code 10) of an OPT record's rdata make of it.
enum Cookie {
    None,
    /// A client cookie alone (8 octets).
    Client,
    /// A client cookie and a server cookie (16 to 40 octets).
    Full,
    /// A length RFC 7873 §5.2.2 says is FORMERR (under 8, 9 to 15, over 40).
    Malformed,
    /// More than one COOKIE option.
    Twice,
}

fn cookies(mut data: &[u8]) -> Cookie {
    let mut found = Cookie::None;
    while let (Some(code), Some(len)) = (u16_at(data, 0), u16_at(data, 2)) {
        let Some(rest) = data.get(4 + usize::from(len)..) else {
            break;
        };
        if code == 10 {
            found = match (found, len) {
                (_, 0..=7 | 9..=15 | 41..) => return Cookie::Malformed,
                (Cookie::None, 8) => Cookie::Client,
                (Cookie::None, _) => Cookie::Full,
                _ => Cookie::Twice,
            };
        }
        data = rest;
    }
    found
}

/// The RCODEs a correct server may give a well-formed query, and the exact answer section
/// (sorted `TYPE rdata` strings) when the zone data decides it.
pub(crate) fn expected(q: &Question, tcp: bool) -> (Vec<u16>, Option<Vec<String>>) {
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
pub(crate) fn check_response(
    input: &[u8],
    exp: &Expect,
    resp: &[u8],
    tcp: bool,
) -> Result<u16, String> {
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
        Expect::Update => {
            check_rcode(&[REFUSED, NOTAUTH, FORMERR, NOTIMP])?;
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
        Expect::Query {
            q,
            edns,
            lenient,
            foreign_cookie,
        } => {
            let (mut allowed, want) = expected(q, tcp);
            if *lenient {
                allowed.push(FORMERR);
            }
            if *foreign_cookie {
                allowed.push(BADCOOKIE);
            }
            check_rcode(&allowed)?;
            if rcode == FORMERR || rcode == BADCOOKIE {
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
