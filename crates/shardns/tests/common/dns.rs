//! DNS messages on the wire: building queries and names, and reading responses with
//! hickory-proto, a parser that is not ours.

use hickory_proto::op::Message;

/// A query for `name` (presentation form) and type `qtype`; with an OPT record if `edns`
/// gives a UDP payload size.
pub fn query(id: u16, name: &str, qtype: u16, edns: Option<u16>) -> Vec<u8> {
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x00, 0x00]); // QUERY, RD clear
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(&u16::from(edns.is_some()).to_be_bytes());
    for label in name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    if let Some(size) = edns {
        m.push(0); // root owner
        m.extend_from_slice(&41u16.to_be_bytes());
        m.extend_from_slice(&size.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    m
}

/// A header: `id`, flags, and the four section counts.
pub fn header(id: u16, flags: u16, counts: [u16; 4]) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&flags.to_be_bytes());
    for c in counts {
        m.extend_from_slice(&c.to_be_bytes());
    }
    m
}

/// A record of class IN and TTL 300: `owner` in wire form, then type and RDATA.
pub fn record(owner: &[u8], rtype: u16, rdata: &[u8]) -> Vec<u8> {
    let mut r = owner.to_vec();
    r.extend_from_slice(&rtype.to_be_bytes());
    r.extend_from_slice(&1u16.to_be_bytes());
    r.extend_from_slice(&300u32.to_be_bytes());
    r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    r.extend_from_slice(rdata);
    r
}

/// Parses a response with hickory-proto.
pub fn parse(buf: &[u8]) -> Message {
    Message::from_vec(buf).unwrap_or_else(|e| panic!("hickory cannot parse {buf:02x?}: {e}"))
}

/// Answer records as `type rdata` strings, sorted.
pub fn answers(m: &Message) -> Vec<String> {
    let mut v: Vec<String> = m
        .answers
        .iter()
        .map(|r| format!("{} {}", r.record_type(), r.data))
        .collect();
    v.sort();
    v
}

/// `name` in uncompressed wire form (labels split on dots; the root label added).
pub fn wire_name(name: &str) -> Vec<u8> {
    let mut w = Vec::new();
    for l in name.split('.').filter(|l| !l.is_empty()) {
        w.push(l.len() as u8);
        w.extend_from_slice(l.as_bytes());
    }
    w.push(0);
    w
}
