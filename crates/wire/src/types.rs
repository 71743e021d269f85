//! Protocol numbers: record types, classes, opcodes and response codes, with their mnemonics.

use core::fmt;

macro_rules! mnemonics {
    ($ty:ident, $what:literal, $generic:literal, { $($name:ident = $val:expr, $text:literal;)* }) => {
        impl $ty {
            $(#[doc = $text] pub const $name: $ty = $ty($val);)*

            /// The mnemonic, if this number has one.
            pub fn mnemonic(self) -> Option<&'static str> {
                match self.0 {
                    $($val => Some($text),)*
                    _ => None,
                }
            }

            /// Parses a mnemonic (any case) or the generic form (RFC 3597 `TYPE123`, `CLASS1`).
            pub fn from_text(s: &str) -> Option<$ty> {
                $(if s.eq_ignore_ascii_case($text) { return Some($ty($val)); })*
                let digits = s.get(..$generic.len())
                    .filter(|p| p.eq_ignore_ascii_case($generic))
                    .map(|_| &s[$generic.len()..])?;
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                digits.parse::<u16>().ok().map($ty)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.mnemonic() {
                    Some(m) => f.write_str(m),
                    None => write!(f, concat!($generic, "{}"), self.0),
                }
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    };
}

/// A resource record type (RFC 1035 §3.2.2 and later registrations).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RType(pub u16);

mnemonics!(RType, "type", "TYPE", {
    A = 1, "A";
    NS = 2, "NS";
    MD = 3, "MD";
    MF = 4, "MF";
    CNAME = 5, "CNAME";
    SOA = 6, "SOA";
    MB = 7, "MB";
    MG = 8, "MG";
    MR = 9, "MR";
    NULL = 10, "NULL";
    WKS = 11, "WKS";
    PTR = 12, "PTR";
    HINFO = 13, "HINFO";
    MINFO = 14, "MINFO";
    MX = 15, "MX";
    TXT = 16, "TXT";
    RP = 17, "RP";
    AFSDB = 18, "AFSDB";
    AAAA = 28, "AAAA";
    LOC = 29, "LOC";
    SRV = 33, "SRV";
    NAPTR = 35, "NAPTR";
    KX = 36, "KX";
    CERT = 37, "CERT";
    DNAME = 39, "DNAME";
    OPT = 41, "OPT";
    APL = 42, "APL";
    DS = 43, "DS";
    SSHFP = 44, "SSHFP";
    IPSECKEY = 45, "IPSECKEY";
    RRSIG = 46, "RRSIG";
    NSEC = 47, "NSEC";
    DNSKEY = 48, "DNSKEY";
    DHCID = 49, "DHCID";
    NSEC3 = 50, "NSEC3";
    NSEC3PARAM = 51, "NSEC3PARAM";
    TLSA = 52, "TLSA";
    SMIMEA = 53, "SMIMEA";
    CDS = 59, "CDS";
    CDNSKEY = 60, "CDNSKEY";
    OPENPGPKEY = 61, "OPENPGPKEY";
    CSYNC = 62, "CSYNC";
    ZONEMD = 63, "ZONEMD";
    SVCB = 64, "SVCB";
    HTTPS = 65, "HTTPS";
    SPF = 99, "SPF";
    EUI48 = 108, "EUI48";
    EUI64 = 109, "EUI64";
    TKEY = 249, "TKEY";
    TSIG = 250, "TSIG";
    IXFR = 251, "IXFR";
    AXFR = 252, "AXFR";
    MAILB = 253, "MAILB";
    MAILA = 254, "MAILA";
    ANY = 255, "ANY";
    URI = 256, "URI";
    CAA = 257, "CAA";
});

impl RType {
    /// Meta and query-only types (RFC 6895 §3.1) that never appear in zone data.
    pub fn is_meta(self) -> bool {
        matches!(self.0, 41 | 128..=255)
    }
}

/// A class (RFC 1035 §3.2.4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Class(pub u16);

mnemonics!(Class, "class", "CLASS", {
    IN = 1, "IN";
    CH = 3, "CH";
    HS = 4, "HS";
    NONE = 254, "NONE";
    ANY = 255, "ANY";
});

/// An opcode (RFC 1035 §4.1.1, RFC 6895 §2.2).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

impl Opcode {
    /// A standard query.
    pub const QUERY: Opcode = Opcode(0);
    /// An inverse query (obsolete).
    pub const IQUERY: Opcode = Opcode(1);
    /// A server status request.
    pub const STATUS: Opcode = Opcode(2);
    /// A zone change notification (RFC 1996).
    pub const NOTIFY: Opcode = Opcode(4);
    /// A dynamic update (RFC 2136).
    pub const UPDATE: Opcode = Opcode(5);
}

/// A response code, extended to 12 bits by EDNS (RFC 6891 §6.1.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rcode(pub u16);

mnemonics!(Rcode, "rcode", "RCODE", {
    NOERROR = 0, "NOERROR";
    FORMERR = 1, "FORMERR";
    SERVFAIL = 2, "SERVFAIL";
    NXDOMAIN = 3, "NXDOMAIN";
    NOTIMP = 4, "NOTIMP";
    REFUSED = 5, "REFUSED";
    YXDOMAIN = 6, "YXDOMAIN";
    YXRRSET = 7, "YXRRSET";
    NXRRSET = 8, "NXRRSET";
    NOTAUTH = 9, "NOTAUTH";
    NOTZONE = 10, "NOTZONE";
    BADVERS = 16, "BADVERS";
    BADCOOKIE = 23, "BADCOOKIE";
});

impl Rcode {
    /// The low four bits, carried in the header.
    pub fn header_bits(self) -> u8 {
        (self.0 & 0x0f) as u8
    }
    /// The high eight bits, carried in the OPT record's TTL field.
    pub fn extended_bits(self) -> u8 {
        (self.0 >> 4) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_and_generic() {
        assert_eq!(RType::from_text("aaaa"), Some(RType::AAAA));
        assert_eq!(RType::from_text("TYPE65280"), Some(RType(65280)));
        assert_eq!(RType::from_text("type1"), Some(RType::A));
        assert_eq!(RType::from_text("TYPE"), None);
        assert_eq!(RType::from_text("TYPE70000"), None);
        assert_eq!(RType::from_text("TYPE+1"), None);
        assert_eq!(RType(65280).to_string(), "TYPE65280");
        assert_eq!(RType::HTTPS.to_string(), "HTTPS");
        assert_eq!(Class::from_text("CLASS1"), Some(Class::IN));
        assert_eq!(Rcode::BADVERS.extended_bits(), 1);
        assert_eq!(Rcode::BADVERS.header_bits(), 0);
        assert!(RType::OPT.is_meta() && RType::ANY.is_meta() && !RType::CAA.is_meta());
    }
}
