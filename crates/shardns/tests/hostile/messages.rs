//! Building raw messages the way no library would: headers with any counts, OPT records
//! with any fields and option lists, questions in any wire form; and the fixed-seed
//! generator of random octets.

use crate::common::*;

pub(crate) fn set_count(m: &mut [u8], section: usize, v: u16) {
    m[4 + 2 * section..6 + 2 * section].copy_from_slice(&v.to_be_bytes());
}

/// An EDNS option: code and data.
pub(crate) type EdnsOption<'a> = (u16, &'a [u8]);

/// An OPT record: UDP size, extended RCODE, version, flags, options.
pub(crate) fn opt(
    size: u16,
    ext: u8,
    version: u8,
    flags: u16,
    options: &[(u16, &[u8])],
) -> Vec<u8> {
    let mut rdata = Vec::new();
    for (code, data) in options {
        rdata.extend_from_slice(&code.to_be_bytes());
        rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
        rdata.extend_from_slice(data);
    }
    opt_raw(size, ext, version, flags, &rdata)
}

pub(crate) fn opt_raw(size: u16, ext: u8, version: u8, flags: u16, rdata: &[u8]) -> Vec<u8> {
    let mut r = vec![0, 0, 41];
    r.extend_from_slice(&size.to_be_bytes());
    r.extend_from_slice(&[ext, version]);
    r.extend_from_slice(&flags.to_be_bytes());
    r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    r.extend_from_slice(rdata);
    r
}

/// A query: header with `counts`, a question (`qname` in wire form), then `rest`.
pub(crate) fn raw_query(
    id: u16,
    counts: [u16; 4],
    qname: &[u8],
    qtype: u16,
    rest: &[u8],
) -> Vec<u8> {
    let mut m = header(id, 0, counts);
    m.extend_from_slice(qname);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(rest);
    m
}

/// A well-formed query for `name`/`qtype` with an OPT record.
pub(crate) fn edns_query(id: u16, name: &str, qtype: u16, opt_rr: &[u8]) -> Vec<u8> {
    raw_query(id, [1, 0, 0, 1], &wire_name(name), qtype, opt_rr)
}

/// A small deterministic generator (xorshift64*): the inputs are the same on every run.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}
