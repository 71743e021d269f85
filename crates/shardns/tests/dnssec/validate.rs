//! End-to-end validation: a validating Unbound whose only trust anchors are the lab
//! parents' DS records, whose stub zones are the parents on the server under test (knotd or
//! shardns), fenced from every address but 127.0.0.0/8. The children are served by a knotd
//! of their own on [`CHILD_IP`] port 53 (the glue in the parents points there, and a
//! resolver follows glue to port 53 only), so that Unbound follows the parents' referrals
//! and checks their DS records and insecure-delegation proofs.

use crate::lab::{self, absolute, names, PARENTS};
use crate::servers::{port_on, start_unbound, Client};
use crate::wire::*;
use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::Mutex;

/// Where the children are served: the glue address in the lab zones.
pub(crate) const CHILD_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 71);
/// Unbound in front of knotd, and in front of shardns.
pub(crate) const UNBOUND_KNOT_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 72);
pub(crate) const UNBOUND_OURS_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 73);

/// The tests that bind [`CHILD_IP`]:53 take turns.
pub(crate) static PORT_53: Mutex<()> = Mutex::new(());

/// Types resolved for every lab name.
const TYPES: &[u16] = &[A, AAAA, TXT, MX, NS, SOA, DS, DNSKEY, CNAME, NSEC3PARAM];

/// Port 53 on [`CHILD_IP`] must be free; not being allowed to bind it (not root) skips.
pub(crate) fn port_53_free() -> Result<(), String> {
    let addr = SocketAddr::from((CHILD_IP, 53));
    let probe = UdpSocket::bind(addr)
        .err()
        .or_else(|| TcpListener::bind(addr).err());
    match probe {
        None => Ok(()),
        Some(e) if e.kind() == ErrorKind::PermissionDenied => {
            Err(format!("cannot bind {addr} ({e}): run as root"))
        }
        Some(e) => panic!("{addr} is in use ({e}): see `ss -lunpt`"),
    }
}

/// One name and type resolved.
pub(crate) struct Resolved {
    pub(crate) q: Q,
    pub(crate) r: Result<Resp, String>,
    /// Unbound's reason when it found the answer bogus (its `validation failure` log line).
    pub(crate) bogus: Option<String>,
}

/// The questions resolved: every lab name times [`TYPES`], except DS at a parent's apex
/// (its parent, `lab.`, is served by no one here).
pub(crate) fn questions() -> Vec<Q> {
    let mut out = Vec::new();
    for apex in PARENTS {
        for name in names(apex) {
            for &t in TYPES {
                if !(name == apex && t == DS) {
                    out.push(Q {
                        rd: true,
                        ..Q::dnssec(&name, t)
                    });
                }
            }
        }
    }
    out
}

/// Resolves every question through Unbound on `ip`, in front of the parents at `parents`.
pub(crate) fn resolve_all(
    unbound: &std::path::Path,
    dir: &std::path::Path,
    ip: Ipv4Addr,
    parents: SocketAddr,
) -> Vec<Resolved> {
    let listen = SocketAddr::from((ip, port_on(ip)));
    let anchors: Vec<String> = PARENTS.iter().map(|apex| lab::ds(apex)).collect();
    let stubs: Vec<(&str, SocketAddr)> = PARENTS.iter().map(|apex| (*apex, parents)).collect();
    let daemon = start_unbound(unbound, dir, listen, &anchors, &stubs);
    let client = Client::new(listen);
    let out = questions()
        .into_iter()
        .map(|q| {
            let mut r = client.ask(&q);
            if matches!(&r, Ok(resp) if resp.tc) {
                r = client.ask(&Q {
                    tcp: true,
                    ..q.clone()
                });
            }
            Resolved { q, r, bogus: None }
        })
        .collect::<Vec<_>>();
    let log = daemon.log();
    if std::env::var_os("DNSSEC_VERBOSE").is_some() {
        println!("--- log of {} ---\n{log}", daemon.name);
    }
    let mut out = out;
    for res in &mut out {
        let needle = format!("<{} {} IN>", res.q.name, type_name(res.q.qtype));
        res.bogus = log
            .lines()
            .find(|l| l.contains("validation failure") && l.contains(&needle))
            .and_then(|l| l.split_once("info: "))
            .map(|(_, reason)| reason.to_string());
    }
    drop(daemon);
    out
}

/// Why Unbound in front of knotd may answer `q` with SERVFAIL, if it may: resolving it
/// leaves the lab zones (a name server or CNAME target under example.net., which the fence
/// keeps Unbound from reaching; a DS below the `ext` cut is asked of those servers), or a
/// limitation of Unbound 1.17's validator: for QTYPE CNAME below a DNAME it builds the chain
/// of trust by asking the DS of the QNAME, gets the DNAME answer, and calls that bogus
/// ("DS got DNAME answer ... while building chain of trust").
pub(crate) fn may_fail(q: &Q) -> Option<&'static str> {
    PARENTS.iter().find_map(|apex| {
        let ext = absolute("ext", apex);
        let dn = absolute("dn", apex);
        if (q.name == ext && q.qtype != DS) || q.name.ends_with(&format!(".{ext}")) {
            Some("leaves the lab (name server under example.net.)")
        } else if q.name == absolute("cname-ext", apex) && q.qtype != CNAME {
            Some("leaves the lab (CNAME target under example.net.)")
        } else if q.name.ends_with(&format!(".{dn}")) && q.qtype == CNAME {
            Some("Unbound: QTYPE CNAME below a DNAME")
        } else {
            None
        }
    })
}

/// (relative name, type, AD expected) checked in every parent; the NXDOMAIN and wildcard
/// cases only where the denial is not Opt-Out (RFC 5155 §9.2: an Opt-Out NSEC3 covering
/// the next closer name proves nothing secure).
const SPOT: &[(&str, u16, bool, bool)] = &[
    // (name, type, AD, also in the Opt-Out zone)
    ("www", A, true, true),
    ("@", DNSKEY, true, true),
    ("cname", A, true, true),
    ("a.b.ent", A, true, true),
    ("b.ent", A, true, true),
    ("www.signed", A, true, true),
    ("www.dn", A, true, true),
    ("nothere", A, true, false),
    ("host.wild", A, true, false),
    ("host.wild", AAAA, true, false),
    ("www.unsigned", A, false, true),
    ("www.d1.ent2", A, false, true),
];

/// What Unbound in front of knotd must give, to show the world works: no SERVFAIL but
/// where [`may_fail`] says why, and the AD bit of [`SPOT`].
pub(crate) fn check_knot_side(results: &[Resolved]) -> Vec<String> {
    let mut out = Vec::new();
    for res in results {
        match &res.r {
            Err(e) => out.push(format!("{}: no answer from unbound ({e})", res.q)),
            Ok(r) if r.rcode == 2 && may_fail(&res.q).is_none() => out.push(format!(
                "{}: SERVFAIL from unbound: {}",
                res.q,
                res.bogus
                    .as_deref()
                    .unwrap_or("(no validation failure logged)")
            )),
            Ok(_) => {}
        }
    }
    for apex in PARENTS {
        for &(rel, t, ad, optout_too) in SPOT {
            if apex == "optout.lab." && !optout_too {
                continue;
            }
            let name = absolute(rel, apex);
            let Some(res) = results.iter().find(|r| r.q.name == name && r.q.qtype == t) else {
                out.push(format!("{name} {} is not asked", type_name(t)));
                continue;
            };
            match &res.r {
                Ok(r) if r.ad == ad && matches!(r.rcode, 0 | 3) => {}
                other => out.push(format!(
                    "{}: expected {} from unbound, got {}",
                    res.q,
                    if ad {
                        "AD (secure)"
                    } else {
                        "no AD (insecure)"
                    },
                    show(other)
                )),
            }
        }
    }
    out
}

/// What is compared between the two resolvers: RCODE, AD, and the answer section without
/// TTLs (they count down in a cache).
fn outcome(r: &Result<Resp, String>) -> Result<(u16, bool, BTreeSet<Rr>), String> {
    r.as_ref()
        .map(|r| {
            (
                r.rcode,
                r.ad,
                r.answer().iter().map(|rr| rr.with_ttl(0)).collect(),
            )
        })
        .map_err(Clone::clone)
}

/// Every question whose outcome through Unbound differs between knotd and shardns.
pub(crate) fn compare(knot: &[Resolved], ours: &[Resolved]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, o) in knot.iter().zip(ours) {
        let (ko, oo) = (outcome(&k.r), outcome(&o.r));
        if ko == oo {
            continue;
        }
        let mut s = format!("VALIDATION DIFF {} (rd, through unbound)", k.q);
        match (&ko, &oo) {
            (Ok((kr, ka, kan)), Ok((or, oa, oan))) => {
                if kr != or {
                    s.push_str(&format!(
                        "\n    rcode: knot {} / shardns {}",
                        rcode_name(*kr),
                        rcode_name(*or)
                    ));
                }
                if ka != oa {
                    s.push_str(&format!("\n    AD: knot {ka} / shardns {oa}"));
                }
                for rr in kan.difference(oan) {
                    s.push_str(&format!("\n    answer only knot: {rr}"));
                }
                for rr in oan.difference(kan) {
                    s.push_str(&format!("\n    answer only shardns: {rr}"));
                }
            }
            _ => s.push_str(&format!(
                "\n    knot: {}\n    shardns: {}",
                show(&k.r),
                show(&o.r)
            )),
        }
        for (who, res) in [("knot", k), ("shardns", o)] {
            if let Some(reason) = &res.bogus {
                s.push_str(&format!("\n    unbound in front of {who}: {reason}"));
            }
        }
        out.push(s);
    }
    out
}
