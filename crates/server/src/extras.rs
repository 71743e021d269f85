//! extras -- the EDNS options a response carries beside its answer: NSID (RFC 5001), DNS
//! cookies (RFC 7873 with RFC 9018 server cookies, `cookie`) and, on encrypted transports,
//! padding (RFC 7830 with the RFC 8467 block-length policy).
//!
//! A query without EDNS options never comes here: `dispatch` checks that the OPT record
//! has options (a comparison of two offsets it already has) before anything else. For one
//! that has some, [`read`] says what the response gets; the answer is written into a buffer
//! shortened by [`Extras::room`], and [`Extras::apply`] appends the options to the OPT
//! record the answering code wrote last. The resolver keeps the [`Extras`] of a query it
//! answers later with the query itself.
//!
//! Never: allocation, locks, clock system calls (cookie time comes from the worker's
//! loop clock through [`UnixClock`]).

use crate::cookie::{CookieSecrets, CLIENT_COOKIE_LEN, SERVER_COOKIE_LEN};
use shardns_wire::edns::{self, OPTION_COOKIE, OPTION_NSID, OPTION_PADDING};
use shardns_wire::{Query, Rcode};
use shardns_zone::Written;
use std::net::IpAddr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// BADCOOKIE, extended RCODE 23 (RFC 7873 §8).
pub(crate) const BADCOOKIE: Rcode = Rcode(23);
/// RFC 8467 §4.1: responses are padded to a multiple of this many octets.
pub(crate) const RESPONSE_BLOCK: usize = 468;

/// What the server adds to responses, from `[server]`; replaced whole at a reload.
#[derive(Debug, Default)]
pub(crate) struct EdnsPolicy {
    /// `server.nsid`, as sent.
    pub(crate) nsid: Option<Box<[u8]>>,
    /// The cookie secrets (`None`: cookies are off, the option is ignored).
    pub(crate) cookies: Option<CookieSecrets>,
}

/// Seconds since the epoch from a loop-turn `Instant`, without a system call per query.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UnixClock {
    base: Instant,
    base_unix: u64,
}

impl UnixClock {
    pub(crate) fn new() -> Self {
        let base = Instant::now();
        let base_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self { base, base_unix }
    }

    /// The time `now` in seconds since the epoch, modulo 2^32 (RFC 9018's timestamp).
    pub(crate) fn secs(&self, now: Instant) -> u32 {
        (self.base_unix + now.saturating_duration_since(self.base).as_secs()) as u32
    }
}

/// What one query's options ask of its response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extras {
    /// An empty NSID option came, and the server has an NSID.
    nsid: bool,
    /// The COOKIE option to send back: the client cookie and a new server cookie.
    cookie: Option<[u8; CLIENT_COOKIE_LEN + SERVER_COOKIE_LEN]>,
    /// The query had a PADDING option and came over an encrypted transport.
    pad: bool,
}

/// What [`read`] made of a query's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Answer the query, adding these options.
    Answer(Extras),
    /// The COOKIE option is malformed (RFC 7873 §5.2.2): FORMERR.
    Malformed,
    /// The server cookie is not one of ours, over UDP: BADCOOKIE with these options (a
    /// new server cookie) and no answer (RFC 7873 §5.2.4, §5.4).
    BadCookie(Extras),
}

/// Reads the options of a query that has some. `ip` is the client's address (a cookie is
/// made and checked only with it), `stream` says whether the transport is a stream (TCP,
/// TLS: a bad server cookie there is answered normally, the handshake already proved the
/// address), `encrypted` whether padding applies.
pub(crate) fn read(
    query: &Query<'_>,
    policy: &EdnsPolicy,
    ip: Option<IpAddr>,
    now: u32,
    stream: bool,
    encrypted: bool,
) -> Verdict {
    let Some(e) = query.edns() else {
        return Verdict::Answer(Extras::default());
    };
    let mut x = Extras::default();
    let mut bad_cookie = false;
    let data = &query.bytes()[e.options.0..e.options.1];
    for (code, value) in edns::options(data) {
        match code {
            OPTION_NSID => x.nsid = value.is_empty() && policy.nsid.is_some(),
            OPTION_COOKIE => {
                // RFC 7873 §5.2.2: 8 octets (client cookie only) or 16 to 40.
                let len = value.len();
                if len != CLIENT_COOKIE_LEN && !(16..=40).contains(&len) {
                    return Verdict::Malformed;
                }
                let (Some(secrets), Some(ip)) = (&policy.cookies, ip) else {
                    continue;
                };
                let client: [u8; CLIENT_COOKIE_LEN] =
                    value[..CLIENT_COOKIE_LEN].try_into().expect("eight octets");
                if len > CLIENT_COOKIE_LEN
                    && !secrets.verify(&client, &value[CLIENT_COOKIE_LEN..], ip, now)
                {
                    bad_cookie = true;
                }
                let mut out = [0u8; CLIENT_COOKIE_LEN + SERVER_COOKIE_LEN];
                out[..CLIENT_COOKIE_LEN].copy_from_slice(&client);
                out[CLIENT_COOKIE_LEN..].copy_from_slice(&secrets.make(&client, ip, now));
                x.cookie = Some(out);
            }
            OPTION_PADDING => x.pad = encrypted,
            _ => {}
        }
    }
    if bad_cookie && !stream {
        Verdict::BadCookie(x)
    } else {
        Verdict::Answer(x)
    }
}

impl Extras {
    /// True if the response gets nothing.
    pub(crate) fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Octets to keep free in the response for the NSID and COOKIE options (padding only
    /// fills what is left).
    pub(crate) fn room(&self, policy: &EdnsPolicy) -> usize {
        let nsid = match (&policy.nsid, self.nsid) {
            (Some(n), true) => 4 + n.len(),
            _ => 0,
        };
        let cookie = if self.cookie.is_some() {
            4 + CLIENT_COOKIE_LEN + SERVER_COOKIE_LEN
        } else {
            0
        };
        nsid + cookie
    }

    /// Appends the options to the response `w` in `buf` (its OPT record must be its last
    /// record, where `w.opt` says: the response is read only if its writer did not say;
    /// else nothing is added), never past `limit` octets; returns the new length.
    pub(crate) fn apply(
        &self,
        buf: &mut [u8],
        w: &Written,
        limit: usize,
        policy: &EdnsPolicy,
    ) -> usize {
        let len = w.len;
        let limit = limit.min(buf.len()).min(u16::MAX as usize);
        let Some(opt) = w.opt.find(&buf[..len]) else {
            return len;
        };
        let mut end = len;
        if let (true, Some(nsid)) = (self.nsid, &policy.nsid) {
            end = put_option(buf, end, limit, OPTION_NSID, nsid);
        }
        if let Some(cookie) = &self.cookie {
            end = put_option(buf, end, limit, OPTION_COOKIE, cookie);
        }
        if self.pad {
            let pad = padding(end);
            if end + 4 + pad <= limit {
                buf[end..end + 4].copy_from_slice(&[0, OPTION_PADDING as u8, 0, 0]);
                buf[end + 2..end + 4].copy_from_slice(&(pad as u16).to_be_bytes());
                buf[end + 4..end + 4 + pad].fill(0);
                end += 4 + pad;
            }
        }
        // The OPT record's RDLENGTH: its last two fixed octets (owner 1, type 2, class 2,
        // TTL 4).
        let rdlen_at = opt + 9;
        let rdlen = u16::from_be_bytes([buf[rdlen_at], buf[rdlen_at + 1]]) as usize + (end - len);
        buf[rdlen_at..rdlen_at + 2].copy_from_slice(&(rdlen as u16).to_be_bytes());
        end
    }
}

/// Padding octets that bring a response of `len` octets plus the option's own four to a
/// multiple of [`RESPONSE_BLOCK`].
pub(crate) fn padding(len: usize) -> usize {
    (RESPONSE_BLOCK - (len + 4) % RESPONSE_BLOCK) % RESPONSE_BLOCK
}

fn put_option(buf: &mut [u8], end: usize, limit: usize, code: u16, data: &[u8]) -> usize {
    let next = end + 4 + data.len();
    if next > limit {
        return end;
    }
    buf[end..end + 2].copy_from_slice(&code.to_be_bytes());
    buf[end + 2..end + 4].copy_from_slice(&(data.len() as u16).to_be_bytes());
    buf[end + 4..next].copy_from_slice(data);
    next
}

/// Turns a written response (with its OPT last) into BADCOOKIE: RCODE 23 is 7 in the
/// header and 1 in the OPT record's extended RCODE.
pub(crate) fn set_badcookie(buf: &mut [u8], w: &Written) {
    let Some(opt) = w.opt.find(&buf[..w.len]) else {
        return;
    };
    buf[3] = (buf[3] & 0xf0) | (BADCOOKIE.0 & 0xf) as u8;
    buf[opt + 5] = (BADCOOKIE.0 >> 4) as u8;
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::{Class, Header, MessageWriter, Name, RType};
    use shardns_zone::OptAt;

    fn query(options: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        let name: Name = "example.test.".parse().unwrap();
        w.put_question(name.as_ref(), RType::A, Class::IN).unwrap();
        w.put_opt(1232, 0, 0, false, options).unwrap();
        let len = w.finish(&Header::default()).len();
        buf.truncate(len);
        buf
    }

    fn option(code: u16, data: &[u8]) -> Vec<u8> {
        let mut o = code.to_be_bytes().to_vec();
        o.extend_from_slice(&(data.len() as u16).to_be_bytes());
        o.extend_from_slice(data);
        o
    }

    fn policy() -> EdnsPolicy {
        EdnsPolicy {
            nsid: Some(b"ns1".to_vec().into_boxed_slice()),
            cookies: CookieSecrets::new(vec![[3; 16]]),
        }
    }

    const IP: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));

    #[test]
    fn padding_fills_to_468_octet_blocks() {
        assert_eq!(padding(0), 464);
        assert_eq!(padding(464), 0);
        assert_eq!(padding(100), 364);
        assert_eq!(padding(465), 467);
        for len in [12, 100, 467, 468, 900, 4000] {
            assert_eq!((len + 4 + padding(len)) % RESPONSE_BLOCK, 0);
        }
    }

    /// A response of `len` octets whose bare OPT record ends it, where `opt` says.
    fn written(len: usize, opt: OptAt) -> Written {
        Written {
            len,
            rcode: Rcode::NOERROR,
            qtype: None,
            truncated: false,
            wildcard: None,
            opt,
        }
    }

    /// The same, its OPT's offset given as the answer code gives it.
    fn known(len: usize) -> Written {
        written(len, OptAt::At((len - 11) as u16))
    }

    #[test]
    fn nsid_cookie_and_padding_are_appended_to_the_opt() {
        let p = policy();
        let mut opts = option(OPTION_NSID, &[]);
        opts.extend(option(OPTION_COOKIE, &[9; 8]));
        opts.extend(option(OPTION_PADDING, &[0; 20]));
        let q = query(&opts);
        let parsed = Query::parse(&q).unwrap();
        let Verdict::Answer(x) = read(&parsed, &p, IP, 1_700_000_000, true, true) else {
            panic!("not answered");
        };
        assert!(x.nsid && x.pad);
        assert_eq!(x.room(&p), 4 + 3 + 4 + 24);
        // A response: the query's question and a bare OPT.
        let mut buf = vec![0u8; 4096];
        let base = query(&[]);
        buf[..base.len()].copy_from_slice(&base);
        let mut read_back = buf.clone();
        let len = x.apply(&mut buf, &known(base.len()), 4096, &p);
        assert_eq!(len % RESPONSE_BLOCK, 0);
        // A writer that does not say where its OPT is: the response is read, same result.
        let unknown = written(base.len(), OptAt::Unknown);
        assert_eq!(x.apply(&mut read_back, &unknown, 4096, &p), len);
        assert_eq!(read_back, buf);
        // Nothing is added to a response without an OPT last.
        let absent = written(base.len(), OptAt::Absent);
        assert_eq!(x.apply(&mut read_back, &absent, 4096, &p), base.len());
        let h = Header::parse(&buf[..len]).unwrap();
        let qend = base.len() - 11;
        let e = edns::read_trailer(&buf[..len], &h, qend)
            .unwrap()
            .edns
            .unwrap();
        let got: Vec<_> = edns::options(&buf[e.options.0..e.options.1]).collect();
        assert_eq!(got[0], (OPTION_NSID, &b"ns1"[..]));
        assert_eq!(got[1].0, OPTION_COOKIE);
        assert_eq!(&got[1].1[..8], &[9; 8]);
        assert_eq!(got[1].1.len(), 24);
        assert_eq!(got[2].0, OPTION_PADDING);
        // Padding only on encrypted transports.
        let Verdict::Answer(plain) = read(&parsed, &p, IP, 1_700_000_000, false, false) else {
            panic!("not answered");
        };
        assert!(!plain.pad);
    }

    #[test]
    fn cookies_valid_bad_and_malformed() {
        let p = policy();
        let now = 1_700_000_000;
        let client = [5u8; 8];
        let server = p.cookies.as_ref().unwrap().make(&client, IP.unwrap(), now);
        let mut good = client.to_vec();
        good.extend_from_slice(&server);
        let q = query(&option(OPTION_COOKIE, &good));
        let parsed = Query::parse(&q).unwrap();
        assert!(matches!(
            read(&parsed, &p, IP, now + 60, false, false),
            Verdict::Answer(x) if x.cookie.is_some()
        ));
        let mut bad = good.clone();
        bad[20] ^= 0xff;
        let q = query(&option(OPTION_COOKIE, &bad));
        let parsed = Query::parse(&q).unwrap();
        assert!(matches!(
            read(&parsed, &p, IP, now, false, false),
            Verdict::BadCookie(x) if x.cookie.is_some()
        ));
        // Over a stream a bad server cookie is answered, with a new one.
        assert!(matches!(
            read(&parsed, &p, IP, now, true, false),
            Verdict::Answer(x) if x.cookie.is_some()
        ));
        for len in [0, 7, 9, 15, 41] {
            let q = query(&option(OPTION_COOKIE, &vec![1; len]));
            let parsed = Query::parse(&q).unwrap();
            assert_eq!(
                read(&parsed, &p, IP, now, false, false),
                Verdict::Malformed,
                "{len}"
            );
        }
        // Cookies off: the option is ignored.
        let off = EdnsPolicy::default();
        let q = query(&option(OPTION_COOKIE, &bad));
        let parsed = Query::parse(&q).unwrap();
        assert!(
            matches!(read(&parsed, &off, IP, now, false, false), Verdict::Answer(x) if x.is_empty())
        );
    }

    #[test]
    fn badcookie_sets_both_halves_of_the_rcode() {
        let mut buf = query(&[]);
        buf[2] |= 0x80;
        let len = buf.len();
        set_badcookie(&mut buf, &known(len));
        let h = Header::parse(&buf).unwrap();
        let e = edns::read_trailer(&buf, &h, len - 11)
            .unwrap()
            .edns
            .unwrap();
        assert_eq!(((e.ext_rcode as u16) << 4) | (buf[3] & 0xf) as u16, 23);
    }

    #[test]
    fn nothing_is_added_past_the_limit() {
        let p = policy();
        let q = query(&option(OPTION_NSID, &[]));
        let parsed = Query::parse(&q).unwrap();
        let Verdict::Answer(x) = read(&parsed, &p, IP, 0, false, false) else {
            panic!()
        };
        let mut buf = vec![0u8; 512];
        let base = query(&[]);
        buf[..base.len()].copy_from_slice(&base);
        assert_eq!(
            x.apply(&mut buf, &known(base.len()), base.len() + 6, &p),
            base.len()
        );
        assert_eq!(
            x.apply(&mut buf, &known(base.len()), base.len() + 7, &p),
            base.len() + 7
        );
    }
}
