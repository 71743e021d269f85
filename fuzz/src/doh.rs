//! The `doh_request` target: the head of a DNS-over-HTTPS request (`shardns_server::doh`).

use shardns_server::doh::{self, Head, Reject, MAX_MESSAGE};

/// base64url without padding, written plainly (the reference for the decoder).
fn encode(data: &[u8]) -> Vec<u8> {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut s = Vec::new();
    for c in data.chunks(3) {
        let n = c.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - c.len()));
        for i in 0..=c.len() {
            s.push(A[(n >> (18 - 6 * i) & 63) as usize]);
        }
    }
    s
}

/// The input is lines: method, `:path`, content type, content length (a missing line is an
/// absent header). `doh::read_head` never panics; a GET's query is 12 to 65,535 octets and
/// encodes back to its `dns=` value (less padding: the decoder takes only canonical text);
/// a POST's limit is 12 to 65,535. `decode_base64url` on the whole input agrees with the
/// reference encoder the same way, and `min_ttl` never panics on it.
pub fn doh_request(data: &[u8]) {
    let mut lines = data.split(|&b| b == b'\n');
    let method = lines.next().unwrap_or(b"");
    let path = lines.next().unwrap_or(b"");
    let content_type = lines.next();
    let content_length = lines.next();
    let mut out = vec![0; MAX_MESSAGE];
    match doh::read_head(method, path, content_type, content_length, &mut out) {
        Ok(Head::Get { len }) => {
            assert!((12..=MAX_MESSAGE).contains(&len));
            assert_eq!(method, b"GET");
            let query = &path[path.iter().position(|&b| b == b'?').unwrap() + 1..];
            let value = query
                .split(|&b| b == b'&')
                .find_map(|p| p.strip_prefix(b"dns="))
                .expect("a GET with a query has dns=");
            let mut value = value;
            while let Some(v) = value.strip_suffix(b"=") {
                value = v;
            }
            assert_eq!(encode(&out[..len]), value);
        }
        Ok(Head::Post { limit }) => {
            assert!((12..=MAX_MESSAGE).contains(&limit));
            assert_eq!(method, b"POST");
        }
        Err(r) => assert!([400, 404, 405, 413, 415].contains(&r.status())),
    }
    let mut small = [0u8; 512];
    match doh::decode_base64url(data, &mut small) {
        Ok(n) => {
            let mut text = data;
            while let Some(t) = text.strip_suffix(b"=") {
                text = t;
            }
            assert_eq!(encode(&small[..n]), text);
        }
        Err(r) => assert!(matches!(r, Reject::BadRequest | Reject::TooLarge)),
    }
    let _ = doh::min_ttl(data);
}
