//! config::acl -- address prefixes (`ADDR` or `ADDR/LEN`), the entries of the recursion
//! and transfer ACLs.

use serde::Deserialize;
use std::net::IpAddr;
use std::str::FromStr;

/// One entry of the recursion ACL: an address prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclEntry {
    /// The network address.
    pub addr: IpAddr,
    /// Prefix length in bits.
    pub len: u8,
}

impl AclEntry {
    /// True if `ip` is inside this prefix (IPv4 and IPv6 never match each other).
    pub fn contains(&self, ip: IpAddr) -> bool {
        fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
            let full = usize::from(bits / 8);
            let rest = bits % 8;
            if a[..full] != b[..full] {
                return false;
            }
            rest == 0 || (a[full] ^ b[full]) & (0xffu8 << (8 - rest)) == 0
        }
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(&n.octets(), &a.octets(), self.len),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(&n.octets(), &a.octets(), self.len),
            _ => false,
        }
    }
}

impl FromStr for AclEntry {
    type Err = String;
    /// `ADDR` (a single address) or `ADDR/LEN`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|e| format!("bad address {addr:?}: {e}"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| format!("bad prefix length {l:?} in {s:?}"))?,
            None => max,
        };
        Ok(Self { addr, len })
    }
}

/// `update_forwarding`: `true` (every address), `false` (none) or a list of prefixes.
pub(crate) fn forwarding<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<AclEntry>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Raw {
        All(bool),
        Some(Vec<String>),
    }
    match Raw::deserialize(d)? {
        Raw::All(false) => Ok(Vec::new()),
        Raw::All(true) => Ok(["0.0.0.0/0", "::/0"]
            .iter()
            .map(|p| p.parse().expect("a prefix"))
            .collect()),
        Raw::Some(list) => list
            .iter()
            .map(|p| p.parse().map_err(serde::de::Error::custom))
            .collect(),
    }
}
