//! Key tags (RFC 4034 Appendix B) and DS digests (RFC 4034 §5.1.4, RFC 4509, RFC 6605).

use crate::alg::DigestType;
use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::NameRef;

/// The key tag of a DNSKEY (or CDNSKEY) rdata, RFC 4034 Appendix B: the one's-complement-ish
/// sum of the rdata as 16-bit words. Algorithm 1 (RSA/MD5) uses B.1's rule instead.
pub fn key_tag(dnskey_rdata: &[u8]) -> u16 {
    if dnskey_rdata.get(3) == Some(&1) {
        // Appendix B.1: the most significant 16 of the least significant 24 bits of the
        // modulus, which ends the rdata.
        let n = dnskey_rdata.len();
        return if n >= 7 {
            u16::from_be_bytes([dnskey_rdata[n - 3], dnskey_rdata[n - 2]])
        } else {
            0
        };
    }
    let mut ac: u32 = 0;
    for (i, &b) in dnskey_rdata.iter().enumerate() {
        ac += if i & 1 == 0 {
            u32::from(b) << 8
        } else {
            u32::from(b)
        };
    }
    ac += (ac >> 16) & 0xffff;
    (ac & 0xffff) as u16
}

/// The digest of a DNSKEY for a DS record: `digest(owner in canonical form | DNSKEY rdata)`.
/// Writes it into `out` and returns its length (20, 32 or 48 octets).
pub fn ds_digest(
    owner: NameRef<'_>,
    dnskey_rdata: &[u8],
    digest: DigestType,
    out: &mut [u8; 48],
) -> usize {
    let mut lower = [0u8; MAX_NAME_LEN];
    let n = owner.lowercase_into(&mut lower);
    let mut ctx = aws_lc_rs::digest::Context::new(digest.algorithm());
    ctx.update(&lower[..n]);
    ctx.update(dnskey_rdata);
    let d = ctx.finish();
    let d = d.as_ref();
    out[..d.len()].copy_from_slice(d);
    d.len()
}

/// DS (or CDS) rdata for a DNSKEY rdata: key tag, algorithm, digest type, digest
/// (RFC 4034 §5.1). `None` if the DNSKEY rdata is shorter than its fixed fields.
pub fn ds_rdata(owner: NameRef<'_>, dnskey_rdata: &[u8], digest: DigestType) -> Option<Vec<u8>> {
    let alg = *dnskey_rdata.get(3)?;
    let mut d = [0u8; 48];
    let n = ds_digest(owner, dnskey_rdata, digest, &mut d);
    let mut out = Vec::with_capacity(4 + n);
    out.extend_from_slice(&key_tag(dnskey_rdata).to_be_bytes());
    out.push(alg);
    out.push(digest.number());
    out.extend_from_slice(&d[..n]);
    Some(out)
}

/// A SHA-256 (aws-lc-rs's) of many parts: a fingerprint of a signer's inputs, to tell whether
/// they changed.
pub struct Fingerprint(aws_lc_rs::digest::Context);

impl Default for Fingerprint {
    fn default() -> Self {
        Self(aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256))
    }
}

impl Fingerprint {
    /// Adds a part, preceded by its length (so parts cannot run into each other).
    pub fn part(&mut self, data: &[u8]) {
        self.0.update(&(data.len() as u64).to_be_bytes());
        self.0.update(data);
    }

    /// The digest in lower-case hex.
    pub fn hex(self) -> String {
        self.0
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::text::{base64_decode, hex_decode};
    use shardns_wire::Name;

    /// RFC 4034 §5.4: the DNSKEY of dskey.example.com.
    const DSKEY: &str = "AQOeiiR0GOMYkDshWoSKz9XzfwJr1AYtsmx3TGkJaNXVbfi/2pHm822aJ5iI9BMzNXxeYCmZ\
                         DRD99WYwYqUSdjMmmAphXdvxegXd/M5+X7OrzKBaMbCVdFLUUh6DhweJBjEVv5f2wwjM9Xzc\
                         nOf+EPbtG9DMBmADjFDc2w/rljwvFw==";

    pub(crate) fn dnskey(flags: u16, alg: u8, key_b64: &str) -> Vec<u8> {
        let mut rdata = flags.to_be_bytes().to_vec();
        rdata.extend_from_slice(&[3, alg]);
        base64_decode([key_b64.as_bytes()], &mut rdata).unwrap();
        rdata
    }

    fn hex(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        hex_decode([s.as_bytes()], &mut out).unwrap();
        out
    }

    #[test]
    fn rfc4034_key_tag_and_ds() {
        let key = dnskey(256, 5, DSKEY);
        assert_eq!(key_tag(&key), 60485);
        let owner: Name = "dskey.example.com.".parse().unwrap();
        // RFC 4034 §5.4: DS 60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118.
        let mut want = vec![0xec, 0x45, 5, 1];
        want.extend(hex("2BB183AF5F22588179A53B0A98631FAD1A292118"));
        assert_eq!(
            ds_rdata(owner.as_ref(), &key, DigestType::Sha1).unwrap(),
            want
        );
        // RFC 4509 §2.3: the same key's SHA-256 DS; the owner's case does not matter.
        let upper: Name = "DSKEY.Example.COM.".parse().unwrap();
        let mut want = vec![0xec, 0x45, 5, 2];
        want.extend(hex(
            "D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A",
        ));
        assert_eq!(
            ds_rdata(upper.as_ref(), &key, DigestType::Sha256).unwrap(),
            want
        );
        // A changed key changes tag and digest.
        let mut other = key.clone();
        other[10] ^= 1;
        assert_ne!(key_tag(&other), 60485);
        assert_ne!(
            ds_rdata(owner.as_ref(), &other, DigestType::Sha256).unwrap()[4..],
            want[4..]
        );
        assert_eq!(ds_rdata(owner.as_ref(), &[1, 0, 3], DigestType::Sha1), None);
    }

    #[test]
    fn rfc8080_ed25519_key_tag_and_ds() {
        // RFC 8080 §6.1: example.com. DNSKEY 257 3 15 l02W... has tag 3613 and
        // DS 3613 15 2 3aa5ab37efce57f737fc1627013fee07bdf241bd10f3b1964ab55c78e79a304b.
        let key = dnskey(257, 15, "l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4=");
        assert_eq!(key_tag(&key), 3613);
        let owner: Name = "example.com.".parse().unwrap();
        let ds = ds_rdata(owner.as_ref(), &key, DigestType::Sha256).unwrap();
        assert_eq!(
            ds[4..],
            hex("3aa5ab37efce57f737fc1627013fee07bdf241bd10f3b1964ab55c78e79a304b")[..]
        );
        assert_eq!(ds[..4], [0x0e, 0x1d, 15, 2]);
        let mut d = [0u8; 48];
        assert_eq!(
            ds_digest(owner.as_ref(), &key, DigestType::Sha384, &mut d),
            48
        );
    }

    #[test]
    fn key_tag_carries_and_rsamd5() {
        // Every word 0xffff: the carry is folded back in.
        assert_eq!(key_tag(&[0xff; 4]), 0xffff);
        assert_eq!(key_tag(&[0x01, 0x00, 0x03, 0x0d]), 0x0100 + 0x030d);
        // Algorithm 1: bytes n-3 and n-2 of the rdata.
        assert_eq!(key_tag(&[1, 0, 3, 1, 9, 0xab, 0xcd, 0xef]), 0xabcd);
    }
}
