//! config -- the TOML configuration file, command-line overrides, and the defaults.
//!
//! Errors name the file, line, column and key (`shardns.toml:4:11: server.workers: ...`).
//! Relative zone file paths are taken relative to the config file's directory. Documented
//! for operators in `docs/CONFIG.md`; `docs/shardns.example.toml` shows every key.

use serde::{Deserialize, Deserializer};
use shardns_wire::tsig::Key;
use shardns_wire::Name;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The port used when no listen address is given.
pub const DEFAULT_PORT: u16 = 5353;

/// The listen addresses used when none are given: 127.0.0.1 and ::1, port 5353.
pub fn default_listen() -> Vec<SocketAddr> {
    vec![
        SocketAddr::new(Ipv4Addr::LOCALHOST.into(), DEFAULT_PORT),
        SocketAddr::new(Ipv6Addr::LOCALHOST.into(), DEFAULT_PORT),
    ]
}

/// The whole configuration. Every section and key is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Config {
    /// `[server]`: addresses, workers, control socket.
    pub server: ServerConfig,
    /// `[[zone]]` tables: the zones to serve.
    #[serde(rename = "zone")]
    pub zones: Vec<ZoneConfig>,
    /// `[limits]`: TCP connection limits and timeouts, UDP batch size.
    pub limits: Limits,
    /// `[log]`: log level and query logging.
    pub log: LogConfig,
    /// `[stats]`: the Prometheus HTTP endpoint.
    pub stats: StatsConfig,
    /// `[resolver]`: recursion for clients, root hints, forwarding, cache limits.
    pub resolver: ResolverConfig,
    /// `[rrl]`: response rate limiting for UDP.
    pub rrl: RrlConfig,
    /// `[[key]]` tables: TSIG keys (RFC 8945) that sign zone transfers.
    #[serde(rename = "key")]
    pub keys: Vec<KeyConfig>,
}

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
        }
    }
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

/// `[server]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Addresses to serve UDP and TCP on (empty: 127.0.0.1:5353 and [::1]:5353).
    pub listen: Vec<SocketAddr>,
    /// Worker threads (absent: one per core).
    #[serde(deserialize_with = "positive_opt")]
    pub workers: Option<usize>,
    /// Unix socket for `shardns reload` and `shardns stats` (absent: see
    /// [`Config::control_socket_path`]).
    pub control_socket: Option<PathBuf>,
    /// Network interface (e.g. `lo`) whose UDP queries to the listen addresses are read with
    /// AF_XDP instead of sockets (needs CAP_NET_ADMIN and CAP_BPF; absent: off).
    pub xdp_interface: Option<String>,
    /// Clients (`ADDR` or `ADDR/LEN`) allowed to transfer (AXFR, IXFR) every zone that has
    /// no `allow_transfer` of its own, the embedded zone included. Empty: none.
    #[serde(deserialize_with = "from_strs")]
    pub allow_transfer: Vec<AclEntry>,
    /// Secondaries (`"ADDR:PORT"`) told by NOTIFY (RFC 1996) when a zone that has no
    /// `notify` of its own gets a new serial, and at startup. Empty: none.
    pub notify: Vec<SocketAddr>,
    /// The `[[key]]` a transfer must be signed with (TSIG), for zones that name none of
    /// their own (absent: address only).
    #[serde(deserialize_with = "name_opt")]
    pub transfer_key: Option<Name>,
}

/// One `[[zone]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ZoneConfig {
    /// The apex, e.g. `example.com.` (a missing final dot is implied).
    #[serde(deserialize_with = "name")]
    pub name: Name,
    /// The zone file.
    pub file: PathBuf,
    /// Clients allowed to transfer this zone, replacing `server.allow_transfer` for it
    /// (absent: the server's list; `[]`: nobody).
    #[serde(default, deserialize_with = "from_strs_opt")]
    pub allow_transfer: Option<Vec<AclEntry>>,
    /// Secondaries told by NOTIFY about this zone, replacing `server.notify` for it (absent:
    /// the server's list; `[]`: none).
    #[serde(default)]
    pub notify: Option<Vec<SocketAddr>>,
    /// The `[[key]]` transfers of this zone must be signed with, replacing
    /// `server.transfer_key` (absent: the server's).
    #[serde(default, deserialize_with = "name_opt")]
    pub transfer_key: Option<Name>,
}

impl ZoneConfig {
    /// A zone at `name` read from `file`.
    pub fn new(name: Name, file: PathBuf) -> Self {
        Self {
            name,
            file,
            allow_transfer: None,
            notify: None,
            transfer_key: None,
        }
    }
}

impl FromStr for ZoneConfig {
    type Err = String;
    /// Parses `NAME=FILE`, the form of the `--zone` flag.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, file) = s
            .split_once('=')
            .ok_or_else(|| format!("expected NAME=FILE, got {s:?}"))?;
        if file.is_empty() {
            return Err(format!("no file after '=' in {s:?}"));
        }
        let name = name
            .parse::<Name>()
            .map_err(|e| format!("bad zone name {name:?}: {e}"))?;
        Ok(Self::new(name, PathBuf::from(file)))
    }
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Limits {
    /// Open TCP connections per worker; at the limit the least recently active one is
    /// closed to make room.
    #[serde(deserialize_with = "positive")]
    pub tcp_connections_per_worker: usize,
    /// Open TCP connections over all workers; at the limit new connections are closed.
    #[serde(deserialize_with = "positive")]
    pub tcp_connections: usize,
    /// Milliseconds a TCP connection may stay without traffic before it is closed.
    #[serde(deserialize_with = "positive_u64")]
    pub tcp_idle_timeout_ms: u64,
    /// Datagrams read (and answered) per recvmmsg/sendmmsg call, 1 to 1024.
    #[serde(deserialize_with = "batch")]
    pub udp_batch: usize,
    /// SO_RCVBUF for UDP sockets in bytes; past `net.core.rmem_max` only with CAP_NET_ADMIN
    /// (SO_RCVBUFFORCE). 0 keeps the system default. Room for bursts: a full buffer drops
    /// queries.
    pub udp_receive_buffer: usize,
    /// Largest UDP response, 512 to 1232 octets (also capped by the client's EDNS size;
    /// 512 without EDNS). A longer answer is sent truncated (TC=1).
    #[serde(deserialize_with = "udp_max_response")]
    pub udp_max_response: usize,
    /// Open TCP connections per client address over all workers; 0 means no limit.
    #[serde(deserialize_with = "per_client")]
    pub tcp_connections_per_client: usize,
    /// Milliseconds a client may take to send one whole TCP query once it has started
    /// (the first byte of its length prefix, or the end of the query before it).
    #[serde(deserialize_with = "positive_u64")]
    pub tcp_read_timeout_ms: u64,
    /// Queries answered on one TCP connection before it is closed; 0 means no limit.
    pub tcp_queries_per_connection: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            tcp_connections_per_worker: 1024,
            tcp_connections: 4096,
            tcp_idle_timeout_ms: 10_000,
            udp_batch: 64,
            udp_receive_buffer: 8 << 20,
            udp_max_response: 1232,
            tcp_connections_per_client: 128,
            tcp_read_timeout_ms: 3_000,
            tcp_queries_per_connection: 0,
        }
    }
}

/// `[log]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct LogConfig {
    /// A `tracing` filter: `info`, `debug`, `warn,shardns::query=info`... (absent: `info`,
    /// or `RUST_LOG` if set).
    #[serde(deserialize_with = "log_filter")]
    pub level: Option<String>,
    /// Log every query at info level (target `shardns::query`). Off by default: it costs a
    /// formatted line and a lock on the output per query.
    pub queries: bool,
}

/// `[stats]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct StatsConfig {
    /// Serve Prometheus text at `http://ADDR/metrics` (absent: off).
    pub http: Option<SocketAddr>,
}

/// Values from the command line; each one set replaces the config file's.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Overrides {
    /// `--listen`: replaces `server.listen`.
    pub listen: Vec<SocketAddr>,
    /// `--zone`: added to the config's zones (replacing one with the same name).
    pub zones: Vec<ZoneConfig>,
    /// `--workers`.
    pub workers: Option<usize>,
    /// `--log-level`.
    pub log_level: Option<String>,
    /// `--log-queries`.
    pub log_queries: bool,
    /// `--stats-http`.
    pub stats_http: Option<SocketAddr>,
    /// `--control`.
    pub control_socket: Option<PathBuf>,
    /// `--tcp-idle-timeout-ms`.
    pub tcp_idle_timeout_ms: Option<u64>,
    /// `--tcp-connections-per-worker`.
    pub tcp_connections_per_worker: Option<usize>,
    /// `--tcp-connections`.
    pub tcp_connections: Option<usize>,
    /// `--tcp-connections-per-client`.
    pub tcp_connections_per_client: Option<usize>,
    /// `--tcp-read-timeout-ms`.
    pub tcp_read_timeout_ms: Option<u64>,
    /// `--tcp-queries-per-connection`.
    pub tcp_queries_per_connection: Option<u32>,
    /// `--rrl-rate`: sets `rrl.rate` and turns rate limiting on.
    pub rrl_rate: Option<u32>,
    /// `--rrl-slip`.
    pub rrl_slip: Option<u32>,
    /// `--recursion`.
    pub recursion: bool,
    /// `--root-hints`.
    pub root_hints: Option<PathBuf>,
    /// `--forward`: added to `resolver.forward`.
    pub forward: Vec<ForwardZone>,
    /// `--allow-recursion`: replaces `resolver.allow`.
    pub allow: Vec<AclEntry>,
    /// `--upstream-port`.
    pub upstream_port: Option<u16>,
    /// `--xdp`: sets `server.xdp_interface`.
    pub xdp_interface: Option<String>,
    /// `--allow-transfer`: added to `server.allow_transfer`.
    pub allow_transfer: Vec<AclEntry>,
    /// `--notify`: added to `server.notify`.
    pub notify: Vec<SocketAddr>,
    /// `--transfer-key ALG:NAME:SECRET`: a key added to `[[key]]` and made
    /// `server.transfer_key`.
    pub transfer_key: Option<Key>,
}

/// A config file that could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line and column, when known.
    pub position: Option<(usize, usize)>,
    /// The key, as a dotted path (`server.workers`, `zone[1].name`), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((line, col)) = self.position {
            write!(f, ":{line}:{col}")?;
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads and parses a config file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.into(),
            position: None,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Self::from_toml(&text, path)
    }

    /// Parses config text; `path` names it in errors and anchors relative zone paths.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let de = toml::Deserializer::new(text);
        let mut config: Self = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            // One line: toml's multi-line messages joined. toml gives no message for some
            // syntax errors (a control character in a comment): say what kind it is.
            let mut message = inner
                .message()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            if message.is_empty() {
                message = "invalid TOML syntax".into();
            }
            ConfigError {
                path: path.into(),
                position: inner.span().map(|s| line_col(text, s.start)),
                key: (!key.is_empty() && key != ".").then_some(key),
                message,
            }
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        for z in &mut config.zones {
            if z.file.is_relative() {
                z.file = base.join(&z.file);
            }
        }
        if let Some(h) = &mut config.resolver.root_hints {
            if h.is_relative() {
                *h = base.join(&*h);
            }
        }
        // A transfer key must be one of the [[key]] tables.
        let server_key = (
            "server.transfer_key".to_string(),
            &config.server.transfer_key,
        );
        let zone_keys = config.zones.iter().enumerate();
        let named = std::iter::once(server_key)
            .chain(zone_keys.map(|(i, z)| (format!("zone[{i}].transfer_key"), &z.transfer_key)));
        for (key, name) in named {
            if let Some(n) = name {
                if !config.keys.iter().any(|k| &k.0.name == n) {
                    return Err(ConfigError {
                        path: path.into(),
                        position: None,
                        key: Some(key),
                        message: format!("no [[key]] named {n}"),
                    });
                }
            }
        }
        Ok(config)
    }

    /// Applies command-line values.
    pub fn apply(&mut self, o: &Overrides) {
        if !o.listen.is_empty() {
            self.server.listen = o.listen.clone();
        }
        for z in &o.zones {
            self.zones.retain(|c| c.name != z.name);
            self.zones.push(z.clone());
        }
        if o.workers.is_some() {
            self.server.workers = o.workers;
        }
        if o.log_level.is_some() {
            self.log.level = o.log_level.clone();
        }
        self.log.queries |= o.log_queries;
        if o.stats_http.is_some() {
            self.stats.http = o.stats_http;
        }
        if o.control_socket.is_some() {
            self.server.control_socket = o.control_socket.clone();
        }
        if let Some(v) = o.tcp_idle_timeout_ms {
            self.limits.tcp_idle_timeout_ms = v;
        }
        if let Some(v) = o.tcp_connections_per_worker {
            self.limits.tcp_connections_per_worker = v;
        }
        if let Some(v) = o.tcp_connections {
            self.limits.tcp_connections = v;
        }
        if let Some(v) = o.tcp_connections_per_client {
            self.limits.tcp_connections_per_client = v;
        }
        if let Some(v) = o.tcp_read_timeout_ms {
            self.limits.tcp_read_timeout_ms = v;
        }
        if let Some(v) = o.tcp_queries_per_connection {
            self.limits.tcp_queries_per_connection = v;
        }
        if let Some(v) = o.rrl_rate {
            self.rrl.rate = v;
            self.rrl.enabled = true;
        }
        if let Some(v) = o.rrl_slip {
            self.rrl.slip = v;
        }
        self.resolver.recursion |= o.recursion;
        if o.root_hints.is_some() {
            self.resolver.root_hints = o.root_hints.clone();
        }
        self.resolver.forward.extend(o.forward.iter().cloned());
        if !o.allow.is_empty() {
            self.resolver.allow = o.allow.clone();
        }
        if let Some(p) = o.upstream_port {
            self.resolver.upstream_port = p;
        }
        if o.xdp_interface.is_some() {
            self.server.xdp_interface = o.xdp_interface.clone();
        }
        self.server
            .allow_transfer
            .extend(o.allow_transfer.iter().copied());
        self.server.notify.extend(o.notify.iter().copied());
        if let Some(k) = &o.transfer_key {
            self.keys.retain(|c| c.0.name != k.name);
            self.keys.push(KeyConfig(k.clone()));
            self.server.transfer_key = Some(k.name.clone());
        }
    }

    /// The `[[zone]]` table of the zone at `apex`, if the config has one.
    fn zone(&self, apex: &Name) -> Option<&ZoneConfig> {
        self.zones.iter().find(|z| &z.name == apex)
    }

    /// The TSIG key transfers of the zone at `apex` must carry: its own, else the server's.
    pub fn transfer_key(&self, apex: &Name) -> Option<&Name> {
        self.zone(apex)
            .and_then(|z| z.transfer_key.as_ref())
            .or(self.server.transfer_key.as_ref())
    }

    /// Whom to NOTIFY about the zone at `apex`: its own `notify`, else the server's.
    pub fn notify_targets(&self, apex: &Name) -> &[SocketAddr] {
        self.zone(apex)
            .and_then(|z| z.notify.as_deref())
            .unwrap_or(&self.server.notify)
    }

    /// Who may transfer the zone at `apex`: its own `allow_transfer`, else the server's.
    pub fn transfer_acl(&self, apex: &Name) -> &[AclEntry] {
        self.zone(apex)
            .and_then(|z| z.allow_transfer.as_deref())
            .unwrap_or(&self.server.allow_transfer)
    }

    /// The addresses to serve on (the defaults if none are configured).
    pub fn listen_addrs(&self) -> Vec<SocketAddr> {
        if self.server.listen.is_empty() {
            default_listen()
        } else {
            self.server.listen.clone()
        }
    }

    /// Worker threads: as configured, else one per core.
    pub fn worker_count(&self) -> usize {
        self.server.workers.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
    }

    /// The control socket: as configured, else `shardns-PORT.ctl` (PORT of the first listen
    /// address) in `$XDG_RUNTIME_DIR`, or in `/tmp` if that is not set.
    pub fn control_socket_path(&self) -> PathBuf {
        if let Some(p) = &self.server.control_socket {
            return p.clone();
        }
        let port = self
            .listen_addrs()
            .first()
            .map_or(DEFAULT_PORT, SocketAddr::port);
        let dir = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_absolute() && d.is_dir())
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        dir.join(format!("shardns-{port}.ctl"))
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

fn name<'de, D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
    let s = String::deserialize(d)?;
    s.parse::<Name>()
        .map_err(|e| serde::de::Error::custom(format!("bad domain name {s:?}: {e}")))
}

fn name_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Name>, D::Error> {
    name(d).map(Some)
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    match usize::deserialize(d)? {
        0 => Err(serde::de::Error::custom("must be at least 1")),
        n => Ok(n),
    }
}

fn from_strs<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = String>,
{
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| s.parse::<T>().map_err(serde::de::Error::custom))
        .collect()
}

fn from_strs_opt<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = String>,
{
    from_strs(d).map(Some)
}

fn positive_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    positive(d).map(Some)
}

fn positive_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    match u32::deserialize(d)? {
        0 => Err(serde::de::Error::custom("must be at least 1")),
        n => Ok(n),
    }
}

fn positive_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match u64::deserialize(d)? {
        0 => Err(serde::de::Error::custom("must be at least 1")),
        n => Ok(n),
    }
}

/// Deserializers that accept an integer in `lo..=hi` and name the range otherwise.
macro_rules! ranged {
    ($($f:ident: $t:ty = $lo:literal ..= $hi:literal;)*) => {$(
        fn $f<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
            match <$t>::deserialize(d)? {
                n @ $lo..=$hi => Ok(n),
                n => Err(serde::de::Error::custom(format!(
                    "{n} is not between {} and {}", $lo, $hi
                ))),
            }
        }
    )*};
}

ranged! {
    batch: usize = 1..=1024;
    udp_max_response: usize = 512..=1232;
    per_client: usize = 0..=65_535;
    depth: u8 = 1..=32;
    chain: u8 = 1..=64;
    rrl_rate: u32 = 1..=1_000_000;
    rrl_slip: u32 = 0..=10;
    rrl_window: u32 = 1..=60;
    ipv4_prefix: u8 = 0..=32;
    ipv6_prefix: u8 = 0..=128;
    rrl_table_size: usize = 4..=16_777_216;
    hold_after: u8 = 1..=100;
}

fn log_filter<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    crate::logging::check_filter(&s).map_err(serde::de::Error::custom)?;
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_character_in_a_comment_has_a_message() {
        let e = Config::from_toml("#\u{1}\n", Path::new("c.toml")).unwrap_err();
        assert_eq!(e.message, "invalid TOML syntax");
        assert_eq!(e.position.map(|p| p.0), Some(1));
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml(text, Path::new("/etc/shardns/shardns.toml"))
    }

    #[test]
    fn empty_file_gives_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.listen_addrs(), default_listen());
        assert!(c.worker_count() >= 1);
        assert_eq!(c.limits.tcp_idle_timeout_ms, 10_000);
        assert_eq!(c.limits.tcp_connections_per_worker, 1024);
        assert!(!c.log.queries);
        assert!(c.control_socket_path().ends_with("shardns-5353.ctl"));
    }

    #[test]
    fn full_file() {
        let c = parse(
            r#"
[server]
listen = ["127.0.0.1:53", "[::1]:53"]
workers = 2
control_socket = "/run/shardns.ctl"

[[zone]]
name = "example.com"
file = "example.com.zone"

[[zone]]
name = "example.net."
file = "/var/lib/zones/example.net"

[limits]
tcp_connections_per_worker = 10
tcp_connections = 20
tcp_idle_timeout_ms = 3000
udp_batch = 32
udp_receive_buffer = 1048576

[log]
level = "debug"
queries = true

[stats]
http = "127.0.0.1:9153"
"#,
        )
        .unwrap();
        assert_eq!(c.server.listen.len(), 2);
        assert_eq!(c.listen_addrs()[1], "[::1]:53".parse().unwrap());
        assert_eq!(c.worker_count(), 2);
        assert_eq!(c.control_socket_path(), PathBuf::from("/run/shardns.ctl"));
        assert_eq!(c.zones.len(), 2);
        assert_eq!(c.zones[0].name.to_string(), "example.com.");
        assert_eq!(
            c.zones[0].file,
            PathBuf::from("/etc/shardns/example.com.zone")
        );
        assert_eq!(c.zones[1].file, PathBuf::from("/var/lib/zones/example.net"));
        assert_eq!(c.limits.udp_batch, 32);
        assert_eq!(c.limits.udp_receive_buffer, 1 << 20);
        assert_eq!(c.log.level.as_deref(), Some("debug"));
        assert!(c.log.queries);
        assert_eq!(c.stats.http, Some("127.0.0.1:9153".parse().unwrap()));
    }

    #[test]
    fn errors_name_line_column_and_key() {
        let e = parse("[server]\nworkers = \"two\"\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(2));
        assert_eq!(e.key.as_deref(), Some("server.workers"));
        let shown = e.to_string();
        assert!(shown.starts_with("/etc/shardns/shardns.toml:2:"), "{shown}");
        assert!(shown.contains("server.workers"), "{shown}");

        let e = parse("[server]\nlisten = [\"127.0.0.1\"]\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(2), "{e}");
        assert!(e.to_string().contains("server.listen"), "{e}");

        let e = parse("\n[limits]\nudp_batch = 0\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(3), "{e}");
        assert!(e.to_string().contains("between 1 and 1024"), "{e}");

        let e = parse("[[zone]]\nname = \"a..b\"\nfile = \"x\"\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(2), "{e}");
        assert!(e.to_string().contains("zone[0].name"), "{e}");

        let e = parse("[[zone]]\nname = \"a.b\"\n").unwrap_err();
        assert!(e.to_string().contains("missing field `file`"), "{e}");

        let e = parse("[log]\nlevel = \"loud=[\"\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(2), "{e}");
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = parse("[server]\nlisten = []\nwrokers = 2\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(3), "{e}");
        assert!(e.to_string().contains("wrokers"), "{e}");
        let e = parse("[sever]\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(1), "{e}");
        assert!(e.to_string().contains("sever"), "{e}");
    }

    #[test]
    fn syntax_error_has_position() {
        let e = parse("[server]\nworkers = = 2\n").unwrap_err();
        assert_eq!(e.position.map(|p| p.0), Some(2), "{e}");
    }

    #[test]
    fn transfer_acls_per_zone_over_the_servers() {
        let mut c = parse(
            "[server]\nallow_transfer = [\"192.0.2.0/24\"]\n\
             [[zone]]\nname = \"a.\"\nfile = \"a\"\nallow_transfer = [\"::1\", \"127.0.0.2\"]\n\
             [[zone]]\nname = \"b.\"\nfile = \"b\"\n\
             [[zone]]\nname = \"c.\"\nfile = \"c\"\nallow_transfer = []\n",
        )
        .unwrap();
        let acl = |c: &Config, z: &str| c.transfer_acl(&z.parse().unwrap()).to_vec();
        assert_eq!(
            acl(&c, "a."),
            ["::1".parse().unwrap(), "127.0.0.2".parse().unwrap()]
        );
        assert_eq!(acl(&c, "b."), ["192.0.2.0/24".parse().unwrap()]);
        assert!(acl(&c, "c.").is_empty(), "[] means nobody");
        // --allow-transfer adds to the server's list: zones without their own and the
        // embedded zone (not in the config) get it.
        let o = Overrides {
            allow_transfer: vec!["127.0.0.1".parse().unwrap()],
            ..Overrides::default()
        };
        c.apply(&o);
        assert_eq!(acl(&c, "b.").len(), 2);
        assert_eq!(acl(&c, "example.test.").len(), 2);
        assert_eq!(acl(&c, "a.").len(), 2);
        let e = parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\nallow_transfer = [\"1.2.3.4/33\"]\n")
            .unwrap_err();
        assert!(e.to_string().contains("zone[0].allow_transfer"), "{e}");
        assert_eq!(e.position.map(|p| p.0), Some(4), "{e}");
    }

    #[test]
    fn tsig_keys_and_transfer_keys() {
        let c = parse(
            "[server]\ntransfer_key = \"k1\"\n\
             [[key]]\nname = \"k1.\"\nalgorithm = \"hmac-sha256\"\nsecret = \"c2VjcmV0\"\n\
             [[key]]\nname = \"k2\"\nalgorithm = \"hmac-sha512\"\nsecret = \"c2VjcmV0\"\n\
             [[zone]]\nname = \"a.\"\nfile = \"a\"\ntransfer_key = \"k2.\"\n",
        )
        .unwrap();
        assert_eq!(c.keys.len(), 2);
        assert_eq!(c.keys[1].0.secret, b"secret");
        let key = |z: &str| c.transfer_key(&z.parse().unwrap()).map(|n| n.to_string());
        assert_eq!(key("a."), Some("k2.".into()));
        assert_eq!(key("example.test."), Some("k1.".into()));
        // A transfer key that is no [[key]]; a bad algorithm; a secret that is not base64.
        let e =
            parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\ntransfer_key = \"nope\"\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("zone[0].transfer_key: no [[key]] named nope."),
            "{e}"
        );
        let e = parse("[[key]]\nname = \"k\"\nalgorithm = \"hmac-md5\"\nsecret = \"c2VjcmV0\"\n")
            .unwrap_err();
        assert!(
            e.to_string().contains("key[0]") && e.to_string().contains("hmac-md5"),
            "{e}"
        );
        let e =
            parse("[[key]]\nname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"not base64!\"\n")
                .unwrap_err();
        assert!(
            e.to_string().contains("not base64") && !e.to_string().contains("not base64!"),
            "{e}"
        );
    }

    #[test]
    fn notify_targets_per_zone_over_the_servers() {
        let mut c = parse(
            "[server]\nnotify = [\"127.0.0.1:5300\"]\n\
             [[zone]]\nname = \"a.\"\nfile = \"a\"\nnotify = [\"[::1]:53\", \"127.0.0.2:53\"]\n\
             [[zone]]\nname = \"b.\"\nfile = \"b\"\nnotify = []\n",
        )
        .unwrap();
        let t = |c: &Config, z: &str| c.notify_targets(&z.parse().unwrap()).to_vec();
        assert_eq!(t(&c, "a.").len(), 2);
        assert!(t(&c, "b.").is_empty());
        assert_eq!(t(&c, "example.test."), ["127.0.0.1:5300".parse().unwrap()]);
        let o = Overrides {
            notify: vec!["127.0.0.3:53".parse().unwrap()],
            ..Overrides::default()
        };
        c.apply(&o);
        assert_eq!(t(&c, "example.test.").len(), 2);
        let e =
            parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\nnotify = [\"127.0.0.1\"]\n").unwrap_err();
        assert!(e.to_string().contains("zone[0].notify"), "{e}");
    }

    #[test]
    fn overrides_replace_and_add() {
        let mut c = parse(
            "[server]\nlisten = [\"127.0.0.1:53\"]\nworkers = 4\n[[zone]]\nname = \"a.\"\nfile = \"a\"\n\
             [[zone]]\nname = \"b.\"\nfile = \"b\"\n",
        )
        .unwrap();
        let o = Overrides {
            listen: vec!["127.0.0.1:5300".parse().unwrap()],
            zones: vec!["B=/tmp/b2".parse().unwrap(), "c.=/tmp/c".parse().unwrap()],
            workers: Some(1),
            log_queries: true,
            tcp_idle_timeout_ms: Some(500),
            ..Overrides::default()
        };
        c.apply(&o);
        assert_eq!(c.listen_addrs(), vec!["127.0.0.1:5300".parse().unwrap()]);
        assert_eq!(c.worker_count(), 1);
        let zones: Vec<String> = c
            .zones
            .iter()
            .map(|z| format!("{}={}", z.name, z.file.display()))
            .collect();
        assert_eq!(zones, ["a.=/etc/shardns/a", "B.=/tmp/b2", "c.=/tmp/c"]);
        assert!(c.log.queries);
        assert_eq!(c.limits.tcp_idle_timeout_ms, 500);
        assert!(c.control_socket_path().ends_with("shardns-5300.ctl"));
    }

    #[test]
    fn resolver_table() {
        let c = parse("").unwrap();
        assert!(!c.resolver.recursion);
        assert!(c.resolver.allow[0].contains("127.1.2.3".parse().unwrap()));
        assert!(c.resolver.allow[1].contains("::1".parse().unwrap()));
        assert!(!c.resolver.allow[0].contains("10.0.0.1".parse().unwrap()));
        let c = parse(
            "[resolver]\nrecursion = true\nroot_hints = \"root.hints\"\n\
             forward = [\"corp.=127.0.0.1:5300\"]\nallow = [\"::1\", \"10.0.0.0/9\"]\n\
             cache_size = 1000000\nmin_ttl = 5\nmax_ttl = 60\nupstream_port = 5301\n",
        )
        .unwrap();
        let r = &c.resolver;
        assert!(r.recursion);
        assert_eq!(
            r.root_hints.as_deref(),
            Some(Path::new("/etc/shardns/root.hints"))
        );
        assert_eq!(r.forward[0].zone.to_string(), "corp.");
        assert_eq!(r.forward[0].server, "127.0.0.1:5300".parse().unwrap());
        assert!(r.allow[1].contains("10.127.0.1".parse().unwrap()));
        assert!(!r.allow[1].contains("10.128.0.1".parse().unwrap()));
        assert!(!r.allow[0].contains("127.0.0.1".parse().unwrap()));
        assert_eq!(
            (r.cache_size, r.min_ttl, r.max_ttl, r.upstream_port),
            (1_000_000, 5, 60, 5301)
        );
        let e = parse("[resolver]\nallow = [\"10.0.0.0/33\"]\n").unwrap_err();
        assert!(e.to_string().contains("resolver.allow"), "{e}");
        let e = parse("[resolver]\nforward = [\"corp.\"]\n").unwrap_err();
        assert!(e.to_string().contains("ZONE=ADDR:PORT"), "{e}");
    }

    #[test]
    fn example_file_shows_the_defaults() {
        let c = parse(include_str!("../../../docs/shardns.example.toml")).unwrap();
        let d = Config::default();
        assert_eq!(c.limits, d.limits);
        assert_eq!(c.rrl, d.rrl);
        assert_eq!(c.log.queries, d.log.queries);
        assert_eq!(c.resolver, d.resolver);
        assert_eq!(c.listen_addrs(), default_listen());
    }

    #[test]
    fn rrl_table() {
        let c = parse("").unwrap();
        assert!(!c.rrl.enabled);
        assert_eq!((c.rrl.rate, c.rrl.slip, c.rrl.window), (20, 2, 2));
        assert_eq!((c.rrl.ipv4_prefix, c.rrl.ipv6_prefix), (24, 56));
        let c = parse(
            "[rrl]\nenabled = true\nrate = 5\nslip = 0\nwindow = 15\nipv4_prefix = 32\n\
             ipv6_prefix = 64\ntable_size = 1000\n",
        )
        .unwrap();
        let r = &c.rrl;
        assert!(r.enabled);
        assert_eq!(
            (
                r.rate,
                r.slip,
                r.window,
                r.ipv4_prefix,
                r.ipv6_prefix,
                r.table_size
            ),
            (5, 0, 15, 32, 64, 1000)
        );
        for (text, key, line) in [
            ("[rrl]\nrate = 0\n", "rrl.rate", 2),
            ("[rrl]\nenabled = true\n\nslip = 11\n", "rrl.slip", 4),
            ("[rrl]\nwindow = 0\n", "rrl.window", 2),
            ("[rrl]\nipv4_prefix = 33\n", "rrl.ipv4_prefix", 2),
            ("[rrl]\nipv6_prefix = 129\n", "rrl.ipv6_prefix", 2),
            ("[rrl]\ntable_size = 2\n", "rrl.table_size", 2),
            ("[rrl]\nrate = \"fast\"\n", "rrl.rate", 2),
            ("[rrl]\nburst = 3\n", "rrl.burst", 2),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.position.map(|p| p.0), Some(line), "{text}: {e}");
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
        let e = parse("[rrl]\nslip = 11\n").unwrap_err();
        assert!(e.to_string().contains("11 is not between 0 and 10"), "{e}");
        let mut c = parse("[rrl]\nrate = 5\n").unwrap();
        c.apply(&Overrides {
            rrl_slip: Some(1),
            ..Overrides::default()
        });
        assert!(!c.rrl.enabled);
        assert_eq!((c.rrl.rate, c.rrl.slip), (5, 1));
        c.apply(&Overrides {
            rrl_rate: Some(100),
            ..Overrides::default()
        });
        assert!(c.rrl.enabled);
        assert_eq!(c.rrl.rate, 100);
    }

    #[test]
    fn new_limits_and_resolver_bounds() {
        let c = parse("").unwrap();
        let l = &c.limits;
        assert_eq!(
            (
                l.udp_max_response,
                l.tcp_connections_per_client,
                l.tcp_read_timeout_ms,
                l.tcp_queries_per_connection
            ),
            (1232, 128, 3000, 0)
        );
        // The resolver's own defaults are ours.
        let d = shardns_resolver::Config::default();
        let r = &c.resolver;
        assert_eq!(r.max_depth, d.max_depth);
        assert_eq!(r.max_upstream_queries, d.max_queries);
        assert_eq!(r.max_referrals, d.max_referrals);
        assert_eq!(r.max_cname_chain, d.max_chain);
        assert_eq!(r.resolution_timeout_ms, d.max_resolution_ms);
        assert_eq!(r.cache_size, d.cache_bytes);
        assert_eq!(r.server_hold_after, d.server_hold_after);
        assert_eq!(r.server_hold_ms, d.server_hold_ms);
        assert_eq!(r.server_hold_max_ms, d.server_hold_max_ms);
        let c = parse(
            "[limits]\nudp_max_response = 512\ntcp_connections_per_client = 0\n\
             tcp_read_timeout_ms = 250\ntcp_queries_per_connection = 7\n\
             [resolver]\nmax_depth = 2\nmax_upstream_queries = 9\nmax_referrals = 3\n\
             max_cname_chain = 4\nresolution_timeout_ms = 500\nmax_pending = 6\n",
        )
        .unwrap();
        let (l, r) = (&c.limits, &c.resolver);
        assert_eq!(
            (
                l.udp_max_response,
                l.tcp_connections_per_client,
                l.tcp_read_timeout_ms,
                l.tcp_queries_per_connection
            ),
            (512, 0, 250, 7)
        );
        assert_eq!(
            (
                r.max_depth,
                r.max_upstream_queries,
                r.max_referrals,
                r.max_cname_chain,
                r.resolution_timeout_ms,
                r.max_pending
            ),
            (2, 9, 3, 4, 500, 6)
        );
        for (text, key) in [
            (
                "[limits]\nudp_max_response = 4096\n",
                "limits.udp_max_response",
            ),
            (
                "[limits]\nudp_max_response = 100\n",
                "limits.udp_max_response",
            ),
            (
                "[limits]\ntcp_read_timeout_ms = 0\n",
                "limits.tcp_read_timeout_ms",
            ),
            (
                "[limits]\ntcp_connections_per_client = 70000\n",
                "limits.tcp_connections_per_client",
            ),
            ("[resolver]\nmax_depth = 0\n", "resolver.max_depth"),
            ("[resolver]\nmax_pending = 0\n", "resolver.max_pending"),
            (
                "[resolver]\nmax_upstream_queries = 0\n",
                "resolver.max_upstream_queries",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.position.map(|p| p.0), Some(2), "{text}: {e}");
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
        let mut c = parse("").unwrap();
        c.apply(&Overrides {
            tcp_connections_per_client: Some(3),
            tcp_read_timeout_ms: Some(100),
            tcp_queries_per_connection: Some(2),
            ..Overrides::default()
        });
        assert_eq!(c.limits.tcp_connections_per_client, 3);
        assert_eq!(c.limits.tcp_read_timeout_ms, 100);
        assert_eq!(c.limits.tcp_queries_per_connection, 2);
    }

    #[test]
    fn zone_flag_syntax() {
        let z: ZoneConfig = "example.test=path/to/zone".parse().unwrap();
        assert_eq!(z.name.to_string(), "example.test.");
        assert_eq!(z.file, PathBuf::from("path/to/zone"));
        assert!("example.test".parse::<ZoneConfig>().is_err());
        assert!("example.test=".parse::<ZoneConfig>().is_err());
        assert!("a..b=x".parse::<ZoneConfig>().is_err());
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("ab\ncd", 99), (2, 3));
    }
}
