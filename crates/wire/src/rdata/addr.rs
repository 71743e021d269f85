//! IPv4 and IPv6 addresses in text: dotted quads, and RFC 4291 §2.2 / RFC 5952 for IPv6.
//! Our own parsing and printing, so the wire crate needs nothing from `std::net`.

use core::fmt;

/// Parses a dotted quad: four decimal numbers up to 255, no leading zeros (which some
/// parsers read as octal).
pub(super) fn parse_v4(text: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = text.split(|&c| c == b'.');
    for o in &mut out {
        let p = parts.next()?;
        if p.is_empty()
            || p.len() > 3
            || (p.len() > 1 && p[0] == b'0')
            || !p.iter().all(u8::is_ascii_digit)
        {
            return None;
        }
        let v = p.iter().fold(0u16, |v, &c| v * 10 + u16::from(c - b'0'));
        *o = u8::try_from(v).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// Parses an IPv6 address: eight groups of 1 to 4 hex digits, one `::` standing for one or
/// more zero groups, and optionally a dotted quad as the last 32 bits.
pub(super) fn parse_v6(text: &[u8]) -> Option<[u8; 16]> {
    let mut groups = [0u16; 8];
    match text.windows(2).position(|w| w == b"::") {
        None => {
            if parse_groups(text, &mut groups, true)? != 8 {
                return None;
            }
        }
        Some(i) => {
            let (head, tail) = (&text[..i], &text[i + 2..]);
            let mut h = [0u16; 8];
            let mut t = [0u16; 8];
            let nh = parse_groups(head, &mut h, false)?;
            let nt = parse_groups(tail, &mut t, true)?;
            if nh + nt > 7 {
                return None;
            }
            groups[..nh].copy_from_slice(&h[..nh]);
            groups[8 - nt..].copy_from_slice(&t[..nt]);
        }
    }
    let mut out = [0u8; 16];
    for (o, g) in out.chunks_exact_mut(2).zip(groups) {
        o.copy_from_slice(&g.to_be_bytes());
    }
    Some(out)
}

/// Parses `:`-separated groups into `out` (empty text is no groups); returns how many.
/// With `v4_last`, the last part may be a dotted quad, counting as two groups.
fn parse_groups(text: &[u8], out: &mut [u16; 8], v4_last: bool) -> Option<usize> {
    if text.is_empty() {
        return Some(0);
    }
    let parts = text.split(|&c| c == b':');
    let count = parts.clone().count();
    let mut n = 0;
    for (i, part) in parts.enumerate() {
        if v4_last && i + 1 == count && part.contains(&b'.') {
            let v4 = parse_v4(part)?;
            if n + 2 > 8 {
                return None;
            }
            out[n] = u16::from_be_bytes([v4[0], v4[1]]);
            out[n + 1] = u16::from_be_bytes([v4[2], v4[3]]);
            n += 2;
            continue;
        }
        if part.is_empty() || part.len() > 4 || n == 8 {
            return None;
        }
        let mut v = 0u16;
        for &c in part {
            v = v << 4 | u16::from(hex_digit(c)?);
        }
        out[n] = v;
        n += 1;
    }
    Some(n)
}

fn hex_digit(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Writes a dotted quad.
pub(super) fn write_v4(a: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    write!(f, "{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// Writes an IPv6 address as RFC 5952 §4 recommends: lower-case hex without leading
/// zeros, the longest run of two or more zero groups (the first of equals) as `::`, and
/// IPv4-mapped addresses as `::ffff:a.b.c.d`.
pub(super) fn write_v6(a: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    if a[..10].iter().all(|&b| b == 0) && a[10] == 0xff && a[11] == 0xff {
        f.write_str("::ffff:")?;
        return write_v4(&a[12..], f);
    }
    let mut groups = [0u16; 8];
    for (g, b) in groups.iter_mut().zip(a.chunks_exact(2)) {
        *g = u16::from_be_bytes([b[0], b[1]]);
    }
    // The longest run of zero groups.
    let (mut best_at, mut best_len) = (0, 0);
    let mut i = 0;
    while i < 8 {
        let run = groups[i..].iter().take_while(|&&g| g == 0).count();
        if run > best_len {
            (best_at, best_len) = (i, run);
        }
        i += run.max(1);
    }
    if best_len < 2 {
        best_len = 0;
        best_at = 8;
    }
    for (i, g) in groups.iter().enumerate() {
        if i == best_at {
            f.write_str("::")?;
        }
        if i >= best_at && i < best_at + best_len {
            continue;
        }
        if i > 0 && i != best_at + best_len {
            f.write_char(':')?;
        }
        write!(f, "{g:x}")?;
    }
    Ok(())
}
