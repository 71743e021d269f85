//! DNSSEC validation over the signed world (`sim::signed`): secure, insecure and bogus
//! answers, the AD and EDE they get, what the cache keeps, CD, and the KeyTrap limits.

use shardns_wire::{RType, Rcode};

use super::sim::*;
use crate::{CacheAnswer, Config, Ede, Resolution, TrustAnchors};

pub(super) fn signed_config(anchor: &str) -> Config {
    Config {
        trust_anchors: TrustAnchors::parse(anchor).unwrap(),
        ..config()
    }
}

pub(super) fn sim() -> Sim {
    let (net, anchor) = signed_world();
    Sim::new(net, signed_config(&anchor))
}

#[track_caller]
pub(super) fn secure(a: &Resolution, rcode: Rcode) {
    assert_eq!((a.rcode, a.secure, a.ede), (rcode, true, None), "{a:?}");
}

#[track_caller]
pub(super) fn insecure(a: &Resolution, rcode: Rcode) {
    assert_eq!((a.rcode, a.secure, a.ede), (rcode, false, None), "{a:?}");
}

#[track_caller]
fn bogus(a: &Resolution, code: u16) {
    assert_eq!(a.rcode, Rcode::SERVFAIL, "{a:?}");
    assert_eq!(a.ede.map(|e| e.code), Some(code), "{a:?}");
    assert!(a.answers.is_empty() && !a.secure);
}

#[test]
fn secure_answers_denials_and_wildcards() {
    let mut sim = sim();
    for zone in ["secure", "nsec3"] {
        let a = sim.resolve(&format!("www.{zone}.test."), RType::A);
        secure(&a, Rcode::NOERROR);
        assert_eq!(rdata_a(&a), [[192, 0, 2, 1]]);
        secure(
            &sim.resolve(&format!("alias.{zone}.test."), RType::A),
            Rcode::NOERROR,
        );
        let w = sim.resolve(&format!("host.wild.{zone}.test."), RType::A);
        secure(&w, Rcode::NOERROR);
        assert_eq!(rdata_a(&w), [[192, 0, 2, 2]]);
        // Wildcard NODATA, NODATA, NXDOMAIN.
        secure(
            &sim.resolve(&format!("host.wild.{zone}.test."), RType::TXT),
            Rcode::NOERROR,
        );
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
        secure(
            &sim.resolve(&format!("{zone}.test."), RType::DS),
            Rcode::NOERROR,
        );
    }
    // DS absent (a secure denial) for the insecure child.
    secure(&sim.resolve("insecure.test.", RType::DS), Rcode::NOERROR);
}

#[test]
fn cache_hits_keep_the_verdict_without_checking_again() {
    let mut sim = sim();
    secure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
    secure(
        &sim.resolve("nothere.nsec3.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    insecure(&sim.resolve("www.insecure.test.", RType::A), Rcode::NOERROR);
    bogus(
        &sim.resolve("www.forged.test.", RType::A),
        Ede::DNSSEC_BOGUS,
    );
    let checks = sim.engine.stats().signature_checks;
    let res = sim.resolver();
    let hit = |q: &str, t| cache_answer(&res, q, t, sim.now).0;
    assert!(matches!(
        hit("www.secure.test.", RType::A),
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            secure: true,
            locks: 1,
            ede: None,
            ..
        }
    ));
    assert!(matches!(
        hit("nothere.nsec3.test.", RType::A),
        CacheAnswer::Hit {
            rcode: Rcode::NXDOMAIN,
            secure: true,
            ..
        }
    ));
    assert!(matches!(
        hit("www.insecure.test.", RType::A),
        CacheAnswer::Hit {
            rcode: Rcode::NOERROR,
            secure: false,
            ..
        }
    ));
    // Bogus is cached briefly: SERVFAIL with its EDE, nothing written.
    let CacheAnswer::Hit { rcode, ede, .. } = hit("www.forged.test.", RType::A) else {
        panic!("bogus answer not cached");
    };
    assert_eq!(
        (rcode, ede.map(|e| e.code)),
        (Rcode::SERVFAIL, Some(Ede::DNSSEC_BOGUS))
    );
    // Resolving again costs no signature check and no query.
    let mark = sim.log.len();
    secure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
    assert_eq!(
        (sim.log.len(), sim.engine.stats().signature_checks),
        (mark, checks)
    );
    // After the bogus TTL the bogus answer is asked again.
    let later = sim.now + u64::from(config().bogus_ttl) * 1000 + 1;
    assert!(matches!(
        cache_answer(&res, "www.forged.test.", RType::A, later).0,
        CacheAnswer::Miss { .. }
    ));
}

#[test]
fn insecure_delegations() {
    let mut sim = sim();
    // No DS, proven by the parent's NSEC.
    let a = sim.resolve("www.insecure.test.", RType::A);
    insecure(&a, Rcode::NOERROR);
    assert_eq!(rdata_a(&a), [[192, 0, 2, 1]]);
    insecure(
        &sim.resolve("nothere.insecure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    // An unsigned delegation in an Opt-Out span.
    insecure(
        &sim.resolve("www.unsigned.optout.test.", RType::A),
        Rcode::NOERROR,
    );
    secure(&sim.resolve("www.optout.test.", RType::A), Rcode::NOERROR);
    // Only an unsupported algorithm in the DS RRset (RFC 6840 §5.2).
    insecure(
        &sim.resolve("www.unknownalg.test.", RType::A),
        Rcode::NOERROR,
    );
}

#[test]
fn bogus_answers_are_servfail_with_their_ede() {
    let mut sim = sim();
    bogus(
        &sim.resolve("www.expired.test.", RType::A),
        Ede::SIGNATURE_EXPIRED,
    );
    bogus(
        &sim.resolve("www.wrongds.test.", RType::A),
        Ede::DNSKEY_MISSING,
    );
    bogus(
        &sim.resolve("www.nosig.test.", RType::A),
        Ede::RRSIGS_MISSING,
    );
    bogus(
        &sim.resolve("www.forged.test.", RType::A),
        Ede::DNSSEC_BOGUS,
    );
    bogus(
        &sim.resolve("nothere.badnsec3.test.", RType::A),
        Ede::NSEC_MISSING,
    );
    // The rest of badnsec3.test. is fine.
    secure(&sim.resolve("www.badnsec3.test.", RType::A), Rcode::NOERROR);
    // A zone whose keys failed fails every answer, from the key cache.
    let mark = sim.log.len();
    bogus(
        &sim.resolve("alias.wrongds.test.", RType::A),
        Ede::DNSKEY_MISSING,
    );
    assert!(sim.log[mark..].iter().all(|s| s.qtype != RType::DNSKEY));
}

#[test]
fn checking_disabled_returns_the_data() {
    let mut sim = sim();
    let id = sim
        .engine
        .resolve_cd(n("www.forged.test.").as_ref(), RType::A, true, sim.now);
    sim.run();
    let (_, a) = sim.done.iter().find(|(t, _)| *t == id).unwrap();
    assert_eq!((a.rcode, a.secure), (Rcode::NOERROR, false));
    assert_eq!(rdata_a(a), [[6, 6, 6, 6]]);
    // A client without CD is not answered from that unchecked copy.
    let res = sim.resolver();
    assert!(matches!(
        cache_answer(&res, "www.forged.test.", RType::A, sim.now).0,
        CacheAnswer::Miss { .. }
    ));
    bogus(
        &sim.resolve("www.forged.test.", RType::A),
        Ede::DNSSEC_BOGUS,
    );
}

#[test]
fn keytrap_zone_is_bounded() {
    let mut sim = sim();
    let before = sim.engine.stats().signature_checks;
    let a = sim.resolve("www.keytrap.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
    let spent = sim.engine.stats().signature_checks - before;
    // 12 RRSIGs x 31 keys with one tag would be 372 checks; the limits allow 32 per
    // resolution, at most 4 keys per RRSIG.
    let max = u64::from(config().max_validations);
    assert!(spent <= max, "{spent} signature checks");
    assert!(spent >= 4, "{spent} signature checks");
}

#[test]
fn no_anchor_means_insecure_and_validation_off_means_no_ad() {
    let (net, _) = signed_world();
    let mut sim = Sim::new(net, config());
    insecure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
    let (net, _) = signed_world();
    let mut sim = Sim::new(
        net,
        Config {
            validation: false,
            ..config()
        },
    );
    let a = sim.resolve("www.forged.test.", RType::A);
    assert_eq!((a.rcode, a.secure), (Rcode::NOERROR, false));
    // A negative trust anchor switches validation off below it.
    let (net, anchor) = signed_world();
    let mut cfg = signed_config(&anchor);
    cfg.trust_anchors.negative.push(n("forged.test."));
    let mut sim = Sim::new(net, cfg);
    insecure(&sim.resolve("www.forged.test.", RType::A), Rcode::NOERROR);
    secure(&sim.resolve("www.secure.test.", RType::A), Rcode::NOERROR);
}

#[test]
fn wrong_anchor_makes_everything_bogus() {
    let (net, _) = signed_world();
    let (_, other) = signed_world();
    let mut sim = Sim::new(net, signed_config(&other));
    let a = sim.resolve("www.secure.test.", RType::A);
    assert_eq!(a.rcode, Rcode::SERVFAIL);
}

/// (owner, type) of records, RRSIGs as (owner, RRSIG covering type).
fn kinds<'a>(records: impl IntoIterator<Item = &'a shardns_wire::Record>) -> Vec<(String, RType)> {
    let mut v: Vec<(String, RType)> = records
        .into_iter()
        .map(|r| {
            let t = if r.rtype == RType::RRSIG {
                RType(u16::from_be_bytes([r.rdata[0], r.rdata[1]]))
            } else {
                r.rtype
            };
            (
                format!(
                    "{}{}",
                    if r.rtype == RType::RRSIG { "sig " } else { "" },
                    r.owner
                ),
                t,
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn do_clients_get_rrsigs_and_proofs_from_the_cache_and_others_do_not() {
    let mut sim = sim();
    // A resolution's answer carries the records for DO clients separately.
    let a = sim.resolve("www.secure.test.", RType::A);
    secure(&a, Rcode::NOERROR);
    assert_eq!(
        kinds(&a.dnssec_answer),
        [("sig www.secure.test.".to_string(), RType::A)]
    );
    assert!(a.dnssec_authority.is_empty());
    let nx = sim.resolve("nothere.nsec3.test.", RType::A);
    secure(&nx, Rcode::NXDOMAIN);
    let proof = kinds(&nx.dnssec_authority);
    assert!(
        proof.contains(&("sig nsec3.test.".to_string(), RType::SOA)),
        "{proof:?}"
    );
    assert!(proof.iter().any(|(_, t)| *t == RType::NSEC3), "{proof:?}");
    let wild = sim.resolve("host.wild.secure.test.", RType::A);
    secure(&wild, Rcode::NOERROR);
    assert!(kinds(&wild.dnssec_authority)
        .iter()
        .any(|(_, t)| *t == RType::NSEC));
    let alias = sim.resolve("alias.secure.test.", RType::A);
    assert_eq!(alias.dnssec_answer.len(), 2, "{alias:?}");
    let checks = sim.engine.stats().signature_checks;

    // The cache gives a DO client the same, and a client without DO none of it.
    let res = sim.resolver();
    for (q, t, rcode) in [
        ("www.secure.test.", RType::A, Rcode::NOERROR),
        ("nothere.nsec3.test.", RType::A, Rcode::NXDOMAIN),
        ("host.wild.secure.test.", RType::A, Rcode::NOERROR),
        ("alias.secure.test.", RType::A, Rcode::NOERROR),
    ] {
        let (hit, plain) = cache_answer(&res, q, t, sim.now);
        assert!(
            matches!(hit, CacheAnswer::Hit { secure: true, .. }),
            "{q}: {hit:?}"
        );
        let all = || plain.answers.iter().chain(&plain.authority);
        assert!(
            all().all(|r| !matches!(r.rtype, RType::RRSIG | RType::NSEC | RType::NSEC3)),
            "{q}: {plain:?}"
        );
        let (hit, signed) = cache_answer_do(&res, q, t, sim.now, false);
        assert!(
            matches!(hit, CacheAnswer::Hit { rcode: r, secure: true, .. } if r == rcode),
            "{q}: {hit:?}"
        );
        // Every RRset of the answer section has its RRSIG.
        let sets: Vec<_> = kinds(signed.answers.iter().filter(|r| r.rtype != RType::RRSIG))
            .into_iter()
            .map(|(o, t)| (format!("sig {o}"), t))
            .collect();
        let mut sigs = kinds(signed.answers.iter().filter(|r| r.rtype == RType::RRSIG));
        sigs.dedup();
        let mut sets = sets;
        sets.dedup();
        assert_eq!(sigs, sets, "{q}: {signed:?}");
        if rcode == Rcode::NXDOMAIN || q.starts_with("host.wild") {
            assert!(
                signed
                    .authority
                    .iter()
                    .any(|r| matches!(r.rtype, RType::NSEC | RType::NSEC3)),
                "{q}: {signed:?}"
            );
        }
        // CD and DO: the same records.
        let (_, cd) = cache_answer_do(&res, q, t, sim.now, true);
        assert_eq!(cd.answers.len(), signed.answers.len(), "{q}");
    }
    // Nothing was verified again.
    assert_eq!(sim.engine.stats().signature_checks, checks);
}

#[test]
fn aggressive_nsec_answers_inside_validated_ranges_without_asking() {
    let mut sim = sim();
    secure(
        &sim.resolve("nothere.secure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    secure(&sim.resolve("www.secure.test.", RType::TXT), Rcode::NOERROR);
    let mark = sim.log.len();
    // Another name in the same NSEC range, and its wildcard's: NXDOMAIN, no query.
    let nx = sim.resolve("nothere2.secure.test.", RType::AAAA);
    secure(&nx, Rcode::NXDOMAIN);
    assert_eq!(sim.log.len(), mark, "{:?}", sim.queries_since(mark));
    // The SOA for the negative TTL, and the proof for DO clients.
    assert_eq!(nx.authority.len(), 1);
    assert_eq!(nx.authority[0].rtype, RType::SOA);
    let proof = kinds(&nx.dnssec_authority);
    assert!(
        proof.contains(&("sig secure.test.".to_string(), RType::SOA)),
        "{proof:?}"
    );
    assert!(
        proof.iter().filter(|(_, t)| *t == RType::NSEC).count() >= 2,
        "{proof:?}"
    );
    // NODATA from the NSEC at www: another type it lacks, no query.
    secure(&sim.resolve("www.secure.test.", RType::MX), Rcode::NOERROR);
    assert_eq!(sim.log.len(), mark, "{:?}", sim.queries_since(mark));
    // Now a plain cache hit, with its proof for DO clients.
    let res = sim.resolver();
    let (hit, msg) = cache_answer_do(&res, "nothere2.secure.test.", RType::AAAA, sim.now, false);
    assert!(matches!(
        hit,
        CacheAnswer::Hit {
            rcode: Rcode::NXDOMAIN,
            secure: true,
            ..
        }
    ));
    assert!(msg.authority.iter().any(|r| r.rtype == RType::NSEC));
    // A name that exists is still asked (the range does not cover it).
    secure(&sim.resolve("alias.secure.test.", RType::A), Rcode::NOERROR);
    assert!(sim.log.len() > mark);
    // NSEC3 ranges are not used (as Unbound): asked.
    secure(
        &sim.resolve("nothere.nsec3.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    let mark = sim.log.len();
    secure(
        &sim.resolve("nothere2.nsec3.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    assert!(sim.log.len() > mark);
}

#[test]
fn aggressive_nsec_can_be_switched_off() {
    let (net, anchor) = signed_world();
    let mut sim = Sim::new(
        net,
        Config {
            aggressive_nsec: false,
            ..signed_config(&anchor)
        },
    );
    secure(
        &sim.resolve("nothere.secure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    let mark = sim.log.len();
    secure(
        &sim.resolve("nothere2.secure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    assert!(sim.log.len() > mark);
}

#[test]
fn aggressive_nsec_is_not_used_for_insecure_or_unvalidated_data() {
    // Validation off: nothing is kept, every name is asked.
    let (net, _) = signed_world();
    let mut sim = Sim::new(
        net,
        Config {
            validation: false,
            ..config()
        },
    );
    sim.resolve("nothere.secure.test.", RType::A);
    let mark = sim.log.len();
    sim.resolve("nothere2.secure.test.", RType::A);
    assert!(sim.log.len() > mark);
    // An insecure zone's NSEC records are not kept.
    let mut sim = self::sim();
    insecure(
        &sim.resolve("nothere.insecure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    let mark = sim.log.len();
    insecure(
        &sim.resolve("nothere2.insecure.test.", RType::A),
        Rcode::NXDOMAIN,
    );
    assert!(sim.log.len() > mark);
}
