//! Resolver settings, root hints and the hints-file parser.
//!
//! Owns: [`Config`] (limits, timeouts, TTL caps, forward and stub zones) and [`Hints`].
//! Never: file or network I/O; the hints parser takes text the caller has read.

use std::net::{IpAddr, SocketAddr};

use shardns_wire::{Name, NameRef, RType};

use crate::dns64::{Dns64Options, Dns64Prefix, Ipv6Range};
use crate::error::Error;
use crate::validate::TrustAnchors;

/// Everything a [`crate::Resolver`] can be told. `Config::default()` is a sensible
/// recursive resolver starting from the IANA root servers.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Where iteration starts when the cache knows no closer zone cut.
    pub hints: Hints,
    /// Zones whose queries all go, with RD set, to other recursive servers.
    pub forward_zones: Vec<ZoneServers>,
    /// Zones whose authoritative servers are given here; iteration goes on below them.
    pub stub_zones: Vec<ZoneServers>,
    /// QNAME minimisation (RFC 9156): zone servers are asked for one label more than the
    /// zone cut, type A, until the name is found below a cut. On by default (Unbound's
    /// `qname-minimisation: yes`).
    pub qname_minimisation: bool,
    /// Strict minimisation (Unbound's `qname-minimisation-strict`): an NXDOMAIN to a
    /// minimised question ends the resolution (RFC 8020), any other unusable answer (an
    /// error rcode, NOERROR without AA, a referral upwards) makes the server lame. Off by
    /// default: such answers make the zone's servers be asked the full name instead (RFC
    /// 9156 §2.3), since some servers answer empty non-terminals or their own cuts wrongly.
    pub qname_minimisation_strict: bool,
    /// Most minimised queries per zone cut before the full name is sent (RFC 9156 §2.3).
    pub qname_minimisation_steps: u8,
    /// Send EDNS(0) to upstream servers (falling back to plain DNS per server on FORMERR/NOTIMP).
    pub edns: bool,
    /// UDP payload size advertised upstream.
    pub edns_udp_size: u16,
    /// Use IPv4 server addresses.
    pub ipv4: bool,
    /// Use IPv6 server addresses.
    pub ipv6: bool,
    /// Port used for server addresses learned from NS/A/AAAA data (53 outside tests).
    pub upstream_port: u16,
    /// Ask loopback and unspecified addresses (127.0.0.0/8, ::1, 0.0.0.0/8, ::) learned
    /// from referrals, glue and name-server lookups. Off by default, as Unbound's
    /// `do-not-query-localhost: yes`: a referral must not make the resolver query the
    /// host's own services. For lab hierarchies on loopback. Addresses configured here
    /// (hints, forward and stub zones) are used whatever this says.
    pub allow_loopback_upstreams: bool,
    /// Cached TTLs are raised to at least this many seconds.
    pub min_ttl: u32,
    /// Cached TTLs are cut to at most this many seconds.
    pub max_ttl: u32,
    /// Negative answers (RFC 2308) are cached for at most this many seconds.
    pub max_negative_ttl: u32,
    /// Memory bound of the cache, in bytes (approximate, counted per entry).
    pub cache_bytes: usize,
    /// Timeout for a server whose round-trip time is not known yet, in milliseconds.
    pub initial_timeout_ms: u64,
    /// Lower bound of a per-query timeout derived from a server's SRTT.
    pub min_timeout_ms: u64,
    /// Upper bound of a per-query timeout.
    pub max_timeout_ms: u64,
    /// Attempts per server address within one zone before it is given up.
    pub tries_per_server: u8,
    /// A server's SRTT halves after this many milliseconds without news, so a server
    /// that was slow once is tried again later.
    pub srtt_half_life_ms: u64,
    /// Timeouts in a row (no answer in between) after which a server address is held down:
    /// not asked at all until the hold-down expires, then probed by one query. Resolutions
    /// whose servers are all held down fail at once (SERVFAIL, EDE 22). 0: never.
    pub server_hold_after: u8,
    /// The first hold-down, in milliseconds; each further timeout doubles it.
    pub server_hold_ms: u64,
    /// The longest hold-down, in milliseconds.
    pub server_hold_max_ms: u64,
    /// Most upstream queries sent for one client query (sub-resolutions and retries included).
    pub max_queries: u32,
    /// Longest CNAME/DNAME chain followed.
    pub max_chain: u8,
    /// Most referrals followed for one client query.
    pub max_referrals: u32,
    /// Deepest nesting of name-server address sub-resolutions.
    pub max_depth: u8,
    /// Whole-resolution deadline for one client query, in milliseconds.
    pub max_resolution_ms: u64,
    /// DNSSEC validation (RFC 4033-4035): answers are checked from the trust anchors
    /// down; bogus ones become SERVFAIL, secure ones may get AD. On by default.
    pub validation: bool,
    /// Where validation starts: the root KSKs by default ([`TrustAnchors::root`]).
    pub trust_anchors: TrustAnchors,
    /// Clock skew allowed either side of a signature's validity period: a tenth of the
    /// period, at least `signature_skew_min` and at most `signature_skew_max` seconds
    /// (Unbound's `val-sig-skew-min`/`val-sig-skew-max`, 3600 and 86400 by default).
    pub signature_skew_min: u32,
    /// See `signature_skew_min`.
    pub signature_skew_max: u32,
    /// Most signature checks for one client query (KeyTrap, CVE-2023-50387).
    pub max_validations: u32,
    /// Most DNSKEYs tried for one RRSIG whose key tag and algorithm they share.
    pub max_key_collisions: u8,
    /// Most NSEC3 hashes computed for one client query (CVE-2023-50868).
    pub max_nsec3_hashes: u32,
    /// NSEC3 with more iterations than this is treated as insecure (RFC 9276 §3.2).
    pub max_nsec3_iterations: u16,
    /// Seconds a bogus answer (and a zone whose keys failed) is cached.
    pub bogus_ttl: u32,
    /// Aggressive use of the DNSSEC-validated cache (RFC 8198): NSEC ranges that proved a
    /// denial securely answer NXDOMAIN and NODATA for other names inside them without
    /// asking (NSEC only, like Unbound's `aggressive-nsec`). On by default; needs
    /// `validation`.
    pub aggressive_nsec: bool,
    /// Serve-stale (RFC 8767): expired answers are kept up to [`Config::serve_stale_max`]
    /// past their TTL and given (EDE 3, or 19 for NXDOMAIN) when a resolution fails or is
    /// still running after [`Config::serve_stale_client_timeout_ms`]. Off by default, as
    /// Unbound's `serve-expired` and BIND's `stale-answer-enable`.
    pub serve_stale: bool,
    /// Seconds past expiry that a record may still be served stale (RFC 8767 §5 suggests
    /// 1 to 3 days; Unbound's `serve-expired-ttl`, BIND's `max-stale-ttl`).
    pub serve_stale_max: u32,
    /// TTL of a stale record in an answer (RFC 8767 §4: 30 s; Unbound's
    /// `serve-expired-reply-ttl`, BIND's `stale-answer-ttl`).
    pub serve_stale_reply_ttl: u32,
    /// A resolution still running this long after the client asked is answered from
    /// stale data, and goes on to refresh the cache (RFC 8767 §5: 1.8 s; Unbound's
    /// `serve-expired-client-timeout`, BIND's `stale-answer-client-timeout`).
    pub serve_stale_client_timeout_ms: u64,
    /// After a failed resolution was answered stale, the name is answered stale without
    /// asking for this long (RFC 8767 §4 failure-recheck timer: 30 s; BIND's
    /// `stale-refresh-time`).
    pub serve_stale_recheck_ms: u64,
    /// Prefetch: a cached answer asked for in the last tenth of its TTL is refreshed in the
    /// background while the client gets the cached one (Unbound's `prefetch`, BIND's
    /// `prefetch`). Off by default, as Unbound's.
    pub prefetch: bool,
    /// DNS64 (RFC 6147): AAAA records synthesized from A records under
    /// [`Config::dns64_prefix`] for names without AAAA records, PTR questions for the
    /// prefix's reverse names answered from in-addr.arpa, and `ipv4only.arpa.` answered
    /// locally (RFC 8880). Off by default (Unbound's `module-config: "dns64 ..."`, BIND's
    /// `dns64`).
    pub dns64: bool,
    /// The NAT64 prefix (Unbound's `dns64-prefix`; `64:ff9b::/96` by default).
    pub dns64_prefix: Dns64Prefix,
    /// AAAA records in these ranges are ignored by DNS64 (RFC 6147 §5.1.4; Unbound's
    /// `dns64-ignore-aaaa` is by name, BIND's `exclude` by range). `::ffff:0:0/96` by
    /// default.
    pub dns64_exclude: Vec<Ipv6Range>,
    /// The rest of the DNS64 options (BIND's `clients`, `mapped`, `recursive-only`,
    /// `break-dnssec`; Unbound's `dns64-synthall`, `dns64-ignore-aaaa`).
    pub dns64_options: Dns64Options,
    /// Local zones and data, client access and views ([`crate::local`]); `None`: none of
    /// them, and the caller's own recursion ACL decides.
    pub local: Option<std::sync::Arc<crate::local::Local>>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            hints: Hints::iana(),
            forward_zones: Vec::new(),
            stub_zones: Vec::new(),
            qname_minimisation: true,
            qname_minimisation_strict: false,
            qname_minimisation_steps: 10,
            edns: true,
            edns_udp_size: 1232,
            ipv4: true,
            ipv6: true,
            upstream_port: 53,
            allow_loopback_upstreams: false,
            min_ttl: 0,
            max_ttl: 86_400,
            max_negative_ttl: 3_600,
            cache_bytes: 64 << 20,
            initial_timeout_ms: 800,
            min_timeout_ms: 150,
            max_timeout_ms: 3_000,
            tries_per_server: 2,
            srtt_half_life_ms: 600_000,
            server_hold_after: 2,
            server_hold_ms: 5_000,
            // Unbound stops using a server whose backed-off timeout passes 120 s.
            server_hold_max_ms: 120_000,
            max_queries: 64,
            max_chain: 12,
            max_referrals: 40,
            max_depth: 4,
            max_resolution_ms: 10_000,
            validation: true,
            trust_anchors: TrustAnchors::root(),
            signature_skew_min: 3600,
            signature_skew_max: 86400,
            max_validations: 32,
            max_key_collisions: 4,
            max_nsec3_hashes: 64,
            // Unbound 1.17's val-nsec3-keysize-iterations, "1024 150 2048 150 4096 150":
            // 150 whatever the key size (RFC 9276 §3.2 leaves the figure to validators).
            max_nsec3_iterations: 150,
            // Unbound's val-bogus-ttl.
            bogus_ttl: 60,
            // Unbound's aggressive-nsec (yes by default since 1.15).
            aggressive_nsec: true,
            serve_stale: false,
            serve_stale_max: 86_400,
            serve_stale_reply_ttl: 30,
            serve_stale_client_timeout_ms: 1_800,
            serve_stale_recheck_ms: 30_000,
            prefetch: false,
            dns64: false,
            dns64_prefix: Dns64Prefix::WELL_KNOWN,
            dns64_exclude: crate::dns64::default_exclusions(),
            dns64_options: Dns64Options::default(),
            local: None,
        }
    }
}

/// A zone and the servers its queries go to (forward or stub zone).
#[derive(Clone, Debug)]
pub struct ZoneServers {
    /// The zone apex.
    pub zone: Name,
    /// Server addresses, with ports.
    pub servers: Vec<SocketAddr>,
}

/// Root hints: the root name servers and their addresses.
#[derive(Clone, Debug, Default)]
pub struct Hints {
    /// Each root server's name and addresses.
    pub servers: Vec<(Name, Vec<SocketAddr>)>,
}

/// The IANA root hints (root-servers.net, as published in `named.root`).
const IANA_ROOT_HINTS: &str = "\
. NS a.root-servers.net.
. NS b.root-servers.net.
. NS c.root-servers.net.
. NS d.root-servers.net.
. NS e.root-servers.net.
. NS f.root-servers.net.
. NS g.root-servers.net.
. NS h.root-servers.net.
. NS i.root-servers.net.
. NS j.root-servers.net.
. NS k.root-servers.net.
. NS l.root-servers.net.
. NS m.root-servers.net.
a.root-servers.net. A 198.41.0.4
a.root-servers.net. AAAA 2001:503:ba3e::2:30
b.root-servers.net. A 170.247.170.2
b.root-servers.net. AAAA 2801:1b8:10::b
c.root-servers.net. A 192.33.4.12
c.root-servers.net. AAAA 2001:500:2::c
d.root-servers.net. A 199.7.91.13
d.root-servers.net. AAAA 2001:500:2d::d
e.root-servers.net. A 192.203.230.10
e.root-servers.net. AAAA 2001:500:a8::e
f.root-servers.net. A 192.5.5.241
f.root-servers.net. AAAA 2001:500:2f::f
g.root-servers.net. A 192.112.36.4
g.root-servers.net. AAAA 2001:500:12::d0d
h.root-servers.net. A 198.97.190.53
h.root-servers.net. AAAA 2001:500:1::53
i.root-servers.net. A 192.36.148.17
i.root-servers.net. AAAA 2001:7fe::53
j.root-servers.net. A 192.58.128.30
j.root-servers.net. AAAA 2001:503:c27::2:30
k.root-servers.net. A 193.0.14.129
k.root-servers.net. AAAA 2001:7fd::1
l.root-servers.net. A 199.7.83.42
l.root-servers.net. AAAA 2001:500:9f::42
m.root-servers.net. A 202.12.27.33
m.root-servers.net. AAAA 2001:dc3::35
";

impl Hints {
    /// The IANA root servers.
    pub fn iana() -> Self {
        Self::parse(IANA_ROOT_HINTS).unwrap_or_default()
    }

    /// Parses root hints in zone-file-like text, one record a line:
    /// `owner [TTL] [IN] TYPE rdata`, with `;` comments and `$` directives ignored.
    /// `. NS name` lines name the servers; `name A addr` / `name AAAA addr` give addresses.
    /// An address may carry a port as `IP@PORT` (for tests); otherwise port 53.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut hints = Hints::default();
        let mut addrs: Vec<(Name, SocketAddr)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let err = |message: String| Error::Hints {
                line: i + 1,
                message,
            };
            let line = raw.split(';').next().unwrap_or("").trim();
            if line.is_empty() || line.starts_with('$') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let owner: Name = fields[0]
                .parse()
                .map_err(|e| err(format!("bad owner {:?}: {e}", fields[0])))?;
            // Skip an optional TTL and class between owner and type.
            let mut rest = &fields[1..];
            while let Some(f) = rest.first() {
                if f.bytes().all(|b| b.is_ascii_digit()) || f.eq_ignore_ascii_case("IN") {
                    rest = &rest[1..];
                } else {
                    break;
                }
            }
            let [rtype, data] = rest else {
                return Err(err(format!(
                    "expected TYPE and one rdata field in {line:?}"
                )));
            };
            let rtype =
                RType::from_text(rtype).ok_or_else(|| err(format!("unknown type {rtype:?}")))?;
            match rtype {
                RType::NS => {
                    if !owner.as_ref().is_root() {
                        return Err(err(format!("NS owner {owner} is not the root")));
                    }
                    let ns: Name = data
                        .parse()
                        .map_err(|e| err(format!("bad name {data:?}: {e}")))?;
                    if !hints.servers.iter().any(|(n, _)| *n == ns) {
                        hints.servers.push((ns, Vec::new()));
                    }
                }
                RType::A | RType::AAAA => {
                    let addr =
                        parse_addr(data, 53).ok_or_else(|| err(format!("bad address {data:?}")))?;
                    if addr.is_ipv4() != (rtype == RType::A) {
                        return Err(err(format!("{rtype} record with address {data:?}")));
                    }
                    addrs.push((owner, addr));
                }
                _ => return Err(err(format!("unexpected type {rtype} in hints"))),
            }
        }
        for (name, addr) in addrs {
            match hints.servers.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.push(addr),
                None => {
                    return Err(Error::Hints {
                        line: 0,
                        message: format!("address for {name}, which is not a root NS"),
                    })
                }
            }
        }
        if hints.servers.iter().all(|(_, a)| a.is_empty()) {
            return Err(Error::Hints {
                line: 0,
                message: "no root server with an address".into(),
            });
        }
        Ok(hints)
    }
}

/// `IP` or `IP@PORT`.
pub(crate) fn parse_addr(text: &str, default_port: u16) -> Option<SocketAddr> {
    let (ip, port) = match text.rsplit_once('@') {
        Some((ip, port)) => (ip, port.parse().ok()?),
        None => (text, default_port),
    };
    Some(SocketAddr::new(ip.parse::<IpAddr>().ok()?, port))
}

impl Config {
    /// True if addresses of this family may be used.
    pub(crate) fn family_ok(&self, addr: &SocketAddr) -> bool {
        if addr.is_ipv4() {
            self.ipv4
        } else {
            self.ipv6
        }
    }

    /// True if an address learned from DNS data (not configured) may be asked: its family
    /// is in use, and it is not the host itself unless `allow_loopback_upstreams`.
    pub(crate) fn learned_ok(&self, addr: &SocketAddr) -> bool {
        self.family_ok(addr) && (self.allow_loopback_upstreams || !is_local(addr.ip()))
    }

    /// The deepest forward or stub zone at or above `name`: (zone, servers, forward?).
    pub(crate) fn zone_servers_for(&self, name: NameRef<'_>) -> Option<(&ZoneServers, bool)> {
        let forwards = self.forward_zones.iter().map(|z| (z, true));
        let stubs = self.stub_zones.iter().map(|z| (z, false));
        // A handful of configured zones: a scan is cheaper than a map here.
        forwards
            .chain(stubs)
            .filter(|(z, _)| name.ends_with(&z.zone.as_ref()))
            .max_by_key(|(z, _)| z.zone.as_ref().len())
    }
}

/// Loopback or unspecified (0.0.0.0/8 is "this host on this network", RFC 6890), also as
/// an IPv4-mapped IPv6 address.
fn is_local(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.octets()[0] == 0,
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unspecified(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hints_with_ports_ttls_and_comments() {
        let h = Hints::parse(
            "; test root\n$TTL 3600\n. 3600000 IN NS a.root.test.\n.\tNS b.root.test. ; second\n\
             a.root.test. 3600000 A 127.0.0.1@5300\nb.root.test. AAAA ::1@5301\nb.root.test. A 10.0.0.1\n",
        )
        .unwrap();
        assert_eq!(h.servers.len(), 2);
        assert_eq!(h.servers[0].0.to_string(), "a.root.test.");
        assert_eq!(h.servers[0].1, vec!["127.0.0.1:5300".parse().unwrap()]);
        assert_eq!(
            h.servers[1].1,
            vec![
                "[::1]:5301".parse().unwrap(),
                "10.0.0.1:53".parse().unwrap()
            ]
        );
    }

    #[test]
    fn rejects_bad_hints() {
        assert!(matches!(
            Hints::parse(". NS a.\na. A 1.2.3.999\n"),
            Err(Error::Hints { line: 2, .. })
        ));
        assert!(matches!(
            Hints::parse("x. NS a.\n"),
            Err(Error::Hints { line: 1, .. })
        ));
        assert!(Hints::parse(". NS a.\na. AAAA 1.2.3.4\n").is_err());
        assert!(Hints::parse(". NS a.\n").is_err());
        assert!(Hints::parse(". NS a.\nb. A 1.2.3.4\n").is_err());
        assert!(Hints::parse(". NS a.\na. A 1.2.3.4@x\n").is_err());
    }

    #[test]
    fn learned_loopback_addresses_are_refused_unless_allowed() {
        let mut cfg = Config::default();
        let sa = |s: &str| SocketAddr::new(s.parse().unwrap(), 53);
        for local in [
            "127.0.0.1",
            "127.0.0.2",
            "127.255.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "::1",
            "::",
            "::ffff:127.0.0.2",
        ] {
            assert!(!cfg.learned_ok(&sa(local)), "{local}");
        }
        for remote in ["192.0.2.1", "10.0.0.1", "128.0.0.1", "2001:db8::1", "::2"] {
            assert!(cfg.learned_ok(&sa(remote)), "{remote}");
        }
        cfg.allow_loopback_upstreams = true;
        assert!(cfg.learned_ok(&sa("127.0.0.2")) && cfg.learned_ok(&sa("::1")));
        cfg.ipv6 = false;
        assert!(!cfg.learned_ok(&sa("::1")));
    }

    #[test]
    fn iana_hints_load() {
        let h = Hints::iana();
        assert_eq!(h.servers.len(), 13);
        assert!(h.servers.iter().all(|(_, a)| a.len() == 2));
    }
}
