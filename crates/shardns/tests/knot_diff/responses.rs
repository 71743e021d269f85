//! Responses as compared: parsed with hickory-proto and normalised (RCODE with its extended
//! bits, flags, sections as sets of records with RDATA in DNSSEC canonical form), the ways
//! two of them differ, and how they are shown in the report.

use crate::queries::{type_name, Q};
use crate::OPT;
use hickory_proto::op::{Header, Query};
use hickory_proto::rr::{DNSClass, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A response as compared: the fields that must match, sections as sets.
#[derive(Debug, Clone)]
pub(crate) struct Resp {
    /// RCODE with the OPT record's extended bits.
    pub(crate) rcode: u16,
    pub(crate) aa: bool,
    pub(crate) tc: bool,
    pub(crate) edns: bool,
    /// Answer, authority, additional (OPT excluded).
    pub(crate) sections: [BTreeSet<Rr>; 3],
}

impl Resp {
    pub(crate) fn answer(&self) -> &BTreeSet<Rr> {
        &self.sections[0]
    }
}

/// One record as compared: equal when owner, type, class, TTL and the RDATA in DNSSEC
/// canonical form (RFC 4034 §6.2: names in the RDATA of the older types lower-cased, nothing
/// compressed) are. Case in RDATA names is not compared: a server that compresses a target
/// against the question, as Knot does, sends it in the question's case (RFC 4343 §4).
#[derive(Debug, Clone)]
pub(crate) struct Rr {
    /// Owner, lower-cased, presentation form.
    pub(crate) name: String,
    pub(crate) rtype: u16,
    pub(crate) class: u16,
    ttl: u32,
    /// RDATA in canonical form.
    pub(crate) key: Vec<u8>,
    /// RDATA as hickory-proto prints it, as received.
    rdata: String,
}

impl Rr {
    fn sort_key(&self) -> (&str, u16, u16, u32, &[u8]) {
        (&self.name, self.rtype, self.class, self.ttl, &self.key)
    }
}

impl PartialEq for Rr {
    fn eq(&self, other: &Self) -> bool {
        self.sort_key() == other.sort_key()
    }
}

impl Eq for Rr {}

impl PartialOrd for Rr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.sort_key().cmp(&other.sort_key())
    }
}

impl std::fmt::Display for Rr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let class = if self.class == 1 {
            "IN".to_string()
        } else {
            format!("CLASS{}", self.class)
        };
        write!(
            f,
            "{} {} {class} {} {}",
            self.name,
            self.ttl,
            type_name(self.rtype),
            self.rdata
        )
    }
}

/// Parses a response with hickory-proto, record by record (its `Message` reader refuses
/// records with empty RDATA outside UPDATE, which RFC 3597 allows).
pub(crate) fn parse_response(q: &Q, buf: &[u8]) -> Result<Resp, String> {
    let mut d = BinDecoder::new(buf);
    let h = Header::read(&mut d).map_err(|e| format!("header: {e}"))?;
    if h.metadata.id != q.id {
        return Err(format!("id {} instead of {}", h.metadata.id, q.id));
    }
    for _ in 0..h.counts.queries {
        let qq = Query::read(&mut d).map_err(|e| format!("question: {e}"))?;
        if !qq.name().to_ascii().eq_ignore_ascii_case(&q.name) && q.name != "." {
            return Err(format!("question {} echoed for {}", qq.name(), q.name));
        }
    }
    let mut rcode = u16::from(h.metadata.response_code) & 0xf;
    let mut edns = false;
    let mut sections: [BTreeSet<Rr>; 3] = Default::default();
    let counts = [h.counts.answers, h.counts.authorities, h.counts.additionals];
    for (i, &count) in counts.iter().enumerate() {
        for _ in 0..count {
            let r: Record = Record::read(&mut d).map_err(|e| format!("section {i}: {e}"))?;
            if r.record_type() == RecordType::OPT {
                if i != 2 || edns {
                    return Err("misplaced or second OPT record".into());
                }
                edns = true;
                rcode |= ((r.ttl >> 24) as u16) << 4;
                continue;
            }
            sections[i].insert(Rr {
                name: r.name.to_lowercase().to_ascii(),
                rtype: u16::from(r.record_type()),
                class: match r.dns_class {
                    DNSClass::OPT(_) => OPT,
                    c => u16::from(c),
                },
                ttl: r.ttl,
                key: canonical_rdata(&r.data)?,
                rdata: match &r.data {
                    RData::Update0(_) => "\\# 0".to_string(),
                    data => data.to_string(),
                },
            });
        }
    }
    if !d.is_empty() {
        return Err(format!("{} octets after the last record", d.len()));
    }
    Ok(Resp {
        rcode,
        aa: h.metadata.authoritative,
        tc: h.metadata.truncation,
        edns,
        sections,
    })
}

/// RDATA in DNSSEC canonical form (empty for an empty RDATA).
fn canonical_rdata(data: &RData) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    if !matches!(data, RData::Update0(_)) {
        let mut e = BinEncoder::new(&mut out);
        e.set_canonical_form(true);
        data.emit(&mut e)
            .map_err(|e| format!("re-encoding {data}: {e}"))?;
    }
    Ok(out)
}

/// One way in which two responses differ.
#[derive(Debug)]
pub(crate) enum Diff {
    /// Only one side answered or parsed: (knot, ours).
    Outcome(String, String),
    Rcode(u16, u16),
    Aa(bool, bool),
    Tc(bool, bool),
    Edns(bool, bool),
    /// Section index, records only Knot sent, records only we sent.
    Section(usize, Vec<Rr>, Vec<Rr>),
}

impl Diff {
    /// The difference as lines for the report.
    pub(crate) fn lines(&self) -> Vec<String> {
        match self {
            Diff::Outcome(k, o) => vec![format!("response: knot {k} / ours {o}")],
            Diff::Rcode(k, o) => vec![format!(
                "rcode: knot {} / ours {}",
                rcode_name(*k),
                rcode_name(*o)
            )],
            Diff::Aa(k, o) => vec![format!("AA: knot {k} / ours {o}")],
            Diff::Tc(k, o) => vec![format!("TC: knot {k} / ours {o}")],
            Diff::Edns(k, o) => vec![format!("EDNS: knot {k} / ours {o}")],
            Diff::Section(i, k, o) => {
                let name = SECTION_NAMES[*i];
                let knot = k.iter().map(|rr| format!("{name} only knot: {rr}"));
                knot.chain(o.iter().map(|rr| format!("{name} only ours: {rr}")))
                    .collect()
            }
        }
    }
}

const SECTION_NAMES: [&str; 3] = ["answer", "authority", "additional"];

/// One line per response, for the verbose log.
pub(crate) fn show(r: &Result<Resp, String>) -> String {
    match r {
        Err(e) => format!("error: {e}"),
        Ok(r) => {
            let mut s = format!(
                "{}{}{}{}",
                rcode_name(r.rcode),
                if r.aa { " aa" } else { "" },
                if r.tc { " tc" } else { "" },
                if r.edns { " edns" } else { "" }
            );
            for (i, section) in r.sections.iter().enumerate() {
                for rr in section {
                    let _ = write!(s, " | {}: {rr}", ["an", "ns", "ar"][i]);
                }
            }
            s
        }
    }
}

fn rcode_name(r: u16) -> String {
    const NAMES: &[&str] = &[
        "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
        "NXRRSET", "NOTAUTH", "NOTZONE",
    ];
    match r {
        16 => "BADVERS".into(),
        _ => NAMES
            .get(r as usize)
            .map_or_else(|| format!("RCODE{r}"), |s| s.to_string()),
    }
}

pub(crate) fn differences(k: &Result<Resp, String>, o: &Result<Resp, String>) -> Vec<Diff> {
    let (k, o) = match (k, o) {
        (Ok(k), Ok(o)) => (k, o),
        (Err(a), Err(b)) if a == b => return Vec::new(),
        _ => {
            let show = |r: &Result<Resp, String>| match r {
                Ok(r) => format!(
                    "rcode {} with {} records",
                    rcode_name(r.rcode),
                    r.sections.iter().map(BTreeSet::len).sum::<usize>()
                ),
                Err(e) => format!("error ({e})"),
            };
            return vec![Diff::Outcome(show(k), show(o))];
        }
    };
    let mut diffs = Vec::new();
    if k.rcode != o.rcode {
        diffs.push(Diff::Rcode(k.rcode, o.rcode));
    }
    if k.aa != o.aa {
        diffs.push(Diff::Aa(k.aa, o.aa));
    }
    if k.tc != o.tc {
        diffs.push(Diff::Tc(k.tc, o.tc));
    }
    if k.edns != o.edns {
        diffs.push(Diff::Edns(k.edns, o.edns));
    }
    for i in 0..3 {
        let (ks, os) = (&k.sections[i], &o.sections[i]);
        if ks != os {
            diffs.push(Diff::Section(
                i,
                ks.difference(os).cloned().collect(),
                os.difference(ks).cloned().collect(),
            ));
        }
    }
    diffs
}
