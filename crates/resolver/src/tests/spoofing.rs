//! Defences against forged responses: random IDs and source ports, responses with the wrong
//! ID, question or source ignored, out-of-bailiwick records dropped.

use shardns_wire::{Class, Header, Message, MessageWriter, RType, Rcode, Section};

use super::sim::*;
use crate::{CacheAnswer, Config, Event};

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
