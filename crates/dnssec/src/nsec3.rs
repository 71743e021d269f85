//! NSEC3 owner hashes (RFC 5155 §5) and their base32hex labels (RFC 5155 §3.3).
//!
//! Only hash algorithm 1, SHA-1, exists. RFC 9276 asks for 0 extra iterations and no salt,
//! which [`Nsec3Params::default`] gives; other values are accepted for zones that still use
//! them. Hashing writes into caller buffers and does not allocate.

use shardns_wire::name::MAX_NAME_LEN;
use shardns_wire::NameRef;

/// Length of a SHA-1 NSEC3 hash.
pub const HASH_LEN: usize = 20;
/// Length of its base32hex label (20 octets, 160 bits, 32 characters, no padding).
pub const LABEL_LEN: usize = 32;

/// The NSEC3 hash algorithm number for SHA-1 (RFC 5155 §11).
pub const SHA1: u8 = 1;

/// RFC 9276 §3.2: validators may treat more iterations than this as insecure; a signer
/// should use 0.
pub const MAX_ITERATIONS: u16 = 100;

/// The NSEC3 parameters of a zone (the NSEC3PARAM record, RFC 5155 §4, without flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nsec3Params {
    /// Extra iterations: 0 per RFC 9276 §3.1.
    pub iterations: u16,
    /// Salt, at most 255 octets: none per RFC 9276 §3.1.
    pub salt: Vec<u8>,
}

impl Nsec3Params {
    /// The NSEC3PARAM rdata: algorithm 1, flags 0, iterations, salt (RFC 5155 §4.2).
    pub fn nsec3param_rdata(&self) -> Vec<u8> {
        let mut out = vec![SHA1, 0];
        out.extend_from_slice(&self.iterations.to_be_bytes());
        out.push(self.salt.len() as u8);
        out.extend_from_slice(&self.salt);
        out
    }

    /// The hash of `name` with these parameters (see [`nsec3_hash`]).
    pub fn hash(&self, name: NameRef<'_>, out: &mut [u8; HASH_LEN]) {
        nsec3_hash(name, &self.salt, self.iterations, out)
    }
}

/// RFC 5155 §5: `IH(salt, x, 0) = SHA-1(x | salt)`, `IH(salt, x, k) = SHA-1(IH(k-1) | salt)`,
/// where `x` is the name in canonical wire form (lower case, uncompressed, a wildcard as it
/// is). The name is lower-cased here, so any case may be passed. No allocation.
///
/// Each step's input is laid out on the stack and hashed by aws-lc-rs's one-shot
/// `digest::digest` (aws-lc's `SHA1()`, its state on the stack), not a `digest::Context`:
/// a context is an `EVP_MD_CTX` whose state aws-lc allocates with `malloc` and frees
/// again, and its setup cost more than the one compression a short name takes (the
/// context's calls, malloc and free were ~1.5 % of the server's CPU on NSEC3 name errors).
pub fn nsec3_hash(name: NameRef<'_>, salt: &[u8], iterations: u16, out: &mut [u8; HASH_LEN]) {
    const SALT_MAX: usize = u8::MAX as usize;
    let alg = &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY;
    if salt.len() > SALT_MAX {
        // Not from a zone (the rdata's salt length is one octet): hashed through a context.
        return nsec3_hash_long_salt(name, salt, iterations, out);
    }
    let mut input = [0u8; MAX_NAME_LEN + SALT_MAX];
    let (head, _) = input
        .split_first_chunk_mut::<MAX_NAME_LEN>()
        .expect("room for a name");
    let n = name.lowercase_into(head);
    input[n..n + salt.len()].copy_from_slice(salt);
    out.copy_from_slice(aws_lc_rs::digest::digest(alg, &input[..n + salt.len()]).as_ref());
    for _ in 0..iterations {
        input[..HASH_LEN].copy_from_slice(out);
        input[HASH_LEN..HASH_LEN + salt.len()].copy_from_slice(salt);
        let step = aws_lc_rs::digest::digest(alg, &input[..HASH_LEN + salt.len()]);
        out.copy_from_slice(step.as_ref());
    }
}

#[cold]
fn nsec3_hash_long_salt(name: NameRef<'_>, salt: &[u8], iterations: u16, out: &mut [u8; HASH_LEN]) {
    let mut lower = [0u8; MAX_NAME_LEN];
    let n = name.lowercase_into(&mut lower);
    let alg = &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY;
    let mut ctx = aws_lc_rs::digest::Context::new(alg);
    ctx.update(&lower[..n]);
    ctx.update(salt);
    out.copy_from_slice(ctx.finish().as_ref());
    for _ in 0..iterations {
        let mut ctx = aws_lc_rs::digest::Context::new(alg);
        ctx.update(out);
        ctx.update(salt);
        out.copy_from_slice(ctx.finish().as_ref());
    }
}

const BASE32HEX_LOWER: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

/// The hash as the lower-case base32hex label of an NSEC3 owner name (RFC 5155 §3.3, RFC
/// 4648 §7 without padding: 20 octets make exactly 32 characters).
pub fn hash_label(hash: &[u8; HASH_LEN], out: &mut [u8; LABEL_LEN]) {
    for (group, chars) in hash.chunks_exact(5).zip(out.chunks_exact_mut(8)) {
        let v = group.iter().fold(0u64, |v, &b| v << 8 | u64::from(b));
        for (i, c) in chars.iter_mut().enumerate() {
            *c = BASE32HEX_LOWER[(v >> (35 - 5 * i) & 31) as usize];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::Name;

    fn label(name: &str, salt: &[u8], iterations: u16) -> String {
        let name: Name = name.parse().unwrap();
        let mut h = [0u8; HASH_LEN];
        nsec3_hash(name.as_ref(), salt, iterations, &mut h);
        let mut l = [0u8; LABEL_LEN];
        hash_label(&h, &mut l);
        String::from_utf8(l.to_vec()).unwrap()
    }

    /// RFC 5155 Appendix A: every hashed owner name of the example zone (SHA-1, 12 extra
    /// iterations, salt aabbccdd), and the two of Appendix B.1.
    #[test]
    fn rfc5155_appendix_a() {
        let salt = [0xaa, 0xbb, 0xcc, 0xdd];
        let vectors = [
            ("example", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
            ("a.example", "35mthgpgcu1qg68fab165klnsnk3dpvl"),
            ("ai.example", "gjeqe526plbf1g8mklp59enfd789njgi"),
            ("ns1.example", "2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
            ("ns2.example", "q04jkcevqvmu85r014c7dkba38o0ji5r"),
            ("w.example", "k8udemvp1j2f7eg6jebps17vp3n8i58h"),
            ("*.w.example", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"),
            ("x.w.example", "b4um86eghhds6nea196smvmlo4ors995"),
            ("y.w.example", "ji6neoaepv8b5o6k4ev33abha8ht9fgc"),
            ("x.y.w.example", "2vptu5timamqttgl4luu9kg21e0aor3s"),
            ("xx.example", "t644ebqk9bibcna874givr6joj62mlhv"),
            (
                "2t7b4g4vsa5smi47k61mv5bv1a22bojr.example",
                "kohar7mbb8dc2ce8a9qvl8hon4k53uhi",
            ),
            ("c.x.w.example", "0va5bpr2ou0vk0lbqeeljri88laipsfh"),
            ("*.x.w.example", "92pqneegtaue7pjatc3l3qnk738c6v5m"),
        ];
        for (name, want) in vectors {
            assert_eq!(label(name, &salt, 12), want, "{name}");
            // The hash is of the lower-cased name.
            assert_eq!(label(&name.to_ascii_uppercase(), &salt, 12), want, "{name}");
        }
        // Parameters matter.
        assert_ne!(label("example", &salt, 11), vectors[0].1);
        assert_ne!(label("example", &salt[..3], 12), vectors[0].1);
    }

    #[test]
    fn rfc9276_parameters() {
        // 0 extra iterations, no salt: one SHA-1 of the name. BIND's nsec3hash test gives
        // H(com) = ck0pojmg874ljref7efn8430qvit8bsm for these parameters.
        assert_eq!(label("com", &[], 0), "ck0pojmg874ljref7efn8430qvit8bsm");
        let p = Nsec3Params::default();
        assert_eq!(p.nsec3param_rdata(), [1, 0, 0, 0, 0]);
        let p = Nsec3Params {
            iterations: 12,
            salt: vec![0xaa, 0xbb, 0xcc, 0xdd],
        };
        assert_eq!(
            p.nsec3param_rdata(),
            [1, 0, 0, 12, 4, 0xaa, 0xbb, 0xcc, 0xdd]
        );
    }

    /// The one-shot path (name and salt laid out on the stack) hashes what a digest
    /// context fed the same parts hashes: salts of 0 to 255 octets (the rdata's limit),
    /// names up to the longest, extra iterations; a longer salt takes the context path.
    #[test]
    fn one_shot_agrees_with_context() {
        let long = format!(
            "{}.example",
            [
                "a".repeat(63),
                "b".repeat(63),
                "c".repeat(63),
                "d".repeat(53)
            ]
            .join(".")
        );
        let names: Vec<Name> = ["example", "*.W.Example", long.as_str()]
            .iter()
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(names[2].as_ref().len(), MAX_NAME_LEN);
        let salt: Vec<u8> = (0..300u16).map(|i| (i * 7) as u8).collect();
        let mut checked = 0;
        for name in &names {
            for salt_len in [0, 1, 4, 200, 255, 256, 300] {
                for iterations in [0, 1, 12] {
                    let s = &salt[..salt_len];
                    let mut fast = [0u8; HASH_LEN];
                    nsec3_hash(name.as_ref(), s, iterations, &mut fast);
                    let mut slow = [0u8; HASH_LEN];
                    nsec3_hash_long_salt(name.as_ref(), s, iterations, &mut slow);
                    assert_eq!(fast, slow, "{name} salt {salt_len} iterations {iterations}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 63);
    }

    #[test]
    fn label_matches_wire_base32hex() {
        // Our allocation-free encoder agrees with wire's presentation-format one.
        let mut h = [0u8; HASH_LEN];
        for (i, b) in h.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0xa5;
        }
        let mut l = [0u8; LABEL_LEN];
        hash_label(&h, &mut l);
        let mut s = String::new();
        shardns_wire::text::write_base32hex(&h, &mut s).unwrap();
        assert_eq!(s.to_ascii_lowercase().as_bytes(), l);
        hash_label(&[0xff; HASH_LEN], &mut l);
        assert_eq!(&l, b"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
    }
}
