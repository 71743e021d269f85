//! The denial index of a signed zone ([`super::super::denial`]), computed from the zone
//! once its RRsets are merged and its flags set: the NSEC owners in canonical order, and
//! the NSEC3 chain with every node's match. Hashes every name of an NSEC3 zone, on two
//! threads when it is big.

use crate::db::denial::{
    nsec3_hash, nsec3_params, Denial, Nsec3, MAX_NSEC3_ITERATIONS, NSEC3_HASH_LEN,
};
use crate::db::store::Zone;
use crate::db::{flags, NodeId, NONE};
use shardns_wire::{text, NameBuf, RType};

impl Zone {
    /// Builds the denial index of a signed zone (after the node flags are set); `None` for
    /// an unsigned zone. Hashes every name of an NSEC3 zone, on two threads when it is big.
    pub(in crate::db) fn denial_index(&self) -> Option<Denial> {
        let apex = self.apex_node();
        let soa = apex.rrset(RType::SOA)?;
        apex.signatures(&soa)?;
        let mut nsec: Vec<NodeId> = (0..self.node_count() as NodeId)
            .filter(|&id| self.node(id).rrset(RType::NSEC).is_some())
            .collect();
        nsec.sort_by(|&a, &b| self.node(a).name().canonical_cmp(&self.node(b).name()));
        let nsec3 = self.nsec3_index();
        Some(Denial { nsec, nsec3 })
    }

    fn nsec3_index(&self) -> Option<Nsec3> {
        let param = self.apex_node().rrset(RType::NSEC3PARAM)?;
        // RFC 5155 §4: the first NSEC3PARAM with a known algorithm (1, SHA-1) and flags 0.
        let (iterations, salt) = param.rdatas().find_map(|d| match nsec3_params(d) {
            Some((1, it, salt)) if d[1] == 0 => Some((it, salt)),
            _ => None,
        })?;
        if iterations > MAX_NSEC3_ITERATIONS {
            return None;
        }
        let mut chain = Vec::new();
        let mut raw = Vec::with_capacity(NSEC3_HASH_LEN);
        for id in 0..self.node_count() as NodeId {
            let node = self.node(id);
            let Some(set) = node.rrset(RType::NSEC3) else {
                continue;
            };
            // The owner's parent must be the apex, and the record of this chain.
            let owner = node.name();
            if !owner.parent().is_some_and(|p| p.eq_ci(&self.apex())) {
                continue;
            }
            let ours = set.rdatas().any(|d| {
                nsec3_params(d).is_some_and(|(a, it, s)| a == 1 && it == iterations && s == salt)
            });
            raw.clear();
            if !ours || text::base32hex_decode(owner.first_label(), &mut raw).is_err() {
                continue;
            }
            if let Ok(hash) = <[u8; NSEC3_HASH_LEN]>::try_from(raw.as_slice()) {
                chain.push((hash, id));
            }
        }
        chain.sort_unstable_by_key(|e| e.0);
        chain.dedup_by(|a, b| a.0 == b.0);
        let mut nsec3 = Nsec3::new(iterations, salt.into(), chain);
        (nsec3.matching, nsec3.wildcard_cover) = self.nsec3_matches(&nsec3);
        Some(nsec3)
    }

    /// For every node, the index in `chain` of the NSEC3 matching its name, and of the one
    /// covering `*.<name>`.
    fn nsec3_matches(&self, chain: &Nsec3) -> (Vec<u32>, Vec<u32>) {
        let (salt, iterations) = (&chain.salt[..], chain.iterations);
        let n = self.node_count();
        let work = |ids: std::ops::Range<usize>| -> Vec<(u32, u32)> {
            let mut star = NameBuf::new();
            ids.map(|id| {
                let node = self.node(id as NodeId);
                if node.flags() & (flags::NSEC3_ONLY | flags::BELOW_CUT | flags::BELOW_DNAME) != 0 {
                    return (NONE, NONE);
                }
                let h = nsec3_hash(node.name(), salt, iterations);
                let matching = match chain.covering_index(&h) {
                    i if i != NONE && chain.chain[i as usize].0 == h => i,
                    _ => NONE,
                };
                let cover = match star.set_concat(&[1, b'*'], node.name()) {
                    Ok(()) => chain.covering_index(&nsec3_hash(star.as_ref(), salt, iterations)),
                    Err(_) => NONE,
                };
                (matching, cover)
            })
            .collect()
        };
        let pairs = if n < 20_000 {
            work(0..n)
        } else {
            std::thread::scope(|s| {
                let second = s.spawn(|| work(n / 2..n));
                let mut first = work(0..n / 2);
                first.extend(second.join().expect("NSEC3 hashing thread"));
                first
            })
        };
        pairs.into_iter().unzip()
    }
}
