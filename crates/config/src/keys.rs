//! config::keys -- the `[[key]]` tables: TSIG keys (RFC 8945) that sign zone transfers.

use serde::Deserialize;
use shardns_wire::tsig::Key;
use std::fmt;

/// One `[[key]]`: `name`, `algorithm` (`hmac-sha256` or `hmac-sha512`), `secret` (base64).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawKey")]
pub struct KeyConfig(pub Key);

impl fmt::Debug for KeyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    name: String,
    algorithm: String,
    secret: String,
}

impl TryFrom<RawKey> for KeyConfig {
    type Error = String;
    fn try_from(k: RawKey) -> Result<Self, String> {
        format!("{}:{}:{}", k.algorithm, k.name, k.secret)
            .parse()
            .map(KeyConfig)
    }
}
