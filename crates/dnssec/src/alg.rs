//! DNSSEC algorithm numbers (RFC 8624 §3.1, IANA "DNS Security Algorithm Numbers") and DS
//! digest types (RFC 4034 §5.1.3, RFC 4509, RFC 6605).

use core::fmt;

/// A DNSKEY/RRSIG algorithm this crate knows. Signing (and key generation) is offered for
/// [`RsaSha256`], [`RsaSha512`], [`EcdsaP256Sha256`], [`EcdsaP384Sha384`] and [`Ed25519`];
/// the others are for verification only (a validator meets them in the wild).
///
/// [`RsaSha256`]: Algorithm::RsaSha256
/// [`RsaSha512`]: Algorithm::RsaSha512
/// [`EcdsaP256Sha256`]: Algorithm::EcdsaP256Sha256
/// [`EcdsaP384Sha384`]: Algorithm::EcdsaP384Sha384
/// [`Ed25519`]: Algorithm::Ed25519
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// 5, RSASHA1 (RFC 3110): verification only, 1024 bits and up.
    RsaSha1,
    /// 7, RSASHA1-NSEC3-SHA1 (RFC 5155): verification only.
    RsaSha1Nsec3Sha1,
    /// 8, RSASHA256 (RFC 5702): keys of 2048 to 4096 bits.
    RsaSha256,
    /// 10, RSASHA512 (RFC 5702): keys of 2048 to 4096 bits.
    RsaSha512,
    /// 13, ECDSAP256SHA256 (RFC 6605): the default for new keys.
    EcdsaP256Sha256,
    /// 14, ECDSAP384SHA384 (RFC 6605).
    EcdsaP384Sha384,
    /// 15, ED25519 (RFC 8080).
    Ed25519,
}

impl Algorithm {
    /// The algorithm number in DNSKEY, RRSIG and DS records.
    pub fn number(self) -> u8 {
        match self {
            Self::RsaSha1 => 5,
            Self::RsaSha1Nsec3Sha1 => 7,
            Self::RsaSha256 => 8,
            Self::RsaSha512 => 10,
            Self::EcdsaP256Sha256 => 13,
            Self::EcdsaP384Sha384 => 14,
            Self::Ed25519 => 15,
        }
    }

    /// The algorithm with this number, if known.
    pub fn from_number(n: u8) -> Option<Self> {
        Some(match n {
            5 => Self::RsaSha1,
            7 => Self::RsaSha1Nsec3Sha1,
            8 => Self::RsaSha256,
            10 => Self::RsaSha512,
            13 => Self::EcdsaP256Sha256,
            14 => Self::EcdsaP384Sha384,
            15 => Self::Ed25519,
            _ => return None,
        })
    }

    /// The mnemonic (RFC 4034 Appendix A.1 and later registrations), as BIND writes it.
    pub fn mnemonic(self) -> &'static str {
        match self {
            Self::RsaSha1 => "RSASHA1",
            Self::RsaSha1Nsec3Sha1 => "NSEC3RSASHA1",
            Self::RsaSha256 => "RSASHA256",
            Self::RsaSha512 => "RSASHA512",
            Self::EcdsaP256Sha256 => "ECDSAP256SHA256",
            Self::EcdsaP384Sha384 => "ECDSAP384SHA384",
            Self::Ed25519 => "ED25519",
        }
    }

    /// The algorithm with this mnemonic (any case), if known.
    pub fn from_mnemonic(s: &str) -> Option<Self> {
        [
            Self::RsaSha1,
            Self::RsaSha1Nsec3Sha1,
            Self::RsaSha256,
            Self::RsaSha512,
            Self::EcdsaP256Sha256,
            Self::EcdsaP384Sha384,
            Self::Ed25519,
        ]
        .into_iter()
        .find(|a| a.mnemonic().eq_ignore_ascii_case(s))
    }

    /// True if this crate can sign with a key of this algorithm.
    pub fn can_sign(self) -> bool {
        matches!(
            self,
            Self::RsaSha256
                | Self::RsaSha512
                | Self::EcdsaP256Sha256
                | Self::EcdsaP384Sha384
                | Self::Ed25519
        )
    }

    /// True if this crate can generate keys of this algorithm (all it signs with: RSA
    /// through aws-lc-rs's RSA key generation).
    pub fn can_generate(self) -> bool {
        self.can_sign()
    }

    /// True for the RSA algorithms, whose keys have a size to choose.
    pub fn is_rsa(self) -> bool {
        matches!(
            self,
            Self::RsaSha1 | Self::RsaSha1Nsec3Sha1 | Self::RsaSha256 | Self::RsaSha512
        )
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

/// A DS digest type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DigestType {
    /// 1, SHA-1 (RFC 4034 §5.1.4): for reading old DS records; do not publish new ones.
    Sha1,
    /// 2, SHA-256 (RFC 4509): what we publish in CDS and print for the parent.
    Sha256,
    /// 4, SHA-384 (RFC 6605).
    Sha384,
}

impl DigestType {
    /// The digest type number in DS and CDS records.
    pub fn number(self) -> u8 {
        match self {
            Self::Sha1 => 1,
            Self::Sha256 => 2,
            Self::Sha384 => 4,
        }
    }

    /// The digest type with this number, if known.
    pub fn from_number(n: u8) -> Option<Self> {
        Some(match n {
            1 => Self::Sha1,
            2 => Self::Sha256,
            4 => Self::Sha384,
            _ => return None,
        })
    }

    pub(crate) fn algorithm(self) -> &'static aws_lc_rs::digest::Algorithm {
        match self {
            Self::Sha1 => &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
            Self::Sha256 => &aws_lc_rs::digest::SHA256,
            Self::Sha384 => &aws_lc_rs::digest::SHA384,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_mnemonics_round_trip() {
        for n in 0..=255u8 {
            if let Some(a) = Algorithm::from_number(n) {
                assert_eq!(a.number(), n);
                assert_eq!(Algorithm::from_mnemonic(a.mnemonic()), Some(a));
                assert_eq!(
                    Algorithm::from_mnemonic(&a.mnemonic().to_ascii_lowercase()),
                    Some(a)
                );
            }
            if let Some(d) = DigestType::from_number(n) {
                assert_eq!(d.number(), n);
            }
        }
        assert_eq!(Algorithm::from_number(13), Some(Algorithm::EcdsaP256Sha256));
        assert_eq!(Algorithm::from_number(16), None, "Ed448: not supported");
        assert_eq!(Algorithm::from_mnemonic("DSA"), None);
        assert!(Algorithm::RsaSha256.can_generate() && Algorithm::RsaSha512.can_generate());
        assert!(Algorithm::RsaSha512.is_rsa() && !Algorithm::Ed25519.is_rsa());
        assert!(!Algorithm::RsaSha1.can_sign() && !Algorithm::RsaSha1.can_generate());
        assert!(Algorithm::Ed25519.can_generate());
    }
}
