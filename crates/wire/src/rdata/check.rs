//! Wire-form checks of rdata against its type's fields, and decompression out of a message.

use super::{bitmap, svcb, Field};
use crate::error::Error;
use crate::name::{NameBuf, NameRef};

/// Walks `fields` over `msg[start..]`, which must hold exactly one rdata. With `out`, the
/// fields are copied there in uncompressed form, and `Name(true)` fields may be compressed
/// (pointers into `msg` before them); without it, the rdata must already be uncompressed.
///
/// Returns where the last field starts.
pub(super) fn walk(
    fields: &[Field],
    msg: &[u8],
    start: usize,
    mut out: Option<&mut Vec<u8>>,
) -> Result<usize, Error> {
    let mut pos = start;
    let mut last = start;
    for &field in fields {
        last = pos;
        let data = msg.get(pos..).ok_or(Error::BadRdata)?;
        if let (Field::Name(true), Some(out)) = (field, out.as_deref_mut()) {
            let mut name = NameBuf::new();
            pos = name.read(msg, pos).map_err(|_| Error::BadRdata)?;
            out.extend_from_slice(name.as_ref().as_wire());
            continue;
        }
        let n = field_len(field, data).ok_or(Error::BadRdata)?;
        if let Some(out) = out.as_deref_mut() {
            out.extend_from_slice(&data[..n]);
        }
        pos += n;
    }
    if pos != msg.len() {
        return Err(Error::BadRdata);
    }
    Ok(last)
}

/// The length of one field at the start of `data` if it is well formed (names uncompressed).
fn field_len(field: Field, data: &[u8]) -> Option<usize> {
    let fixed = |n: usize| (data.len() >= n).then_some(n);
    let counted = || {
        let n = 1 + usize::from(*data.first()?);
        (data.len() >= n).then_some(n)
    };
    match field {
        Field::U8 | Field::Alg => fixed(1),
        Field::U16 | Field::Type => fixed(2),
        Field::U32 | Field::Ttl | Field::Time | Field::Ipv4 => fixed(4),
        Field::Ipv6 => fixed(16),
        Field::Eui48 => fixed(6),
        Field::Eui64 => fixed(8),
        Field::Name(_) => NameRef::from_wire_prefix(data).ok().map(|(_, n)| n),
        Field::CharStr | Field::Salt => counted(),
        Field::Hash => {
            let n = counted()?;
            (n > 1).then_some(n)
        }
        Field::CaaTag => {
            let n = counted()?;
            (n > 1 && data[1..n].iter().all(u8::is_ascii_alphanumeric)).then_some(n)
        }
        Field::CharStrs => {
            let mut pos = 0;
            while pos < data.len() {
                pos += 1 + usize::from(data[pos]);
            }
            (pos == data.len() && pos > 0).then_some(pos)
        }
        Field::Rest | Field::Base64 | Field::Hex => Some(data.len()),
        Field::Bitmap => bitmap::check(data).then_some(data.len()),
        Field::SvcParams => svcb::check(data).then_some(data.len()),
    }
}
