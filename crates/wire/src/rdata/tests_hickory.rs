//! Cross-checks against an independent implementation (hickory-proto, a dev-dependency):
//! the wire form we build from text must read back in hickory and re-encode to the same
//! octets, hickory's own text parser must agree with ours, and so must our printed text.

use super::tests::parse;
use super::*;
use hickory_proto::rr::{RData, RecordType};
use hickory_proto::serialize::binary::{
    BinDecoder, BinEncodable, BinEncoder, NameEncoding, Restrict,
};

/// Records whose text both implementations read; names are absolute, since hickory's
/// rdata parser has no origin.
const CASES: &[(&str, &str)] = &[
    ("A", "192.0.2.1"),
    ("AAAA", "2001:db8::53"),
    ("AAAA", "::ffff:192.0.2.1"),
    ("NS", "ns1.example.com."),
    ("CNAME", "www.example.net."),
    ("PTR", "host.example."),
    (
        "SOA",
        "ns1.example.com. hostmaster.example.com. 2024010101 3600 900 604800 86400",
    ),
    ("MX", "10 mail.example.com."),
    ("MX", "0 ."),
    ("TXT", "\"v=spf1 -all\""),
    ("TXT", "\"hello world\" \"second string\" \"\""),
    // No `\DDD` here: hickory 0.26 does not decode those as decimal octets.
    ("TXT", "\"quote \\\" and backslash \\\\\""),
    ("SRV", "0 5 5060 sip.example.com."),
    ("CAA", "0 issue \"ca.example.net\""),
    ("CAA", "128 iodef \"mailto:security@example.com\""),
    (
        "NAPTR",
        "100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:info@example.com!\" .",
    ),
    ("HINFO", "\"KLH-10\" \"TOPS-20\""),
    ("SSHFP", "2 1 123456789ABCDEF67890123456789ABCDEF67890"),
    (
        "TLSA",
        "3 1 1 D2ABDE240D7CD3EE6B4B28C54DF034B97983A1D16E8A410E4561CB106618E971",
    ),
    (
        "SMIMEA",
        "3 1 1 D2ABDE240D7CD3EE6B4B28C54DF034B97983A1D16E8A410E4561CB106618E971",
    ),
    ("OPENPGPKEY", "AQIDBAUGBwgJ"),
    ("CSYNC", "66 3 A NS AAAA"),
    ("HTTPS", "0 foo.example.com."),
    (
        "HTTPS",
        "1 . alpn=\"h3,h2\" ipv4hint=104.16.132.229,104.16.133.229 ipv6hint=2606:4700::6810:84e5",
    ),
    (
        "SVCB",
        "16 foo.example.org. mandatory=alpn,ipv4hint alpn=\"h2,h3-19\" ipv4hint=192.0.2.1",
    ),
    ("SVCB", "1 foo.example.com. port=53 ech=AEX+DQBB"),
    ("SVCB", "1 foo.example.com. alpn=\"h2\" no-default-alpn"),
];

fn hickory_type(t: &str) -> RecordType {
    RecordType::from(RType::from_text(t).unwrap().0)
}

/// Encodes hickory rdata without name compression.
fn hickory_wire(rdata: &RData) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = BinEncoder::new(&mut out);
    enc.set_name_encoding(NameEncoding::Uncompressed);
    rdata.emit(&mut enc).unwrap();
    out
}

/// Reads our wire form with hickory.
fn hickory_read(t: &str, wire: &[u8]) -> RData {
    let mut dec = BinDecoder::new(wire);
    RData::read(&mut dec, hickory_type(t), Restrict::new(wire.len() as u16))
        .unwrap_or_else(|e| panic!("hickory cannot read our {t} {wire:02x?}: {e}"))
}

#[test]
fn hickory_reads_our_wire_form() {
    for &(t, text) in CASES {
        let ours = parse(t, text).unwrap_or_else(|e| panic!("{t} {text}: {e}"));
        let theirs = hickory_read(t, &ours);
        assert!(
            !matches!(theirs, RData::Unknown { .. }),
            "{t}: hickory took it as unknown"
        );
        assert_eq!(hickory_wire(&theirs), ours, "{t} {text}");
    }
}

#[test]
fn hickory_text_parser_agrees() {
    for &(t, text) in CASES {
        let ours = parse(t, text).unwrap();
        let theirs = RData::try_from_str(hickory_type(t), text)
            .unwrap_or_else(|e| panic!("hickory cannot parse {t} {text}: {e}"));
        assert_eq!(hickory_wire(&theirs), ours, "{t} {text}");
        // Our printed text means the same to hickory.
        let mut printed = String::new();
        fmt_text(RType::from_text(t).unwrap(), &ours, &mut printed).unwrap();
        let again = RData::try_from_str(hickory_type(t), &printed)
            .unwrap_or_else(|e| panic!("hickory cannot parse our {t} {printed}: {e}"));
        assert_eq!(hickory_wire(&again), ours, "{t} {printed}");
    }
}

#[test]
fn hickory_fields_match() {
    let rdata = hickory_read("MX", &parse("MX", "10 mail.example.com.").unwrap());
    let RData::MX(mx) = rdata else {
        panic!("{rdata:?}")
    };
    assert_eq!(
        (mx.preference, mx.exchange.to_string()),
        (10, "mail.example.com.".to_string())
    );

    let rdata = hickory_read("TXT", &parse("TXT", "\"a b\" c \"\"").unwrap());
    let RData::TXT(txt) = rdata else {
        panic!("{rdata:?}")
    };
    let strings: Vec<&[u8]> = txt.txt_data.iter().map(|s| &s[..]).collect();
    assert_eq!(strings, [&b"a b"[..], b"c", b""]);

    let rdata = hickory_read("SOA", &parse("SOA", "ns. host. 1 1h 2h 3h 4h").unwrap());
    let RData::SOA(soa) = rdata else {
        panic!("{rdata:?}")
    };
    assert_eq!(
        (soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum),
        (1, 3600, 7200, 10800, 14400)
    );
}
