//! Presentation-format primitives shared by the zone-file scanner and the rdata parsers:
//! tokens, errors, decimal numbers, TTLs with units, `\` escapes, quoted strings, and the hex, base32hex and
//! base64 codecs (RFC 4648).
//!
//! Decoders append to a caller's `Vec` and accept input split across several tokens where
//! the record formats allow whitespace inside a field (keys, signatures, digests). Encoders
//! write to any [`fmt::Write`]. Never: I/O, allocation beyond the caller's buffer (except
//! for error messages).

use crate::error::Error;
use core::fmt;

/// One whitespace-separated token of a record's text, with escapes left in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    /// The token's bytes, without surrounding quotes; `\X` and `\DDD` escapes are not decoded.
    pub text: &'a [u8],
    /// True if the token was written in double quotes.
    pub quoted: bool,
}

impl<'a> Token<'a> {
    /// An unquoted token.
    pub fn plain(text: &'a [u8]) -> Self {
        Self {
            text,
            quoted: false,
        }
    }

    /// A token that was written in double quotes (`text` without the quotes).
    pub fn quoted(text: &'a [u8]) -> Self {
        Self { text, quoted: true }
    }
}

/// Shows token bytes in an error message: in double quotes, non-UTF-8 replaced.
pub(crate) struct Shown<'a>(pub(crate) &'a [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", String::from_utf8_lossy(self.0))
    }
}

/// Parses a decimal number up to `max`; `what` names it in the error (the rdata fields
/// and SVCB parameters that are numbers).
pub(crate) fn number(text: &[u8], max: u64, what: &str) -> Result<u64, Error> {
    let bad = || Error::text(format_args!("bad {what} {}", Shown(text)));
    if text.is_empty() || text.len() > 20 || !text.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let v = text.iter().try_fold(0u64, |v, &c| {
        v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    });
    v.filter(|&v| v <= max).ok_or_else(bad)
}

/// Parses a TTL: seconds (`3600`) or numbers with units `s`, `m`, `h`, `d`, `w` in any case
/// (`1h30m`, `1W`), as BIND and Knot accept. Every number after the first unit needs a unit
/// too, and the total must fit in 32 bits.
pub fn parse_ttl(text: &[u8]) -> Result<u32, Error> {
    let bad = || Error::text(format_args!("bad TTL {}", Shown(text)));
    if text.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    let mut num: u64 = 0;
    let mut digits = 0usize;
    let mut units = 0usize;
    for &c in text {
        if c.is_ascii_digit() {
            num = num * 10 + u64::from(c - b'0');
            digits += 1;
            if num > u64::from(u32::MAX) {
                return Err(bad());
            }
            continue;
        }
        let mult = match c.to_ascii_lowercase() {
            b's' => 1,
            b'm' => 60,
            b'h' => 3600,
            b'd' => 86_400,
            b'w' => 604_800,
            _ => return Err(bad()),
        };
        if digits == 0 {
            return Err(bad());
        }
        total += num * mult;
        if total > u64::from(u32::MAX) {
            return Err(bad());
        }
        num = 0;
        digits = 0;
        units += 1;
    }
    if digits > 0 {
        if units > 0 {
            return Err(bad());
        }
        total = num;
    }
    Ok(total as u32)
}

/// Decodes `\X` and `\DDD` escapes (RFC 1035 §5.1), appending the octets to `out`.
pub fn unescape(text: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let bad = || Error::text(format_args!("bad escape in {}", Shown(text)));
        let e = *text.get(i).ok_or_else(bad)?;
        if e.is_ascii_digit() {
            let d = text.get(i..i + 3).ok_or_else(bad)?;
            if !d.iter().all(u8::is_ascii_digit) {
                return Err(bad());
            }
            let v =
                u32::from(d[0] - b'0') * 100 + u32::from(d[1] - b'0') * 10 + u32::from(d[2] - b'0');
            out.push(u8::try_from(v).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(e);
            i += 1;
        }
    }
    Ok(())
}

/// Writes octets as a quoted string: `"` and `\` escaped with `\`, octets outside printable
/// ASCII as `\DDD` (the style of BIND and Knot for TXT, CAA values and the like).
pub fn write_quoted(bytes: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    f.write_char('"')?;
    write_escaped(bytes, f)?;
    f.write_char('"')
}

/// Writes octets for use inside double quotes, without the quotes (see [`write_quoted`]).
pub fn write_escaped(bytes: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    let mut start = 0;
    for (i, &c) in bytes.iter().enumerate() {
        if (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\' {
            continue;
        }
        // Everything before `i` is printable ASCII, hence valid UTF-8.
        f.write_str(core::str::from_utf8(&bytes[start..i]).map_err(|_| fmt::Error)?)?;
        if c == b'"' || c == b'\\' {
            f.write_char('\\')?;
            f.write_char(c as char)?;
        } else {
            write!(f, "\\{c:03}")?;
        }
        start = i + 1;
    }
    f.write_str(core::str::from_utf8(&bytes[start..]).map_err(|_| fmt::Error)?)
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes hex digits (either case), which may be split across parts at any point.
pub fn hex_decode<'t>(
    parts: impl IntoIterator<Item = &'t [u8]>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut high: Option<u8> = None;
    for part in parts {
        for &c in part {
            let v = hex_value(c)
                .ok_or_else(|| Error::text(format_args!("bad hex digit in {}", Shown(part))))?;
            match high.take() {
                None => high = Some(v),
                Some(h) => out.push(h << 4 | v),
            }
        }
    }
    if high.is_some() {
        return Err(Error::text("odd number of hex digits"));
    }
    Ok(())
}

/// Writes octets as upper-case hex digits.
pub fn write_hex(bytes: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    for &b in bytes {
        f.write_char(HEX_UPPER[usize::from(b >> 4)] as char)?;
        f.write_char(HEX_UPPER[usize::from(b & 15)] as char)?;
    }
    Ok(())
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_value(c: u8) -> Option<u32> {
    Some(u32::from(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    }))
}

/// Decodes base64 (RFC 4648 §4) that may be split across parts. Padding is required, and
/// the unused bits of the last character must be zero, so each value has one text form.
pub fn base64_decode<'t>(
    parts: impl IntoIterator<Item = &'t [u8]>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    let mut chars = 0usize;
    let mut pads = 0usize;
    for part in parts {
        let bad = || Error::text(format_args!("bad base64 {}", Shown(part)));
        for &c in part {
            if c == b'=' {
                pads += 1;
                if pads > 2 {
                    return Err(bad());
                }
                continue;
            }
            if pads > 0 {
                return Err(bad());
            }
            acc = acc << 6 | base64_value(c).ok_or_else(bad)?;
            bits += 6;
            chars += 1;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
    }
    if (chars + pads) & 3 != 0 {
        return Err(Error::text(
            "base64 length is not a multiple of 4 (missing padding?)",
        ));
    }
    if acc != 0 {
        return Err(Error::text("base64 has non-zero bits after its last octet"));
    }
    Ok(())
}

/// Writes octets as padded base64.
pub fn write_base64(bytes: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    let ch = |v: u32| BASE64[(v & 63) as usize] as char;
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let v = u32::from(c[0]) << 16 | u32::from(c[1]) << 8 | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            f.write_char(ch(v >> shift))?;
        }
    }
    match *chunks.remainder() {
        [a] => {
            let v = u32::from(a) << 16;
            f.write_char(ch(v >> 18))?;
            f.write_char(ch(v >> 12))?;
            f.write_str("==")
        }
        [a, b] => {
            let v = u32::from(a) << 16 | u32::from(b) << 8;
            f.write_char(ch(v >> 18))?;
            f.write_char(ch(v >> 12))?;
            f.write_char(ch(v >> 6))?;
            f.write_char('=')
        }
        _ => Ok(()),
    }
}

const BASE32HEX: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";

/// Decodes base32hex (RFC 4648 §7) without padding, either case, as NSEC3 uses it
/// (RFC 5155 §3.3). The unused bits of the last character must be zero.
pub fn base32hex_decode(text: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    let bad = || Error::text(format_args!("bad base32hex {}", Shown(text)));
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for &c in text {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'v' => c - b'a' + 10,
            b'A'..=b'V' => c - b'A' + 10,
            _ => return Err(bad()),
        };
        acc = acc << 5 | u32::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // 1, 3 and 6 characters in the last group cannot come from whole octets.
    if matches!(text.len() % 8, 1 | 3 | 6) || acc != 0 {
        return Err(bad());
    }
    Ok(())
}

/// Writes octets as upper-case base32hex without padding.
pub fn write_base32hex(bytes: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for &b in bytes {
        acc = acc << 8 | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            f.write_char(BASE32HEX[(acc >> bits & 31) as usize] as char)?;
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        f.write_char(BASE32HEX[(acc << (5 - bits) & 31) as usize] as char)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(parts: &[&str]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        base64_decode(parts.iter().map(|p| p.as_bytes()), &mut out).map(|()| out)
    }

    fn to_string(f: impl Fn(&mut String) -> fmt::Result) -> String {
        let mut s = String::new();
        f(&mut s).unwrap();
        s
    }

    #[test]
    fn ttl_units() {
        assert_eq!(parse_ttl(b"3600"), Ok(3600));
        assert_eq!(parse_ttl(b"0"), Ok(0));
        assert_eq!(parse_ttl(b"1h30m"), Ok(5400));
        assert_eq!(parse_ttl(b"1W"), Ok(604_800));
        assert_eq!(parse_ttl(b"2d1h1m1s"), Ok(2 * 86_400 + 3661));
        assert_eq!(parse_ttl(b"4294967295"), Ok(u32::MAX));
        for bad in ["", "h", "1h30", "9x", "-1", "4294967296", "1000000w", "1 h"] {
            assert!(parse_ttl(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(parse_ttl(b"9x").unwrap_err().to_string(), "bad TTL \"9x\"");
    }

    #[test]
    fn escapes() {
        let mut out = Vec::new();
        unescape(br#"a\"b\\c\065\255\.d"#, &mut out).unwrap();
        assert_eq!(out, b"a\"b\\cA\xff.d");
        for bad in [&b"a\\"[..], b"\\25", b"\\256", b"\\2x5"] {
            assert!(unescape(bad, &mut Vec::new()).is_err());
        }
        let s = to_string(|s| write_quoted(b"say \"hi\"\\ \x00\xff;", s));
        assert_eq!(s, r#""say \"hi\"\\ \000\255;""#);
        let mut back = Vec::new();
        unescape(&s.as_bytes()[1..s.len() - 1], &mut back).unwrap();
        assert_eq!(back, b"say \"hi\"\\ \x00\xff;");
    }

    #[test]
    fn hex() {
        let mut out = Vec::new();
        hex_decode([&b"0a"[..], b"Bc", b"D", b"e"], &mut out).unwrap();
        assert_eq!(out, [0x0a, 0xbc, 0xde]);
        assert!(hex_decode([&b"abc"[..]], &mut Vec::new()).is_err());
        assert!(hex_decode([&b"zz"[..]], &mut Vec::new()).is_err());
        assert_eq!(to_string(|s| write_hex(&[0x0a, 0xbc, 0xde], s)), "0ABCDE");
    }

    #[test]
    fn base64_rfc4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, enc) in vectors {
            assert_eq!(to_string(|s| write_base64(plain.as_bytes(), s)), enc);
            assert_eq!(b64(&[enc]).unwrap(), plain.as_bytes());
        }
        // Split anywhere, even inside the padding.
        assert_eq!(b64(&["Zm9", "vYmE", "="]).unwrap(), b"fooba");
        assert_eq!(b64(&["Zg=", "="]).unwrap(), b"f");
        for bad in [
            &["Zg"][..],
            &["Zg="],
            &["Zg==="],
            &["Zg==Zg=="],
            &["Zh=="],
            &["Z!=="],
            &["Z"],
            &["="],
        ] {
            assert!(b64(bad).is_err(), "{bad:?}");
        }
        let all: Vec<u8> = (0..=255).collect();
        let enc = to_string(|s| write_base64(&all, s));
        assert_eq!(b64(&[&enc]).unwrap(), all);
    }

    #[test]
    fn base32hex_rfc4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "CO"),
            ("fo", "CPNG"),
            ("foo", "CPNMU"),
            ("foob", "CPNMUOG"),
            ("fooba", "CPNMUOJ1"),
            ("foobar", "CPNMUOJ1E8"),
        ];
        for (plain, enc) in vectors {
            assert_eq!(to_string(|s| write_base32hex(plain.as_bytes(), s)), enc);
            let mut out = Vec::new();
            base32hex_decode(enc.to_ascii_lowercase().as_bytes(), &mut out).unwrap();
            assert_eq!(out, plain.as_bytes());
        }
        for bad in ["C", "CP", "CPN", "CPNMUO", "CO==", "W0", "CQ"] {
            let r = base32hex_decode(bad.as_bytes(), &mut Vec::new());
            // "CP" is two characters (one octet) but its unused bits are not zero.
            assert!(r.is_err(), "{bad}");
        }
    }
}
