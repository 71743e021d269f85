//! [`Header`], the fixed 12-octet header of a message (RFC 1035 §4.1.1).
//!
//! Its own module, a leaf, because [`crate::Error::Malformed`] carries one; reading it
//! ([`Header::parse`]) is in `message`, with the other readers.

use crate::types::{Opcode, Rcode};

/// Length of the fixed header.
pub const HEADER_LEN: usize = 12;

/// The fixed 12-octet header (RFC 1035 §4.1.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Query identifier.
    pub id: u16,
    /// QR, opcode, AA, TC, RD, RA, Z, AD, CD and RCODE bits.
    pub flags: u16,
    /// Question count.
    pub qdcount: u16,
    /// Answer count.
    pub ancount: u16,
    /// Authority count.
    pub nscount: u16,
    /// Additional count.
    pub arcount: u16,
}

macro_rules! flag {
    ($get:ident, $set:ident, $bit:expr, $doc:literal) => {
        #[doc = $doc]
        #[inline]
        pub fn $get(&self) -> bool {
            self.flags & $bit != 0
        }
        #[doc = $doc]
        #[inline]
        pub fn $set(&mut self, on: bool) {
            if on {
                self.flags |= $bit
            } else {
                self.flags &= !$bit
            }
        }
    };
}

impl Header {
    /// The wire form.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        for (i, v) in [
            self.id,
            self.flags,
            self.qdcount,
            self.ancount,
            self.nscount,
            self.arcount,
        ]
        .into_iter()
        .enumerate()
        {
            b[2 * i..2 * i + 2].copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    flag!(qr, set_qr, 0x8000, "Response (QR).");
    flag!(aa, set_aa, 0x0400, "Authoritative answer (AA).");
    flag!(tc, set_tc, 0x0200, "Truncated (TC).");
    flag!(rd, set_rd, 0x0100, "Recursion desired (RD).");
    flag!(ra, set_ra, 0x0080, "Recursion available (RA).");
    flag!(z, set_z, 0x0040, "The reserved Z bit.");
    flag!(ad, set_ad, 0x0020, "Authentic data (AD).");
    flag!(cd, set_cd, 0x0010, "Checking disabled (CD).");

    /// The opcode.
    #[inline]
    pub fn opcode(&self) -> Opcode {
        Opcode(((self.flags >> 11) & 0x0f) as u8)
    }
    /// Sets the opcode.
    pub fn set_opcode(&mut self, op: Opcode) {
        self.flags = (self.flags & !0x7800) | ((op.0 as u16 & 0x0f) << 11);
    }
    /// The header's four RCODE bits (without the EDNS extension).
    #[inline]
    pub fn rcode_bits(&self) -> u8 {
        (self.flags & 0x0f) as u8
    }
    /// Sets the header's four RCODE bits from `rcode`.
    pub fn set_rcode(&mut self, rcode: Rcode) {
        self.flags = (self.flags & !0x000f) | rcode.header_bits() as u16;
    }
}
