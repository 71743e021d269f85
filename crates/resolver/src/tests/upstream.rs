//! What the engine does per upstream query: coalescing, EDNS fallback, retry over TCP,
//! cancelling a task.

use shardns_wire::RType;

use super::sim::*;

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
