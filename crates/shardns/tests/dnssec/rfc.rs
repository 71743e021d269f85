//! The example responses of RFC 4035 Appendix B and RFC 5155 Appendix B, as the RFCs print
//! them, and the check of a server's response against them.
//!
//! Each printed response is written as the RRsets it holds, section by section; the records
//! themselves are the zone's (read back by AXFR from knotd, which loaded the RFC's Appendix A
//! zone file), so that a response is compared record for record, RDATA and signatures
//! included. Sections are compared as sets. TTLs are not compared here: the RFCs print the
//! negative answers' SOA, NSEC and NSEC3 with TTL 3600, where RFC 2308 §3 and RFC 9077 give
//! min(SOA TTL, SOA MINIMUM) = 300, as Knot sends (the TTLs are compared with Knot's in the
//! lab differential). The one other licence: the zone's NS RRset (and its RRSIG) that the
//! RFCs print in the authority section of positive answers may be left out ("minimal
//! responses", docs/ANSWERS.md; Knot leaves it out).

use crate::wire::{rcode_name, Resp, Rr, Q, SECTION_NAMES};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One appendix example.
pub(crate) struct Case {
    pub(crate) id: &'static str,
    pub(crate) qname: &'static str,
    pub(crate) qtype: u16,
    pub(crate) rcode: u16,
    pub(crate) aa: bool,
    /// The RRsets of each section: `"owner TYPE"`, `"owner RRSIG TYPE"` for the signature
    /// over `owner TYPE`, and `"qname=source ..."` for records a wildcard `source`
    /// synthesises at `qname`.
    pub(crate) sections: [&'static [&'static str]; 3],
}

/// A zone of the RFCs and its examples.
pub(crate) struct Appendix {
    pub(crate) rfc: &'static str,
    pub(crate) file: &'static str,
    pub(crate) apex: &'static str,
    /// A time at which the signatures were valid (YYYYMMDDHHmmSS), for the zone check.
    pub(crate) valid_at: &'static str,
    pub(crate) cases: &'static [Case],
}

use crate::wire::{AAAA, DS, MX};
const A: u16 = crate::wire::A;

/// The zone NS RRset and its signature, which a positive answer may leave out.
const APEX_NS: [&str; 2] = ["example. NS", "example. RRSIG NS"];

pub(crate) const RFC4035: Appendix = Appendix {
    rfc: "RFC 4035",
    file: "rfc4035-example.zone",
    apex: "example.",
    valid_at: "20040420000000",
    cases: &[
        Case {
            id: "B.1 answer",
            qname: "x.w.example.",
            qtype: MX,
            rcode: 0,
            aa: true,
            sections: [
                &["x.w.example. MX", "x.w.example. RRSIG MX"],
                &["example. NS", "example. RRSIG NS"],
                &[
                    "xx.example. A",
                    "xx.example. RRSIG A",
                    "xx.example. AAAA",
                    "xx.example. RRSIG AAAA",
                ],
            ],
        },
        Case {
            id: "B.2 name error",
            qname: "ml.example.",
            qtype: A,
            rcode: 3,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    "b.example. NSEC",
                    "b.example. RRSIG NSEC",
                    "example. NSEC",
                    "example. RRSIG NSEC",
                ],
                &[],
            ],
        },
        Case {
            id: "B.3 no data error",
            qname: "ns1.example.",
            qtype: MX,
            rcode: 0,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    "ns1.example. NSEC",
                    "ns1.example. RRSIG NSEC",
                ],
                &[],
            ],
        },
        Case {
            id: "B.4 referral to signed zone",
            qname: "mc.a.example.",
            qtype: MX,
            rcode: 0,
            aa: false,
            sections: [
                &[],
                &["a.example. NS", "a.example. DS", "a.example. RRSIG DS"],
                &["ns1.a.example. A", "ns2.a.example. A"],
            ],
        },
        Case {
            id: "B.5 referral to unsigned zone",
            qname: "mc.b.example.",
            qtype: MX,
            rcode: 0,
            aa: false,
            sections: [
                &[],
                &["b.example. NS", "b.example. NSEC", "b.example. RRSIG NSEC"],
                &["ns1.b.example. A", "ns2.b.example. A"],
            ],
        },
        Case {
            id: "B.6 wildcard expansion",
            qname: "a.z.w.example.",
            qtype: MX,
            rcode: 0,
            aa: true,
            sections: [
                &[
                    "a.z.w.example.=*.w.example. MX",
                    "a.z.w.example.=*.w.example. RRSIG MX",
                ],
                &[
                    "example. NS",
                    "example. RRSIG NS",
                    "x.y.w.example. NSEC",
                    "x.y.w.example. RRSIG NSEC",
                ],
                &[
                    "ai.example. A",
                    "ai.example. RRSIG A",
                    "ai.example. AAAA",
                    "ai.example. RRSIG AAAA",
                ],
            ],
        },
        Case {
            id: "B.7 wildcard no data error",
            qname: "a.z.w.example.",
            qtype: AAAA,
            rcode: 0,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    "x.y.w.example. NSEC",
                    "x.y.w.example. RRSIG NSEC",
                    "*.w.example. NSEC",
                    "*.w.example. RRSIG NSEC",
                ],
                &[],
            ],
        },
        Case {
            id: "B.8 DS child zone no data error",
            qname: "example.",
            qtype: DS,
            rcode: 0,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    "example. NSEC",
                    "example. RRSIG NSEC",
                ],
                &[],
            ],
        },
    ],
};

pub(crate) const RFC5155: Appendix = Appendix {
    rfc: "RFC 5155",
    file: "rfc5155-example.zone",
    apex: "example.",
    valid_at: "20100101000000",
    cases: &[
        Case {
            id: "B.1 name error",
            qname: "a.c.x.w.example.",
            qtype: A,
            rcode: 3,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    // covers the next closer name c.x.w.example.
                    "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. NSEC3",
                    "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. RRSIG NSEC3",
                    // matches the closest encloser x.w.example.
                    "b4um86eghhds6nea196smvmlo4ors995.example. NSEC3",
                    "b4um86eghhds6nea196smvmlo4ors995.example. RRSIG NSEC3",
                    // covers the wildcard *.x.w.example.
                    "35mthgpgcu1qg68fab165klnsnk3dpvl.example. NSEC3",
                    "35mthgpgcu1qg68fab165klnsnk3dpvl.example. RRSIG NSEC3",
                ],
                &[],
            ],
        },
        Case {
            id: "B.2 no data error",
            qname: "ns1.example.",
            qtype: MX,
            rcode: 0,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    "2t7b4g4vsa5smi47k61mv5bv1a22bojr.example. NSEC3",
                    "2t7b4g4vsa5smi47k61mv5bv1a22bojr.example. RRSIG NSEC3",
                ],
                &[],
            ],
        },
        Case {
            id: "B.2.1 no data error, empty non-terminal",
            qname: "y.w.example.",
            qtype: A,
            rcode: 0,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    "ji6neoaepv8b5o6k4ev33abha8ht9fgc.example. NSEC3",
                    "ji6neoaepv8b5o6k4ev33abha8ht9fgc.example. RRSIG NSEC3",
                ],
                &[],
            ],
        },
        Case {
            id: "B.3 referral to an opt-out unsigned zone",
            qname: "mc.c.example.",
            qtype: MX,
            rcode: 0,
            aa: false,
            sections: [
                &[],
                &[
                    "c.example. NS",
                    // matches the closest provable encloser example.
                    "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. NSEC3",
                    "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. RRSIG NSEC3",
                    // covers the next closer name c.example. (Opt-Out)
                    "35mthgpgcu1qg68fab165klnsnk3dpvl.example. NSEC3",
                    "35mthgpgcu1qg68fab165klnsnk3dpvl.example. RRSIG NSEC3",
                ],
                &["ns1.c.example. A", "ns2.c.example. A"],
            ],
        },
        Case {
            id: "B.4 wildcard expansion",
            qname: "a.z.w.example.",
            qtype: MX,
            rcode: 0,
            aa: true,
            sections: [
                &[
                    "a.z.w.example.=*.w.example. MX",
                    "a.z.w.example.=*.w.example. RRSIG MX",
                ],
                &[
                    "example. NS",
                    "example. RRSIG NS",
                    // covers the next closer name z.w.example.
                    "q04jkcevqvmu85r014c7dkba38o0ji5r.example. NSEC3",
                    "q04jkcevqvmu85r014c7dkba38o0ji5r.example. RRSIG NSEC3",
                ],
                &[
                    "ai.example. A",
                    "ai.example. RRSIG A",
                    "ai.example. AAAA",
                    "ai.example. RRSIG AAAA",
                ],
            ],
        },
        Case {
            id: "B.5 wildcard no data error",
            qname: "a.z.w.example.",
            qtype: AAAA,
            rcode: 0,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    // matches the closest encloser w.example.
                    "k8udemvp1j2f7eg6jebps17vp3n8i58h.example. NSEC3",
                    "k8udemvp1j2f7eg6jebps17vp3n8i58h.example. RRSIG NSEC3",
                    // covers the next closer name z.w.example.
                    "q04jkcevqvmu85r014c7dkba38o0ji5r.example. NSEC3",
                    "q04jkcevqvmu85r014c7dkba38o0ji5r.example. RRSIG NSEC3",
                    // matches the wildcard *.w.example.
                    "r53bq7cc2uvmubfu5ocmm6pers9tk9en.example. NSEC3",
                    "r53bq7cc2uvmubfu5ocmm6pers9tk9en.example. RRSIG NSEC3",
                ],
                &[],
            ],
        },
        Case {
            id: "B.6 DS child zone no data error",
            qname: "example.",
            qtype: DS,
            rcode: 0,
            aa: true,
            sections: [
                &[],
                &[
                    "example. SOA",
                    "example. RRSIG SOA",
                    "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. NSEC3",
                    "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. RRSIG NSEC3",
                ],
                &[],
            ],
        },
    ],
};

/// The records `spec` names, from `zone`, with TTL 0 (TTLs are not compared here).
fn records(zone: &[Rr], spec: &str) -> Result<BTreeSet<Rr>, String> {
    let mut words = spec.split_whitespace();
    let owner = words.next().ok_or("empty spec")?;
    let (qname, source) = owner.split_once('=').unwrap_or((owner, owner));
    let t = words.next().ok_or("no type")?;
    let (rtype, covered) = match (t, words.next()) {
        ("RRSIG", Some(c)) => (46, Some(type_number(c)?)),
        (t, None) => (type_number(t)?, None),
        _ => return Err(format!("bad spec {spec}")),
    };
    let set: BTreeSet<Rr> = zone
        .iter()
        .filter(|rr| rr.name == source && rr.rtype == rtype && rr.covered() == covered)
        .map(|rr| rr.renamed(qname).with_ttl(0))
        .collect();
    if set.is_empty() {
        return Err(format!("{spec}: no such records in the zone"));
    }
    Ok(set)
}

fn type_number(t: &str) -> Result<u16, String> {
    t.parse::<hickory_proto::rr::RecordType>()
        .map(u16::from)
        .map_err(|e| format!("{t}: {e}"))
}

/// The query each case sends: DO=1, over TCP so that no response is truncated.
pub(crate) fn query(case: &Case) -> Q {
    Q {
        tcp: true,
        ..Q::dnssec(case.qname, case.qtype)
    }
}

/// How `resp` differs from the case as printed, as report lines (empty: as printed).
pub(crate) fn check(zone: &[Rr], case: &Case, resp: &Result<Resp, String>) -> Vec<String> {
    let resp = match resp {
        Ok(r) => r,
        Err(e) => return vec![format!("no response: {e}")],
    };
    let mut out = Vec::new();
    if resp.rcode != case.rcode {
        out.push(format!(
            "rcode {} where the RFC prints {}",
            rcode_name(resp.rcode),
            rcode_name(case.rcode)
        ));
    }
    if resp.aa != case.aa {
        out.push(format!("AA {} where the RFC prints {}", resp.aa, case.aa));
    }
    if !resp.dnssec_ok {
        out.push("no OPT record with DO set (RFC 3225 §3)".into());
    }
    for (i, specs) in case.sections.iter().enumerate() {
        let mut want = BTreeSet::new();
        let mut optional = BTreeSet::new();
        for spec in *specs {
            match records(zone, spec) {
                Ok(set) if i == 1 && APEX_NS.contains(spec) && case.rcode == 0 && case.aa => {
                    optional.extend(set)
                }
                Ok(set) => want.extend(set),
                Err(e) => out.push(format!("test data: {e}")),
            }
        }
        let got: BTreeSet<Rr> = resp.sections[i].iter().map(|rr| rr.with_ttl(0)).collect();
        let name = SECTION_NAMES[i];
        for rr in want.difference(&got) {
            out.push(format!("{name} lacks (RFC prints it): {rr}"));
        }
        for rr in got.difference(&want) {
            if !optional.contains(rr) {
                out.push(format!("{name} has (RFC does not print it): {rr}"));
            }
        }
    }
    out
}

/// Runs every case of `appendix` against `client`; the report of each case that differs.
pub(crate) fn run(
    appendix: &Appendix,
    zone: &[Rr],
    client: &crate::servers::Client,
    who: &str,
) -> Vec<String> {
    let mut failures = Vec::new();
    for case in appendix.cases {
        let q = query(case);
        let resp = client.ask(&q);
        let lines = check(zone, case, &resp);
        if std::env::var_os("DNSSEC_VERBOSE").is_some() {
            println!(
                "{} {} {q}\n  {who}: {}",
                appendix.rfc,
                case.id,
                crate::wire::show(&resp)
            );
        }
        if !lines.is_empty() {
            let mut s = format!("{} {} ({q}), {who}:", appendix.rfc, case.id);
            for l in lines {
                let _ = write!(s, "\n    {l}");
            }
            failures.push(s);
        }
    }
    failures
}
