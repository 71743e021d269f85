//! Client access: address prefixes, Unbound's access-control actions and the
//! longest-prefix-wins rule lists (access and views).

use std::net::IpAddr;
use std::str::FromStr;

/// What a client may do (Unbound's `access-control` actions, same names).
/// The default is `refuse`, what Unbound gives a client no rule matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Access {
    /// `allow`: recursion for queries with RD set.
    Allow,
    /// `deny`: every query dropped.
    Deny,
    /// `refuse`: every query answered REFUSED.
    #[default]
    Refuse,
    /// `allow_snoop`: as `allow`, and queries without RD answered from the cache.
    AllowSnoop,
    /// `allow_setrd`: as `allow`, every query treated as if RD were set.
    AllowSetRd,
    /// `deny_non_local`: local zones answered, every other query dropped.
    DenyNonLocal,
    /// `refuse_non_local`: local zones answered, every other query REFUSED.
    RefuseNonLocal,
}

impl Access {
    const NAMES: [(&'static str, Access); 7] = [
        ("allow", Access::Allow),
        ("deny", Access::Deny),
        ("refuse", Access::Refuse),
        ("allow_snoop", Access::AllowSnoop),
        ("allow_setrd", Access::AllowSetRd),
        ("deny_non_local", Access::DenyNonLocal),
        ("refuse_non_local", Access::RefuseNonLocal),
    ];

    /// The Unbound name of the action.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("?", |(n, _)| n)
    }
}

impl FromStr for Access {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, a)| *a)
            .ok_or_else(|| {
                let all: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                format!("unknown access action {s:?} (one of {})", all.join(", "))
            })
    }
}

/// An address prefix: `ADDR/LEN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    /// The network address.
    pub addr: IpAddr,
    /// Length in bits.
    pub len: u8,
}

impl Prefix {
    /// True if `ip` is inside the prefix (an IPv4-mapped IPv6 client matches IPv4 prefixes:
    /// a dual-stack socket shows IPv4 clients so).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => bits_eq(&n.octets(), &a.octets(), self.len),
            (IpAddr::V6(n), IpAddr::V6(a)) => bits_eq(&n.octets(), &a.octets(), self.len),
            _ => false,
        }
    }
}

fn bits_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let full = usize::from(bits / 8);
    let rest = bits % 8;
    a[..full] == b[..full] && (rest == 0 || (a[full] ^ b[full]) & (0xffu8 << (8 - rest)) == 0)
}

/// Prefixes with a value each, longest first: the first that contains an address is its
/// longest match. Configurations hold a handful to a few hundred prefixes, so a scan is as
/// fast as a trie and much smaller.
#[derive(Clone, Debug)]
pub(crate) struct Rules<T> {
    rules: Vec<(Prefix, T)>,
}

impl<T: Copy> Rules<T> {
    /// The rules; for two equal prefixes the later one wins (as a later line of a
    /// configuration file).
    pub(crate) fn new(list: &[(Prefix, T)]) -> Self {
        let mut rules: Vec<(Prefix, T)> = Vec::with_capacity(list.len());
        for &(p, v) in list.iter().rev() {
            if !rules.iter().any(|(q, _)| *q == p) {
                rules.push((p, v));
            }
        }
        // Stable: among equal lengths the order does not matter (distinct prefixes of one
        // length never both contain an address).
        rules.sort_by_key(|(p, _)| core::cmp::Reverse(p.len));
        Self { rules }
    }

    /// The value of the longest prefix containing `ip`.
    pub(crate) fn find(&self, ip: IpAddr) -> Option<T> {
        self.rules
            .iter()
            .find(|(p, _)| p.contains(ip))
            .map(|(_, v)| *v)
    }
}
