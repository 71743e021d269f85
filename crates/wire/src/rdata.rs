//! Record data by type: decompression on read (RFC 3597 §4), validation, presentation
//! format both ways, and the names inside rdata that answering follows. Compression on
//! write is the writer's ([`crate::writer::compose`]): this module never writes a message.
//!
//! Rdata is kept in uncompressed wire form everywhere. Each known type is described once, as
//! a list of `Field`s (`fields`); the walkers in `check`, `scan` and `print` read that
//! list, so a type's wire checks, text parser and text printer cannot disagree. Types
//! without a description are opaque octets: any length is valid and the text form is the
//! RFC 3597 generic `\# LEN HEX`, which also works for every known type.
//!
//! Never: I/O, clocks (RRSIG times are plain numbers here).

mod addr;
mod bitmap;
mod check;
mod print;
mod scan;
mod svcb;
mod time;

/// Writes an RRSIG time (RFC 4034 §3.2) as `YYYYMMDDHHmmSS`.
pub use time::write as write_rrsig_time;

use crate::error::Error;
use crate::name::NameRef;
use crate::text::{number, Token};
use crate::types::RType;
use core::fmt;

/// Route Through (RFC 1183), no mnemonic in [`RType`].
const RT: RType = RType(21);
/// X.400 mapping (RFC 2163), no mnemonic in [`RType`].
const PX: RType = RType(26);

/// One field of a type's rdata, in wire order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// One octet, a decimal number in text.
    U8,
    /// A DNSSEC algorithm octet: a number, or in text also a mnemonic (RFC 4034 Appendix A.1).
    Alg,
    /// Two octets.
    U16,
    /// Four octets.
    U32,
    /// Four octets of seconds; text also takes TTL units (`1h30m`).
    Ttl,
    /// A type number, as a mnemonic or `TYPEnnn` in text (RRSIG type covered).
    Type,
    /// RRSIG time: four octets, `YYYYMMDDHHMMSS` or seconds in text (RFC 4034 §3.2).
    Time,
    /// An IPv4 address.
    Ipv4,
    /// An IPv6 address.
    Ipv6,
    /// A domain name; `true` if it may arrive compressed (RFC 1035 types and RFC 3597 §4).
    Name(bool),
    /// One `<character-string>`: a length octet and up to 255 octets.
    CharStr,
    /// One or more `<character-string>`s, to the end (TXT).
    CharStrs,
    /// Octets to the end, one quoted string in text (CAA value, URI target).
    Rest,
    /// CAA tag: a length octet and 1 to 255 letters and digits.
    CaaTag,
    /// Octets to the end, base64 in text (may be split by whitespace).
    Base64,
    /// Octets to the end, hex in text (may be split by whitespace).
    Hex,
    /// NSEC3 salt: a length octet and octets, hex or `-` in text.
    Salt,
    /// NSEC3 next hashed owner: a length octet and 1 or more octets, base32hex in text.
    Hash,
    /// Type bitmap to the end (RFC 4034 §4.1.2), type mnemonics in text.
    Bitmap,
    /// EUI-48 address (RFC 7043), `xx-xx-xx-xx-xx-xx` in text.
    Eui48,
    /// EUI-64 address (RFC 7043).
    Eui64,
    /// SVCB parameters to the end (RFC 9460 §2.2).
    SvcParams,
}

use Field::*;

/// The fields of a known type, or `None` for types handled as opaque octets.
fn fields(rtype: RType) -> Option<&'static [Field]> {
    Some(match rtype {
        RType::A => &[Ipv4],
        RType::NS
        | RType::MD
        | RType::MF
        | RType::CNAME
        | RType::MB
        | RType::MG
        | RType::MR
        | RType::PTR => &[Name(true)],
        RType::SOA => &[Name(true), Name(true), U32, Ttl, Ttl, Ttl, Ttl],
        RType::HINFO => &[CharStr, CharStr],
        RType::MINFO | RType::RP => &[Name(true), Name(true)],
        RType::MX | RType::AFSDB | RT | RType::KX => &[U16, Name(true)],
        RType::TXT | RType::SPF => &[CharStrs],
        PX => &[U16, Name(true), Name(true)],
        RType::AAAA => &[Ipv6],
        RType::SRV => &[U16, U16, U16, Name(true)],
        RType::NAPTR => &[U16, U16, CharStr, CharStr, CharStr, Name(true)],
        RType::DNAME => &[Name(false)],
        RType::DS | RType::CDS => &[U16, Alg, U8, Hex],
        RType::SSHFP => &[U8, U8, Hex],
        RType::RRSIG => &[Type, Alg, U8, Ttl, Time, Time, U16, Name(false), Base64],
        RType::NSEC => &[Name(false), Bitmap],
        RType::DNSKEY | RType::CDNSKEY => &[U16, U8, Alg, Base64],
        RType::DHCID | RType::OPENPGPKEY => &[Base64],
        RType::NSEC3 => &[U8, U8, U16, Salt, Hash, Bitmap],
        RType::NSEC3PARAM => &[U8, U8, U16, Salt],
        RType::TLSA | RType::SMIMEA => &[U8, U8, U8, Hex],
        RType::CSYNC => &[U32, U16, Bitmap],
        RType::ZONEMD => &[U32, U8, U8, Hex],
        RType::SVCB | RType::HTTPS => &[U16, Name(false), SvcParams],
        RType::EUI48 => &[Eui48],
        RType::EUI64 => &[Eui64],
        RType::URI => &[U16, U16, Rest],
        RType::CAA => &[U8, CaaTag, Rest],
        _ => return None,
    })
}

/// Copies rdata of `len` octets at `start` in a message into uncompressed form, appending
/// to `out`, and checks it fits its type ([`validate`]).
///
/// Names may be compressed in the RFC 1035 types (NS MD MF CNAME SOA MB MG MR PTR MINFO MX)
/// and, per RFC 3597 §4, in RP, AFSDB, RT, PX, NAPTR, SRV and KX; in other known types a
/// pointer is an error. Unknown types are copied as they are. On error, `out` is left as it
/// was.
pub fn decompress(
    rtype: RType,
    msg: &[u8],
    start: usize,
    len: usize,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let end = start.checked_add(len).ok_or(Error::ShortInput)?;
    if end > msg.len() {
        return Err(Error::ShortInput);
    }
    let mark = out.len();
    let r = match fields(rtype) {
        Some(fields) => check::walk(fields, &msg[..end], start, Some(out)).map(drop),
        None => {
            out.extend_from_slice(&msg[start..end]);
            Ok(())
        }
    };
    if r.is_err() {
        out.truncate(mark);
    }
    r
}

/// Checks that uncompressed rdata is well formed for its type: fixed lengths, valid names
/// without pointers, string lengths, bitmaps, SVCB parameters. Unknown types always pass.
pub fn validate(rtype: RType, rdata: &[u8]) -> Result<(), Error> {
    match fields(rtype) {
        Some(fields) => check::walk(fields, rdata, 0, None).map(drop),
        None => Ok(()),
    }
}

/// Parses presentation-format rdata, appending its wire form to `out`.
///
/// `tokens` are the record's rdata tokens from the zone-file scanner, escapes not yet
/// decoded. Relative names get `origin` appended, and a name written `@` is the origin.
/// The RFC 3597 generic form `\# LEN HEX...` is accepted for every type; for known types
/// its data must then be valid for the type. On error, `out` is left as it was.
pub fn from_text(
    rtype: RType,
    tokens: &[Token<'_>],
    origin: NameRef<'_>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mark = out.len();
    let r = match tokens.first() {
        Some(t) if t.text == b"\\#" && !t.quoted => {
            generic_from_text(rtype, &tokens[1..], out, mark)
        }
        _ => match fields(rtype) {
            Some(fields) => scan::fields(rtype, fields, tokens, origin, out).inspect(|()| {
                debug_assert_eq!(
                    validate(rtype, &out[mark..]),
                    Ok(()),
                    "{rtype} text made bad rdata"
                );
            }),
            None => Err(Error::text(format_args!(
                "{rtype} has no known text form; use \\# LENGTH HEX (RFC 3597)"
            ))),
        },
    };
    let r = r.and_then(|()| {
        if out.len() - mark > usize::from(u16::MAX) {
            return Err(Error::text("rdata longer than 65535 octets"));
        }
        Ok(())
    });
    if r.is_err() {
        out.truncate(mark);
    }
    r
}

/// RFC 3597 §5 generic rdata after the `\#`: `LENGTH HEX...`, hex split anywhere.
fn generic_from_text(
    rtype: RType,
    tokens: &[Token<'_>],
    out: &mut Vec<u8>,
    mark: usize,
) -> Result<(), Error> {
    let (len, hex) = tokens
        .split_first()
        .ok_or_else(|| Error::text("missing length after \\#"))?;
    let len: usize = number(len.text, u16::MAX.into(), "\\# length")? as usize;
    crate::text::hex_decode(hex.iter().map(|t| t.text), out)?;
    let got = out.len() - mark;
    if got != len {
        return Err(Error::text(format_args!(
            "\\# length {len} but {got} octets of data"
        )));
    }
    validate(rtype, &out[mark..])
        .map_err(|_| Error::text(format_args!("\\# data is not valid {rtype} rdata")))
}

/// Formats rdata in presentation format, the way `dig` shows it: names absolute, strings
/// quoted with escapes, hex in upper case. Unknown types, and rdata that is not valid for
/// its type, use the RFC 3597 generic form `\# LEN HEX`. The output parses back with
/// [`from_text`] to the same octets.
pub fn fmt_text(rtype: RType, rdata: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    match fields(rtype) {
        Some(fields) if print::printable(fields, rdata) => print::fields(fields, rdata, f),
        _ => fmt_generic(rdata, f),
    }
}

/// The RFC 3597 generic form: `\# LEN HEX`.
fn fmt_generic(rdata: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    write!(f, "\\# {}", rdata.len())?;
    if !rdata.is_empty() {
        f.write_char(' ')?;
        crate::text::write_hex(rdata, f)?;
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
    NameRef::from_wire_prefix(rdata.get(at..)?)
        .ok()
        .map(|(n, _)| n)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hickory;
