//! DNS64 (RFC 6147): the prefix and address formats of RFC 6052 §2.2, AAAA synthesis from A
//! records, exclusions (§5.1.4), the reverse mapping of the prefix (§5.3.1) and
//! `ipv4only.arpa.` (RFC 7050, RFC 8880).
//!
//! Owns: [`Dns64Prefix`] and the pure functions on names and answers. When these run is the
//! engine's (`engine::dns64`). Never: I/O, the cache.

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

use shardns_wire::{Class, Name, NameRef, RType, Rcode, Record};

use crate::local::Prefix;
use crate::reply::{Ede, Resolution};

/// A NAT64 prefix: `/32`, `/40`, `/48`, `/56`, `/64` or `/96` (RFC 6052 §2.2). Bits 64 to
/// 71 (the "u" octet) must be zero for the lengths that use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dns64Prefix {
    addr: [u8; 16],
    len: u8,
}

impl Dns64Prefix {
    /// The well-known prefix `64:ff9b::/96` (RFC 6052 §2.1).
    pub const WELL_KNOWN: Self = Self {
        addr: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        len: 96,
    };

    /// The IPv6 address embedding `v4` (RFC 6052 §2.2: the IPv4 octets around the u octet).
    pub fn synthesize(&self, v4: [u8; 4]) -> [u8; 16] {
        let mut a = self.addr;
        let mut at = usize::from(self.len / 8);
        for b in v4 {
            if at == 8 {
                at = 9; // the u octet stays zero
            }
            a[at] = b;
            at += 1;
        }
        a
    }

    /// The prefix with `suffix` (BIND's `suffix`) in the bits after the embedded IPv4
    /// address; those before (prefix, IPv4 address, u octet) must be zero in `suffix`.
    pub fn with_suffix(self, suffix: Ipv6Addr) -> Result<Self, String> {
        let from = self.suffix_start();
        let s = suffix.octets();
        if s[..from].iter().any(|&b| b != 0) {
            return Err(format!(
                "suffix {suffix} overlaps the prefix or the IPv4 address (its first {} bits must be zero)",
                from * 8
            ));
        }
        let mut out = self;
        out.addr[from..].copy_from_slice(&s[from..]);
        Ok(out)
    }

    /// The first octet after the embedded IPv4 address (and the u octet it may span).
    fn suffix_start(&self) -> usize {
        let n = usize::from(self.len / 8) + 4;
        if self.len <= 64 {
            n + 1
        } else {
            n
        }
    }

    /// The IPv4 address embedded in `v6`, if `v6` is under the prefix.
    pub fn extract(&self, v6: [u8; 16]) -> Option<[u8; 4]> {
        let n = usize::from(self.len / 8);
        if v6[..n] != self.addr[..n] {
            return None;
        }
        let mut out = [0; 4];
        let mut at = n;
        for o in &mut out {
            if at == 8 {
                at = 9;
            }
            *o = v6[at];
            at += 1;
        }
        Some(out)
    }
}

impl Default for Dns64Prefix {
    fn default() -> Self {
        Self::WELL_KNOWN
    }
}

impl fmt::Display for Dns64Prefix {
    /// `ADDR/LEN`, without the suffix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut a = [0; 16];
        let n = usize::from(self.len / 8);
        a[..n].copy_from_slice(&self.addr[..n]);
        write!(f, "{}/{}", Ipv6Addr::from(a), self.len)
    }
}

impl FromStr for Dns64Prefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, len) = s
            .split_once('/')
            .ok_or_else(|| format!("expected ADDR/LEN, got {s:?}"))?;
        let addr: Ipv6Addr = a.parse().map_err(|e| format!("bad address {a:?}: {e}"))?;
        let len: u8 = len
            .parse()
            .map_err(|e| format!("bad length {len:?}: {e}"))?;
        if ![32, 40, 48, 56, 64, 96].contains(&len) {
            return Err(format!(
                "prefix length {len}: RFC 6052 allows 32, 40, 48, 56, 64, 96"
            ));
        }
        let mut addr = addr.octets();
        if len < 96 && addr[8] != 0 {
            return Err("bits 64 to 71 of the prefix must be zero (RFC 6052 §2.2)".into());
        }
        for b in &mut addr[usize::from(len / 8)..] {
            *b = 0;
        }
        Ok(Self { addr, len })
    }
}

/// An IPv6 range (`ADDR/LEN`) whose AAAA records DNS64 ignores (`dns64_exclude`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Range {
    /// The first address.
    pub addr: Ipv6Addr,
    /// Prefix length, 0 to 128.
    pub len: u8,
}

impl Ipv6Range {
    /// True if `a` is in the range.
    pub fn contains(&self, a: [u8; 16]) -> bool {
        let bits = u32::from(self.len.min(128));
        let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
        u128::from_be_bytes(a) & mask == u128::from(self.addr) & mask
    }
}

impl FromStr for Ipv6Range {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, len) = s.split_once('/').unwrap_or((s, "128"));
        let addr = a.parse().map_err(|e| format!("bad address {a:?}: {e}"))?;
        let len: u8 = len
            .parse()
            .map_err(|e| format!("bad length {len:?}: {e}"))?;
        if len > 128 {
            return Err(format!("prefix length {len} over 128"));
        }
        Ok(Self { addr, len })
    }
}

/// The rest of BIND's and Unbound's DNS64 options: who gets DNS64 and what is synthesized.
#[derive(Clone, Debug)]
pub struct Dns64Options {
    /// Clients that get DNS64 (BIND's `clients`); `None`: every client.
    pub clients: Option<Vec<Prefix>>,
    /// DNS64 only for queries with RD (BIND's `recursive-only`).
    pub recursive_only: bool,
    /// IPv4 addresses that are mapped (BIND's `mapped`); `None`: every one. A records
    /// outside are left out of the synthesized answer.
    pub mapped: Option<Vec<Prefix>>,
    /// Synthesize for a client that set DO even when the AAAA denial is signed (BIND's
    /// `break-dnssec`). On by default, as RFC 6147 §5.5 and Unbound do; BIND's default is
    /// off.
    pub break_dnssec: bool,
    /// Synthesize for every AAAA question, real AAAA records or not (Unbound's
    /// `dns64-synthall`).
    pub synthall: bool,
    /// Names (and the names below them) whose AAAA records are ignored, as though excluded
    /// (Unbound's `dns64-ignore-aaaa`).
    pub ignore_aaaa: Vec<Name>,
}

impl Default for Dns64Options {
    fn default() -> Self {
        Self {
            clients: None,
            recursive_only: false,
            mapped: None,
            break_dnssec: true,
            synthall: false,
            ignore_aaaa: Vec::new(),
        }
    }
}

impl Dns64Options {
    /// DNS64 applies to a query from `client` (RD bit `rd`).
    pub fn applies(&self, client: Option<std::net::IpAddr>, rd: bool) -> bool {
        if self.recursive_only && !rd {
            return false;
        }
        match (&self.clients, client) {
            (None, _) => true,
            (Some(list), Some(ip)) => list.iter().any(|p| p.contains(ip)),
            (Some(_), None) => false,
        }
    }

    /// Every AAAA record of `qname` is to be ignored.
    fn ignores(&self, qname: NameRef<'_>) -> bool {
        self.synthall
            || self
                .ignore_aaaa
                .iter()
                .any(|n| qname.ends_with(&n.as_ref()))
    }

    fn maps(&self, v4: [u8; 4]) -> bool {
        self.mapped
            .as_ref()
            .is_none_or(|list| list.iter().any(|p| p.contains(std::net::IpAddr::from(v4))))
    }
}

/// RFC 6147 §5.1.4's default exclusion: IPv4-mapped addresses.
pub(crate) fn default_exclusions() -> Vec<Ipv6Range> {
    vec![Ipv6Range {
        addr: Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0),
        len: 96,
    }]
}

/// `ipv4only.arpa.` (RFC 7050 §2.2) and its two addresses (RFC 8880 §7.2).
pub(crate) const IPV4ONLY: &[u8] = b"\x08ipv4only\x04arpa\x00";
pub(crate) const IPV4ONLY_ADDRS: [[u8; 4]; 2] = [[192, 0, 0, 170], [192, 0, 0, 171]];
/// TTL of the local `ipv4only.arpa.` answers.
const IPV4ONLY_TTL: u32 = 86_400;

/// The local answer to a question at `ipv4only.arpa.`: its A records, synthesized AAAA
/// records from them, or NODATA for other types.
pub(crate) fn ipv4only_answer(prefix: &Dns64Prefix, qtype: RType) -> Resolution {
    let owner = NameRef::from_validated(IPV4ONLY).to_name();
    let mut out = Resolution::empty(Rcode::NOERROR);
    for v4 in IPV4ONLY_ADDRS {
        let rdata = match qtype {
            RType::A => v4.to_vec(),
            RType::AAAA => prefix.synthesize(v4).to_vec(),
            _ => continue,
        };
        out.answers
            .push(rr(owner.clone(), qtype, IPV4ONLY_TTL, rdata));
    }
    out
}

fn rr(owner: Name, rtype: RType, ttl: u32, rdata: Vec<u8>) -> Record {
    Record {
        owner,
        rtype,
        class: Class::IN,
        ttl,
        rdata,
    }
}

/// The in-addr.arpa name for a PTR question at an ip6.arpa name of an address under the
/// prefix (RFC 6147 §5.3.1), or `None`.
pub(crate) fn ptr_target(prefix: &Dns64Prefix, qname: NameRef<'_>) -> Option<Name> {
    let mut nibbles = [0u8; 32];
    let mut labels = qname.labels();
    for i in (0..32).rev() {
        let l = labels.next()?;
        let [c] = l else { return None };
        nibbles[i] = (*c as char).to_digit(16)? as u8;
    }
    let (ip6, arpa) = (labels.next()?, labels.next()?);
    if !ip6.eq_ignore_ascii_case(b"ip6") || !arpa.eq_ignore_ascii_case(b"arpa") {
        return None;
    }
    if labels.next().is_some() {
        return None;
    }
    let mut v6 = [0u8; 16];
    for (i, b) in v6.iter_mut().enumerate() {
        *b = nibbles[2 * i] << 4 | nibbles[2 * i + 1];
    }
    let [a, b, c, d] = prefix.extract(v6)?;
    format!("{d}.{c}.{b}.{a}.in-addr.arpa.").parse().ok()
}

/// The name an answer ends at: the last CNAME's target, or `qname`.
pub(crate) fn final_name(qname: NameRef<'_>, answer: &Resolution) -> Name {
    answer
        .answers
        .iter()
        .rev()
        .find(|r| r.rtype == RType::CNAME)
        .and_then(|r| NameRef::from_wire(&r.rdata).ok())
        .map_or_else(|| qname.to_name(), |n| n.to_name())
}

/// Drops the AAAA records in excluded ranges (RFC 6147 §5.1.4), and all of them for a name
/// of `dns64_ignore_aaaa` or with `synthall`; true if the answer is then one to synthesize
/// for: NOERROR without AAAA records, or a failure that is not a DNSSEC verdict (§5.1.2
/// treats other rcodes as an empty answer; §5.5: bogus data is never covered up). NXDOMAIN
/// is not (§5.1.2). `dnssec_ok`: the client set DO; a signed denial is then left alone
/// unless `break_dnssec` (BIND's rule).
pub(crate) fn wants_synthesis(
    answer: &mut Resolution,
    qname: NameRef<'_>,
    exclude: &[Ipv6Range],
    options: &Dns64Options,
    dnssec_ok: bool,
) -> bool {
    let all = options.ignores(qname);
    answer.answers.retain(|r| {
        r.rtype != RType::AAAA
            || (!all
                && <[u8; 16]>::try_from(&r.rdata[..])
                    .map_or(true, |a| !exclude.iter().any(|x| x.contains(a))))
    });
    let signed = answer.secure || !answer.dnssec_authority.is_empty();
    if dnssec_ok && signed && !options.break_dnssec && answer.rcode == Rcode::NOERROR {
        return false;
    }
    match answer.rcode {
        Rcode::NOERROR => !answer.answers.iter().any(|r| r.rtype == RType::AAAA),
        Rcode::SERVFAIL => !answer.ede.is_some_and(|e| (1..=12).contains(&e.code)),
        _ => false,
    }
}

/// The synthesized answer: the AAAA answer's CNAME chain, then one AAAA per A record of
/// `a` that `options` maps, with the TTL the lesser of the A record's and the AAAA denial's
/// SOA (or 600 s without one, RFC 6147 §5.1.7). Not secure (no AD, RFC 6147 §5.5); stale
/// (EDE 3, RFC 8767) if either answer was. `None` if `a` has no mapped A records: the AAAA
/// answer stands.
pub(crate) fn synthesize(
    prefix: &Dns64Prefix,
    options: &Dns64Options,
    aaaa: &Resolution,
    a: &Resolution,
) -> Option<Resolution> {
    let v4s = || {
        a.answers
            .iter()
            .filter(|r| r.rtype == RType::A)
            .filter_map(|r| Some((r, <[u8; 4]>::try_from(&r.rdata[..]).ok()?)))
            .filter(|(_, v4)| options.maps(*v4))
    };
    if a.rcode != Rcode::NOERROR || v4s().next().is_none() {
        return None;
    }
    let cap = aaaa
        .authority
        .iter()
        .find(|r| r.rtype == RType::SOA)
        .map_or(600, |r| r.ttl);
    let mut out = Resolution::empty(Rcode::NOERROR);
    out.answers.extend(
        aaaa.answers
            .iter()
            .filter(|r| r.rtype != RType::AAAA)
            .cloned(),
    );
    for (r, v4) in v4s() {
        let v6 = prefix.synthesize(v4).to_vec();
        out.answers
            .push(rr(r.owner.clone(), RType::AAAA, r.ttl.min(cap), v6));
    }
    out.ede = [a.ede, aaaa.ede]
        .into_iter()
        .flatten()
        .find(|e| e.code == Ede::STALE_ANSWER);
    Some(out)
}
