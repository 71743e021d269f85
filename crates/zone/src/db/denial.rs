//! What a signed zone needs to prove that something does not exist (RFC 4035 §3.1.3, RFC
//! 5155 §7.2), computed once when the zone is built so that answering never sorts or hashes
//! a name that exists:
//!
//! - [`Denial::nsec`]: the owners of NSEC records in canonical order (RFC 4034 §6.1), so the
//!   NSEC that covers a name is one binary search away;
//! - [`Nsec3`]: the zone's NSEC3 chain (the one its apex NSEC3PARAM names) sorted by hash,
//!   and for every node the index of the NSEC3 that matches it. At query time only names
//!   that do not exist are hashed (the next closer name and the wildcard), on the stack.
//!
//! A zone is signed when its apex SOA has a signature; an unsigned zone carries no index.
//!
//! This module holds the index and its searches by hash; it knows nothing of the zone's
//! storage. The index is computed from a built zone by `build` (`build::denial`), and the
//! NSEC search by name, which reads the zone's names, is the zone's (`store`,
//! `Denial::nsec_covering`).

use super::{NodeId, NONE};
use shardns_wire::NameRef;

/// The length of an NSEC3 hash: SHA-1, the only algorithm defined (RFC 5155 §11).
pub const NSEC3_HASH_LEN: usize = shardns_dnssec::nsec3::HASH_LEN;

/// Most NSEC3 iterations we hash at query time. RFC 9276 §3.2 says 0; validators treat
/// more than 100 (Unbound: 150) as insecure. A zone with more is served without NSEC3
/// proofs rather than letting one query cost thousands of hashes.
pub const MAX_NSEC3_ITERATIONS: u16 = 500;

/// A signed zone's denial data.
#[derive(Debug, Default)]
pub(crate) struct Denial {
    /// Nodes that hold an NSEC RRset, in canonical order of their names.
    pub(crate) nsec: Vec<NodeId>,
    /// The NSEC3 chain, if the apex has a usable NSEC3PARAM.
    pub(crate) nsec3: Option<Nsec3>,
}

/// One NSEC3 chain: its parameters, its records sorted by hash, and the match of every node.
#[derive(Debug)]
pub(crate) struct Nsec3 {
    pub(crate) iterations: u16,
    pub(crate) salt: Box<[u8]>,
    /// (owner hash, node holding the NSEC3), sorted by hash.
    pub(crate) chain: Vec<([u8; NSEC3_HASH_LEN], NodeId)>,
    /// The first eight octets of each hash in `chain` as a big-endian integer: the binary
    /// search of a query's hash runs over these (8 KiB for 1,000 names, compared in one
    /// instruction each) instead of calling memcmp on 20-octet arrays, 3.4 % of the server's
    /// CPU on NSEC3 name errors.
    prefixes: Vec<u64>,
    /// Where each bucket of prefixes starts: bucket `b` holds the hashes whose top
    /// `bucket_bits` bits are `b`, `buckets[b]..buckets[b + 1]` in `chain` (one more entry
    /// than buckets). SHA-1 spreads the hashes evenly and there are about as many buckets as
    /// hashes, so the search runs over one or two prefixes instead of ten steps of a binary
    /// search over all of them (1.5 % of the server's CPU on NSEC3 name errors).
    buckets: Vec<u32>,
    bucket_bits: u32,
    /// Per node: the index in `chain` of the NSEC3 whose hash is the node's, or `NONE`
    /// (glue, occluded names, insecure delegations left out by opt-out).
    pub(crate) matching: Vec<u32>,
    /// Per node: the index in `chain` of the NSEC3 covering `*.<node>`, the wildcard a name
    /// error below the node must prove absent (RFC 5155 §7.2.2), or `NONE`: hashed once
    /// here, so that a name error hashes only its next closer name.
    pub(crate) wildcard_cover: Vec<u32>,
}

/// The NSEC3 hash of `name` (RFC 5155 §5), on the stack: the signer's function, so the
/// server hashes as it signs.
pub fn nsec3_hash(name: NameRef<'_>, salt: &[u8], iterations: u16) -> [u8; NSEC3_HASH_LEN] {
    let mut out = [0u8; NSEC3_HASH_LEN];
    shardns_dnssec::nsec3_hash(name, salt, iterations, &mut out);
    out
}

/// The parameters of an NSEC3 or NSEC3PARAM rdata: (hash algorithm, iterations, salt).
pub(super) fn nsec3_params(rdata: &[u8]) -> Option<(u8, u16, &[u8])> {
    let alg = *rdata.first()?;
    let iterations = u16::from_be_bytes([*rdata.get(2)?, *rdata.get(3)?]);
    let salt_len = *rdata.get(4)? as usize;
    let salt = rdata.get(5..5 + salt_len)?;
    Some((alg, iterations, salt))
}

impl Nsec3 {
    /// A chain sorted by hash, with its prefixes and buckets; no matches yet.
    pub(super) fn new(
        iterations: u16,
        salt: Box<[u8]>,
        chain: Vec<([u8; NSEC3_HASH_LEN], NodeId)>,
    ) -> Self {
        let prefixes: Vec<u64> = chain.iter().map(|e| prefix(&e.0)).collect();
        // A power of two at least the chain's length (at most 2^31 buckets).
        let bucket_bits = chain
            .len()
            .max(1)
            .next_power_of_two()
            .trailing_zeros()
            .min(31);
        let mut buckets = Vec::with_capacity((1 << bucket_bits) + 1);
        let mut i = 0;
        for b in 0..1u64 << bucket_bits {
            while i < prefixes.len() && bucket(prefixes[i], bucket_bits) < b {
                i += 1;
            }
            buckets.push(i as u32);
        }
        buckets.push(prefixes.len() as u32);
        Nsec3 {
            iterations,
            salt,
            chain,
            prefixes,
            buckets,
            bucket_bits,
            matching: Vec::new(),
            wildcard_cover: Vec::new(),
        }
    }

    /// The node holding the NSEC3 that matches the existing node `id`.
    pub(crate) fn matching(&self, id: NodeId) -> Option<NodeId> {
        match self.matching.get(id as usize) {
            Some(&i) if i != NONE => Some(self.chain[i as usize].1),
            _ => None,
        }
    }

    /// The node holding the NSEC3 that covers (or matches) the hash of `name`: the last
    /// hash at or before it, wrapping to the last of the chain (RFC 5155 §7.2.1).
    pub(crate) fn covering(&self, name: NameRef<'_>) -> Option<NodeId> {
        let h = nsec3_hash(name, &self.salt, self.iterations);
        self.chain
            .get(self.covering_index(&h) as usize)
            .map(|e| e.1)
    }

    /// The index of the hash at or before `h` in the sorted chain, wrapping to its last (the
    /// NSEC3 that covers `h`); `NONE` for an empty chain.
    pub(super) fn covering_index(&self, h: &[u8; NSEC3_HASH_LEN]) -> u32 {
        let p = prefix(h);
        // Every hash in an earlier bucket sorts before `h`, every one in a later bucket
        // after it; in its own bucket, every hash whose prefix is below `p` sorts before
        // `h`, every one above it after; those with the same prefix (almost never more
        // than one) are compared whole.
        let b = bucket(p, self.bucket_bits) as usize;
        let (lo, hi) = (self.buckets[b] as usize, self.buckets[b + 1] as usize);
        let mut i = lo + self.prefixes[lo..hi].partition_point(|&k| k < p);
        while i < self.chain.len() && self.prefixes[i] == p && self.chain[i].0 <= *h {
            i += 1;
        }
        match i {
            0 => self.chain.len().checked_sub(1).map_or(NONE, |i| i as u32),
            i => (i - 1) as u32,
        }
    }

    /// The node holding the NSEC3 that covers `*.<the existing node id>`, found when the
    /// zone was built.
    pub(crate) fn wildcard_covering(&self, id: NodeId) -> Option<NodeId> {
        match self.wildcard_cover.get(id as usize) {
            Some(&i) if i != NONE => Some(self.chain[i as usize].1),
            _ => None,
        }
    }
}

/// The bucket of a prefix: its top `bits` bits.
#[inline]
fn bucket(prefix: u64, bits: u32) -> u64 {
    prefix.checked_shr(64 - bits).unwrap_or(0)
}

/// The first eight octets of an NSEC3 hash as an integer that sorts as the octets do.
fn prefix(h: &[u8; NSEC3_HASH_LEN]) -> u64 {
    let mut p = [0u8; 8];
    p.copy_from_slice(&h[..8]);
    u64::from_be_bytes(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::{text, Name};

    fn hash_text(name: &str, salt: &[u8], iterations: u16) -> String {
        let n = Name::from_text(name, None).unwrap();
        let mut s = String::new();
        text::write_base32hex(&nsec3_hash(n.as_ref(), salt, iterations), &mut s).unwrap();
        s.to_ascii_lowercase()
    }

    /// The search over prefixes finds what a search over whole hashes finds, when hashes
    /// share their first eight octets too (the ones compared whole), before, between and
    /// after them, and wraps below the first.
    #[test]
    fn covering_index_agrees_with_whole_hash_search() {
        let mut hashes: Vec<[u8; NSEC3_HASH_LEN]> = Vec::new();
        for (first, last) in [
            (0x10u8, 0u8),
            (0x20, 1),
            (0x20, 5),
            (0x20, 9),
            (0x30, 0),
            (0xf0, 3),
        ] {
            let mut h = [0u8; NSEC3_HASH_LEN];
            h[0] = first;
            h[19] = last;
            hashes.push(h);
        }
        hashes.sort_unstable();
        let chain: Vec<_> = hashes
            .iter()
            .enumerate()
            .map(|(i, h)| (*h, i as NodeId))
            .collect();
        let nsec3 = Nsec3::new(0, Box::new([]), chain);
        let whole = |h: &[u8; NSEC3_HASH_LEN]| match hashes.partition_point(|e| e <= h) {
            0 => (hashes.len() - 1) as u32,
            i => (i - 1) as u32,
        };
        let mut probes = 0;
        for first in [0u8, 0x10, 0x11, 0x20, 0x21, 0x30, 0x80, 0xf0, 0xff] {
            for last in 0..=10u8 {
                for middle in [0u8, 0xff] {
                    let mut h = [middle; NSEC3_HASH_LEN];
                    h[0] = first;
                    h[19] = last;
                    if middle == 0 {
                        h[1..8].fill(0);
                    }
                    assert_eq!(nsec3.covering_index(&h), whole(&h), "{h:02x?}");
                    probes += 1;
                }
            }
        }
        assert_eq!(probes, 198);
        // An exact hash is its own cover; an empty chain covers nothing.
        assert_eq!(nsec3.covering_index(&hashes[2]), 2);
        let empty = Nsec3::new(0, Box::new([]), Vec::new());
        assert_eq!(empty.covering_index(&hashes[0]), NONE);
    }

    /// The bucketed search agrees with a search over whole hashes for chains of 1 to 1,000
    /// pseudo-random hashes (1 bucket to 1,024), some crowded into one bucket, probed at
    /// every hash, next to each, and at random points.
    #[test]
    fn bucketed_search_agrees_on_random_chains() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut random_hash = |crowd: bool| {
            let mut h = [0u8; NSEC3_HASH_LEN];
            for c in h.chunks_mut(8) {
                c.copy_from_slice(&next().to_be_bytes()[..c.len()]);
            }
            if crowd {
                h[..2].copy_from_slice(&[0x42, 0x42]);
            }
            h
        };
        let mut probes = 0;
        for n in [1usize, 2, 3, 5, 64, 1000] {
            let mut hashes: Vec<[u8; NSEC3_HASH_LEN]> =
                (0..n).map(|i| random_hash(i % 7 == 0)).collect();
            hashes.sort_unstable();
            hashes.dedup();
            let chain = hashes.iter().map(|h| (*h, 0)).collect();
            let nsec3 = Nsec3::new(0, Box::new([]), chain);
            let whole = |h: &[u8; NSEC3_HASH_LEN]| match hashes.partition_point(|e| e <= h) {
                0 => (hashes.len() - 1) as u32,
                i => (i - 1) as u32,
            };
            let mut points: Vec<[u8; NSEC3_HASH_LEN]> =
                (0..2 * n).map(|_| random_hash(false)).collect();
            for h in &hashes {
                let (mut below, mut above) = (*h, *h);
                below[19] = below[19].wrapping_sub(1);
                above[19] = above[19].wrapping_add(1);
                points.extend([*h, below, above]);
            }
            points.extend([[0; NSEC3_HASH_LEN], [0xff; NSEC3_HASH_LEN]]);
            for p in &points {
                assert_eq!(nsec3.covering_index(p), whole(p), "chain of {n}, {p:02x?}");
                probes += 1;
            }
        }
        assert!(probes > 5000, "{probes}");
    }

    #[test]
    fn nsec3_hashes_of_rfc5155_appendix_a() {
        // RFC 5155 Appendix A: salt aabbccdd, 12 additional iterations.
        let salt = [0xaa, 0xbb, 0xcc, 0xdd];
        for (name, hash) in [
            ("example.", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
            ("a.example.", "35mthgpgcu1qg68fab165klnsnk3dpvl"),
            ("ai.example.", "gjeqe526plbf1g8mklp59enfd789njgi"),
            ("ns1.example.", "2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
            ("*.w.example.", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"),
            ("xx.example.", "t644ebqk9bibcna874givr6joj62mlhv"),
            ("EXAMPLE.", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
        ] {
            assert_eq!(hash_text(name, &salt, 12), hash, "{name}");
        }
    }
}
