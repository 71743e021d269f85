//! Who may update what in a zone (issue 28): the zone's update [`Policy`] (its grants and
//! its [`Limits`]), the policy's text form (the config file's lines, BIND-like), and the
//! checks [`super::update_as`] makes with it. No I/O: the caller verifies the TSIG
//! signature and says who sent the update ([`Requester`]).
//!
//! Semantics, and why:
//!
//! - Each record of the update section is judged on its own (BIND's way: each RR against
//!   `update-policy`); Knot instead needs one ACL rule to cover every record of the
//!   message, so an update mixing records of two grants is refused there. A delete of every
//!   RRset of a name (type ANY) is judged type by type, for each type the zone holds there
//!   (BIND's `ssu_checkall`).
//! - First match: the grants are read in order and the first whose requester, name and
//!   type all match decides, a `deny` refusing. Both BIND's `update-policy` and Knot's
//!   `acl` (with `deny: on`) work so, so their configurations translate line by line;
//!   `deny` carves exceptions out of a broad grant (`deny KEY name _dmarc TXT` before
//!   `grant KEY zone TXT`). A record no grant matches is refused: nothing is allowed by
//!   default, and an unsigned request is refused unless an address grant names it.
//! - A refusal is REFUSED (RFC 2136 §3.3), its log line naming the record and the grant
//!   that denied it or the requester that has none. A bad signature never reaches here: it
//!   is the caller's NOTAUTH with the TSIG error (RFC 8945 §5.2).

use super::{refuse, Refusal};
use shardns_wire::message::Header;
use shardns_wire::{Name, NameRef, RType, Rcode};
use std::fmt;
use std::net::IpAddr;

/// Who sent an update: the key whose TSIG signature the caller verified (none for an
/// unsigned request) and the source address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requester<'a> {
    /// The verified key's name.
    pub key: Option<NameRef<'a>>,
    /// Where the request came from.
    pub addr: IpAddr,
}

impl fmt::Display for Requester<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key {
            Some(k) => write!(f, "key {k} from {}", self.addr),
            None => write!(f, "unsigned from {}", self.addr),
        }
    }
}

/// Whom a grant is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// Requests signed with this key.
    Key(Name),
    /// Requests from this address prefix (address, prefix length), signed or not: for
    /// those who insist (Knot's acl takes `address`; BIND's `update-policy` takes no
    /// addresses, only the all-or-nothing `allow-update`). An IPv4-mapped IPv6 source is
    /// matched as the IPv4 address it carries.
    Prefix(IpAddr, u8),
}

impl Who {
    fn matches(&self, r: &Requester<'_>) -> bool {
        match self {
            Self::Key(k) => r.key.is_some_and(|rk| rk.eq_ci(&k.as_ref())),
            Self::Prefix(net, len) => in_prefix(r.addr, *net, *len),
        }
    }
}

/// Whether `addr` is in `net/len`.
fn in_prefix(addr: IpAddr, net: IpAddr, len: u8) -> bool {
    match (addr.to_canonical(), net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(len.min(32)))
                .unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(len.min(128)))
                .unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Which owner names a grant covers (all absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    /// This name only (BIND `name`; Knot `update-owner-match: equal`).
    Exact(Name),
    /// This name and every name below it (BIND `subdomain` and Knot's default
    /// `sub-or-equal` both include the name itself; for the names below only, use the
    /// wildcard `*.NAME`, BIND's `wildcard`, Knot's `sub`).
    Subdomain(Name),
    /// A pattern of `*` labels and literal ones. A leading `*` stands for one label or
    /// more (BIND `wildcard`: `*.example.` covers every name below `example.`, not
    /// `example.` itself); any other `*` for exactly one (Knot's `pattern`:
    /// `_acme-challenge.*.example.` covers `_acme-challenge.www.example.` only).
    Wildcard(Name),
    /// The key's own name (BIND `self`; Knot `update-owner: key` with `equal`): a host
    /// with a key of its name updates its own records. Never an unsigned request.
    SelfKey,
    /// Every name of the zone (BIND `zonesub`; Knot `update-owner: zone`).
    Zone,
}

impl Names {
    fn matches(&self, owner: NameRef<'_>, key: Option<NameRef<'_>>) -> bool {
        match self {
            Self::Exact(n) => owner.eq_ci(&n.as_ref()),
            Self::Subdomain(n) => owner.ends_with(&n.as_ref()),
            Self::Wildcard(p) => pattern_matches(p.as_ref(), owner),
            Self::SelfKey => key.is_some_and(|k| owner.eq_ci(&k)),
            // The prescan has checked that every owner is in the zone.
            Self::Zone => true,
        }
    }
}

/// Whether `name` matches the wildcard `pattern` (see [`Names::Wildcard`]).
fn pattern_matches(pattern: NameRef<'_>, name: NameRef<'_>) -> bool {
    let pat: Vec<&[u8]> = pattern.labels().collect();
    let labels: Vec<&[u8]> = name.labels().collect();
    let (fixed, enough) = match pat.split_first() {
        Some((first, rest)) if *first == b"*" => (rest, labels.len() > rest.len()),
        _ => (&pat[..], labels.len() == pat.len()),
    };
    enough
        && fixed
            .iter()
            .rev()
            .zip(labels.iter().rev())
            .all(|(p, l)| *p == b"*" || p.eq_ignore_ascii_case(l))
}

/// Which types a grant covers. Never a meta type: an update's records are data (the
/// prescan refuses the rest), and the ANY of a delete-all is judged type by type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Types {
    /// Every type (SOA and NS included, as BIND's explicit `ANY`).
    Any,
    /// These types.
    Set(Vec<RType>),
}

impl Types {
    fn matches(&self, t: RType) -> bool {
        !t.is_meta()
            && match self {
                Self::Any => true,
                Self::Set(set) => set.contains(&t),
            }
    }
}

/// One line of a policy: whether it grants or denies, to whom, which names, which types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// A `deny` line: the records it matches are refused.
    pub deny: bool,
    /// Whom it is for.
    pub who: Who,
    /// The owner names it covers.
    pub names: Names,
    /// The types it covers.
    pub types: Types,
}

impl Grant {
    /// What `--update-key` gives its key in each zone given with `--zone`: every name,
    /// every type.
    pub fn whole_zone(key: Name) -> Self {
        Self {
            deny: false,
            who: Who::Key(key),
            names: Names::Zone,
            types: Types::Any,
        }
    }

    fn covers(&self, r: &Requester<'_>, owner: NameRef<'_>, rtype: RType) -> bool {
        self.who.matches(r) && self.names.matches(owner, r.key) && self.types.matches(rtype)
    }
}

/// Bounds on one update message, checked before it is read.
///
/// Over them the update is REFUSED: the message is well formed (not FORMERR), and the
/// bound is ours, not a failure (not SERVFAIL, which tells a client to try elsewhere). Knot
/// answers REFUSED to an update that would pass its `zone-max-size`; BIND answers SERVFAIL
/// to one that would pass `max-records` ("records in zone (4) exceeds max-records (3)"),
/// and neither bounds the message itself beyond the 65535 octets TCP carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most prerequisite and update records together (each costs a zone lookup).
    pub max_records: usize,
    /// Most octets of the message, TSIG included.
    pub max_octets: usize,
}

impl Default for Limits {
    /// A thousand records: a DS push or an ACME challenge is a few, and a batch from
    /// nsupdate fits, while one message's work (and journal entry) stays bounded. Octets:
    /// what TCP can carry.
    fn default() -> Self {
        Self {
            max_records: 1000,
            max_octets: 65535,
        }
    }
}

/// A zone's update policy: its grants, in order, and its limits. The default grants
/// nothing: TSIG (or an address grant) is required.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// The grants, first match first.
    pub grants: Vec<Grant>,
    /// The limits on one message.
    pub limits: Limits,
}

impl Policy {
    /// Whether some `grant` line is for `r`: if none is, the request is refused before the
    /// message is read (BIND bails out so too), so that a requester with no rights learns
    /// nothing from the prerequisites' answers.
    pub fn admits(&self, r: &Requester<'_>) -> bool {
        self.grants.iter().any(|g| !g.deny && g.who.matches(r))
    }

    /// Checks the message against the [`Limits`] from its size and header counts alone (a
    /// header that does not parse is left to the reader's FORMERR).
    pub fn check_size(&self, msg: &[u8]) -> Result<(), Refusal> {
        if msg.len() > self.limits.max_octets {
            return Err(refuse(
                Rcode::REFUSED,
                format!(
                    "the update is {} octets, more than max-octets {}",
                    msg.len(),
                    self.limits.max_octets
                ),
            ));
        }
        if let Ok(h) = Header::parse(msg) {
            let records = usize::from(h.ancount) + usize::from(h.nscount);
            if records > self.limits.max_records {
                return Err(refuse(
                    Rcode::REFUSED,
                    format!(
                        "the update holds {records} records, more than max-records {}",
                        self.limits.max_records
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether `r` may change the `rtype` records of `owner`: the first grant that covers
    /// them decides.
    pub fn check_record(
        &self,
        r: &Requester<'_>,
        owner: NameRef<'_>,
        rtype: RType,
    ) -> Result<(), Refusal> {
        match self.grants.iter().find(|g| g.covers(r, owner, rtype)) {
            Some(g) if !g.deny => Ok(()),
            Some(g) => Err(refuse(
                Rcode::REFUSED,
                format!("{owner} {rtype}: {r} is denied by `{g}`"),
            )),
            None => Err(refuse(
                Rcode::REFUSED,
                format!("{owner} {rtype}: no grant for {r}"),
            )),
        }
    }

    /// Reads the text form, one line a grant or limit, for the zone `apex` (names without
    /// a trailing dot are relative to it, `@` is the apex):
    ///
    /// ```text
    /// # comments start with # or ; (so BIND's trailing ; is taken)
    /// grant acme.example. wildcard _acme-challenge.* TXT
    /// deny  admin.example. name _dmarc TXT
    /// grant admin.example. zone ANY
    /// grant host1.example. self A AAAA
    /// grant 192.0.2.0/24 subdomain dyn A AAAA
    /// max-records 100
    /// max-octets 16384
    /// ```
    ///
    /// `grant|deny WHO MATCH [NAME] TYPE...`: WHO is a key name (absolute: key names are
    /// not the zone's), or an address or address prefix; MATCH is `name`, `subdomain`,
    /// `wildcard` (with a NAME), `self` or `zone` (also `zonesub`); the types are
    /// mnemonics or `TYPEnnn`, or `ANY` alone (required: BIND reads a rule without types as
    /// every type but SOA, NS and RRSIG, an implicit set best written out). A WHO that reads
    /// as an address is one. Errors name the line.
    pub fn parse(text: &str, apex: NameRef<'_>) -> Result<Self, String> {
        let mut policy = Self::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.split(['#', ';']).next().unwrap_or("").trim();
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = |e: String| format!("line {}: {e}", i + 1);
            let Some(first) = words.first() else {
                continue;
            };
            let number = || match words[1..] {
                [n] => n
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| at(format!("{first}: {n:?} is not a positive number"))),
                _ => Err(at(format!("{first} takes one number"))),
            };
            match first.to_ascii_lowercase().as_str() {
                "grant" | "deny" => policy.grants.push(Grant::parse(line, apex).map_err(at)?),
                "max-records" => policy.limits.max_records = number()?,
                "max-octets" => policy.limits.max_octets = number()?,
                _ => {
                    return Err(at(format!(
                        "{first:?}: expected grant, deny, max-records or max-octets"
                    )))
                }
            }
        }
        Ok(policy)
    }
}

impl Grant {
    /// Reads one `grant` or `deny` line (see [`Policy::parse`]), comment removed.
    pub fn parse(line: &str, apex: NameRef<'_>) -> Result<Self, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let deny = match words.first().map(|w| w.to_ascii_lowercase()).as_deref() {
            Some("grant") => false,
            Some("deny") => true,
            _ => return Err(format!("{line:?}: a grant starts with grant or deny")),
        };
        let (Some(who), Some(kind)) = (words.get(1), words.get(2)) else {
            return Err("expected grant|deny WHO MATCH [NAME] TYPE...".into());
        };
        let who = parse_who(who)?;
        let name = |i: usize| -> Result<Name, String> {
            let text = words.get(i).ok_or_else(|| format!("{kind} needs a name"))?;
            let name = if *text == "@" {
                Ok(apex.to_name())
            } else {
                Name::from_text(text, Some(apex))
            }
            .map_err(|e| format!("bad name {text:?}: {e}"))?;
            if !name.as_ref().ends_with(&apex) {
                return Err(format!("{name} is outside the zone {apex}"));
            }
            Ok(name)
        };
        let (names, rest) = match kind.to_ascii_lowercase().as_str() {
            "name" => (Names::Exact(name(3)?), 4),
            "subdomain" => (Names::Subdomain(name(3)?), 4),
            "wildcard" => {
                let p = name(3)?;
                if !p.as_ref().labels().any(|l| l == b"*") {
                    return Err(format!("wildcard {p} has no * label (use name)"));
                }
                (Names::Wildcard(p), 4)
            }
            "self" if matches!(who, Who::Prefix(..)) => {
                return Err("self needs a key, not an address".into());
            }
            "self" => (Names::SelfKey, 3),
            "zone" | "zonesub" => (Names::Zone, 3),
            _ => {
                return Err(format!(
                    "{kind:?}: expected name, subdomain, wildcard, self or zone"
                ))
            }
        };
        Ok(Self {
            deny,
            who,
            names,
            types: parse_types(&words[rest..])?,
        })
    }
}

/// A key name, or an address or address prefix (an address alone is a host's prefix).
fn parse_who(text: &str) -> Result<Who, String> {
    let bad = |why: String| format!("{text:?}: {why}");
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (
            a.parse::<IpAddr>()
                .map_err(|_| bad("not an address prefix".into()))?,
            Some(
                l.parse::<u8>()
                    .map_err(|_| bad("bad prefix length".into()))?,
            ),
        ),
        None => match text.parse::<IpAddr>() {
            Ok(a) => (a, None),
            Err(_) => {
                return text
                    .parse::<Name>()
                    .map(Who::Key)
                    .map_err(|e| bad(format!("not a key name: {e}")))
            }
        },
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = len.unwrap_or(max);
    if len > max {
        return Err(bad(format!("prefix longer than {max}")));
    }
    if mask(addr, len) != addr {
        return Err(bad(format!(
            "bits set past the prefix (the network is {}/{len})",
            mask(addr, len)
        )));
    }
    Ok(Who::Prefix(addr, len))
}

/// `addr` with the bits past `len` cleared.
fn mask(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            IpAddr::from((u32::from(a) & m).to_be_bytes())
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            IpAddr::from((u128::from(a) & m).to_be_bytes())
        }
    }
}

/// `ANY` alone, or a list of data types.
fn parse_types(words: &[&str]) -> Result<Types, String> {
    if words.is_empty() {
        return Err("no types: list them, or ANY".into());
    }
    if words.iter().any(|w| w.eq_ignore_ascii_case("ANY")) {
        return match words {
            [_] => Ok(Types::Any),
            _ => Err("ANY stands alone".into()),
        };
    }
    let mut set = Vec::new();
    for w in words {
        let t = RType::from_text(w).ok_or_else(|| format!("{w:?}: not a type"))?;
        if t.is_meta() {
            return Err(format!("{t} is a meta type, not data"));
        }
        if matches!(t, RType::RRSIG | RType::NSEC | RType::NSEC3) {
            return Err(format!(
                "{t} records are the signer's: no update changes them"
            ));
        }
        if !set.contains(&t) {
            set.push(t);
        }
    }
    Ok(Types::Set(set))
}

impl fmt::Display for Grant {
    /// The text form, as [`Grant::parse`] reads it (names absolute).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.deny { "deny " } else { "grant " })?;
        match &self.who {
            Who::Key(k) => write!(f, "{k} ")?,
            Who::Prefix(a, l) => write!(f, "{a}/{l} ")?,
        }
        match &self.names {
            Names::Exact(n) => write!(f, "name {n}")?,
            Names::Subdomain(n) => write!(f, "subdomain {n}")?,
            Names::Wildcard(n) => write!(f, "wildcard {n}")?,
            Names::SelfKey => f.write_str("self")?,
            Names::Zone => f.write_str("zone")?,
        }
        match &self.types {
            Types::Any => f.write_str(" ANY"),
            Types::Set(set) => set.iter().try_for_each(|t| write!(f, " {t}")),
        }
    }
}

#[cfg(test)]
mod tests;
