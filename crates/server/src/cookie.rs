//! cookie -- DNS server cookies (RFC 7873) made the interoperable way (RFC 9018): version 1,
//! three reserved octets, a 32-bit timestamp and SipHash-2-4 of the client cookie, those
//! four octets of version and reserved, the timestamp and the client's address under a
//! 16-octet server secret. Any server of an anycast set that shares the secret verifies
//! the cookies of the others.
//!
//! Secrets come as a list: the first makes new cookies, every one verifies them, so a
//! secret is rotated without a restart (RFC 9018 §5: add the new one second, reload, move
//! it first, reload, then drop the old one). Never: clocks (times are passed in), I/O.

use siphasher::sip::SipHasher24;
use std::net::IpAddr;

/// Length of an RFC 9018 server cookie.
pub(crate) const SERVER_COOKIE_LEN: usize = 16;
/// Length of a client cookie (RFC 7873 §4.1).
pub(crate) const CLIENT_COOKIE_LEN: usize = 8;
/// A cookie older than this many seconds is not accepted (RFC 9018 §4.3: one hour).
const MAX_AGE: u32 = 3600;
/// A cookie from up to this many seconds in the future is accepted (RFC 9018 §4.3: clock
/// skew of five minutes between the servers of a set).
const MAX_SKEW: u32 = 300;

/// The server secrets: the first makes cookies, all verify them.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct CookieSecrets(Vec<[u8; 16]>);

impl std::fmt::Debug for CookieSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CookieSecrets({} secrets)", self.0.len())
    }
}

impl CookieSecrets {
    /// At least one secret; `None` for an empty list.
    pub(crate) fn new(secrets: Vec<[u8; 16]>) -> Option<Self> {
        (!secrets.is_empty()).then_some(Self(secrets))
    }

    /// A new server cookie for `client` at `ip`, made at `now` (seconds since the epoch).
    pub(crate) fn make(&self, client: &[u8; 8], ip: IpAddr, now: u32) -> [u8; 16] {
        make(&self.0[0], client, ip, now)
    }

    /// True if `server` is a cookie one of our secrets made for `client` at `ip`, no more
    /// than an hour before `now` and no more than five minutes after (serial number
    /// arithmetic, RFC 1982, as the timestamp wraps in 2106).
    pub(crate) fn verify(&self, client: &[u8; 8], server: &[u8], ip: IpAddr, now: u32) -> bool {
        let Ok(server) = <&[u8; 16]>::try_from(server) else {
            return false;
        };
        if server[0] != 1 {
            return false;
        }
        let made = u32::from_be_bytes([server[4], server[5], server[6], server[7]]);
        let age = now.wrapping_sub(made);
        let fresh = age <= MAX_AGE || made.wrapping_sub(now) <= MAX_SKEW;
        fresh
            && self.0.iter().any(|secret| {
                let hash = digest(secret, client, &server[..8], ip);
                // Not secret-dependent timing that matters: the hash is public once sent,
                // but compare without early exit all the same.
                hash.iter()
                    .zip(&server[8..])
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
            })
    }
}

fn make(secret: &[u8; 16], client: &[u8; 8], ip: IpAddr, now: u32) -> [u8; 16] {
    let mut cookie = [0u8; 16];
    cookie[0] = 1;
    cookie[4..8].copy_from_slice(&now.to_be_bytes());
    let hash = digest(secret, client, &cookie[..8], ip);
    cookie[8..].copy_from_slice(&hash);
    cookie
}

/// SipHash-2-4(client cookie | version | reserved | timestamp | client IP, secret), its
/// 64-bit result in the octet order SipHash defines (little-endian).
fn digest(secret: &[u8; 16], client: &[u8; 8], head: &[u8], ip: IpAddr) -> [u8; 8] {
    let mut input = [0u8; 8 + 8 + 16];
    input[..8].copy_from_slice(client);
    input[8..16].copy_from_slice(head);
    let len = match ip {
        IpAddr::V4(a) => {
            input[16..20].copy_from_slice(&a.octets());
            20
        }
        IpAddr::V6(a) => {
            input[16..32].copy_from_slice(&a.octets());
            32
        }
    };
    SipHasher24::new_with_key(secret)
        .hash(&input[..len])
        .to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn client(s: &str) -> [u8; 8] {
        hex(s).try_into().unwrap()
    }

    /// RFC 9018 Appendix A.1 to A.3 (IPv4 clients, one secret).
    #[test]
    fn rfc9018_appendix_a_vectors() {
        let secrets = CookieSecrets::new(vec![shardns_config::parse_cookie_secret(
            "e5e973e5a6b2a43f48e7dc849e37bfcf",
        )
        .unwrap()])
        .unwrap();
        let cases = [
            (
                "2464c4abcf10c957",
                "198.51.100.100",
                1559731985,
                "010000005cf79f111f8130c3eee29480",
            ),
            (
                "2464c4abcf10c957",
                "198.51.100.100",
                1559734385,
                "010000005cf7a871d4a564a1442aca77",
            ),
            (
                "fc93fc62807ddb86",
                "203.0.113.203",
                1559734700,
                "010000005cf7a9acf73a7810aca2381e",
            ),
        ];
        for (c, ip, at, want) in cases {
            let ip: IpAddr = ip.parse().unwrap();
            let got = secrets.make(&client(c), ip, at);
            assert_eq!(got.to_vec(), hex(want), "{c} {ip} {at}");
            assert!(secrets.verify(&client(c), &got, ip, at + 10));
        }
    }

    #[test]
    fn verify_checks_age_address_client_and_rotation() {
        let old = [7u8; 16];
        let new = [9u8; 16];
        let c = [1, 2, 3, 4, 5, 6, 7, 8];
        let ip: IpAddr = "2001:db8::53".parse().unwrap();
        let now = 1_700_000_000;
        let secrets = CookieSecrets::new(vec![old]).unwrap();
        let cookie = secrets.make(&c, ip, now);
        assert!(secrets.verify(&c, &cookie, ip, now));
        assert!(secrets.verify(&c, &cookie, ip, now + MAX_AGE));
        assert!(!secrets.verify(&c, &cookie, ip, now + MAX_AGE + 1));
        assert!(secrets.verify(&c, &cookie, ip, now - MAX_SKEW));
        assert!(!secrets.verify(&c, &cookie, ip, now - MAX_SKEW - 1));
        assert!(!secrets.verify(&c, &cookie, "2001:db8::54".parse().unwrap(), now));
        assert!(!secrets.verify(&[0; 8], &cookie, ip, now));
        assert!(!secrets.verify(&c, &cookie[..15], ip, now));
        let mut tampered = cookie;
        tampered[15] ^= 1;
        assert!(!secrets.verify(&c, &tampered, ip, now));
        // Rotation: the new secret first makes cookies, the old one still verifies.
        let rotated = CookieSecrets::new(vec![new, old]).unwrap();
        assert!(rotated.verify(&c, &cookie, ip, now));
        assert_ne!(rotated.make(&c, ip, now), cookie);
        let dropped = CookieSecrets::new(vec![new]).unwrap();
        assert!(!dropped.verify(&c, &cookie, ip, now));
    }

    #[test]
    fn secrets_are_32_hex_digits() {
        assert!(shardns_config::parse_cookie_secret("e5e973e5a6b2a43f48e7dc849e37bfcf").is_ok());
        assert!(shardns_config::parse_cookie_secret("e5e973").is_err());
        assert!(shardns_config::parse_cookie_secret("x5e973e5a6b2a43f48e7dc849e37bfcf").is_err());
        assert!(CookieSecrets::new(Vec::new()).is_none());
    }
}
