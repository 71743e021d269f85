//! TSIG (RFC 8945): reading a request's TSIG record, checking it (the MAC's size per
//! §5.2.2.1, the MAC over the request and its Other Data, the time), and signing the
//! responses, the messages of a zone transfer included (each signed, chained to the one
//! before, RFC 8945 §5.3.1), and the error answers that must be signed (BADTIME with our
//! time in Other Data, BADTRUNC); [`Failure`] says how a request that fails is answered.
//! HMAC-SHA256 and HMAC-SHA512 (the `hmac` and `sha2` crates).
//!
//! [`ResponseVerifier`] is the client's side: it checks the responses to a request we
//! signed (an SOA query, the messages of an incoming zone transfer).
//!
//! Names in the MAC input are in canonical form (lowercase, uncompressed, RFC 8945 §4.3.3).
//! The clock is the caller's (`now`, seconds since the epoch).

use crate::error::Error;
use crate::message::{Header, Reader, HEADER_LEN};
use crate::name::{Name, NameBuf, NameRef};
use crate::types::RType;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha512};
use std::fmt;
use std::str::FromStr;

mod client;
pub use client::{ResponseVerifier, MAX_UNSIGNED_RUN};

/// Time a signature is good for either side of its signing time (RFC 8945 §10: 300 s).
pub const FUDGE: u16 = 300;
/// TSIG error: the MAC does not verify.
pub const BADSIG: u16 = 16;
/// TSIG error: no such key (or another algorithm).
pub const BADKEY: u16 = 17;
/// TSIG error: signed too long ago or in the future.
pub const BADTIME: u16 = 18;
/// TSIG error: a MAC truncated shorter than our policy takes (RFC 8945 §5.2.2.1: we take
/// only the full length, as BIND does by default).
pub const BADTRUNC: u16 = 22;
/// Length of a BADTIME answer's Other Data: the server's time, 48 bits (RFC 8945 §5.2.3).
const TIME_LEN: usize = 6;
/// Class ANY, the TSIG record's class.
const ANY: u16 = 255;

/// A MAC algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// hmac-sha256 (RFC 8945 §6: mandatory to implement).
    HmacSha256,
    /// hmac-sha512.
    HmacSha512,
}

impl Algorithm {
    /// The algorithm's name in wire form.
    fn wire(self) -> &'static [u8] {
        match self {
            Self::HmacSha256 => b"\x0bhmac-sha256\x00",
            Self::HmacSha512 => b"\x0bhmac-sha512\x00",
        }
    }

    fn mac_len(self) -> usize {
        match self {
            Self::HmacSha256 => 32,
            Self::HmacSha512 => 64,
        }
    }

    fn mac(self, secret: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        fn run<M: Mac + hmac::digest::KeyInit>(secret: &[u8], parts: &[&[u8]]) -> Vec<u8> {
            let mut m = <M as hmac::digest::KeyInit>::new_from_slice(secret)
                .expect("HMAC takes keys of any length");
            for p in parts {
                m.update(p);
            }
            m.finalize().into_bytes().to_vec()
        }
        match self {
            Self::HmacSha256 => run::<Hmac<Sha256>>(secret, parts),
            Self::HmacSha512 => run::<Hmac<Sha512>>(secret, parts),
        }
    }
}

impl FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim_end_matches('.').to_ascii_lowercase().as_str() {
            "hmac-sha256" => Ok(Self::HmacSha256),
            "hmac-sha512" => Ok(Self::HmacSha512),
            _ => Err(format!(
                "unknown TSIG algorithm {s:?} (hmac-sha256 or hmac-sha512)"
            )),
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::HmacSha256 => "hmac-sha256",
            Self::HmacSha512 => "hmac-sha512",
        })
    }
}

/// A shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    /// The key's name (the TSIG record's owner).
    pub name: Name,
    /// Its algorithm.
    pub algorithm: Algorithm,
    /// The secret.
    pub secret: Vec<u8>,
}

impl fmt::Debug for Key {
    /// Never prints the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({} {})", self.name, self.algorithm)
    }
}

impl FromStr for Key {
    type Err = String;
    /// `ALGORITHM:NAME:BASE64SECRET`, as `kdig -y` takes it.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut it = s.splitn(3, ':');
        let (Some(alg), Some(name), Some(secret)) = (it.next(), it.next(), it.next()) else {
            return Err(format!(
                "expected ALGORITHM:NAME:SECRET, got {:?}",
                redact(s)
            ));
        };
        let algorithm = alg.parse()?;
        let name = name
            .parse::<Name>()
            .map_err(|e| format!("bad key name {name:?}: {e}"))?;
        let mut bytes = Vec::new();
        crate::text::base64_decode([secret.as_bytes()], &mut bytes)
            .map_err(|_| format!("key {name}: the secret is not base64"))?;
        if bytes.is_empty() {
            return Err(format!("key {name}: empty secret"));
        }
        Ok(Self {
            name,
            algorithm,
            secret: bytes,
        })
    }
}

/// `s` with the part after the second colon hidden (a secret must not reach a log).
fn redact(s: &str) -> String {
    let mut parts: Vec<&str> = s.splitn(3, ':').collect();
    if parts.len() == 3 {
        parts[2] = "…";
    }
    parts.join(":")
}

/// The TSIG record at the end of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The key's name.
    pub key: Name,
    /// The algorithm, if one we know.
    pub algorithm: Option<Algorithm>,
    /// Time Signed, seconds since the epoch (48 bits).
    pub time: u64,
    /// Fudge, seconds.
    pub fudge: u16,
    /// The MAC.
    pub mac: Vec<u8>,
    /// Original ID.
    pub original_id: u16,
    /// Error.
    pub error: u16,
    /// Other Data (covered by the MAC; a BADTIME answer's holds the server's time).
    pub other: Vec<u8>,
    /// Where the TSIG record starts: the signed message is what comes before it.
    pub start: usize,
}

/// The TSIG record of `msg`, if it has one. A TSIG anywhere but last in the additional
/// section, or one that does not parse, is an error (FORMERR, RFC 8945 §5.1).
pub fn read(msg: &[u8]) -> Result<Option<Signature>, Error> {
    let h = Header::parse(msg)?;
    let mut r = Reader::new(msg, HEADER_LEN);
    for _ in 0..h.qdcount {
        r.skip_name()?;
        r.bytes(4)?;
    }
    let total = h.ancount as usize + h.nscount as usize + h.arcount as usize;
    let mut name = NameBuf::new();
    for i in 0..total {
        let start = r.pos();
        r.name(&mut name)?;
        let rtype = RType(r.u16()?);
        r.bytes(6)?; // class, TTL
        let len = r.u16()? as usize;
        let end = r.pos() + len;
        if rtype != RType::TSIG {
            r.bytes(len)?;
            continue;
        }
        if i + 1 != total || h.arcount == 0 {
            return Err(Error::BadOpt);
        }
        let key = name.as_ref().to_name();
        let mut alg = NameBuf::new();
        r.name(&mut alg)?;
        let algorithm = Algorithm::from_str(&alg.as_ref().to_string()).ok();
        let hi = u64::from(r.u16()?);
        let time = hi << 32 | u64::from(r.u32()?);
        let fudge = r.u16()?;
        let mac_len = r.u16()? as usize;
        let mac = r.bytes(mac_len)?.to_vec();
        let original_id = r.u16()?;
        let error = r.u16()?;
        let other_len = r.u16()? as usize;
        let other = r.bytes(other_len)?.to_vec();
        if r.pos() != end || r.remaining() != 0 {
            return Err(Error::TrailingData);
        }
        return Ok(Some(Signature {
            key,
            algorithm,
            time,
            fudge,
            mac,
            original_id,
            error,
            other,
            start,
        }));
    }
    Ok(None)
}

/// Lowercase wire form of a name (its canonical form, RFC 4034 §6.2).
fn canonical(name: NameRef<'_>) -> Vec<u8> {
    name.as_wire().iter().map(u8::to_ascii_lowercase).collect()
}

/// The TSIG variables (RFC 8945 §4.3.3) after the message in the MAC input.
fn variables(key: &Key, time: u64, fudge: u16, error: u16, other: &[u8]) -> Vec<u8> {
    let mut v = canonical(key.name.as_ref());
    v.extend_from_slice(&ANY.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(key.algorithm.wire());
    v.extend_from_slice(&time.to_be_bytes()[2..]);
    v.extend_from_slice(&fudge.to_be_bytes());
    v.extend_from_slice(&error.to_be_bytes());
    v.extend_from_slice(&(other.len() as u16).to_be_bytes());
    v.extend_from_slice(other);
    v
}

/// Why a signed request does not verify, and how it is answered (RFC 8945 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure<'k> {
    /// A MAC longer than the hash, or shorter than 10 octets or half the hash (RFC 8945
    /// §5.2.2.1): FORMERR, with an unsigned TSIG carrying BADSIG (§5.3.2: the MAC is at
    /// fault), as BIND 9.18 answers.
    Malformed,
    /// BADKEY or BADSIG: NOTAUTH with an unsigned TSIG carrying the error (§5.3.2: the
    /// key or the MAC is what failed, so nothing can be signed for the client).
    Unsigned(u16),
    /// BADTIME or BADTRUNC: the MAC verified, so the NOTAUTH is signed with the key that
    /// verified it (§5.2.3; BADTIME's Other Data holds our time), as BIND does.
    Signed(&'k Key, u16),
}

impl Failure<'_> {
    /// The TSIG error.
    pub fn error(&self) -> u16 {
        match self {
            Self::Malformed => BADSIG,
            Self::Unsigned(e) | Self::Signed(_, e) => *e,
        }
    }
}

/// Checks the request `msg`, signed as `sig`, against `keys` at time `now`; returns the key
/// or why it fails, in RFC 8945 §5.2's order: the key, the MAC's size (§5.2.2.1), the MAC
/// over the request's own Other Data, the time, then truncation. A truncated MAC (a prefix
/// of the hash) is compared over its length and, if it verifies, refused with BADTRUNC:
/// our policy's minimum is the full length (BIND 9.18's default for a key without one).
pub fn verify<'k>(
    msg: &[u8],
    sig: &Signature,
    keys: &'k [Key],
    now: u64,
) -> Result<&'k Key, Failure<'k>> {
    let key = keys
        .iter()
        .find(|k| k.name.as_ref().eq_ci(&sig.key.as_ref()) && Some(k.algorithm) == sig.algorithm)
        .ok_or(Failure::Unsigned(BADKEY))?;
    let full = key.algorithm.mac_len();
    let size = sig.mac.len();
    // Size 0 is no MAC at all: BADSIG below, as BIND answers.
    if size > full || (size > 0 && size < full.div_ceil(2).max(10)) {
        return Err(Failure::Malformed);
    }
    // The message as it was signed: without the TSIG record, ARCOUNT one less, the
    // original ID.
    let mut head = [0u8; HEADER_LEN];
    head.copy_from_slice(&msg[..HEADER_LEN]);
    head[..2].copy_from_slice(&sig.original_id.to_be_bytes());
    let arcount = u16::from_be_bytes([head[10], head[11]]).wrapping_sub(1);
    head[10..12].copy_from_slice(&arcount.to_be_bytes());
    let vars = variables(key, sig.time, sig.fudge, sig.error, &sig.other);
    let want = key
        .algorithm
        .mac(&key.secret, &[&head, &msg[HEADER_LEN..sig.start], &vars]);
    if size == 0 || !constant_time_eq(&sig.mac, &want[..size]) {
        return Err(Failure::Unsigned(BADSIG));
    }
    if now.abs_diff(sig.time) > u64::from(sig.fudge) {
        return Err(Failure::Signed(key, BADTIME));
    }
    if size < full {
        return Err(Failure::Signed(key, BADTRUNC));
    }
    Ok(key)
}

/// Appends to the error response in `buf[..len]` (NOTAUTH; FORMERR for
/// [`Failure::Malformed`]) the TSIG record `failure` asks for, for a request signed as
/// `sig`: unsigned with the error, or signed with the error (and our time for BADTIME).
/// Returns the new length, or `len` if there is no room.
pub fn append_failure(
    buf: &mut [u8],
    len: usize,
    sig: &Signature,
    failure: &Failure<'_>,
    now: u64,
) -> usize {
    match *failure {
        Failure::Malformed => append_error(buf, len, sig, BADSIG, now),
        Failure::Unsigned(error) => append_error(buf, len, sig, error, now),
        Failure::Signed(key, error) => {
            let mut signer = Signer::new(key, sig);
            if len + signer.room() + TIME_LEN > buf.len() {
                return len;
            }
            signer.sign_error(buf, len, now, error)
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Signs the responses to one signed request: the first with the request's MAC, each later
/// one (a zone transfer's messages) with the MAC before it (RFC 8945 §5.3.1).
#[derive(Debug, Clone)]
pub struct Signer {
    key: Key,
    /// The request's MAC, then each response's.
    prior: Vec<u8>,
    first: bool,
}

impl Signer {
    /// A signer for the responses to a request signed as `sig` with `key`.
    pub fn new(key: &Key, sig: &Signature) -> Self {
        Self {
            key: key.clone(),
            prior: sig.mac.clone(),
            first: true,
        }
    }

    /// The key's name.
    pub fn key(&self) -> &Name {
        &self.key.name
    }

    /// Octets the TSIG record adds to a message: hold them back from its size limit.
    pub fn room(&self) -> usize {
        self.key.name.as_ref().len()
            + 10
            + self.key.algorithm.wire().len()
            + 16
            + self.key.algorithm.mac_len()
    }

    /// The size limit left for a message whose limit is `limit` once its TSIG record is
    /// held back: the one rule for every signed answer (queries, transfers, NOTIFY), so
    /// that the signature is never what is left out (RFC 8945 §5.3: a response too big
    /// for it is truncated, TC, and signed).
    pub fn limit(&self, limit: usize) -> usize {
        limit.saturating_sub(self.room())
    }

    /// Signs the message in `buf[..len]` at time `now`: appends the TSIG record (`buf` needs
    /// [`Signer::room`] octets more) and counts it in ARCOUNT. Returns the new length.
    pub fn sign(&mut self, buf: &mut [u8], len: usize, now: u64) -> usize {
        self.sign_error(buf, len, now, 0)
    }

    /// [`Signer::sign`] with a TSIG error (BADTIME, BADTRUNC) in the record: BADTIME's
    /// Other Data is `now`, 48 bits (RFC 8945 §5.2.3), which needs 6 octets more than
    /// [`Signer::room`].
    pub fn sign_error(&mut self, buf: &mut [u8], len: usize, now: u64, error: u16) -> usize {
        let time = &now.to_be_bytes()[2..];
        let other = if error == BADTIME { time } else { &[] };
        let prior_len = (self.prior.len() as u16).to_be_bytes();
        let mac = if self.first {
            let vars = variables(&self.key, now, FUDGE, error, other);
            self.key.algorithm.mac(
                &self.key.secret,
                &[&prior_len, &self.prior, &buf[..len], &vars],
            )
        } else {
            let timers = [&now.to_be_bytes()[2..], &FUDGE.to_be_bytes()[..]].concat();
            self.key.algorithm.mac(
                &self.key.secret,
                &[&prior_len, &self.prior, &buf[..len], &timers],
            )
        };
        self.first = false;
        let id = u16::from_be_bytes([buf[0], buf[1]]);
        let end = append(
            buf,
            len,
            &self.key.name,
            self.key.algorithm,
            now,
            &mac,
            id,
            error,
            other,
        );
        self.prior = mac;
        end
    }
}

/// Signs a request in `buf[..len]` with `key` at time `now` (RFC 8945 §4.3.3), as a client
/// does: appends the TSIG record (`buf` needs the room [`Signer::room`] gives) and returns
/// the new length.
pub fn sign_request(buf: &mut [u8], len: usize, key: &Key, now: u64) -> usize {
    sign_request_with(buf, len, key, now, &[])
}

/// [`sign_request`] with `other` as Other Data (covered by the MAC; `buf` needs its length
/// more), as some clients send it: for tests and fuzzing of the server's side.
pub fn sign_request_with(buf: &mut [u8], len: usize, key: &Key, now: u64, other: &[u8]) -> usize {
    let vars = variables(key, now, FUDGE, 0, other);
    let mac = key.algorithm.mac(&key.secret, &[&buf[..len], &vars]);
    let id = u16::from_be_bytes([buf[0], buf[1]]);
    append(buf, len, &key.name, key.algorithm, now, &mac, id, 0, other)
}

/// Appends an unsigned TSIG record carrying `error` (BADKEY, BADSIG) to the error
/// response in `buf[..len]`, for a request signed as `sig` (RFC 8945 §5.3.2). Returns the
/// new length, or `len` if there is no room.
pub fn append_error(buf: &mut [u8], len: usize, sig: &Signature, error: u16, now: u64) -> usize {
    let algorithm = sig.algorithm.unwrap_or(Algorithm::HmacSha256);
    let need = sig.key.as_ref().len() + 10 + algorithm.wire().len() + 16;
    if buf.len() < len + need {
        return len;
    }
    let id = u16::from_be_bytes([buf[0], buf[1]]);
    append(buf, len, &sig.key, algorithm, now, &[], id, error, &[])
}

#[allow(clippy::too_many_arguments)]
fn append(
    buf: &mut [u8],
    len: usize,
    key: &Name,
    algorithm: Algorithm,
    now: u64,
    mac: &[u8],
    id: u16,
    error: u16,
    other: &[u8],
) -> usize {
    let mut at = len;
    let mut put = |b: &[u8]| {
        buf[at..at + b.len()].copy_from_slice(b);
        at += b.len();
    };
    put(key.as_wire());
    put(&RType::TSIG.0.to_be_bytes());
    put(&ANY.to_be_bytes());
    put(&0u32.to_be_bytes());
    let rdlen = algorithm.wire().len() + 16 + mac.len() + other.len();
    put(&(rdlen as u16).to_be_bytes());
    put(algorithm.wire());
    put(&now.to_be_bytes()[2..]);
    put(&FUDGE.to_be_bytes());
    put(&(mac.len() as u16).to_be_bytes());
    put(mac);
    put(&id.to_be_bytes());
    put(&error.to_be_bytes());
    put(&(other.len() as u16).to_be_bytes());
    put(other);
    let arcount = u16::from_be_bytes([buf[10], buf[11]]) + 1;
    buf[10..12].copy_from_slice(&arcount.to_be_bytes());
    at
}

#[cfg(test)]
mod tests;
