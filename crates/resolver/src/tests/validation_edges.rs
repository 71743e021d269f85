//! DNSSEC validation at its edges (issue 30): denials whose SOA signature is bogus, the
//! SHA-1 algorithms (5 and 7, signed by BIND), anchors and DS sets with nothing we can
//! validate, RRSIG as the question type, and a wall clock stepped under a running engine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use shardns_wire::{RType, Rcode};

use super::sim::*;
// The signed world's set-up and verdicts, shared with the other validation tests.
use super::validation::{insecure, secure, signed_config, sim};
use crate::{Ede, Resolution};

#[track_caller]
fn bogus(a: &Resolution, code: u16) {
    assert_eq!(a.rcode, Rcode::SERVFAIL, "{a:?}");
    assert_eq!(a.ede.map(|e| e.code), Some(code), "{a:?}");
    assert!(a.answers.is_empty() && a.authority.is_empty() && !a.secure);
}

#[test]
fn a_denial_with_a_bogus_soa_signature_is_bogus() {
    for zone in ["badsoa", "badsoa3"] {
        let mut sim = sim();
        // Denials first (nothing about the zone's SOA cached yet), then the SOA itself.
        for (q, t) in [
            (format!("www.{zone}.test."), RType::DS),
            (format!("www.{zone}.test."), RType::TXT),
            (format!("nothere.{zone}.test."), RType::A),
        ] {
            bogus(&sim.resolve(&q, t), Ede::DNSSEC_BOGUS);
        }
        bogus(
            &sim.resolve(&format!("{zone}.test."), RType::SOA),
            Ede::DNSSEC_BOGUS,
        );
        // Asked again after the SOA was judged, and a name inside the NSEC range the
        // NXDOMAIN showed: no secure answer from the cache or from kept ranges (RFC 8198).
        bogus(
            &sim.resolve(&format!("www.{zone}.test."), RType::DS),
            Ede::DNSSEC_BOGUS,
        );
        bogus(
            &sim.resolve(&format!("nothere2.{zone}.test."), RType::A),
            Ede::DNSSEC_BOGUS,
        );
        // The zone's data itself is fine.
        secure(
            &sim.resolve(&format!("www.{zone}.test."), RType::A),
            Rcode::NOERROR,
        );
    }
    // The same questions in a zone whose SOA is good are secure, kept ranges included.
    let mut sim = sim();
    secure(&sim.resolve("www.secure.test.", RType::DS), Rcode::NOERROR);
    secure(
        &sim.resolve("nothere.secure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    let mark = sim.log.len();
    secure(
        &sim.resolve("nothere2.secure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    assert_eq!(sim.log.len(), mark, "answered from the kept NSEC range");
}

#[test]
fn a_proof_with_one_bogus_record_is_bogus() {
    let mut sim = sim();
    // alias.secure.test.'s NSEC and its RRSIGs, unchecked (CD).
    let id = sim
        .engine
        .resolve_cd(n("alias.secure.test.").as_ref(), RType::NSEC, true, sim.now);
    sim.run();
    let (_, a) = sim.done.iter().find(|(t, _)| *t == id).unwrap();
    assert_eq!(a.answers.len(), 1, "{a:?}");
    let mut extra: Vec<_> = a.answers.clone();
    extra.extend(a.dnssec_answer.iter().cloned().map(|mut sig| {
        let last = sig.rdata.len() - 1;
        sig.rdata[last] ^= 0x01;
        sig
    }));
    assert_eq!(extra.len(), 2, "{a:?}");
    // Every answer of the zones' server now carries that NSEC, its signature spoiled, in
    // its authority section: not needed for the denials below, but part of them.
    sim.net
        .servers
        .get_mut(&addr("10.0.3.1"))
        .unwrap()
        .behaviour
        .inject = extra
        .into_iter()
        .map(|r| (shardns_wire::Section::Authority, r))
        .collect();
    bogus(
        &sim.resolve("www.secure.test.", RType::TXT),
        Ede::DNSSEC_BOGUS,
    );
    // (Not `nothere`: the NSEC that proves it is alias's own, which then has one good
    // RRSIG beside the spoiled one, and one that verifies is enough.)
    bogus(
        &sim.resolve("xyz.secure.test.", RType::A),
        Ede::DNSSEC_BOGUS,
    );
    secure(
        &sim.resolve("nothere.secure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    // Data is not judged by the authority section; another zone's denial ignores it.
    secure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
    secure(
        &sim.resolve("nothere.nsec3.test.", RType::A),
        Rcode::NXDOMAIN,
    );
}

#[test]
fn rsasha1_and_rsasha1_nsec3_sha1_are_validated() {
    let mut sim = sim();
    for zone in ["rsasha1", "nsec3rsasha1"] {
        let a = sim.resolve(&format!("www.{zone}.test."), RType::A);
        secure(&a, Rcode::NOERROR);
        assert_eq!(rdata_a(&a), [[192, 0, 2, 1]]);
        let w = sim.resolve(&format!("host.wild.{zone}.test."), RType::A);
        secure(&w, Rcode::NOERROR);
        assert_eq!(rdata_a(&w), [[192, 0, 2, 2]]);
        secure(
            &sim.resolve(&format!("www.{zone}.test."), RType::TXT),
            Rcode::NOERROR,
        );
        secure(
            &sim.resolve(&format!("nothere.{zone}.test."), RType::A),
            Rcode::NXDOMAIN,
        );
        secure(
            &sim.resolve(&format!("{zone}.test."), RType::DNSKEY),
            Rcode::NOERROR,
        );
    }
    // A spoiled RSASHA1 signature is caught.
    bogus(
        &sim.resolve("alias.rsasha1.test.", RType::A),
        Ede::DNSSEC_BOGUS,
    );
}

#[test]
fn ds_sets_with_only_unknown_algorithms_or_digests_are_insecure() {
    let mut sim = sim();
    for zone in ["alg253", "digest99", "unknownalg"] {
        insecure(
            &sim.resolve(&format!("www.{zone}.test."), RType::A),
            Rcode::NOERROR,
        );
    }
}

/// The root's DS anchor `. 86400 IN DS tag alg digest-type digest` with field `i` (0: tag)
/// replaced by `value`.
fn anchor_with(anchor: &str, i: usize, value: &str) -> String {
    let mut f: Vec<&str> = anchor.split_whitespace().collect();
    let at = f.iter().position(|t| *t == "DS").unwrap() + 1 + i;
    f[at] = value;
    f.join(" ")
}

#[test]
fn anchors_with_only_unknown_algorithms_or_digests_make_the_tree_insecure() {
    let (_, anchor) = signed_world();
    let unknown = [
        anchor_with(&anchor, 1, "253"),
        anchor_with(&anchor, 2, "99"),
        ". 3600 IN DNSKEY 257 3 253 AwEAAQ==".to_string(),
    ];
    for a in unknown {
        let (net, _) = signed_world();
        let mut sim = Sim::new(net, signed_config(&a));
        insecure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
        // Not validated at all: the forged answer comes back too, without AD.
        let f = sim.resolve("www.forged.test.", RType::A);
        insecure(&f, Rcode::NOERROR);
    }
    // Beside a good one, an unknown anchor changes nothing: still validated.
    let (net, anchor) = signed_world();
    let both = format!("{anchor}\n{}\n", anchor_with(&anchor, 1, "253"));
    let mut sim = Sim::new(net, signed_config(&both));
    secure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
    bogus(
        &sim.resolve("www.forged.test.", RType::A),
        Ede::DNSSEC_BOGUS,
    );
}

#[test]
fn rrsig_questions_get_the_signatures_without_ad() {
    let mut sim = sim();
    for q in ["www.secure.test.", "www.nsec3.test.", "www.rsasha1.test."] {
        let a = sim.resolve(q, RType::RRSIG);
        insecure(&a, Rcode::NOERROR);
        // The records the authority gives (shardns's: the RRSIGs of one covered type).
        let covered: Vec<RType> = a
            .answers
            .iter()
            .map(|r| {
                assert_eq!((r.rtype, r.owner.to_string()), (RType::RRSIG, q.into()));
                RType(u16::from_be_bytes([r.rdata[0], r.rdata[1]]))
            })
            .collect();
        assert!(covered.contains(&RType::A), "{q}: {a:?}");
        // Asked again: from the cache, the same records, still without AD.
        let again = sim.resolve(q, RType::RRSIG);
        insecure(&again, Rcode::NOERROR);
        assert_eq!(again.answers, a.answers);
    }
    // A name that does not exist: the denial is validated as for any type.
    secure(
        &sim.resolve("nothere.secure.test.", RType::RRSIG),
        Rcode::NXDOMAIN,
    );
}

/// A bad boot clock: a year before the world was signed (every signature not yet valid).
const BOOT_CLOCK_MS: u64 = (SIGNED_AT as u64 - 365 * 86_400) * 1000;

#[test]
fn a_stepped_wall_clock_forgets_verdicts_judged_against_the_old_time() {
    let mut sim = sim();
    sim.engine.set_unix_time(sim.now, BOOT_CLOCK_MS);
    bogus(
        &sim.resolve("www.secure.test.", RType::A),
        Ede::SIGNATURE_NOT_YET_VALID,
    );
    // NTP steps the clock a second later (well within the bogus TTL): the driver says so.
    sim.advance(sim.now + 1000);
    sim.engine
        .set_unix_time(sim.now, u64::from(SIGNED_AT) * 1000);
    secure(&sim.resolve("www.nsec3.test.", RType::A), Rcode::NOERROR);
    secure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
}

#[test]
fn signatures_are_judged_against_the_wall_clock_at_validation() {
    let mut sim = sim();
    let wall = Arc::new(AtomicU64::new(BOOT_CLOCK_MS));
    let w = Arc::clone(&wall);
    sim.engine
        .set_wall_clock(Box::new(move || w.load(Ordering::Relaxed)));
    bogus(
        &sim.resolve("www.secure.test.", RType::A),
        Ede::SIGNATURE_NOT_YET_VALID,
    );
    // NTP steps the clock; nobody tells the engine, which reads the clock when it validates.
    wall.store(u64::from(SIGNED_AT) * 1000, Ordering::Relaxed);
    secure(&sim.resolve("www.nsec3.test.", RType::A), Rcode::NOERROR);
    secure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
    // Forty days on (the world's signatures were good for thirty): expired, not judged
    // against the time the engine started at.
    wall.store(u64::from(SIGNED_AT + 40 * 86_400) * 1000, Ordering::Relaxed);
    bogus(
        &sim.resolve("www.badnsec3.test.", RType::A),
        Ede::SIGNATURE_EXPIRED,
    );
}
