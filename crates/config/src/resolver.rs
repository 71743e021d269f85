//! config::resolver -- the `[resolver]` table (the recursive resolver role) and its
//! forward zones.

use super::local::{AccessRule, AccessView, LocalData, LocalDataPtr, LocalZone, ViewConfig};
use super::validate::{
    chain, depth, from_strs, from_strs_opt, hold_after, positive, positive_u32, positive_u64,
};
use super::AclEntry;
use crate::rpz::RpzConfig;
use serde::Deserialize;
use shardns_wire::Name;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

/// `[resolver]`: the recursive resolver role. Off unless `recursion = true`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ResolverConfig {
    /// Resolve queries (RD set, outside our zones) for allowed clients.
    pub recursion: bool,
    /// Root hints file (absent: the IANA root hints bundled in the binary).
    pub root_hints: Option<PathBuf>,
    /// `"ZONE=ADDR:PORT"`: queries at or below ZONE go, with RD set, to ADDR:PORT.
    #[serde(deserialize_with = "from_strs")]
    pub forward: Vec<ForwardZone>,
    /// Clients allowed to recurse, as `ADDR` or `ADDR/LEN`; others get REFUSED.
    #[serde(deserialize_with = "from_strs")]
    pub allow: Vec<AclEntry>,
    /// Memory bound of the cache, in bytes.
    #[serde(deserialize_with = "positive")]
    pub cache_size: usize,
    /// Cached TTLs are raised to at least this many seconds.
    pub min_ttl: u32,
    /// Cached TTLs are cut to at most this many seconds.
    pub max_ttl: u32,
    /// Negative answers (NXDOMAIN, NODATA) are cached at most this many seconds (Unbound's
    /// `cache-max-negative-ttl`, BIND's `max-ncache-ttl`).
    pub max_negative_ttl: u32,
    /// Port for server addresses learned from NS/glue data (53; other values are for tests).
    pub upstream_port: u16,
    /// Deepest nesting of name-server address sub-resolutions (the recursion depth).
    #[serde(deserialize_with = "depth")]
    pub max_depth: u8,
    /// Most upstream queries sent for one client query (retries and sub-resolutions
    /// included).
    #[serde(deserialize_with = "positive_u32")]
    pub max_upstream_queries: u32,
    /// Most referrals followed for one client query.
    #[serde(deserialize_with = "positive_u32")]
    pub max_referrals: u32,
    /// Longest CNAME/DNAME chain followed.
    #[serde(deserialize_with = "chain")]
    pub max_cname_chain: u8,
    /// Whole-resolution deadline for one client query, in milliseconds.
    #[serde(deserialize_with = "positive_u64")]
    pub resolution_timeout_ms: u64,
    /// Resolutions in flight per worker; a cache miss beyond this is answered SERVFAIL.
    #[serde(deserialize_with = "positive")]
    pub max_pending: usize,
    /// Timeouts in a row after which an upstream server is held down (not asked).
    #[serde(deserialize_with = "hold_after")]
    pub server_hold_after: u8,
    /// First hold-down of an unresponsive upstream server, in milliseconds; doubles at each
    /// failed probe.
    #[serde(deserialize_with = "positive_u64")]
    pub server_hold_ms: u64,
    /// Longest hold-down, in milliseconds.
    #[serde(deserialize_with = "positive_u64")]
    pub server_hold_max_ms: u64,
    /// DNSSEC validation of resolved answers (on by default).
    pub validation: bool,
    /// Trust-anchor file: DS or DNSKEY records in zone-file format. Replaces the built-in
    /// root anchors (absent: the root KSKs 20326 and 38696).
    pub trust_anchor: Option<PathBuf>,
    /// Negative trust anchors (RFC 7646): names at and below which nothing is validated.
    #[serde(deserialize_with = "names")]
    pub negative_trust_anchors: Vec<Name>,
    /// Aggressive use of validated NSEC ranges (RFC 8198): NXDOMAIN and NODATA inside a
    /// range already proven are answered without asking (on by default, as Unbound's
    /// `aggressive-nsec`).
    pub aggressive_nsec: bool,
    /// QNAME minimisation (RFC 9156; Unbound's `qname-minimisation`, on by default).
    pub qname_minimisation: bool,
    /// Strict QNAME minimisation (Unbound's `qname-minimisation-strict`, off by default):
    /// no fallback to the full name when a minimised question gets a bad answer.
    pub qname_minimisation_strict: bool,
    /// Send queries to loopback and unspecified addresses learned from referrals, glue
    /// and name-server lookups (off by default, as Unbound's `do-not-query-localhost:
    /// yes`); for lab hierarchies on 127.0.0.0/8. Configured addresses (root hints,
    /// `forward`) are always used.
    pub allow_loopback_upstreams: bool,
    /// Serve-stale (RFC 8767; Unbound's `serve-expired`, BIND's `stale-answer-enable`, off
    /// by default): expired answers given (EDE 3, 19 for NXDOMAIN) when resolution fails
    /// or takes longer than `serve_stale_client_timeout_ms`.
    pub serve_stale: bool,
    /// Seconds past expiry an answer may be served stale (Unbound's `serve-expired-ttl`,
    /// BIND's `max-stale-ttl`; RFC 8767 suggests 1 to 3 days).
    #[serde(deserialize_with = "positive_u32")]
    pub serve_stale_max: u32,
    /// TTL of stale records in answers (Unbound's `serve-expired-reply-ttl`, BIND's
    /// `stale-answer-ttl`; RFC 8767: 30).
    #[serde(deserialize_with = "positive_u32")]
    pub serve_stale_reply_ttl: u32,
    /// Milliseconds a client waits for a running resolution before it gets stale data
    /// (Unbound's `serve-expired-client-timeout`, BIND's `stale-answer-client-timeout`;
    /// RFC 8767: 1800).
    #[serde(deserialize_with = "positive_u64")]
    pub serve_stale_client_timeout_ms: u64,
    /// Milliseconds a question that failed is answered stale without asking (RFC 8767
    /// failure-recheck timer, 30 s; BIND's `stale-refresh-time`).
    pub serve_stale_recheck_ms: u64,
    /// Refresh a cached answer asked for in the last tenth of its TTL in the background
    /// (Unbound's `prefetch`, BIND's `prefetch`; off by default).
    pub prefetch: bool,
    /// DNS64 (RFC 6147; off by default): AAAA synthesized from A records under
    /// `dns64_prefix`, PTR under the prefix's reverse zone, `ipv4only.arpa.` (RFC 8880).
    pub dns64: bool,
    /// The NAT64 prefix, `ADDR/LEN` with LEN 32, 40, 48, 56, 64 or 96 (RFC 6052); Unbound's
    /// `dns64-prefix`, BIND's `dns64 PREFIX`.
    pub dns64_prefix: String,
    /// AAAA records in these ranges are ignored by DNS64 (RFC 6147 §5.1.4; BIND's
    /// `exclude`); absent: `["::ffff:0:0/96"]`.
    pub dns64_exclude: Option<Vec<String>>,
    /// Clients that get DNS64, `ADDR` or `ADDR/LEN` (BIND's `clients`); absent: all.
    #[serde(deserialize_with = "from_strs_opt")]
    pub dns64_clients: Option<Vec<AclEntry>>,
    /// IPv4 addresses that are mapped, `ADDR` or `ADDR/LEN` (BIND's `mapped`); absent: all.
    #[serde(deserialize_with = "from_strs_opt")]
    pub dns64_mapped: Option<Vec<AclEntry>>,
    /// The bits after the embedded IPv4 address (BIND's `suffix`; `"::"` by default).
    pub dns64_suffix: String,
    /// DNS64 only for queries with RD (BIND's `recursive-only`; off by default).
    pub dns64_recursive_only: bool,
    /// Synthesize for a client with DO even when the AAAA denial is signed (BIND's
    /// `break-dnssec`; on by default, as RFC 6147 §5.5 and Unbound).
    pub dns64_break_dnssec: bool,
    /// Synthesize even when real AAAA records exist (Unbound's `dns64-synthall`).
    pub dns64_synthall: bool,
    /// Names (and names below them) whose AAAA records DNS64 ignores (Unbound's
    /// `dns64-ignore-aaaa`).
    #[serde(deserialize_with = "names")]
    pub dns64_ignore_aaaa: Vec<Name>,
    /// Local zones, `"NAME TYPE"` (Unbound's `local-zone`; see `config::local`).
    #[serde(deserialize_with = "from_strs")]
    pub local_zone: Vec<LocalZone>,
    /// Local records in zone-file form (Unbound's `local-data`).
    #[serde(deserialize_with = "from_strs")]
    pub local_data: Vec<LocalData>,
    /// `"ADDR NAME"` PTR records (Unbound's `local-data-ptr`).
    #[serde(deserialize_with = "from_strs")]
    pub local_data_ptr: Vec<LocalDataPtr>,
    /// Unbound's default local zones (localhost, the loopback reverse zones, RFC 6761 and
    /// RFC 6303 names; on by default); `local_zone = ["NAME nodefault"]` turns off one.
    pub local_zone_defaults: bool,
    /// `"PREFIX ACTION"` client access rules, longest prefix wins (Unbound's
    /// `access-control`); `allow` entries count as `"PREFIX allow"` rules.
    #[serde(deserialize_with = "from_strs")]
    pub access_control: Vec<AccessRule>,
    /// `"PREFIX VIEW"`: the view a client uses (Unbound's `access-control-view`).
    #[serde(deserialize_with = "from_strs")]
    pub access_control_view: Vec<AccessView>,
    /// `[[resolver.view]]` tables (Unbound's `view:`).
    pub view: Vec<ViewConfig>,
    /// Response policy zones (`[[resolver.rpz]]`), checked in this order.
    pub rpz: Vec<RpzConfig>,
}

impl Default for ResolverConfig {
    fn default() -> Self {
        Self {
            recursion: false,
            root_hints: None,
            forward: Vec::new(),
            allow: vec![
                "127.0.0.0/8".parse().expect("valid"),
                "::1".parse().expect("valid"),
            ],
            cache_size: 64 << 20,
            min_ttl: 0,
            max_ttl: 86_400,
            max_negative_ttl: 3_600,
            upstream_port: 53,
            max_depth: 4,
            max_upstream_queries: 64,
            max_referrals: 40,
            max_cname_chain: 12,
            resolution_timeout_ms: 10_000,
            max_pending: 1024,
            server_hold_after: 2,
            server_hold_ms: 5_000,
            server_hold_max_ms: 120_000,
            validation: true,
            trust_anchor: None,
            negative_trust_anchors: Vec::new(),
            aggressive_nsec: true,
            qname_minimisation: true,
            qname_minimisation_strict: false,
            allow_loopback_upstreams: false,
            serve_stale: false,
            serve_stale_max: 86_400,
            serve_stale_reply_ttl: 30,
            serve_stale_client_timeout_ms: 1_800,
            serve_stale_recheck_ms: 30_000,
            prefetch: false,
            dns64: false,
            dns64_prefix: "64:ff9b::/96".into(),
            dns64_exclude: None,
            dns64_clients: None,
            dns64_mapped: None,
            dns64_suffix: "::".into(),
            dns64_recursive_only: false,
            dns64_break_dnssec: true,
            dns64_synthall: false,
            dns64_ignore_aaaa: Vec::new(),
            local_zone: Vec::new(),
            local_data: Vec::new(),
            local_data_ptr: Vec::new(),
            local_zone_defaults: true,
            access_control: Vec::new(),
            access_control_view: Vec::new(),
            view: Vec::new(),
            rpz: Vec::new(),
        }
    }
}

/// Domain names, each checked as it is read.
fn names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Name>, D::Error> {
    let v: Vec<String> = Vec::deserialize(d)?;
    v.iter()
        .map(|s| {
            s.parse::<Name>()
                .map_err(|e| serde::de::Error::custom(format!("bad name {s:?}: {e}")))
        })
        .collect()
}

/// A forward zone: `ZONE=ADDR:PORT` (the `--forward` flag and `resolver.forward`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardZone {
    /// The zone apex.
    pub zone: Name,
    /// The recursive server its queries go to.
    pub server: SocketAddr,
}

impl FromStr for ForwardZone {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (zone, server) = s
            .split_once('=')
            .ok_or_else(|| format!("expected ZONE=ADDR:PORT, got {s:?}"))?;
        let zone = zone
            .parse::<Name>()
            .map_err(|e| format!("bad zone name {zone:?}: {e}"))?;
        let server = server
            .parse::<SocketAddr>()
            .map_err(|e| format!("bad server address {server:?}: {e}"))?;
        Ok(Self { zone, server })
    }
}
