//! Wire form to presentation format, field by field, for rdata that passed the checks.

use super::{addr, bitmap, check, svcb, time, Field};
use crate::name::NameRef;
use crate::text;
use core::fmt;

/// True if the rdata is valid and has a typed text form: a key, digest or signature field
/// at the end must not be empty, since the text form has no way to write that.
pub(super) fn printable(fields: &[Field], rdata: &[u8]) -> bool {
    match check::walk(fields, rdata, 0, None) {
        Ok(last) => {
            !(matches!(fields.last(), Some(Field::Base64 | Field::Hex)) && last == rdata.len())
        }
        Err(_) => false,
    }
}

/// Writes valid rdata field by field, separated by spaces.
pub(super) fn fields(fields: &[Field], rdata: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    let mut pos = 0;
    for (i, &field) in fields.iter().enumerate() {
        let data = rdata.get(pos..).ok_or(fmt::Error)?;
        // Lists write a space before each of their items, so an empty list leaves none.
        if i > 0 && !matches!(field, Field::Bitmap | Field::SvcParams) {
            f.write_char(' ')?;
        }
        pos += one(field, data, f)?;
    }
    Ok(())
}

/// Writes one field at the start of `data`; returns its length.
fn one(field: Field, data: &[u8], f: &mut impl fmt::Write) -> Result<usize, fmt::Error> {
    let get = |n: usize| data.get(..n).ok_or(fmt::Error);
    let counted = || {
        let n = usize::from(*data.first().ok_or(fmt::Error)?);
        data.get(1..1 + n).ok_or(fmt::Error)
    };
    Ok(match field {
        Field::U8 | Field::Alg => {
            write!(f, "{}", get(1)?[0])?;
            1
        }
        Field::U16 => {
            let b = get(2)?;
            write!(f, "{}", u16::from_be_bytes([b[0], b[1]]))?;
            2
        }
        Field::U32 | Field::Ttl => {
            let b = get(4)?;
            write!(f, "{}", u32::from_be_bytes([b[0], b[1], b[2], b[3]]))?;
            4
        }
        Field::Type => {
            let b = get(2)?;
            write!(f, "{}", crate::RType(u16::from_be_bytes([b[0], b[1]])))?;
            2
        }
        Field::Time => {
            let b = get(4)?;
            time::write(u32::from_be_bytes([b[0], b[1], b[2], b[3]]), f)?;
            4
        }
        Field::Ipv4 => {
            addr::write_v4(get(4)?, f)?;
            4
        }
        Field::Ipv6 => {
            addr::write_v6(get(16)?, f)?;
            16
        }
        Field::Name(_) => {
            let (name, n) = NameRef::from_wire_prefix(data).map_err(|_| fmt::Error)?;
            write!(f, "{name}")?;
            n
        }
        Field::CharStr => {
            let s = counted()?;
            text::write_quoted(s, f)?;
            1 + s.len()
        }
        Field::CharStrs => {
            let mut pos = 0;
            while pos < data.len() {
                if pos > 0 {
                    f.write_char(' ')?;
                }
                pos += one(Field::CharStr, &data[pos..], f)?;
            }
            pos
        }
        Field::Rest => {
            text::write_quoted(data, f)?;
            data.len()
        }
        Field::CaaTag => {
            let tag = counted()?;
            f.write_str(core::str::from_utf8(tag).map_err(|_| fmt::Error)?)?;
            1 + tag.len()
        }
        Field::Base64 => {
            text::write_base64(data, f)?;
            data.len()
        }
        Field::Hex => {
            text::write_hex(data, f)?;
            data.len()
        }
        Field::Salt => {
            let salt = counted()?;
            if salt.is_empty() {
                f.write_char('-')?;
            } else {
                text::write_hex(salt, f)?;
            }
            1 + salt.len()
        }
        Field::Hash => {
            let hash = counted()?;
            text::write_base32hex(hash, f)?;
            1 + hash.len()
        }
        Field::Bitmap => {
            bitmap::write(data, f)?;
            data.len()
        }
        Field::Eui48 | Field::Eui64 => {
            let n = if field == Field::Eui48 { 6 } else { 8 };
            for (i, b) in get(n)?.iter().enumerate() {
                if i > 0 {
                    f.write_char('-')?;
                }
                write!(f, "{b:02x}")?;
            }
            n
        }
        Field::SvcParams => {
            svcb::write(data, f)?;
            data.len()
        }
    })
}
