//! config::rrl -- the `[rrl]` table: response rate limiting's settings and defaults.

use super::validate::{ipv4_prefix, ipv6_prefix, rrl_rate, rrl_slip, rrl_table_size, rrl_window};
use serde::Deserialize;

/// `[rrl]`: response rate limiting (off unless `enabled = true` or `--rrl-rate`). See
/// `crate::rrl` for what is counted and how.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RrlConfig {
    /// Limit UDP responses.
    pub enabled: bool,
    /// Responses per second per client prefix and response class (and name).
    #[serde(deserialize_with = "rrl_rate")]
    pub rate: u32,
    /// Every `slip`-th limited response is sent truncated (TC=1); 0 drops them all, 1
    /// truncates them all.
    #[serde(deserialize_with = "rrl_slip")]
    pub slip: u32,
    /// Seconds of responses a bucket holds: a quiet client may get `rate × window` at once.
    #[serde(deserialize_with = "rrl_window")]
    pub window: u32,
    /// IPv4 clients are grouped by this prefix length.
    #[serde(deserialize_with = "ipv4_prefix")]
    pub ipv4_prefix: u8,
    /// IPv6 clients are grouped by this prefix length.
    #[serde(deserialize_with = "ipv6_prefix")]
    pub ipv6_prefix: u8,
    /// Buckets per worker (rounded up to a power of two; 32 bytes each).
    #[serde(deserialize_with = "rrl_table_size")]
    pub table_size: usize,
}

impl Default for RrlConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            rate: 20,
            slip: 2,
            window: 2,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            table_size: 32_768,
        }
    }
}
