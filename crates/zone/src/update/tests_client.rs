//! Tests: messages built by the wire crate's update client (`shardns_wire::update`) read by
//! [`update`] and [`update_as`]: each prerequisite form gives its rcode, each change is made,
//! and a signed update goes the whole way (signed, verified as a server verifies it, judged
//! by a policy, applied, answered, the answer verified) without a socket.

use super::tests::{has, name, rd, zone, APEX};
use super::*;
use shardns_wire::tsig::{self, Key, Signer};
use shardns_wire::update::Update;

fn new() -> Update {
    Update::new(name(APEX).as_ref(), 42)
}

fn rcode_of(u: &Update) -> Rcode {
    let req = u.finish(None, 0).unwrap();
    match update(req.message(), &zone(), SerialPolicy::Increment, 0) {
        Ok(_) => Rcode::NOERROR,
        Err(r) => r.rcode,
    }
}

/// Adds prerequisites to an update.
type Build<'a> = dyn Fn(&mut Update) + 'a;

#[test]
fn each_prerequisite_form_gives_its_rcode() {
    let (www, a) = (name("www"), RType::A);
    let w = www.as_ref();
    let cases: [(&Build<'_>, Rcode); 10] = [
        (
            &|u| {
                u.require_rrset(w, a);
            },
            Rcode::NOERROR,
        ),
        (
            &|u| {
                u.require_rrset(w, RType::AAAA);
            },
            Rcode::NXRRSET,
        ),
        (
            &|u| {
                u.require_rrset_with(w, a, &rd(a, "192.0.2.11"))
                    .require_rrset_with(w, a, &rd(a, "192.0.2.10"));
            },
            Rcode::NOERROR,
        ),
        (
            &|u| {
                u.require_rrset_with(w, a, &rd(a, "192.0.2.10"));
            },
            Rcode::NXRRSET,
        ),
        (
            &|u| {
                u.require_no_rrset(w, RType::AAAA);
            },
            Rcode::NOERROR,
        ),
        (
            &|u| {
                u.require_no_rrset(w, a);
            },
            Rcode::YXRRSET,
        ),
        (
            &|u| {
                u.require_name(w);
            },
            Rcode::NOERROR,
        ),
        (
            &|u| {
                u.require_name(name("nowhere").as_ref());
            },
            Rcode::NXDOMAIN,
        ),
        (
            &|u| {
                u.require_no_name(name("nowhere").as_ref());
            },
            Rcode::NOERROR,
        ),
        (
            &|u| {
                u.require_no_name(w);
            },
            Rcode::YXDOMAIN,
        ),
    ];
    for (i, (build, want)) in cases.iter().enumerate() {
        let mut u = new();
        build(&mut u);
        assert_eq!(rcode_of(&u), *want, "case {i}");
    }
    // Out of the zone, and a meta type added.
    let mut u = new();
    u.require_name(name("www.other.test.").as_ref());
    assert_eq!(rcode_of(&u), Rcode::NOTZONE);
    let mut u = new();
    u.add(name("www").as_ref(), RType::AXFR, 60, &[]);
    assert_eq!(rcode_of(&u), Rcode::FORMERR);
}

/// The zone after `u`, accepted.
fn after(u: &Update) -> Zone {
    let req = u.finish(None, 0).unwrap();
    let z = zone();
    let Ok(Outcome::Change(c)) = update(req.message(), &z, SerialPolicy::Increment, 0) else {
        panic!("not a change")
    };
    c.apply(&z).unwrap().0
}

#[test]
fn each_change_is_made() {
    let mx = rd(RType::MX, "20 mail2");
    let mut u = new();
    u.add(name("new").as_ref(), RType::MX, 300, &mx)
        .delete_rrset(name("www").as_ref(), RType::TXT)
        .delete_record(name("www").as_ref(), RType::A, &rd(RType::A, "192.0.2.10"))
        .delete_name(name("a.b.c").as_ref());
    let z = after(&u);
    assert!(has(&z, "new", RType::MX, "20 mail2"));
    assert!(!has(&z, "www", RType::TXT, "\"hello\""));
    assert!(!has(&z, "www", RType::A, "192.0.2.10"));
    assert!(has(&z, "www", RType::A, "192.0.2.11"));
    assert!(!has(&z, "a.b.c", RType::A, "192.0.2.3"));
    assert_eq!(z.serial(), 11);
}

#[test]
fn a_signed_update_goes_the_whole_way() {
    let key: Key = "hmac-sha256:acme.key.:c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IQ=="
        .parse()
        .unwrap();
    let policy = Policy::parse(
        "grant acme.key. wildcard _acme-challenge.* TXT",
        name(APEX).as_ref(),
    )
    .unwrap();
    let mut u = new();
    u.require_no_rrset(name("_acme-challenge.www").as_ref(), RType::TXT)
        .add(
            name("_acme-challenge.www").as_ref(),
            RType::TXT,
            60,
            &rd(RType::TXT, "\"token\""),
        );
    let mut req = u.finish(Some(&key), 1000).unwrap();

    // The server: the TSIG verified, then the policy with the verified key.
    let msg = req.message();
    let sig = tsig::read(msg).unwrap().expect("signed");
    let verified = tsig::verify(msg, &sig, std::slice::from_ref(&key), 1001).unwrap();
    let who = Requester {
        key: Some(verified.name.as_ref()),
        addr: "192.0.2.53".parse().unwrap(),
    };
    let z = zone();
    let Ok(Outcome::Change(c)) = update_as(msg, &z, &policy, &who, SerialPolicy::Increment, 1001)
    else {
        panic!("refused")
    };
    assert!(has(
        &c.apply(&z).unwrap().0,
        "_acme-challenge.www",
        RType::TXT,
        "\"token\""
    ));
    // The same message unsigned is refused.
    let plain = u.finish(None, 0).unwrap();
    let stranger = Requester { key: None, ..who };
    let e = update_as(
        plain.message(),
        &z,
        &policy,
        &stranger,
        SerialPolicy::Increment,
        0,
    )
    .unwrap_err();
    assert_eq!(e.rcode, Rcode::REFUSED);

    // The answer: the request's header and zone section, signed; the client verifies it.
    let mut h = Header::parse(msg).unwrap();
    h.set_qr(true);
    (h.ancount, h.nscount, h.arcount) = (0, 0, 0);
    let zone_len = name(APEX).as_wire().len() + 4;
    let mut answer = h.to_bytes().to_vec();
    answer.extend_from_slice(&msg[HEADER_LEN..HEADER_LEN + zone_len]);
    let len = answer.len();
    answer.resize(len + 200, 0);
    let len = Signer::new(verified, &sig).sign(&mut answer, len, 1002);
    answer.truncate(len);
    assert_eq!(req.response(&answer, 1003), Ok(Some(Rcode::NOERROR)));
}
