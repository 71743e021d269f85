//! The `proxy_header` target: the PROXY protocol v2 header parser.

use shardns_wire::proxy::{parse, Proxied, ProxyError, FIXED, MAX_HEADER, SIGNATURE};

/// `proxy::parse` on the input (after a first byte choosing datagram or stream, and whether
/// the input is prefixed with a valid signature so the fuzzer gets past it): never panics;
/// an accepted header is no longer than the input or `MAX_HEADER`, its length is the one
/// its length field says, the same input cut short is `Truncated`, and the addresses are
/// the octets at the spec's offsets.
pub fn proxy_header(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let stream = mode & 1 == 1;
    let mut owned = Vec::new();
    let input = if mode & 2 == 2 {
        owned.extend_from_slice(&SIGNATURE);
        owned.extend_from_slice(rest);
        &owned[..]
    } else {
        rest
    };
    let got = parse(input, stream);
    let Ok((proxied, len)) = got else {
        if let Err(ProxyError::Truncated) = got {
            // More octets could make it valid: never so once the fixed part says the header
            // is within the input.
            if input.len() >= FIXED {
                let said = FIXED + usize::from(u16::from_be_bytes([input[14], input[15]]));
                assert!(said > input.len(), "truncated, but {said} octets are there");
            }
        }
        return;
    };
    assert!(len <= input.len() && (FIXED..=MAX_HEADER).contains(&len));
    assert_eq!(input[..12], SIGNATURE);
    assert_eq!(
        len,
        FIXED + usize::from(u16::from_be_bytes([input[14], input[15]]))
    );
    assert_eq!(input[12] >> 4, 2);
    // Cut short by one octet: asks for more, and is never accepted.
    assert_eq!(parse(&input[..len - 1], stream), Err(ProxyError::Truncated));
    if let Proxied::Proxy {
        source,
        destination,
    } = proxied
    {
        assert_eq!(input[12] & 0x0f, 1, "PROXY command");
        let a = &input[FIXED..len];
        let port = |at: usize| u16::from_be_bytes([a[at], a[at + 1]]);
        match input[13] >> 4 {
            1 => {
                assert_eq!(
                    source.ip().to_string(),
                    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
                );
                assert_eq!(
                    destination.ip().to_string(),
                    format!("{}.{}.{}.{}", a[4], a[5], a[6], a[7])
                );
                assert_eq!((source.port(), destination.port()), (port(8), port(10)));
            }
            2 => {
                let ip = |o: usize| {
                    std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&a[o..o + 16]).unwrap())
                };
                assert_eq!(source.ip(), ip(0));
                assert_eq!(destination.ip(), ip(16));
                assert_eq!((source.port(), destination.port()), (port(32), port(34)));
            }
            f => panic!("addresses from family {f}"),
        }
    }
}
