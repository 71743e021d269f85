//! key::token -- a [`SigningKey`] whose private key is on a PKCS#11 token
//! ([`crate::pkcs11`]): made there, found there again by its `CKA_ID`, or detached (its
//! DNSKEY and where it is, when the token is not open).

use super::{key_tag, rsa_public_key, Pair, PrivateKey, SigningKey, RSA_BITS, RSA_DEFAULT_BITS};
use crate::alg::Algorithm;
use crate::error::Error;
use crate::pkcs11::Token;
use aws_lc_rs::rand::SystemRandom;
use std::sync::Arc;

impl SigningKey {
    /// Makes a key pair of `algorithm` on `token` (RSA: `rsa_bits`, absent: the default),
    /// labelled `label`: its private key stays there.
    pub fn generate_on(
        token: &Arc<Token>,
        algorithm: Algorithm,
        flags: u16,
        rsa_bits: Option<u32>,
        label: &str,
    ) -> Result<Self, Error> {
        let bits = rsa_bits.unwrap_or(RSA_DEFAULT_BITS);
        if algorithm.is_rsa() && !RSA_BITS.contains(&bits) {
            return Err(Error::Rejected(format!(
                "RSA keys are made with 2048, 3072 or 4096 bits, not {bits}"
            )));
        }
        let (key, public) = token.generate(algorithm, bits, label)?;
        let public = public_field(public);
        let id = key.id().to_vec();
        let rng = SystemRandom::new();
        Self::assemble(
            algorithm,
            flags,
            PrivateKey::Token(id),
            Pair::Token(key),
            &public,
            rng,
        )
    }

    /// The key of `token` whose `CKA_ID` is `id`; with `public_key` (the DNSKEY's, from a
    /// `.key` file) the token's public key must be that one.
    pub fn from_token(
        token: &Arc<Token>,
        algorithm: Algorithm,
        flags: u16,
        id: &[u8],
        public_key: Option<&[u8]>,
    ) -> Result<Self, Error> {
        let (key, public) = token.find(algorithm, id)?;
        let public = public_field(public);
        if public_key.is_some_and(|p| p != public) {
            return Err(Error::Rejected(format!(
                "the public key of {}'s key is not the DNSKEY's",
                token.name()
            )));
        }
        let rng = SystemRandom::new();
        Self::assemble(
            algorithm,
            flags,
            PrivateKey::Token(id.to_vec()),
            Pair::Token(key),
            &public,
            rng,
        )
    }

    /// A key on a token that is not open: its DNSKEY (from its `.key` file) and where it
    /// is, to read and write its times; it cannot sign.
    pub fn detached(algorithm: Algorithm, flags: u16, id: &[u8], public_key: &[u8]) -> Self {
        let mut dnskey = Vec::with_capacity(4 + public_key.len());
        dnskey.extend_from_slice(&flags.to_be_bytes());
        dnskey.extend_from_slice(&[3, algorithm.number()]);
        dnskey.extend_from_slice(public_key);
        Self {
            algorithm,
            tag: key_tag(&dnskey),
            dnskey,
            private: PrivateKey::Token(id.to_vec()),
            pair: Pair::Detached,
            rng: SystemRandom::new(),
        }
    }

    /// True for a key on a token not open here ([`Self::detached`]).
    pub fn is_detached(&self) -> bool {
        matches!(self.pair, Pair::Detached)
    }
}

/// The DNSKEY public key field of a key on a token.
fn public_field(public: crate::pkcs11::PublicKey) -> Vec<u8> {
    match public {
        crate::pkcs11::PublicKey::Field(v) => v,
        crate::pkcs11::PublicKey::Rsa(e, n) => rsa_public_key(&e, &n),
    }
}
