//! Type bitmaps of NSEC, NSEC3 and CSYNC (RFC 4034 §4.1.2): windows of up to 32 octets,
//! one bit per type, in increasing window order.

use crate::error::Error;
use crate::text::{Shown, Token};
use crate::types::RType;
use core::fmt;

/// True if `data` is a well-formed bitmap: windows in increasing order, each 1 to 32
/// octets long with a non-zero last octet (trailing zero octets must be omitted).
pub(super) fn check(mut data: &[u8]) -> bool {
    let mut prev: Option<u8> = None;
    while let [window, len, rest @ ..] = data {
        let len = usize::from(*len);
        if prev.is_some_and(|p| p >= *window)
            || !(1..=32).contains(&len)
            || rest.len() < len
            || rest[len - 1] == 0
        {
            return false;
        }
        prev = Some(*window);
        data = &rest[len..];
    }
    data.is_empty()
}

/// The types in a well-formed bitmap, in increasing order.
pub(super) fn types(data: &[u8]) -> Types<'_> {
    Types { data, bit: 0 }
}

/// Iterator over the types of a bitmap.
pub(super) struct Types<'a> {
    /// The current window and those after it.
    data: &'a [u8],
    /// The next bit to look at in the current window.
    bit: usize,
}

impl Iterator for Types<'_> {
    type Item = RType;

    fn next(&mut self) -> Option<RType> {
        loop {
            let [window, len, rest @ ..] = self.data else {
                return None;
            };
            let len = usize::from(*len).min(rest.len());
            while self.bit < len * 8 {
                let b = self.bit;
                self.bit += 1;
                if rest[b / 8] & (0x80 >> (b % 8)) != 0 {
                    return Some(RType(u16::from(*window) << 8 | b as u16));
                }
            }
            self.data = &rest[len..];
            self.bit = 0;
        }
    }
}

/// Parses type mnemonics and `TYPEnnn` into a bitmap appended to `out`.
pub(super) fn scan(tokens: &[Token<'_>], out: &mut Vec<u8>) -> Result<(), Error> {
    let mut types = Vec::with_capacity(tokens.len());
    for t in tokens {
        let rtype = core::str::from_utf8(t.text)
            .ok()
            .and_then(RType::from_text)
            .ok_or_else(|| Error::text(format_args!("unknown type {}", Shown(t.text))))?;
        types.push(rtype.0);
    }
    types.sort_unstable();
    types.dedup();
    let mut i = 0;
    while i < types.len() {
        let window = (types[i] >> 8) as u8;
        let start = out.len();
        out.extend_from_slice(&[window, 0]);
        out.resize(start + 2 + 32, 0);
        let mut len = 0;
        while i < types.len() && (types[i] >> 8) as u8 == window {
            let low = usize::from(types[i] & 0xff);
            out[start + 2 + low / 8] |= 0x80 >> (low % 8);
            len = low / 8 + 1;
            i += 1;
        }
        out[start + 1] = len as u8;
        out.truncate(start + 2 + len);
    }
    Ok(())
}

/// Writes the types of a well-formed bitmap, each preceded by a space.
pub(super) fn write(data: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    for t in types(data) {
        write!(f, " {t}")?;
    }
    Ok(())
}
