//! rrl::classify -- which bucket a response is charged to (its class, and the name that
//! keys it: the qname, the zone, the zone cut or the wildcard), and the truncated form a
//! slipped response is cut to. Reads the response as built; allocates nothing.

use shardns_wire::message::{read_question, Reader, HEADER_LEN};
use shardns_wire::{NameBuf, Rcode};

/// Response classes (part of the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Class {
    Answer = 1,
    NxDomain = 2,
    NoData = 3,
    Error = 4,
}

/// A response's class, the hash of the name that keys it, its qtype (answers only) and
/// where its question ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Classified {
    pub(super) class: Class,
    pub(super) name: u64,
    pub(super) qtype: u16,
    pub(super) question_end: usize,
}

#[cfg(test)]
pub(super) fn classify(resp: &[u8], rcode: Rcode, truncated: bool) -> Classified {
    classify_keyed(resp, rcode, truncated, None)
}

/// [`classify`], with an answer from a wildcard (`wildcard`: its closest encloser's label
/// count, as `zone::Written` says) keyed by the wildcard, not by each of the names it
/// answers: a flood of random names under one wildcard is one flood (BIND's RRL does the
/// same). The question is read once for both.
pub(super) fn classify_keyed(
    resp: &[u8],
    rcode: Rcode,
    truncated: bool,
    wildcard: Option<u8>,
) -> Classified {
    let mut c = Classified {
        class: Class::Error,
        name: 0,
        qtype: 0,
        question_end: resp.len().min(HEADER_LEN),
    };
    let Some(h) = resp.get(..HEADER_LEN) else {
        return c;
    };
    let count = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    let (qdcount, ancount, nscount) = (count(4), count(6), count(8));
    if qdcount != 1 {
        return c;
    }
    let mut qname = NameBuf::new();
    let Ok((qtype, _, end)) = read_question(resp, HEADER_LEN, &mut qname) else {
        return c;
    };
    c.question_end = end;
    if rcode == Rcode::NOERROR && (truncated || ancount > 0) {
        c.class = Class::Answer;
        c.name = wildcard
            .and_then(|labels| wildcard_key(&qname, labels))
            .unwrap_or_else(|| qname.as_ref().hash_ci());
        c.qtype = qtype.0;
    } else if rcode == Rcode::NXDOMAIN || rcode == Rcode::NOERROR {
        c.class = if rcode == Rcode::NXDOMAIN {
            Class::NxDomain
        } else {
            Class::NoData
        };
        // The zone (SOA owner) or zone cut (NS owner): the first authority record's owner.
        // Without one (not from our zone code), the qname.
        c.name = first_authority_owner(resp, end, ancount, nscount, &mut qname)
            .unwrap_or_else(|| qname.as_ref().hash_ci());
    }
    c
}

/// The hash of `*.<encloser>`, the encloser being the question name's last
/// `encloser_labels` labels.
fn wildcard_key(qname: &NameBuf, encloser_labels: u8) -> Option<u64> {
    let encloser = qname.as_ref().suffix(usize::from(encloser_labels));
    let mut star = NameBuf::new();
    star.set_concat(&[1, b'*'], encloser).ok()?;
    Some(star.as_ref().hash_ci())
}

/// The hash of the owner name of the first authority record, after `ancount` answers.
pub(super) fn first_authority_owner(
    resp: &[u8],
    pos: usize,
    ancount: u16,
    nscount: u16,
    buf: &mut NameBuf,
) -> Option<u64> {
    if nscount == 0 {
        return None;
    }
    let mut r = Reader::new(resp, pos);
    for _ in 0..ancount {
        r.skip_name().ok()?;
        r.bytes(8).ok()?; // type, class, TTL
        let rdlen = r.u16().ok()?;
        r.bytes(usize::from(rdlen)).ok()?;
    }
    r.name(buf).ok()?;
    Some(buf.as_ref().hash_ci())
}

/// Cuts `resp` to its header and question with TC set and no records; returns the length.
pub(super) fn slip_response(resp: &mut [u8], question_end: usize) -> usize {
    if resp.len() < HEADER_LEN {
        return resp.len();
    }
    resp[2] |= 0x02; // TC
    if question_end <= HEADER_LEN {
        resp[4..6].fill(0);
    }
    resp[6..HEADER_LEN].fill(0);
    question_end.clamp(HEADER_LEN, resp.len())
}
