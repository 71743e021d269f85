//! Tests: every form read back by our parser and by hickory-proto (an independent one), the
//! signature checked as a server checks it, and answers matched, verified or ignored.

use super::*;
use crate::message::Reader;
use crate::tsig::{Signer, BADKEY};
use hickory_proto::op::{Message as HMessage, MessageType, OpCode, UpdateMessage};
use hickory_proto::rr::{DNSClass, RecordType};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn key() -> Key {
    "hmac-sha256:ddns.example.:c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IQ=="
        .parse()
        .unwrap()
}

/// MX 10 mail.example. (a name the writer may compress).
fn mx() -> Vec<u8> {
    let mut d = vec![0, 10];
    d.extend_from_slice(n("mail.example.").as_wire());
    d
}

/// One of each prerequisite form and of each change.
fn every_form() -> Update {
    let (www, mail) = (n("www.example."), n("mail.example."));
    let mut u = Update::new(n("example.").as_ref(), 0x1234);
    u.require_rrset(www.as_ref(), RType::A)
        .require_rrset_with(www.as_ref(), RType::A, &[192, 0, 2, 1])
        .require_no_rrset(www.as_ref(), RType::AAAA)
        .require_name(mail.as_ref())
        .require_no_name(n("new.example.").as_ref())
        .add(n("example.").as_ref(), RType::MX, 300, &mx())
        .delete_rrset(www.as_ref(), RType::TXT)
        .delete_name(n("old.example.").as_ref())
        .delete_record(www.as_ref(), RType::A, &[192, 0, 2, 1]);
    u
}

/// (owner, type, class, TTL, rdata) of each record of a section.
type Row = (String, RType, Class, u32, Vec<u8>);

/// Reads `count` records at `r` with our reader: rdata decompressed, or empty (the delete and
/// prerequisite forms, which `Message::parse` does not take: their rdata fits no type).
fn rows(r: &mut Reader<'_>, count: u16) -> Vec<Row> {
    let mut name = NameBuf::new();
    (0..count)
        .map(|_| {
            r.name(&mut name).unwrap();
            let rtype = RType(r.u16().unwrap());
            let class = Class(r.u16().unwrap());
            let ttl = r.u32().unwrap();
            let len = usize::from(r.u16().unwrap());
            let start = r.pos();
            r.bytes(len).unwrap();
            let mut data = Vec::new();
            if len > 0 {
                crate::rdata::decompress(rtype, r.buf(), start, len, &mut data).unwrap();
            }
            (name.as_ref().to_string(), rtype, class, ttl, data)
        })
        .collect()
}

#[test]
fn every_form_reads_back_in_our_parser() {
    let req = every_form().finish(None, 0).unwrap();
    let msg = req.message();
    let h = Header::parse(msg).unwrap();
    assert_eq!(h.id, 0x1234);
    assert!(h.opcode() == Opcode::UPDATE);
    assert!(!h.qr());
    assert_eq!((h.qdcount, h.arcount), (1, 0));
    let mut zone = NameBuf::new();
    let (qtype, qclass, at) = crate::message::read_question(msg, 12, &mut zone).unwrap();
    assert_eq!(zone.as_ref().to_name(), n("example."));
    assert_eq!((qtype, qclass), (RType::SOA, Class::IN));
    let mut r = Reader::new(msg, at);
    let s = |x: &str| x.to_string();
    assert_eq!(
        rows(&mut r, h.ancount),
        [
            (s("www.example."), RType::A, Class::ANY, 0, vec![]),
            (
                s("www.example."),
                RType::A,
                Class::IN,
                0,
                vec![192, 0, 2, 1]
            ),
            (s("www.example."), RType::AAAA, Class::NONE, 0, vec![]),
            (s("mail.example."), RType::ANY, Class::ANY, 0, vec![]),
            (s("new.example."), RType::ANY, Class::NONE, 0, vec![]),
        ]
    );
    assert_eq!(
        rows(&mut r, h.nscount),
        [
            (s("example."), RType::MX, Class::IN, 300, mx()),
            (s("www.example."), RType::TXT, Class::ANY, 0, vec![]),
            (s("old.example."), RType::ANY, Class::ANY, 0, vec![]),
            (
                s("www.example."),
                RType::A,
                Class::NONE,
                0,
                vec![192, 0, 2, 1]
            ),
        ]
    );
    assert_eq!(r.remaining(), 0);
}

#[test]
fn every_form_reads_back_in_hickory() {
    let k = key();
    let req = every_form().finish(Some(&k), 1000).unwrap();
    let m = HMessage::from_vec(req.message()).unwrap();
    assert_eq!(m.metadata.op_code, OpCode::Update);
    assert_eq!(m.metadata.message_type, MessageType::Query);
    assert_eq!(UpdateMessage::id(&m), 0x1234);
    let zone = &m.zones()[0];
    assert_eq!(zone.name().to_string(), "example.");
    assert_eq!(zone.query_type(), RecordType::SOA);
    let form =
        |r: &hickory_proto::rr::Record| (r.name.to_string(), r.record_type(), r.dns_class, r.ttl);
    let s = |x: &str| x.to_string();
    assert_eq!(
        m.prerequisites().iter().map(form).collect::<Vec<_>>(),
        [
            (s("www.example."), RecordType::A, DNSClass::ANY, 0),
            (s("www.example."), RecordType::A, DNSClass::IN, 0),
            (s("www.example."), RecordType::AAAA, DNSClass::NONE, 0),
            (s("mail.example."), RecordType::ANY, DNSClass::ANY, 0),
            (s("new.example."), RecordType::ANY, DNSClass::NONE, 0),
        ]
    );
    assert_eq!(
        m.updates().iter().map(form).collect::<Vec<_>>(),
        [
            (s("example."), RecordType::MX, DNSClass::IN, 300),
            (s("www.example."), RecordType::TXT, DNSClass::ANY, 0),
            (s("old.example."), RecordType::ANY, DNSClass::ANY, 0),
            (s("www.example."), RecordType::A, DNSClass::NONE, 0),
        ]
    );
    assert_eq!(m.updates()[0].data.to_string(), "10 mail.example.");
    assert_eq!(m.updates()[3].data.to_string(), "192.0.2.1");
    // The TSIG: hickory keeps it apart when built with DNSSEC, else with the additional
    // records.
    let tsig = m
        .signature
        .as_ref()
        .map(|s| s.name.to_string())
        .or_else(|| {
            m.additionals
                .iter()
                .find(|r| r.record_type() == RecordType::TSIG)
                .map(|r| r.name.to_string())
        });
    assert_eq!(tsig.as_deref(), Some("ddns.example."));
}

#[test]
fn the_signature_verifies_as_a_server_checks_it() {
    let k = key();
    let req = every_form().finish(Some(&k), 1000).unwrap();
    let msg = req.message();
    let sig = tsig::read(msg).unwrap().expect("signed");
    assert_eq!(sig.key, k.name);
    assert!(tsig::verify(msg, &sig, std::slice::from_ref(&k), 1010).is_ok());
    // The signed part is the unsigned message (ARCOUNT aside).
    let plain = every_form().finish(None, 0).unwrap();
    assert_eq!(msg[12..sig.start], plain.message()[12..]);
}

/// The server's answer to `req` with `rcode`, signed with `k` if given.
fn answer(req: &Request, rcode: Rcode, k: Option<&Key>, now: u64) -> Vec<u8> {
    let sig = tsig::read(req.message()).unwrap();
    let end = sig.as_ref().map_or(req.message().len(), |s| s.start);
    let mut h = Header::parse(req.message()).unwrap();
    h.set_qr(true);
    h.set_rcode(rcode);
    h.ancount = 0;
    h.nscount = 0;
    h.arcount = 0;
    // The zone section only: a server does not echo the rest.
    let zone_end = zone_end(req.message());
    let mut buf = h.to_bytes().to_vec();
    buf.extend_from_slice(&req.message()[12..zone_end.min(end)]);
    let len = buf.len();
    buf.resize(len + 400, 0);
    let len = match (k, sig) {
        (Some(k), Some(sig)) => Signer::new(k, &sig).sign(&mut buf, len, now),
        _ => len,
    };
    buf.truncate(len);
    buf
}

/// Where the zone section of an update ends.
fn zone_end(msg: &[u8]) -> usize {
    let mut r = crate::message::Reader::new(msg, 12);
    r.skip_name().unwrap();
    r.pos() + 4
}

#[test]
fn answers_are_matched_and_verified() {
    let k = key();
    let mut req = every_form().finish(Some(&k), 1000).unwrap();
    // Not an answer to it: ignored.
    assert_eq!(
        req.response(req.message().to_vec().as_slice(), 1000),
        Ok(None)
    );
    let mut other = answer(&req, Rcode::NOERROR, Some(&k), 1000);
    other[1] ^= 1;
    assert_eq!(req.response(&other, 1000), Ok(None));
    assert_eq!(req.response(&[0; 5], 1000), Ok(None));
    // Unsigned, or forged: an error, and the real answer still verifies after it.
    let unsigned = answer(&req, Rcode::NOERROR, None, 1000);
    assert_eq!(req.response(&unsigned, 1000), Err(Error::Unsigned));
    let mut forged = answer(&req, Rcode::NOERROR, Some(&k), 1000);
    forged[3] = (forged[3] & 0xf0) | 5; // REFUSED, under the MAC
    assert_eq!(req.response(&forged, 1000), Err(Error::BadSig));
    let ok = answer(&req, Rcode::NOERROR, Some(&k), 1001);
    assert_eq!(req.response(&ok, 1001), Ok(Some(Rcode::NOERROR)));

    let mut req = every_form().finish(Some(&k), 1000).unwrap();
    let refused = answer(&req, Rcode::REFUSED, Some(&k), 1000);
    assert_eq!(req.response(&refused, 1000), Ok(Some(Rcode::REFUSED)));

    // The server does not know the key: NOTAUTH with an unsigned BADKEY.
    let mut req = every_form().finish(Some(&k), 1000).unwrap();
    let sig = tsig::read(req.message()).unwrap().unwrap();
    let mut notauth = answer(&req, Rcode::NOTAUTH, None, 1000);
    let len = notauth.len();
    notauth.resize(len + 400, 0);
    let len = tsig::append_error(&mut notauth, len, &sig, BADKEY, 1000);
    notauth.truncate(len);
    assert_eq!(
        req.response(&notauth, 1000),
        Err(Error::ServerError(BADKEY))
    );

    // An unsigned request takes an unsigned answer; one without the zone section too.
    let mut req = every_form().finish(None, 0).unwrap();
    let mut formerr = answer(&req, Rcode::FORMERR, None, 0);
    formerr.truncate(12);
    formerr[5] = 0; // QDCOUNT 0
    assert_eq!(req.response(&formerr, 0), Ok(Some(Rcode::FORMERR)));
    // A server may echo every section (their empty rdata is skipped, not parsed); an
    // OPT record's upper rcode bits count (BADVERS is 16).
    let mut echo = req.message().to_vec();
    echo[2] |= 0x80;
    echo[3] |= 5;
    assert_eq!(req.response(&echo, 0), Ok(Some(Rcode::REFUSED)));
    echo[3] &= 0xf0;
    echo[11] = 1; // ARCOUNT
    echo.extend_from_slice(&[0, 0, 41, 4, 0, 1, 0, 0, 0, 0, 0]);
    assert_eq!(req.response(&echo, 0), Ok(Some(Rcode(16))));
    echo.push(0);
    assert_eq!(req.response(&echo, 0), Ok(None));
    // Another zone's answer is not ours.
    let mut wrong = Update::new(n("example.net.").as_ref(), 0x1234)
        .finish(None, 0)
        .unwrap();
    let theirs = answer(&wrong, Rcode::NOERROR, None, 0);
    assert_eq!(req.response(&theirs, 0), Ok(None));
    assert_eq!(wrong.response(&theirs, 0), Ok(Some(Rcode::NOERROR)));
}

#[test]
fn a_message_past_65535_octets_is_full() {
    let mut u = Update::new(n("example.").as_ref(), 1);
    let big = vec![0u8; 60000];
    u.add(n("a.example.").as_ref(), RType(65280), 60, &big);
    assert!(u.finish(Some(&key()), 0).is_ok());
    u.add(n("b.example.").as_ref(), RType(65280), 60, &big[..6000]);
    assert_eq!(u.finish(None, 0).unwrap_err(), Full);
    // Room is kept for the signature.
    let mut u = Update::new(n("example.").as_ref(), 1);
    u.add(
        n("a.example.").as_ref(),
        RType(65280),
        60,
        &vec![0; 65535 - 39],
    );
    assert!(u.finish(None, 0).is_ok());
    assert_eq!(u.finish(Some(&key()), 0).unwrap_err(), Full);
}
