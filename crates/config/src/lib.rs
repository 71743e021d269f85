//! shardns-config: what the server is told to do: the configuration's types and defaults, and the
//! answers derived from them (listen addresses, worker count, control socket path, a zone's
//! transfer ACL, key and NOTIFY targets).
//!
//! Owns the `[server]`, `[[zone]]`, `[limits]`, `[log]` and `[stats]` tables and [`Config`]
//! itself; the other tables and the ways in have rooms of their own:
//!
//! - `file`: reading and parsing the TOML file ([`Config::from_toml`]), [`ConfigError`] with
//!   file, line, column and key (`shardns.toml:4:11: server.workers: ...`), relative paths
//!   taken relative to the file's directory;
//! - `validate`: the checks on single values (ranges, names, prefixes) that run while a
//!   file is parsed, and the cross-references checked after (a transfer key names a
//!   `[[key]]`);
//! - `control_socket`: where the control socket is when none is configured
//!   (`shardns-ADDR-PORT.ctl`, named after the first listen address);
//! - `overrides`: command-line values ([`Overrides`]) and how they apply over the file;
//! - `resolver`, `rrl`, `keys`, `keystore`, `acl`: the `[resolver]`, `[rrl]`, `[[key]]` and
//!   `[[keystore]]` tables and the address prefixes of the ACLs; `catalog`: a zone's
//!   catalog role; `rpz`: the `[[resolver.rpz]]` response policy zones; `parent`: where
//!   a zone's DS check finds the parent's servers (`parent_agents`, `parent_resolvers`).
//!
//! Documented for operators in `docs/CONFIG.md`; `docs/shardns.example.toml` shows every key.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod acl;
mod catalog;
mod control_socket;
mod dnstap;
mod file;
mod keys;
pub mod keystore;
mod limits;
pub mod local;
pub mod log_filter;
mod notify_index;
mod overrides;
mod parent;
mod policy;
mod resolver;
mod rpz;
mod rrl;
#[cfg(test)]
mod tests;
mod tls;
mod validate;

pub use acl::AclEntry;
pub use catalog::CatalogRole;
pub use dnstap::DnstapConfig;
pub use file::ConfigError;
pub use keys::KeyConfig;
pub use limits::Limits;
pub use notify_index::NotifyIndex;
pub use overrides::{Overrides, SecondaryFlag};
pub use parent::ParentAgents;
pub use resolver::{ForwardZone, ResolverConfig};
pub use rpz::{PolicyOverride, RpzConfig};
pub use rrl::RrlConfig;
pub use tls::{PrimaryTls, TlsCheck};

pub use validate::signing as check_signing;
pub use validate::{parse_cookie_secret, parse_duration};

/// Longest NSID payload accepted in the configuration.
pub const NSID_MAX: usize = 128;

use serde::Deserialize;
use shardns_wire::Name;
pub use shardns_zone::update::{Policy, SerialPolicy};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use validate::{
    cds_digest, cds_publish, cookie_secrets, duration, duration_opt, from_strs, from_strs_opt,
    log_filter, name, name_opt, nsid, positive_opt, serial_policy, sign_algorithm, zonefile_sync,
};

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
    /// `[dnstap]`: the dnstap log of queries and responses (off by default).
    pub dnstap: DnstapConfig,
    /// `[[template]]` tables: how the member zones of a consumed catalog are set up.
    #[serde(rename = "template")]
    pub templates: Vec<TemplateConfig>,
    /// `[[keystore]]` tables: PKCS#11 tokens that zones keep their DNSSEC keys on.
    #[serde(rename = "keystore")]
    pub keystores: Vec<keystore::KeystoreConfig>,
}

/// One `[[template]]`: the settings of the member zones a catalog zone (RFC 9432) brings,
/// picked by the member's `group` property (a template of the same name), else the first
/// of the catalog's `catalog_templates`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TemplateConfig {
    /// The template's name (a group name in the catalog picks it).
    pub name: String,
    /// Primaries of the member zones (absent: the catalog zone's).
    #[serde(default)]
    pub primary: Vec<SocketAddr>,
    /// The `[[key]]` of their transfers (absent: the catalog zone's `primary_key`).
    #[serde(default, deserialize_with = "name_opt")]
    pub primary_key: Option<Name>,
    /// Transfers from them over TLS (absent: the catalog zone's `primary_tls`).
    #[serde(default)]
    pub primary_tls: Option<PrimaryTls>,
    /// Where each member keeps its copy, `{zone}` standing for the member's name without
    /// the final dot (absent: in memory only).
    #[serde(default)]
    pub file: Option<String>,
    /// Clients whose updates to the member zones are passed on to the members' primaries,
    /// as `[[zone]] update_forwarding` does for a configured secondary zone (`true`:
    /// everyone; `false` or absent: nobody, REFUSED).
    #[serde(default, deserialize_with = "acl::forwarding")]
    pub update_forwarding: Vec<AclEntry>,
}

/// `[server]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Addresses to serve UDP and TCP on (empty: 127.0.0.1:5353 and `[::1]:5353`).
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
    /// Proxies (`ADDR` or `ADDR/LEN`) whose UDP datagrams and TCP, TLS and HTTPS connections
    /// start with a PROXY protocol v2 header naming the real client (dnsdist's
    /// `useProxyProtocol`, HAProxy's `send-proxy-v2`). Empty: none.
    #[serde(deserialize_with = "from_strs")]
    pub proxy_protocol_from: Vec<AclEntry>,
    /// Secondaries (`"ADDR:PORT"`) told by NOTIFY (RFC 1996) when a zone that has no
    /// `notify` of its own gets a new serial, and at startup. Empty: none.
    pub notify: Vec<SocketAddr>,
    /// The `[[key]]` a transfer must be signed with (TSIG), for zones that name none of
    /// their own (absent: address only).
    #[serde(deserialize_with = "name_opt")]
    pub transfer_key: Option<Name>,
    /// A file listing zones, one per line: `NAME FILE` (FILE relative to the list's own
    /// directory; `#` starts a comment). Read at start and at every reload, beside the
    /// `[[zone]]` tables: the form for very many zones. Listed zones take the server's
    /// `allow_transfer`, `notify` and `transfer_key`; a `[[zone]]` of the same name wins.
    pub zone_list: Option<PathBuf>,
    /// The directory of the DNSSEC keys of the zones with `dnssec = true` (BIND's
    /// `K<zone>+<alg>+<tag>.key`/`.private` files; absent: no zone may be signed). The flag
    /// `--key-dir DIR` sets it.
    pub key_directory: Option<PathBuf>,
    /// Addresses to serve DNS over TLS on (RFC 7858; port 853 is the standard one). Empty:
    /// none. Needs `tls_certificate` and `tls_key`.
    pub tls_listen: Vec<SocketAddr>,
    /// Addresses to serve DNS over QUIC on (RFC 9250; UDP port 853 is the standard one).
    /// Empty: none. Needs `tls_certificate` and `tls_key` (the same certificate as DoT).
    pub quic_listen: Vec<SocketAddr>,
    /// Addresses to serve DNS over HTTPS on (RFC 8484, HTTP/2, path `/dns-query`; TCP port
    /// 443 is the standard one). Empty: none. Needs `tls_certificate` and `tls_key` (the
    /// same certificate as DoT).
    pub https_listen: Vec<SocketAddr>,
    /// The certificate chain for DNS over TLS, PEM (the server's certificate first). Read
    /// again at every reload (SIGHUP): new connections use the new one.
    pub tls_certificate: Option<PathBuf>,
    /// The private key of `tls_certificate`, PEM (PKCS #8, SEC1 or PKCS #1).
    pub tls_key: Option<PathBuf>,
    /// The name server identifier returned to queries that carry an empty NSID option (RFC
    /// 5001), at most 128 octets. Absent: no NSID.
    #[serde(deserialize_with = "nsid")]
    pub nsid: Option<String>,
    /// DNS cookies (RFC 7873, RFC 9018 server cookies). Absent: on.
    pub cookies: Option<bool>,
    /// Cookie secrets, 32 hexadecimal digits each: the first makes server cookies, every
    /// one verifies them (rotation: add the new one, reload, move it first, reload, remove
    /// the old one). Empty: a random secret made at start (one server, not an anycast set).
    #[serde(deserialize_with = "cookie_secrets")]
    pub cookie_secrets: Vec<String>,
    /// Where zone journals are kept, one file per zone named after it (absent: next to
    /// each zone file, as `FILE.journal`; a zone without a file keeps its journal in
    /// memory only).
    pub journal_directory: Option<PathBuf>,
    /// Octets a zone's journal may hold, for zones that set none (absent: 20 MiB).
    pub journal_max_size: Option<u64>,
    /// Versions a zone's journal reaches back, for zones that set none (absent: 20; 0: no
    /// journal).
    pub journal_max_depth: Option<u32>,
}

/// One `[[zone]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ZoneConfig {
    /// The apex, e.g. `example.com.` (a missing final dot is implied).
    #[serde(deserialize_with = "name")]
    pub name: Name,
    /// The zone file; for a secondary zone, where it keeps its copy (absent: in memory only).
    #[serde(default)]
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
    /// Primaries (`"ADDR:PORT"`) this zone is transferred from, tried in turn: set, the
    /// zone is a secondary zone (empty: a primary zone, read from its file).
    #[serde(default)]
    pub primary: Vec<SocketAddr>,
    /// The `[[key]]` the secondary signs its SOA queries and transfers with, and that a
    /// NOTIFY from a primary must carry (absent: address only).
    #[serde(default, deserialize_with = "name_opt")]
    pub primary_key: Option<Name>,
    /// The SOA queries and transfers go over TLS (XoT, RFC 9103) to the primaries, whose
    /// certificate is checked so (absent: UDP and TCP).
    #[serde(default)]
    pub primary_tls: Option<PrimaryTls>,
    /// Octets this zone's journal may hold (absent: `server.journal_max_size`).
    #[serde(default)]
    pub journal_max_size: Option<u64>,
    /// Versions this zone's journal reaches back (absent: `server.journal_max_depth`; 0:
    /// no journal).
    #[serde(default)]
    pub journal_max_depth: Option<u32>,
    /// Sign the zone when it is loaded, and again before its signatures expire (DNSSEC),
    /// with the keys in `server.key_directory`. The keys below apply only with it.
    #[serde(default)]
    pub dnssec: bool,
    /// The `[[keystore]]` the zone's keys are made on and used from (absent: key files).
    #[serde(default)]
    pub keystore: Option<String>,
    /// Deny existence with NSEC3 (RFC 5155; RFC 9276's 0 extra iterations and no salt)
    /// instead of NSEC.
    #[serde(default)]
    pub nsec3: bool,
    /// NSEC3 opt-out (RFC 5155 §6): unsigned delegations get no NSEC3 of their own (implies
    /// `nsec3`).
    #[serde(default)]
    pub nsec3_opt_out: bool,
    /// The algorithm of the keys made for the zone (`ecdsap256sha256`, the default,
    /// `ecdsap384sha384`, `ed25519`, `rsasha256` or `rsasha512`). Changed on a zone whose
    /// keys sign with another algorithm, it starts an algorithm rollover (RFC 6781 §4.1.4).
    #[serde(
        default = "policy::default_algorithm",
        deserialize_with = "sign_algorithm"
    )]
    pub algorithm: shardns_dnssec::Algorithm,
    /// Seconds a signature is valid for (`"14d"`, `"36h"`, `"90m"`, `"30s"` or an integer;
    /// default 14 days, as Knot).
    #[serde(default = "policy::default_validity", deserialize_with = "duration")]
    pub signature_validity: u32,
    /// Signatures are made anew this long before the earliest one expires (default 7 days,
    /// as Knot; less than `signature_validity`).
    #[serde(default = "policy::default_refresh", deserialize_with = "duration")]
    pub signature_refresh: u32,
    /// A ZSK is replaced by a new one (pre-publication rollover) this long after it became
    /// active; absent: only by hand (`shardns key rollover ZONE --zsk`). A zone signed by
    /// a CSK has no ZSK: this does not apply.
    #[serde(default, deserialize_with = "duration_opt")]
    pub zsk_lifetime: Option<u32>,
    /// The keys made here: one CSK (`true`, the default) or a KSK and a ZSK (Knot's
    /// `single-type-signing`, whose default is `false`); changed on a signed zone, its keys
    /// roll to the other shape.
    #[serde(default = "policy::yes")]
    pub single_type_signing: bool,
    /// A KSK (or CSK) rollover starts this long after the key became active; absent: only
    /// by hand. The parent's DS is confirmed by hand (`shardns key submitted`), or by the
    /// DS check (`parent_agents`, `ds_push`).
    #[serde(default, deserialize_with = "duration_opt")]
    pub ksk_lifetime: Option<u32>,
    /// Bits of a KSK or CSK, and of a ZSK, made here with an RSA `algorithm` (2048, 3072
    /// or 4096; absent: 2048).
    #[serde(default)]
    pub ksk_size: Option<u32>,
    /// Bits of a ZSK made here with an RSA `algorithm` (as `ksk_size`).
    #[serde(default)]
    pub zsk_size: Option<u32>,
    /// Each signature expires up to this long before `signature_validity` ends (random
    /// per RRset, BIND's `signatures-jitter`; default 0).
    #[serde(default, deserialize_with = "policy::duration_or_zero")]
    pub signature_jitter: u32,
    /// The TTL of DNSKEY, CDS and CDNSKEY, which rollovers wait on (absent: the SOA's).
    #[serde(default, deserialize_with = "duration_opt")]
    pub dnskey_ttl: Option<u32>,
    /// How long a new version of the zone takes to reach every server of the zone
    /// (secondaries included); rollovers wait for it (default 1 hour).
    #[serde(default = "policy::default_hour", deserialize_with = "duration")]
    pub propagation_delay: u32,
    /// The TTL of the zone's DS RRset at the parent (default 1 day).
    #[serde(default = "policy::default_day", deserialize_with = "duration")]
    pub parent_ds_ttl: u32,
    /// How long a DS change takes to reach every server of the parent (default 1 hour).
    #[serde(default = "policy::default_hour", deserialize_with = "duration")]
    pub parent_propagation_delay: u32,
    /// Which CDS and CDNSKEY records the apex carries for the parent (Knot's
    /// `cds-cdnskey-publish`): `"rollover"` (the default: during a KSK/CSK rollover only),
    /// `"none"`, `"always"`, `"double-ds"`, or `"delete-dnssec"` (the RFC 8078 delete
    /// form: the parent is asked to remove the DS, the first step to go insecure).
    #[serde(default, deserialize_with = "cds_publish")]
    pub cds_cdnskey_publish: shardns_dnssec::CdsPublish,
    /// The CDS digest (Knot's `cds-digest-type`): `"sha256"` (the default) or `"sha384"`.
    #[serde(
        default = "policy::default_cds_digest",
        deserialize_with = "cds_digest"
    )]
    pub cds_digest_type: shardns_dnssec::DigestType,
    /// The KSK is offline (Knot's `offline-ksk`): ZSKs only here, key RRsets from the SKR.
    #[serde(default)]
    pub offline_ksk: bool,
    /// Knot's `dnskey-management`: `"full"` (default) or `"incremental"` (multi-signer).
    #[serde(default, deserialize_with = "validate::dnskey_management")]
    pub dnskey_management: shardns_dnssec::DnskeyManagement,
    /// The parent's servers asked for the zone's DS while a KSK or CSK rollover waits for
    /// it (`"ADDR:PORT"`, or `"ADDR"` for port 53; Knot's `parent`, BIND's
    /// `parental-agents`), or `"resolve"`: the parent zone's NS set, looked up through
    /// `parent_resolvers` at each check. Once all serve it, the rollover goes on by itself.
    /// Empty: none (`shardns key submitted`), or `ds_push`'s server if set.
    #[serde(default, deserialize_with = "parent::agents")]
    pub parent_agents: ParentAgents,
    /// With `parent_agents = "resolve"`: the recursive resolvers asked for the parent's
    /// zone, NS set and addresses (`"ADDR:PORT"` or `"ADDR"`; in turn, the next on a failure).
    #[serde(default, deserialize_with = "validate::agents")]
    pub parent_resolvers: Vec<SocketAddr>,
    /// The `[[key]]` that signs the DS queries to `parent_agents` (absent: unsigned).
    #[serde(default, deserialize_with = "name_opt")]
    pub parent_agents_key: Option<Name>,
    /// How often the parent's servers are asked (Knot's `check-interval`; default 1 h).
    #[serde(default = "policy::default_hour", deserialize_with = "duration")]
    pub ds_check_interval: u32,
    /// The parent's primary the DS set is pushed to by dynamic update (RFC 2136, Knot's
    /// `ds-push`; `"ADDR:PORT"` or `"ADDR"`), signed with `ds_push_key` (absent: no push).
    #[serde(default, deserialize_with = "validate::agent_opt")]
    pub ds_push: Option<SocketAddr>,
    /// The `[[key]]` that signs the DS push.
    #[serde(default, deserialize_with = "name_opt")]
    pub ds_push_key: Option<Name>,
    /// `"consume"`: this secondary zone is a catalog whose members become secondary zones;
    /// `"produce"`: this zone is a catalog generated from the zones naming it in
    /// `catalog_member` (no `file`, no `primary`).
    #[serde(default)]
    pub catalog: Option<CatalogRole>,
    /// Consumer: the `[[template]]` names members are set up with (the first by default, the
    /// one named like a member's group for that member).
    #[serde(default)]
    pub catalog_templates: Vec<String>,
    /// The produced catalog (a zone with `catalog = "produce"`) this zone is a member of.
    #[serde(default, deserialize_with = "name_opt")]
    pub catalog_member: Option<Name>,
    /// The `group` property this zone gets in that catalog.
    #[serde(default)]
    pub catalog_group: Option<String>,
    /// Who may change the zone by dynamic update (RFC 2136): one policy line a string
    /// (`grant|deny WHO MATCH [NAME] TYPE...`, `max-records N`, `max-octets N`; read by
    /// `shardns_zone::update::Policy::parse`, checked when the config is read). Not empty:
    /// the zone always has a journal, in memory and on disk, which is replayed over the
    /// zone file at start (docs/CONFIG.md, "Dynamic update and the journal").
    #[serde(default)]
    pub update_policy: Vec<String>,
    /// How an update moves the serial: `"increment"` (the default), `"unixtime"` or
    /// `"dateserial"` (Knot's `serial-policy`).
    #[serde(default, deserialize_with = "serial_policy")]
    pub serial_policy: SerialPolicy,
    /// Seconds after an update before the zone file is written with it (Knot's
    /// `zonefile-sync`; `0`: after each batch of updates; `"never"`: only the journal keeps
    /// updates; default 60 s). Never over a file edited since it was read.
    #[serde(default = "policy::default_sync", deserialize_with = "zonefile_sync")]
    pub zonefile_sync: Option<u32>,
    /// A secondary zone: the clients (address prefixes) whose updates are forwarded to the
    /// zone's primary, unchanged, the answer relayed back (BIND's `allow-update-forwarding`);
    /// `true` is everyone, `false` or absent nobody: such updates are REFUSED.
    #[serde(default, deserialize_with = "acl::forwarding")]
    pub update_forwarding: Vec<AclEntry>,
}

impl ZoneConfig {
    /// True for a secondary zone (one with primaries).
    pub fn is_secondary(&self) -> bool {
        !self.primary.is_empty()
    }

    /// A zone at `name` read from `file`.
    pub fn new(name: Name, file: PathBuf) -> Self {
        Self {
            name,
            file,
            allow_transfer: None,
            notify: None,
            transfer_key: None,
            primary: Vec::new(),
            primary_key: None,
            primary_tls: None,
            dnssec: false,
            keystore: None,
            nsec3: false,
            nsec3_opt_out: false,
            algorithm: policy::default_algorithm(),
            signature_validity: policy::default_validity(),
            signature_refresh: policy::default_refresh(),
            zsk_lifetime: None,
            single_type_signing: true,
            ksk_lifetime: None,
            ksk_size: None,
            zsk_size: None,
            signature_jitter: 0,
            dnskey_ttl: None,
            propagation_delay: policy::default_hour(),
            parent_ds_ttl: policy::default_day(),
            parent_propagation_delay: policy::default_hour(),
            cds_cdnskey_publish: shardns_dnssec::CdsPublish::default(),
            cds_digest_type: policy::default_cds_digest(),
            offline_ksk: false,
            dnskey_management: Default::default(),
            parent_agents: ParentAgents::default(),
            parent_resolvers: Vec::new(),
            parent_agents_key: None,
            ds_check_interval: policy::default_hour(),
            ds_push: None,
            ds_push_key: None,
            journal_max_size: None,
            journal_max_depth: None,
            zonefile_sync: policy::default_sync(),
            catalog: None,
            catalog_templates: Vec::new(),
            catalog_member: None,
            catalog_group: None,
            update_policy: Vec::new(),
            update_forwarding: Vec::new(),
            serial_policy: SerialPolicy::default(),
        }
    }

    /// True if the zone may be changed by dynamic update (its `update_policy` is not
    /// empty): it always has a journal.
    pub fn updatable(&self) -> bool {
        !self.update_policy.is_empty()
    }

    /// The zone's update policy, its lines read as one text (`Err`: the first bad line,
    /// numbered within `update_policy`, 1 for its first entry).
    pub fn policy(&self) -> Result<Policy, String> {
        Policy::parse(&self.update_policy.join("\n"), self.name.as_ref())
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

impl Config {
    /// The `[[zone]]` table of the zone at `apex`, if the config has one.
    fn zone(&self, apex: &Name) -> Option<&ZoneConfig> {
        self.zones.iter().find(|z| &z.name == apex)
    }

    /// The `[[zone]]` table of the zone at `apex`: the last one, when several name it (a
    /// later table for the same apex wins, as for the transfer ACL and the journal).
    pub fn zone_table(&self, apex: &Name) -> Option<&ZoneConfig> {
        self.zones.iter().rev().find(|z| &z.name == apex)
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

    /// The control socket: as configured, else `shardns-ADDR-PORT.ctl` named after the first
    /// listen address, in `$XDG_RUNTIME_DIR`, else `/run/shardns` for root, else
    /// `/tmp/shardns-UID` (hashed when too long for a socket address; see
    /// `control_socket::default_path`).
    pub fn control_socket_path(&self) -> PathBuf {
        if let Some(p) = &self.server.control_socket {
            return p.clone();
        }
        let first = self.listen_addrs().first().copied();
        let listen = first.unwrap_or_else(|| default_listen()[0]);
        let fallback = control_socket::tmp_dir(shardns_sys::effective_uid());
        control_socket::default_path(&control_socket::default_dir(), &fallback, listen)
    }

    /// What the server will not do as configured, though it serves (one line each, for
    /// `shardns check` and the log at start and reload).
    pub fn warnings(&self) -> Vec<String> {
        policy::warnings(self)
    }

    /// Whether the control socket is the default one, in a directory the server makes
    /// private or checks is (not one the configuration names).
    pub fn control_socket_is_default(&self) -> bool {
        self.server.control_socket.is_none()
    }
}
