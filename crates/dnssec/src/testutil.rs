//! Helpers for the unit tests: rdata and records from presentation format.

use shardns_wire::text::Token;
use shardns_wire::{rdata, Name, NameRef, RType};

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
