//! update::checked -- an update's TSIG (RFC 8945), read and verified once and carried in
//! its [`Job`](super::Job): by the worker that read the update (which verifies every signed
//! request before it answers it), so that the flood limit, the batch and the answers made
//! beside them (a rate-limited REFUSED, a forward's SERVFAIL) read the verdict instead of
//! computing the MAC again (three times per update before).

use shardns_wire::tsig::{self, Failure, Key, Signature};

/// What an update's TSIG record is, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tsig {
    /// No TSIG record (and every operator's transaction).
    Unsigned,
    /// A TSIG record that does not read, or is not last: FORMERR (RFC 8945 §5.1).
    Malformed,
    /// Signed (boxed: an unsigned update's [`Job`](super::Job) stays small).
    Signed(Box<Signed>),
}

/// A signed update's TSIG record and what verifying it gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The TSIG record.
    pub sig: Signature,
    /// The key it verified with, or why it does not verify.
    pub verdict: Result<Key, Refusal>,
}

/// Why a TSIG does not verify: [`tsig::Failure`] owned, so that it outlives the key list
/// it was checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// [`Failure::Malformed`].
    Malformed,
    /// [`Failure::Unsigned`].
    Unsigned(u16),
    /// [`Failure::Signed`].
    Signed(Key, u16),
}

impl Refusal {
    /// The failure as `tsig` answers it ([`tsig::append_failure`]).
    pub fn failure(&self) -> Failure<'_> {
        match self {
            Self::Malformed => Failure::Malformed,
            Self::Unsigned(e) => Failure::Unsigned(*e),
            Self::Signed(key, e) => Failure::Signed(key, *e),
        }
    }
}

impl Tsig {
    /// Reads the TSIG of `message` and verifies it against `keys` at `now`: for a message
    /// no worker checked (a query without a TSIG last may still hold one elsewhere).
    pub fn check(message: &[u8], keys: &[Key], now: u64) -> Self {
        match tsig::read(message) {
            Err(_) => Self::Malformed,
            Ok(None) => Self::Unsigned,
            Ok(Some(sig)) => {
                let verdict = tsig::verify(message, &sig, keys, now);
                Self::verified(sig, verdict)
            }
        }
    }

    /// A signature already verified (`verdict`: what [`tsig::verify`] said).
    pub fn verified(sig: Signature, verdict: Result<&Key, Failure<'_>>) -> Self {
        let verdict = match verdict {
            Ok(key) => Ok(key.clone()),
            Err(Failure::Malformed) => Err(Refusal::Malformed),
            Err(Failure::Unsigned(e)) => Err(Refusal::Unsigned(e)),
            Err(Failure::Signed(key, e)) => Err(Refusal::Signed(key.clone(), e)),
        };
        Self::signed(sig, verdict)
    }

    /// A signature and its verdict, owned.
    pub fn signed(sig: Signature, verdict: Result<Key, Refusal>) -> Self {
        Self::Signed(Box::new(Signed { sig, verdict }))
    }

    /// The key the update's TSIG verified with, and its signature (to sign the answer).
    pub fn key(&self) -> Option<(&Key, &Signature)> {
        match self {
            Self::Signed(s) => s.verdict.as_ref().ok().map(|key| (key, &s.sig)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(secret: &[u8]) -> Key {
        Key {
            name: "k.".parse().unwrap(),
            algorithm: tsig::Algorithm::HmacSha256,
            secret: secret.to_vec(),
        }
    }

    /// An UPDATE of `t.` (the zone section alone).
    fn update() -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 5 << 3, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(b"\x01t\x00\x00\x06\x00\x01");
        m
    }

    /// [`update`] signed with `key` at `at`.
    fn signed(key: &Key, at: u64) -> Vec<u8> {
        let mut m = update();
        let len = m.len();
        m.resize(len + 200, 0);
        let len = tsig::sign_request(&mut m, len, key, at);
        m.truncate(len);
        m
    }

    #[test]
    fn check_gives_what_verify_says() {
        let k = key(b"0123456789abcdef0123456789abcdef");
        let msg = signed(&k, 1000);
        let got = Tsig::check(&msg, std::slice::from_ref(&k), 1000);
        assert_eq!(got.key().map(|(key, _)| key), Some(&k));
        let other = key(b"another secret, another secret!!");
        let verdict = |t: Tsig| match t {
            Tsig::Signed(s) => s.verdict,
            t => panic!("{t:?}"),
        };
        let bad = verdict(Tsig::check(&msg, &[other], 1000)).unwrap_err();
        assert_eq!(bad.failure(), Failure::Unsigned(tsig::BADSIG));
        let late = verdict(Tsig::check(&msg, std::slice::from_ref(&k), 9000));
        assert_eq!(late, Err(Refusal::Signed(k.clone(), tsig::BADTIME)));
        assert_eq!(
            Tsig::check(&update(), std::slice::from_ref(&k), 1000),
            Tsig::Unsigned
        );
        // Cut inside the TSIG record: it does not read.
        assert_eq!(
            Tsig::check(&msg[..msg.len() - 3], &[k], 1000),
            Tsig::Malformed
        );
    }
}
