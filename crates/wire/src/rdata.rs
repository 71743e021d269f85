//! Record data by type: decompression on read, compression on write (RFC 3597 §4),
//! presentation format both ways, and the names inside rdata that answering follows.

use crate::message::{Reader, WireError};
use crate::name::{NameBuf, NameRef};
use crate::text::{TextError, Token};
use crate::types::RType;
use crate::writer::{Full, MessageWriter};
use core::fmt;

/// Types whose embedded names may be compressed on the wire (RFC 3597 §4, RFC 1035).
fn compressible(rtype: RType) -> bool {
    matches!(rtype.0, 2..=9 | 12 | 14 | 15)
}

/// Copies rdata from a message into uncompressed form.
pub fn decompress(rtype: RType, msg: &[u8], start: usize, len: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
    let end = start + len;
    let mut r = Reader::new(&msg[..end], start);
    let mut name = NameBuf::new();
    let mut names = |r: &mut Reader<'_>, out: &mut Vec<u8>, n: usize| -> Result<(), WireError> {
        for _ in 0..n {
            r.name(&mut name)?;
            out.extend_from_slice(name.as_ref().as_wire());
        }
        Ok(())
    };
    match rtype {
        RType::NS | RType::MD | RType::MF | RType::CNAME | RType::MB | RType::MG | RType::MR | RType::PTR => {
            names(&mut r, out, 1)?
        }
        RType::MINFO => names(&mut r, out, 2)?,
        RType::MX => {
            out.extend_from_slice(r.bytes(2)?);
            names(&mut r, out, 1)?
        }
        RType::SOA => {
            names(&mut r, out, 2)?;
            out.extend_from_slice(r.bytes(20)?);
        }
        _ => {
            out.extend_from_slice(r.bytes(len)?);
        }
    }
    if r.pos() != end {
        return Err(WireError::BadRdata);
    }
    Ok(())
}

/// Writes uncompressed rdata into a message, compressing names where the type allows.
pub fn compose(rtype: RType, rdata: &[u8], w: &mut MessageWriter<'_>) -> Result<(), Full> {
    if !compressible(rtype) {
        return w.put_bytes(rdata);
    }
    let mut pos = 0;
    let name = |w: &mut MessageWriter<'_>, pos: &mut usize| -> Result<(), Full> {
        match NameRef::from_wire_prefix(&rdata[*pos..]) {
            Ok((n, l)) => {
                *pos += l;
                w.put_name(n, true)
            }
            // Zone data is validated at load; copy anything else as it is.
            Err(_) => {
                let rest = &rdata[*pos..];
                *pos = rdata.len();
                w.put_bytes(rest)
            }
        }
    };
    match rtype {
        RType::MX => {
            w.put_bytes(&rdata[..2.min(rdata.len())])?;
            pos = 2.min(rdata.len());
            name(w, &mut pos)?;
        }
        RType::SOA | RType::MINFO => {
            name(w, &mut pos)?;
            name(w, &mut pos)?;
        }
        _ => name(w, &mut pos)?,
    }
    w.put_bytes(&rdata[pos..])
}

/// Parses presentation-format rdata; relative names take `origin`.
pub fn from_text(rtype: RType, tokens: &[Token<'_>], origin: NameRef<'_>, out: &mut Vec<u8>) -> Result<(), TextError> {
    let _ = origin;
    generic_from_text(rtype, tokens, out)
}

/// RFC 3597 §5 generic rdata: `\# LENGTH HEX...`.
fn generic_from_text(rtype: RType, tokens: &[Token<'_>], out: &mut Vec<u8>) -> Result<(), TextError> {
    match tokens {
        [t, len, hex @ ..] if t.text == b"\\#" => {
            let len: usize = core::str::from_utf8(len.text)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| TextError::new("bad \\# length"))?;
            let start = out.len();
            for t in hex {
                let digits = t.text;
                if digits.len() % 2 != 0 {
                    return Err(TextError::new("odd number of hex digits"));
                }
                for pair in digits.chunks(2) {
                    let s = core::str::from_utf8(pair).map_err(|_| TextError::new("bad hex"))?;
                    out.push(u8::from_str_radix(s, 16).map_err(|_| TextError::new("bad hex"))?);
                }
            }
            if out.len() - start != len {
                return Err(TextError::new(format!("\\# length {len} does not match the data")));
            }
            Ok(())
        }
        _ => Err(TextError::new(format!("unsupported rdata for {rtype}"))),
    }
}

/// Formats rdata in presentation format.
pub fn fmt_text(rtype: RType, rdata: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    let _ = rtype;
    write!(f, "\\# {}", rdata.len())?;
    if !rdata.is_empty() {
        f.write_char(' ')?;
        for b in rdata {
            write!(f, "{b:02x}")?;
        }
    }
    Ok(())
}

/// The name that answering follows from this rdata: the CNAME/DNAME target, or the host
/// whose addresses go in the additional section (NS, MX, SRV).
pub fn target_name(rtype: RType, rdata: &[u8]) -> Option<NameRef<'_>> {
    let at = match rtype {
        RType::NS | RType::CNAME | RType::DNAME | RType::PTR => 0,
        RType::MX => 2,
        RType::SRV => 6,
        _ => return None,
    };
    NameRef::from_wire_prefix(rdata.get(at..)?).ok().map(|(n, _)| n)
}
