//! config::overrides -- values from the command line and how they apply over the file's.

use super::{AclEntry, Config, ForwardZone, KeyConfig, ZoneConfig};
use shardns_wire::tsig::Key;
use shardns_wire::Name;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

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
    /// `--trust-anchor`: replaces the built-in root anchors.
    pub trust_anchor: Option<PathBuf>,
    /// `--no-validation`: turns DNSSEC validation off.
    pub no_validation: bool,
    /// `--forward`: added to `resolver.forward`.
    pub forward: Vec<ForwardZone>,
    /// `--allow-recursion`: replaces `resolver.allow`.
    pub allow: Vec<AclEntry>,
    /// `--upstream-port`.
    pub upstream_port: Option<u16>,
    /// `--local-zone`: added to `resolver.local_zone`.
    pub local_zone: Vec<crate::local::LocalZone>,
    /// `--allow-loopback-upstreams`: sets `resolver.allow_loopback_upstreams`.
    pub allow_loopback_upstreams: bool,
    /// `--xdp`: sets `server.xdp_interface`.
    pub xdp_interface: Option<String>,
    /// `--zone-list`: sets `server.zone_list`.
    pub zone_list: Option<PathBuf>,
    /// `--allow-transfer`: added to `server.allow_transfer`.
    pub allow_transfer: Vec<AclEntry>,
    /// `--notify`: added to `server.notify`.
    pub notify: Vec<SocketAddr>,
    /// `--transfer-key ALG:NAME:SECRET`: a key added to `[[key]]` and made
    /// `server.transfer_key`.
    pub transfer_key: Option<Key>,
    /// `--update-key ALG:NAME:SECRET` (repeatable): a key added to `[[key]]` that may
    /// update every zone given with `--zone` (a `grant NAME zone ANY` line first in each
    /// one's `update_policy`).
    pub update_keys: Vec<Key>,
    /// `--sign`: every `--zone` given is signed (`dnssec = true`).
    pub sign: bool,
    /// `--key-dir`: sets `server.key_directory`.
    pub key_directory: Option<PathBuf>,
    /// `--secondary NAME=ADDR:PORT`: a primary added to the zone NAME (made a secondary
    /// zone, kept in memory unless a `[[zone]]` or `--zone` of that name gives its file).
    pub secondaries: Vec<SecondaryFlag>,
    /// `--tls-listen`: added to `server.tls_listen`.
    pub tls_listen: Vec<SocketAddr>,
    /// `--quic-listen`: added to `server.quic_listen`.
    pub quic_listen: Vec<SocketAddr>,
    /// `--https-listen`: added to `server.https_listen`.
    pub https_listen: Vec<SocketAddr>,
    /// `--tls-cert`: sets `server.tls_certificate`.
    pub tls_certificate: Option<PathBuf>,
    /// `--tls-key`: sets `server.tls_key`.
    pub tls_key: Option<PathBuf>,
    /// `--dnstap-socket`: sets `dnstap.socket` (and clears `dnstap.file`).
    pub dnstap_socket: Option<PathBuf>,
    /// `--dnstap-file`: sets `dnstap.file` (and clears `dnstap.socket`).
    pub dnstap_file: Option<PathBuf>,
    /// `--nsid`: sets `server.nsid`.
    pub nsid: Option<String>,
}

/// One `--secondary NAME=ADDR:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecondaryFlag {
    /// The zone.
    pub name: Name,
    /// A primary to transfer it from.
    pub primary: SocketAddr,
}

impl FromStr for SecondaryFlag {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, addr) = s
            .split_once('=')
            .ok_or_else(|| format!("expected NAME=ADDR:PORT, got {s:?}"))?;
        let name = name
            .parse::<Name>()
            .map_err(|e| format!("bad zone name {name:?}: {e}"))?;
        let primary = addr
            .parse::<SocketAddr>()
            .map_err(|e| format!("bad primary {addr:?} (ADDR:PORT): {e}"))?;
        Ok(Self { name, primary })
    }
}

impl Config {
    /// Applies command-line values.
    pub fn apply(&mut self, o: &Overrides) {
        if !o.listen.is_empty() {
            self.server.listen = o.listen.clone();
        }
        for z in &o.zones {
            self.zones.retain(|c| c.name != z.name);
            let mut z = z.clone();
            z.dnssec |= o.sign;
            let grants = o
                .update_keys
                .iter()
                .map(|k| format!("grant {} zone ANY", k.name));
            z.update_policy.splice(0..0, grants);
            self.zones.push(z);
        }
        for k in &o.update_keys {
            self.keys.retain(|c| c.0.name != k.name);
            self.keys.push(KeyConfig(k.clone()));
        }
        if o.key_directory.is_some() {
            self.server.key_directory = o.key_directory.clone();
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
        if o.trust_anchor.is_some() {
            self.resolver.trust_anchor = o.trust_anchor.clone();
        }
        if o.no_validation {
            self.resolver.validation = false;
        }
        self.resolver.forward.extend(o.forward.iter().cloned());
        if !o.allow.is_empty() {
            self.resolver.allow = o.allow.clone();
        }
        if let Some(p) = o.upstream_port {
            self.resolver.upstream_port = p;
        }
        self.resolver
            .local_zone
            .extend(o.local_zone.iter().cloned());
        if o.allow_loopback_upstreams {
            self.resolver.allow_loopback_upstreams = true;
        }
        if o.zone_list.is_some() {
            self.server.zone_list = o.zone_list.clone();
        }
        if o.xdp_interface.is_some() {
            self.server.xdp_interface = o.xdp_interface.clone();
        }
        self.server
            .allow_transfer
            .extend(o.allow_transfer.iter().copied());
        self.server.notify.extend(o.notify.iter().copied());
        for flag in &o.secondaries {
            match self.zones.iter_mut().find(|z| z.name == flag.name) {
                Some(z) if z.primary.contains(&flag.primary) => {}
                Some(z) => z.primary.push(flag.primary),
                None => {
                    let mut z = ZoneConfig::new(flag.name.clone(), PathBuf::new());
                    z.primary.push(flag.primary);
                    self.zones.push(z);
                }
            }
        }
        self.server.tls_listen.extend(o.tls_listen.iter().copied());
        self.server
            .quic_listen
            .extend(o.quic_listen.iter().copied());
        self.server
            .https_listen
            .extend(o.https_listen.iter().copied());
        if o.tls_certificate.is_some() {
            self.server.tls_certificate = o.tls_certificate.clone();
        }
        if o.tls_key.is_some() {
            self.server.tls_key = o.tls_key.clone();
        }
        if o.nsid.is_some() {
            self.server.nsid = o.nsid.clone();
        }
        if o.dnstap_socket.is_some() {
            self.dnstap.socket = o.dnstap_socket.clone();
            self.dnstap.file = None;
        }
        if o.dnstap_file.is_some() {
            self.dnstap.file = o.dnstap_file.clone();
            self.dnstap.socket = None;
        }
        if let Some(k) = &o.transfer_key {
            self.keys.retain(|c| c.0.name != k.name);
            self.keys.push(KeyConfig(k.clone()));
            self.server.transfer_key = Some(k.name.clone());
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
