//! Tests: the text form and its errors, each kind of name match, requesters, first-match
//! order, the limits, and `update_as` end to end against the test zone of `update::tests`.

use super::super::tests::{add, del_rr, del_set, msg, name, zone, APEX};
use super::super::{update_as, Outcome, SerialPolicy};
use super::*;
use shardns_wire::Class;

fn apex() -> Name {
    APEX.parse().unwrap()
}

fn policy(text: &str) -> Policy {
    Policy::parse(text, apex().as_ref()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn error(text: &str) -> String {
    Policy::parse(text, apex().as_ref()).expect_err(text)
}

fn key(k: &str) -> Requester<'static> {
    let name: &'static Name = Box::leak(Box::new(k.parse::<Name>().unwrap()));
    Requester {
        key: Some(name.as_ref()),
        addr: "198.51.100.7".parse().unwrap(),
    }
}

fn from(addr: &str) -> Requester<'static> {
    Requester {
        key: None,
        addr: addr.parse().unwrap(),
    }
}

fn allowed(p: &Policy, r: &Requester<'_>, owner: &str, rtype: RType) -> bool {
    p.check_record(r, name(owner).as_ref(), rtype).is_ok()
}

#[test]
fn the_text_form_reads_and_prints_back() {
    let text = "# the ACME client\n\
        grant acme.example. wildcard _acme-challenge.* TXT ; BIND's semicolon\n\
        deny  Admin.Example name _dmarc TXT\n\
        grant admin.example. zonesub ANY\n\
        grant host1.example. self A AAAA A\n\
        grant 192.0.2.0/24 subdomain dyn A TYPE28\n\
        grant 2001:db8::1 name @ TXT\n\
        \n\
        max-records 100\n\
        max-octets 16384\n";
    let p = policy(text);
    let n = |s: &str| name(s);
    assert_eq!(
        p.grants,
        [
            Grant {
                deny: false,
                who: Who::Key("acme.example.".parse().unwrap()),
                names: Names::Wildcard(n("_acme-challenge.*")),
                types: Types::Set(vec![RType::TXT]),
            },
            Grant {
                deny: true,
                who: Who::Key("admin.example.".parse().unwrap()),
                names: Names::Exact(n("_dmarc")),
                types: Types::Set(vec![RType::TXT]),
            },
            Grant::whole_zone("admin.example.".parse().unwrap()),
            Grant {
                deny: false,
                who: Who::Key("host1.example.".parse().unwrap()),
                names: Names::SelfKey,
                types: Types::Set(vec![RType::A, RType::AAAA]),
            },
            Grant {
                deny: false,
                who: Who::Prefix("192.0.2.0".parse().unwrap(), 24),
                names: Names::Subdomain(n("dyn")),
                types: Types::Set(vec![RType::A, RType::AAAA]),
            },
            Grant {
                deny: false,
                who: Who::Prefix("2001:db8::1".parse().unwrap(), 128),
                names: Names::Exact(apex()),
                types: Types::Set(vec![RType::TXT]),
            },
        ]
    );
    assert_eq!(
        p.limits,
        Limits {
            max_records: 100,
            max_octets: 16384
        }
    );
    assert_eq!(
        p.grants[0].to_string(),
        "grant acme.example. wildcard _acme-challenge.*.example.test. TXT"
    );
    // What is printed reads back the same.
    for g in &p.grants {
        assert_eq!(&Grant::parse(&g.to_string(), apex().as_ref()).unwrap(), g);
    }
    assert_eq!(Policy::default().limits, Limits::default());
    assert!(Policy::parse("", apex().as_ref())
        .unwrap()
        .grants
        .is_empty());
}

#[test]
fn bad_lines_are_named_and_explained() {
    for (text, want) in [
        (
            "allow k. zone ANY",
            "line 1: \"allow\": expected grant, deny",
        ),
        ("\n\ngrant k.", "line 3: expected grant|deny WHO MATCH"),
        (
            "grant k. sub www A",
            "\"sub\": expected name, subdomain, wildcard",
        ),
        ("grant k. name", "name needs a name"),
        ("grant k. name www", "no types: list them, or ANY"),
        ("grant k. zone A ANY", "ANY stands alone"),
        ("grant k. zone A BOGUS", "\"BOGUS\": not a type"),
        ("grant k. zone AXFR", "AXFR is a meta type"),
        ("grant k. zone RRSIG", "RRSIG records are the signer's"),
        (
            "grant k. name www.other. A",
            "outside the zone example.test.",
        ),
        ("grant k. wildcard www A", "has no * label"),
        ("grant 192.0.2.1/24 zone A", "bits set past the prefix"),
        ("grant 192.0.2.0/33 zone A", "prefix longer than 32"),
        ("grant 192.0.2.0/x zone A", "bad prefix length"),
        ("grant 192.0.2.0/24 self A", "self needs a key"),
        ("grant bad..name zone A", "not a key name"),
        ("max-records", "max-records takes one number"),
        ("max-octets 0", "\"0\" is not a positive number"),
    ] {
        let e = error(text);
        assert!(e.contains(want), "{text:?}: {e:?} lacks {want:?}");
    }
}

#[test]
fn names_match_exactly_below_by_pattern_or_as_the_key() {
    let p = |names| Policy {
        grants: vec![Grant {
            deny: false,
            who: Who::Key("k.".parse().unwrap()),
            names,
            types: Types::Any,
        }],
        ..Policy::default()
    };
    let k = key("k.");
    let exact = p(Names::Exact(name("www")));
    assert!(allowed(&exact, &k, "WWW", RType::A));
    assert!(!allowed(&exact, &k, "a.www", RType::A));
    // Subdomain includes the name itself (BIND, Knot's default).
    let sub = p(Names::Subdomain(name("b.c")));
    assert!(allowed(&sub, &k, "b.c", RType::A));
    assert!(allowed(&sub, &k, "x.y.b.c", RType::A));
    assert!(!allowed(&sub, &k, "c", RType::A));
    assert!(!allowed(&sub, &k, "xb.c", RType::A));
    // A leading * is one label or more, not the name itself (BIND's wildcard).
    let below = p(Names::Wildcard(name("*.b.c")));
    assert!(allowed(&below, &k, "a.b.c", RType::A));
    assert!(allowed(&below, &k, "x.a.b.c", RType::A));
    assert!(!allowed(&below, &k, "b.c", RType::A));
    // Any other * is exactly one label (Knot's pattern).
    let acme = p(Names::Wildcard(name("_acme-challenge.*")));
    assert!(allowed(&acme, &k, "_ACME-challenge.www", RType::TXT));
    assert!(!allowed(&acme, &k, "_acme-challenge", RType::TXT));
    assert!(!allowed(&acme, &k, "_acme-challenge.a.b", RType::TXT));
    assert!(!allowed(&acme, &k, "x.www", RType::TXT));
    // self: the owner is the key's name; never for an unsigned request.
    let own = p(Names::SelfKey);
    let host = key("Host1.example.test.");
    let host_own = Policy {
        grants: vec![Grant {
            who: Who::Key(name("host1")),
            ..own.grants[0].clone()
        }],
        ..Policy::default()
    };
    assert!(allowed(&host_own, &host, "host1", RType::A));
    assert!(!allowed(&host_own, &host, "host2", RType::A));
    assert!(!allowed(&host_own, &host, "a.host1", RType::A));
    assert!(!allowed(&own, &from("192.0.2.1"), "host1", RType::A));
    assert!(allowed(&p(Names::Zone), &k, "anything.at.all", RType::A));
}

#[test]
fn requesters_keys_addresses_and_types() {
    let p = policy(
        "grant k.example. zone A\n\
         grant 192.0.2.0/24 name v4 TXT\n\
         grant 2001:db8::/32 name v6 TXT\n\
         grant 0.0.0.0/0 name open TXT\n",
    );
    assert!(allowed(&p, &key("K.Example."), "www", RType::A));
    assert!(!allowed(&p, &key("k.example."), "www", RType::AAAA));
    assert!(!allowed(&p, &key("other."), "www", RType::A));
    assert!(!allowed(&p, &from("192.0.2.1"), "www", RType::A));
    assert!(allowed(&p, &from("192.0.2.200"), "v4", RType::TXT));
    assert!(allowed(&p, &from("::ffff:192.0.2.9"), "v4", RType::TXT));
    assert!(!allowed(&p, &from("192.0.3.1"), "v4", RType::TXT));
    assert!(allowed(&p, &from("2001:db8:ffff::1"), "v6", RType::TXT));
    assert!(!allowed(&p, &from("2001:db9::1"), "v6", RType::TXT));
    assert!(!allowed(&p, &from("2001:db8::1"), "v4", RType::TXT));
    assert!(allowed(&p, &from("203.0.113.1"), "open", RType::TXT));
    // A signed request from a granted address is that address too.
    let mut signed = key("other.");
    signed.addr = "192.0.2.3".parse().unwrap();
    assert!(allowed(&p, &signed, "v4", RType::TXT));
    // ANY covers every data type, never a meta type.
    let any = policy("grant k. zone ANY");
    assert!(allowed(&any, &key("k."), "@", RType::SOA));
    assert!(!allowed(&any, &key("k."), "www", RType::ANY));
    assert!(!allowed(&any, &key("k."), "www", RType::OPT));
}

#[test]
fn the_first_grant_that_matches_decides() {
    let k = key("k.");
    let deny_first = policy("deny k. name _dmarc TXT\ngrant k. zone TXT A");
    assert!(allowed(&deny_first, &k, "www", RType::TXT));
    assert!(allowed(&deny_first, &k, "_dmarc", RType::A));
    let e = deny_first
        .check_record(&k, name("_dmarc").as_ref(), RType::TXT)
        .unwrap_err();
    assert_eq!(e.rcode, Rcode::REFUSED);
    assert_eq!(
        e.why,
        "_dmarc.example.test. TXT: key k. from 198.51.100.7 is denied by \
         `deny k. name _dmarc.example.test. TXT`"
    );
    // The same lines the other way round: the grant matches first.
    let grant_first = policy("grant k. zone TXT A\ndeny k. name _dmarc TXT");
    assert!(allowed(&grant_first, &k, "_dmarc", RType::TXT));
    // Nothing matches: refused, naming the record and the requester.
    let e = grant_first
        .check_record(&from("192.0.2.1"), name("www").as_ref(), RType::A)
        .unwrap_err();
    assert_eq!(
        e.why,
        "www.example.test. A: no grant for unsigned from 192.0.2.1"
    );
    // A requester named only by deny lines is not admitted at all.
    assert!(!policy("deny k. zone ANY").admits(&k));
    assert!(deny_first.admits(&k));
    assert!(!deny_first.admits(&from("192.0.2.1")));
}

#[test]
fn limits_bound_the_message_before_it_is_read() {
    let p = policy("grant k. zone ANY\nmax-records 2\nmax-octets 200");
    let two = msg(&[], &[del_set("a", RType::A), del_set("b", RType::A)]);
    p.check_size(&two).unwrap();
    let three = msg(
        &[del_set("a", RType::A)],
        &[del_set("b", RType::A), del_set("c", RType::A)],
    );
    let e = p.check_size(&three).unwrap_err();
    assert_eq!(e.rcode, Rcode::REFUSED);
    assert_eq!(e.why, "the update holds 3 records, more than max-records 2");
    let big = msg(
        &[],
        &[add(
            "www",
            RType::TXT,
            60,
            &format!("\"{}\"", "x".repeat(200)),
        )],
    );
    assert!(p
        .check_size(&big)
        .unwrap_err()
        .why
        .contains("more than max-octets 200"));
    // A header too short to read is the reader's FORMERR, not ours.
    p.check_size(&[0; 5]).unwrap();
}

fn run(p: &Policy, who: &Requester<'_>, m: &[u8]) -> Result<Outcome, Refusal> {
    update_as(m, &zone(), p, who, SerialPolicy::Increment, 0)
}

fn rcode(p: &Policy, who: &Requester<'_>, m: &[u8]) -> Rcode {
    run(p, who, m).map_or_else(|r| r.rcode, |_| Rcode::NOERROR)
}

#[test]
fn update_as_checks_the_requester_and_each_record() {
    let p = policy(
        "grant acme. wildcard _acme-challenge.* TXT\n\
         grant acme. name www TXT\n\
         grant dyn. name www A\n\
         grant admin. zone ANY\n",
    );
    let acme = key("acme.");
    let challenge = add("_acme-challenge.www", RType::TXT, 60, "\"token\"");
    assert!(matches!(
        run(&p, &acme, &msg(&[], std::slice::from_ref(&challenge))),
        Ok(Outcome::Change(_))
    ));
    // Unsigned, or a key with no grant: REFUSED before the prerequisites are read.
    let nx = ("nowhere", RType::ANY, Class::ANY, 0, Vec::new());
    let probe = msg(std::slice::from_ref(&nx), std::slice::from_ref(&challenge));
    assert_eq!(rcode(&p, &from("192.0.2.1"), &probe), Rcode::REFUSED);
    assert_eq!(rcode(&p, &key("stranger."), &probe), Rcode::REFUSED);
    // An admitted key: the prerequisites come first (RFC 2136 §3.2, §3.3).
    assert_eq!(rcode(&p, &acme, &probe), Rcode::NXDOMAIN);
    let a = add("www", RType::A, 60, "192.0.2.99");
    assert_eq!(
        rcode(&p, &acme, &msg(&[nx], std::slice::from_ref(&a))),
        Rcode::NXDOMAIN
    );
    // One record outside the grants refuses the whole message, naming it.
    let e = run(&p, &acme, &msg(&[], &[challenge.clone(), a.clone()])).unwrap_err();
    assert_eq!(e.rcode, Rcode::REFUSED);
    assert!(
        e.why
            .starts_with("www.example.test. A: no grant for key acme."),
        "{e}"
    );
    // Records of two grants in one message: each is judged on its own.
    let txt = del_rr("www", RType::TXT, "\"hello\"");
    assert_eq!(
        rcode(&p, &acme, &msg(&[], &[challenge, txt])),
        Rcode::NOERROR
    );
    // Deleting every RRset of www deletes A and TXT: dyn. has only A, admin. all.
    let all = del_set("www", RType::ANY);
    assert_eq!(
        rcode(&p, &key("dyn."), &msg(&[], std::slice::from_ref(&all))),
        Rcode::REFUSED
    );
    assert_eq!(
        rcode(&p, &key("admin."), &msg(&[], std::slice::from_ref(&all))),
        Rcode::NOERROR
    );
    let both = policy("grant dyn. name www A TXT");
    assert_eq!(
        rcode(&both, &key("dyn."), &msg(&[], &[all])),
        Rcode::NOERROR
    );
    // At the apex SOA and NS stay, so they need no grant.
    let apex_all = del_set("@", RType::ANY);
    assert_eq!(
        rcode(
            &policy("grant dyn. name @ TXT"),
            &key("dyn."),
            &msg(&[], &[apex_all])
        ),
        Rcode::NOERROR
    );
    // The limits come first of all.
    let small = Policy {
        limits: Limits {
            max_records: 1,
            max_octets: 65535,
        },
        ..p.clone()
    };
    let two = msg(&[], &[a.clone(), a]);
    assert_eq!(rcode(&small, &key("admin."), &two), Rcode::REFUSED);
    assert_eq!(rcode(&p, &key("admin."), &two), Rcode::NOERROR);
}
