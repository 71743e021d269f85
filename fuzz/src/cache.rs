//! The `resolver_cache` target: a datagram in, a response out, through the resolver's cache
//! path (`shardns_resolver::Cache::answer`), the way a worker answers a recursive query from
//! the cache (crates/server/src/recursion.rs, whose code is private: the steps are
//! repeated here, header checks, question, EDNS, limits, cache, header).
//!
//! The cache is filled once, through the real `Engine`, from a deterministic fake
//! authoritative server: A/AAAA sets, a CNAME, a chain of six, a CNAME loop, a DNAME, a
//! record set too big for UDP, a short TTL, NXDOMAIN and NODATA with an SOA. The query's ID
//! picks the clock (`ID x 100 ms` after the fill), so inputs reach expired entries too.

use shardns_resolver::{
    client_response_limit, finish_client_response, CacheAnswer, Config, Engine, Event, Hints,
    Resolver, CLIENT_UDP_MAX, OPT_ROOM,
};
use shardns_wire::edns::read_trailer;
use shardns_wire::message::{read_question, Header, HEADER_LEN};
use shardns_wire::{
    Class, Message, MessageWriter, Name, NameBuf, NameRef, Opcode, RType, Rcode, Section,
};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

/// When the fill happened, on the engine's millisecond clock.
const FILL_MS: u64 = 5;

fn n(s: &str) -> Name {
    s.parse().expect("a valid name")
}

fn soa_rdata() -> Vec<u8> {
    let mut soa = n("ns.fuzz.test.").as_wire().to_vec();
    soa.extend_from_slice(n("host.fuzz.test.").as_wire());
    for v in [1u32, 7200, 900, 86400, 600] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    soa
}

fn put(w: &mut MessageWriter<'_>, s: Section, owner: &str, t: RType, ttl: u32, rd: &[u8]) {
    w.put_record(s, n(owner).as_ref(), t, Class::IN, ttl, rd)
        .expect("room for the fake answer");
}

fn www_a(w: &mut MessageWriter<'_>) {
    put(
        w,
        Section::Answer,
        "www.fuzz.test.",
        RType::A,
        3600,
        &[192, 0, 2, 1],
    );
    put(
        w,
        Section::Answer,
        "www.fuzz.test.",
        RType::A,
        3600,
        &[192, 0, 2, 2],
    );
}

/// The fake authoritative server for everything: `fuzz.test.` and its oddities.
fn authority(query: &[u8]) -> Vec<u8> {
    let q = Message::parse(query).expect("the engine's query parses");
    let question = &q.questions[0];
    let mut buf = vec![0u8; 65535];
    let mut w = MessageWriter::new(&mut buf, 65535);
    w.put_question(question.qname.as_ref(), question.qtype, Class::IN)
        .expect("room for the question");
    let mut h = Header {
        id: q.header.id,
        ..Header::default()
    };
    h.set_qr(true);
    h.set_aa(true);
    let an = Section::Answer;
    let qname = question.qname.to_string().to_ascii_lowercase();
    let qtype = question.qtype;
    // c1 ... c6: a chain c1 -> c2 -> ... -> c6 -> www.
    let chain_start = qname
        .strip_prefix('c')
        .and_then(|r| r.strip_suffix(".fuzz.test."))
        .and_then(|d| d.parse::<u8>().ok())
        .filter(|d| (1..=6).contains(d));
    let mut negative = None;
    match (qname.as_str(), qtype) {
        ("www.fuzz.test.", RType::A) => www_a(&mut w),
        ("www.fuzz.test.", RType::AAAA) => {
            let mut v6 = [0u8; 16];
            v6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            v6[15] = 1;
            put(&mut w, an, "www.fuzz.test.", RType::AAAA, 3600, &v6);
        }
        ("alias.fuzz.test.", _) => {
            put(
                &mut w,
                an,
                "alias.fuzz.test.",
                RType::CNAME,
                3600,
                n("www.fuzz.test.").as_wire(),
            );
            if qtype == RType::A {
                www_a(&mut w);
            }
        }
        _ if chain_start.is_some() => {
            for i in chain_start.unwrap_or(1)..=6 {
                let next = if i == 6 {
                    "www.fuzz.test.".to_string()
                } else {
                    format!("c{}.fuzz.test.", i + 1)
                };
                put(
                    &mut w,
                    an,
                    &format!("c{i}.fuzz.test."),
                    RType::CNAME,
                    3600,
                    n(&next).as_wire(),
                );
            }
            if qtype == RType::A {
                www_a(&mut w);
            }
        }
        ("loop1.fuzz.test.", _) => put(
            &mut w,
            an,
            "loop1.fuzz.test.",
            RType::CNAME,
            3600,
            n("loop2.fuzz.test.").as_wire(),
        ),
        ("loop2.fuzz.test.", _) => put(
            &mut w,
            an,
            "loop2.fuzz.test.",
            RType::CNAME,
            3600,
            n("loop1.fuzz.test.").as_wire(),
        ),
        ("x.d.fuzz.test.", _) => {
            put(
                &mut w,
                an,
                "d.fuzz.test.",
                RType::DNAME,
                3600,
                n("t.fuzz.test.").as_wire(),
            );
            put(
                &mut w,
                an,
                "x.d.fuzz.test.",
                RType::CNAME,
                3600,
                n("x.t.fuzz.test.").as_wire(),
            );
            put(
                &mut w,
                an,
                "x.t.fuzz.test.",
                RType::A,
                3600,
                &[192, 0, 2, 7],
            );
        }
        ("big.fuzz.test.", RType::TXT) => {
            for i in 0..40u8 {
                let mut txt = vec![60u8];
                txt.extend(std::iter::repeat_n(b'a' + i % 26, 60));
                put(&mut w, an, "big.fuzz.test.", RType::TXT, 3600, &txt);
            }
        }
        ("short.fuzz.test.", RType::A) => put(
            &mut w,
            an,
            "short.fuzz.test.",
            RType::A,
            60,
            &[192, 0, 2, 60],
        ),
        ("mixed.fuzz.test.", RType::A) => put(
            &mut w,
            an,
            "MiXeD.FuZz.TeSt.",
            RType::A,
            3600,
            &[192, 0, 2, 9],
        ),
        ("www.fuzz.test.", _) | ("fuzz.test.", _) => negative = Some(Rcode::NOERROR),
        _ => negative = Some(Rcode::NXDOMAIN),
    }
    if let Some(rcode) = negative {
        put(
            &mut w,
            Section::Authority,
            "fuzz.test.",
            RType::SOA,
            3600,
            &soa_rdata(),
        );
        h.set_rcode(rcode);
    }
    w.finish(&h).to_vec()
}

/// What the fill asked.
const FILL: &[(&str, RType)] = &[
    ("www.fuzz.test.", RType::A),
    ("www.fuzz.test.", RType::AAAA),
    ("www.fuzz.test.", RType::MX),
    ("alias.fuzz.test.", RType::A),
    ("c1.fuzz.test.", RType::A),
    ("c3.fuzz.test.", RType::TXT),
    ("loop1.fuzz.test.", RType::A),
    ("x.d.fuzz.test.", RType::A),
    ("big.fuzz.test.", RType::TXT),
    ("short.fuzz.test.", RType::A),
    ("mixed.fuzz.test.", RType::A),
    ("nx.fuzz.test.", RType::A),
    ("nx2.fuzz.test.", RType::AAAA),
];

/// One answer as the test compares them: rcode, and the records (owner in lower case,
/// type, rdata) without TTLs; and the smallest TTL, which bounds how long it lasts.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    rcode: Rcode,
    records: Vec<(Vec<u8>, RType, Vec<u8>)>,
    min_ttl: u32,
}

struct Warm {
    resolver: Arc<Resolver>,
    /// The cache's answer to each (lower-case name, type) the fill asked, read at `FILL_MS`.
    known: HashMap<(Vec<u8>, RType), Seen>,
    /// Every name the fill asked or the fake server wrote (lower case): no other name can
    /// be in the cache.
    names: HashSet<Vec<u8>>,
}

fn lower(name: &[u8]) -> Vec<u8> {
    name.to_ascii_lowercase()
}

/// The answer section and rcode of a response, compared without TTLs.
fn seen(response: &[u8]) -> Seen {
    let m = Message::parse(response).expect("our response parses");
    Seen {
        rcode: m.rcode(),
        // Names without case: a CNAME target may be compressed against the question, which
        // gives it the question's spelling (names compare without case, RFC 4343).
        records: m
            .answers
            .iter()
            .map(|r| {
                let rdata = if matches!(r.rtype, RType::CNAME | RType::DNAME) {
                    lower(&r.rdata)
                } else {
                    r.rdata.clone()
                };
                (lower(r.owner.as_wire()), r.rtype, rdata)
            })
            .collect(),
        min_ttl: m
            .answers
            .iter()
            .chain(&m.authority)
            .map(|r| r.ttl)
            .min()
            .unwrap_or(u32::MAX),
    }
}

fn warm() -> &'static Warm {
    static WARM: OnceLock<Warm> = OnceLock::new();
    WARM.get_or_init(|| {
        let mut config = Config::default();
        config.hints = Hints::parse(". NS a.root.\na.root. A 127.0.0.1@5300\n").expect("hints");
        config.qname_minimisation = false;
        config.ipv6 = false;
        // The fake root is unsigned: no trust anchor, so validation finds it insecure.
        config.trust_anchors = shardns_resolver::TrustAnchors::none();
        let resolver = Arc::new(Resolver::new(config));
        let mut engine = Engine::new(Arc::clone(&resolver), [9; 32]);
        let mut names = HashSet::new();
        for (q, t) in FILL {
            engine.resolve(n(q).as_ref(), *t, 0);
            names.insert(lower(n(q).as_wire()));
            for _ in 0..1000 {
                let Some(ev) = engine.poll() else { break };
                if let Event::Transmit(t) = ev {
                    let reply = authority(t.payload());
                    let m = Message::parse(&reply).expect("fake reply parses");
                    for r in m.answers.iter().chain(&m.authority) {
                        names.insert(lower(r.owner.as_wire()));
                    }
                    for qn in &m.questions {
                        names.insert(lower(qn.qname.as_wire()));
                    }
                    engine.handle_response(t.query, t.server, &reply, FILL_MS);
                }
            }
        }
        let mut warm = Warm {
            resolver,
            known: HashMap::new(),
            names,
        };
        let mut out = vec![0u8; 65535];
        for (q, t) in FILL {
            let query = client_query(0, q, *t);
            // Over TCP, so nothing is truncated.
            if let Some((len, hit)) =
                answer_from_cache(&warm.resolver, &query, FILL_MS, true, &mut out)
            {
                if hit {
                    warm.known
                        .insert((lower(n(q).as_wire()), *t), seen(&out[..len]));
                }
            }
        }
        // The fill must have cached what it asked, or this target tests an empty cache.
        for must in [
            "www.fuzz.test.",
            "alias.fuzz.test.",
            "c1.fuzz.test.",
            "big.fuzz.test.",
            "nx.fuzz.test.",
        ] {
            assert!(
                warm.known
                    .keys()
                    .any(|(k, _)| *k == lower(n(must).as_wire())),
                "{must} not cached by the fill"
            );
        }
        warm
    })
}

/// A client query: RD set, no EDNS.
fn client_query(id: u16, name: &str, qtype: RType) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    w.put_question(n(name).as_ref(), qtype, Class::IN).unwrap();
    let mut h = Header {
        id,
        ..Header::default()
    };
    h.set_rd(true);
    w.finish(&h).to_vec()
}

/// A worker's cache path for `query` at `now`: `None` if the query is not one the resolver
/// takes from the cache (it would be REFUSED or resolved), else the response length in
/// `out` and whether it was a hit (a miss writes nothing: `len` is 0).
fn answer_from_cache(
    resolver: &Resolver,
    query: &[u8],
    now: u64,
    tcp: bool,
    out: &mut [u8],
) -> Option<(usize, bool)> {
    let qh = Header::parse(query).ok()?;
    if qh.qr() || qh.opcode() != Opcode::QUERY || qh.qdcount != 1 {
        return None;
    }
    let mut qname = NameBuf::new();
    let (qtype, qclass, qend) = read_question(query, HEADER_LEN, &mut qname).ok()?;
    if qclass != Class::IN
        || matches!(qtype, RType::AXFR | RType::IXFR | RType::OPT)
        || qtype.0 == 0
    {
        return None;
    }
    let trailer = read_trailer(query, &qh, qend).ok()?;
    if trailer.edns.is_some_and(|e| e.version > 0) {
        return None;
    }
    let edns = trailer.edns.map(|e| (e.udp_size, e.dnssec_ok));
    let limit = client_response_limit(tcp, edns, out.len());
    let mut w = MessageWriter::new(out, limit);
    w.put_question(qname.as_ref(), qtype, Class::IN).ok()?;
    let question_len = w.len();
    let after_question = w.checkpoint();
    if edns.is_some() {
        w.set_limit(limit.saturating_sub(OPT_ROOM));
    }
    match resolver.cache().answer(qname.as_ref(), qtype, now, &mut w) {
        CacheAnswer::Miss { locks } => {
            assert!(locks >= 1, "a lookup without a lock");
            assert_eq!(w.len(), question_len, "a miss wrote something");
            Some((0, false))
        }
        CacheAnswer::Hit {
            rcode,
            truncated,
            locks,
            ..
        } => {
            assert!(locks >= 1);
            if truncated {
                w.rollback(after_question);
            }
            let (len, opt_written) =
                finish_client_response(w, &qh, rcode, truncated, limit, edns, None);
            assert!(opt_written, "room kept for the OPT");
            Some((len, true))
        }
    }
}

/// Any datagram through the cache path, over UDP and TCP: never panics; a response parses,
/// echoes the ID and the question as spelled, fits the transport; owners and CNAME
/// chains hang together; TTLs only count down; nothing expired and no name the cache
/// never saw is answered; what the fill cached comes back the same until it expires.
///
pub fn resolver_cache(data: &[u8]) {
    check_cache(data);
}

fn check_cache(data: &[u8]) {
    let warm = warm();
    let Some(id) = data.get(..2) else { return };
    let now = FILL_MS + u64::from(u16::from_be_bytes([id[0], id[1]])) * 100;
    let elapsed_s = ((now - FILL_MS) / 1000) as u32;
    let mut out = vec![0u8; 65535];
    for tcp in [false, true] {
        let Some((len, hit)) = answer_from_cache(&warm.resolver, data, now, tcp, &mut out) else {
            continue;
        };
        let query = Message::parse(data).ok();
        let mut qname = NameBuf::new();
        let (qtype, _, _) =
            read_question(data, HEADER_LEN, &mut qname).expect("the cache path read it");
        let key = (lower(qname.as_ref().as_wire()), qtype);
        let known = warm.known.get(&key);
        if !hit {
            assert!(
                known.is_none_or(|k| u64::from(k.min_ttl) <= u64::from(elapsed_s) + 1),
                "a miss for {} {qtype} before it expires",
                qname.as_ref()
            );
            continue;
        }
        assert!(
            warm.names.contains(&key.0),
            "a hit for {}, which the cache never saw",
            qname.as_ref()
        );
        let response = &out[..len];
        let m = Message::parse(response)
            .unwrap_or_else(|e| panic!("response does not parse ({e:?}): {response:02x?}"));
        assert!(m.header.qr() && m.header.ra());
        assert_eq!(response[..2], data[..2], "ID not copied");
        assert_eq!(m.questions.len(), 1);
        assert_eq!(
            m.questions[0].qname.as_wire(),
            qname.as_ref().as_wire(),
            "question not as spelled"
        );
        if !tcp {
            let limit = match query.as_ref().and_then(Message::opt) {
                None => 512,
                Some(opt) => usize::from(opt.class.0.clamp(512, CLIENT_UDP_MAX)),
            };
            assert!(len <= limit, "{len} octets over UDP, limit {limit}");
        }
        if m.header.tc() {
            assert!(
                m.answers.is_empty() && m.authority.is_empty(),
                "records kept in a truncated answer"
            );
            assert!(!tcp, "truncated over TCP");
            continue;
        }
        // The first owner is the question as spelled; each later owner is the previous
        // CNAME's target, or the same owner again. A DNAME (RFC 6672) comes before the
        // CNAME synthesised from it and owns an ancestor of the name being followed.
        let mut expect_owner = qname.as_ref().as_wire().to_vec();
        let mut first = true;
        for r in &m.answers {
            assert_eq!(r.class, Class::IN);
            assert!(
                r.ttl <= 3600 - elapsed_s.min(3600),
                "TTL {} after {elapsed_s} s",
                r.ttl
            );
            if r.rtype == RType::DNAME && lower(r.owner.as_wire()) != lower(&expect_owner) {
                assert!(
                    NameRef::from_wire(&expect_owner)
                        .is_ok_and(|o| o.ends_with(&r.owner.as_ref()) && o != r.owner.as_ref()),
                    "DNAME at {} while following {:02x?}",
                    r.owner,
                    expect_owner
                );
                continue;
            }
            if first {
                assert_eq!(
                    r.owner.as_wire(),
                    &expect_owner[..],
                    "first owner not as asked"
                );
                first = false;
            } else {
                assert!(
                    lower(r.owner.as_wire()) == lower(&expect_owner),
                    "{} {} while following {:02x?}",
                    r.owner,
                    r.rtype,
                    expect_owner
                );
            }
            if r.rtype == RType::CNAME {
                expect_owner = r.rdata.clone();
            }
        }
        let got = seen(response);
        if m.rcode() == Rcode::NXDOMAIN || m.answers.is_empty() {
            assert!(
                m.authority.iter().any(|r| r.rtype == RType::SOA),
                "negative answer without its SOA: {} {qtype}",
                qname.as_ref()
            );
        }
        if let Some(k) = known {
            assert!(
                u64::from(k.min_ttl) > u64::from(elapsed_s),
                "{} {qtype} answered after it expired",
                qname.as_ref()
            );
            assert_eq!(got.rcode, k.rcode, "{} {qtype}", qname.as_ref());
            assert!(
                got.records == k.records,
                "{} {qtype} changed: {} records, {} at the fill",
                qname.as_ref(),
                got.records.len(),
                k.records.len()
            );
        }
    }
}
