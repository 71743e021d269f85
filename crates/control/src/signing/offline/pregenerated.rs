//! signing::offline::pregenerated -- `KEYDIR/state/<zone>.pregenerated`, the waits the
//! ZSKs were pregenerated with, which the signer compares with the zone's TTLs.

use std::fmt::Write as _;

/// The waits the ZSKs were pregenerated with, as `KEYDIR/state/<zone>.pregenerated` keeps
/// them: a line `NAME SECONDS` each. A value missing or unreadable is `None` (the file is
/// only read for warnings: a damaged one warns less, never fails the signing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pregenerated {
    /// The DNSKEY TTL.
    pub dnskey_ttl: Option<u64>,
    /// The largest TTL of the zone.
    pub max_ttl: Option<u64>,
    /// The propagation delay.
    pub propagation: Option<u64>,
}

impl Pregenerated {
    /// Reads the file's text: for each name, the first line `NAME N` whose N is a number.
    pub fn parse(text: &str) -> Self {
        let get = |k: &str| {
            text.lines().find_map(|l| {
                l.strip_prefix(k)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        };
        Self {
            dnskey_ttl: get("dnskey_ttl"),
            max_ttl: get("max_ttl"),
            propagation: get("propagation"),
        }
    }

    /// The file's text ([`Self::parse`] reads it back the same).
    pub fn write(&self) -> String {
        let mut text = String::new();
        for (k, v) in [
            ("dnskey_ttl", self.dnskey_ttl),
            ("max_ttl", self.max_ttl),
            ("propagation", self.propagation),
        ] {
            if let Some(v) = v {
                let _ = writeln!(text, "{k} {v}");
            }
        }
        text
    }
}
