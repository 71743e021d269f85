//! Queries and responses as this test sees them: a query with its EDNS buffer, DO bit and
//! transport; a response parsed with hickory-proto (a parser that is not ours) and
//! normalised (RCODE with its extended bits, flags, sections as sets of records with RDATA in
//! DNSSEC canonical form, the DNSSEC types shown field by field); and how two responses
//! differ, as lines for the report.

use hickory_proto::op::{Header, Query};
use hickory_proto::rr::{DNSClass, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};
use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

pub(crate) const A: u16 = 1;
pub(crate) const NS: u16 = 2;
pub(crate) const CNAME: u16 = 5;
pub(crate) const SOA: u16 = 6;
pub(crate) const MX: u16 = 15;
pub(crate) const TXT: u16 = 16;
pub(crate) const AAAA: u16 = 28;
pub(crate) const SRV: u16 = 33;
pub(crate) const DNAME: u16 = 39;
pub(crate) const OPT: u16 = 41;
pub(crate) const DS: u16 = 43;
pub(crate) const RRSIG: u16 = 46;
pub(crate) const NSEC: u16 = 47;
pub(crate) const DNSKEY: u16 = 48;
pub(crate) const NSEC3: u16 = 50;
pub(crate) const NSEC3PARAM: u16 = 51;
pub(crate) const AXFR: u16 = 252;
pub(crate) const ANY: u16 = 255;

/// One query: what is asked, and how.
#[derive(Debug, Clone)]
pub(crate) struct Q {
    /// Presentation form, absolute.
    pub(crate) name: String,
    pub(crate) qtype: u16,
    /// EDNS: (UDP payload size, DO); `None` sends no OPT record.
    pub(crate) edns: Option<(u16, bool)>,
    pub(crate) tcp: bool,
    /// RD, for queries to a resolver.
    pub(crate) rd: bool,
    pub(crate) id: u16,
}

impl Q {
    /// A DO=1 query with a 1232-octet buffer over UDP, the common case.
    pub(crate) fn dnssec(name: &str, qtype: u16) -> Self {
        Self {
            name: name.to_string(),
            qtype,
            edns: Some((1232, true)),
            tcp: false,
            rd: false,
            id: 0,
        }
    }

    pub(crate) fn to_wire(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(64);
        m.extend_from_slice(&self.id.to_be_bytes());
        m.push(u8::from(self.rd));
        m.push(0);
        m.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, u8::from(self.edns.is_some())]);
        m.extend_from_slice(&name_to_wire(&self.name));
        m.extend_from_slice(&self.qtype.to_be_bytes());
        m.extend_from_slice(&1u16.to_be_bytes());
        if let Some((size, dnssec_ok)) = self.edns {
            m.push(0);
            m.extend_from_slice(&OPT.to_be_bytes());
            m.extend_from_slice(&size.to_be_bytes());
            m.extend_from_slice(&[0, 0, if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
        }
        m
    }
}

impl fmt::Display for Q {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, type_name(self.qtype))?;
        match self.edns {
            None => f.write_str(" noedns")?,
            Some((size, dnssec_ok)) => write!(
                f,
                " edns={size} {}",
                if dnssec_ok { "DO=1" } else { "DO=0" }
            )?,
        }
        f.write_str(if self.tcp { " tcp" } else { " udp" })
    }
}

/// `name` in uncompressed wire form; `\DDD` and `\X` escapes are not needed by this test.
pub(crate) fn name_to_wire(name: &str) -> Vec<u8> {
    let mut w = Vec::new();
    for label in name.split('.').filter(|l| !l.is_empty()) {
        w.push(label.len() as u8);
        w.extend_from_slice(label.as_bytes());
    }
    w.push(0);
    w
}

pub(crate) fn type_name(t: u16) -> String {
    match t {
        AXFR => "AXFR".into(),
        ANY => "ANY".into(),
        _ => match RecordType::from(t) {
            RecordType::Unknown(n) => format!("TYPE{n}"),
            known => known.to_string(),
        },
    }
}

/// A response as compared: the fields that must match, sections as sets.
#[derive(Debug, Clone)]
pub(crate) struct Resp {
    /// RCODE with the OPT record's extended bits.
    pub(crate) rcode: u16,
    pub(crate) aa: bool,
    pub(crate) tc: bool,
    pub(crate) ad: bool,
    /// Whether an OPT record came back, and with DO set.
    pub(crate) edns: bool,
    pub(crate) dnssec_ok: bool,
    /// Answer, authority, additional (OPT excluded).
    pub(crate) sections: [BTreeSet<Rr>; 3],
}

impl Resp {
    pub(crate) fn answer(&self) -> &BTreeSet<Rr> {
        &self.sections[0]
    }
    pub(crate) fn authority(&self) -> &BTreeSet<Rr> {
        &self.sections[1]
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.sections.iter().all(BTreeSet::is_empty)
    }
}

/// One record as compared: equal when owner, type, class, TTL and the RDATA in DNSSEC
/// canonical form (RFC 4034 §6.2) are. Case in RDATA names is not compared (a server that
/// compresses a target against the question sends it in the question's case, RFC 4343 §4).
#[derive(Debug, Clone)]
pub(crate) struct Rr {
    /// Owner, lower-cased, presentation form.
    pub(crate) name: String,
    pub(crate) rtype: u16,
    pub(crate) class: u16,
    pub(crate) ttl: u32,
    /// RDATA in canonical form.
    pub(crate) key: Vec<u8>,
    /// RDATA for people to read.
    pub(crate) rdata: String,
}

impl Rr {
    fn sort_key(&self) -> (&str, u16, u16, u32, &[u8]) {
        (&self.name, self.rtype, self.class, self.ttl, &self.key)
    }

    /// For an RRSIG, the type it covers.
    pub(crate) fn covered(&self) -> Option<u16> {
        (self.rtype == RRSIG && self.key.len() >= 2)
            .then(|| u16::from_be_bytes([self.key[0], self.key[1]]))
    }

    /// The RRset this record belongs to: (owner, type, covered type for RRSIGs).
    pub(crate) fn rrset(&self) -> (String, u16, u16) {
        (self.name.clone(), self.rtype, self.covered().unwrap_or(0))
    }

    /// The same record with another TTL (e.g. 0, to compare without TTLs).
    pub(crate) fn with_ttl(&self, ttl: u32) -> Self {
        Self {
            ttl,
            ..self.clone()
        }
    }

    /// The same record under another owner (a wildcard's expansion).
    pub(crate) fn renamed(&self, owner: &str) -> Self {
        Self {
            name: owner.to_ascii_lowercase(),
            ..self.clone()
        }
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

impl fmt::Display for Rr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {}",
            self.name,
            self.ttl,
            type_name(self.rtype),
            self.rdata
        )
    }
}

/// Parses a response to `q` (id and question checked) with hickory-proto, record by record.
pub(crate) fn parse_response(q: &Q, buf: &[u8]) -> Result<Resp, String> {
    let mut d = BinDecoder::new(buf);
    let h = Header::read(&mut d).map_err(|e| format!("header: {e}"))?;
    if h.metadata.id != q.id {
        return Err(format!("id {} instead of {}", h.metadata.id, q.id));
    }
    for _ in 0..h.counts.queries {
        let qq = Query::read(&mut d).map_err(|e| format!("question: {e}"))?;
        if !qq.name().to_ascii().eq_ignore_ascii_case(&q.name) {
            return Err(format!("question {} echoed for {}", qq.name(), q.name));
        }
    }
    let mut rcode = u16::from(h.metadata.response_code) & 0xf;
    let (mut edns, mut dnssec_ok) = (false, false);
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
                dnssec_ok = r.ttl & 0x8000 != 0;
                continue;
            }
            sections[i].insert(record(&r)?);
        }
    }
    if !d.is_empty() {
        return Err(format!("{} octets after the last record", d.len()));
    }
    Ok(Resp {
        rcode,
        aa: h.metadata.authoritative,
        tc: h.metadata.truncation,
        ad: h.metadata.authentic_data,
        edns,
        dnssec_ok,
        sections,
    })
}

/// One record, normalised.
pub(crate) fn record(r: &Record) -> Result<Rr, String> {
    let rtype = u16::from(r.record_type());
    let key = canonical_rdata(&r.data)?;
    let rdata = match &r.data {
        RData::Update0(_) => "\\# 0".to_string(),
        _ if matches!(rtype, DS | RRSIG | NSEC | DNSKEY | NSEC3 | NSEC3PARAM) => {
            dnssec_rdata(rtype, &key).unwrap_or_else(|| r.data.to_string())
        }
        data => data.to_string(),
    };
    Ok(Rr {
        name: r.name.to_lowercase().to_ascii(),
        rtype,
        class: match r.dns_class {
            DNSClass::OPT(_) => OPT,
            c => u16::from(c),
        },
        ttl: r.ttl,
        key,
        rdata,
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

/// The DNSSEC types field by field (hickory-proto without its DNSSEC features shows them as
/// opaque data): what a person debugging a denial proof needs, the signature cut short.
fn dnssec_rdata(rtype: u16, b: &[u8]) -> Option<String> {
    let u16_at = |i: usize| Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]));
    let u32_at = |i: usize| {
        Some(u32::from_be_bytes([
            *b.get(i)?,
            *b.get(i + 1)?,
            *b.get(i + 2)?,
            *b.get(i + 3)?,
        ]))
    };
    let hex = |s: &[u8]| s.iter().map(|x| format!("{x:02x}")).collect::<String>();
    Some(match rtype {
        DS => format!(
            "{} {} {} {}",
            u16_at(0)?,
            b.get(2)?,
            b.get(3)?,
            hex(b.get(4..)?)
        ),
        DNSKEY => format!(
            "{} {} {} [key tag {}]",
            u16_at(0)?,
            b.get(2)?,
            b.get(3)?,
            key_tag(b)
        ),
        RRSIG => {
            let (signer, used) = wire_name(b.get(18..)?)?;
            format!(
                "{} {} {} {} {} {} {} {signer} [sig {}..]",
                type_name(u16_at(0)?),
                b.get(2)?,
                b.get(3)?,
                u32_at(4)?,
                time(u32_at(8)?),
                time(u32_at(12)?),
                u16_at(16)?,
                hex(b.get(18 + used..(18 + used + 4).min(b.len()))?)
            )
        }
        NSEC => {
            let (next, used) = wire_name(b)?;
            format!("{next} {}", bitmap(b.get(used..)?)?)
        }
        NSEC3 | NSEC3PARAM => {
            let salt_len = *b.get(4)? as usize;
            let salt = b.get(5..5 + salt_len)?;
            let salt = if salt.is_empty() {
                "-".into()
            } else {
                hex(salt)
            };
            let head = format!("{} {} {} {salt}", b[0], b.get(1)?, u16_at(2)?);
            if rtype == NSEC3PARAM {
                head
            } else {
                let at = 5 + salt_len;
                let hash_len = *b.get(at)? as usize;
                let next = base32hex(b.get(at + 1..at + 1 + hash_len)?);
                format!("{head} {next} {}", bitmap(b.get(at + 1 + hash_len..)?)?)
            }
        }
        _ => return None,
    })
}

/// An RRSIG time as RFC 4034 §3.2 prints it (YYYYMMDDHHmmSS), read as 1970-2106.
fn time(t: u32) -> String {
    let (days, secs) = (i64::from(t) / 86400, i64::from(t) % 86400);
    // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// RFC 4034 Appendix B.
fn key_tag(rdata: &[u8]) -> u16 {
    let mut ac: u32 = 0;
    for (i, &x) in rdata.iter().enumerate() {
        ac += if i & 1 == 1 {
            u32::from(x)
        } else {
            u32::from(x) << 8
        };
    }
    ac += (ac >> 16) & 0xffff;
    (ac & 0xffff) as u16
}

/// An uncompressed name and its length.
fn wire_name(b: &[u8]) -> Option<(String, usize)> {
    let mut at = 0;
    let mut s = String::new();
    loop {
        let len = *b.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        let label = b.get(at..at + len)?;
        s.push_str(&String::from_utf8_lossy(label).to_ascii_lowercase());
        s.push('.');
        at += len;
    }
    if s.is_empty() {
        s.push('.');
    }
    Some((s, at))
}

/// An NSEC/NSEC3 type bit map (RFC 4034 §4.1.2) as type names.
fn bitmap(b: &[u8]) -> Option<String> {
    let mut types = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let window = u16::from(*b.get(at)?);
        let len = *b.get(at + 1)? as usize;
        for (i, &byte) in b.get(at + 2..at + 2 + len)?.iter().enumerate() {
            for bit in 0..8 {
                if byte & (0x80 >> bit) != 0 {
                    types.push(type_name((window << 8) | (i * 8 + bit) as u16));
                }
            }
        }
        at += 2 + len;
    }
    Some(types.join(" "))
}

fn base32hex(data: &[u8]) -> String {
    const DIGITS: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let mut out = String::new();
    let (mut buffer, mut bits) = (0u32, 0);
    for &byte in data {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(DIGITS[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(DIGITS[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// One way in which two responses differ.
#[derive(Debug)]
pub(crate) enum Diff {
    /// Only one side answered or parsed: (knot, ours).
    Outcome(String, String),
    Rcode(u16, u16),
    Aa(bool, bool),
    Tc(bool, bool),
    Ad(bool, bool),
    Edns(bool, bool),
    DnssecOk(bool, bool),
    /// Section index, records only Knot sent, records only we sent.
    Section(usize, Vec<Rr>, Vec<Rr>),
}

pub(crate) const SECTION_NAMES: [&str; 3] = ["answer", "authority", "additional"];

impl Diff {
    /// The difference as lines for the report.
    pub(crate) fn lines(&self, other: &str) -> Vec<String> {
        match self {
            Diff::Outcome(k, o) => vec![format!("response: knot {k} / {other} {o}")],
            Diff::Rcode(k, o) => vec![format!(
                "rcode: knot {} / {other} {}",
                rcode_name(*k),
                rcode_name(*o)
            )],
            Diff::Aa(k, o) => vec![format!("AA: knot {k} / {other} {o}")],
            Diff::Tc(k, o) => vec![format!("TC: knot {k} / {other} {o}")],
            Diff::Ad(k, o) => vec![format!("AD: knot {k} / {other} {o}")],
            Diff::Edns(k, o) => vec![format!("EDNS: knot {k} / {other} {o}")],
            Diff::DnssecOk(k, o) => vec![format!("DO in the OPT: knot {k} / {other} {o}")],
            Diff::Section(i, k, o) => {
                let name = SECTION_NAMES[*i];
                let knot = k.iter().map(|rr| format!("{name} only knot: {rr}"));
                knot.chain(o.iter().map(|rr| format!("{name} only {other}: {rr}")))
                    .collect()
            }
        }
    }
}

pub(crate) fn rcode_name(r: u16) -> String {
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

/// One line per response, for verbose logs.
pub(crate) fn show(r: &Result<Resp, String>) -> String {
    match r {
        Err(e) => format!("error: {e}"),
        Ok(r) => {
            let mut s = format!(
                "{}{}{}{}{}",
                rcode_name(r.rcode),
                if r.aa { " aa" } else { "" },
                if r.tc { " tc" } else { "" },
                if r.ad { " ad" } else { "" },
                if r.dnssec_ok { " do" } else { "" }
            );
            for (i, section) in r.sections.iter().enumerate() {
                for rr in section {
                    let _ = write!(s, "\n      {}: {rr}", ["an", "ns", "ar"][i]);
                }
            }
            s
        }
    }
}

/// How `o` differs from Knot's `k`: every header field and section compared.
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
    if k.ad != o.ad {
        diffs.push(Diff::Ad(k.ad, o.ad));
    }
    if k.edns != o.edns {
        diffs.push(Diff::Edns(k.edns, o.edns));
    }
    if k.dnssec_ok != o.dnssec_ok {
        diffs.push(Diff::DnssecOk(k.dnssec_ok, o.dnssec_ok));
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
