//! The fields of an entry, token by token: domain names, TTLs, types and classes.

use super::lex::show;
use shardns_wire::name::NameBuf;
use shardns_wire::{Class, NameRef, RType};

/// Largest TTL (RFC 2181 §8).
const MAX_TTL: u64 = (1 << 31) - 1;

/// Parses a domain name token (`@` is the origin).
pub(super) fn parse_name(t: &[u8], origin: NameRef<'_>) -> Result<NameBuf, String> {
    let mut n = NameBuf::new();
    parse_name_into(t, origin, &mut n)?;
    Ok(n)
}

/// [`parse_name`] into a caller's buffer.
pub(super) fn parse_name_into(
    t: &[u8],
    origin: NameRef<'_>,
    n: &mut NameBuf,
) -> Result<(), String> {
    if t == b"@" {
        n.set(origin);
        return Ok(());
    }
    n.parse_text(t, Some(origin))
        .map_err(|e| format!("bad domain name \"{}\": {e}", show(t)))
}

/// Parses a TTL: seconds, or numbers with units `s m h d w` in any case (`1h30m`, `2W`).
pub(super) fn parse_ttl(t: &[u8]) -> Result<u32, String> {
    let bad = || format!("bad TTL \"{}\"", show(t));
    let range = || {
        format!(
            "TTL \"{}\" out of range (at most {MAX_TTL} seconds)",
            show(t)
        )
    };
    let mut total: u64 = 0;
    let mut num: u64 = 0;
    let mut digits = false;
    let mut units = false;
    if t.is_empty() {
        return Err(bad());
    }
    for &c in t {
        if c.is_ascii_digit() {
            num = num * 10 + u64::from(c - b'0');
            if num > MAX_TTL {
                return Err(range());
            }
            digits = true;
            continue;
        }
        let unit = match c | 0x20 {
            b's' => 1,
            b'm' => 60,
            b'h' => 3600,
            b'd' => 86400,
            b'w' => 604800,
            _ => return Err(bad()),
        };
        if !digits {
            return Err(bad());
        }
        total += num * unit;
        if total > MAX_TTL {
            return Err(range());
        }
        num = 0;
        digits = false;
        units = true;
    }
    if digits && units {
        // `1h30`: after a unit, every number needs one too.
        return Err(bad());
    }
    total += num;
    if total > MAX_TTL {
        return Err(range());
    }
    Ok(total as u32)
}

/// The type named by a token: a fast path for the common mnemonics, then the full table.
pub(super) fn rtype_of(t: &[u8]) -> Option<RType> {
    let mut up = [0u8; 10];
    if t.len() <= up.len() {
        for (u, &c) in up.iter_mut().zip(t) {
            *u = c.to_ascii_uppercase();
        }
        let fast = match &up[..t.len()] {
            b"A" => Some(RType::A),
            b"AAAA" => Some(RType::AAAA),
            b"TXT" => Some(RType::TXT),
            b"NS" => Some(RType::NS),
            b"MX" => Some(RType::MX),
            b"CNAME" => Some(RType::CNAME),
            b"PTR" => Some(RType::PTR),
            b"SOA" => Some(RType::SOA),
            b"SRV" => Some(RType::SRV),
            b"DS" => Some(RType::DS),
            b"RRSIG" => Some(RType::RRSIG),
            b"NSEC" => Some(RType::NSEC),
            b"DNSKEY" => Some(RType::DNSKEY),
            _ => None,
        };
        if fast.is_some() {
            return fast;
        }
    }
    RType::from_text(core::str::from_utf8(t).ok()?)
}

/// Whether a token is a class: `Some(Ok)` for IN, `Some(Err)` for another class.
pub(super) fn class_of(t: &[u8]) -> Option<Result<Class, Class>> {
    if t.eq_ignore_ascii_case(b"IN") {
        return Some(Ok(Class::IN));
    }
    let c = Class::from_text(core::str::from_utf8(t).ok()?)?;
    Some(if c == Class::IN { Ok(c) } else { Err(c) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_units_and_range() {
        assert_eq!(parse_ttl(b"3600"), Ok(3600));
        assert_eq!(parse_ttl(b"1h30m"), Ok(5400));
        assert_eq!(parse_ttl(b"1H30M"), Ok(5400));
        assert_eq!(parse_ttl(b"2w"), Ok(1_209_600));
        assert_eq!(parse_ttl(b"1d"), Ok(86400));
        assert_eq!(parse_ttl(b"1d2h3m4s"), Ok(86400 + 7200 + 180 + 4));
        assert_eq!(parse_ttl(b"0"), Ok(0));
        assert_eq!(parse_ttl(b"2147483647"), Ok(2_147_483_647));
        assert!(parse_ttl(b"2147483648")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_ttl(b"99999999999999999999")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_ttl(b"4000w").unwrap_err().contains("out of range"));
        assert_eq!(parse_ttl(b"9x").unwrap_err(), "bad TTL \"9x\"");
        assert!(parse_ttl(b"h").is_err());
        assert!(parse_ttl(b"1hh").is_err());
        assert!(parse_ttl(b"1h30").is_err());
        assert!(parse_ttl(b"0h30").is_err());
        assert!(parse_ttl(b"").is_err());
    }

    #[test]
    fn type_and_class_tokens() {
        assert_eq!(rtype_of(b"aaaa"), Some(RType::AAAA));
        assert_eq!(rtype_of(b"TYPE65280"), Some(RType(65280)));
        assert_eq!(rtype_of(b"NSEC3PARAM"), Some(RType::NSEC3PARAM));
        assert_eq!(rtype_of(b"AAAAA"), None);
        assert_eq!(rtype_of(b"\xff"), None);
        assert_eq!(class_of(b"in"), Some(Ok(Class::IN)));
        assert_eq!(class_of(b"CLASS1"), Some(Ok(Class::IN)));
        assert_eq!(class_of(b"CH"), Some(Err(Class::CH)));
        assert_eq!(class_of(b"A"), None);
    }
}
