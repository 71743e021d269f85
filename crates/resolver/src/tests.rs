//! End-to-end resolution over a simulated network: fake authoritative servers as in-memory
//! zones keyed by address, a fake clock, and a driver loop like a server's. No sockets.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use shardns_wire::text::Token;
use shardns_wire::{
    rdata, Class, Header, Message, MessageWriter, Name, NameRef, RType, Rcode, Record, Section,
};

use crate::{
    Answer, CacheAnswer, Config, Ede, Engine, Event, Hints, QueryId, Resolver, TaskId, ZoneServers,
};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn addr(s: &str) -> SocketAddr {
    format!("{s}:53").parse().unwrap()
}

/// Records from lines of `owner ttl TYPE rdata...` (absolute names).
fn records(text: &str) -> Vec<Record> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let rtype = RType::from_text(f[2]).unwrap();
            let tokens: Vec<Token<'_>> =
                f[3..].iter().map(|t| Token::plain(t.as_bytes())).collect();
            let mut rd = Vec::new();
            rdata::from_text(rtype, &tokens, NameRef::ROOT, &mut rd)
                .unwrap_or_else(|e| panic!("{line}: {e}"));
            Record {
                owner: n(f[0]),
                rtype,
                class: Class::IN,
                ttl: f[1].parse().unwrap(),
                rdata: rd,
            }
        })
        .collect()
}

fn soa_line(zone: &str) -> String {
    let sep = if zone == "." { "" } else { zone };
    format!("{zone} 3600 SOA ns.{sep} host.{sep} 1 7200 900 86400 300")
}

struct Zone {
    apex: Name,
    records: Vec<Record>,
}

fn zone(apex: &str, text: &str) -> Zone {
    Zone {
        apex: n(apex),
        records: records(&format!("{}\n{text}", soa_line(apex))),
    }
}

#[derive(Default, Clone)]
struct Behaviour {
    /// Never answers.
    silent: bool,
    /// UDP answers come back empty with TC set.
    truncate_udp: bool,
    /// Answers with the wrong message ID.
    wrong_id: bool,
    /// Answers a different question.
    wrong_question: bool,
    /// FORMERR (without OPT) to any query with EDNS.
    no_edns: bool,
    /// REFUSED to everything.
    refused: bool,
    /// NXDOMAIN for empty non-terminals (a server broken for QNAME minimisation).
    nxdomain_for_ent: bool,
    /// Behaves as a recursive server: answers without AA, RD required.
    recursive: bool,
    /// Answers everything with this referral (to a zone above its own).
    refer_up: Option<Record>,
    /// Records added to every answer (out-of-bailiwick poisoning attempts).
    inject: Vec<(Section, Record)>,
}

#[derive(Default)]
struct Server {
    zones: Vec<Zone>,
    behaviour: Behaviour,
    latency: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Sent {
    at: u64,
    server: SocketAddr,
    qname: Name,
    qtype: RType,
    tcp: bool,
    edns: bool,
    rd: bool,
}

#[derive(Default)]
struct Net {
    servers: HashMap<SocketAddr, Server>,
}

impl Net {
    fn add(&mut self, ip: &str, zones: Vec<Zone>) -> &mut Server {
        let s = self.servers.entry(addr(ip)).or_default();
        s.zones.extend(zones);
        if s.latency == 0 {
            s.latency = 10;
        }
        s
    }

    /// The server's response to `query`, if it gives one.
    fn respond(&self, to: SocketAddr, query: &[u8], tcp: bool) -> Option<(u64, Vec<u8>)> {
        let server = self.servers.get(&to)?;
        let b = &server.behaviour;
        if b.silent {
            return None;
        }
        let q = Message::parse(query).ok()?;
        let question = q.questions.first()?.clone();
        let edns = q.opt().is_some();
        let mut h = Header {
            id: if b.wrong_id {
                q.header.id ^ 0x5555
            } else {
                q.header.id
            },
            ..Header::default()
        };
        h.set_qr(true);
        h.set_rd(q.header.rd());
        let mut out = Out::default();
        let rcode = if b.no_edns && edns {
            Rcode::FORMERR
        } else if b.refused {
            Rcode::REFUSED
        } else if let Some(ns) = &b.refer_up {
            out.push(Section::Authority, ns.clone());
            Rcode::NOERROR
        } else {
            answer(
                server,
                question.qname.as_ref(),
                question.qtype,
                &mut out,
                &mut h,
            )
        };
        h.set_rcode(rcode);
        for (section, r) in &b.inject {
            out.push(*section, r.clone());
        }
        let mut buf = vec![0u8; 65535];
        let mut w = MessageWriter::new(&mut buf, 65535);
        let qname = if b.wrong_question {
            n("wrong.question.")
        } else {
            question.qname.clone()
        };
        w.put_question(qname.as_ref(), question.qtype, Class::IN)
            .unwrap();
        if b.truncate_udp && !tcp {
            h.set_tc(true);
        } else {
            // The writer counts per section but writes in order: sort by section.
            out.records.sort_by_key(|(s, _)| *s as u8);
            for (section, r) in out.records {
                w.put_record(
                    section,
                    r.owner.as_ref(),
                    r.rtype,
                    Class::IN,
                    r.ttl,
                    &r.rdata,
                )
                .unwrap();
            }
        }
        if edns && !(b.no_edns) {
            w.put_opt(1232, 0, 0, false, &[]).unwrap();
        }
        let bytes = w.finish(&h).to_vec();
        Some((server.latency, bytes))
    }
}

#[derive(Default)]
struct Out {
    records: Vec<(Section, Record)>,
}

impl Out {
    fn push(&mut self, s: Section, r: Record) {
        self.records.push((s, r));
    }
}

/// A small authoritative answering routine (RFC 1034 §4.3.2, no wildcards).
fn answer(
    server: &Server,
    qname: NameRef<'_>,
    qtype: RType,
    out: &mut Out,
    h: &mut Header,
) -> Rcode {
    if server.behaviour.recursive {
        return recursive_answer(server, qname, qtype, out);
    }
    let Some(zone) = server
        .zones
        .iter()
        .filter(|z| qname.ends_with(&z.apex.as_ref()))
        .max_by_key(|z| z.apex.as_ref().len())
    else {
        return Rcode::REFUSED;
    };
    let at = |name: NameRef<'_>, t: RType| -> Vec<Record> {
        zone.records
            .iter()
            .filter(|r| r.owner.as_ref() == name && r.rtype == t)
            .cloned()
            .collect()
    };
    let soa = at(zone.apex.as_ref(), RType::SOA);
    // Delegations: the highest cut below the apex on the way to qname.
    let depth = qname.label_count() - zone.apex.as_ref().label_count();
    for keep in (zone.apex.as_ref().label_count() + 1)..=(zone.apex.as_ref().label_count() + depth)
    {
        let cut = qname.suffix(keep);
        let ns = at(cut, RType::NS);
        if !ns.is_empty() {
            for r in &ns {
                let target = NameRef::from_wire(&r.rdata).unwrap();
                for t in [RType::A, RType::AAAA] {
                    for g in at(target, t) {
                        out.push(Section::Additional, g);
                    }
                }
            }
            for r in ns {
                out.push(Section::Authority, r);
            }
            return Rcode::NOERROR;
        }
        // DNAME strictly above qname.
        if cut != qname {
            if let Some(d) = at(cut, RType::DNAME).into_iter().next() {
                h.set_aa(true);
                let target = rdata::target_name(RType::DNAME, &d.rdata).unwrap();
                let prefix = &qname.as_wire()[..qname.len() - cut.len()];
                let mut buf = shardns_wire::NameBuf::new();
                buf.set_concat(prefix, target).unwrap();
                out.push(
                    Section::Answer,
                    Record {
                        owner: qname.to_name(),
                        rtype: RType::CNAME,
                        class: Class::IN,
                        ttl: d.ttl,
                        rdata: buf.as_ref().as_wire().to_vec(),
                    },
                );
                out.push(Section::Answer, d);
                return Rcode::NOERROR;
            }
        }
    }
    h.set_aa(true);
    let mut name = qname.to_name();
    for _ in 0..32 {
        let rrs = at(name.as_ref(), qtype);
        if !rrs.is_empty() {
            for r in rrs {
                out.push(Section::Answer, r);
            }
            return Rcode::NOERROR;
        }
        let cname = at(name.as_ref(), RType::CNAME);
        if let Some(c) = cname.into_iter().next() {
            let target = NameRef::from_wire(&c.rdata).unwrap().to_name();
            out.push(Section::Answer, c);
            if !target.as_ref().ends_with(&zone.apex.as_ref()) {
                return Rcode::NOERROR;
            }
            name = target;
            continue;
        }
        break;
    }
    let exists = zone
        .records
        .iter()
        .any(|r| r.owner.as_ref().ends_with(&name.as_ref()));
    let has_own = zone.records.iter().any(|r| r.owner == name);
    for s in soa {
        out.push(Section::Authority, s);
    }
    if exists && (has_own || !server.behaviour.nxdomain_for_ent) {
        Rcode::NOERROR
    } else {
        Rcode::NXDOMAIN
    }
}

/// A forwarder: answers from all its zones, without AA.
fn recursive_answer(server: &Server, qname: NameRef<'_>, qtype: RType, out: &mut Out) -> Rcode {
    let rrs: Vec<Record> = server
        .zones
        .iter()
        .flat_map(|z| z.records.iter())
        .filter(|r| r.owner.as_ref() == qname && r.rtype == qtype)
        .cloned()
        .collect();
    if rrs.is_empty() {
        return Rcode::NXDOMAIN;
    }
    for r in rrs {
        out.push(Section::Answer, r);
    }
    Rcode::NOERROR
}

/// The test world: root, `test.` and `org.` TLDs and zones below them.
fn world() -> Net {
    let mut net = Net::default();
    net.add(
        "10.0.0.1",
        vec![zone(
            ".",
            ". 86400 NS a.root.test.
             test. 172800 NS ns1.nic.test.
             ns1.nic.test. 172800 A 10.0.1.1
             org. 172800 NS ns.org.
             ns.org. 172800 A 10.0.2.1",
        )],
    );
    net.add(
        "10.0.1.1",
        vec![zone(
            "test.",
            "test. 86400 NS ns1.nic.test.
             ns1.nic.test. 86400 A 10.0.1.1
             example.test. 86400 NS ns1.example.test.
             example.test. 86400 NS ns2.example.test.
             ns1.example.test. 86400 A 10.0.3.1
             ns2.example.test. 86400 A 10.0.3.2
             other.test. 86400 NS ns.hosting.org.
             ns.hosting.org. 86400 A 6.6.6.6
             sub.test. 86400 NS ns1.example.test.
             lame.test. 86400 NS ns.lame.test.
             ns.lame.test. 86400 A 10.0.9.9
             dead.test. 86400 NS ns.dead.test.
             ns.dead.test. 86400 A 10.0.9.8
             half.test. 86400 NS ns1.half.test.
             half.test. 86400 NS ns2.half.test.
             ns1.half.test. 86400 A 10.0.9.8
             ns2.half.test. 86400 A 10.0.5.1
             loopa.test. 86400 NS ns.loopb.test.
             loopb.test. 86400 NS ns.loopa.test.
             up.test. 86400 NS ns.up.test.
             ns.up.test. 86400 A 10.0.9.7
             evil.test. 86400 NS ns.evil.test.
             ns.evil.test. 86400 A 10.0.6.1
             spoof.test. 86400 NS ns.spoof.test.
             ns.spoof.test. 86400 A 10.0.6.2
             tc.test. 86400 NS ns.tc.test.
             ns.tc.test. 86400 A 10.0.6.3
             noedns.test. 86400 NS ns.noedns.test.
             ns.noedns.test. 86400 A 10.0.6.4
             ent.test. 86400 NS ns.ent.test.
             ns.ent.test. 86400 A 10.0.6.5",
        )],
    );
    net.add(
        "10.0.2.1",
        vec![zone(
            "org.",
            "org. 86400 NS ns.org.
             ns.org. 86400 A 10.0.2.1
             hosting.org. 86400 NS ns.hosting.org.
             ns.hosting.org. 86400 A 10.0.4.1",
        )],
    );
    let example = || {
        zone(
            "example.test.",
            "example.test. 86400 NS ns1.example.test.
             example.test. 86400 NS ns2.example.test.
             ns1.example.test. 86400 A 10.0.3.1
             ns1.example.test. 86400 A 10.0.3.11
             ns2.example.test. 86400 A 10.0.3.2
             www.example.test. 300 A 192.0.2.80
             a.b.c.example.test. 300 A 192.0.2.81
             alias.example.test. 300 CNAME www.other.test.
             old.example.test. 300 DNAME new.other.test.
             loop1.example.test. 300 CNAME loop2.example.test.
             loop2.example.test. 300 CNAME loop1.example.test.",
        )
    };
    let sub = || {
        zone(
            "sub.test.",
            "sub.test. 86400 NS ns1.example.test.\n www.sub.test. 300 A 192.0.2.90",
        )
    };
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.add(ip, vec![example(), sub()]);
    }
    net.add(
        "10.0.4.1",
        vec![
            zone(
                "hosting.org.",
                "hosting.org. 86400 NS ns.hosting.org.
                 ns.hosting.org. 86400 A 10.0.4.1",
            ),
            zone(
                "other.test.",
                "other.test. 86400 NS ns.hosting.org.
                 www.other.test. 600 A 192.0.2.100
                 www.new.other.test. 600 A 192.0.2.101",
            ),
        ],
    );
    net.add("10.0.9.9", vec![]).behaviour.refused = true;
    net.add("10.0.9.8", vec![]).behaviour.silent = true;
    net.add(
        "10.0.5.1",
        vec![zone("half.test.", "www.half.test. 300 A 192.0.2.110")],
    );
    net.add("10.0.9.7", vec![zone("up.test.", "")])
        .behaviour
        .refer_up = Some(records("test. 86400 NS ns1.nic.test.").remove(0));
    net.add(
        "10.0.6.1",
        vec![zone("evil.test.", "www.evil.test. 300 A 192.0.2.120")],
    )
    .behaviour
    .inject = vec![
        (
            Section::Answer,
            records("www.bank.org. 300 A 6.6.6.6").remove(0),
        ),
        (
            Section::Authority,
            records("org. 86400 NS ns.evil.test.").remove(0),
        ),
        (
            Section::Additional,
            records("ns.org. 86400 A 6.6.6.6").remove(0),
        ),
    ];
    net.add(
        "10.0.6.2",
        vec![zone("spoof.test.", "www.spoof.test. 300 A 192.0.2.130")],
    )
    .behaviour
    .wrong_id = true;
    net.add(
        "10.0.6.3",
        vec![zone("tc.test.", "www.tc.test. 300 A 192.0.2.140")],
    )
    .behaviour
    .truncate_udp = true;
    net.add(
        "10.0.6.4",
        vec![zone("noedns.test.", "www.noedns.test. 300 A 192.0.2.150")],
    )
    .behaviour
    .no_edns = true;
    net.add(
        "10.0.6.5",
        vec![zone("ent.test.", "a.b.ent.test. 300 A 192.0.2.160")],
    )
    .behaviour
    .nxdomain_for_ent = true;
    net
}

fn config() -> Config {
    Config {
        hints: Hints::parse(". NS a.root.test.\na.root.test. A 10.0.0.1@53\n").unwrap(),
        ipv6: false,
        ..Config::default()
    }
}

struct Pending {
    at: u64,
    query: QueryId,
    from: SocketAddr,
    bytes: Vec<u8>,
}

/// A driver: the engine, the fake network and a fake clock.
struct Sim {
    net: Net,
    now: u64,
    engine: Engine,
    pending: Vec<Pending>,
    log: Vec<Sent>,
    done: Vec<(TaskId, Answer)>,
    /// When each task finished (simulated ms).
    finished: Vec<(TaskId, u64)>,
}

impl Sim {
    fn new(net: Net, config: Config) -> Self {
        let resolver = Arc::new(Resolver::new(config));
        Self::with_resolver(net, resolver)
    }

    fn with_resolver(net: Net, resolver: Arc<Resolver>) -> Self {
        Self {
            net,
            now: 1_000_000,
            engine: Engine::new(resolver, [42; 32]),
            pending: Vec::new(),
            log: Vec::new(),
            done: Vec::new(),
            finished: Vec::new(),
        }
    }

    fn resolver(&self) -> Arc<Resolver> {
        Arc::clone(self.engine.resolver())
    }

    fn drain(&mut self) {
        while let Some(ev) = self.engine.poll() {
            match ev {
                Event::Transmit(t) => {
                    let m = Message::parse(t.payload()).unwrap();
                    self.log.push(Sent {
                        at: self.now,
                        server: t.server,
                        qname: m.questions[0].qname.clone(),
                        qtype: m.questions[0].qtype,
                        tcp: t.tcp,
                        edns: m.opt().is_some(),
                        rd: m.header.rd(),
                    });
                    if let Some((latency, bytes)) = self.net.respond(t.server, t.payload(), t.tcp) {
                        self.pending.push(Pending {
                            at: self.now + latency,
                            query: t.query,
                            from: t.server,
                            bytes,
                        });
                    }
                }
                Event::Close(q) => self.pending.retain(|p| p.query != q),
                Event::Done(id, answer) => {
                    self.finished.push((id, self.now));
                    self.done.push((id, answer));
                }
            }
        }
    }

    /// Runs until nothing is left to do.
    fn run(&mut self) {
        for _ in 0..10_000 {
            self.drain();
            let next_pending = self.pending.iter().map(|p| p.at).min();
            let next_timer = self.engine.poll_timeout();
            let Some(next) = [next_pending, next_timer].into_iter().flatten().min() else {
                return;
            };
            self.now = self.now.max(next);
            let due: Vec<Pending> = {
                let (due, rest) = self.pending.drain(..).partition(|p| p.at <= self.now);
                self.pending = rest;
                due
            };
            for p in due {
                self.engine
                    .handle_response(p.query, p.from, &p.bytes, self.now);
                self.drain();
            }
            self.engine.handle_timeout(self.now);
        }
        panic!("simulation did not settle");
    }

    fn resolve(&mut self, qname: &str, qtype: RType) -> Answer {
        let id = self.engine.resolve(n(qname).as_ref(), qtype, self.now);
        self.run();
        let i = self
            .done
            .iter()
            .position(|(t, _)| *t == id)
            .expect("task finished");
        self.done.remove(i).1
    }

    /// Runs the network and timers up to time `to` (tasks may still be going on).
    fn advance(&mut self, to: u64) {
        loop {
            self.drain();
            let next_pending = self.pending.iter().map(|p| p.at).min();
            let next_timer = self.engine.poll_timeout();
            match [next_pending, next_timer].into_iter().flatten().min() {
                Some(next) if next <= to => self.now = self.now.max(next),
                _ => break,
            }
            let (due, rest) = self.pending.drain(..).partition(|p| p.at <= self.now);
            self.pending = rest;
            for p in due {
                self.engine
                    .handle_response(p.query, p.from, &p.bytes, self.now);
                self.drain();
            }
            self.engine.handle_timeout(self.now);
        }
        self.now = self.now.max(to);
    }

    /// Resolves and returns the answer with the simulated milliseconds it took.
    fn resolve_timed(&mut self, qname: &str, qtype: RType) -> (Answer, u64) {
        let start = self.now;
        let id = self.engine.resolve(n(qname).as_ref(), qtype, self.now);
        self.run();
        let i = self.done.iter().position(|(t, _)| *t == id).unwrap();
        let at = self.finished.iter().find(|(t, _)| *t == id).unwrap().1;
        (self.done.remove(i).1, at - start)
    }

    fn count_to(&self, mark: usize, server: &str) -> usize {
        self.log[mark..]
            .iter()
            .filter(|s| s.server == addr(server))
            .count()
    }

    fn queries_since(&self, mark: usize) -> Vec<(SocketAddr, String, RType)> {
        self.log[mark..]
            .iter()
            .map(|s| (s.server, s.qname.to_string(), s.qtype))
            .collect()
    }
}

fn rdata_a(a: &Answer) -> Vec<[u8; 4]> {
    a.answers
        .iter()
        .filter(|r| r.rtype == RType::A)
        .map(|r| <[u8; 4]>::try_from(&r.rdata[..]).unwrap())
        .collect()
}

fn cache_answer(res: &Resolver, q: &str, qtype: RType, now: u64) -> (CacheAnswer, Message) {
    let mut buf = [0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096);
    w.put_question(n(q).as_ref(), qtype, Class::IN).unwrap();
    let r = res.cache().answer(n(q).as_ref(), qtype, now, &mut w);
    let msg = w.finish(&Header::default()).to_vec();
    (r, Message::parse(&msg).unwrap())
}

#[test]
fn full_iteration_from_hints_with_qname_minimisation() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    let q = sim.queries_since(0);
    assert_eq!(q[0], (addr("10.0.0.1"), "test.".into(), RType::A));
    assert_eq!(q[1], (addr("10.0.1.1"), "example.test.".into(), RType::A));
    assert_eq!((q[2].1.as_str(), q[2].2), ("www.example.test.", RType::A));
    assert!(q[2].0.ip().to_string().starts_with("10.0.3."));
    assert_eq!(q.len(), 3);
    assert!(sim.log.iter().all(|s| s.edns && !s.rd && !s.tcp));
    // Cached now: the hit path answers with the TTL counted down.
    let res = sim.resolver();
    let (r, m) = cache_answer(&res, "www.example.test.", RType::A, sim.now + 100_000);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            truncated: false,
            locks: 1
        }
    ));
    assert_eq!(m.answers[0].ttl, 200);
    // A second resolution needs no upstream query.
    let mark = sim.log.len();
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    assert_eq!(sim.log.len(), mark);
}

#[test]
fn qname_minimisation_walks_empty_non_terminals() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("a.b.c.example.test.", RType::TXT);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(a.answers.is_empty());
    let names: Vec<String> = sim.queries_since(0).into_iter().map(|q| q.1).collect();
    assert_eq!(
        names,
        [
            "test.",
            "example.test.",
            "c.example.test.",
            "b.c.example.test.",
            "a.b.c.example.test."
        ]
    );
    assert_eq!(sim.log.last().unwrap().qtype, RType::TXT);
    // Without minimisation every server sees the full name.
    let mut sim = Sim::new(
        world(),
        Config {
            qname_minimisation: false,
            ..config()
        },
    );
    sim.resolve("a.b.c.example.test.", RType::A);
    assert!(sim.log.iter().all(|s| s.qname == n("a.b.c.example.test.")));
    assert_eq!(sim.log.len(), 3);
}

#[test]
fn minimisation_falls_back_on_nxdomain_for_empty_non_terminal() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("a.b.ent.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 160]]);
    let q = sim.queries_since(2);
    assert_eq!(q[0].1, "b.ent.test.");
    assert_eq!(q[1].1, "a.b.ent.test.");
}

#[test]
fn cname_across_zones_with_out_of_bailiwick_name_server() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("alias.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    let types: Vec<RType> = a.answers.iter().map(|r| r.rtype).collect();
    assert_eq!(types, [RType::CNAME, RType::A]);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 100]]);
    // other.test's server had only out-of-bailiwick glue (6.6.6.6, offered by the test.
    // servers for a name under org.), which was dropped: its address came from a
    // sub-resolution via org.
    assert!(!sim
        .log
        .iter()
        .any(|s| s.server.ip().to_string() == "6.6.6.6"));
    assert!(sim.log.iter().any(|s| s.server == addr("10.0.2.1")));
    assert!(sim
        .log
        .iter()
        .any(|s| s.server == addr("10.0.4.1") && s.qname == n("ns.hosting.org.")));
    // The whole chain is served from the cache afterwards.
    let (r, m) = cache_answer(&sim.resolver(), "alias.example.test.", RType::A, sim.now);
    assert!(matches!(r, CacheAnswer::Hit { locks: 2, .. }));
    assert_eq!(m.answers.len(), 2);
}

#[test]
fn dname_substitution() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.old.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR);
    let types: Vec<RType> = a.answers.iter().map(|r| r.rtype).collect();
    assert_eq!(types, [RType::DNAME, RType::CNAME, RType::A]);
    assert_eq!(a.answers[1].rdata, n("www.new.other.test.").as_wire());
    assert_eq!(rdata_a(&a), [[192, 0, 2, 101]]);
    let (r, m) = cache_answer(&sim.resolver(), "www.old.example.test.", RType::A, sim.now);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            ..
        }
    ));
    assert_eq!(m.answers.len(), 3);
}

/// Found by the differential test against Unbound: a CNAME query below a DNAME took the
/// synthesised CNAME as a plain one (the DNAME was lost, also for later queries answered from
/// the cache), and the cache rendered a synthesised CNAME wrongly for CNAME queries. The
/// CNAME at the name is the answer: its target is not asked about (RFC 1034 §3.6.2).
#[test]
fn cname_query_below_a_dname() {
    let mut sim = Sim::new(world(), config());
    let types = |a: &Answer| a.answers.iter().map(|r| r.rtype).collect::<Vec<_>>();
    let a = sim.resolve("www.old.example.test.", RType::CNAME);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(types(&a), [RType::DNAME, RType::CNAME]);
    assert_eq!(a.answers[0].owner, n("old.example.test."));
    assert_eq!(a.answers[1].rdata, n("www.new.other.test.").as_wire());
    assert!(a.authority.is_empty(), "an answer, not NODATA: {a:?}");
    assert!(sim.log.iter().all(|s| s.qname != n("www.new.other.test.")));
    // Again, from the cache: the same two records, and nothing sent.
    let mark = sim.log.len();
    let a = sim.resolve("www.old.example.test.", RType::CNAME);
    assert_eq!(types(&a), [RType::DNAME, RType::CNAME]);
    assert_eq!(sim.log.len(), mark);
    let (_, m) = cache_answer(
        &sim.resolver(),
        "www.old.example.test.",
        RType::CNAME,
        sim.now,
    );
    assert_eq!(m.answers.len(), 2);
    assert_eq!(m.answers[0].rtype, RType::DNAME);
    // An A query after it still carries the DNAME.
    let a = sim.resolve("www.old.example.test.", RType::A);
    assert_eq!(types(&a), [RType::DNAME, RType::CNAME, RType::A]);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 101]]);
    assert!(sim.log.len() > mark, "the target's A was fetched");
}

#[test]
fn nxdomain_is_cached_with_soa_ttl() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("nope.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::NXDOMAIN);
    assert_eq!(a.authority.len(), 1);
    assert_eq!(a.authority[0].rtype, RType::SOA);
    // SOA TTL 3600, MINIMUM 300: the negative TTL is 300.
    assert_eq!(a.authority[0].ttl, 300);
    let res = sim.resolver();
    let (r, m) = cache_answer(&res, "nope.example.test.", RType::MX, sim.now + 100_000);
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NXDOMAIN,
            ..
        }
    ));
    assert_eq!(m.authority[0].ttl, 200);
    let (r, _) = cache_answer(&res, "nope.example.test.", RType::A, sim.now + 300_001);
    assert!(matches!(r, CacheAnswer::Miss { .. }));
    let mark = sim.log.len();
    assert_eq!(
        sim.resolve("nope.example.test.", RType::A).rcode,
        Rcode::NXDOMAIN
    );
    assert_eq!(sim.log.len(), mark, "answered from the negative cache");
}

#[test]
fn nodata_is_cached_with_soa() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.example.test.", RType::AAAA);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert!(a.answers.is_empty());
    assert_eq!(a.authority[0].rtype, RType::SOA);
    let (r, m) = cache_answer(
        &sim.resolver(),
        "www.example.test.",
        RType::AAAA,
        sim.now + 1000,
    );
    assert!(matches!(
        r,
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            ..
        }
    ));
    assert!(m.answers.is_empty());
    assert_eq!(m.authority[0].ttl, 299);
}

#[test]
fn glue_does_not_overwrite_an_authoritative_answer() {
    // The example.test servers' names: the tld's glue says 10.0.3.1, the zone itself
    // says 10.0.3.1 and 10.0.3.11.
    let mut net = world();
    // sub.test's delegation carries a glue record for ns1.example.test with another address.
    let tld = net.servers.get_mut(&addr("10.0.1.1")).unwrap();
    tld.zones[0]
        .records
        .extend(records("ns1.example.test. 86400 A 10.0.3.66"));
    let mut sim = Sim::new(net, config());
    let a = sim.resolve("ns1.example.test.", RType::A);
    let mut got = rdata_a(&a);
    got.sort();
    assert_eq!(got, [[10, 0, 3, 1], [10, 0, 3, 11]]);
    let mark = sim.log.len();
    // A referral through the tld now carries glue for ns1.example.test (rank: additional).
    let a = sim.resolve("www.sub.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 90]]);
    let (_, m) = cache_answer(&sim.resolver(), "ns1.example.test.", RType::A, sim.now);
    let mut cached: Vec<Vec<u8>> = m.answers.iter().map(|r| r.rdata.clone()).collect();
    cached.sort();
    assert_eq!(cached, [vec![10, 0, 3, 1], vec![10, 0, 3, 11]]);
    assert!(!sim.log[mark..]
        .iter()
        .any(|s| s.server == addr("10.0.3.66")));
}

#[test]
fn identical_questions_are_coalesced() {
    let mut sim = Sim::new(world(), config());
    let t1 = sim
        .engine
        .resolve(n("www.example.test.").as_ref(), RType::A, sim.now);
    let t2 = sim
        .engine
        .resolve(n("WWW.example.test.").as_ref(), RType::A, sim.now);
    sim.run();
    assert_eq!(
        sim.log.len(),
        3,
        "one upstream query per step for both tasks"
    );
    assert_eq!(sim.engine.stats().coalesced, 3);
    assert_eq!(sim.done.len(), 2);
    for (id, a) in &sim.done {
        assert!(*id == t1 || *id == t2);
        assert_eq!(rdata_a(a), [[192, 0, 2, 80]]);
    }
}

#[test]
fn cname_loop_fails_with_ede() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("loop1.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede, Some(Ede::new(Ede::OTHER, "CNAME loop")));
}

#[test]
fn long_cname_chain_is_cut() {
    let mut net = world();
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!(
            "c{i}.example.test. 300 CNAME c{}.example.test.\n",
            i + 1
        ));
    }
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.servers.get_mut(&addr(ip)).unwrap().zones[0]
            .records
            .extend(records(&text));
    }
    let mut sim = Sim::new(net, config());
    let a = sim.resolve("c0.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "CNAME chain too long");
}

#[test]
fn glueless_delegation_loop_fails() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.loopa.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().code, Ede::NO_REACHABLE_AUTHORITY);
    assert!(sim.log.len() < 20, "{} queries", sim.log.len());
}

#[test]
fn upward_referral_is_lame() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.up.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().code, Ede::NO_REACHABLE_AUTHORITY);
    assert_eq!(
        sim.log
            .iter()
            .filter(|s| s.server == addr("10.0.9.7"))
            .count(),
        1
    );
}

#[test]
fn lame_server_refusing() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.lame.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "all servers failed or are lame");
}

#[test]
fn silent_server_times_out_then_servfail() {
    let mut sim = Sim::new(world(), config());
    let start = sim.now;
    let a = sim.resolve("www.dead.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "all servers timed out");
    // Two tries at the one server (tries_per_server), the second with a longer timeout.
    assert_eq!(
        sim.log
            .iter()
            .filter(|s| s.server == addr("10.0.9.8"))
            .count(),
        2
    );
    assert!(sim.now - start >= 800 + 1600);
    assert!(sim.engine.stats().timeouts >= 2);
}

#[test]
fn timeout_moves_to_the_next_server() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.half.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 110]]);
    // Now the silent server's SRTT is high: the next query goes straight to the good one.
    let mark = sim.log.len();
    sim.resolve("www2.half.test.", RType::A);
    assert!(sim.log[mark..].iter().all(|s| s.server == addr("10.0.5.1")));
}

#[test]
fn srtt_prefers_the_fast_server() {
    let mut net = world();
    net.servers.get_mut(&addr("10.0.3.1")).unwrap().latency = 5;
    net.servers.get_mut(&addr("10.0.3.11")).unwrap().latency = 150;
    net.servers.get_mut(&addr("10.0.3.2")).unwrap().latency = 300;
    let mut sim = Sim::new(net, config());
    for i in 0..12 {
        sim.resolve(&format!("h{i}.example.test."), RType::A);
    }
    let to_zone: Vec<SocketAddr> = sim
        .log
        .iter()
        .filter(|s| {
            s.qname.as_ref().label_count() == 3 && s.qname.to_string().ends_with("example.test.")
        })
        .map(|s| s.server)
        .collect();
    assert_eq!(to_zone.len(), 12);
    // Each server is tried while unknown; after that the fast one gets everything.
    assert!(
        to_zone[3..].iter().all(|&s| s == addr("10.0.3.1")),
        "{to_zone:?}"
    );
}

#[test]
fn edns_fallback_on_formerr() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.noedns.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 150]]);
    let to: Vec<&Sent> = sim
        .log
        .iter()
        .filter(|s| s.server == addr("10.0.6.4"))
        .collect();
    assert_eq!(to.len(), 2);
    assert!(to[0].edns && !to[1].edns);
    assert_eq!(sim.engine.stats().edns_fallbacks, 1);
    // Remembered: the next query to that server goes without EDNS at once.
    sim.resolve("x.noedns.test.", RType::A);
    assert!(!sim.log.last().unwrap().edns);
}

#[test]
fn truncation_retries_over_tcp() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.tc.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 140]]);
    let to: Vec<&Sent> = sim
        .log
        .iter()
        .filter(|s| s.server == addr("10.0.6.3"))
        .collect();
    assert_eq!(to.len(), 2);
    assert!(!to[0].tcp && to[1].tcp);
    assert_eq!(sim.engine.stats().tcp_retries, 1);
}

#[test]
fn wrong_id_responses_are_ignored_and_not_cached() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.spoof.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert!(sim.engine.stats().rejected >= 2);
    let (r, _) = cache_answer(&sim.resolver(), "www.spoof.test.", RType::A, sim.now);
    assert!(matches!(r, CacheAnswer::Miss { .. }));
}

#[test]
fn wrong_question_and_wrong_source_are_ignored() {
    let mut net = world();
    net.servers.get_mut(&addr("10.0.6.2")).unwrap().behaviour = Behaviour {
        wrong_question: true,
        ..Behaviour::default()
    };
    let mut sim = Sim::new(net, config());
    let a = sim.resolve("www.spoof.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert!(sim.engine.stats().rejected >= 2);

    // A forged answer from the wrong address, racing the real one, is dropped; the
    // genuine answer is then accepted.
    let mut sim = Sim::new(world(), config());
    sim.engine
        .resolve(n("www.example.test.").as_ref(), RType::A, sim.now);
    let Some(Event::Transmit(t)) = sim.engine.poll() else {
        panic!()
    };
    let (_, real) = sim.net.respond(t.server, t.payload(), false).unwrap();
    let mut forged = real.clone();
    // Same ID and question, but a referral to an attacker's server.
    let forged_msg = {
        let mut m = Message::parse(&forged).unwrap();
        m.additional
            .iter_mut()
            .for_each(|r| r.rdata = vec![6, 6, 6, 6]);
        m
    };
    forged.clear();
    let mut buf = vec![0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096);
    w.put_question(
        forged_msg.questions[0].qname.as_ref(),
        forged_msg.questions[0].qtype,
        Class::IN,
    )
    .unwrap();
    for r in &forged_msg.authority {
        w.put_record(
            Section::Authority,
            r.owner.as_ref(),
            r.rtype,
            Class::IN,
            r.ttl,
            &r.rdata,
        )
        .unwrap();
    }
    for r in &forged_msg.additional {
        w.put_record(
            Section::Additional,
            r.owner.as_ref(),
            r.rtype,
            Class::IN,
            r.ttl,
            &r.rdata,
        )
        .unwrap();
    }
    let forged = w.finish(&forged_msg.header).to_vec();
    assert!(!sim
        .engine
        .handle_response(t.query, addr("10.66.66.66"), &forged, sim.now + 1));
    let mut other_port = t.server;
    other_port.set_port(5353);
    assert!(!sim
        .engine
        .handle_response(t.query, other_port, &forged, sim.now + 1));
    assert_eq!(sim.engine.stats().rejected, 2);
    assert!(sim
        .engine
        .handle_response(t.query, t.server, &real, sim.now + 2));
    // The query is over: a late copy is taken (ignored), not counted as a forgery.
    assert!(sim
        .engine
        .handle_response(t.query, t.server, &real, sim.now + 3));
    assert_eq!(sim.engine.stats().rejected, 2);
    sim.run();
    let (_, a) = sim.done.pop().unwrap();
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    assert!(!sim
        .log
        .iter()
        .any(|s| s.server.ip().to_string() == "6.6.6.6"));
}

#[test]
fn out_of_bailiwick_records_are_dropped() {
    let mut sim = Sim::new(world(), config());
    let a = sim.resolve("www.evil.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 120]]);
    assert_eq!(a.answers.len(), 1);
    let res = sim.resolver();
    let (r, _) = cache_answer(&res, "www.bank.org.", RType::A, sim.now);
    assert!(matches!(r, CacheAnswer::Miss { .. }));
    // The poisoned NS for org and address for ns.org were not taken either.
    let mut seen = Vec::new();
    res.cache().visit(
        n("org.").as_ref(),
        &[RType::NS],
        crate::cache::Rank::Additional,
        sim.now,
        |_, _, rd| seen.push(rd.to_vec()),
    );
    assert!(seen.is_empty());
    res.cache().visit(
        n("ns.org.").as_ref(),
        &[RType::A],
        crate::cache::Rank::Additional,
        sim.now,
        |_, _, rd| seen.push(rd.to_vec()),
    );
    assert!(seen.is_empty());
}

#[test]
fn forward_zone_sends_everything_with_rd() {
    let mut net = world();
    let fwd = net.add(
        "10.0.7.1",
        vec![zone("fwd.example.", "www.fwd.example. 300 A 192.0.2.170")],
    );
    fwd.behaviour.recursive = true;
    let cfg = Config {
        forward_zones: vec![ZoneServers {
            zone: n("fwd.example."),
            servers: vec![addr("10.0.7.1")],
        }],
        ..config()
    };
    let mut sim = Sim::new(net, cfg);
    let a = sim.resolve("www.fwd.example.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 170]]);
    assert_eq!(sim.log.len(), 1);
    assert!(sim.log[0].rd && sim.log[0].qname == n("www.fwd.example."));
    let a = sim.resolve("nx.fwd.example.", RType::A);
    assert_eq!(a.rcode, Rcode::NXDOMAIN);
    assert_eq!(sim.log.len(), 2);
}

#[test]
fn stub_zone_iterates_below_given_servers() {
    let mut net = world();
    net.add(
        "10.0.8.1",
        vec![zone(
            "stub.example.",
            "deep.stub.example. 3600 NS ns.deep.stub.example.
             ns.deep.stub.example. 3600 A 10.0.8.2",
        )],
    );
    net.add(
        "10.0.8.2",
        vec![zone(
            "deep.stub.example.",
            "www.deep.stub.example. 300 A 192.0.2.180",
        )],
    );
    let cfg = Config {
        stub_zones: vec![ZoneServers {
            zone: n("stub.example."),
            servers: vec![addr("10.0.8.1")],
        }],
        ..config()
    };
    let mut sim = Sim::new(net, cfg);
    let a = sim.resolve("www.deep.stub.example.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 180]]);
    let q = sim.queries_since(0);
    assert_eq!(
        q,
        [
            (addr("10.0.8.1"), "deep.stub.example.".to_string(), RType::A),
            (
                addr("10.0.8.2"),
                "www.deep.stub.example.".to_string(),
                RType::A
            ),
        ]
    );
    assert!(!sim.log.iter().any(|s| s.rd));
}

#[test]
fn network_errors_give_ede_23() {
    let mut sim = Sim::new(world(), config());
    let id = sim
        .engine
        .resolve(n("www.example.test.").as_ref(), RType::A, sim.now);
    // Every send fails at once.
    for _ in 0..10 {
        let mut sent = Vec::new();
        while let Some(ev) = sim.engine.poll() {
            match ev {
                Event::Transmit(t) => sent.push(t.query),
                Event::Done(t, a) => sim.done.push((t, a)),
                Event::Close(_) => {}
            }
        }
        for q in sent {
            sim.engine.handle_send_error(q, sim.now);
        }
    }
    let (t, a) = sim.done.pop().unwrap();
    assert_eq!(t, id);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().code, Ede::NETWORK_ERROR);
}

#[test]
fn query_budget_limits_one_resolution() {
    let mut sim = Sim::new(
        world(),
        Config {
            max_queries: 2,
            ..config()
        },
    );
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "too many upstream queries");
    assert_eq!(sim.log.len(), 2);
}

#[test]
fn cache_stays_within_its_memory_bound() {
    let mut net = world();
    let mut text = String::new();
    for i in 0..400 {
        text.push_str(&format!(
            "n{i}.example.test. 300 TXT some-text-to-take-room-{i}\n"
        ));
    }
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.servers.get_mut(&addr(ip)).unwrap().zones[0]
            .records
            .extend(records(&text));
    }
    let bound = 64 * 1024;
    let mut sim = Sim::new(
        net,
        Config {
            cache_bytes: bound,
            ..config()
        },
    );
    for i in 0..400 {
        let a = sim.resolve(&format!("n{i}.example.test."), RType::TXT);
        assert_eq!(a.answers.len(), 1);
    }
    let s = sim.resolver().cache().stats();
    assert!(s.bytes <= bound, "{s:?}");
    assert!(s.evictions > 0);
}

#[test]
fn cancelled_task_reports_nothing() {
    let mut sim = Sim::new(world(), config());
    let id = sim
        .engine
        .resolve(n("www.example.test.").as_ref(), RType::A, sim.now);
    sim.engine.cancel(id);
    sim.run();
    assert!(sim.done.is_empty());
    assert_eq!(sim.engine.active_tasks(), 0);
    assert_eq!(sim.engine.outstanding_queries(), 0);
}

#[test]
fn shared_cache_serves_another_worker() {
    let resolver = Arc::new(Resolver::new(config()));
    let mut w1 = Sim::with_resolver(world(), Arc::clone(&resolver));
    let mut w2 = Sim::with_resolver(world(), Arc::clone(&resolver));
    w1.resolve("www.example.test.", RType::A);
    w2.now = w1.now;
    let a = w2.resolve("www.example.test.", RType::A);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 80]]);
    assert!(w2.log.is_empty());
    // The second worker's other names start from the cached example.test cut.
    w2.resolve("nope2.example.test.", RType::A);
    assert_eq!(w2.log.len(), 1);
}

#[test]
fn query_ids_and_source_ports_are_random() {
    // Without minimisation each name is a different question to the root (no coalescing).
    let mut sim = Sim::new(
        world(),
        Config {
            qname_minimisation: false,
            ..config()
        },
    );
    let mut ids = Vec::new();
    let mut ports = Vec::new();
    for i in 0..20 {
        sim.engine.resolve(
            n(&format!("r{i}.example.test.")).as_ref(),
            RType::A,
            sim.now,
        );
        while let Some(ev) = sim.engine.poll() {
            if let Event::Transmit(t) = ev {
                assert_eq!(Header::parse(t.payload()).unwrap().id, t.id);
                ids.push(t.id);
                ports.push(t.source_port);
            }
        }
    }
    assert_eq!(ids.len(), 20);
    ids.sort();
    ids.dedup();
    ports.sort();
    ports.dedup();
    assert!(ids.len() >= 19 && ports.len() >= 19, "{ids:?} {ports:?}");
    assert!(ports.iter().all(|&p| p >= 1024));
}

#[test]
fn resolution_deadline_gives_servfail() {
    let mut sim = Sim::new(
        world(),
        Config {
            max_resolution_ms: 500,
            ..config()
        },
    );
    let a = sim.resolve("www.dead.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "resolution timed out");
    // Only the first try at the silent server went out before the deadline.
    assert_eq!(
        sim.log
            .iter()
            .filter(|s| s.server == addr("10.0.9.8"))
            .count(),
        1
    );
}

#[test]
fn ttl_caps_apply_to_cache_and_answers() {
    let mut sim = Sim::new(
        world(),
        Config {
            min_ttl: 400,
            max_ttl: 500,
            max_negative_ttl: 60,
            ..config()
        },
    );
    // www.other.test has TTL 600: the answer and the cache say 500.
    let a = sim.resolve("www.other.test.", RType::A);
    assert_eq!(a.answers[0].ttl, 500);
    let res = sim.resolver();
    let (_, m) = cache_answer(&res, "www.other.test.", RType::A, sim.now);
    assert_eq!(m.answers[0].ttl, 500);
    // www.example.test has TTL 300: cached for 400.
    sim.resolve("www.example.test.", RType::A);
    let (r, _) = cache_answer(&res, "www.example.test.", RType::A, sim.now + 350_000);
    assert!(matches!(r, CacheAnswer::Hit { .. }));
    // Negative TTL 300 from the SOA, capped at 60.
    sim.resolve("nope.example.test.", RType::A);
    let (r, _) = cache_answer(&res, "nope.example.test.", RType::A, sim.now + 61_000);
    assert!(matches!(r, CacheAnswer::Miss { .. }));
}

#[test]
fn referral_limit() {
    let mut sim = Sim::new(
        world(),
        Config {
            max_referrals: 1,
            ..config()
        },
    );
    let a = sim.resolve("www.example.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "too many referrals");
    assert_eq!(sim.log.len(), 2);
}

/// Found by the differential test against Unbound: QNAME minimisation asks one zone's
/// servers several questions, and each answer used to count as a try, so a zone with one
/// server address was given up (SERVFAIL) before the full name was asked.
#[test]
fn minimisation_steps_do_not_use_up_a_single_server() {
    let mut net = Net::default();
    net.add(
        "10.0.0.1",
        vec![zone(
            ".",
            ". 86400 NS a.root-servers.net.
             a.root-servers.net. 86400 A 10.0.0.1
             x.y.z.root-servers.net. 86400 A 10.0.0.2",
        )],
    );
    let cfg = Config {
        hints: Hints::parse(". NS a.root-servers.net.\na.root-servers.net. A 10.0.0.1\n").unwrap(),
        ipv6: false,
        tries_per_server: 2,
        ..Config::default()
    };
    let mut sim = Sim::new(net, cfg);
    let a = sim.resolve("x.y.z.root-servers.net.", RType::A);
    assert_eq!(a.rcode, Rcode::NOERROR, "{a:?}");
    assert_eq!(rdata_a(&a), [[10, 0, 0, 2]]);
    let asked: Vec<String> = sim.queries_since(0).into_iter().map(|q| q.1).collect();
    assert_eq!(
        asked,
        [
            "net.",
            "root-servers.net.",
            "z.root-servers.net.",
            "y.z.root-servers.net.",
            "x.y.z.root-servers.net."
        ]
    );
}

/// Found by the differential test against Unbound (class `unbound-silent-zone`): a zone whose
/// only server never answers cost every later query the whole 10 s resolution deadline (the
/// cached cut's server timed out twice, the parent was asked for the same referral, and the
/// same silent address was tried twice more). Now the address is held down after two
/// timeouts in a row: later queries for the zone fail at once with EDE 22 and send nothing;
/// when the hold-down expires one query probes the server, and the hold-down doubles.
#[test]
fn silent_zone_is_held_down_and_fails_fast() {
    let mut sim = Sim::new(world(), config());
    let silent = "10.0.9.8";
    let (a, took) = sim.resolve_timed("www.dead.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.as_ref().unwrap().code, Ede::NO_REACHABLE_AUTHORITY);
    assert_eq!(sim.count_to(0, silent), 2);
    // 800 ms, then 2450 ms (three times the doubled SRTT, plus 50).
    assert!(took <= 800 + 2_450 + 100, "first SERVFAIL after {took} ms");
    // Within the hold-down (5 s): no upstream query at all, SERVFAIL at once.
    for q in ["www2.dead.test.", "a.b.dead.test.", "www.dead.test."] {
        let mark = sim.log.len();
        let (a, took) = sim.resolve_timed(q, RType::TXT);
        assert_eq!(a.rcode, Rcode::SERVFAIL, "{q}");
        assert_eq!(
            a.ede,
            Some(Ede::new(
                Ede::NO_REACHABLE_AUTHORITY,
                "all servers held down as unresponsive"
            ))
        );
        assert_eq!(took, 0, "{q}");
        assert_eq!(sim.log.len(), mark, "{q}: {:?}", sim.queries_since(mark));
    }
    // After it: one probe (a retry is not sent to a held-down server), then held again
    // for twice as long.
    sim.now += 5_000;
    let mark = sim.log.len();
    let (a, took) = sim.resolve_timed("probe.dead.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(
        sim.queries_since(mark),
        [(addr(silent), "probe.dead.test.".to_string(), RType::A)]
    );
    assert!(took <= 3_000, "{took}");
    sim.now += 9_000;
    let mark = sim.log.len();
    let (_, took) = sim.resolve_timed("x.dead.test.", RType::A);
    assert_eq!((sim.log.len() - mark, took), (0, 0));
    sim.now += 1_000;
    sim.resolve("y.dead.test.", RType::A);
    assert_eq!(sim.count_to(mark, silent), 1, "probed again after 10 s");
    // The parent was never asked again for the referral to the silent zone.
    assert_eq!(
        sim.log
            .iter()
            .filter(|s| s.qname == n("dead.test."))
            .count(),
        1
    );
}

/// Concurrent resolutions under a silent zone: timeouts of queries that were all out at the
/// same time count as one, and every task is answered long before the deadline.
#[test]
fn concurrent_queries_to_a_silent_zone() {
    let mut sim = Sim::new(world(), config());
    sim.resolve("test.", RType::NS);
    // The cut is known (cached) but its server never heard from.
    let start = sim.now;
    let ids: Vec<TaskId> = (0..20)
        .map(|i| {
            sim.engine
                .resolve(n(&format!("h{i}.dead.test.")).as_ref(), RType::A, sim.now)
        })
        .collect();
    sim.run();
    for id in &ids {
        let (_, a) = sim.done.iter().find(|(t, _)| t == id).unwrap();
        assert_eq!(a.rcode, Rcode::SERVFAIL);
        let at = sim.finished.iter().find(|(t, _)| t == id).unwrap().1;
        assert!(at - start <= 800 + 2_450 + 100, "{}", at - start);
    }
    // Each task tried the server at most twice; the parent was asked once.
    assert!(sim.count_to(0, "10.0.9.8") <= 40);
    let mark = sim.log.len();
    let (a, took) = sim.resolve_timed("later.dead.test.", RType::A);
    assert_eq!(
        (a.rcode, took, sim.log.len() - mark),
        (Rcode::SERVFAIL, 0, 0)
    );
}

/// A server that answers again ends its hold-down at once.
#[test]
fn held_down_server_recovers_on_its_probe() {
    let mut sim = Sim::new(world(), config());
    sim.resolve("www.dead.test.", RType::A);
    sim.net
        .servers
        .get_mut(&addr("10.0.9.8"))
        .unwrap()
        .behaviour
        .silent = false;
    sim.net.servers.get_mut(&addr("10.0.9.8")).unwrap().zones =
        vec![zone("dead.test.", "www.dead.test. 300 A 192.0.2.99")];
    assert_eq!(
        sim.resolve("www.dead.test.", RType::A).rcode,
        Rcode::SERVFAIL
    );
    sim.now += 5_000;
    assert_eq!(
        rdata_a(&sim.resolve("www.dead.test.", RType::A)),
        [[192, 0, 2, 99]]
    );
    let mark = sim.log.len();
    let a = sim.resolve("www.dead.test.", RType::TXT);
    assert_eq!(a.rcode, Rcode::NOERROR);
    assert_eq!(sim.count_to(mark, "10.0.9.8"), 1);
}

/// A cached cut whose server is lame: the parent is asked again (the delegation may have
/// changed), but when it refers to the same servers they are not asked a second time.
#[test]
fn referral_back_to_an_abandoned_cut_is_not_followed_again() {
    let mut sim = Sim::new(world(), config());
    sim.resolve("www.lame.test.", RType::A);
    let mark = sim.log.len();
    let a = sim.resolve("www2.lame.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    assert_eq!(a.ede.unwrap().text, "all servers failed or are lame");
    assert_eq!(
        sim.queries_since(mark),
        [
            (addr("10.0.9.9"), "www2.lame.test.".to_string(), RType::A),
            (addr("10.0.1.1"), "lame.test.".to_string(), RType::A),
        ]
    );
}

/// The stress topology of bench/stress.py: one server holds both `test.` and its child
/// `bench.test.`, so the minimised question `bench.test. A` sent into `test.` gets the
/// child's authoritative NODATA, not a referral. Each name's resolution asked it again
/// unless an identical query happened to be in flight: 1,177 upstream queries for 1,001
/// names. The NODATA is now cached and a minimisation step the cache already answers is
/// not asked again.
#[test]
fn minimisation_steps_answered_from_the_cache() {
    let mut net = Net::default();
    net.add(
        "10.0.0.1",
        vec![zone(
            ".",
            ". 86400 NS a.root.test.
             test. 86400 NS ns.test.
             ns.test. 86400 A 10.0.1.1",
        )],
    );
    let mut bench =
        String::from("bench.test. 86400 NS ns.bench.test.\nns.bench.test. 86400 A 10.0.1.1\n");
    for i in 0..200 {
        bench.push_str(&format!(
            "host{i:04}.bench.test. 3600 A 192.0.2.{}\n",
            i % 250
        ));
    }
    net.add(
        "10.0.1.1",
        vec![
            zone(
                "test.",
                "test. 86400 NS ns.test.
                 ns.test. 86400 A 10.0.1.1
                 www.test. 300 A 192.0.2.1
                 bench.test. 86400 NS ns.bench.test.
                 ns.bench.test. 86400 A 10.0.1.1",
            ),
            zone("bench.test.", &bench),
        ],
    );
    let mut sim = Sim::new(net, config());
    // The readiness query of stress.py: caches the test. cut.
    sim.resolve("www.test.", RType::A);
    let mark = sim.log.len();
    // A client every 2 ms, 10 ms per round trip: a few resolutions overlap at any time.
    let ids: Vec<TaskId> = (0..200)
        .map(|i| {
            let id = sim.engine.resolve(
                n(&format!("host{i:04}.bench.test.")).as_ref(),
                RType::A,
                sim.now,
            );
            let to = sim.now + 2;
            sim.advance(to);
            id
        })
        .collect();
    sim.run();
    for id in ids {
        let (_, a) = sim.done.iter().find(|(t, _)| *t == id).unwrap();
        assert_eq!(a.rcode, Rcode::NOERROR);
        assert_eq!(a.answers.len(), 1);
    }
    let asked_cut = sim.log[mark..]
        .iter()
        .filter(|s| s.qname == n("bench.test."))
        .count();
    assert_eq!(asked_cut, 1, "{:?}", sim.queries_since(mark));
    assert_eq!(sim.log.len() - mark, 201);
}
