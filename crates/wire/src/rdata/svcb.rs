//! SVCB and HTTPS parameters (RFC 9460 §2.1, §2.2, §7, §8; dohpath RFC 9461, ohttp
//! RFC 9540): `key=value` in text, sorted `key length value` triples on the wire.

use super::addr;
use crate::error::Error;
use crate::text::{self, number, Shown, Token};
use core::fmt;

const MANDATORY: u16 = 0;
const ALPN: u16 = 1;
const NO_DEFAULT_ALPN: u16 = 2;
const PORT: u16 = 3;
const IPV4HINT: u16 = 4;
const ECH: u16 = 5;
const IPV6HINT: u16 = 6;
const OHTTP: u16 = 8;
/// Reserved as "Invalid key" (RFC 9460 §14.3.2).
const INVALID: u16 = 65535;

/// Key names by number.
const NAMES: [&str; 9] = [
    "mandatory",
    "alpn",
    "no-default-alpn",
    "port",
    "ipv4hint",
    "ech",
    "ipv6hint",
    "dohpath",
    "ohttp",
];

/// True if `data` is a well-formed parameter list: keys strictly increasing, lengths
/// exact, and values of the known keys in their format.
pub(super) fn check(data: &[u8]) -> bool {
    let mut prev: Option<u16> = None;
    let mut params = Params { data };
    while !params.data.is_empty() {
        let Some((key, value)) = params.next() else {
            return false;
        };
        if prev.is_some_and(|p| p >= key) || !value_ok(key, value) {
            return false;
        }
        prev = Some(key);
    }
    true
}

/// Iterator over `(key, value)`; stops at the first malformed parameter.
struct Params<'a> {
    data: &'a [u8],
}

impl<'a> Iterator for Params<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<(u16, &'a [u8])> {
        let [k0, k1, l0, l1, rest @ ..] = self.data else {
            return None;
        };
        let len = usize::from(u16::from_be_bytes([*l0, *l1]));
        let value = rest.get(..len)?;
        self.data = &rest[len..];
        Some((u16::from_be_bytes([*k0, *k1]), value))
    }
}

fn value_ok(key: u16, v: &[u8]) -> bool {
    match key {
        MANDATORY => {
            // A non-empty list of keys in strictly increasing order, without "mandatory".
            let mut prev: Option<u16> = None;
            for k in v.chunks_exact(2) {
                let k = u16::from_be_bytes([k[0], k[1]]);
                if k == MANDATORY || prev.is_some_and(|p| p >= k) {
                    return false;
                }
                prev = Some(k);
            }
            !v.is_empty() && v.len() & 1 == 0
        }
        ALPN => {
            let mut pos = 0;
            while pos < v.len() {
                let n = usize::from(v[pos]);
                if n == 0 {
                    return false;
                }
                pos += 1 + n;
            }
            pos == v.len() && !v.is_empty()
        }
        NO_DEFAULT_ALPN | OHTTP => v.is_empty(),
        PORT => v.len() == 2,
        IPV4HINT => !v.is_empty() && v.len() & 3 == 0,
        IPV6HINT => !v.is_empty() && v.len() & 15 == 0,
        INVALID => false,
        _ => true,
    }
}

/// Writes well-formed parameters, each preceded by a space (BIND style: `alpn` and
/// generic values quoted, lists joined by commas).
pub(super) fn write(data: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    for (key, v) in (Params { data }) {
        f.write_char(' ')?;
        write_key(key, f)?;
        match key {
            MANDATORY => {
                for (i, k) in v.chunks_exact(2).enumerate() {
                    f.write_char(if i == 0 { '=' } else { ',' })?;
                    write_key(u16::from_be_bytes([k[0], k[1]]), f)?;
                }
            }
            ALPN => {
                f.write_str("=\"")?;
                let mut pos = 0;
                while pos < v.len() {
                    if pos > 0 {
                        f.write_char(',')?;
                    }
                    let n = usize::from(v[pos]);
                    write_list_item(&v[pos + 1..pos + 1 + n], f)?;
                    pos += 1 + n;
                }
                f.write_char('"')?;
            }
            PORT => write!(f, "={}", u16::from_be_bytes([v[0], v[1]]))?,
            IPV4HINT | IPV6HINT => {
                let n = if key == IPV4HINT { 4 } else { 16 };
                for (i, a) in v.chunks_exact(n).enumerate() {
                    f.write_char(if i == 0 { '=' } else { ',' })?;
                    if n == 4 {
                        addr::write_v4(a, f)?;
                    } else {
                        addr::write_v6(a, f)?;
                    }
                }
            }
            ECH if v.is_empty() => f.write_str("=\"\"")?,
            ECH => {
                f.write_char('=')?;
                text::write_base64(v, f)?;
            }
            _ if v.is_empty() => {}
            _ => {
                f.write_char('=')?;
                text::write_quoted(v, f)?;
            }
        }
    }
    Ok(())
}

fn write_key(key: u16, f: &mut impl fmt::Write) -> fmt::Result {
    match NAMES.get(usize::from(key)) {
        Some(name) => f.write_str(name),
        None => write!(f, "key{key}"),
    }
}

/// Writes one item of a comma-separated list inside quotes: `,` and `\` get the list's
/// own escape (RFC 9460 Appendix A.1), then the whole is escaped as a quoted string.
fn write_list_item(item: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    let mut start = 0;
    for (i, &c) in item.iter().enumerate() {
        let esc = match c {
            b',' => "\\\\,",
            b'\\' => "\\\\\\\\",
            _ => continue,
        };
        text::write_escaped(&item[start..i], f)?;
        f.write_str(esc)?;
        start = i + 1;
    }
    text::write_escaped(&item[start..], f)
}

/// Parses a key name or `keyNNNNN` (no leading zeros).
fn key_from_text(t: &[u8]) -> Result<u16, Error> {
    let bad = || Error::text(format_args!("unknown SVCB parameter {}", Shown(t)));
    if let Some(i) = NAMES
        .iter()
        .position(|n| n.as_bytes().eq_ignore_ascii_case(t))
    {
        return Ok(i as u16);
    }
    let digits = t.strip_prefix(b"key").ok_or_else(bad)?;
    if digits.is_empty() || digits.len() > 5 || (digits.len() > 1 && digits[0] == b'0') {
        return Err(bad());
    }
    let key = number(digits, u16::MAX.into(), "SVCB key").map_err(|_| bad())? as u16;
    if key == INVALID {
        return Err(Error::text("SVCB key65535 is reserved as invalid"));
    }
    Ok(key)
}

/// Splits `value` into the items of a comma-separated list, decoding `\,` and `\\`.
fn split_list(value: &[u8], mut item: impl FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
    let mut cur = Vec::new();
    let mut i = 0;
    loop {
        match value.get(i) {
            None | Some(b',') => {
                item(&cur)?;
                cur.clear();
                if i >= value.len() {
                    return Ok(());
                }
            }
            Some(b'\\') => {
                i += 1;
                cur.push(
                    *value
                        .get(i)
                        .ok_or_else(|| Error::text("SVCB list ends with a lone \\"))?,
                );
            }
            Some(&c) => cur.push(c),
        }
        i += 1;
    }
}

/// Parses `key[=value]` tokens into sorted wire parameters appended to `out`.
///
/// A value may be in the token (`alpn=h2`, or `alpn="h2,h3"` with the quotes kept by the
/// scanner) or be the quoted token right after `key=`. Escapes are decoded first, then the
/// list syntax of the key.
pub(super) fn scan(tokens: &[Token<'_>], out: &mut Vec<u8>) -> Result<(), Error> {
    let mut values = Vec::new();
    // (key, start, end) of each value in `values`.
    let mut params: Vec<(u16, usize, usize)> = Vec::new();
    let mut raw = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        i += 1;
        if t.quoted {
            return Err(Error::text(format_args!(
                "unexpected quoted {} in SVCB parameters",
                Shown(t.text)
            )));
        }
        let (key_text, value) = match t.text.iter().position(|&c| c == b'=') {
            None => (t.text, None),
            Some(eq) => {
                let rest = &t.text[eq + 1..];
                let value = match tokens.get(i) {
                    Some(next) if rest.is_empty() && next.quoted => {
                        i += 1;
                        next.text
                    }
                    _ => strip_quotes(rest)?,
                };
                (&t.text[..eq], Some(value))
            }
        };
        let key = key_from_text(key_text)?;
        let decoded = match value {
            Some(v) => {
                raw.clear();
                text::unescape(v, &mut raw)?;
                Some(&raw[..])
            }
            None => None,
        };
        let start = values.len();
        scan_value(key, decoded, &mut values)?;
        params.push((key, start, values.len()));
    }
    params.sort_unstable_by_key(|p| p.0);
    if let Some(w) = params.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(dup(w[0].0));
    }
    // RFC 9460 §7.1.1: without "alpn", "no-default-alpn" leaves no protocol at all.
    if params.iter().any(|p| p.0 == NO_DEFAULT_ALPN) && !params.iter().any(|p| p.0 == ALPN) {
        return Err(Error::text("SVCB no-default-alpn needs alpn too"));
    }
    if let Some(&(_, s, e)) = params.iter().find(|p| p.0 == MANDATORY) {
        for k in values[s..e].chunks_exact(2) {
            let k = u16::from_be_bytes([k[0], k[1]]);
            if !params.iter().any(|p| p.0 == k) {
                let mut name = String::new();
                write_key(k, &mut name).map_err(|_| Error::text("bad key"))?;
                return Err(Error::text(format_args!(
                    "mandatory SVCB parameter {name} is missing"
                )));
            }
        }
    }
    for (key, s, e) in params {
        let len = u16::try_from(e - s).map_err(|_| Error::text("SVCB parameter value too long"))?;
        out.extend_from_slice(&key.to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&values[s..e]);
    }
    Ok(())
}

fn dup(key: u16) -> Error {
    let mut name = String::new();
    let _ = write_key(key, &mut name);
    Error::text(format_args!("duplicate SVCB parameter {name}"))
}

/// Removes the double quotes around a value written `key="..."` inside one token.
fn strip_quotes(v: &[u8]) -> Result<&[u8], Error> {
    let Some(inner) = v.strip_prefix(b"\"") else {
        return Ok(v);
    };
    let inner = inner
        .strip_suffix(b"\"")
        .ok_or_else(|| Error::text(format_args!("unterminated quotes in {}", Shown(v))))?;
    // The closing quote must not itself be escaped.
    let backslashes = inner.iter().rev().take_while(|&&c| c == b'\\').count();
    if backslashes % 2 == 1 {
        return Err(Error::text(format_args!(
            "unterminated quotes in {}",
            Shown(v)
        )));
    }
    Ok(inner)
}

/// Encodes the value of one parameter (escapes already decoded) into `out`.
fn scan_value(key: u16, value: Option<&[u8]>, out: &mut Vec<u8>) -> Result<(), Error> {
    let mut name = String::new();
    let _ = write_key(key, &mut name);
    let needs = || Error::text(format_args!("SVCB parameter {name} needs a value"));
    let bad = |v: &[u8]| Error::text(format_args!("bad SVCB {name} value {}", Shown(v)));
    match key {
        NO_DEFAULT_ALPN | OHTTP => match value {
            None | Some([]) => Ok(()),
            Some(v) => Err(Error::text(format_args!(
                "SVCB parameter {name} takes no value, not {}",
                Shown(v)
            ))),
        },
        MANDATORY | ALPN | PORT | IPV4HINT | IPV6HINT if value.unwrap_or_default().is_empty() => {
            Err(needs())
        }
        MANDATORY => {
            let v = value.unwrap_or_default();
            let mut keys = Vec::new();
            split_list(v, |item| {
                let k = key_from_text(item)?;
                if k == MANDATORY {
                    return Err(Error::text("SVCB mandatory must not list itself"));
                }
                keys.push(k);
                Ok(())
            })?;
            keys.sort_unstable();
            if keys.windows(2).any(|w| w[0] == w[1]) {
                return Err(Error::text(format_args!(
                    "duplicate key in SVCB mandatory {}",
                    Shown(v)
                )));
            }
            for k in keys {
                out.extend_from_slice(&k.to_be_bytes());
            }
            Ok(())
        }
        ALPN => split_list(value.unwrap_or_default(), |item| {
            let n = u8::try_from(item.len())
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(item))?;
            out.push(n);
            out.extend_from_slice(item);
            Ok(())
        }),
        PORT => {
            let v = value.unwrap_or_default();
            let port = number(v, u16::MAX.into(), "port").map_err(|_| bad(v))?;
            out.extend_from_slice(&(port as u16).to_be_bytes());
            Ok(())
        }
        IPV4HINT => split_list(value.unwrap_or_default(), |item| {
            out.extend_from_slice(&addr::parse_v4(item).ok_or_else(|| bad(item))?);
            Ok(())
        }),
        IPV6HINT => split_list(value.unwrap_or_default(), |item| {
            out.extend_from_slice(&addr::parse_v6(item).ok_or_else(|| bad(item))?);
            Ok(())
        }),
        ECH => text::base64_decode([value.ok_or_else(needs)?], out),
        _ => {
            out.extend_from_slice(value.unwrap_or_default());
            Ok(())
        }
    }
}
