//! Presentation format to wire form, field by field.

use super::{addr, bitmap, svcb, time, Field};
use crate::error::Error;
use crate::name::{NameBuf, NameRef};
use crate::text::{self, number, Shown, Token};
use crate::types::RType;

/// Parses `tokens` as the fields of `rtype`, appending the wire form to `out`.
pub(super) fn fields(
    rtype: RType,
    fields: &[Field],
    tokens: &[Token<'_>],
    origin: NameRef<'_>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut i = 0;
    for &field in fields {
        let rest = &tokens[i.min(tokens.len())..];
        let missing = || Error::text(format_args!("{rtype} rdata is missing its {}", what(field)));
        match field {
            // Fields that take every token left.
            Field::CharStrs | Field::Base64 | Field::Hex if rest.is_empty() => {
                return Err(missing())
            }
            Field::CharStrs => {
                for t in rest {
                    char_string(t, out)?;
                }
            }
            Field::Base64 => text::base64_decode(rest.iter().map(|t| t.text), out)?,
            Field::Hex => text::hex_decode(rest.iter().map(|t| t.text), out)?,
            Field::Bitmap => bitmap::scan(rest, out)?,
            Field::SvcParams => svcb::scan(rest, out)?,
            _ => {
                let t = rest.first().ok_or_else(missing)?;
                one(field, t, origin, out)?;
                i += 1;
                continue;
            }
        }
        i = tokens.len();
    }
    match tokens.get(i) {
        Some(t) => Err(Error::text(format_args!(
            "unexpected {} after the {rtype} rdata",
            Shown(t.text)
        ))),
        None => Ok(()),
    }
}

/// What a field is called in error messages.
fn what(field: Field) -> &'static str {
    match field {
        Field::U8 | Field::U16 | Field::U32 => "number",
        Field::Alg => "algorithm",
        Field::Ttl => "time value",
        Field::Type => "type",
        Field::Time => "signature time",
        Field::Ipv4 => "IPv4 address",
        Field::Ipv6 => "IPv6 address",
        Field::Name(_) => "name",
        Field::CharStr | Field::CharStrs => "string",
        Field::Rest => "value",
        Field::CaaTag => "tag",
        Field::Base64 => "base64 data",
        Field::Hex => "hex data",
        Field::Salt => "salt",
        Field::Hash => "next hashed owner name",
        Field::Bitmap => "types",
        Field::Eui48 | Field::Eui64 => "EUI address",
        Field::SvcParams => "parameters",
    }
}

/// DNSSEC algorithm mnemonics (IANA "DNS Security Algorithm Numbers").
const ALGORITHMS: [(&str, u8); 16] = [
    ("RSAMD5", 1),
    ("DH", 2),
    ("DSA", 3),
    ("RSASHA1", 5),
    ("DSA-NSEC3-SHA1", 6),
    ("RSASHA1-NSEC3-SHA1", 7),
    ("RSASHA256", 8),
    ("RSASHA512", 10),
    ("ECC-GOST", 12),
    ("ECDSAP256SHA256", 13),
    ("ECDSAP384SHA384", 14),
    ("ED25519", 15),
    ("ED448", 16),
    ("INDIRECT", 252),
    ("PRIVATEDNS", 253),
    ("PRIVATEOID", 254),
];

/// Parses a field that takes exactly one token.
fn one(field: Field, t: &Token<'_>, origin: NameRef<'_>, out: &mut Vec<u8>) -> Result<(), Error> {
    let bad = || Error::text(format_args!("bad {} {}", what(field), Shown(t.text)));
    match field {
        Field::U8 => out.push(number(t.text, u8::MAX.into(), what(field))? as u8),
        Field::Alg => match ALGORITHMS
            .iter()
            .find(|(m, _)| m.as_bytes().eq_ignore_ascii_case(t.text))
        {
            Some(&(_, n)) => out.push(n),
            None => out.push(number(t.text, u8::MAX.into(), what(field))? as u8),
        },
        Field::U16 => out.extend_from_slice(
            &(number(t.text, u16::MAX.into(), what(field))? as u16).to_be_bytes(),
        ),
        Field::U32 => out.extend_from_slice(
            &(number(t.text, u32::MAX.into(), what(field))? as u32).to_be_bytes(),
        ),
        Field::Ttl => out.extend_from_slice(&text::parse_ttl(t.text)?.to_be_bytes()),
        Field::Time => out.extend_from_slice(&time::parse(t.text)?.to_be_bytes()),
        Field::Type => {
            let rtype = core::str::from_utf8(t.text)
                .ok()
                .and_then(RType::from_text)
                .ok_or_else(bad)?;
            out.extend_from_slice(&rtype.0.to_be_bytes());
        }
        Field::Ipv4 => out.extend_from_slice(&addr::parse_v4(t.text).ok_or_else(bad)?),
        Field::Ipv6 => out.extend_from_slice(&addr::parse_v6(t.text).ok_or_else(bad)?),
        Field::Name(_) => name(t, origin, out)?,
        Field::CharStr => char_string(t, out)?,
        Field::Rest => text::unescape(t.text, out)?,
        Field::CaaTag => {
            if t.text.is_empty()
                || t.text.len() > 255
                || !t.text.iter().all(u8::is_ascii_alphanumeric)
            {
                return Err(bad());
            }
            out.push(t.text.len() as u8);
            out.extend_from_slice(t.text);
        }
        Field::Salt => {
            let at = out.len();
            out.push(0);
            if t.text != b"-" {
                text::hex_decode([t.text], out).map_err(|_| bad())?;
            }
            out[at] = u8::try_from(out.len() - at - 1).map_err(|_| bad())?;
        }
        Field::Hash => {
            let at = out.len();
            out.push(0);
            text::base32hex_decode(t.text, out)?;
            let n = out.len() - at - 1;
            out[at] = u8::try_from(n).ok().filter(|&n| n > 0).ok_or_else(bad)?;
        }
        Field::Eui48 => eui::<6>(t.text, out).ok_or_else(bad)?,
        Field::Eui64 => eui::<8>(t.text, out).ok_or_else(bad)?,
        Field::CharStrs | Field::Base64 | Field::Hex | Field::Bitmap | Field::SvcParams => {
            unreachable!("multi-token field")
        }
    }
    Ok(())
}

/// Parses a name: `@` is the origin, a name without a trailing dot is relative to it.
pub(super) fn name(t: &Token<'_>, origin: NameRef<'_>, out: &mut Vec<u8>) -> Result<(), Error> {
    if t.text == b"@" && !t.quoted {
        out.extend_from_slice(origin.as_wire());
        return Ok(());
    }
    let mut buf = NameBuf::new();
    buf.parse_text(t.text, Some(origin))
        .map_err(|e| Error::text(format_args!("bad name {}: {e}", Shown(t.text))))?;
    out.extend_from_slice(buf.as_ref().as_wire());
    Ok(())
}

/// Parses one `<character-string>`: up to 255 octets once escapes are decoded; empty only
/// when quoted (an unquoted token is never empty).
pub(super) fn char_string(t: &Token<'_>, out: &mut Vec<u8>) -> Result<(), Error> {
    let at = out.len();
    out.push(0);
    text::unescape(t.text, out)?;
    let n = out.len() - at - 1;
    out[at] = u8::try_from(n).map_err(|_| {
        Error::text(format_args!(
            "string of {n} octets is longer than 255: {}",
            Shown(t.text)
        ))
    })?;
    Ok(())
}

/// Parses an EUI-48 or EUI-64 address: `N` pairs of hex digits joined by `-` (RFC 7043 §3.2).
fn eui<const N: usize>(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    if text.len() != 3 * N - 1 {
        return None;
    }
    let mut octets = [0u8; N];
    for (i, o) in octets.iter_mut().enumerate() {
        let p = &text[3 * i..3 * i + 2];
        if i + 1 < N && text[3 * i + 2] != b'-' {
            return None;
        }
        let digit = |c: u8| (c as char).to_digit(16);
        *o = (digit(p[0])? << 4 | digit(p[1])?) as u8;
    }
    out.extend_from_slice(&octets);
    Some(())
}
