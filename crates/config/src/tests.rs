//! Tests of the config module: parsing, errors, defaults, overrides.

use super::file::line_col;
use super::*;
use std::path::{Path, PathBuf};

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
    assert!(c
        .control_socket_path()
        .ends_with("shardns-127.0.0.1-5353.ctl"));
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
fn proxy_protocol_from_takes_prefixes() {
    let c = parse("[server]\nproxy_protocol_from = [\"127.0.0.1/32\", \"::1\", \"10.0.0.0/8\"]\n")
        .unwrap();
    let p = &c.server.proxy_protocol_from;
    assert_eq!(p.len(), 3);
    assert!(p[2].contains("10.1.2.3".parse().unwrap()));
    assert!(!p[0].contains("127.0.0.2".parse().unwrap()));
    assert!(parse("").unwrap().server.proxy_protocol_from.is_empty());
    let e = parse("[server]\nproxy_protocol_from = [\"127.0.0.1/40\"]\n").unwrap_err();
    assert!(e.to_string().contains("proxy_protocol_from"), "{e}");
    assert_eq!(e.position.map(|p| p.0), Some(2), "{e}");
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
    let e = parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\ntransfer_key = \"nope\"\n").unwrap_err();
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
    let e = parse("[[key]]\nname = \"k\"\nalgorithm = \"hmac-sha256\"\nsecret = \"not base64!\"\n")
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
    let e = parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\nnotify = [\"127.0.0.1\"]\n").unwrap_err();
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
    assert!(c
        .control_socket_path()
        .ends_with("shardns-127.0.0.1-5300.ctl"));
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
fn resolver_validation_keys() {
    let d = parse("").unwrap().resolver;
    assert!(d.validation && d.trust_anchor.is_none() && d.negative_trust_anchors.is_empty());
    assert!(d.aggressive_nsec);
    let r = parse(
        "[resolver]\nvalidation = false\ntrust_anchor = \"anchors.ds\"\n\
         negative_trust_anchors = [\"broken.example.\"]\naggressive_nsec = false\n",
    )
    .unwrap()
    .resolver;
    assert!(!r.validation && !r.aggressive_nsec);
    assert_eq!(
        r.trust_anchor.as_deref(),
        Some(Path::new("/etc/shardns/anchors.ds"))
    );
    assert_eq!(r.negative_trust_anchors[0].to_string(), "broken.example.");
    let e = parse("[resolver]\nnegative_trust_anchors = [\"a..b\"]\n").unwrap_err();
    assert!(e.to_string().contains("negative_trust_anchors"), "{e}");
}

#[test]
fn resolver_minimisation_and_loopback_keys() {
    let d = parse("").unwrap().resolver;
    assert!(d.qname_minimisation && !d.qname_minimisation_strict);
    assert!(!d.allow_loopback_upstreams);
    let r = parse(
        "[resolver]\nqname_minimisation = false\nqname_minimisation_strict = true\n\
         allow_loopback_upstreams = true\n",
    )
    .unwrap()
    .resolver;
    assert!(!r.qname_minimisation && r.qname_minimisation_strict);
    assert!(r.allow_loopback_upstreams);
    let mut c = parse("").unwrap();
    c.apply(&Overrides {
        allow_loopback_upstreams: true,
        ..Overrides::default()
    });
    assert!(c.resolver.allow_loopback_upstreams);
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
fn update_rate_limits() {
    let c = parse("").unwrap();
    assert_eq!(
        (c.limits.updates_per_second, c.limits.updates_burst),
        (100, 200)
    );
    let c = parse("[limits]\nupdates_per_second = 0\nupdates_burst = 5\n").unwrap();
    assert_eq!(
        (c.limits.updates_per_second, c.limits.updates_burst),
        (0, 5)
    );
    let e = parse("[limits]\nupdates_burst = 0\n").unwrap_err();
    assert!(e.to_string().contains("updates_burst"), "{e}");
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
    assert_eq!(
        (r.serve_stale, r.serve_stale_max, r.serve_stale_reply_ttl),
        (d.serve_stale, d.serve_stale_max, d.serve_stale_reply_ttl)
    );
    assert_eq!(
        (r.serve_stale_client_timeout_ms, r.serve_stale_recheck_ms),
        (d.serve_stale_client_timeout_ms, d.serve_stale_recheck_ms)
    );
    assert_eq!((r.prefetch, r.dns64), (d.prefetch, d.dns64));
    assert_eq!(r.max_negative_ttl, d.max_negative_ttl);
    let prefix: shardns_resolver::Dns64Prefix = r.dns64_prefix.parse().unwrap();
    assert_eq!(prefix, d.dns64_prefix);
    let r = parse(
        "[resolver]\nserve_stale = true\nserve_stale_max = 3600\nprefetch = true\n\
         dns64 = true\ndns64_prefix = \"2001:db8::/32\"\ndns64_exclude = [\"2001:db8::/32\"]\n",
    )
    .unwrap()
    .resolver;
    assert!(r.serve_stale && r.prefetch && r.dns64);
    assert_eq!(r.serve_stale_max, 3600);
    assert_eq!(
        r.dns64_exclude.as_deref(),
        Some(&["2001:db8::/32".to_string()][..])
    );
    assert!(parse("[resolver]\nserve_stale_max = 0\n").is_err());
    let r = parse(
        "[resolver]\ndns64 = true\ndns64_clients = [\"192.0.2.0/24\", \"2001:db8::1\"]\n\
         dns64_mapped = [\"198.51.100.0/24\"]\ndns64_suffix = \"::1\"\n\
         dns64_recursive_only = true\ndns64_break_dnssec = false\ndns64_synthall = true\n\
         dns64_ignore_aaaa = [\"example.com\"]\n",
    )
    .unwrap()
    .resolver;
    assert_eq!(r.dns64_clients.as_ref().map(Vec::len), Some(2));
    assert_eq!(r.dns64_mapped.as_ref().map(|m| m[0].len), Some(24));
    assert_eq!(r.dns64_suffix, "::1");
    assert!(r.dns64_recursive_only && !r.dns64_break_dnssec && r.dns64_synthall);
    assert_eq!(r.dns64_ignore_aaaa[0].to_string(), "example.com.");
    assert!(d.dns64_options.break_dnssec && d.dns64_options.clients.is_none());
    assert!(parse("[resolver]\ndns64_clients = [\"nonsense\"]\n").is_err());
    assert!(parse("[resolver]\ndns64_ignore_aaaa = [\"a..b\"]\n").is_err());
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

#[test]
fn secondary_zones_their_keys_files_and_flags() {
    let c = parse(
        "[[key]]\nname = \"xfr.\"\nalgorithm = \"hmac-sha256\"\nsecret = \"c2VjcmV0\"\n\
         [[zone]]\nname = \"s.\"\nfile = \"s.zone\"\nprimary = [\"127.0.0.1:5300\", \"[::1]:53\"]\n\
         primary_key = \"xfr.\"\n\
         [[zone]]\nname = \"m.\"\nprimary = [\"127.0.0.1:5300\"]\n\
         [[zone]]\nname = \"p.\"\nfile = \"p\"\n\
         [limits]\ntransfer_in_timeout_ms = 1000\ntransfer_in_max_records = 10\n\
         transfers_in = 3\ntransfer_in_idle_ms = 500\n",
    )
    .unwrap();
    assert_eq!(
        (
            c.limits.transfers_in,
            c.limits.transfers_in_per_primary,
            c.limits.transfer_in_idle_ms
        ),
        (3, 2, 500)
    );
    for zero in [
        "transfers_in",
        "transfers_in_per_primary",
        "transfer_in_idle_ms",
    ] {
        assert!(parse(&format!("[limits]\n{zero} = 0\n")).is_err(), "{zero}");
    }
    assert!(c.zones[0].is_secondary() && c.zones[1].is_secondary());
    assert!(!c.zones[2].is_secondary());
    assert_eq!(c.zones[0].file, PathBuf::from("/etc/shardns/s.zone"));
    // No file: the copy is kept in memory, and the path stays empty (not the config's
    // directory).
    assert_eq!(c.zones[1].file, PathBuf::new());
    assert_eq!(c.zones[0].primary.len(), 2);
    assert_eq!(c.zones[0].primary_key.as_ref().unwrap().to_string(), "xfr.");
    assert_eq!(c.limits.transfer_in_timeout_ms, 1000);
    assert_eq!(c.limits.transfer_in_max_records, 10);
    assert_eq!(c.limits.transfer_in_max_messages, 1_000_000);

    for (text, want) in [
        (
            "[[zone]]\nname = \"a.\"\n",
            "zone[0].file: missing field `file`",
        ),
        (
            "[[zone]]\nname = \"a.\"\nprimary = [\"127.0.0.1:53\"]\nprimary_key = \"nope.\"\n",
            "zone[0].primary_key: no [[key]] named nope.",
        ),
        (
            "[[key]]\nname = \"k.\"\nalgorithm = \"hmac-sha256\"\nsecret = \"c2VjcmV0\"\n\
             [[zone]]\nname = \"a.\"\nfile = \"a\"\nprimary_key = \"k.\"\n",
            "zone[1].primary_key: set, but the zone has no `primary`",
        ),
        (
            "[[zone]]\nname = \"a.\"\nprimary = [\"127.0.0.1\"]\n",
            "zone[0].primary",
        ),
        (
            "[limits]\ntransfer_in_max_messages = 0\n",
            "must be at least 1",
        ),
        (
            "[[resolver.rpz]]\nname = \"p.\"\nprimaries = [\"127.0.0.1:53\"]\nprimary_key = \"nope.\"\n",
            "resolver.rpz[0].primary_key: no [[key]] named nope.",
        ),
    ] {
        let e = parse(text).unwrap_err().to_string();
        // The index in the error is the zone's, whatever the tables before it.
        let want = want.replace("zone[1]", "zone[0]");
        assert!(e.contains(&want), "{text:?}: {e}");
    }

    // --secondary: a new zone kept in memory, a primary added to a --zone (whose file
    // keeps the copy), a second primary for the same zone.
    let mut c = parse("").unwrap();
    let flag = |s: &str| s.parse::<SecondaryFlag>().unwrap();
    let o = Overrides {
        zones: vec!["b.=/tmp/b".parse().unwrap()],
        secondaries: vec![
            flag("a=127.0.0.1:5300"),
            flag("b.=127.0.0.1:5301"),
            flag("a.=[::1]:5300"),
            flag("a.=127.0.0.1:5300"),
        ],
        ..Overrides::default()
    };
    c.apply(&o);
    let a = c.zones.iter().find(|z| z.name.to_string() == "a.").unwrap();
    assert_eq!(a.primary.len(), 2);
    assert!(a.file.as_os_str().is_empty());
    let b = c.zones.iter().find(|z| z.name.to_string() == "b.").unwrap();
    assert_eq!(b.file, PathBuf::from("/tmp/b"));
    assert!(b.is_secondary());
    assert!("a".parse::<SecondaryFlag>().is_err());
    assert!("a=127.0.0.1".parse::<SecondaryFlag>().is_err());
}

#[test]
fn signing_keys_and_their_defaults() {
    let c = parse(
        "[server]\nkey_directory = \"keys\"\n\
         [[zone]]\nname = \"a.\"\nfile = \"a\"\ndnssec = true\n\
         [[zone]]\nname = \"b.\"\nfile = \"b\"\ndnssec = true\nnsec3 = true\nnsec3_opt_out = true\n\
         algorithm = \"ED25519\"\nsignature_validity = \"2d\"\nsignature_refresh = 3600\n\
         [[zone]]\nname = \"c.\"\nfile = \"c\"\n",
    )
    .unwrap();
    assert_eq!(
        c.server.key_directory.as_deref(),
        Some(Path::new("/etc/shardns/keys"))
    );
    let (a, b, z) = (&c.zones[0], &c.zones[1], &c.zones[2]);
    assert!(a.dnssec && !a.nsec3 && !a.nsec3_opt_out);
    assert_eq!(a.algorithm, shardns_dnssec::Algorithm::EcdsaP256Sha256);
    assert_eq!(
        (a.signature_validity, a.signature_refresh),
        (14 * 86_400, 7 * 86_400)
    );
    assert!(b.dnssec && b.nsec3 && b.nsec3_opt_out);
    assert_eq!(b.algorithm, shardns_dnssec::Algorithm::Ed25519);
    assert_eq!(
        (b.signature_validity, b.signature_refresh),
        (2 * 86_400, 3600)
    );
    assert!(!z.dnssec);
    check_signing(&c, Path::new("x")).unwrap();

    for (bad, key) in [
        ("algorithm = \"rsasha1\"", "zone[0].algorithm"),
        ("algorithm = \"nope\"", "zone[0].algorithm"),
        ("signature_validity = \"14x\"", "zone[0].signature_validity"),
        ("signature_validity = 0", "zone[0].signature_validity"),
        ("signature_refresh = \"-1d\"", "zone[0].signature_refresh"),
    ] {
        let e = parse(&format!("[[zone]]\nname = \"a.\"\nfile = \"a\"\n{bad}\n")).unwrap_err();
        assert!(e.to_string().contains(key), "{bad}: {e}");
    }
}

#[test]
fn key_policy_defaults_values_and_bad_combinations() {
    let zone = |extra: &str| {
        format!(
            "[server]\nkey_directory = \"/k\"\n[[zone]]\nname = \"a.\"\nfile = \"a\"\n\
             dnssec = true\n{extra}\n"
        )
    };
    let c = parse(&zone("")).unwrap();
    let a = &c.zones[0];
    assert!(a.single_type_signing, "one CSK by default, as before");
    assert_eq!(
        (a.ksk_lifetime, a.zsk_lifetime, a.ksk_size, a.zsk_size),
        (None, None, None, None)
    );
    assert_eq!((a.signature_jitter, a.dnskey_ttl), (0, None));
    // ZoneConfig::new (--zone, zone_list) has the same defaults as a table.
    let mut made = ZoneConfig::new(a.name.clone(), a.file.clone());
    made.dnssec = true;
    assert_eq!(a, &made);
    assert!(c.warnings().is_empty());
    let c = parse(&zone(
        "single_type_signing = false\nksk_lifetime = \"365d\"\nzsk_lifetime = \"30d\"\n\
         algorithm = \"RSASHA512\"\nksk_size = 4096\nzsk_size = 2048\n\
         signature_jitter = \"12h\"\ndnskey_ttl = \"1h\"\n",
    ))
    .unwrap();
    let a = &c.zones[0];
    assert!(!a.single_type_signing);
    assert_eq!(a.algorithm, shardns_dnssec::Algorithm::RsaSha512);
    assert_eq!(
        (a.ksk_lifetime, a.zsk_lifetime, a.ksk_size, a.zsk_size),
        (
            Some(365 * 86_400),
            Some(30 * 86_400),
            Some(4096),
            Some(2048)
        )
    );
    assert_eq!((a.signature_jitter, a.dnskey_ttl), (12 * 3600, Some(3600)));
    check_signing(&c, Path::new("c.toml")).unwrap();
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());

    // A CSK's lifetime is ksk_lifetime; ZSK settings with a CSK are said to do nothing.
    let c = parse(&zone("ksk_lifetime = \"90d\"\nzsk_lifetime = \"30d\"\n")).unwrap();
    check_signing(&c, Path::new("c.toml")).unwrap();
    let w = c.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("zone a.: zsk_lifetime is ignored") && w[0].contains("CSK"),
        "{w:?}"
    );

    for (extra, key, says) in [
        (
            "signature_validity = \"10d\"\nsignature_refresh = \"4d\"\nsignature_jitter = \"6d\"",
            "zone[0].signature_jitter",
            "signature_jitter (518400 s) must be less than signature_validity less signature_refresh (518400 s)",
        ),
        ("signature_validity = \"1d\"\nsignature_refresh = \"1d\"", "zone[0].signature_refresh", "must be less than"),
        ("ksk_size = 2048", "zone[0].ksk_size", "applies to RSA keys only, and algorithm is ecdsap256sha256"),
        ("algorithm = \"rsasha256\"\nzsk_size = 1024", "zone[0].zsk_size", "2048, 3072 or 4096"),
    ] {
        let c = parse(&zone(extra)).unwrap();
        let e = check_signing(&c, Path::new("c.toml")).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(says), "{extra}: {e}");
    }
    for (extra, key) in [
        (
            "single_type_signing = \"no\"",
            "zone[0].single_type_signing",
        ),
        ("dnskey_ttl = 0", "zone[0].dnskey_ttl"),
        ("ksk_lifetime = \"0d\"", "zone[0].ksk_lifetime"),
        ("signature_jitter = \"1x\"", "zone[0].signature_jitter"),
    ] {
        let e = parse(&zone(extra)).unwrap_err();
        assert!(e.to_string().contains(key), "{extra}: {e}");
    }
    assert_eq!(
        parse(&zone("signature_jitter = 0")).unwrap().zones[0].signature_jitter,
        0
    );
}

#[test]
fn a_signed_zone_needs_a_key_directory() {
    let c = parse("[[zone]]\nname = \"a.example.\"\nfile = \"a\"\ndnssec = true\n").unwrap();
    let e = check_signing(&c, Path::new("/etc/shardns/shardns.toml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/etc/shardns/shardns.toml: zone[0].dnssec: zone a.example. is to be signed but no key \
         directory is set ([server] key_directory or --key-dir DIR)"
    );
    let c = parse(
        "[server]\nkey_directory = \"/k\"\n[[zone]]\nname = \"a.\"\nfile = \"a\"\ndnssec = true\n\
         signature_validity = \"1h\"\nsignature_refresh = \"1h\"\n",
    )
    .unwrap();
    let e = check_signing(&c, Path::new("c.toml")).unwrap_err();
    assert!(
        e.to_string().contains("zone[0].signature_refresh: zone a.: signature_refresh (3600 s) must be less than signature_validity (3600 s)"),
        "{e}"
    );
}

#[test]
fn dnssec_on_a_secondary_zone_is_signed_so_it_needs_keys() {
    let c = parse(
        "[[zone]]\nname = \"sec.example.\"\nprimary = [\"127.0.0.1:53\"]\ndnssec = true\n\
         [[zone]]\nname = \"plain.example.\"\nprimary = [\"127.0.0.1:53\"]\n",
    )
    .unwrap();
    // Signed as it arrives: no warning that it is ignored, but a key directory is needed.
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    let e = check_signing(&c, Path::new("c.toml")).unwrap_err();
    assert!(
        e.to_string()
            .contains("zone[0].dnssec: zone sec.example. is to be signed but no key directory"),
        "{e}"
    );
    let c = parse(
        "[server]\nkey_directory = \"k\"\n[[zone]]\nname = \"sec.example.\"\n\
         primary = [\"127.0.0.1:53\"]\ndnssec = true\n",
    )
    .unwrap();
    check_signing(&c, Path::new("c.toml")).unwrap();
}

#[test]
fn sign_flag_signs_the_zones_given_and_key_dir_sets_the_directory() {
    let mut c = parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\n").unwrap();
    let o = Overrides {
        zones: vec!["b.=/tmp/b".parse().unwrap()],
        sign: true,
        key_directory: Some("/var/lib/shardns/keys".into()),
        ..Overrides::default()
    };
    c.apply(&o);
    assert!(
        !c.zones[0].dnssec,
        "a zone of the file is not signed by --sign"
    );
    assert!(c.zones[1].dnssec);
    assert_eq!(
        c.server.key_directory.as_deref(),
        Some(Path::new("/var/lib/shardns/keys"))
    );
    check_signing(&c, Path::new("command line")).unwrap();
}

#[test]
fn rollover_settings_and_their_defaults() {
    let c = parse(
        "[[zone]]\nname = \"a.\"\nfile = \"a\"\n\
         [[zone]]\nname = \"b.\"\nfile = \"b\"\nzsk_lifetime = \"30d\"\npropagation_delay = \"5m\"\n\
         parent_ds_ttl = \"2h\"\nparent_propagation_delay = 60\n",
    )
    .unwrap();
    let (a, b) = (&c.zones[0], &c.zones[1]);
    assert_eq!(
        (
            a.zsk_lifetime,
            a.propagation_delay,
            a.parent_ds_ttl,
            a.parent_propagation_delay
        ),
        (None, 3600, 86_400, 3600)
    );
    assert_eq!(
        (
            b.zsk_lifetime,
            b.propagation_delay,
            b.parent_ds_ttl,
            b.parent_propagation_delay
        ),
        (Some(30 * 86_400), 300, 7200, 60)
    );
    for bad in [
        "zsk_lifetime = 0",
        "propagation_delay = \"x\"",
        "parent_ds_ttl = -1",
    ] {
        let e = parse(&format!("[[zone]]\nname = \"a.\"\nfile = \"a\"\n{bad}\n")).unwrap_err();
        let key = bad.split(' ').next().unwrap();
        assert!(e.to_string().contains(key), "{bad}: {e}");
    }
}

#[test]
fn cds_settings_and_their_defaults() {
    use shardns_dnssec::{CdsPublish, DigestType};
    let c = parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\n").unwrap();
    assert_eq!(
        (c.zones[0].cds_cdnskey_publish, c.zones[0].cds_digest_type),
        (CdsPublish::Rollover, DigestType::Sha256),
        "Knot's defaults"
    );
    for mode in CdsPublish::ALL {
        let c = parse(&format!(
            "[[zone]]\nname = \"a.\"\nfile = \"a\"\ncds_cdnskey_publish = \"{mode}\"\n\
             cds_digest_type = \"sha384\"\n"
        ))
        .unwrap();
        assert_eq!(c.zones[0].cds_cdnskey_publish, mode);
        assert_eq!(c.zones[0].cds_digest_type, DigestType::Sha384);
    }
    for bad in [
        "cds_cdnskey_publish = \"double_ds\"",
        "cds_cdnskey_publish = \"delete\"",
        "cds_digest_type = \"sha1\"",
        "cds_digest_type = 2",
    ] {
        let e = parse(&format!("[[zone]]\nname = \"a.\"\nfile = \"a\"\n{bad}\n")).unwrap_err();
        let key = bad.split(' ').next().unwrap();
        assert!(e.to_string().contains(key), "{bad}: {e}");
    }
}

#[test]
fn parent_agents_resolved_through_parent_resolvers() {
    let zone = "[server]\nkey_directory = \"k\"\n[[zone]]\nname = \"a.example.\"\nfile = \"a\"\n\
                dnssec = true\n";
    let c = parse(&format!(
        "{zone}parent_agents = \"resolve\"\nparent_resolvers = [\"127.0.0.1:5300\", \"::1\"]\n"
    ))
    .unwrap();
    let z = &c.zones[0];
    assert_eq!(z.parent_agents, ParentAgents::Resolve);
    assert!(!z.parent_agents.is_empty() && z.parent_agents.listed().is_empty());
    assert_eq!(
        z.parent_resolvers,
        vec![
            "127.0.0.1:5300".parse().unwrap(),
            "[::1]:53".parse::<SocketAddr>().unwrap()
        ]
    );
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    // The old form keeps its meaning; nothing named: nothing looked up.
    let c = parse(zone).unwrap();
    assert!(c.zones[0].parent_agents.is_empty() && c.zones[0].parent_resolvers.is_empty());
    for (bad, key, says) in [
        (
            "parent_agents = \"resolve\"",
            "parent_agents",
            "needs parent_resolvers",
        ),
        (
            "parent_resolvers = [\"127.0.0.1\"]",
            "parent_resolvers",
            "only read with parent_agents = \"resolve\"",
        ),
        (
            "parent_agents = [\"127.0.0.1\"]\nparent_resolvers = [\"127.0.0.1\"]",
            "parent_resolvers",
            "only read with",
        ),
        (
            "parent_agents = \"resolved\"",
            "parent_agents",
            "or \"resolve\"",
        ),
        (
            "parent_agents = \"resolve\"\nparent_resolvers = [\"ns.example\"]",
            "parent_resolvers",
            "ADDR:PORT",
        ),
        (
            "parent_agents = \"resolve\"\nparent_resolvers = \"127.0.0.1\"",
            "parent_resolvers",
            "",
        ),
    ] {
        let e = parse(&format!("{zone}{bad}\n")).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn parent_ds_check_and_push_settings() {
    let c = parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\n").unwrap();
    let z = &c.zones[0];
    assert!(z.parent_agents.is_empty() && z.ds_push.is_none());
    assert_eq!(z.ds_check_interval, 3600, "Knot's check-interval");
    let keys = "[[key]]\nname = \"p\"\nalgorithm = \"hmac-sha256\"\nsecret = \"AAAA\"\n";
    let c = parse(&format!(
        "[server]\nkey_directory = \"k\"\n{keys}[[zone]]\nname = \"a.\"\nfile = \"a\"\n\
         dnssec = true\nparent_agents = [\"127.0.0.10:5300\", \"::1\"]\n\
         parent_agents_key = \"p\"\nds_check_interval = \"2s\"\n\
         ds_push = \"127.0.0.10\"\nds_push_key = \"p\"\n"
    ))
    .unwrap();
    let z = &c.zones[0];
    assert_eq!(
        z.parent_agents,
        ParentAgents::Listed(vec![
            "127.0.0.10:5300".parse().unwrap(),
            "[::1]:53".parse().unwrap()
        ])
    );
    assert_eq!(z.ds_check_interval, 2);
    assert_eq!(z.ds_push, Some("127.0.0.10:53".parse().unwrap()));
    assert_eq!(
        z.ds_push_key.as_ref().map(ToString::to_string),
        Some("p.".into())
    );
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    for bad in [
        "parent_agents = [\"parent.example\"]",
        "parent_agents = \"127.0.0.1\"",
        "ds_push = \"127.0.0.1:x\"",
        "ds_check_interval = 0",
        "parent_agents_key = \"nokey\"",
        "ds_push_key = \"nokey\"",
    ] {
        let e = parse(&format!("[[zone]]\nname = \"a.\"\nfile = \"a\"\n{bad}\n")).unwrap_err();
        let key = bad.split(' ').next().unwrap();
        assert!(e.to_string().contains(key), "{bad}: {e}");
    }
    // On a zone not signed here: said to do nothing.
    let c = parse("[[zone]]\nname = \"a.\"\nfile = \"a\"\nds_push = \"127.0.0.1\"\n").unwrap();
    assert!(
        c.warnings().iter().any(|w| w.contains("ds_push")),
        "{:?}",
        c.warnings()
    );
}

#[test]
fn tls_nsid_and_cookie_keys() {
    let c = parse(
        "[server]\ntls_listen = [\"127.0.0.1:853\"]\ntls_certificate = \"c.pem\"\n\
         tls_key = \"/k.pem\"\nnsid = \"ns1\"\ncookies = false\n\
         cookie_secrets = [\"e5e973e5a6b2a43f48e7dc849e37bfcf\"]\n\
         [limits]\ntls_handshake_timeout_ms = 700\n",
    )
    .unwrap();
    assert_eq!(c.server.tls_listen, vec!["127.0.0.1:853".parse().unwrap()]);
    assert!(c.server.tls_certificate.as_ref().unwrap().is_absolute());
    assert_eq!(c.server.tls_key.as_deref(), Some(Path::new("/k.pem")));
    assert_eq!(c.server.nsid.as_deref(), Some("ns1"));
    assert_eq!(c.server.cookies, Some(false));
    assert_eq!(c.limits.tls_handshake_timeout_ms, 700);
    for (text, key) in [
        ("[server]\nnsid = \"\"\n", "server.nsid"),
        (
            "[server]\ncookie_secrets = [\"abc\"]\n",
            "server.cookie_secrets",
        ),
        (
            "[limits]\ntls_handshake_timeout_ms = 0\n",
            "tls_handshake_timeout_ms",
        ),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.to_string().contains(key), "{e}");
    }
}

#[test]
fn dnstap_keys_and_flags() {
    let c =
        parse("[dnstap]\nsocket = \"tap.sock\"\nresponses = false\nidentity = \"ns1\"\n").unwrap();
    assert_eq!(
        c.dnstap.socket.as_deref(),
        Some(Path::new("/etc/shardns/tap.sock"))
    );
    assert!(c.dnstap.enabled());
    assert!(c.dnstap.queries && !c.dnstap.responses);
    assert_eq!(c.dnstap.identity.as_deref(), Some("ns1"));
    assert!(!Config::default().dnstap.enabled());
    // A flag's destination replaces the file's, whichever kind it is.
    let o = Overrides {
        dnstap_file: Some(PathBuf::from("/tmp/t.fstrm")),
        ..Overrides::default()
    };
    let mut c2 = c.clone();
    c2.apply(&o);
    assert_eq!(c2.dnstap.socket, None);
    assert_eq!(c2.dnstap.file.as_deref(), Some(Path::new("/tmp/t.fstrm")));
    let e = parse("[dnstap]\nsockets = \"x\"\n").unwrap_err();
    assert!(e.to_string().contains("sockets"), "{e}");
}

#[test]
fn catalog_keys_and_their_errors() {
    let c = parse(
        "[[template]]\nname = \"blue\"\nfile = \"/var/lib/shardns/{zone}.zone\"\n\
         [[zone]]\nname = \"cat.in.\"\nprimary = [\"127.0.0.1:53\"]\ncatalog = \"consume\"\n\
         catalog_templates = [\"blue\"]\n\
         [[zone]]\nname = \"cat.out.\"\ncatalog = \"produce\"\n\
         [[zone]]\nname = \"a.\"\nfile = \"a\"\ncatalog_member = \"cat.out.\"\ncatalog_group = \"g\"\n",
    )
    .unwrap();
    assert_eq!(c.zones[0].catalog, Some(CatalogRole::Consume));
    assert_eq!(c.zones[1].catalog, Some(CatalogRole::Produce));
    assert_eq!(
        c.templates[0].file.as_deref(),
        Some("/var/lib/shardns/{zone}.zone")
    );
    assert_eq!(c.zones[2].catalog_group.as_deref(), Some("g"));
    for (text, want) in [
        (
            "[[zone]]\nname = \"c.\"\ncatalog = \"consume\"\nfile = \"c\"\n",
            "zone[0].catalog: \"consume\" needs `primary`",
        ),
        (
            "[[zone]]\nname = \"c.\"\ncatalog = \"produce\"\nfile = \"c\"\n",
            "zone[0].catalog: \"produce\": the catalog is generated",
        ),
        (
            "[[zone]]\nname = \"c.\"\ncatalog = \"both\"\n",
            "unknown variant `both`",
        ),
        (
            "[[zone]]\nname = \"c.\"\nprimary = [\"127.0.0.1:53\"]\ncatalog = \"consume\"\n\
             catalog_templates = [\"red\"]\n",
            "zone[0].catalog_templates: no [[template]] named \"red\"",
        ),
        (
            "[[zone]]\nname = \"a.\"\nfile = \"a\"\ncatalog_member = \"c.\"\n",
            "zone[0].catalog_member: no zone c. with catalog = \"produce\"",
        ),
        (
            "[[zone]]\nname = \"a.\"\nfile = \"a\"\ncatalog_group = \"g\"\n",
            "zone[0].catalog_group: set, but the zone has no `catalog_member`",
        ),
        (
            "[[zone]]\nname = \"c.\"\ncatalog = \"produce\"\n\
             [[zone]]\nname = \"a.\"\nfile = \"a\"\ncatalog_member = \"c.\"\ncatalog_group = \"GROUP\"\n",
            "zone[1].catalog_group: longer than 255 octets",
        ),
        (
            "[[template]]\nname = \"t\"\nprimary_key = \"nope.\"\n",
            "template[0].primary_key: no [[key]] named nope.",
        ),
    ] {
        let text = text.replace("GROUP", &"g".repeat(256));
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

#[test]
fn template_files_are_anchored_at_the_config() {
    let c = parse("[[template]]\nname = \"t\"\nfile = \"copies/{zone}.zone\"\n").unwrap();
    assert_eq!(
        c.templates[0].file.as_deref(),
        Some("/etc/shardns/copies/{zone}.zone")
    );
}

#[test]
fn primary_tls_is_checked_at_load() {
    let dir = std::env::temp_dir().join(format!("shardns-cfg-xot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "no PEM here\n").unwrap();
    let zone = |tls: &str| {
        format!("[[zone]]\nname = \"a.\"\nprimary = [\"127.0.0.1:853\"]\nprimary_tls = {tls}\n")
    };
    for (text, want) in [
        (
            zone(&format!(
                "{{ ca_file = \"{}\", name = \"ns1.a\" }}",
                empty.display()
            )),
            "zone[0].primary_tls: ca_file ",
        ),
        (
            zone("{ ca_file = \"missing.pem\", name = \"ns1.a\" }"),
            "ca_file /etc/shardns/missing.pem",
        ),
        (
            zone(&format!(
                "{{ ca_file = \"{}\", name = \"not a name!\" }}",
                empty.display()
            )),
            "zone[0].primary_tls: name \"not a name!\"",
        ),
        (
            zone("{ name = \"ns1.a\" }"),
            "zone[0].primary_tls: needs ca_file and name (or spki_sha256)",
        ),
        (
            zone("{ ca_file = \"x\" }"),
            "needs ca_file and name (or spki_sha256)",
        ),
        (
            zone("{ ca_file = \"x\", spki_sha256 = [\"3q2+7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGho=\"] }"),
            "either ca_file (with name) or spki_sha256, not both",
        ),
        (
            zone("{ spki_sha256 = [\"c2VjcmV0\"] }"),
            "not a SHA-256 digest",
        ),
        (zone("{ spki_sha256 = [\"not base64!\"] }"), "spki_sha256 \"not base64!\""),
        (
            zone("{ ca_file = \"x\", name = \"n\", pin = \"y\" }"),
            "unknown field `pin`",
        ),
        (
            "[[zone]]\nname = \"a.\"\nfile = \"a\"\nprimary_tls = { ca_file = \"x\", name = \"n\" }\n"
                .to_string(),
            "zone[0].primary_tls: set, but the zone has no `primary`",
        ),
        (
            "[[template]]\nname = \"t\"\nprimary_tls = { ca_file = \"nope.pem\", name = \"n\" }\n"
                .to_string(),
            "template[0].primary_tls: ca_file /etc/shardns/nope.pem",
        ),
    ] {
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
    assert!(parse(&zone(&format!(
        "{{ ca_file = \"{}\", name = \"ns1.a\" }}",
        empty.display()
    )))
    .unwrap_err()
    .to_string()
    .contains("no certificate in it"));
    // A pin alone (with or without a name for SNI) needs no file.
    let c = parse(&zone(
        "{ spki_sha256 = [\"3q2+7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGho=\"] }",
    ))
    .unwrap();
    assert!(c.zones[0].primary_tls.as_ref().unwrap().check().is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn update_policy_lines_are_checked_where_they_are_written() {
    let c = parse(
        "[[zone]]\nname = \"d.test.\"\nfile = \"d.zone\"\n\
         update_policy = [\n  \"grant acme-key. wildcard _acme-challenge.* TXT\",\n  \"max-records 10\",\n]\n\
         serial_policy = \"unixtime\"\n\
         [[zone]]\nname = \"s.test.\"\nfile = \"s.zone\"\n",
    )
    .unwrap();
    assert!(c.zones[0].updatable() && !c.zones[1].updatable());
    assert_eq!(c.zones[0].serial_policy, SerialPolicy::UnixTime);
    assert_eq!(c.zones[1].serial_policy, SerialPolicy::Increment);
    assert!(c.zones[0].policy().is_ok());
    // A bad line: the error names the file, the line it is on and what is wrong.
    let e = parse(
        "[[zone]]\nname = \"s.test.\"\nfile = \"s.zone\"\n\
         [[zone]]\nname = \"d.test.\"\nfile = \"d.zone\"\n\
         update_policy = [\n  \"grant k. name x A\",\n  \"grant k. sometimes x A\",\n]\n",
    )
    .unwrap_err();
    assert_eq!(e.position, Some((9, 4)), "{e}");
    assert_eq!(e.key.as_deref(), Some("zone[1].update_policy[1]"));
    assert!(e.message.contains("sometimes"), "{e}");
    let text = e.to_string();
    assert!(text.contains("shardns.toml:9"), "{text}");
    let e =
        parse("[[zone]]\nname = \"d.\"\nfile = \"d\"\nserial_policy = \"weekly\"\n").unwrap_err();
    assert!(e.message.contains("dateserial"), "{e}");
}

#[test]
fn zonefile_sync_takes_never_zero_and_durations() {
    let zone = |v: &str| format!("[[zone]]\nname = \"d.\"\nfile = \"d\"\nzonefile_sync = {v}\n");
    let sync = |v: &str| parse(&zone(v)).unwrap().zones[0].zonefile_sync;
    assert_eq!(sync("\"never\""), None);
    assert_eq!(sync("0"), Some(0));
    assert_eq!(sync("\"0\""), Some(0));
    assert_eq!(sync("\"5m\""), Some(300));
    assert_eq!(sync("30"), Some(30));
    let absent = parse("[[zone]]\nname = \"d.\"\nfile = \"d\"\n").unwrap();
    assert_eq!(absent.zones[0].zonefile_sync, Some(60));
    let e = parse(&zone("\"sometimes\"")).unwrap_err();
    assert!(e.to_string().contains("never"), "{e}");
}

#[test]
fn update_forwarding_takes_a_bool_or_prefixes_on_a_secondary_zone() {
    let zone = |v: &str| format!("[[zone]]\nname = \"d.\"\nprimary = [\"192.0.2.1:53\"]\n{v}\n");
    let acl = |v: &str| parse(&zone(v)).unwrap().zones[0].update_forwarding.clone();
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    assert!(acl("").is_empty());
    assert!(acl("update_forwarding = false").is_empty());
    let all = acl("update_forwarding = true");
    assert!(all.iter().any(|p| p.contains(ip("203.0.113.9"))));
    assert!(all.iter().any(|p| p.contains(ip("2001:db8::1"))));
    let some = acl("update_forwarding = [\"127.0.0.0/8\", \"::1\"]");
    assert!(some.iter().any(|p| p.contains(ip("127.0.0.2"))));
    assert!(some.iter().any(|p| p.contains(ip("::1"))));
    assert!(!some.iter().any(|p| p.contains(ip("192.0.2.1"))));
    let e = parse(&zone("update_forwarding = [\"127.0.0.0/33\"]")).unwrap_err();
    assert!(e.to_string().contains("127.0.0.0/33"), "{e}");
    // A primary zone has nowhere to forward to.
    let e = parse("[[zone]]\nname = \"d.\"\nfile = \"d\"\nupdate_forwarding = true\n").unwrap_err();
    assert!(e.to_string().contains("update_forwarding"), "{e}");
}

#[test]
fn a_template_takes_update_forwarding() {
    let toml = |v: &str| format!("[[template]]\nname = \"m\"\n{v}\n");
    let acl = |v: &str| {
        parse(&toml(v)).unwrap().templates[0]
            .update_forwarding
            .clone()
    };
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    assert!(acl("").is_empty());
    assert!(acl("update_forwarding = true")
        .iter()
        .any(|p| p.contains(ip("203.0.113.9"))));
    let some = acl("update_forwarding = [\"127.0.0.0/8\"]");
    assert!(some.iter().any(|p| p.contains(ip("127.0.0.2"))));
    assert!(!some.iter().any(|p| p.contains(ip("192.0.2.1"))));
    let e = parse(&toml("update_forwarding = [\"10.0.0.0/40\"]")).unwrap_err();
    assert!(e.to_string().contains("10.0.0.0/40"), "{e}");
}

#[test]
fn offline_ksk_says_what_it_ignores() {
    let zone = |extra: &str| {
        format!(
            "[server]\nkey_directory = \"/k\"\n[[zone]]\nname = \"a.\"\nfile = \"a\"\n{extra}\n"
        )
    };
    let c = parse(&zone("dnssec = true\noffline_ksk = true\n")).unwrap();
    assert!(c.zones[0].offline_ksk);
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    assert!(!parse(&zone("dnssec = true")).unwrap().zones[0].offline_ksk);
    // Rollover settings: the server makes no key; not the CSK warning either.
    let c = parse(&zone(
        "dnssec = true\noffline_ksk = true\nzsk_lifetime = \"30d\"\nksk_lifetime = \"365d\"\n",
    ))
    .unwrap();
    // zsk_lifetime is pregenerate's: only ksk_lifetime is said to do nothing.
    let w = c.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("ksk_lifetime is ignored with offline_ksk"),
        "{w:?}"
    );
    let w = parse(&zone("offline_ksk = true")).unwrap().warnings();
    assert!(w.len() == 1 && w[0].contains("not signed here"), "{w:?}");
}

#[test]
fn dnskey_management_and_its_default() {
    use shardns_dnssec::DnskeyManagement;
    let zone = "[[zone]]\nname = \"a.\"\nfile = \"a\"\n";
    let c = parse(zone).unwrap();
    assert_eq!(c.zones[0].dnskey_management, DnskeyManagement::Full);
    let c = parse(&format!("{zone}dnskey_management = \"incremental\"\n")).unwrap();
    assert_eq!(c.zones[0].dnskey_management, DnskeyManagement::Incremental);
    let e = parse(&format!("{zone}dnskey_management = \"merge\"\n")).unwrap_err();
    assert!(e.to_string().contains("dnskey_management"), "{e}");
    assert!(e.to_string().contains("full, incremental"), "{e}");
}
