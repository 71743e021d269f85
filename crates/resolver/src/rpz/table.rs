//! rpz::table -- the compact trigger tables: names back to back in one buffer indexed by
//! a hash table of (offset, action) pairs (one such table per shard, `shards`), and
//! address prefixes by length.

use std::collections::HashMap;
use std::net::IpAddr;

use hashbrown::HashTable;
use shardns_wire::name::{eq_ci, hash_ci, lower};
use shardns_wire::NameRef;

use super::Stored;

/// Names (lower-cased wire form, a length octet in front) and their actions: 8 octets per
/// entry in the index plus the name itself, instead of a boxed key per entry.
#[derive(Default, Clone)]
pub(super) struct NameTable {
    names: Vec<u8>,
    index: HashTable<(u32, u32)>,
    /// The label counts of the names, one bit each (a name has at most 127 labels): a
    /// name whose count has no bit is not looked up.
    label_counts: u128,
}

impl NameTable {
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub(super) fn memory(&self) -> usize {
        self.names.capacity() + self.index.capacity() * (size_of::<(u32, u32)>() + 1)
    }

    fn name_at(names: &[u8], off: u32) -> &[u8] {
        let off = off as usize;
        let len = usize::from(names[off]);
        &names[off + 1..off + 1 + len]
    }

    fn hash(wire: &[u8]) -> u64 {
        hash_ci(wire)
    }

    /// The label counts of its names, one bit each.
    pub(super) fn label_counts(&self) -> u128 {
        self.label_counts
    }

    /// The action of `name` (whose case-insensitive hash is `hash`), if it is in the table.
    #[inline]
    pub(super) fn get(&self, name: NameRef<'_>, hash: u64) -> Option<Stored> {
        let wire = name.as_wire();
        self.index
            .find(hash, |&(off, _)| {
                eq_ci(Self::name_at(&self.names, off), wire)
            })
            .map(|&(_, a)| Stored(a))
    }

    /// The entry of `name`: its action, or `None` after adding it with `action`.
    pub(super) fn get_or_insert(&mut self, name: NameRef<'_>, action: Stored) -> Option<Stored> {
        if let Some(a) = self.get(name, name.hash_ci()) {
            return Some(a);
        }
        self.label_counts |= 1u128 << name.label_count();
        let off = self.names.len() as u32;
        let wire = name.as_wire();
        self.names.push(wire.len() as u8);
        self.names.extend(wire.iter().map(|c| lower(*c)));
        let names = &self.names;
        self.index
            .insert_unique(name.hash_ci(), (off, action.0), |&(o, _)| {
                Self::hash(Self::name_at(names, o))
            });
        None
    }

    /// Every entry: the name (lower-cased wire form) and its action.
    pub(super) fn entries(&self) -> impl Iterator<Item = (&[u8], Stored)> + '_ {
        self.index
            .iter()
            .map(|&(off, a)| (Self::name_at(&self.names, off), Stored(a)))
    }

    pub(super) fn reserve(&mut self, n: usize) {
        let names = &self.names;
        self.index
            .reserve(n, |&(o, _)| Self::hash(Self::name_at(names, o)));
    }

    pub(super) fn shrink(&mut self) {
        self.names.shrink_to_fit();
        let names = &self.names;
        self.index
            .shrink_to_fit(|&(o, _)| Self::hash(Self::name_at(names, o)));
    }
}

/// Client prefixes: per prefix length (longest first), the masked addresses and their
/// actions. IPv4 addresses are kept as IPv4-mapped IPv6 ones (the length plus 96).
#[derive(Default, Clone)]
pub(super) struct IpTable {
    by_len: Vec<(u8, HashMap<u128, u32>)>,
}

impl IpTable {
    pub(super) fn len(&self) -> usize {
        self.by_len.iter().map(|(_, m)| m.len()).sum()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_len.is_empty()
    }

    pub(super) fn memory(&self) -> usize {
        self.by_len
            .iter()
            .map(|(_, m)| m.capacity() * (size_of::<(u128, u32)>() + 1))
            .sum()
    }

    fn key(ip: IpAddr) -> u128 {
        match ip {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => u128::from(v4.to_ipv6_mapped()),
                None => u128::from(v6),
            },
        }
    }

    fn mask(len: u8) -> u128 {
        if len == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(len))
        }
    }

    /// Adds `ip/len` (`len` in IPv6 terms); returns the action already there, if any.
    pub(super) fn insert(&mut self, ip: IpAddr, len: u8, action: Stored) -> Option<Stored> {
        let key = Self::key(ip) & Self::mask(len);
        let pos = match self.by_len.iter().position(|(l, _)| *l <= len) {
            Some(p) if self.by_len[p].0 == len => p,
            Some(p) => {
                self.by_len.insert(p, (len, HashMap::new()));
                p
            }
            None => {
                self.by_len.push((len, HashMap::new()));
                self.by_len.len() - 1
            }
        };
        let m = &mut self.by_len[pos].1;
        if let Some(&a) = m.get(&key) {
            return Some(Stored(a));
        }
        m.insert(key, action.0);
        None
    }

    /// The action of exactly `ip/len` (`len` in IPv6 terms).
    pub(super) fn get(&self, ip: IpAddr, len: u8) -> Option<Stored> {
        let key = Self::key(ip) & Self::mask(len);
        let (_, m) = self.by_len.iter().find(|(l, _)| *l == len)?;
        m.get(&key).map(|&a| Stored(a))
    }

    /// Removes `ip/len`; a length left without prefixes goes too.
    pub(super) fn remove(&mut self, ip: IpAddr, len: u8) {
        let key = Self::key(ip) & Self::mask(len);
        if let Some(p) = self.by_len.iter().position(|(l, _)| *l == len) {
            self.by_len[p].1.remove(&key);
            if self.by_len[p].1.is_empty() {
                self.by_len.remove(p);
            }
        }
    }

    /// The longest prefix holding `ip`: its length and action.
    pub(super) fn longest(&self, ip: IpAddr) -> Option<(u8, Stored)> {
        let key = Self::key(ip);
        self.by_len
            .iter()
            .find_map(|(len, m)| m.get(&(key & Self::mask(*len))).map(|&a| (*len, Stored(a))))
    }
}
