//! Rdata tests: for each type text -> wire -> text with the canonical text, wire examples
//! from the RFCs, rejections, RFC 3597 generic form, and decompression in messages.

use super::*;
use crate::message::{Message, Record, HEADER_LEN};
use crate::name::Name;
use crate::types::Class;
use crate::writer::{MessageWriter, Section};
use crate::Header;

/// Splits text into tokens the way the zone-file scanner does: whitespace separates,
/// `"..."` is one quoted token, `\` escapes stay raw, and quotes inside a token (as in
/// `alpn="h2,h3"`) are kept in the token with what they enclose.
pub(super) fn tokens(s: &str) -> Vec<Token<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i] == b'"' {
            let start = i + 1;
            i = start;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push(Token::quoted(&b[start..i]));
            i += 1;
        } else {
            let start = i;
            let mut in_quotes = false;
            while i < b.len() && (in_quotes || !b[i].is_ascii_whitespace()) {
                match b[i] {
                    b'\\' => i += 1,
                    b'"' => in_quotes = !in_quotes,
                    _ => {}
                }
                i += 1;
            }
            out.push(Token::plain(&b[start..i.min(b.len())]));
        }
    }
    out
}

fn origin() -> Name {
    "example.com.".parse().unwrap()
}

fn rtype(s: &str) -> RType {
    RType::from_text(s).unwrap()
}

/// Hex to octets, ignoring spaces.
pub(super) fn h(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    crate::text::hex_decode(s.split_whitespace().map(str::as_bytes), &mut out).unwrap();
    out
}

pub(super) fn parse(t: &str, text: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    from_text(rtype(t), &tokens(text), origin().as_ref(), &mut out)?;
    Ok(out)
}

fn show(t: &str, rdata: &[u8]) -> String {
    let mut s = String::new();
    fmt_text(rtype(t), rdata, &mut s).unwrap();
    s
}

fn generic(rdata: &[u8]) -> String {
    let mut s = String::new();
    fmt_generic(rdata, &mut s).unwrap();
    s
}

/// Text -> wire -> text gives `canonical`; the canonical text and the generic form parse
/// back to the same octets, which are valid.
#[track_caller]
fn round_trip(t: &str, text: &str, canonical: &str) -> Vec<u8> {
    let wire = parse(t, text).unwrap_or_else(|e| panic!("{t} {text}: {e}"));
    assert_eq!(validate(rtype(t), &wire), Ok(()), "{t} {text}");
    assert_eq!(show(t, &wire), canonical, "{t} {text}");
    assert_eq!(parse(t, canonical).as_ref(), Ok(&wire), "{t} {canonical}");
    assert_eq!(parse(t, &generic(&wire)).as_ref(), Ok(&wire), "{t} generic");
    wire
}

#[track_caller]
fn rejects(t: &str, text: &str) -> String {
    match parse(t, text) {
        Ok(w) => panic!("{t} {text} was accepted as {w:02x?}"),
        Err(e) => e.to_string(),
    }
}

fn name_wire(s: &str) -> Vec<u8> {
    s.parse::<Name>().unwrap().as_wire().to_vec()
}

#[test]
fn a_and_aaaa() {
    assert_eq!(round_trip("A", "10.0.0.1", "10.0.0.1"), [10, 0, 0, 1]);
    round_trip("A", "255.255.255.255", "255.255.255.255");
    for bad in [
        "10.0.0",
        "10.0.0.256",
        "010.0.0.1",
        "10.0.0.1.5",
        "1.2.3.4 5",
        "a.b.c.d",
        "",
    ] {
        rejects("A", bad);
    }
    assert_eq!(rejects("A", "10.0.0"), "bad IPv4 address \"10.0.0\"");
    assert_eq!(validate(RType::A, &[1, 2, 3, 4, 5]), Err(Error::BadRdata));
    assert_eq!(validate(RType::A, &[1, 2, 3]), Err(Error::BadRdata));
    assert_eq!(show("A", &[1, 2, 3, 4, 5]), "\\# 5 0102030405");

    let w = round_trip("AAAA", "2001:DB8::1", "2001:db8::1");
    assert_eq!(w, h("20010db8 00000000 00000000 00000001"));
    round_trip("AAAA", "::", "::");
    round_trip("AAAA", "::ffff:192.0.2.1", "::ffff:192.0.2.1");
    round_trip("AAAA", "2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1");
    round_trip(
        "AAAA",
        "2001:0db8:0000:0001:0001:0001:0001:0001",
        "2001:db8:0:1:1:1:1:1",
    );
    for bad in [
        "1::2::3",
        "12345::",
        "1:2:3:4:5:6:7",
        "10.0.0.1",
        "::g",
        ":1::",
    ] {
        rejects("AAAA", bad);
    }
    assert_eq!(validate(RType::AAAA, &[0; 15]), Err(Error::BadRdata));
}

#[test]
fn ipv6_matches_std() {
    use std::net::Ipv6Addr;
    let cases = [
        "::",
        "::1",
        "1::",
        "1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7::",
        "::2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8::",
        "::1:2:3:4:5:6:7:8",
        "::ffff:1.2.3.4",
        "::1.2.3.4",
        "1:2:3:4:5:6:1.2.3.4",
        "1:2:3:4:5:6:7:1.2.3.4",
        "1::1.2.3.4",
        "1.2.3.4::",
        "::1.02.3.4",
        "::1.2.3",
        ":::",
        "1:::2",
        ":1:2:3:4:5:6:7",
        "1:2:3:4:5:6:7:",
        "00001::",
        "0001:02::",
        "FFFF::",
        "",
        ":",
        "1:2:3:4:5:6:7:8:9",
        "1::2:3:4:5:6:7:8",
    ];
    for c in cases {
        let ours = addr::parse_v6(c.as_bytes());
        let std = c.parse::<Ipv6Addr>().ok().map(|a| a.octets());
        assert_eq!(ours, std, "{c:?}");
    }
    // Printing, on addresses with assorted zero runs.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..5000 {
        let mut a = [0u8; 16];
        for g in a.chunks_exact_mut(2) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = match x % 4 {
                0 | 1 => 0u16,
                2 => (x >> 8) as u16 & 0xf,
                _ => (x >> 16) as u16,
            };
            g.copy_from_slice(&v.to_be_bytes());
        }
        if x & 15 == 0 {
            a[..10].fill(0);
            a[10] = 0xff;
            a[11] = 0xff;
        }
        let mut s = String::new();
        addr::write_v6(&a, &mut s).unwrap();
        assert_eq!(s, Ipv6Addr::from(a).to_string());
        assert_eq!(addr::parse_v6(s.as_bytes()), Some(a), "{s}");
    }
}

#[test]
fn single_names() {
    assert_eq!(
        round_trip("NS", "ns1", "ns1.example.com."),
        name_wire("ns1.example.com.")
    );
    round_trip("NS", "@", "example.com.");
    round_trip("CNAME", "www.example.net.", "www.example.net.");
    round_trip("PTR", "host.Example.COM.", "host.Example.COM.");
    round_trip("DNAME", "example.net.", "example.net.");
    round_trip("MB", "mb", "mb.example.com.");
    round_trip("MG", "mg.example.", "mg.example.");
    round_trip("MR", "mr.example.", "mr.example.");
    round_trip("NS", ".", ".");
    round_trip("NS", "a\\.b\\032c", "a\\.b\\032c.example.com.");
    rejects("NS", "a..b");
    rejects("NS", "a b");
    rejects("NS", "");
    assert!(rejects("CNAME", "").contains("missing its name"));
    assert_eq!(
        validate(RType::NS, &name_wire("a.")[..2]),
        Err(Error::BadRdata)
    );
    let mut trailing = name_wire("a.");
    trailing.push(0);
    assert_eq!(validate(RType::NS, &trailing), Err(Error::BadRdata));
    // A pointer in stored rdata is invalid.
    assert_eq!(
        validate(RType::CNAME, &[1, b'a', 0xc0, 12]),
        Err(Error::BadRdata)
    );
}

#[test]
fn soa() {
    let w = round_trip(
        "SOA",
        "ns1 hostmaster.example.com. 2024010101 1h 15M 1w 1d",
        "ns1.example.com. hostmaster.example.com. 2024010101 3600 900 604800 86400",
    );
    assert_eq!(
        w.len(),
        name_wire("ns1.example.com.").len() + name_wire("hostmaster.example.com.").len() + 20
    );
    assert_eq!(w[w.len() - 20..w.len() - 16], 2024010101u32.to_be_bytes());
    rejects("SOA", "ns1 hostmaster 1 2 3 4");
    rejects("SOA", "ns1 hostmaster 1 2 3 4 5 6");
    rejects("SOA", "ns1 hostmaster 4294967296 2 3 4 5");
    rejects("SOA", "ns1 hostmaster 1h 2 3 4 5");
    rejects("SOA", "ns1 hostmaster 1 2 3 4 5x");
    assert_eq!(
        validate(RType::SOA, &w[..w.len() - 1]),
        Err(Error::BadRdata)
    );
}

#[test]
fn mx_srv_kx_afsdb_rp_minfo() {
    let w = round_trip("MX", "10 mail", "10 mail.example.com.");
    assert_eq!(w[..2], [0, 10]);
    round_trip("MX", "0 .", "0 .");
    rejects("MX", "65536 mail");
    rejects("MX", "-1 mail");
    rejects("MX", "mail");
    let w = round_trip("SRV", "0 5 5060 sip", "0 5 5060 sip.example.com.");
    assert_eq!(w[..6], [0, 0, 0, 5, 0x13, 0xc4]);
    round_trip("KX", "10 kx.example.", "10 kx.example.");
    round_trip("AFSDB", "1 afs", "1 afs.example.com.");
    round_trip(
        "RP",
        "admin.example.com. txt",
        "admin.example.com. txt.example.com.",
    );
    round_trip(
        "MINFO",
        "rmail email",
        "rmail.example.com. email.example.com.",
    );
    let mut out = Vec::new();
    from_text(
        PX,
        &tokens("10 a.example. b.example."),
        origin().as_ref(),
        &mut out,
    )
    .unwrap();
    let mut s = String::new();
    fmt_text(PX, &out, &mut s).unwrap();
    assert_eq!(s, "10 a.example. b.example.");
}

#[test]
fn txt_and_spf() {
    let w = round_trip(
        "TXT",
        r#""hello world" plain "" "a\"b;c" \200x "\\""#,
        r#""hello world" "plain" "" "a\"b;c" "\200x" "\\""#,
    );
    assert_eq!(w, b"\x0bhello world\x05plain\x00\x05a\"b;c\x02\xc8x\x01\\");
    round_trip("TXT", "\"h\u{e9}llo\"", r#""h\195\169llo""#);
    round_trip("SPF", "\"v=spf1 -all\"", "\"v=spf1 -all\"");
    let max = "a".repeat(255);
    round_trip("TXT", &format!("\"{max}\""), &format!("\"{max}\""));
    // Escapes count as the octet they stand for.
    round_trip(
        "TXT",
        &format!("\"{}\"", "\\\\".repeat(255)),
        &format!("\"{}\"", "\\\\".repeat(255)),
    );
    let long = rejects("TXT", &format!("\"{}\"", "a".repeat(256)));
    assert!(long.contains("longer than 255"), "{long}");
    rejects("TXT", &"b".repeat(256));
    rejects("TXT", "");
    rejects("TXT", "\"bad\\escape\\2\"");
    // Wire: at least one string, exactly filling the rdata.
    assert_eq!(validate(RType::TXT, &[]), Err(Error::BadRdata));
    assert_eq!(validate(RType::TXT, &[3, b'a', b'b']), Err(Error::BadRdata));
    assert_eq!(validate(RType::TXT, &[0]), Ok(()));
    assert_eq!(show("TXT", &[0, 0]), "\"\" \"\"");
}

#[test]
fn hinfo_naptr_caa_uri() {
    round_trip("HINFO", "\"KLH-10\" TOPS-20", "\"KLH-10\" \"TOPS-20\"");
    rejects("HINFO", "\"KLH-10\"");
    rejects("HINFO", "a b c");

    round_trip(
        "NAPTR",
        r#"100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" ."#,
        r#"100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" ."#,
    );
    let w = round_trip(
        "NAPTR",
        r#"100 50 "s" "http+I2L+I2C+I2R" "!^(.*)$!\\1!" _http._tcp"#,
        r#"100 50 "s" "http+I2L+I2C+I2R" "!^(.*)$!\\1!" _http._tcp.example.com."#,
    );
    assert_eq!(w[..5], [0, 100, 0, 50, 1]);

    // RFC 8659 §4.
    let w = round_trip(
        "CAA",
        "0 issue \"ca.example.net\"",
        "0 issue \"ca.example.net\"",
    );
    assert_eq!(w, b"\x00\x05issueca.example.net");
    round_trip("CAA", "128 tbs Unknown", "128 tbs \"Unknown\"");
    round_trip("CAA", "0 issue \";\"", "0 issue \";\"");
    round_trip("CAA", "0 iodef \"\"", "0 iodef \"\"");
    rejects("CAA", "0 is-sue \"x\"");
    rejects("CAA", "0 issue a b");
    rejects("CAA", "256 issue x");
    assert_eq!(validate(RType::CAA, b"\x00\x00x"), Err(Error::BadRdata));
    assert_eq!(validate(RType::CAA, b"\x00\x02i-x"), Err(Error::BadRdata));

    // RFC 7553 §4.
    let w = round_trip(
        "URI",
        "10 1 \"ftp://ftp1.example.com/public\"",
        "10 1 \"ftp://ftp1.example.com/public\"",
    );
    assert_eq!(w[..4], [0, 10, 0, 1]);
}

#[test]
fn ds_sshfp_tlsa_zonemd() {
    // RFC 4034 §5.4.
    let w = round_trip(
        "DS",
        "60485 5 1 ( 2BB183AF5F22588179A53B0A98631FAD1A292118 )"
            .replace(['(', ')'], "")
            .as_str(),
        "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118",
    );
    assert_eq!(w, h("EC45 05 01 2BB183AF5F22588179A53B0A98631FAD1A292118"));
    round_trip(
        "CDS",
        "60485 5 1 2bb183af5f22588179a5 3b0a98631fad1a292118",
        "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118",
    );
    // RFC 8078 §4: the DS delete request.
    assert_eq!(round_trip("CDS", "0 0 0 00", "0 0 0 00"), [0, 0, 0, 0, 0]);
    rejects("DS", "60485 5 1");
    rejects("DS", "60485 5 1 2BB183AF5F2258817");
    rejects("DS", "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A29211G");
    // An empty digest has no typed text form.
    assert_eq!(show("DS", &[0, 1, 5, 1]), "\\# 4 00010501");

    round_trip(
        "SSHFP",
        "2 1 123456789abcdef67890123456789abcdef67890",
        "2 1 123456789ABCDEF67890123456789ABCDEF67890",
    );
    // RFC 6698 §2.3.
    let w = round_trip(
        "TLSA",
        "0 0 1 d2abde240d7cd3ee6b4b28c54df034b9 7983a1d16e8a410e4561cb106618e971",
        "0 0 1 D2ABDE240D7CD3EE6B4B28C54DF034B97983A1D16E8A410E4561CB106618E971",
    );
    assert_eq!(w.len(), 3 + 32);
    round_trip("SMIMEA", "3 1 1 AB", "3 1 1 AB");
    // RFC 8976 Appendix A.1.
    round_trip(
        "ZONEMD",
        "2018031900 1 1 c68090d90a7aed716bc459f9340e3d7c1370d4d24b7e2fc3a1ddc0b9a87153b9a9713b3c9ae5cc27777f98b8e730044c",
        "2018031900 1 1 C68090D90A7AED716BC459F9340E3D7C1370D4D24B7E2FC3A1DDC0B9A87153B9A9713B3C9AE5CC27777F98B8E730044C",
    );
}

const RFC4034_KEY: &str = "AQPSKmynfzW4kyBv015MUG2DeIQ3 Cbl+BBZH4b/0PY1kxkmvHjcZc8no kfzj31GajIQKY+5CptLr3buXA10h \
                           WqTkF7H6RfoRqXQeogmMHfpftf6z Mv1LyBUgia7za6ZEzOJBOztyvhjL 742iU/TpPSEDhm2SNKLijfUppn1U aNvv4w==";

#[test]
fn dnskey_rrsig() {
    // RFC 4034 §2.3.
    let joined = RFC4034_KEY.replace(' ', "");
    let w = round_trip(
        "DNSKEY",
        &format!("256 3 5 {RFC4034_KEY}"),
        &format!("256 3 5 {joined}"),
    );
    assert_eq!(w[..4], [1, 0, 3, 5]);
    assert_eq!((w.len() - 4) % 3, 1);
    round_trip("CDNSKEY", "0 3 0 AA==", "0 3 0 AA==");
    // Algorithm mnemonics (RFC 4034 Appendix A.1) are read, numbers are written.
    round_trip("DNSKEY", "257 3 ecdsap256sha256 AQID", "257 3 13 AQID");
    round_trip("DS", "1 RSASHA256 2 AB", "1 8 2 AB");
    rejects("DNSKEY", "257 3 RSASHA3 AQID");
    rejects("DNSKEY", "256 3 8 AwEAAa!!");
    rejects("DNSKEY", "256 3 8 AwE");
    rejects("DNSKEY", "256 3 8 AwEA=AAA");
    rejects("DNSKEY", "256 3 8");
    assert!(rejects("DNSKEY", "256 3 8 AwEAA===").contains("base64"));

    // RFC 4034 §3.3.
    let sig = "oJB1W6WNGv+ldvQ3WDG0MQkg5IEhjRip8WTrPYGv07h108dUKGMeDPKijVCHX3DDKdfb+v6o \
               B9wfuh3DTJXUAfI/M0zmO/zz8bW0Rznl8O3tGNazPwQKkRN20XPXV6nwwfoXmJQbsLNrLfkG \
               J5D6fwFm8nN+6pBzeDQfsS3Ap3o=";
    let canonical = format!(
        "A 5 3 86400 20030322173103 20030220173103 2642 example.com. {}",
        sig.split_whitespace().collect::<String>()
    );
    let w = round_trip(
        "RRSIG",
        &format!("A 5 3 86400 20030322173103 20030220173103 2642 example.com. {sig}"),
        &canonical,
    );
    assert_eq!(w[..8], [0, 1, 5, 3, 0, 1, 0x51, 0x80]);
    assert_eq!(w[8..12], 1_048_354_263u32.to_be_bytes());
    assert_eq!(w[12..16], 1_045_762_263u32.to_be_bytes());
    assert_eq!(w[16..18], 2642u16.to_be_bytes());
    // Times as plain seconds, the TTL with units, the type as TYPEnnn, the signer relative.
    let w2 = parse(
        "RRSIG",
        &format!("TYPE1 5 3 1d 1048354263 1045762263 2642 @ {sig}"),
    )
    .unwrap();
    assert_eq!(w2, w);
    rejects(
        "RRSIG",
        &format!("A 5 3 86400 20031322173103 20030220173103 2642 example.com. {sig}"),
    );
    rejects(
        "RRSIG",
        &format!("FOO 5 3 86400 20030322173103 20030220173103 2642 example.com. {sig}"),
    );
    rejects(
        "RRSIG",
        "A 5 3 86400 20030322173103 20030220173103 2642 example.com.",
    );
}

#[test]
fn signature_times() {
    let t = |s: &str| time::parse(s.as_bytes());
    assert_eq!(t("19700101000000"), Ok(0));
    assert_eq!(t("21060207062815"), Ok(u32::MAX));
    assert_eq!(t("20240229120000"), Ok(1_709_208_000));
    assert_eq!(t("4294967295"), Ok(u32::MAX));
    assert_eq!(t("0"), Ok(0));
    for bad in [
        "21060207062816",
        "19691231235959",
        "20230229000000",
        "20241301000000",
        "20240100000000",
        "20240101240000",
        "20240101006000",
        "20240101000060",
        "4294967296",
        "2024010100000",
        "2024-01-01",
        "",
    ] {
        assert!(t(bad).is_err(), "{bad}");
    }
    let show_time = |v: u32| {
        let mut s = String::new();
        time::write(v, &mut s).unwrap();
        s
    };
    assert_eq!(show_time(0), "19700101000000");
    assert_eq!(show_time(u32::MAX), "21060207062815");
    assert_eq!(show_time(1_709_208_000), "20240229120000");
    // Every day boundary over 136 years, and odd seconds, survive the round trip.
    for v in (0..=u32::MAX).step_by(86_400 - 7) {
        assert_eq!(t(&show_time(v)), Ok(v));
    }
}

#[test]
fn nsec_and_bitmaps() {
    // RFC 4034 §4.3.
    let w = round_trip(
        "NSEC",
        "host.example.com. A MX RRSIG NSEC TYPE1234",
        "host.example.com. A MX RRSIG NSEC TYPE1234",
    );
    let mut expect = name_wire("host.example.com.");
    expect.extend_from_slice(&h("00 06 40 01 00 00 00 03 04 1b"));
    expect.extend_from_slice(&[0; 26]);
    expect.push(0x20);
    assert_eq!(w, expect);
    // Order and duplicates do not matter in text; type names are case-insensitive.
    assert_eq!(
        parse("NSEC", "host.example.com. TYPE1234 nsec rrsig MX A a").unwrap(),
        w
    );
    round_trip("NSEC", "@ TYPE65535 A", "example.com. A TYPE65535");
    round_trip("NSEC", "next", "next.example.com.");
    rejects("NSEC", "next FOO");
    rejects("NSEC", "next TYPE65536");

    let root = name_wire(".");
    let with = |bitmap: &[u8]| [&root[..], bitmap].concat();
    assert_eq!(validate(RType::NSEC, &with(&[0, 1, 0x40])), Ok(()));
    for bad in [
        &[0, 0][..],               // empty window
        &[0, 1, 0],                // trailing zero octet
        &[1, 1, 0x40, 0, 1, 0x40], // windows out of order
        &[0, 1, 0x40, 0, 1, 0x20], // repeated window
        &[0, 2, 0x40],             // short
        &[0],                      // truncated header
    ] {
        assert_eq!(
            validate(RType::NSEC, &with(bad)),
            Err(Error::BadRdata),
            "{bad:?}"
        );
    }
    let mut long = vec![0, 33];
    long.extend_from_slice(&[0xff; 33]);
    assert_eq!(validate(RType::NSEC, &with(&long)), Err(Error::BadRdata));

    // RFC 7477 §2.1.1 (CSYNC).
    let w = round_trip("CSYNC", "66 3 A NS AAAA", "66 3 A NS AAAA");
    assert_eq!(w, h("00000042 0003 00 04 60 00 00 08"));
}

#[test]
fn nsec3_and_param() {
    // RFC 5155 Appendix A.
    let w = round_trip(
        "NSEC3",
        "1 1 12 aabbccdd 2t7b4g4vsa5smi47k61mv5bv1a22bojr MX DNSKEY NS SOA NSEC3PARAM RRSIG",
        "1 1 12 AABBCCDD 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR NS SOA MX RRSIG DNSKEY NSEC3PARAM",
    );
    assert_eq!(w[..9], h("01 01 000c 04 aabbccdd"));
    assert_eq!(w[9], 20);
    assert_eq!(w[30..], h("00 07 22 01 00 00 00 02 90"));
    // An empty non-terminal has no types; no salt is `-`.
    round_trip(
        "NSEC3",
        "1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr",
        "1 0 0 - 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR",
    );
    rejects("NSEC3", "1 1 12 aabbccdd 2t7b4g4vsa5smi47k61mv5bv1a22boj A");
    rejects(
        "NSEC3",
        "1 1 12 aabbccdd 2t7b4g4vsa5smi47k61mv5bv1a22bojw A",
    );
    rejects("NSEC3", "1 1 12 aabbccd 2t7b4g4vsa5smi47k61mv5bv1a22bojr A");
    rejects("NSEC3", "1 1 12 aabbccdd");
    // A zero-length next hashed owner is malformed.
    assert_eq!(
        validate(RType::NSEC3, &h("01 00 0000 00 00")),
        Err(Error::BadRdata)
    );

    let w = round_trip("NSEC3PARAM", "1 0 12 aabbccdd", "1 0 12 AABBCCDD");
    assert_eq!(w, h("01 00 000c 04 aabbccdd"));
    assert_eq!(
        round_trip("NSEC3PARAM", "1 0 0 -", "1 0 0 -"),
        h("01 00 0000 00")
    );
    rejects("NSEC3PARAM", "1 0 0");
    rejects("NSEC3PARAM", &format!("1 0 0 {}", "ab".repeat(256)));
}

#[test]
fn small_types() {
    // RFC 7043 §3.2 and §4.2.
    assert_eq!(
        round_trip("EUI48", "00-00-5e-00-53-2A", "00-00-5e-00-53-2a"),
        h("00005e00532a")
    );
    assert_eq!(
        round_trip(
            "EUI64",
            "00-00-5e-ef-10-00-00-2a",
            "00-00-5e-ef-10-00-00-2a"
        ),
        h("00005eef1000002a")
    );
    rejects("EUI48", "00:00:5e:00:53:2a");
    rejects("EUI48", "00-00-5e-00-53");
    rejects("EUI64", "00-00-5e-00-53-2a");
    // RFC 4701 §3.6.
    round_trip(
        "DHCID",
        "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=",
        "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=",
    );
    assert_eq!(
        round_trip("OPENPGPKEY", "AQID BAU=", "AQIDBAU="),
        [1, 2, 3, 4, 5]
    );
}

#[test]
fn svcb_rfc9460_appendix_d() {
    let foo_com = "03666f6f 076578616d706c65 03636f6d 00";
    let foo_org = "03666f6f 076578616d706c65 036f7267 00";
    let cases = [
        ("HTTPS", "0 foo.example.com.", "0 foo.example.com.", format!("0000 {foo_com}")),
        ("SVCB", "1 .", "1 .", "0001 00".to_string()),
        ("SVCB", "16 foo.example.com. port=53", "16 foo.example.com. port=53", format!("0010 {foo_com} 0003 0002 0035")),
        (
            "SVCB",
            "1 foo.example.com. key667=hello",
            "1 foo.example.com. key667=\"hello\"",
            format!("0001 {foo_com} 029b 0005 68656c6c6f"),
        ),
        (
            "SVCB",
            r#"1 foo.example.com. key667="hello\210qoo""#,
            r#"1 foo.example.com. key667="hello\210qoo""#,
            format!("0001 {foo_com} 029b 0009 68656c6c6fd2716f6f"),
        ),
        (
            "SVCB",
            r#"1 foo.example.com. ipv6hint="2001:db8::1,2001:db8::53:1""#,
            "1 foo.example.com. ipv6hint=2001:db8::1,2001:db8::53:1",
            format!("0001 {foo_com} 0006 0020 20010db8000000000000000000000001 20010db8000000000000000000530001"),
        ),
        (
            "SVCB",
            r#"1 example.com. ipv6hint="2001:db8:122:344::192.0.2.33""#,
            "1 example.com. ipv6hint=2001:db8:122:344::c000:221",
            "0001 076578616d706c6503636f6d00 0006 0010 20010db80122034400000000c0000221".to_string(),
        ),
        (
            "SVCB",
            "16 foo.example.org. alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1",
            "16 foo.example.org. mandatory=alpn,ipv4hint alpn=\"h2,h3-19\" ipv4hint=192.0.2.1",
            format!("0010 {foo_org} 0000 0004 0001 0004 0001 0009 026832 0568332d3139 0004 0004 c0000201"),
        ),
        (
            "SVCB",
            r#"16 foo.example.org. alpn="f\\\\oo\\,bar,h2""#,
            r#"16 foo.example.org. alpn="f\\\\oo\\,bar,h2""#,
            format!("0010 {foo_org} 0001 000c 08665c6f6f2c626172 026832"),
        ),
        (
            "SVCB",
            r#"16 foo.example.org. alpn=f\\\092oo\092,bar,h2"#,
            r#"16 foo.example.org. alpn="f\\\\oo\\,bar,h2""#,
            format!("0010 {foo_org} 0001 000c 08665c6f6f2c626172 026832"),
        ),
    ];
    for (t, text, canonical, wire) in cases {
        assert_eq!(round_trip(t, text, canonical), h(&wire), "{text}");
    }
    // RFC 9460 Appendix D.3: failure cases.
    for bad in [
        "1 foo.example.com. key123=abc key123=def",
        "1 foo.example.com. mandatory",
        "1 foo.example.com. alpn",
        "1 foo.example.com. port",
        "1 foo.example.com. ipv4hint",
        "1 foo.example.com. ipv6hint",
        "1 foo.example.com. no-default-alpn=abc",
        "1 foo.example.com. mandatory=key123",
        "1 foo.example.com. mandatory=mandatory",
        "1 foo.example.com. mandatory=key123,key123 key123=abc",
    ] {
        rejects("SVCB", bad);
    }
}

#[test]
fn svcb_more() {
    round_trip(
        "HTTPS",
        "1 . alpn=h3,h2 ipv4hint=104.16.132.229,104.16.133.229 ech=AEX+DQBB ipv6hint=2606:4700::6810:84e5 port=8443",
        "1 . alpn=\"h3,h2\" port=8443 ipv4hint=104.16.132.229,104.16.133.229 ech=AEX+DQBB ipv6hint=2606:4700::6810:84e5",
    );
    round_trip(
        "SVCB",
        "1 dns.example. alpn=dot no-default-alpn dohpath=/dns-query{?dns} ohttp key65000",
        "1 dns.example. alpn=\"dot\" no-default-alpn dohpath=\"/dns-query{?dns}\" ohttp key65000",
    );
    round_trip("SVCB", "1 . ech=\"\"", "1 . ech=\"\"");
    round_trip("SVCB", "1 . key7=\"/q\"", "1 . dohpath=\"/q\"");
    round_trip("SVCB", "1 . alpn=\"a b\"", "1 . alpn=\"a b\"");
    // The scanner may hand over `key=` and the quoted value as two tokens.
    let split = [
        Token::plain(b"1"),
        Token::plain(b"."),
        Token::plain(b"alpn="),
        Token::quoted(b"h2,h3"),
        Token::plain(b"port=443"),
    ];
    let mut out = Vec::new();
    from_text(RType::HTTPS, &split, origin().as_ref(), &mut out).unwrap();
    assert_eq!(out, parse("HTTPS", "1 . alpn=h2,h3 port=443").unwrap());
    assert_eq!(show("HTTPS", &out), "1 . alpn=\"h2,h3\" port=443");

    assert_eq!(
        rejects("SVCB", "1 . foo=bar"),
        "unknown SVCB parameter \"foo\""
    );
    for bad in [
        "1 . key65535=x",
        "1 . key01=x",
        "1 . key=x",
        "1 . key70000=x",
        "1 . port=65536",
        "1 . port=http",
        "1 . ipv4hint=192.0.2.1,",
        "1 . ipv6hint=192.0.2.1",
        "1 . alpn=h2,,h3",
        "1 . alpn=\"h2",
        "1 . ech=AEX",
        "1 . ech",
        "1 . ohttp=x",
        "1 . no-default-alpn",
        "1 . mandatory=foo",
        "1 . \"alpn=h2\"",
        "1",
    ] {
        rejects("SVCB", bad);
    }
    // Wire checks: order, lengths, values.
    let bad_wire = [
        "0001 00 0003 0002 0035 0001 0003 026832", // keys out of order
        "0001 00 0003 0002 0035 0003 0002 0035",   // repeated key
        "0001 00 0001 0003 026832 0003 0001 00",   // port too short
        "0001 00 0001 0003 00 6832",               // empty alpn id
        "0001 00 0001 0003 036832",                // alpn id overruns
        "0001 00 0000 0002 0000",                  // mandatory lists itself
        "0001 00 0000 0004 0004 0001",             // mandatory out of order
        "0001 00 0000 0000",                       // empty mandatory
        "0001 00 0002 0001 00",                    // no-default-alpn with a value
        "0001 00 0004 0003 c00002",                // ipv4hint not 4n
        "0001 00 0006 0000",                       // empty ipv6hint
        "0001 00 ffff 0000",                       // invalid key
        "0001 00 0003 0002 00",                    // value overruns
        "0001 00 0003",                            // truncated
        "0001 c00c",                               // compressed target
    ];
    for w in bad_wire {
        assert_eq!(validate(RType::SVCB, &h(w)), Err(Error::BadRdata), "{w}");
    }
    // Alias mode with parameters is odd but well formed.
    assert_eq!(validate(RType::HTTPS, &h("0000 00 0003 0002 0035")), Ok(()));
}

#[test]
fn rfc3597_generic() {
    // RFC 3597 §5.
    assert_eq!(
        round_trip("TYPE65280", "\\# 4 0A000001", "\\# 4 0A000001"),
        [10, 0, 0, 1]
    );
    assert_eq!(round_trip("TYPE731", "\\# 0", "\\# 0"), Vec::<u8>::new());
    assert_eq!(
        parse("TYPE62347", "\\# 4 0a 00 00 01").unwrap(),
        [10, 0, 0, 1]
    );
    assert_eq!(
        parse("A", "\\# 4 0A000001").unwrap(),
        parse("A", "10.0.0.1").unwrap()
    );
    assert_eq!(parse("A", "\\# 4 0A0 00001").unwrap(), [10, 0, 0, 1]);
    assert_eq!(parse("TYPE1", "10.0.0.1").unwrap(), [10, 0, 0, 1]);
    assert_eq!(
        parse("MX", "\\# 20 000a 046d61696c 076578616d706c65 03636f6d 00").unwrap(),
        parse("MX", "10 mail").unwrap()
    );
    assert_eq!(
        rejects("A", "\\# 5 0A00000101"),
        "\\# data is not valid A rdata"
    );
    assert!(rejects("A", "\\# 4 0A0000").contains("length 4"));
    rejects("A", "\\# 3 0A000001");
    rejects("A", "\\# x 0A000001");
    rejects("A", "\\#");
    rejects("TYPE65280", "\\# 65536");
    rejects("TYPE65280", "\\# 1 0");
    rejects("TYPE65280", "\\# 1 zz");
    assert!(rejects("TYPE65280", "10.0.0.1").contains("\\# LENGTH HEX"));
    // A quoted "\#" is data, not the generic form.
    let mut out = Vec::new();
    let quoted = [
        Token::quoted(b"\\#"),
        Token::plain(b"1"),
        Token::plain(b"00"),
    ];
    assert!(from_text(RType::A, &quoted, origin().as_ref(), &mut out).is_err());
    assert!(from_text(RType::TXT, &quoted, origin().as_ref(), &mut out).is_ok());
    assert_eq!(show("TXT", &out), "\"#\" \"1\" \"00\"");
    // Unknown types print generically.
    assert_eq!(show("TYPE65280", &[]), "\\# 0");
    assert_eq!(show("NULL", &[0xde, 0xad]), "\\# 2 DEAD");
}

#[test]
fn from_text_appends_and_restores() {
    let mut out = vec![9, 9];
    from_text(RType::A, &tokens("1.2.3.4"), origin().as_ref(), &mut out).unwrap();
    assert_eq!(out, [9, 9, 1, 2, 3, 4]);
    for (t, text) in [
        ("A", "1.2.3"),
        ("MX", "10 a..b"),
        ("TXT", "a \"\\1\""),
        ("SVCB", "1 . port=1 port=2"),
    ] {
        assert!(from_text(rtype(t), &tokens(text), origin().as_ref(), &mut out).is_err());
        assert_eq!(out, [9, 9, 1, 2, 3, 4], "{t} {text}");
    }
    // Rdata is at most 65535 octets.
    let text = vec![format!("\"{}\"", "a".repeat(255)); 257].join(" ");
    assert!(rejects("TXT", &text).contains("65535"));
}

/// A message with the question `example.com. MX IN` and the given answer records, each
/// `(type, rdata as it appears on the wire)`.
fn message(records: &[(RType, Vec<u8>)]) -> Vec<u8> {
    let mut m = Header {
        qdcount: 1,
        ancount: records.len() as u16,
        ..Header::default()
    }
    .to_bytes()
    .to_vec();
    m.extend_from_slice(&name_wire("example.com."));
    m.extend_from_slice(&[0, 15, 0, 1]);
    for (t, rdata) in records {
        m.extend_from_slice(&[0xc0, 12]);
        m.extend_from_slice(&t.0.to_be_bytes());
        m.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(rdata);
    }
    m
}

#[test]
fn decompress_in_messages() {
    // example.com. is at offset 12.
    let ptr = [0xc0, HEADER_LEN as u8];
    let mx = [&[0, 10, 4][..], b"mail", &ptr].concat();
    let soa = [
        &[3][..],
        b"ns1",
        &ptr,
        &[10],
        b"hostmaster",
        &ptr,
        &[0; 19],
        &[7],
    ]
    .concat();
    let ns = ptr.to_vec();
    let srv = [&[0, 1, 0, 2, 0, 3, 3][..], b"sip", &ptr].concat();
    let msg = message(&[
        (RType::MX, mx),
        (RType::SOA, soa),
        (RType::NS, ns),
        (RType::SRV, srv),
    ]);
    let m = Message::parse(&msg).unwrap();
    let texts: Vec<String> = m.answers.iter().map(Record::to_string).collect();
    assert_eq!(
        texts,
        [
            "example.com. 60 IN MX 10 mail.example.com.",
            "example.com. 60 IN SOA ns1.example.com. hostmaster.example.com. 0 0 0 0 7",
            "example.com. 60 IN NS example.com.",
            "example.com. 60 IN SRV 1 2 3 sip.example.com.",
        ]
    );
    assert_eq!(m.answers[0].rdata, parse("MX", "10 mail").unwrap());

    // A pointer to a name inside earlier rdata ("mail.example.com." in the MX).
    let first_rdata = HEADER_LEN + 13 + 4 + 2 + 10;
    let cname = vec![0xc0, (first_rdata + 2) as u8];
    let msg2 = message(&[
        (RType::MX, [&[0, 10, 4][..], b"mail", &ptr].concat()),
        (RType::CNAME, cname),
    ]);
    let m2 = Message::parse(&msg2).unwrap();
    assert_eq!(m2.answers[1].rdata, name_wire("mail.example.com."));

    // Direct use: appends, and leaves `out` alone on error.
    let mut out = vec![7];
    let rd_start = first_rdata;
    decompress(RType::MX, &msg2, rd_start, 9, &mut out).unwrap();
    assert_eq!(out[1..], parse("MX", "10 mail").unwrap());
    let mut out = vec![7];
    assert_eq!(
        decompress(RType::MX, &msg2, rd_start, 8, &mut out),
        Err(Error::BadRdata)
    );
    assert_eq!(
        decompress(RType::MX, &msg2, rd_start, 10_000, &mut out),
        Err(Error::ShortInput)
    );
    assert_eq!(
        decompress(RType::MX, &msg2, usize::MAX, 2, &mut out),
        Err(Error::ShortInput)
    );
    assert_eq!(out, [7]);

    // Compression where RFC 3597 forbids it, forward pointers, and bad fixed lengths.
    for (t, rdata) in [
        (RType::DNAME, ptr.to_vec()),
        (RType::NSEC, [&ptr[..], &[0, 1, 0x40]].concat()),
        (RType::SVCB, [&[0, 1][..], &ptr].concat()),
        (RType::CNAME, vec![0xc0, 0xff]),
        (RType::A, vec![1, 2, 3, 4, 5]),
        (RType::AAAA, vec![0; 4]),
        (RType::MX, vec![0, 10]),
        (RType::SOA, [&ptr[..], &ptr, &[0; 19]].concat()),
    ] {
        assert_eq!(
            Message::parse(&message(&[(t, rdata)])),
            Err(Error::BadRdata),
            "{t}"
        );
    }
    // Unknown types are copied as they are, pointers or not.
    let m = Message::parse(&message(&[(RType(65280), ptr.to_vec())])).unwrap();
    assert_eq!(m.answers[0].rdata, ptr);
}

#[test]
fn compose_compresses_only_rfc1035_types() {
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    let qname = origin();
    w.put_question(qname.as_ref(), RType::MX, Class::IN)
        .unwrap();
    let records = [
        (RType::MX, parse("MX", "10 mail").unwrap()),
        (
            RType::SOA,
            parse("SOA", "ns1 hostmaster 1 2 3 4 5").unwrap(),
        ),
        (RType::SRV, parse("SRV", "1 2 3 @").unwrap()),
        (
            RType::NAPTR,
            parse("NAPTR", "1 2 \"\" \"\" \"\" @").unwrap(),
        ),
        (
            RType::RRSIG,
            parse("RRSIG", "A 8 2 60 0 0 1 @ AA==").unwrap(),
        ),
        (RType::TXT, parse("TXT", "hello").unwrap()),
    ];
    let mut sizes = Vec::new();
    for (t, rdata) in &records {
        let before = w.len();
        w.put_record(Section::Answer, qname.as_ref(), *t, Class::IN, 60, rdata)
            .unwrap();
        sizes.push(w.len() - before - 12);
    }
    // MX: preference + "mail" + pointer. SOA: both names end in pointers. The others verbatim.
    assert_eq!(
        sizes,
        [
            2 + 5 + 2,
            6 + 13 + 20,
            records[2].1.len(),
            records[3].1.len(),
            records[4].1.len(),
            6
        ]
    );
    let msg = w.finish(&Header::default()).to_vec();
    let m = Message::parse(&msg).unwrap();
    for ((t, rdata), rec) in records.iter().zip(&m.answers) {
        assert_eq!((rec.rtype, &rec.rdata), (*t, rdata));
    }

    // Malformed rdata never panics: it is copied.
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, 512);
    for (t, rdata) in [
        (RType::MX, vec![0]),
        (RType::SOA, vec![5, b'a']),
        (RType::NS, vec![]),
    ] {
        w.put_record(Section::Answer, NameRef::ROOT, t, Class::IN, 0, &rdata)
            .unwrap();
    }
}

#[test]
fn targets() {
    let mx = parse("MX", "10 mail").unwrap();
    assert_eq!(
        target_name(RType::MX, &mx).unwrap().to_string(),
        "mail.example.com."
    );
    let srv = parse("SRV", "1 2 3 sip").unwrap();
    assert_eq!(
        target_name(RType::SRV, &srv).unwrap().to_string(),
        "sip.example.com."
    );
    assert!(target_name(RType::A, &[1, 2, 3, 4]).is_none());
    assert!(target_name(RType::MX, &[0]).is_none());
}

#[test]
fn fmt_text_output_always_parses_back() {
    // Arbitrary octets: whatever fmt_text prints for a type parses back to the same octets.
    let types = [
        "A",
        "NS",
        "SOA",
        "MX",
        "TXT",
        "AAAA",
        "SRV",
        "NAPTR",
        "DS",
        "SSHFP",
        "RRSIG",
        "NSEC",
        "DNSKEY",
        "NSEC3",
        "NSEC3PARAM",
        "TLSA",
        "SVCB",
        "CAA",
        "URI",
        "EUI48",
        "CSYNC",
        "HINFO",
        "TYPE65280",
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for t in types {
        for _ in 0..300 {
            let mut rdata = Vec::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for _ in 0..(x % 40) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                rdata.push((x >> 24) as u8 % 8);
            }
            let text = show(t, &rdata);
            if validate(rtype(t), &rdata).is_ok() {
                assert_eq!(parse(t, &text).as_ref(), Ok(&rdata), "{t} {text}");
            } else {
                assert!(text.starts_with("\\# "), "{t} {text}");
            }
        }
    }
}
