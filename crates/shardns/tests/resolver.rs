//! End-to-end tests of the resolver role (`shardns serve --recursion`): a root instance on
//! 127.0.0.1 delegating `test.` and `other.` to a TLD instance on 127.0.0.2, and resolver
//! instances on 127.0.0.3 (and .4) whose root hints point at our root. Every instance is a
//! real `shardns` process, killed when its guard drops.
//!
//! Referrals from our root carry plain glue addresses (port 53), so the resolvers run with
//! `--upstream-port` set to the TLD instance's port. Never: any address outside 127.0.0.0/8,
//! unbounded waits, or processes left running.

mod common;

use common::{dig, free_port, parse, udp_client, udp_exchange, Server, TempDir};
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

const ROOT_ZONE: &str = "\
$TTL 3600
.                   IN SOA a.root-servers.net. admin.root-servers.net. 1 3600 600 86400 300
.                   IN NS  a.root-servers.net.
a.root-servers.net. IN A   127.0.0.1
test.               IN NS  ns.test.
ns.test.            IN A   127.0.0.2
other.              IN NS  ns.other.
ns.other.           IN A   127.0.0.2
";

const TEST_ZONE: &str = "\
$TTL 300
@     IN SOA ns.test. admin.test. 1 3600 600 86400 60
@     IN NS  ns.test.
ns    IN A   127.0.0.2
www   IN A   192.0.2.1
alias IN CNAME www.other.
";

const OTHER_ZONE: &str = "\
$TTL 300
@     IN SOA ns.other. admin.other. 1 3600 600 86400 60
@     IN NS  ns.other.
ns    IN A   127.0.0.2
www   IN A   192.0.2.2
";

/// One running `shardns serve` on a 127.0.0.x address (two workers); killed on drop.
fn instance(name: &str, addr: SocketAddr, args: &[&str]) -> Server {
    let mut all = vec!["--workers", "2"];
    all.extend_from_slice(args);
    // The address makes the directory unique among the tests running at once.
    let tag = format!("{name}-{}-{}", addr.ip(), addr.port());
    Server::start_at(&tag, &[addr], &all)
}

/// Our own root (127.0.0.1) and TLD (127.0.0.2) instances, and a hints file for them.
struct Authorities {
    dir: TempDir,
    _root: Server,
    tld: Server,
    hints: PathBuf,
}

fn authorities(tag: &str) -> Authorities {
    let dir = TempDir::new(tag);
    let root_zone = dir.write("root.zone", ROOT_ZONE);
    let test_zone = dir.write("test.zone", TEST_ZONE);
    let other_zone = dir.write("other.zone", OTHER_ZONE);
    let root_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let tld_addr: SocketAddr = format!("127.0.0.2:{}", free_port()).parse().unwrap();
    let root = instance(
        "root",
        root_addr,
        &["--zone", &format!(".={}", root_zone.display())],
    );
    let tld = instance(
        "tld",
        tld_addr,
        &[
            "--zone",
            &format!("test.={}", test_zone.display()),
            "--zone",
            &format!("other.={}", other_zone.display()),
        ],
    );
    let hints = dir.write(
        "root.hints",
        &format!(
            "; our test root\n. 3600000 NS a.root-servers.net.\na.root-servers.net. 3600000 A 127.0.0.1@{}\n",
            root_addr.port()
        ),
    );
    Authorities {
        dir,
        _root: root,
        tld,
        hints,
    }
}

impl Authorities {
    /// A resolver instance on `ip` using our root, plus `args`; it may ask the loopback
    /// addresses our referrals give.
    fn resolver(&self, name: &str, ip: &str, args: &[&str]) -> Server {
        let mut all = vec!["--allow-loopback-upstreams"];
        all.extend_from_slice(args);
        self.resolver_as_deployed(name, ip, &all)
    }

    /// A resolver instance on `ip` using our root, plus `args`, without
    /// `--allow-loopback-upstreams`.
    fn resolver_as_deployed(&self, name: &str, ip: &str, args: &[&str]) -> Server {
        let addr: SocketAddr = format!("{ip}:{}", free_port()).parse().unwrap();
        let port = self.tld.addr.port().to_string();
        let hints = self.hints.display().to_string();
        let mut all = vec![
            "--recursion",
            // The default local zone test. (RFC 6761, as Unbound) would answer the names.
            "--local-zone",
            "test. nodefault",
            "--no-validation",
            "--root-hints",
            &hints,
            "--upstream-port",
            &port,
        ];
        all.extend_from_slice(args);
        instance(name, addr, &all)
    }
}

/// A query with RD set (and EDNS when `edns` gives a size).
fn rd_query(id: u16, name: &str, qtype: u16, edns: Option<u16>) -> Vec<u8> {
    let mut q = common::query(id, name, qtype, edns);
    q[2] |= 0x01;
    q
}

fn ask(server: SocketAddr, id: u16, name: &str, qtype: RecordType) -> hickory_proto::op::Message {
    let sock = udp_client(server);
    let resp = udp_exchange(&sock, &rd_query(id, name, u16::from(qtype), Some(1232)))
        .unwrap_or_else(|| panic!("no answer from {server} for {name}"));
    parse(&resp)
}

fn rdatas(m: &hickory_proto::op::Message) -> Vec<String> {
    m.answers
        .iter()
        .map(|r| format!("{} {} {}", r.name, r.record_type(), r.data))
        .collect()
}

#[test]
fn resolves_through_our_own_root_and_tld() {
    let auth = authorities("resolver-main");
    let res = auth.resolver("resolver", "127.0.0.3", &[]);

    // A plain A answer, found by iteration from the root.
    let m = ask(res.addr, 1, "www.test.", RecordType::A);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.metadata.recursion_available && m.metadata.recursion_desired);
    assert!(!m.metadata.authoritative);
    assert_eq!(rdatas(&m), ["www.test. A 192.0.2.1"]);
    assert_eq!(res.stat("shardns_resolver_cache_hits_total"), 0.0);
    let upstream = res.stat("shardns_resolver_upstream_queries_total");
    assert!(upstream >= 2.0, "root and TLD were asked: {upstream}");

    // The second identical query is a cache hit: no upstream query, one lock per name.
    let m = ask(res.addr, 2, "www.test.", RecordType::A);
    assert_eq!(rdatas(&m), ["www.test. A 192.0.2.1"]);
    assert_eq!(res.stat("shardns_resolver_cache_hits_total"), 1.0);
    assert_eq!(
        res.stat("shardns_resolver_upstream_queries_total"),
        upstream
    );
    assert_eq!(res.stat("shardns_resolver_cache_locks_per_hit"), 1.0);

    // A CNAME from one zone into another, both resolved.
    let m = ask(res.addr, 3, "alias.test.", RecordType::A);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(
        rdatas(&m),
        ["alias.test. CNAME www.other.", "www.other. A 192.0.2.2"]
    );

    // NXDOMAIN with the zone's SOA in the authority section.
    let m = ask(res.addr, 4, "nope.test.", RecordType::A);
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert!(m.answers.is_empty());
    assert_eq!(m.authorities.len(), 1);
    assert_eq!(m.authorities[0].record_type(), RecordType::SOA);
    assert_eq!(m.authorities[0].name.to_string(), "test.");

    // The same over TCP, and through dig (a client that is not ours).
    let mut s = TcpStream::connect_timeout(&res.addr, Duration::from_secs(3)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let resp = common::tcp_exchange_on(&mut s, &[rd_query(5, "www.other.", 1, None)]);
    assert_eq!(rdatas(&parse(&resp[0])), ["www.other. A 192.0.2.2"]);
    let out = dig(res.addr, &["+short", "alias.test", "A"]);
    assert_eq!(common::sorted_lines(&out), ["192.0.2.2", "www.other."]);

    // Without RD, names outside our zones are still refused.
    let sock = udp_client(res.addr);
    let resp = udp_exchange(&sock, &common::query(6, "www.test.", 1, None)).unwrap();
    assert_eq!(parse(&resp).metadata.response_code, ResponseCode::Refused);

    assert_eq!(res.stat("shardns_resolver_servfails_total"), 0.0);
    assert!(res.stat("shardns_resolver_cache_hits_total") >= 2.0);
}

#[test]
fn recursion_acl_refuses_other_clients() {
    let auth = authorities("resolver-acl");
    // Only ::1 may recurse, from the config file; our client comes from 127.0.0.1.
    let config = auth.dir.write(
        "resolver.toml",
        &format!(
            "[resolver]\nrecursion = true\nroot_hints = {:?}\nupstream_port = {}\nallow = [\"::1\"]\n\
             local_zone = [\"test. nodefault\"]\n",
            auth.hints.display().to_string(),
            auth.tld.addr.port()
        ),
    );
    let addr: SocketAddr = format!("127.0.0.3:{}", free_port()).parse().unwrap();
    let res = instance("acl", addr, &["-c", &config.display().to_string()]);
    let m = ask(res.addr, 1, "www.test.", RecordType::A);
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    assert!(m.answers.is_empty());
    assert_eq!(res.stat("shardns_resolver_refused_total"), 1.0);
    assert_eq!(res.stat("shardns_resolver_upstream_queries_total"), 0.0);
}

#[test]
fn forwards_a_zone_to_another_resolver() {
    let auth = authorities("resolver-fwd");
    let upstream = auth.resolver("upstream", "127.0.0.3", &[]);
    let fwd = format!("test.={}", upstream.addr);
    // test. is forwarded (RD set) to the other resolver instead of being iterated.
    let forwarder = auth.resolver("forwarder", "127.0.0.4", &["--forward", &fwd]);
    let m = ask(forwarder.addr, 1, "www.test.", RecordType::A);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(rdatas(&m), ["www.test. A 192.0.2.1"]);
    assert_eq!(
        forwarder.stat("shardns_resolver_upstream_queries_total"),
        1.0
    );
    assert_eq!(upstream.stat("shardns_resolver_cache_misses_total"), 1.0);
}

/// Issue 30, defect 4: a referral to a loopback address (our root's glue, `ns.test. A
/// 127.0.0.2`) used to be followed. Without `--allow-loopback-upstreams` the root, given in
/// the hints, is asked, the TLD on 127.0.0.2 is not, and the client gets SERVFAIL with EDE
/// 22; with the switch the name resolves (the other tests).
#[test]
fn referrals_to_loopback_are_not_followed_by_default() {
    let auth = authorities("resolver-loopback");
    let res = auth.resolver_as_deployed("deployed", "127.0.0.3", &[]);
    let tld_queries = auth.tld.stat("shardns_queries_total");
    let m = ask(res.addr, 1, "www.test.", RecordType::A);
    assert_eq!(m.metadata.response_code, ResponseCode::ServFail);
    let out = dig(res.addr, &["www.other", "A"]);
    assert!(out.contains("SERVFAIL") && out.contains("EDE: 22"), "{out}");
    assert!(res.stat("shardns_resolver_upstream_queries_total") >= 2.0);
    assert_eq!(auth.tld.stat("shardns_queries_total"), tld_queries);
    let lab = auth.resolver("lab", "127.0.0.4", &[]);
    let m = ask(lab.addr, 1, "www.test.", RecordType::A);
    assert_eq!(rdatas(&m), ["www.test. A 192.0.2.1"]);
    assert!(auth.tld.stat("shardns_queries_total") > tld_queries);
}

#[test]
fn unreachable_root_gives_servfail_with_ede() {
    let dir = TempDir::new("resolver-dead");
    // Nothing listens on this port: every upstream query is refused at once.
    let hints = dir.write(
        "dead.hints",
        &format!(
            ". NS a.root-servers.net.\na.root-servers.net. A 127.0.0.1@{}\n",
            free_port()
        ),
    );
    let addr: SocketAddr = format!("127.0.0.3:{}", free_port()).parse().unwrap();
    let res = instance(
        "dead",
        addr,
        &[
            "--recursion",
            // The default local zone test. (RFC 6761, as Unbound) would answer the names.
            "--local-zone",
            "test. nodefault",
            "--no-validation",
            "--root-hints",
            &hints.display().to_string(),
        ],
    );
    let sock = udp_client(res.addr);
    let resp = udp_exchange(&sock, &rd_query(9, "www.test.", 1, Some(1232))).unwrap();
    let m = parse(&resp);
    assert_eq!(m.metadata.response_code, ResponseCode::ServFail);
    let out = dig(res.addr, &["www.test", "A"]);
    assert!(out.contains("SERVFAIL") && out.contains("EDE"), "{out}");
    assert_eq!(res.stat("shardns_resolver_servfails_total"), 2.0);
}

/// A resolver from a config file with `extra` in `[resolver]`, over our root and TLD.
fn resolver_with(auth: &Authorities, name: &str, ip: &str, extra: &str) -> Server {
    let config = auth.dir.write(
        &format!("{name}.toml"),
        &format!(
            "[resolver]\nrecursion = true\nvalidation = false\nallow_loopback_upstreams = true\n\
             local_zone = [\"test. nodefault\"]\nroot_hints = {:?}\nupstream_port = {}\n{extra}",
            auth.hints.display().to_string(),
            auth.tld.addr.port()
        ),
    );
    let addr: SocketAddr = format!("{ip}:{}", free_port()).parse().unwrap();
    instance(name, addr, &["-c", &config.display().to_string()])
}

/// Serve-stale (RFC 8767) against the real binary: TTLs cut to 1 s, the TLD's server
/// stopped, the expired answers still given (TTL 30, EDE 3; EDE 19 for the NXDOMAIN), as
/// dig shows them; and not without `serve_stale`.
#[test]
fn serve_stale_when_the_authoritative_server_is_stopped() {
    let auth = authorities("resolver-stale");
    let ttls = "max_ttl = 1\nmax_negative_ttl = 1\n";
    let res = resolver_with(
        &auth,
        "stale",
        "127.0.0.5",
        &format!("serve_stale = true\n{ttls}"),
    );
    let plain = resolver_with(&auth, "nostale", "127.0.0.6", ttls);
    for r in [&res, &plain] {
        assert_eq!(
            rdatas(&ask(r.addr, 1, "www.test.", RecordType::A)),
            ["www.test. A 192.0.2.1"]
        );
        let m = ask(r.addr, 2, "nope.test.", RecordType::A);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    }
    let Authorities { tld, .. } = auth;
    drop(tld);
    std::thread::sleep(Duration::from_millis(2_500));

    let out = dig(
        res.addr,
        &["+noall", "+answer", "+comments", "www.test", "A"],
    );
    assert!(out.contains("status: NOERROR"), "{out}");
    assert!(out.contains("EDE: 3 (Stale Answer)"), "{out}");
    let answer: Vec<&str> = out.lines().filter(|l| l.starts_with("www.test.")).collect();
    assert_eq!(answer.len(), 1, "{out}");
    assert!(answer[0]
        .split_whitespace()
        .eq(["www.test.", "30", "IN", "A", "192.0.2.1"]));
    let out = dig(res.addr, &["+noall", "+comments", "nope.test", "A"]);
    assert!(out.contains("status: NXDOMAIN"), "{out}");
    assert!(out.contains("EDE: 19 (Stale NXDOMAIN Answer)"), "{out}");

    // Those two came from resolutions whose upstreams failed: counted stale.
    assert_eq!(res.stat("shardns_resolver_stale_answers_total"), 2.0);
    // Both failed lately (their failure-recheck window is 30 s): the worker answers them
    // stale from the cache-hit path (counted as hits), not through a resolution.
    let hits = res.stat("shardns_resolver_cache_hits_total");
    let misses = res.stat("shardns_resolver_cache_misses_total");
    for _ in 0..2 {
        let out = dig(
            res.addr,
            &["+noall", "+answer", "+comments", "www.test", "A"],
        );
        assert!(out.contains("EDE: 3 (Stale Answer)"), "{out}");
        let stale = ["www.test.", "30", "IN", "A", "192.0.2.1"];
        assert!(out.lines().any(|l| l.split_whitespace().eq(stale)), "{out}");
    }
    let out = dig(res.addr, &["+noall", "+comments", "nope.test", "A"]);
    assert!(out.contains("EDE: 19 (Stale NXDOMAIN Answer)"), "{out}");
    assert_eq!(res.stat("shardns_resolver_cache_hits_total") - hits, 3.0);
    assert_eq!(res.stat("shardns_resolver_cache_misses_total"), misses);
    assert_eq!(res.stat("shardns_resolver_stale_answers_total"), 5.0);

    let out = dig(plain.addr, &["+noall", "+comments", "www.test", "A"]);
    assert!(out.contains("status: SERVFAIL"), "{out}");
    assert!(!out.contains("Stale"), "{out}");
}

/// DNS64 (RFC 6147) against the real binary: AAAA synthesized under the well-known prefix
/// for a name with only an A record, `ipv4only.arpa.` answered locally.
#[test]
fn dns64_synthesizes_aaaa() {
    let auth = authorities("resolver-dns64");
    let res = resolver_with(&auth, "dns64", "127.0.0.7", "dns64 = true\n");
    let out = dig(res.addr, &["+short", "www.test", "AAAA"]);
    assert_eq!(out.trim(), "64:ff9b::c000:201");
    // Twice: the second from the cache, still synthesized.
    let out = dig(res.addr, &["+short", "www.test", "AAAA"]);
    assert_eq!(out.trim(), "64:ff9b::c000:201");
    let out = dig(res.addr, &["+short", "ipv4only.arpa", "AAAA"]);
    assert_eq!(
        common::sorted_lines(&out),
        ["64:ff9b::c000:aa", "64:ff9b::c000:ab"]
    );
    let out = dig(res.addr, &["+short", "-x", "64:ff9b::c000:201"]);
    assert!(out.contains("1.2.0.192.in-addr.arpa."), "{out}");
    let plain = resolver_with(&auth, "nodns64", "127.0.0.8", "");
    assert_eq!(dig(plain.addr, &["+short", "www.test", "AAAA"]).trim(), "");
}

/// Prefetch against the real binary: TTLs cut to 20 s (a prefetch window of 2 s); a hit
/// with 10 s left asks nobody, a hit in the last 2 s is answered from the cache and makes the
/// resolver refresh the name in the background, so the next hit has a whole TTL again.
#[test]
fn prefetch_refreshes_a_name_in_the_last_tenth_of_its_ttl() {
    let auth = authorities("resolver-prefetch");
    let res = resolver_with(
        &auth,
        "prefetch",
        "127.0.0.9",
        "prefetch = true\nmax_ttl = 20\n",
    );
    let start = std::time::Instant::now();
    assert_eq!(
        rdatas(&ask(res.addr, 1, "www.test.", RecordType::A)),
        ["www.test. A 192.0.2.1"]
    );
    let upstream = res.stat("shardns_resolver_upstream_queries_total");
    std::thread::sleep(Duration::from_secs(10).saturating_sub(start.elapsed()));
    let m = ask(res.addr, 2, "www.test.", RecordType::A);
    assert!(m.answers[0].ttl >= 8, "{}", m.answers[0].ttl);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        res.stat("shardns_resolver_upstream_queries_total"),
        upstream
    );
    std::thread::sleep(Duration::from_millis(18_600).saturating_sub(start.elapsed()));
    let m = ask(res.addr, 3, "www.test.", RecordType::A);
    assert!(m.answers[0].ttl <= 1, "{}", m.answers[0].ttl);
    let mut refreshed = false;
    for _ in 0..50 {
        if res.stat("shardns_resolver_upstream_queries_total") > upstream {
            refreshed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(refreshed, "the prefetch asked upstream");
    assert!(res.stat("shardns_resolver_prefetches_total") >= 1.0);
    let m = ask(res.addr, 4, "www.test.", RecordType::A);
    assert!(m.answers[0].ttl >= 18, "refreshed: {}", m.answers[0].ttl);
    assert_eq!(res.stat("shardns_resolver_cache_hits_total"), 3.0);
}
