//! The client's side of TSIG (RFC 8945): checking the responses to a request we signed,
//! one message at a time, the messages of a zone transfer included (RFC 8945 §5.3.1: the
//! first and the last must be signed, the ones between may be unsigned if no more than 99
//! go in a row; each signed one's MAC covers the MAC before it and every unsigned message
//! since). The MAC is computed as the messages arrive, so nothing is buffered.

use super::{variables, Algorithm, Key, Signature};
use crate::error::Error;
use crate::message::HEADER_LEN;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha512};
use std::fmt;

pub use crate::error::MAX_UNSIGNED_RUN;

/// A MAC being computed, message by message.
#[derive(Clone)]
enum Running {
    Sha256(Hmac<Sha256>),
    Sha512(Hmac<Sha512>),
}

impl Running {
    fn new(key: &Key) -> Self {
        use hmac::digest::KeyInit;
        match key.algorithm {
            Algorithm::HmacSha256 => Self::Sha256(
                <Hmac<Sha256> as KeyInit>::new_from_slice(&key.secret)
                    .expect("HMAC takes keys of any length"),
            ),
            Algorithm::HmacSha512 => Self::Sha512(
                <Hmac<Sha512> as KeyInit>::new_from_slice(&key.secret)
                    .expect("HMAC takes keys of any length"),
            ),
        }
    }

    fn update(&mut self, data: &[u8]) {
        match self {
            Self::Sha256(m) => m.update(data),
            Self::Sha512(m) => m.update(data),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            Self::Sha256(m) => m.finalize().into_bytes().to_vec(),
            Self::Sha512(m) => m.finalize().into_bytes().to_vec(),
        }
    }
}

/// Checks the responses to one request signed with `key`, in the order they arrive.
#[derive(Clone)]
pub struct ResponseVerifier {
    key: Key,
    /// The MAC over the prior MAC and the messages since it, so far.
    running: Running,
    /// No response verified yet (the first is checked with all the TSIG variables).
    first: bool,
    /// Unsigned messages since the last signed one.
    unsigned: u32,
}

impl fmt::Debug for ResponseVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResponseVerifier({:?}, first: {}, unsigned: {})",
            self.key, self.first, self.unsigned
        )
    }
}

impl ResponseVerifier {
    /// A verifier for the responses to a request signed with `key` whose MAC was
    /// `request_mac`.
    pub fn new(key: &Key, request_mac: &[u8]) -> Self {
        let mut running = Running::new(key);
        running.update(&(request_mac.len() as u16).to_be_bytes());
        running.update(request_mac);
        Self {
            key: key.clone(),
            running,
            first: true,
            unsigned: 0,
        }
    }

    /// Checks the next response `msg` at time `now` (seconds since the epoch).
    pub fn verify(&mut self, msg: &[u8], now: u64) -> Result<(), Error> {
        let sig = super::read(msg).map_err(|_| Error::BadTsig)?;
        let Some(sig) = sig else {
            if self.first {
                return Err(Error::Unsigned);
            }
            self.unsigned += 1;
            if self.unsigned > MAX_UNSIGNED_RUN {
                return Err(Error::TooManyUnsigned);
            }
            self.running.update(msg);
            return Ok(());
        };
        self.check(msg, &sig, now)
    }

    /// True if the last message given to [`ResponseVerifier::verify`] was signed (the last
    /// message of a transfer must be, RFC 8945 §5.3.1).
    pub fn last_was_signed(&self) -> bool {
        !self.first && self.unsigned == 0
    }

    fn check(&mut self, msg: &[u8], sig: &Signature, now: u64) -> Result<(), Error> {
        if !sig.key.as_ref().eq_ci(&self.key.name.as_ref())
            || sig.algorithm != Some(self.key.algorithm)
        {
            return Err(Error::WrongKey(
                match sig.algorithm {
                    Some(a) => format!("{} {a}", sig.key),
                    None => format!("{} with an unknown algorithm", sig.key),
                }
                .into(),
            ));
        }
        // An unsigned error (BADKEY, BADSIG) has no MAC to check; a signed one (BADTIME,
        // BADTRUNC) is checked first, so that the error is known to come from the server.
        if sig.error != 0 && sig.mac.is_empty() {
            return Err(Error::ServerError(sig.error));
        }
        // The message as signed: ARCOUNT without the TSIG, the original ID.
        let mut head = [0u8; HEADER_LEN];
        head.copy_from_slice(&msg[..HEADER_LEN]);
        head[..2].copy_from_slice(&sig.original_id.to_be_bytes());
        let arcount = u16::from_be_bytes([head[10], head[11]]).wrapping_sub(1);
        head[10..12].copy_from_slice(&arcount.to_be_bytes());
        let mut running = self.running.clone();
        running.update(&head);
        running.update(&msg[HEADER_LEN..sig.start]);
        if self.first {
            running.update(&variables(
                &self.key, sig.time, sig.fudge, sig.error, &sig.other,
            ));
        } else {
            running.update(&sig.time.to_be_bytes()[2..]);
            running.update(&sig.fudge.to_be_bytes());
        }
        let want = running.finish();
        if sig.mac.len() != want.len() || !super::constant_time_eq(&sig.mac, &want) {
            return Err(Error::BadSig);
        }
        if sig.error != 0 {
            return Err(Error::SignedError {
                error: sig.error,
                other: sig.other.as_slice().into(),
            });
        }
        if now.abs_diff(sig.time) > u64::from(sig.fudge) {
            return Err(Error::BadTime {
                signed: sig.time,
                now,
            });
        }
        // The next MAC covers this one.
        let mut next = Running::new(&self.key);
        next.update(&(sig.mac.len() as u16).to_be_bytes());
        next.update(&sig.mac);
        self.running = next;
        self.first = false;
        self.unsigned = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{append, sign_request, Signer, FUDGE};
    use super::*;
    use crate::name::Name;
    use crate::types::{Class, RType};
    use crate::writer::MessageWriter;
    use crate::Header;

    fn key(name: &str) -> Key {
        format!("hmac-sha256:{name}:c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IQ==")
            .parse()
            .unwrap()
    }

    /// A message with the question `example.test. AXFR` and `tag` in its ID's place.
    fn message(id: u16, response: bool) -> (Vec<u8>, usize) {
        let mut buf = vec![0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        w.put_question(
            "example.test.".parse::<Name>().unwrap().as_ref(),
            RType::AXFR,
            Class::IN,
        )
        .unwrap();
        let mut h = Header {
            id,
            ..Header::default()
        };
        h.set_qr(response);
        let len = w.finish(&h).len();
        (buf, len)
    }

    /// A signed request and the verifier for its responses, and the signer of those.
    fn exchange(k: &Key) -> (ResponseVerifier, Signer) {
        let (mut q, len) = message(9, false);
        let len = sign_request(&mut q, len, k, 1000);
        let sig = super::super::read(&q[..len]).unwrap().unwrap();
        (ResponseVerifier::new(k, &sig.mac), Signer::new(k, &sig))
    }

    fn signed(signer: &mut Signer, i: u8, now: u64) -> Vec<u8> {
        let (mut r, len) = message(9, true);
        r[len - 1] = i;
        let n = signer.sign(&mut r, len, now);
        r.truncate(n);
        r
    }

    #[test]
    fn a_chain_of_signed_responses_verifies() {
        let k = key("xfr.");
        let (mut v, mut s) = exchange(&k);
        for i in 0..4 {
            v.verify(&signed(&mut s, i, 1000 + u64::from(i)), 1001)
                .unwrap();
            assert!(v.last_was_signed());
        }
    }

    #[test]
    fn unsigned_first_tampered_reordered_or_late_responses_fail() {
        let k = key("xfr.");
        let (mut v, _) = exchange(&k);
        let (r, len) = message(9, true);
        assert_eq!(v.verify(&r[..len], 1000), Err(Error::Unsigned));

        let (mut v, mut s) = exchange(&k);
        let mut m = signed(&mut s, 0, 1000);
        m[13] ^= 0x20; // the question's case is covered
        assert_eq!(v.verify(&m, 1000), Err(Error::BadSig));

        let (mut v, mut s) = exchange(&k);
        let first = signed(&mut s, 0, 1000);
        let second = signed(&mut s, 1, 1000);
        assert_eq!(v.verify(&second, 1000), Err(Error::BadSig));
        v.verify(&first, 1000).unwrap();
        v.verify(&second, 1000).unwrap();

        let (mut v, mut s) = exchange(&k);
        let m = signed(&mut s, 0, 1000);
        assert_eq!(
            v.verify(&m, 1000 + u64::from(FUDGE) + 1),
            Err(Error::BadTime {
                signed: 1000,
                now: 1301
            })
        );

        // Another key, and a request MAC the responses were not made for.
        let (mut v, _) = exchange(&key("other."));
        let (_, mut s) = exchange(&k);
        assert!(matches!(
            v.verify(&signed(&mut s, 0, 1000), 1000),
            Err(Error::WrongKey(_))
        ));
        let mut v = ResponseVerifier::new(&k, &[0; 32]);
        let (_, mut s) = exchange(&k);
        assert_eq!(v.verify(&signed(&mut s, 0, 1000), 1000), Err(Error::BadSig));
    }

    /// Signs `msg` as a later message after `unsigned`, chained to `prior` (what a
    /// server that signs only every few messages does).
    fn sign_after(k: &Key, prior: &[u8], unsigned: &[&[u8]], msg: &mut Vec<u8>) -> Vec<u8> {
        let len = msg.len();
        msg.resize(len + 200, 0);
        let mut parts: Vec<&[u8]> = Vec::new();
        let plen = (prior.len() as u16).to_be_bytes();
        parts.push(&plen);
        parts.push(prior);
        parts.extend_from_slice(unsigned);
        parts.push(&msg[..len]);
        let timers = [&1000u64.to_be_bytes()[2..], &FUDGE.to_be_bytes()[..]].concat();
        parts.push(&timers);
        let mac = k.algorithm.mac(&k.secret, &parts);
        let id = u16::from_be_bytes([msg[0], msg[1]]);
        let end = append(msg, len, &k.name, k.algorithm, 1000, &mac, id, 0, &[]);
        msg.truncate(end);
        mac
    }

    #[test]
    fn unsigned_messages_between_signed_ones_are_covered() {
        let k = key("xfr.");
        let (mut v, mut s) = exchange(&k);
        let first = signed(&mut s, 0, 1000);
        v.verify(&first, 1000).unwrap();
        let prior = super::super::read(&first).unwrap().unwrap().mac;
        let (a, alen) = message(9, true);
        let (mut b, blen) = message(9, true);
        b[blen - 1] = 7;
        let (a, b) = (a[..alen].to_vec(), b[..blen].to_vec());
        let (mut last, llen) = message(9, true);
        last.truncate(llen);
        last[llen - 1] = 3;
        let mut forged = last.clone();
        sign_after(&k, &prior, &[&a, &b], &mut last);
        v.verify(&a, 1000).unwrap();
        v.verify(&b, 1000).unwrap();
        assert!(!v.last_was_signed());
        let mut v2 = v.clone();
        v.verify(&last, 1000).unwrap();
        assert!(v.last_was_signed());
        // A MAC that leaves out an unsigned message does not verify.
        sign_after(&k, &prior, &[&a], &mut forged);
        assert_eq!(v2.verify(&forged, 1000), Err(Error::BadSig));
    }

    #[test]
    fn at_most_99_unsigned_in_a_row() {
        let k = key("xfr.");
        let (mut v, mut s) = exchange(&k);
        v.verify(&signed(&mut s, 0, 1000), 1000).unwrap();
        let (m, len) = message(9, true);
        for _ in 0..MAX_UNSIGNED_RUN {
            v.verify(&m[..len], 1000).unwrap();
        }
        assert_eq!(v.verify(&m[..len], 1000), Err(Error::TooManyUnsigned));
    }
}
