//! Helpers for the unit tests: rdata and records from presentation format.

use shardns_wire::text::Token;
use shardns_wire::{rdata, Class, Name, NameRef, RType, Record};

/// Rdata of `rtype` from its presentation form (no quoted strings), absolute names.
pub(crate) fn rd(rtype: RType, text: &str) -> Vec<u8> {
    let tokens: Vec<Token<'_>> = text
        .split_ascii_whitespace()
        .map(|t| Token::plain(t.as_bytes()))
        .collect();
    let mut out = Vec::new();
    rdata::from_text(rtype, &tokens, NameRef::ROOT, &mut out)
        .unwrap_or_else(|e| panic!("{rtype} {text}: {e}"));
    out
}

/// A name from text.
pub(crate) fn name(s: &str) -> Name {
    s.parse().unwrap()
}

/// One record from `owner ttl TYPE rdata` (class IN), names relative to `origin`.
pub(crate) fn rec(line: &str, origin: &str) -> Record {
    let mut parts = line.split_ascii_whitespace();
    let owner = parts.next().unwrap();
    let origin = name(origin);
    let owner = if owner == "@" {
        origin.clone()
    } else {
        Name::from_text(owner, Some(origin.as_ref())).unwrap()
    };
    let ttl: u32 = parts.next().unwrap().parse().unwrap();
    let rtype = RType::from_text(parts.next().unwrap()).unwrap();
    let rest: Vec<&str> = parts.collect();
    let tokens: Vec<Token<'_>> = rest.iter().map(|t| Token::plain(t.as_bytes())).collect();
    let mut rdata = Vec::new();
    rdata::from_text(rtype, &tokens, origin.as_ref(), &mut rdata)
        .unwrap_or_else(|e| panic!("{line}: {e}"));
    Record {
        owner,
        rtype,
        class: Class::IN,
        ttl,
        rdata,
    }
}
