//! Signing keys and public keys: one type for every algorithm, backed by aws-lc-rs.
//!
//! A [`SigningKey`] is a key pair with its DNSKEY flags; it keeps its private part in the
//! raw form BIND's `.private` files use ([`PrivateKey`]) so the key store can write it, and
//! an aws-lc-rs key pair to sign with. [`verify`] checks a signature with the public key field of
//! a DNSKEY. No cryptography is ours: aws-lc-rs signs, verifies, hashes and generates; this file
//! only moves octets between DNS and aws-lc-rs's forms (RFC 3110, RFC 6605, RFC 8080).

use crate::alg::Algorithm;
use crate::digest::key_tag;
use crate::error::Error;
use crate::pkcs11::TokenKey;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::signature::{self as sig, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};
use core::fmt;

/// DNSKEY flags: Zone Key (RFC 4034 §2.1.1).
pub const FLAG_ZONE: u16 = 0x0100;
/// DNSKEY flags: Secure Entry Point (RFC 4034 §2.1.1), set on KSKs and CSKs.
pub const FLAG_SEP: u16 = 0x0001;
/// DNSKEY flags: revoked (RFC 5011 §2.1).
pub const FLAG_REVOKE: u16 = 0x0080;

/// The private half of a key, in the raw form of BIND's `Private-key-format: v1.3` fields.
#[derive(Clone, PartialEq, Eq)]
pub enum PrivateKey {
    /// ECDSA (algorithms 13 and 14): the private scalar, 32 or 48 octets big-endian.
    Ecdsa(Vec<u8>),
    /// Ed25519 (algorithm 15): the 32-octet seed (RFC 8032 §5.1.5's private key).
    Ed25519([u8; 32]),
    /// RSA (algorithms 8 and 10): the PKCS #1 components, big-endian.
    Rsa(RsaPrivate),
    /// On a PKCS#11 token, which it never leaves: the `CKA_ID` of its objects there.
    Token(Vec<u8>),
}

/// Hides the secret octets from `{:?}`.
impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Ecdsa(_) => "PrivateKey::Ecdsa(..)",
            Self::Ed25519(_) => "PrivateKey::Ed25519(..)",
            Self::Rsa(_) => "PrivateKey::Rsa(..)",
            Self::Token(_) => "PrivateKey::Token(..)",
        })
    }
}

/// The components of an RSA private key (PKCS #1 / RFC 8017 §3.2), big-endian octets.
#[derive(Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct RsaPrivate {
    pub modulus: Vec<u8>,
    pub public_exponent: Vec<u8>,
    pub private_exponent: Vec<u8>,
    pub prime1: Vec<u8>,
    pub prime2: Vec<u8>,
    pub exponent1: Vec<u8>,
    pub exponent2: Vec<u8>,
    pub coefficient: Vec<u8>,
}

enum Pair {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
    Rsa(RsaKeyPair),
    Token(TokenKey),
    /// On a token not open here: the DNSKEY and times serve (`shardns key list`, `ds`);
    /// signing fails.
    Detached,
}

/// A key pair that signs, with its algorithm and DNSKEY flags. `Sync`: the zone signer
/// shares one between its threads.
pub struct SigningKey {
    algorithm: Algorithm,
    dnskey: Vec<u8>,
    tag: u16,
    private: PrivateKey,
    pair: Pair,
    rng: SystemRandom,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .field("flags", &self.flags())
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

fn ecdsa_alg(a: Algorithm) -> Result<(&'static sig::EcdsaSigningAlgorithm, usize), Error> {
    match a {
        Algorithm::EcdsaP256Sha256 => Ok((&sig::ECDSA_P256_SHA256_FIXED_SIGNING, 32)),
        Algorithm::EcdsaP384Sha384 => Ok((&sig::ECDSA_P384_SHA384_FIXED_SIGNING, 48)),
        _ => Err(Error::Unsupported(a)),
    }
}

/// RSA key size when none is given: 2048 bits, BIND's and Knot's default.
pub const RSA_DEFAULT_BITS: u32 = 2048;

/// The RSA key sizes keys are made with (aws-lc-rs's sizes up to RFC 3110's 4096 bits).
pub const RSA_BITS: [u32; 3] = [2048, 3072, 4096];

impl SigningKey {
    /// Generates a new key of `algorithm` with the system's random number generator; an
    /// RSA key has [`RSA_DEFAULT_BITS`].
    pub fn generate(algorithm: Algorithm, flags: u16) -> Result<Self, Error> {
        Self::generate_sized(algorithm, flags, None)
    }

    /// [`generate`](Self::generate) with an RSA key size (one of [`RSA_BITS`]; `None`: the
    /// default); the size is ignored for the other algorithms, whose keys have one size.
    pub fn generate_sized(
        algorithm: Algorithm,
        flags: u16,
        rsa_bits: Option<u32>,
    ) -> Result<Self, Error> {
        let rng = SystemRandom::new();
        match algorithm {
            Algorithm::RsaSha256 | Algorithm::RsaSha512 => {
                let size = match rsa_bits.unwrap_or(RSA_DEFAULT_BITS) {
                    2048 => aws_lc_rs::rsa::KeySize::Rsa2048,
                    3072 => aws_lc_rs::rsa::KeySize::Rsa3072,
                    4096 => aws_lc_rs::rsa::KeySize::Rsa4096,
                    bits => {
                        return Err(Error::Rejected(format!(
                            "RSA keys are made with 2048, 3072 or 4096 bits, not {bits}"
                        )))
                    }
                };
                let pair = RsaKeyPair::generate(size).map_err(|_| Error::Random)?;
                let pkcs8 =
                    aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(
                        &pair,
                    )
                    .map_err(|_| Error::Random)?;
                let rsa = der::rsa_private_key(pkcs8.as_ref()).ok_or(Error::Rejected(
                    "unexpected PKCS #8 document from aws-lc-rs".into(),
                ))?;
                let public = rsa_public_key(&rsa.public_exponent, &rsa.modulus);
                Self::from_private(algorithm, flags, PrivateKey::Rsa(rsa), &public)
            }
            Algorithm::Ed25519 => {
                // RFC 8032 §5.1.5: the private key is 32 random octets.
                let mut seed = [0u8; 32];
                rng.fill(&mut seed).map_err(|_| Error::Random)?;
                let pair = Ed25519KeyPair::from_seed_unchecked(&seed)
                    .map_err(|e| Error::Rejected(e.to_string()))?;
                let public = pair.public_key().as_ref().to_vec();
                Self::from_private(algorithm, flags, PrivateKey::Ed25519(seed), &public)
            }
            Algorithm::EcdsaP256Sha256 | Algorithm::EcdsaP384Sha384 => {
                let (alg, len) = ecdsa_alg(algorithm)?;
                let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|_| Error::Random)?;
                let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref())
                    .map_err(|e| Error::Rejected(e.to_string()))?;
                let scalar = der::ec_private_key(pkcs8.as_ref())
                    .filter(|s| s.len() == len)
                    .ok_or(Error::Rejected(
                        "unexpected PKCS #8 document from aws-lc-rs".into(),
                    ))?;
                // aws-lc-rs gives the uncompressed point 04 | x | y; DNSKEY holds x | y.
                let public = pair.public_key().as_ref()[1..].to_vec();
                Self::from_private(
                    algorithm,
                    flags,
                    PrivateKey::Ecdsa(scalar.to_vec()),
                    &public,
                )
            }
            other => Err(Error::Unsupported(other)),
        }
    }

    /// A key from its private part and the public key field of its DNSKEY (as stored in a
    /// `.key` file); aws-lc-rs checks that the two belong together.
    pub fn from_private(
        algorithm: Algorithm,
        flags: u16,
        private: PrivateKey,
        public_key: &[u8],
    ) -> Result<Self, Error> {
        let rng = SystemRandom::new();
        let reject = |e: aws_lc_rs::error::KeyRejected| Error::Rejected(e.to_string());
        let pair = match (&private, algorithm) {
            (PrivateKey::Ed25519(seed), Algorithm::Ed25519) => Pair::Ed25519(
                Ed25519KeyPair::from_seed_and_public_key(seed, public_key).map_err(reject)?,
            ),
            (
                PrivateKey::Ecdsa(scalar),
                Algorithm::EcdsaP256Sha256 | Algorithm::EcdsaP384Sha384,
            ) => {
                let (alg, _) = ecdsa_alg(algorithm)?;
                let mut point = Vec::with_capacity(1 + public_key.len());
                point.push(4);
                point.extend_from_slice(public_key);
                Pair::Ecdsa(
                    EcdsaKeyPair::from_private_key_and_public_key(alg, scalar, &point)
                        .map_err(reject)?,
                )
            }
            (PrivateKey::Rsa(r), Algorithm::RsaSha256 | Algorithm::RsaSha512) => {
                let pair = RsaKeyPair::from_components(&aws_lc_rs::rsa::KeyPairComponents {
                    public_key: aws_lc_rs::rsa::PublicKeyComponents {
                        n: &r.modulus,
                        e: &r.public_exponent,
                    },
                    d: &r.private_exponent,
                    p: &r.prime1,
                    q: &r.prime2,
                    dP: &r.exponent1,
                    dQ: &r.exponent2,
                    qInv: &r.coefficient,
                })
                .map_err(reject)?;
                if rsa_public_key(&r.public_exponent, &r.modulus) != public_key {
                    return Err(Error::Rejected(
                        "the DNSKEY's public key is not this private key's".into(),
                    ));
                }
                Pair::Rsa(pair)
            }
            (_, a) if !a.can_sign() => return Err(Error::Unsupported(a)),
            (PrivateKey::Token(_), _) => {
                return Err(Error::Rejected(
                    "a key on a token is opened on the token".into(),
                ))
            }
            _ => return Err(Error::Rejected("private key of another algorithm".into())),
        };
        Self::assemble(algorithm, flags, private, pair, public_key, rng)
    }

    /// The key with its DNSKEY, checked by one signature.
    fn assemble(
        algorithm: Algorithm,
        flags: u16,
        private: PrivateKey,
        pair: Pair,
        public_key: &[u8],
        rng: SystemRandom,
    ) -> Result<Self, Error> {
        let mut dnskey = Vec::with_capacity(4 + public_key.len());
        dnskey.extend_from_slice(&flags.to_be_bytes());
        dnskey.push(3);
        dnskey.push(algorithm.number());
        dnskey.extend_from_slice(public_key);
        let key = Self {
            algorithm,
            tag: key_tag(&dnskey),
            dnskey,
            private,
            pair,
            rng,
        };
        // One signature checked with the DNSKEY's public key: a key that does not sign as
        // its DNSKEY says is found now, not in the middle of a zone.
        let probe = key.sign(b"shardns key check")?;
        if !verify(algorithm, key.public_key(), b"shardns key check", &probe) {
            return Err(Error::Rejected("a test signature does not verify".into()));
        }
        Ok(key)
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The DNSKEY flags.
    pub fn flags(&self) -> u16 {
        u16::from_be_bytes([self.dnskey[0], self.dnskey[1]])
    }

    /// The key tag of [`dnskey_rdata`](Self::dnskey_rdata) (RFC 4034 Appendix B).
    pub fn tag(&self) -> u16 {
        self.tag
    }

    /// The DNSKEY rdata: flags, protocol 3, algorithm, public key.
    pub fn dnskey_rdata(&self) -> &[u8] {
        &self.dnskey
    }

    /// The public key field of the DNSKEY.
    pub fn public_key(&self) -> &[u8] {
        &self.dnskey[4..]
    }

    /// The private part, for the key store.
    pub fn private(&self) -> &PrivateKey {
        &self.private
    }

    /// Signs `msg` the way RRSIGs of this algorithm need: r | s for ECDSA (RFC 6605 §4),
    /// the 64-octet signature for Ed25519 (RFC 8080 §4), PKCS #1 v1.5 for RSA (RFC 5702 §3).
    pub fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, Error> {
        match &self.pair {
            Pair::Ecdsa(p) => p
                .sign(&self.rng, msg)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| Error::Random),
            Pair::Ed25519(p) => Ok(p.sign(msg).as_ref().to_vec()),
            Pair::Rsa(p) => {
                let mut out = vec![0u8; p.public_modulus_len()];
                let encoding = if self.algorithm == Algorithm::RsaSha512 {
                    &sig::RSA_PKCS1_SHA512
                } else {
                    &sig::RSA_PKCS1_SHA256
                };
                p.sign(encoding, &self.rng, msg, &mut out)
                    .map_err(|_| Error::Rejected("RSA signing failed".into()))?;
                Ok(out)
            }
            Pair::Token(k) => k.sign(msg),
            Pair::Detached => Err(Error::Token(format!(
                "key {} is on a PKCS#11 token and no keystore is open for it",
                self.tag
            ))),
        }
    }
}

/// The RFC 3110 §2 public key field of an RSA DNSKEY: exponent length (one octet, or zero
/// and two octets), exponent, modulus; leading zero octets dropped.
pub fn rsa_public_key(exponent: &[u8], modulus: &[u8]) -> Vec<u8> {
    let strip = |b: &[u8]| -> Vec<u8> { b.iter().copied().skip_while(|&x| x == 0).collect() };
    let (e, n) = (strip(exponent), strip(modulus));
    let mut out = Vec::with_capacity(3 + e.len() + n.len());
    if e.len() <= 255 {
        out.push(e.len() as u8);
    } else {
        out.push(0);
        out.extend_from_slice(&(e.len() as u16).to_be_bytes());
    }
    out.extend_from_slice(&e);
    out.extend_from_slice(&n);
    out
}

/// Splits an RSA DNSKEY public key field into exponent and modulus (RFC 3110 §2).
pub fn rsa_split(public_key: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = public_key.split_first()?;
    let (len, rest) = if first == 0 {
        let (l, rest) = rest.split_at_checked(2)?;
        (usize::from(u16::from_be_bytes([l[0], l[1]])), rest)
    } else {
        (usize::from(first), rest)
    };
    let (e, n) = rest.split_at_checked(len)?;
    (!e.is_empty() && !n.is_empty()).then_some((e, n))
}

/// Checks `signature` over `msg` with the public key field of a DNSKEY of `algorithm`.
/// RSA keys of 1024 bits and up are accepted here, as validators must (RFC 8624 §3.1).
pub fn verify(algorithm: Algorithm, public_key: &[u8], msg: &[u8], signature: &[u8]) -> bool {
    let unparsed = |alg: &'static dyn sig::VerificationAlgorithm, key: &[u8]| {
        sig::UnparsedPublicKey::new(alg, key)
            .verify(msg, signature)
            .is_ok()
    };
    let ecdsa = |alg: &'static dyn sig::VerificationAlgorithm, len: usize| {
        if public_key.len() != len {
            return false;
        }
        let mut point = Vec::with_capacity(1 + len);
        point.push(4);
        point.extend_from_slice(public_key);
        unparsed(alg, &point)
    };
    let rsa = |params: &'static sig::RsaParameters| {
        let Some((e, n)) = rsa_split(public_key) else {
            return false;
        };
        sig::RsaPublicKeyComponents { n, e }
            .verify(params, msg, signature)
            .is_ok()
    };
    match algorithm {
        Algorithm::EcdsaP256Sha256 => ecdsa(&sig::ECDSA_P256_SHA256_FIXED, 64),
        Algorithm::EcdsaP384Sha384 => ecdsa(&sig::ECDSA_P384_SHA384_FIXED, 96),
        Algorithm::Ed25519 => public_key.len() == 32 && unparsed(&sig::ED25519, public_key),
        Algorithm::RsaSha1 | Algorithm::RsaSha1Nsec3Sha1 => {
            rsa(&sig::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY)
        }
        Algorithm::RsaSha256 => rsa(&sig::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY),
        Algorithm::RsaSha512 => rsa(&sig::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY),
    }
}

/// Just enough DER to take the private key out of the PKCS #8 document aws-lc-rs generates
/// for an ECDSA key (RFC 5208 PrivateKeyInfo holding an RFC 5915 ECPrivateKey) or an RSA
/// key (holding an RFC 8017 RSAPrivateKey). Parsing, not cryptography: aws-lc-rs made and
/// checked the document.
mod der {
    /// Reads one TLV at the start of `data`: its tag, contents and the rest.
    fn tlv(data: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = data.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 2 {
                return None;
            }
            let (l, rest) = rest.split_at_checked(n)?;
            (l.iter().fold(0usize, |v, &b| v << 8 | usize::from(b)), rest)
        };
        let (body, rest) = rest.split_at_checked(len)?;
        Some((tag, body, rest))
    }

    const SEQUENCE: u8 = 0x30;
    const INTEGER: u8 = 0x02;
    const OCTET_STRING: u8 = 0x04;

    /// PrivateKeyInfo { version, algorithm, privateKey OCTET STRING } -> the privateKey
    /// octets (RFC 5208 §5).
    fn private_key(pkcs8: &[u8]) -> Option<&[u8]> {
        let (SEQUENCE, info, _) = tlv(pkcs8)? else {
            return None;
        };
        let (INTEGER, _, rest) = tlv(info)? else {
            return None;
        };
        let (SEQUENCE, _, rest) = tlv(rest)? else {
            return None;
        };
        let (OCTET_STRING, key, _) = tlv(rest)? else {
            return None;
        };
        Some(key)
    }

    /// PrivateKeyInfo { version, algorithm, privateKey OCTET STRING { ECPrivateKey {
    /// version 1, privateKey OCTET STRING, ... } } } -> the inner privateKey octets.
    pub(super) fn ec_private_key(pkcs8: &[u8]) -> Option<&[u8]> {
        let (SEQUENCE, ec, _) = tlv(private_key(pkcs8)?)? else {
            return None;
        };
        let (INTEGER, [1], rest) = tlv(ec)? else {
            return None;
        };
        let (OCTET_STRING, scalar, _) = tlv(rest)? else {
            return None;
        };
        Some(scalar)
    }

    /// PrivateKeyInfo { version, algorithm, privateKey OCTET STRING { RSAPrivateKey {
    /// version 0, n, e, d, p, q, dP, dQ, qInv } } } (RFC 8017 A.1.2) -> its integers,
    /// leading zero octets dropped.
    pub(super) fn rsa_private_key(pkcs8: &[u8]) -> Option<super::RsaPrivate> {
        let (SEQUENCE, mut rest, _) = tlv(private_key(pkcs8)?)? else {
            return None;
        };
        let mut ints: Vec<Vec<u8>> = Vec::with_capacity(9);
        while !rest.is_empty() && ints.len() < 9 {
            let (INTEGER, value, next) = tlv(rest)? else {
                return None;
            };
            ints.push(value.iter().copied().skip_while(|&b| b == 0).collect());
            rest = next;
        }
        let [version, n, e, d, p, q, dp, dq, qinv]: [Vec<u8>; 9] = ints.try_into().ok()?;
        version.is_empty().then_some(super::RsaPrivate {
            modulus: n,
            public_exponent: e,
            private_exponent: d,
            prime1: p,
            prime2: q,
            exponent1: dp,
            exponent2: dq,
            coefficient: qinv,
        })
    }

    #[cfg(test)]
    #[test]
    fn rejects_what_is_not_pkcs8() {
        assert_eq!(ec_private_key(&[]), None);
        assert_eq!(ec_private_key(&[0x30, 0x03, 0x02, 0x01, 0x00]), None);
        assert_eq!(ec_private_key(&[0x30, 0x85, 0, 0, 0, 0, 1]), None);
        // SEQ { INT 0, SEQ {}, OCTET STRING { SEQ { INT 1, OCTET STRING 0a0b } } }
        let doc = [
            0x30, 0x0f, 0x02, 0x01, 0x00, 0x30, 0x00, 0x04, 0x09, 0x30, 0x06, 0x02, 0x01, 0x01,
            0x04, 0x01, 0x0a,
        ];
        assert_eq!(
            ec_private_key(&doc),
            None,
            "an inner length runs past its end"
        );
        let doc = [
            0x30, 0x10, 0x02, 0x01, 0x00, 0x30, 0x00, 0x04, 0x09, 0x30, 0x07, 0x02, 0x01, 0x01,
            0x04, 0x02, 0x0a, 0x0b,
        ];
        assert_eq!(ec_private_key(&doc), Some(&[0x0a, 0x0b][..]));
    }
}

mod token;

#[cfg(test)]
mod tests;
