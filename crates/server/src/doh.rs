//! doh -- what a DNS-over-HTTPS request (RFC 8484) asks, from its head alone: the method,
//! the path and query, the content type and length. Sans-I/O: HTTP/2 itself (frames,
//! HPACK, flow control) is the `h2` crate's, driven by `worker::https`; this module only
//! decides which requests carry a DNS query and which get which HTTP error, and decodes
//! the `dns` parameter of a GET. Public for the fuzz target `doh_request`.
//!
//! The rules (RFC 8484 §4.1, RFC 9110):
//! - the path is `/dns-query`, else 404;
//! - GET carries the query as `dns=` base64url without padding (§4.1.1: padding is
//!   tolerated here, other characters are a 400), POST as the body with content type
//!   `application/dns-message` (else 415); other methods 405 (with `Allow: GET, POST`);
//! - a DNS message is 12 to 65,535 octets: a shorter one is a 400, a longer GET parameter
//!   or a POST whose `content-length` or body says more is a 413.

/// The largest DNS message (and so DoH query) there is.
pub const MAX_MESSAGE: usize = 65_535;
/// The DoH path this server answers on (RFC 8484's example, and every client's default).
pub const PATH: &str = "/dns-query";
/// The media type of a DNS message in a DoH request or response.
pub const MEDIA_TYPE: &str = "application/dns-message";

/// An HTTP status for a request that carries no query we take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// 400: no `dns` parameter, bad base64url, or a message shorter than a DNS header.
    BadRequest,
    /// 404: not `/dns-query`.
    NotFound,
    /// 405: neither GET nor POST.
    MethodNotAllowed,
    /// 413: longer than a DNS message can be.
    TooLarge,
    /// 415: a POST whose content type is not `application/dns-message`.
    UnsupportedMediaType,
}

impl Reject {
    /// The HTTP status code.
    pub fn status(self) -> u16 {
        match self {
            Self::BadRequest => 400,
            Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::TooLarge => 413,
            Self::UnsupportedMediaType => 415,
        }
    }
}

/// What a request's head says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// A GET whose query was decoded into the output buffer.
    Get {
        /// The query's length.
        len: usize,
    },
    /// A POST: the query is the body.
    Post {
        /// The most octets the body may have: the content length if it gave one, else
        /// [`MAX_MESSAGE`].
        limit: usize,
    },
}

/// Reads a request's head: `method`, `path_and_query` (the `:path` pseudo-header), the
/// `content-type` and `content-length` headers if present. A GET's query is decoded into
/// `out` (at least [`MAX_MESSAGE`] octets to take every query).
pub fn read_head(
    method: &[u8],
    path_and_query: &[u8],
    content_type: Option<&[u8]>,
    content_length: Option<&[u8]>,
    out: &mut [u8],
) -> Result<Head, Reject> {
    let (path, query) = match path_and_query.iter().position(|&b| b == b'?') {
        Some(i) => (&path_and_query[..i], &path_and_query[i + 1..]),
        None => (path_and_query, &b""[..]),
    };
    if path != PATH.as_bytes() {
        return Err(Reject::NotFound);
    }
    match method {
        b"GET" => {
            let value = query
                .split(|&b| b == b'&')
                .find_map(|p| p.strip_prefix(b"dns="))
                .ok_or(Reject::BadRequest)?;
            let len = decode_base64url(value, out)?;
            if len < 12 {
                return Err(Reject::BadRequest);
            }
            Ok(Head::Get { len })
        }
        b"POST" => {
            let media = content_type.ok_or(Reject::UnsupportedMediaType)?;
            // Parameters (`; charset=...`) are allowed by RFC 9110; the type is not
            // case-sensitive.
            let essence = media.split(|&b| b == b';').next().unwrap_or(b"");
            if !essence
                .trim_ascii()
                .eq_ignore_ascii_case(MEDIA_TYPE.as_bytes())
            {
                return Err(Reject::UnsupportedMediaType);
            }
            let limit = match content_length {
                None => MAX_MESSAGE,
                Some(v) => {
                    let n = parse_decimal(v).ok_or(Reject::BadRequest)?;
                    if n > MAX_MESSAGE as u64 {
                        return Err(Reject::TooLarge);
                    }
                    if n < 12 {
                        return Err(Reject::BadRequest);
                    }
                    n as usize
                }
            };
            Ok(Head::Post { limit })
        }
        _ => Err(Reject::MethodNotAllowed),
    }
}

/// A content length: ASCII digits only (at most 19, so no overflow).
fn parse_decimal(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// Decodes base64url (RFC 4648 §5) into `out`: without padding as RFC 8484 §4.1 asks,
/// trailing `=` tolerated. Anything else, a lone trailing character or non-zero unused
/// bits is a 400; a result longer than `out` or [`MAX_MESSAGE`] a 413.
pub fn decode_base64url(text: &[u8], out: &mut [u8]) -> Result<usize, Reject> {
    let mut text = text;
    while let Some(rest) = text.strip_suffix(b"=") {
        text = rest;
    }
    let len = text.len() / 4 * 3
        + match text.len() % 4 {
            0 => 0,
            1 => return Err(Reject::BadRequest),
            2 => 1,
            _ => 2,
        };
    if len > out.len().min(MAX_MESSAGE) {
        return Err(Reject::TooLarge);
    }
    let value = |c: u8| -> Result<u32, Reject> {
        Ok(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return Err(Reject::BadRequest),
        } as u32)
    };
    let mut o = 0;
    for chunk in text.chunks(4) {
        let mut bits = 0u32;
        for &c in chunk {
            bits = bits << 6 | value(c)?;
        }
        match chunk.len() {
            4 => {
                out[o..o + 3].copy_from_slice(&bits.to_be_bytes()[1..]);
                o += 3;
            }
            3 => {
                if bits & 0x3 != 0 {
                    return Err(Reject::BadRequest);
                }
                out[o..o + 2].copy_from_slice(&((bits >> 2) as u16).to_be_bytes());
                o += 2;
            }
            _ => {
                if bits & 0xf != 0 {
                    return Err(Reject::BadRequest);
                }
                out[o] = (bits >> 4) as u8;
                o += 1;
            }
        }
    }
    debug_assert_eq!(o, len);
    Ok(len)
}

/// The `max-age` of a response (RFC 8484 §5.1): the smallest TTL of its records, the OPT
/// pseudo-record aside; `None` if it has none (or cannot be read: we wrote it, so that
/// does not happen).
pub fn min_ttl(message: &[u8]) -> Option<u32> {
    use shardns_wire::message::Reader;
    if message.len() < 12 {
        return None;
    }
    let mut r = Reader::new(message, 12);
    let count = |i: usize| u16::from_be_bytes([message[i], message[i + 1]]);
    for _ in 0..count(4) {
        r.skip_name().ok()?;
        r.bytes(4).ok()?;
    }
    let records = u32::from(count(6)) + u32::from(count(8)) + u32::from(count(10));
    let mut min: Option<u32> = None;
    for _ in 0..records {
        r.skip_name().ok()?;
        let rtype = r.u16().ok()?;
        r.u16().ok()?;
        let ttl = r.u32().ok()?;
        let rdlen = r.u16().ok()?;
        r.bytes(rdlen as usize).ok()?;
        if rtype != 41 {
            min = Some(min.map_or(ttl, |m| m.min(ttl)));
        }
    }
    min
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(method: &str, path: &str, ct: Option<&str>, cl: Option<&str>) -> Result<Head, Reject> {
        let mut out = [0; MAX_MESSAGE];
        read_head(
            method.as_bytes(),
            path.as_bytes(),
            ct.map(str::as_bytes),
            cl.map(str::as_bytes),
            &mut out,
        )
    }

    #[test]
    fn base64url_round_trips_rfc8484_example() {
        // RFC 8484 §4.1.1: the query for www.example.com A, ID 0.
        let text = b"AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB";
        let mut out = [0; 64];
        let n = decode_base64url(text, &mut out).unwrap();
        assert_eq!(n, 33);
        assert_eq!(&out[12..17], b"\x03www\x07");
        assert_eq!(&out[n - 4..n], &[0, 1, 0, 1]);
        // Padded, the same.
        let mut padded = text.to_vec();
        padded.extend_from_slice(b"=");
        assert_eq!(decode_base64url(&padded, &mut out), Ok(33));
    }

    #[test]
    fn bad_base64url_is_400_and_too_long_413() {
        let mut out = [0; 64];
        assert_eq!(decode_base64url(b"AAA+", &mut out), Err(Reject::BadRequest));
        assert_eq!(decode_base64url(b"AAA/", &mut out), Err(Reject::BadRequest));
        assert_eq!(
            decode_base64url(b"AAAAA", &mut out),
            Err(Reject::BadRequest)
        );
        assert_eq!(decode_base64url(b"AB", &mut out), Err(Reject::BadRequest));
        assert_eq!(decode_base64url(b"AQ", &mut out), Ok(1));
        let long = vec![b'A'; 88];
        assert_eq!(decode_base64url(&long, &mut out), Err(Reject::TooLarge));
        let huge = vec![b'A'; 87_384];
        let mut big = vec![0; 70_000];
        assert_eq!(decode_base64url(&huge, &mut big), Err(Reject::TooLarge));
    }

    #[test]
    fn heads_are_classified() {
        let q = "/dns-query?dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB";
        assert_eq!(head("GET", q, None, None), Ok(Head::Get { len: 33 }));
        let other = "/dns-query?ct=x&dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB&z";
        assert_eq!(head("GET", other, None, None), Ok(Head::Get { len: 33 }));
        assert_eq!(
            head("GET", "/dns-query", None, None),
            Err(Reject::BadRequest)
        );
        assert_eq!(
            head("GET", "/dns-query?dns=AAAA", None, None),
            Err(Reject::BadRequest)
        );
        assert_eq!(
            head("GET", "/other?dns=AAAA", None, None),
            Err(Reject::NotFound)
        );
        assert_eq!(
            head("PUT", "/dns-query", None, None),
            Err(Reject::MethodNotAllowed)
        );
        let dm = Some("application/dns-message");
        assert_eq!(
            head("POST", "/dns-query", dm, None),
            Ok(Head::Post { limit: MAX_MESSAGE })
        );
        assert_eq!(
            head(
                "POST",
                "/dns-query",
                Some("Application/DNS-Message; x=y"),
                Some("33")
            ),
            Ok(Head::Post { limit: 33 })
        );
        assert_eq!(
            head("POST", "/dns-query", Some("text/plain"), None),
            Err(Reject::UnsupportedMediaType)
        );
        assert_eq!(
            head("POST", "/dns-query", None, None),
            Err(Reject::UnsupportedMediaType)
        );
        assert_eq!(
            head("POST", "/dns-query", dm, Some("65536")),
            Err(Reject::TooLarge)
        );
        assert_eq!(
            head("POST", "/dns-query", dm, Some("-1")),
            Err(Reject::BadRequest)
        );
        assert_eq!(
            head("POST", "/dns-query", dm, Some("5")),
            Err(Reject::BadRequest)
        );
        assert_eq!(Reject::TooLarge.status(), 413);
    }

    #[test]
    fn min_ttl_skips_opt() {
        // Header: one question, two answers, no authority, one additional (OPT).
        let mut m = vec![0, 0, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 1];
        m.extend_from_slice(&[0, 0, 1, 0, 1]);
        m.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 1, 2, 3, 4]); // TTL 300
        m.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]); // TTL 60
        m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]); // OPT, "TTL" 0
        assert_eq!(min_ttl(&m), Some(60));
        assert_eq!(min_ttl(&m[..20]), None);
        assert_eq!(min_ttl(&[0, 0, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0, 0]), None);
    }
}
