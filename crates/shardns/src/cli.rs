//! The command line: one flag table; clap generates `--help` from it.
// The doc comments below are clap's --help text, not rustdoc Markdown: `[::1]:53` is an address.
#![allow(rustdoc::broken_intra_doc_links)]

use shardns_server::TsigKey as Key;
use shardns_server::{
    AclEntry, ForwardZone, LocalZone, Overrides, SecondaryFlag, Setup, ZoneConfig,
};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `shardns --version`: the package version and the commit it was built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SHARDNS_COMMIT"),
    ")"
);

const ABOUT: &str = "An authoritative DNS name server built from share-nothing workers.";

const LONG_ABOUT: &str = "\
An authoritative DNS name server built from share-nothing workers.

Each worker thread owns its own UDP sockets and TCP listeners (SO_REUSEPORT), reads and
answers queries itself and keeps its own statistics; workers share only the immutable zone
data, which a reload replaces atomically without pausing them.

With no command (or `shardns serve` with no flags) it serves the bundled example zone
`example.test.` on 127.0.0.1 and ::1, port 5353, one worker per core. Try:

    shardns serve &
    dig @127.0.0.1 -p 5353 www.example.test A";

const AFTER_HELP: &str = "\
Signals: SIGHUP reloads the zones (as `shardns reload` does), SIGTERM and SIGINT stop.
Configuration file reference: docs/CONFIG.md. Exit status: 0 success, 1 error, 2 usage.";

/// shardns command line.
#[derive(Debug, clap::Parser)]
#[command(name = "shardns", version = VERSION, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Serve DNS over UDP and TCP (the default command).
    #[command(long_about = "Serve DNS over UDP and TCP until SIGTERM or SIGINT.\n\n\
        Flags override the config file: --listen replaces its addresses, --zone adds to its \
        zones. Without any zone, the bundled example zone example.test. is served.")]
    Serve(ServeArgs),
    /// Load the configuration and every zone, report problems, and exit.
    Check(ServeArgs),
    /// Ask a running server to reload its config (if it changed) and the zones whose files
    /// changed (like SIGHUP), or only the zones named.
    Reload {
        #[command(flatten)]
        control: ControlArgs,
        /// Zones to read again, changed or not (default: every zone whose file changed).
        #[arg(value_name = "ZONE")]
        zones: Vec<String>,
    },
    /// Print a running server's statistics (Prometheus text format).
    Stats(ControlArgs),
    /// Ask a running server about its zones, or to refresh, retransfer or NOTIFY one.
    Zone {
        #[command(subcommand)]
        action: ZoneAction,
    },
    /// Show a zone's DNSSEC keys, or the DS records for its parent (no server needed).
    #[command(subcommand)]
    Key(KeyCommand),
    /// Sign a zone file once with the keys of a key directory, as the server signs a zone
    /// with `dnssec = true`, and write the signed zone to a file.
    Sign(SignArgs),
    /// Write the man pages (shardns(8), one per command, and shardns.toml(5)) into DIR: made
    /// from this command line's definitions and the annotated example configuration.
    #[command(hide = true)]
    Man {
        /// The directory to write the pages into (created if missing).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Measure a DNS server's performance (any server: ours or another).
    #[command(disable_help_flag = true)]
    Bench {
        /// Arguments for the benchmark, the shardns-bench binary (`shardns bench --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<OsString>,
    },
}

/// `shardns zone ...`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ZoneAction {
    /// Serial, role, last and next refresh, expiry, source and journal depth of each zone
    /// named (default: every zone).
    Status {
        #[command(flatten)]
        control: ControlArgs,
        #[arg(value_name = "ZONE")]
        zones: Vec<String>,
    },
    /// A secondary zone: ask its primaries for the SOA now, and transfer a newer version.
    Refresh {
        #[command(flatten)]
        control: ControlArgs,
        #[arg(value_name = "ZONE", required = true)]
        zones: Vec<String>,
    },
    /// A secondary zone: transfer the whole zone (AXFR) now, whatever the serials say.
    Retransfer {
        #[command(flatten)]
        control: ControlArgs,
        #[arg(value_name = "ZONE", required = true)]
        zones: Vec<String>,
    },
    /// Send a NOTIFY of the zone's current version to its secondaries now.
    Notify {
        #[command(flatten)]
        control: ControlArgs,
        #[arg(value_name = "ZONE", required = true)]
        zones: Vec<String>,
    },
    /// Write the zone's served version (changed by dynamic update) to its zone file now,
    /// unless the file was edited since it was read (Knot's `knotc zone-flush`).
    Flush {
        #[command(flatten)]
        control: ControlArgs,
        #[arg(value_name = "ZONE", required = true)]
        zones: Vec<String>,
    },
    /// Open a transaction on a primary zone (one per zone: a second is refused), to change
    /// it without editing its file, as knotc's zone-begin.
    Begin(ZoneTxn),
    /// Add a record to the open transaction: OWNER [TTL] TYPE RDATA..., as in a zone file
    /// (relative names, @), e.g. `www 300 A 192.0.2.1`.
    Set(ZoneRecord),
    /// Delete from the open transaction: OWNER (every RRset), OWNER TYPE (the RRset) or
    /// OWNER TYPE RDATA... (one record).
    Unset(ZoneRecord),
    /// Show the open transaction's changes (+ added, - deleted).
    Diff(ZoneTxn),
    /// Apply the open transaction as one dynamic update (checked, journaled, NOTIFY sent,
    /// signed) and wait for the result; a refused one changes nothing and stays open.
    Commit(ZoneTxn),
    /// Give up the open transaction.
    Abort(ZoneTxn),
}

/// `shardns zone begin|diff|commit|abort ZONE`.
#[derive(Debug, clap::Args)]
pub(crate) struct ZoneTxn {
    #[command(flatten)]
    pub(crate) control: ControlArgs,
    #[arg(value_name = "ZONE")]
    pub(crate) zone: String,
}

/// `shardns zone set|unset ZONE OWNER ...`.
#[derive(Debug, clap::Args)]
pub(crate) struct ZoneRecord {
    #[command(flatten)]
    pub(crate) control: ControlArgs,
    #[arg(value_name = "ZONE")]
    pub(crate) zone: String,
    #[arg(value_name = "OWNER")]
    pub(crate) owner: String,
    /// [TTL] TYPE RDATA... (set), [TYPE [RDATA...]] (unset).
    #[arg(
        value_name = "RECORD",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub(crate) record: Vec<String>,
}

/// Flags of `serve` and `check`.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct ServeArgs {
    /// TOML configuration file (see docs/CONFIG.md).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Address to serve UDP and TCP on, e.g. 127.0.0.1:53 or [::1]:53 (repeatable;
    /// replaces the config's; default 127.0.0.1:5353 and [::1]:5353).
    #[arg(short, long, value_name = "ADDR:PORT")]
    pub(crate) listen: Vec<SocketAddr>,
    /// A zone to serve, e.g. example.com=/var/lib/shardns/example.com.zone (repeatable;
    /// added to the config's zones).
    #[arg(short, long, value_name = "NAME=FILE")]
    pub(crate) zone: Vec<ZoneConfig>,
    /// A file listing zones, one `NAME FILE` per line (for very many zones; replaces the
    /// config's zone_list).
    #[arg(long, value_name = "FILE")]
    pub(crate) zone_list: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) workers: Option<u32>,
    /// Log filter: error, warn, info, debug, trace, or directives like
    /// "warn,shardns::query=info" (default: RUST_LOG, else the config's, else info).
    #[arg(long, value_name = "FILTER")]
    pub(crate) log_level: Option<String>,
    /// Log every query at info level (costs throughput; off by default).
    #[arg(long)]
    pub(crate) log_queries: bool,
    /// Serve Prometheus statistics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) stats_http: Option<SocketAddr>,
    /// Control socket for `shardns reload` and `shardns stats` (default: in $XDG_RUNTIME_DIR,
    /// else /run/shardns for root, else /tmp/shardns-UID; shardns-ADDR-PORT.ctl after the
    /// first listen address).
    #[arg(long, value_name = "PATH")]
    pub(crate) control: Option<PathBuf>,
    /// Close TCP connections idle this long (default 10000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) tcp_idle_timeout_ms: Option<u64>,
    /// Most TCP connections per worker (default 1024).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) tcp_connections_per_worker: Option<u32>,
    /// Most TCP connections in total (default 4096).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) tcp_connections: Option<u32>,
    /// Most TCP connections per client address, over all workers (default 128; 0: no limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=65535))]
    pub(crate) tcp_connections_per_client: Option<u32>,
    /// Close a TCP connection whose client takes longer than this to send one whole query
    /// (default 3000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) tcp_read_timeout_ms: Option<u64>,
    /// Close a TCP connection after answering this many queries (default 0: no limit).
    #[arg(long, value_name = "N")]
    pub(crate) tcp_queries_per_connection: Option<u32>,
    /// Turn on response rate limiting at N UDP responses per second per client prefix and
    /// response class (see [rrl] in docs/CONFIG.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) rrl_rate: Option<u32>,
    /// Send every Nth rate-limited response truncated (TC=1) instead of dropping it
    /// (default 2; 0 drops all, 1 truncates all).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=10))]
    pub(crate) rrl_slip: Option<u32>,
    /// Also act as a caching recursive resolver: queries with RD set for names outside our
    /// zones, from clients allowed to recurse, are resolved (others get REFUSED).
    #[arg(long)]
    pub(crate) recursion: bool,
    /// Root hints file for --recursion (default: the IANA root hints bundled in the
    /// binary). An address may carry a port, e.g. `a.root. A 127.0.0.1@5300`.
    #[arg(long, value_name = "FILE")]
    pub(crate) root_hints: Option<PathBuf>,
    /// Trust anchors for DNSSEC validation with --recursion: DS or DNSKEY records in
    /// zone-file format (replaces the built-in root KSKs 20326 and 38696).
    #[arg(long, value_name = "FILE")]
    pub(crate) trust_anchor: Option<PathBuf>,
    /// Do not validate DNSSEC in resolved answers (validation is on by default).
    #[arg(long)]
    pub(crate) no_validation: bool,
    /// Send queries at or below ZONE to the recursive server ADDR:PORT (repeatable).
    #[arg(long, value_name = "ZONE=ADDR:PORT")]
    pub(crate) forward: Vec<ForwardZone>,
    /// Clients allowed to recurse, ADDR or ADDR/LEN (repeatable; replaces the config's;
    /// default 127.0.0.0/8 and ::1).
    #[arg(long, value_name = "PREFIX")]
    pub(crate) allow_recursion: Vec<AclEntry>,
    /// Port of name servers learned from referrals and glue (default 53; for tests).
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) upstream_port: Option<u16>,
    /// A resolver local zone, "NAME TYPE" with Unbound's types (repeatable; added to
    /// resolver.local_zone; "test. nodefault" turns off the default zone test.).
    #[arg(long, value_name = "NAME TYPE")]
    pub(crate) local_zone: Vec<LocalZone>,
    /// Send queries to loopback addresses (127.0.0.0/8, ::1) learned from referrals, glue
    /// and name-server lookups, for lab hierarchies on loopback (sets
    /// resolver.allow_loopback_upstreams; by default they are not asked, as Unbound's
    /// do-not-query-localhost).
    #[arg(long)]
    pub(crate) allow_loopback_upstreams: bool,
    /// Read the UDP queries to the listen addresses that arrive on interface IFACE (e.g.
    /// lo) with AF_XDP, bypassing the kernel's UDP sockets (needs root; see docs/CONFIG.md).
    #[arg(long, value_name = "IFACE")]
    pub(crate) xdp: Option<String>,
    /// Clients allowed to transfer the zones (AXFR, IXFR over TCP), ADDR or ADDR/LEN
    /// (repeatable; adds to server.allow_transfer; default: nobody).
    #[arg(long, value_name = "PREFIX")]
    pub(crate) allow_transfer: Vec<AclEntry>,
    /// Secondaries to tell by NOTIFY when a zone gets a new serial, and at startup,
    /// ADDR:PORT (repeatable; adds to server.notify).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) notify: Vec<SocketAddr>,
    /// Require zone transfers to be signed (TSIG) with this key, ALG:NAME:BASE64SECRET as
    /// `kdig -y` takes it (hmac-sha256 or hmac-sha512; sets server.transfer_key).
    #[arg(long, value_name = "ALG:NAME:SECRET")]
    pub(crate) transfer_key: Option<Key>,
    /// Let this key update (RFC 2136, TSIG-signed) every zone given with --zone, any name
    /// and type, ALG:NAME:BASE64SECRET as `nsupdate -y` takes it (repeatable).
    #[arg(long, value_name = "ALG:NAME:SECRET")]
    pub(crate) update_key: Vec<Key>,
    /// Serve zone NAME as a secondary of the primary ADDR:PORT (AXFR/IXFR, refreshed by its
    /// SOA timers and NOTIFY), e.g. example.com=192.0.2.1:53 (repeatable, also for more
    /// primaries of one zone; with --zone NAME=FILE the copy is kept in FILE, else in memory).
    #[arg(long, value_name = "NAME=ADDR:PORT")]
    pub(crate) secondary: Vec<SecondaryFlag>,
    /// Sign every --zone given (DNSSEC, as `dnssec = true`) with the keys in the key
    /// directory; a zone without keys gets a new ECDSA P-256 key (see docs/DNSSEC.md).
    #[arg(long)]
    pub(crate) sign: bool,
    /// The directory of the zones' DNSSEC keys (sets server.key_directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) key_dir: Option<PathBuf>,
    /// Serve DNS over TLS (RFC 7858) on ADDR:PORT, e.g. 127.0.0.1:853 (repeatable; adds to
    /// server.tls_listen; needs --tls-cert and --tls-key).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) tls_listen: Vec<SocketAddr>,
    /// Serve DNS over QUIC (RFC 9250) on ADDR:PORT, e.g. 127.0.0.1:853 (repeatable; adds to
    /// server.quic_listen; needs --tls-cert and --tls-key).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) quic_listen: Vec<SocketAddr>,
    /// Serve DNS over HTTPS (RFC 8484, HTTP/2, /dns-query) on ADDR:PORT, e.g. 127.0.0.1:443
    /// (repeatable; adds to server.https_listen; needs --tls-cert and --tls-key).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) https_listen: Vec<SocketAddr>,
    /// The TLS certificate chain, PEM (sets server.tls_certificate; read again on SIGHUP).
    #[arg(long, value_name = "FILE")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The TLS private key, PEM (sets server.tls_key).
    #[arg(long, value_name = "FILE")]
    pub(crate) tls_key: Option<PathBuf>,
    /// The name server identifier sent to queries with an empty NSID option (RFC 5001; sets
    /// server.nsid).
    #[arg(long, value_name = "TEXT")]
    pub(crate) nsid: Option<String>,
    /// Log queries and responses in dnstap's format to the Unix socket PATH, where a dnstap
    /// reader listens (sets dnstap.socket).
    #[arg(long, value_name = "PATH", conflicts_with = "dnstap_file")]
    pub(crate) dnstap_socket: Option<PathBuf>,
    /// Log queries and responses in dnstap's format to FILE (sets dnstap.file).
    #[arg(long, value_name = "FILE")]
    pub(crate) dnstap_file: Option<PathBuf>,
}

impl ServeArgs {
    pub(crate) fn setup(&self, default_zone: shardns_server::EmbeddedZone) -> Setup {
        let mut o = Overrides::default();
        o.listen = self.listen.clone();
        o.zones = self.zone.clone();
        o.zone_list = self.zone_list.clone();
        o.workers = self.workers.map(|n| n as usize);
        o.log_level = self.log_level.clone();
        o.log_queries = self.log_queries;
        o.stats_http = self.stats_http;
        o.control_socket = self.control.clone();
        o.tcp_idle_timeout_ms = self.tcp_idle_timeout_ms;
        o.tcp_connections_per_worker = self.tcp_connections_per_worker.map(|n| n as usize);
        o.tcp_connections = self.tcp_connections.map(|n| n as usize);
        o.tcp_connections_per_client = self.tcp_connections_per_client.map(|n| n as usize);
        o.tcp_read_timeout_ms = self.tcp_read_timeout_ms;
        o.tcp_queries_per_connection = self.tcp_queries_per_connection;
        o.rrl_rate = self.rrl_rate;
        o.rrl_slip = self.rrl_slip;
        o.recursion = self.recursion;
        o.root_hints = self.root_hints.clone();
        o.trust_anchor = self.trust_anchor.clone();
        o.no_validation = self.no_validation;
        o.forward = self.forward.clone();
        o.allow = self.allow_recursion.clone();
        o.upstream_port = self.upstream_port;
        o.local_zone = self.local_zone.clone();
        o.allow_loopback_upstreams = self.allow_loopback_upstreams;
        o.xdp_interface = self.xdp.clone();
        o.allow_transfer = self.allow_transfer.clone();
        o.notify = self.notify.clone();
        o.transfer_key = self.transfer_key.clone();
        o.update_keys = self.update_key.clone();
        o.secondaries = self.secondary.clone();
        o.sign = self.sign;
        o.key_directory = self.key_dir.clone();
        o.tls_listen = self.tls_listen.clone();
        o.quic_listen = self.quic_listen.clone();
        o.https_listen = self.https_listen.clone();
        o.tls_certificate = self.tls_cert.clone();
        o.tls_key = self.tls_key.clone();
        o.nsid = self.nsid.clone();
        o.dnstap_socket = self.dnstap_socket.clone();
        o.dnstap_file = self.dnstap_file.clone();
        Setup::new(self.config.clone(), o, Some(default_zone))
    }
}

/// `shardns key ...`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum KeyCommand {
    /// List the zone's keys: tag, role, algorithm, state now, times, file.
    List(KeyArgs),
    /// Print the DS records (SHA-256) of the zone's KSK or CSK, in zone-file format, for the
    /// parent zone.
    Ds(KeyArgs),
    /// Start a key rollover: --zsk (pre-publication) or --ksk (double-DS; the KSK, or the
    /// CSK of a zone signed by one). Then `shardns reload ZONE`. See docs/DNSSEC.md.
    Rollover(RolloverArgs),
    /// Confirm the parent serves the DS of the new KSK or CSK of a double-DS rollover (the
    /// key of TAG, or the only one waiting). Then `shardns reload ZONE`.
    Submitted(SubmittedArgs),
    /// Offline KSK: make the zone's ZSKs ahead, rolled as zsk_lifetime says.
    Pregenerate(crate::offline::PregenerateArgs),
    /// Offline KSK: the key signing request (the ZSKs of each period), to standard output.
    Ksr(crate::offline::KsrArgs),
    /// Offline KSK, on the KSK's machine: sign a KSR with the KSK(s) of --key-dir (the SKR).
    SignKsr(crate::offline::SignKsrArgs),
    /// Offline KSK: check an SKR against the ZSKs and keep it. Then `shardns reload ZONE`.
    ImportSkr(crate::offline::ImportSkrArgs),
}

/// Flags of `key rollover`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RolloverArgs {
    #[command(flatten)]
    pub(crate) key: KeyArgs,
    /// Roll the zone-signing key.
    #[arg(long, conflicts_with = "ksk", required_unless_present = "ksk")]
    pub(crate) zsk: bool,
    /// Roll the key-signing key (or the CSK).
    #[arg(long)]
    pub(crate) ksk: bool,
    /// With --ksk: confirm the parent serves the new DS (as `shardns key submitted`).
    #[arg(long, requires = "ksk")]
    pub(crate) confirm: bool,
}

/// Flags of `key submitted`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SubmittedArgs {
    #[command(flatten)]
    pub(crate) key: KeyArgs,
    /// The new key's tag (default: the only key waiting for its DS).
    #[arg(value_name = "TAG")]
    pub(crate) tag: Option<u16>,
}

/// Flags of `key list` and `key ds`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct KeyArgs {
    /// The zone, e.g. example.com.
    #[arg(value_name = "ZONE")]
    pub(crate) zone: String,
    /// The key directory (the server's key_directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) key_dir: PathBuf,
}

/// Flags of `sign`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SignArgs {
    /// The zone's apex, e.g. example.com.
    #[arg(value_name = "ZONE")]
    pub(crate) zone: String,
    /// The unsigned zone file (DNSSEC records in it are dropped and made anew).
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// The key directory; a first key (CSK) is made in it when the zone has none.
    #[arg(long, value_name = "DIR")]
    pub(crate) key_dir: PathBuf,
    /// Where to write the signed zone (one record a line).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// NSEC3 (RFC 9276: 0 extra iterations, no salt) instead of NSEC.
    #[arg(long)]
    pub(crate) nsec3: bool,
    /// NSEC3 with opt-out for unsigned delegations.
    #[arg(long)]
    pub(crate) nsec3_opt_out: bool,
    /// Algorithm of a first key: ecdsap256sha256 (default), ecdsap384sha384, ed25519,
    /// rsasha256, rsasha512 (2048 bits).
    #[arg(long, value_name = "ALG", default_value = "ecdsap256sha256")]
    pub(crate) algorithm: String,
    /// Signature validity: seconds or 14d, 36h, 90m (default 14d).
    #[arg(long, value_name = "DURATION", default_value = "14d")]
    pub(crate) signature_validity: String,
    /// Signing threads (default: every core this process may run on).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) threads: usize,
    /// Sign the file alone, without the changes dynamic updates made to the zone
    /// (KEYDIR/state/ZONE.updates, applied by default as the server applies them).
    #[arg(long)]
    pub(crate) ignore_updates: bool,
}

/// Flags of `reload` and `stats`: how to find the server's control socket.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ControlArgs {
    /// The server's control socket.
    #[arg(long, value_name = "PATH")]
    pub(crate) control: Option<PathBuf>,
    /// The server's config file (its control_socket, or its first listen address names the
    /// default socket).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The server's first listen address (it names the default socket,
    /// shardns-ADDR-PORT.ctl).
    #[arg(short, long, value_name = "ADDR:PORT")]
    pub(crate) listen: Option<SocketAddr>,
}

impl ControlArgs {
    pub(crate) fn setup(&self) -> Setup {
        let mut o = Overrides::default();
        o.listen = self.listen.into_iter().collect();
        o.control_socket = self.control.clone();
        Setup::new(self.config.clone(), o, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[test]
    fn zone_set_takes_the_record_words_as_given() {
        let cli = Cli::try_parse_from([
            "shardns",
            "zone",
            "set",
            "--control",
            "/x",
            "t.",
            "www",
            "300",
            "TXT",
            "\"-a b\"",
            "-1",
        ])
        .unwrap();
        let Some(Command::Zone {
            action: ZoneAction::Set(r),
        }) = cli.command
        else {
            panic!("not zone set");
        };
        assert_eq!((r.zone.as_str(), r.owner.as_str()), ("t.", "www"));
        assert_eq!(r.record, ["300", "TXT", "\"-a b\"", "-1"]);
        assert!(r.control.control.is_some());
        let cli = Cli::try_parse_from(["shardns", "zone", "unset", "t.", "old"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Zone { action: ZoneAction::Unset(ref r) }) if r.record.is_empty()
        ));
        assert!(Cli::try_parse_from(["shardns", "zone", "begin"]).is_err());
        assert!(Cli::try_parse_from(["shardns", "zone", "commit", "t."]).is_ok());
    }

    #[test]
    fn flag_table_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_flags_repeat() {
        let cli = Cli::try_parse_from([
            "shardns",
            "serve",
            "--listen",
            "127.0.0.1:5300",
            "--listen",
            "[::1]:5300",
            "--zone",
            "example.test=path/to/zone",
            "--zone",
            "b.=x",
            "--workers",
            "1",
            "--log-queries",
        ])
        .unwrap();
        let Some(Command::Serve(a)) = cli.command else {
            panic!()
        };
        assert_eq!(a.listen.len(), 2);
        assert_eq!(a.zone.len(), 2);
        assert_eq!(a.workers, Some(1));
        assert!(a.log_queries);
        assert!(Cli::try_parse_from(["shardns", "serve", "--workers", "0"]).is_err());
        assert!(Cli::try_parse_from(["shardns", "serve", "--zone", "nofile"]).is_err());
        assert!(Cli::try_parse_from(["shardns", "serve", "--listen", "127.0.0.1"]).is_err());
    }

    #[test]
    fn resolver_flags() {
        let cli = Cli::try_parse_from([
            "shardns",
            "serve",
            "--recursion",
            "--root-hints",
            "h",
            "--forward",
            "corp.=127.0.0.1:5300",
            "--forward",
            "b.=[::1]:53",
            "--allow-recursion",
            "::1",
            "--upstream-port",
            "5301",
            "--allow-loopback-upstreams",
            "--allow-transfer",
            "127.0.0.2",
            "--allow-transfer",
            "10.0.0.0/8",
            "--notify",
            "127.0.0.1:5300",
        ])
        .unwrap();
        let Some(Command::Serve(a)) = cli.command else {
            panic!()
        };
        assert!(a.recursion);
        assert_eq!(a.forward.len(), 2);
        assert_eq!(a.allow_recursion.len(), 1);
        assert_eq!(a.upstream_port, Some(5301));
        assert!(a.allow_loopback_upstreams);
        assert_eq!(a.allow_transfer.len(), 2);
        assert_eq!(a.notify, ["127.0.0.1:5300".parse().unwrap()]);
        assert!(Cli::try_parse_from(["shardns", "serve", "--forward", "corp."]).is_err());
        assert!(
            Cli::try_parse_from(["shardns", "serve", "--allow-recursion", "1.2.3.4/40"]).is_err()
        );
    }

    #[test]
    fn limit_and_rrl_flags() {
        let cli = Cli::try_parse_from([
            "shardns",
            "serve",
            "--rrl-rate",
            "10",
            "--rrl-slip",
            "0",
            "--tcp-connections-per-client",
            "4",
            "--tcp-read-timeout-ms",
            "500",
            "--tcp-queries-per-connection",
            "3",
        ])
        .unwrap();
        let Some(Command::Serve(a)) = cli.command else {
            panic!()
        };
        let setup = a.setup(shardns_server::EmbeddedZone {
            name: "example.test.",
            label: "x",
            text: "",
        });
        let c = setup.config().unwrap();
        assert!(c.rrl.enabled);
        assert_eq!((c.rrl.rate, c.rrl.slip), (10, 0));
        assert_eq!(c.limits.tcp_connections_per_client, 4);
        assert_eq!(c.limits.tcp_read_timeout_ms, 500);
        assert_eq!(c.limits.tcp_queries_per_connection, 3);
        for bad in [
            ["--rrl-rate", "0"],
            ["--rrl-slip", "11"],
            ["--tcp-read-timeout-ms", "0"],
            ["--tcp-connections-per-client", "70000"],
        ] {
            assert!(
                Cli::try_parse_from(["shardns", "serve", bad[0], bad[1]]).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn sign_flags() {
        let zone = shardns_server::EmbeddedZone {
            name: "example.test.",
            label: "x",
            text: "",
        };
        let cli = Cli::try_parse_from([
            "shardns",
            "serve",
            "--zone",
            "a.=a",
            "--sign",
            "--key-dir",
            "/k",
        ])
        .unwrap();
        let Some(Command::Serve(a)) = cli.command else {
            panic!()
        };
        let c = a.setup(zone).config().unwrap();
        assert!(c.zones[0].dnssec);
        assert_eq!(c.server.key_directory.as_deref(), Some("/k".as_ref()));
        let cli = Cli::try_parse_from(["shardns", "serve", "--zone", "a.=a", "--sign"]).unwrap();
        let Some(Command::Serve(a)) = cli.command else {
            panic!()
        };
        let e = a.setup(zone).config().unwrap_err().to_string();
        assert!(
            e.starts_with(
                "command line: zone[0].dnssec: zone a. is to be signed but no key directory"
            ),
            "{e}"
        );
    }

    #[test]
    fn no_command_means_serve() {
        assert!(Cli::try_parse_from(["shardns"]).unwrap().command.is_none());
    }

    #[test]
    fn bench_takes_everything_after_it() {
        let cli = Cli::try_parse_from(["shardns", "bench", "rr", "--server", "127.0.0.1:53", "-h"])
            .unwrap();
        let Some(Command::Bench { args }) = cli.command else {
            panic!()
        };
        assert_eq!(args, ["rr", "--server", "127.0.0.1:53", "-h"]);
    }
}
