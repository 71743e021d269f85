use super::*;

/// A header laid out by hand from the spec: signature, version/command, family/protocol,
/// length, then `body` (addresses and TLVs).
fn header(ver_cmd: u8, fam: u8, body: &[u8]) -> Vec<u8> {
    let mut h = SIGNATURE.to_vec();
    h.push(ver_cmd);
    h.push(fam);
    h.extend_from_slice(&(body.len() as u16).to_be_bytes());
    h.extend_from_slice(body);
    h
}

fn v4_body() -> Vec<u8> {
    // 192.0.2.7:5300 -> 198.51.100.1:53
    vec![192, 0, 2, 7, 198, 51, 100, 1, 0x14, 0xb4, 0, 53]
}

#[test]
fn proxy_ipv4_over_udp_and_tcp() {
    for (fam, stream) in [(0x12, false), (0x11, true), (0x10, false)] {
        let mut h = header(0x21, fam, &v4_body());
        let len = h.len();
        h.extend_from_slice(b"dns message");
        let (p, n) = parse(&h, stream).unwrap();
        assert_eq!(n, len);
        assert_eq!(
            p,
            Proxied::Proxy {
                source: "192.0.2.7:5300".parse().unwrap(),
                destination: "198.51.100.1:53".parse().unwrap(),
            }
        );
        assert_eq!(&h[n..], b"dns message");
    }
}

#[test]
fn proxy_ipv6_with_tlvs() {
    let mut body = Vec::new();
    let src: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let dst: Ipv6Addr = "2001:db8::53".parse().unwrap();
    body.extend_from_slice(&src.octets());
    body.extend_from_slice(&dst.octets());
    body.extend_from_slice(&[0xc3, 0x50, 0, 53]);
    // PP2_TYPE_ALPN "dot", an empty PP2_TYPE_NOOP.
    body.extend_from_slice(&[0x01, 0, 3, b'd', b'o', b't', 0x04, 0, 0]);
    let h = header(0x21, 0x21, &body);
    let (p, n) = parse(&h, true).unwrap();
    assert_eq!(n, h.len());
    assert_eq!(
        p,
        Proxied::Proxy {
            source: "[2001:db8::1]:50000".parse().unwrap(),
            destination: "[2001:db8::53]:53".parse().unwrap(),
        }
    );
}

#[test]
fn local_and_unspec_use_the_peer() {
    let h = header(0x20, 0x00, &[]);
    assert_eq!(parse(&h, true), Ok((Proxied::Local, 16)));
    // LOCAL with addresses: they are ignored.
    let h = header(0x20, 0x12, &v4_body());
    assert_eq!(parse(&h, false), Ok((Proxied::Local, 28)));
    // PROXY with an unspecified family (and a TLV).
    let h = header(0x21, 0x00, &[0x04, 0, 1, 9]);
    assert_eq!(parse(&h, false), Ok((Proxied::Local, 20)));
}

#[test]
fn malformed_headers_are_refused() {
    let good = header(0x21, 0x12, &v4_body());
    let mut bad_sig = good.clone();
    bad_sig[5] ^= 1;
    let mut bad_len = good.clone();
    bad_len[15] = 11; // shorter than IPv4's addresses
    let mut huge = good.clone();
    huge[14..16].copy_from_slice(&(MAX_HEADER as u16).to_be_bytes());
    let mut tlv_over = v4_body();
    tlv_over.extend_from_slice(&[0x04, 0, 5, 1, 2]);
    let mut tlv_cut = v4_body();
    tlv_cut.extend_from_slice(&[0x04, 0]);
    let v6_short = header(0x21, 0x22, &v4_body()); // IPv6 family, IPv4's 12 octets
    let cases: Vec<(Vec<u8>, bool, ProxyError)> = vec![
        (
            b"\x12\x34\x01\x00\x00\x01\x00\x00".to_vec(),
            false,
            ProxyError::Signature,
        ),
        (bad_sig, false, ProxyError::Signature),
        (header(0x11, 0x12, &v4_body()), false, ProxyError::Version),
        (header(0x31, 0x12, &v4_body()), false, ProxyError::Version),
        (header(0x22, 0x12, &v4_body()), false, ProxyError::Command),
        (header(0x2f, 0x12, &v4_body()), false, ProxyError::Command),
        (header(0x21, 0x42, &v4_body()), false, ProxyError::Family),
        (header(0x21, 0x13, &v4_body()), false, ProxyError::Family),
        (header(0x21, 0x11, &v4_body()), false, ProxyError::Family),
        (header(0x21, 0x12, &v4_body()), true, ProxyError::Family),
        (header(0x21, 0x32, &[0; 216]), false, ProxyError::Family),
        (bad_len, false, ProxyError::Length),
        (v6_short, false, ProxyError::Length),
        (huge, false, ProxyError::Length),
        (
            good[..good.len() - 1].to_vec(),
            false,
            ProxyError::Truncated,
        ),
        (good[..15].to_vec(), false, ProxyError::Truncated),
        (good[..12].to_vec(), false, ProxyError::Truncated),
        (Vec::new(), false, ProxyError::Truncated),
        (header(0x21, 0x12, &tlv_over), false, ProxyError::Tlv),
        (header(0x21, 0x12, &tlv_cut), false, ProxyError::Tlv),
        (
            header(0x21, 0x12, &[v4_body(), vec![0x04]].concat()),
            false,
            ProxyError::Tlv,
        ),
    ];
    for (i, (bytes, stream, want)) in cases.iter().enumerate() {
        assert_eq!(parse(bytes, *stream), Err(*want), "case {i}");
    }
}

#[test]
fn a_partial_start_is_judged_early() {
    // A connection sends the header in pieces: every prefix of a good one asks for more;
    // a wrong octet among the first 13 is refused at once.
    let good = header(0x21, 0x11, &v4_body());
    for cut in 0..good.len() {
        assert_eq!(
            parse(&good[..cut], true),
            Err(ProxyError::Truncated),
            "{cut}"
        );
    }
    assert_eq!(parse(b"\x0d\x0a\x0d\x0b", true), Err(ProxyError::Signature));
    assert_eq!(parse(&[0, 29], true), Err(ProxyError::Signature));
    assert_eq!(
        parse(
            &good[..13]
                .iter()
                .map(|&b| if b == 0x21 { 0x51 } else { b })
                .collect::<Vec<_>>(),
            true
        ),
        Err(ProxyError::Version)
    );
}

#[test]
fn reasons_are_distinct_and_indexed() {
    for (i, e) in ProxyError::ALL.iter().enumerate() {
        assert_eq!(e.index(), i);
    }
    let mut r: Vec<_> = ProxyError::ALL.iter().map(|e| e.reason()).collect();
    r.dedup();
    assert_eq!(r.len(), ProxyError::ALL.len());
}
