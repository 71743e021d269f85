//! Case-insensitive comparison and hashing of wire-format names (RFC 4343), by ASCII byte
//! arithmetic, eight octets at a time where it can.

/// ASCII lower-case of one octet.
#[inline(always)]
pub const fn lower(b: u8) -> u8 {
    if b.wrapping_sub(b'A') < 26 {
        b | 0x20
    } else {
        b
    }
}

/// Lower-cases the eight ASCII letters packed in a word at once (SWAR).
#[inline(always)]
pub(super) fn lower8(x: u64) -> u64 {
    const H: u64 = 0x8080_8080_8080_8080;
    let low7 = x & !H;
    // High bit set where the byte is >= 'A' (0x41) and where it is > 'Z' (0x5a).
    let ge_a = low7.wrapping_add(0x3f3f_3f3f_3f3f_3f3f);
    let gt_z = low7.wrapping_add(0x2525_2525_2525_2525);
    let upper = ge_a & !gt_z & !x & H;
    x | (upper >> 2)
}

/// Case-insensitive hash of a wire-format byte string (FxHash-style multiply-rotate).
#[inline]
pub fn hash_ci(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ lower8(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut tail = [0u8; 8];
        tail[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ lower8(u64::from_le_bytes(tail))).wrapping_mul(K);
    }
    // Final avalanche so the low bits (used to index tables) depend on every input bit.
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

/// Case-insensitive equality of two byte strings.
#[inline]
pub fn eq_ci(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        let x = u64::from_le_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]);
        let y = u64::from_le_bytes([y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]]);
        if x != y && lower8(x) != lower8(y) {
            return false;
        }
    }
    ca.remainder()
        .iter()
        .zip(cb.remainder())
        .all(|(&x, &y)| lower(x) == lower(y))
}
