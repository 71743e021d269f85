//! seed -- the secrets that keep clients from predicting or aiming at what a worker does:
//! random bytes for the resolver's query IDs and ports, seeds for the rate limiter's and the
//! connection table's hashes, and the keyed hash itself.

use std::io;

/// 32 secret random bytes for a worker's resolver engine (query IDs, source ports).
pub fn random() -> io::Result<[u8; 32]> {
    read_urandom()
}

/// Eight secret random bytes, as a number (hash seeds).
pub fn random_u64() -> io::Result<u64> {
    Ok(to_u64(&random()?))
}

fn read_urandom() -> io::Result<[u8; 32]> {
    use std::io::Read;
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut seed)?;
    Ok(seed)
}

/// The first eight bytes of a seed, as a number.
fn to_u64(seed: &[u8; 32]) -> u64 {
    u64::from_le_bytes(seed[..8].try_into().expect("eight bytes"))
}

/// A hash of a few words under a secret `seed`, so that clients cannot aim at a slot of a
/// table indexed by it (not cryptographic: a multiply-rotate per word, then the murmur3
/// finaliser, so every output bit depends on every input bit).
#[inline]
pub fn keyed_hash(seed: u64, words: &[u64]) -> u64 {
    let mut h = seed;
    for &v in words {
        h = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}
