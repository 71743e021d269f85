use std::net::IpAddr;

use shardns_wire::text::Token;
use shardns_wire::{rdata, Class, Header, Message, MessageWriter, Name, NameRef, RType, Rcode};

use super::*;

fn rr(text: &str) -> LocalRecord {
    let f: Vec<&str> = text.split_whitespace().collect();
    let (owner, ttl, rtype, rest) = (f[0], f[1], f[2], &f[3..]);
    let rtype = RType::from_text(rtype).unwrap();
    let tokens: Vec<Token<'_>> = rest.iter().map(|t| Token::plain(t.as_bytes())).collect();
    let mut rd = Vec::new();
    rdata::from_text(rtype, &tokens, NameRef::ROOT, &mut rd).unwrap();
    LocalRecord {
        owner: owner.parse().unwrap(),
        ttl: ttl.parse().unwrap(),
        rtype,
        rdata: rd,
    }
}

fn set(zones: &[(&str, &str)], data: &[&str], defaults: bool) -> ZoneSetConfig {
    ZoneSetConfig {
        zones: zones
            .iter()
            .map(|(n, k)| (n.parse().unwrap(), k.parse().unwrap()))
            .collect(),
        data: data.iter().map(|t| rr(t)).collect(),
        defaults,
    }
}

fn local(zones: &[(&str, &str)], data: &[&str]) -> Local {
    Local::new(&LocalConfig {
        global: set(zones, data, true),
        ..LocalConfig::default()
    })
    .unwrap()
}

/// The verdict and, when answered, the message (header made from the verdict).
fn ask(l: &Local, client: &str, qname: &str, qtype: RType) -> (Verdict, Option<Message>) {
    let qname: Name = qname.parse().unwrap();
    let mut buf = [0u8; 1232];
    let mut w = MessageWriter::new(&mut buf, 1232);
    w.put_question(qname.as_ref(), qtype, Class::IN).unwrap();
    let ip: IpAddr = client.parse().unwrap();
    let verdict = l.answer(Some(ip), qname.as_ref(), qtype, &mut w).verdict;
    let Verdict::Answered { rcode, .. } = verdict else {
        return (verdict, None);
    };
    let mut h = Header::default();
    h.set_rcode(rcode);
    let m = Message::parse(w.finish(&h)).unwrap();
    (verdict, Some(m))
}

fn rcode(v: Verdict) -> Option<Rcode> {
    match v {
        Verdict::Answered { rcode, .. } => Some(rcode),
        _ => None,
    }
}

const C: &str = "127.0.0.1";

#[test]
fn kind_names_round_trip() {
    for (name, kind) in ZoneKind::NAMES {
        assert_eq!(name.parse::<ZoneKind>().unwrap(), kind);
        assert_eq!(kind.name(), name);
    }
    assert!("staticx".parse::<ZoneKind>().is_err());
    assert_eq!("allow_snoop".parse::<Access>().unwrap(), Access::AllowSnoop);
    assert!("permit".parse::<Access>().is_err());
}

#[test]
fn static_zone_answers_data_nodata_and_nxdomain_with_soa() {
    let l = local(
        &[("example.", "static")],
        &[
            "example. 300 SOA ns.example. h.example. 1 2 3 4 60",
            "www.example. 300 A 192.0.2.1",
            "a.b.example. 300 A 192.0.2.2",
        ],
    );
    let (v, m) = ask(&l, C, "WWW.Example.", RType::A);
    assert_eq!(rcode(v), Some(Rcode::NOERROR));
    let m = m.unwrap();
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].ttl, 300);
    // NODATA at a name with other data, and at an empty non-terminal.
    for name in ["www.example.", "b.example."] {
        let (v, m) = ask(&l, C, name, RType::AAAA);
        assert_eq!(rcode(v), Some(Rcode::NOERROR), "{name}");
        let m = m.unwrap();
        assert!(m.answers.is_empty());
        assert_eq!(m.authority[0].rtype, RType::SOA);
        // The SOA's TTL is cut to its MINIMUM (60).
        assert_eq!(m.authority[0].ttl, 60);
    }
    let (v, m) = ask(&l, C, "nope.example.", RType::A);
    assert_eq!(rcode(v), Some(Rcode::NXDOMAIN));
    assert_eq!(m.unwrap().authority.len(), 1);
}

#[test]
fn transparent_and_typetransparent() {
    let l = local(
        &[
            ("t.example.", "transparent"),
            ("tt.example.", "typetransparent"),
        ],
        &[
            "a.t.example. 60 A 192.0.2.1",
            "a.tt.example. 60 A 192.0.2.1",
        ],
    );
    assert_eq!(
        rcode(ask(&l, C, "a.t.example.", RType::A).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(
        rcode(ask(&l, C, "a.t.example.", RType::AAAA).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(ask(&l, C, "b.t.example.", RType::A).0, Verdict::Resolve);
    assert_eq!(
        rcode(ask(&l, C, "a.tt.example.", RType::A).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(ask(&l, C, "a.tt.example.", RType::AAAA).0, Verdict::Resolve);
    // Names outside every zone are not local.
    assert_eq!(ask(&l, C, "www.example.com.", RType::A).0, Verdict::Resolve);
    assert_eq!(ask(&l, C, "example.", RType::A).0, Verdict::Resolve);
}

#[test]
fn data_without_a_zone_makes_a_transparent_one() {
    let l = local(&[], &["host.lan. 60 A 192.0.2.9"]);
    let (v, m) = ask(&l, C, "host.lan.", RType::A);
    assert_eq!(rcode(v), Some(Rcode::NOERROR));
    assert_eq!(m.unwrap().answers.len(), 1);
    assert_eq!(
        rcode(ask(&l, C, "host.lan.", RType::MX).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(ask(&l, C, "other.lan.", RType::A).0, Verdict::Resolve);
}

#[test]
fn redirect_answers_every_name_below_with_the_apex_data() {
    let l = local(
        &[("ads.example.", "redirect")],
        &["ads.example. 60 A 127.0.0.2"],
    );
    let (v, m) = ask(&l, C, "x.y.ads.example.", RType::A);
    assert_eq!(rcode(v), Some(Rcode::NOERROR));
    let m = m.unwrap();
    assert_eq!(m.answers[0].owner, "x.y.ads.example.".parse().unwrap());
    assert_eq!(
        rcode(ask(&l, C, "x.ads.example.", RType::AAAA).0),
        Some(Rcode::NOERROR)
    );
    let below = Local::new(&LocalConfig {
        global: set(
            &[("ads.example.", "redirect")],
            &["x.ads.example. 60 A 127.0.0.2"],
            false,
        ),
        ..LocalConfig::default()
    });
    assert!(below.unwrap_err().contains("below redirect zone"));
}

#[test]
fn deny_refuse_and_the_always_types() {
    let l = local(
        &[
            ("d.example.", "deny"),
            ("r.example.", "refuse"),
            ("ar.example.", "always_refuse"),
            ("an.example.", "always_nxdomain"),
            ("ad.example.", "always_nodata"),
            ("at.example.", "always_transparent"),
            ("id.example.", "inform_deny"),
        ],
        &[
            "ok.d.example. 60 A 192.0.2.1",
            "ok.r.example. 60 A 192.0.2.1",
            "ok.ar.example. 60 A 192.0.2.1",
            "ok.an.example. 60 A 192.0.2.1",
            "ok.at.example. 60 A 192.0.2.1",
        ],
    );
    assert_eq!(
        rcode(ask(&l, C, "ok.d.example.", RType::A).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(ask(&l, C, "no.d.example.", RType::A).0, Verdict::Drop);
    assert_eq!(
        rcode(ask(&l, C, "ok.r.example.", RType::A).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(ask(&l, C, "no.r.example.", RType::A).0, Verdict::Refuse);
    assert_eq!(ask(&l, C, "ok.ar.example.", RType::A).0, Verdict::Refuse);
    assert_eq!(
        rcode(ask(&l, C, "ok.an.example.", RType::A).0),
        Some(Rcode::NXDOMAIN)
    );
    assert_eq!(
        rcode(ask(&l, C, "x.ad.example.", RType::A).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(ask(&l, C, "ok.at.example.", RType::A).0, Verdict::Resolve);
    let qname: Name = "x.id.example.".parse().unwrap();
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    let a = l.answer(None, qname.as_ref(), RType::A, &mut w);
    assert_eq!(a.verdict, Verdict::Drop);
    assert_eq!(a.inform.unwrap().to_name(), "id.example.".parse().unwrap());
}

#[test]
fn always_null_answers_the_unspecified_address() {
    let l = local(
        &[("null.lan.", "always_null")],
        &["x.null.lan. 300 A 192.0.2.1"],
    );
    let (_, m) = ask(&l, C, "y.null.lan.", RType::A);
    let m = m.unwrap();
    assert_eq!(
        (m.answers[0].ttl, &m.answers[0].rdata[..]),
        (3600, &[0u8; 4][..])
    );
    let (_, m) = ask(&l, C, "null.lan.", RType::AAAA);
    assert_eq!(m.unwrap().answers[0].rdata, vec![0u8; 16]);
    let (_, m) = ask(&l, C, "x.null.lan.", RType::A);
    assert_eq!(m.unwrap().answers[0].rdata, vec![192, 0, 2, 1]);
    let (v, m) = ask(&l, C, "y.null.lan.", RType::MX);
    assert_eq!(rcode(v), Some(Rcode::NOERROR));
    assert!(m.unwrap().answers.is_empty());
}

#[test]
fn unbound_defaults_and_nodefault() {
    let l = local(&[], &[]);
    let (v, m) = ask(&l, C, "foo.localhost.", RType::A);
    assert_eq!(rcode(v), Some(Rcode::NOERROR));
    assert_eq!(m.unwrap().answers[0].rdata, vec![127, 0, 0, 1]);
    assert_eq!(
        rcode(ask(&l, C, "2.0.0.127.in-addr.arpa.", RType::PTR).0),
        Some(Rcode::NXDOMAIN)
    );
    assert_eq!(
        rcode(ask(&l, C, "1.0.0.127.in-addr.arpa.", RType::PTR).0),
        Some(Rcode::NOERROR)
    );
    for n in [
        "x.10.in-addr.arpa.",
        "x.31.172.in-addr.arpa.",
        "www.test.",
        "a.invalid.",
        "x.onion.",
    ] {
        assert_eq!(
            rcode(ask(&l, C, n, RType::A).0),
            Some(Rcode::NXDOMAIN),
            "{n}"
        );
    }
    for n in [
        "x.32.172.in-addr.arpa.",
        "x.128.100.in-addr.arpa.",
        "local.",
    ] {
        assert_eq!(ask(&l, C, n, RType::A).0, Verdict::Resolve, "{n}");
    }
    let l = local(&[("test.", "nodefault"), ("onion.", "transparent")], &[]);
    assert_eq!(ask(&l, C, "www.test.", RType::A).0, Verdict::Resolve);
    assert_eq!(ask(&l, C, "x.onion.", RType::A).0, Verdict::Resolve);
    let none = Local::new(&LocalConfig::default()).unwrap();
    assert!(!none.has_zones());
    assert_eq!(ask(&none, C, "localhost.", RType::A).0, Verdict::Resolve);
}

#[test]
fn cname_is_answered_for_any_type_and_checked() {
    let l = local(&[], &["alias.lan. 60 CNAME www.example.com."]);
    let (_, m) = ask(&l, C, "alias.lan.", RType::A);
    assert_eq!(m.unwrap().answers[0].rtype, RType::CNAME);
    let bad = Local::new(&LocalConfig {
        global: set(
            &[],
            &["a.lan. 60 CNAME b.lan.", "a.lan. 60 A 192.0.2.1"],
            false,
        ),
        ..LocalConfig::default()
    });
    assert!(bad.unwrap_err().contains("CNAME beside"));
}

fn prefix(s: &str) -> Prefix {
    let (a, l) = s.split_once('/').unwrap();
    Prefix {
        addr: a.parse().unwrap(),
        len: l.parse().unwrap(),
    }
}

#[test]
fn access_longest_prefix_wins() {
    let l = Local::new(&LocalConfig {
        access: vec![
            (prefix("127.0.0.0/8"), Access::Allow),
            (prefix("127.0.0.0/24"), Access::Refuse),
            (prefix("127.0.0.5/32"), Access::AllowSnoop),
            (prefix("::1/128"), Access::Deny),
        ],
        default_access: Access::Refuse,
        ..LocalConfig::default()
    })
    .unwrap();
    let at = |s: &str| l.access(s.parse().unwrap());
    assert_eq!(at("127.1.0.1"), Access::Allow);
    assert_eq!(at("127.0.0.9"), Access::Refuse);
    assert_eq!(at("127.0.0.5"), Access::AllowSnoop);
    assert_eq!(at("::ffff:127.0.0.5"), Access::AllowSnoop);
    assert_eq!(at("::1"), Access::Deny);
    assert_eq!(at("192.0.2.1"), Access::Refuse);
}

#[test]
fn views_by_client_prefix_with_view_first_and_noview() {
    let view = |name: &str, zones, data, first| ViewConfig {
        name: name.into(),
        zones: set(zones, data, true),
        view_first: first,
    };
    let l = Local::new(&LocalConfig {
        global: set(
            &[],
            &["www.lan. 60 A 192.0.2.1", "host.glob. 60 A 192.0.2.7"],
            true,
        ),
        views: vec![
            view(
                "inside",
                &[("lan.", "static")],
                &["www.lan. 60 A 10.0.0.1"],
                false,
            ),
            view("first", &[("other.", "static")], &[], true),
            view("noview", &[("lan.", "noview")], &[], false),
        ],
        access_view: vec![
            (prefix("127.0.0.2/32"), "inside".into()),
            (prefix("127.0.0.3/32"), "first".into()),
            (prefix("127.0.0.4/32"), "noview".into()),
        ],
        ..LocalConfig::default()
    })
    .unwrap();
    let a = |client: &str| {
        let (_, m) = ask(&l, client, "www.lan.", RType::A);
        m.map(|m| m.answers[0].rdata.clone())
    };
    assert_eq!(a("127.0.0.1"), Some(vec![192, 0, 2, 1]));
    assert_eq!(a("127.0.0.2"), Some(vec![10, 0, 0, 1]));
    assert_eq!(a("127.0.0.3"), Some(vec![192, 0, 2, 1]));
    assert_eq!(a("127.0.0.4"), Some(vec![192, 0, 2, 1]));
    // A view without view_first does not see the global zones, but has the default ones.
    assert_eq!(
        rcode(ask(&l, "127.0.0.2", "localhost.", RType::A).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(
        ask(&l, "127.0.0.2", "host.glob.", RType::A).0,
        Verdict::Resolve
    );
    assert_eq!(
        rcode(ask(&l, "127.0.0.1", "host.glob.", RType::A).0),
        Some(Rcode::NOERROR)
    );
    assert_eq!(
        rcode(ask(&l, "127.0.0.3", "x.other.", RType::A).0),
        Some(Rcode::NXDOMAIN)
    );
    let unknown = Local::new(&LocalConfig {
        access_view: vec![(prefix("127.0.0.2/32"), "nope".into())],
        ..LocalConfig::default()
    });
    assert!(unknown.unwrap_err().contains("names no view"));
}

#[test]
fn truncation_rolls_back_to_the_question() {
    let data: Vec<String> = (0..40)
        .map(|i| format!("big.lan. 60 A 192.0.2.{i}"))
        .collect();
    let refs: Vec<&str> = data.iter().map(String::as_str).collect();
    let l = local(&[], &refs);
    let qname: Name = "big.lan.".parse().unwrap();
    let mut buf = [0u8; 200];
    let mut w = MessageWriter::new(&mut buf, 200);
    w.put_question(qname.as_ref(), RType::A, Class::IN).unwrap();
    let before = w.len();
    let v = l.answer(None, qname.as_ref(), RType::A, &mut w).verdict;
    assert_eq!(
        v,
        Verdict::Answered {
            rcode: Rcode::NOERROR,
            truncated: true
        }
    );
    assert_eq!(w.len(), before);
}

#[test]
fn many_top_labels_and_a_root_zone() {
    // Few top labels: the scan; more than MAX_TOPS: the hash walk. Both find the same zones.
    for n in [3usize, 40] {
        let zones: Vec<(String, &str)> = (0..n).map(|i| (format!("z.tld{i}."), "static")).collect();
        let mut refs: Vec<(&str, &str)> = zones.iter().map(|(z, k)| (z.as_str(), *k)).collect();
        refs.push((".", "refuse"));
        let l = local(&refs, &["ok. 60 A 192.0.2.1"]);
        let last = format!("x.z.tld{}.", n - 1);
        assert_eq!(
            rcode(ask(&l, C, &last, RType::A).0),
            Some(Rcode::NXDOMAIN),
            "{n}"
        );
        assert_eq!(
            rcode(ask(&l, C, "X.Z.TLD0.", RType::A).0),
            Some(Rcode::NXDOMAIN)
        );
        // Under no zone but the root's: the root zone's answer.
        assert_eq!(
            ask(&l, C, "www.example.", RType::A).0,
            Verdict::Refuse,
            "{n}"
        );
        assert_eq!(ask(&l, C, "y.tld0.", RType::A).0, Verdict::Refuse, "{n}");
        assert_eq!(ask(&l, C, ".", RType::A).0, Verdict::Refuse, "{n}");
        // Local data without a zone under the root zone: the root zone holds it.
        assert_eq!(rcode(ask(&l, C, "ok.", RType::A).0), Some(Rcode::NOERROR));
    }
}
