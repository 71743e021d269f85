//! The resolver's test simulator: a driver loop like a server's over the fake network
//! (`net`) and its world (`world`), with a fake clock.

use std::net::SocketAddr;
use std::sync::Arc;

use shardns_wire::{Class, Header, Message, MessageWriter, Name, RType};

use crate::{CacheAnswer, Config, Engine, Event, Hints, QueryId, Resolution, Resolver, TaskId};

mod net;
mod signed;
mod world;

pub(crate) use net::{records, zone, Behaviour, Net, Sent};
pub(crate) use signed::{signed_world, SIGNED_AT};
pub(crate) use world::world;

pub(crate) fn n(s: &str) -> Name {
    s.parse().unwrap()
}

pub(crate) fn addr(s: &str) -> SocketAddr {
    SocketAddr::new(s.parse().unwrap(), 53)
}

/// The test world's configuration: validation on, but no trust anchor (the unsigned
/// world is insecure; `signed_world` brings its own anchor).
pub(crate) fn config() -> Config {
    Config {
        hints: Hints::parse(". NS a.root.test.\na.root.test. A 10.0.0.1@53\n").unwrap(),
        ipv6: false,
        trust_anchors: crate::TrustAnchors::none(),
        ..Config::default()
    }
}

pub(crate) struct Pending {
    pub(crate) at: u64,
    pub(crate) query: QueryId,
    pub(crate) from: SocketAddr,
    pub(crate) bytes: Vec<u8>,
}

/// A driver: the engine, the fake network and a fake clock.
pub(crate) struct Sim {
    pub(crate) net: Net,
    pub(crate) now: u64,
    pub(crate) engine: Engine,
    pub(crate) pending: Vec<Pending>,
    pub(crate) log: Vec<Sent>,
    pub(crate) done: Vec<(TaskId, Resolution)>,
    /// When each task finished (simulated ms).
    pub(crate) finished: Vec<(TaskId, u64)>,
}

impl Sim {
    pub(crate) fn new(net: Net, config: Config) -> Self {
        let resolver = Arc::new(Resolver::new(config));
        Self::with_resolver(net, resolver)
    }

    pub(crate) fn with_resolver(net: Net, resolver: Arc<Resolver>) -> Self {
        let mut engine = Engine::new(resolver, [42; 32]);
        engine.set_unix_time(1_000_000, u64::from(SIGNED_AT) * 1000);
        Self {
            net,
            now: 1_000_000,
            engine,
            pending: Vec::new(),
            log: Vec::new(),
            done: Vec::new(),
            finished: Vec::new(),
        }
    }

    pub(crate) fn resolver(&self) -> Arc<Resolver> {
        Arc::clone(self.engine.resolver())
    }

    pub(crate) fn drain(&mut self) {
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
    pub(crate) fn run(&mut self) {
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

    pub(crate) fn resolve(&mut self, qname: &str, qtype: RType) -> Resolution {
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
    pub(crate) fn advance(&mut self, to: u64) {
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
    pub(crate) fn resolve_timed(&mut self, qname: &str, qtype: RType) -> (Resolution, u64) {
        let start = self.now;
        let id = self.engine.resolve(n(qname).as_ref(), qtype, self.now);
        self.run();
        let i = self.done.iter().position(|(t, _)| *t == id).unwrap();
        let at = self.finished.iter().find(|(t, _)| *t == id).unwrap().1;
        (self.done.remove(i).1, at - start)
    }

    pub(crate) fn count_to(&self, mark: usize, server: &str) -> usize {
        self.log[mark..]
            .iter()
            .filter(|s| s.server == addr(server))
            .count()
    }

    pub(crate) fn queries_since(&self, mark: usize) -> Vec<(SocketAddr, String, RType)> {
        self.log[mark..]
            .iter()
            .map(|s| (s.server, s.qname.to_string(), s.qtype))
            .collect()
    }
}

pub(crate) fn rdata_a(a: &Resolution) -> Vec<[u8; 4]> {
    a.answers
        .iter()
        .filter(|r| r.rtype == RType::A)
        .map(|r| <[u8; 4]>::try_from(&r.rdata[..]).unwrap())
        .collect()
}

pub(crate) fn cache_answer(
    res: &Resolver,
    q: &str,
    qtype: RType,
    now: u64,
) -> (CacheAnswer, Message) {
    let mut buf = [0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096);
    w.put_question(n(q).as_ref(), qtype, Class::IN).unwrap();
    let r = res.cache().answer(n(q).as_ref(), qtype, now, &mut w);
    let msg = w.finish(&Header::default()).to_vec();
    (r, Message::parse(&msg).unwrap())
}

/// [`cache_answer`] for a client that set DO (and CD if `cd`).
pub(crate) fn cache_answer_do(
    res: &Resolver,
    q: &str,
    qtype: RType,
    now: u64,
    cd: bool,
) -> (CacheAnswer, Message) {
    let mut buf = [0u8; 4096];
    let mut w = MessageWriter::new(&mut buf, 4096);
    w.put_question(n(q).as_ref(), qtype, Class::IN).unwrap();
    let r = res
        .cache()
        .answer_query(n(q).as_ref(), qtype, now, cd, true, &mut w);
    let msg = w.finish(&Header::default()).to_vec();
    (r, Message::parse(&msg).unwrap())
}
