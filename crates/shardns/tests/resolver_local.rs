//! End-to-end tests of the resolver's local zones and data, client access control and views
//! (`resolver.local_zone`, `local_data`, `local_data_ptr`, `access_control`,
//! `access_control_view`, `[[resolver.view]]`): `dig` from several 127.0.0.x source
//! addresses against the real binary, and the same questions put to Unbound given the same
//! configuration (its `local-zone`, `local-data`, `access-control` and `view:`), the answers
//! compared line by line.
//!
//! Names that are not local are forwarded (`lan.`) to a shardns authoritative instance on
//! loopback, by both resolvers; the root hints point at a dead loopback address. Never: any
//! address outside 127.0.0.0/8, unbounded waits, or processes left running (every server is
//! killed when its guard drops, also when the test fails).

mod common;

use common::{answers, find_program, free_port, parse, query, udp_from, Daemon, Server, TempDir};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

const LAN_ZONE: &str = "\
$TTL 300
@           SOA  ns.lan. admin.lan. 1 3600 600 86400 60
@           NS   ns.lan.
ns          A    127.0.0.1
www.tt      AAAA 2001:db8::3
other.tt    A    192.0.2.30
other.tr    A    192.0.2.40
other.free  A    192.0.2.80
host.free   AAAA 2001:db8::8
www.static  A    203.0.113.1
";

/// `local-zone` lines: (name, type).
const ZONES: [(&str, &str); 10] = [
    ("static.lan.", "static"),
    ("tt.lan.", "typetransparent"),
    ("tr.lan.", "transparent"),
    ("deny.lan.", "deny"),
    ("refuse.lan.", "refuse"),
    ("redir.lan.", "redirect"),
    ("nx.lan.", "always_nxdomain"),
    ("ar.lan.", "always_refuse"),
    ("null.lan.", "always_null"),
    ("an.lan.", "always_nodata"),
];

/// `local-data` lines.
const DATA: [&str; 15] = [
    "static.lan. 300 IN SOA ns.static.lan. admin.static.lan. 1 3600 600 86400 60",
    "www.static.lan. 300 IN A 192.0.2.1",
    "a.b.static.lan. 300 IN A 192.0.2.2",
    "txt.static.lan. 300 IN TXT \"hello world\"",
    "www.tt.lan. 300 IN A 192.0.2.3",
    "www.tr.lan. 300 IN A 192.0.2.4",
    "ok.deny.lan. 300 IN A 192.0.2.5",
    "ok.refuse.lan. 300 IN A 192.0.2.6",
    "redir.lan. 300 IN A 127.0.0.99",
    "ok.nx.lan. 300 IN A 192.0.2.7",
    "host.free.lan. 300 IN A 192.0.2.8",
    "x.null.lan. 300 IN A 192.0.2.9",
    "an.lan. 300 IN SOA ns.an.lan. admin.an.lan. 1 3600 600 86400 120",
    "alias.static.lan. 300 IN CNAME www.static.lan.",
    "alias.tr.lan. 300 IN CNAME other.tr.lan.",
];

/// `access-control` lines besides 127.0.0.0/8 allow.
const ACCESS: [(&str, &str); 6] = [
    ("127.0.0.20/32", "deny"),
    ("127.0.0.21/32", "refuse"),
    ("127.0.0.22/32", "refuse_non_local"),
    ("127.0.0.23/32", "deny_non_local"),
    ("127.0.0.24/32", "allow_snoop"),
    ("127.0.0.25/32", "allow_setrd"),
];

/// (source address, name, type, dig flags): in this order (the snooping client asks for
/// what an earlier one resolved).
const QUESTIONS: &[(&str, &str, &str, &str)] = &[
    ("127.0.0.1", "www.static.lan", "A", ""),
    ("127.0.0.1", "WWW.Static.lan", "AAAA", ""),
    ("127.0.0.1", "b.static.lan", "A", ""),
    ("127.0.0.1", "nope.static.lan", "A", ""),
    ("127.0.0.1", "txt.static.lan", "TXT", ""),
    ("127.0.0.1", "www.tt.lan", "A", ""),
    ("127.0.0.1", "www.tt.lan", "AAAA", ""),
    ("127.0.0.1", "other.tt.lan", "A", ""),
    ("127.0.0.1", "www.tr.lan", "AAAA", ""),
    ("127.0.0.1", "other.tr.lan", "A", ""),
    ("127.0.0.1", "ok.deny.lan", "A", ""),
    ("127.0.0.1", "no.deny.lan", "A", ""),
    ("127.0.0.1", "ok.refuse.lan", "A", ""),
    ("127.0.0.1", "no.refuse.lan", "A", ""),
    ("127.0.0.1", "x.y.redir.lan", "A", ""),
    ("127.0.0.1", "x.redir.lan", "AAAA", ""),
    ("127.0.0.1", "ok.nx.lan", "A", ""),
    ("127.0.0.1", "x.ar.lan", "A", ""),
    ("127.0.0.1", "host.free.lan", "A", ""),
    ("127.0.0.1", "host.free.lan", "AAAA", ""),
    ("127.0.0.1", "other.free.lan", "A", ""),
    ("127.0.0.1", "1.2.0.192.in-addr.arpa", "PTR", ""),
    ("127.0.0.1", "9.2.0.192.in-addr.arpa", "PTR", ""),
    ("127.0.0.1", "localhost", "A", ""),
    ("127.0.0.1", "foo.localhost", "AAAA", ""),
    ("127.0.0.1", "localhost", "MX", ""),
    ("127.0.0.1", "1.0.0.127.in-addr.arpa", "PTR", ""),
    ("127.0.0.1", "x.10.in-addr.arpa", "PTR", ""),
    ("127.0.0.1", "www.test", "A", ""),
    ("127.0.0.1", "onion", "SOA", ""),
    ("127.0.0.1", "y.null.lan", "A", ""),
    ("127.0.0.1", "null.lan", "AAAA", ""),
    ("127.0.0.1", "x.null.lan", "A", ""),
    ("127.0.0.1", "y.null.lan", "MX", ""),
    ("127.0.0.1", "q.an.lan", "A", ""),
    ("127.0.0.1", "alias.static.lan", "A", ""),
    ("127.0.0.1", "alias.static.lan", "CNAME", ""),
    ("127.0.0.1", "alias.tr.lan", "A", ""),
    ("127.0.0.1", "www.static.lan", "A", "+nordflag"),
    ("127.0.0.1", "other.tt.lan", "A", "+nordflag"),
    ("127.0.0.20", "www.static.lan", "A", ""),
    ("127.0.0.21", "www.static.lan", "A", ""),
    ("127.0.0.22", "www.static.lan", "A", ""),
    ("127.0.0.22", "other.tt.lan", "A", ""),
    ("127.0.0.23", "www.static.lan", "A", ""),
    ("127.0.0.23", "other.tt.lan", "A", ""),
    ("127.0.0.24", "other.tt.lan", "A", "+nordflag"),
    ("127.0.0.24", "never.tt.lan", "A", "+nordflag"),
    ("127.0.0.25", "other.tr.lan", "A", "+nordflag"),
    ("127.0.0.30", "www.static.lan", "A", ""),
    ("127.0.0.30", "www.static.lan", "AAAA", ""),
    ("127.0.0.30", "other.tt.lan", "A", ""),
    ("127.0.0.30", "localhost", "A", ""),
    ("127.0.0.30", "nope.deny.lan", "A", ""),
    ("127.0.0.31", "x.v.lan", "A", ""),
    ("127.0.0.31", "www.static.lan", "A", ""),
];

fn toml_list(items: impl Iterator<Item = String>) -> String {
    let quoted: Vec<String> = items.map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

fn shardns_config(hints: &str, upstream: SocketAddr) -> String {
    format!(
        "[resolver]
recursion = true
validation = false
root_hints = {hints:?}
resolution_timeout_ms = 2000
forward = [\"lan.={upstream}\"]
local_zone = {zones}
local_data = {data}
local_data_ptr = [\"192.0.2.1 www.static.lan.\"]
access_control = {access}
access_control_view = [\"127.0.0.30/32 inside\", \"127.0.0.31/32 first\"]

[[resolver.view]]
name = \"inside\"
local_zone = [\"static.lan. static\"]
local_data = [\"www.static.lan. 300 IN A 10.0.0.1\"]

[[resolver.view]]
name = \"first\"
view_first = true
local_zone = [\"v.lan. static\"]
",
        zones = toml_list(ZONES.iter().map(|(n, k)| format!("{n} {k}"))),
        data = toml_list(DATA.iter().map(|d| d.to_string())),
        access = toml_list(ACCESS.iter().map(|(p, a)| format!("{p} {a}"))),
    )
}

fn unbound_config(dir: &TempDir, port: u16, hints: &str, upstream: SocketAddr) -> String {
    let mut c = format!(
        "server:
  interface: 127.0.0.1
  port: {port}
  interface-automatic: no
  do-daemonize: no
  use-syslog: no
  logfile: \"\"
  username: \"\"
  chroot: \"\"
  directory: \"{dir}\"
  pidfile: \"\"
  num-threads: 1
  do-ip6: no
  do-not-query-localhost: no
  module-config: \"iterator\"
  root-hints: \"{hints}\"
  access-control: 127.0.0.0/8 allow
  access-control-view: 127.0.0.30/32 inside
  access-control-view: 127.0.0.31/32 first
  local-data-ptr: \"192.0.2.1 www.static.lan.\"
",
        dir = dir.path().display()
    );
    for (p, a) in ACCESS {
        c += &format!("  access-control: {p} {a}\n");
    }
    for (n, k) in ZONES {
        c += &format!("  local-zone: \"{n}\" {k}\n");
    }
    for d in DATA {
        c += &format!("  local-data: '{d}'\n");
    }
    c += &common::unbound_fence();
    c += &format!(
        "view:
  name: \"inside\"
  local-zone: \"static.lan.\" static
  local-data: \"www.static.lan. 300 IN A 10.0.0.1\"
view:
  name: \"first\"
  view-first: yes
  local-zone: \"v.lan.\" static
forward-zone:
  name: \"lan.\"
  forward-addr: {}@{}
remote-control:
  control-enable: no
",
        upstream.ip(),
        upstream.port()
    );
    c
}

/// One question by `dig -b SOURCE`, reduced to what must match: status, the flags, and the
/// answer and authority sections (TTLs kept for authoritative answers, dropped for resolved
/// ones, which count down), or "no answer" when the server sent none.
fn ask(server: SocketAddr, source: &str, name: &str, qtype: &str, flag: &str) -> String {
    let mut cmd = Command::new("dig");
    cmd.arg(format!("@{}", server.ip()))
        .args(["-p", &server.port().to_string(), "-b", source])
        .args(["+time=1", "+tries=1", "+nocookie", "+noall", "+comments"])
        .args(["+answer", "+authority", name, qtype]);
    if !flag.is_empty() {
        cmd.arg(flag);
    }
    let out = cmd.output().expect("run dig");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut status = String::new();
    let mut flags = String::new();
    let mut records = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.split("status: ").nth(1) {
            status = rest.split(',').next().unwrap_or("").to_string();
        } else if let Some(rest) = line.strip_prefix(";; flags: ") {
            flags = rest.split(';').next().unwrap_or("").trim().to_string();
        } else if !line.starts_with(';') && !line.trim().is_empty() {
            records.push(line.split_whitespace().collect::<Vec<_>>());
        }
    }
    if status.is_empty() {
        return "no answer".into();
    }
    let authoritative = flags.split(' ').any(|f| f == "aa");
    let mut lines: Vec<String> = records
        .into_iter()
        .map(|mut f| {
            if !authoritative && f.len() > 1 {
                f.remove(1);
            }
            f.join(" ").to_ascii_lowercase()
        })
        .collect();
    lines.sort();
    format!("{status} [{flags}] {}", lines.join(" | "))
}

/// Where we answer otherwise than Unbound 1.17, on purpose: a client refused by
/// `access_control` gets the server's usual REFUSED, while Unbound echoes the query's flags
/// (AD included); a cache-snooping answer to a query without RD has RD clear (RFC 1035
/// §4.1.1: copied from the query), while Unbound sets it.
fn known_difference(q: &(&str, &str, &str, &str), ours: &str, theirs: &str) -> bool {
    let acl_refused = ["127.0.0.21", "127.0.0.22"].contains(&q.0)
        && ours == theirs.replace("[qr rd ad]", "[qr rd]");
    let snooped = q.0 == "127.0.0.24" && ours == theirs.replace("[qr rd ra]", "[qr ra]");
    acl_refused || snooped
}

fn lan_upstream() -> Server {
    let dir = TempDir::new("local-upstream-zone");
    let zone = dir.write("lan.zone", LAN_ZONE);
    let port = free_port();
    Server::start_at(
        "local-upstream",
        &[format!("127.0.0.1:{port}").parse().unwrap()],
        &["--zone", &format!("lan.={}", zone.display())],
    )
}

fn wait_until_answering(server: SocketAddr) {
    let end = Instant::now() + Duration::from_secs(10);
    while ask(server, "127.0.0.1", "localhost", "A", "") == "no answer" {
        assert!(Instant::now() < end, "no answer from {server}");
    }
}

#[test]
fn local_zones_access_and_views_answer_as_unbound() {
    let upstream = lan_upstream();
    let dir = TempDir::new("local-resolver-conf");
    // Nothing listens there: names outside the local zones and lan. fail fast, on loopback.
    let hints = dir.write("hints", ". 3600 NS a.root.\na.root. 3600 A 127.0.0.254\n");
    let hints = hints.display().to_string();
    let config = dir.write("shardns.toml", &shardns_config(&hints, upstream.addr));
    let port = free_port();
    let listen: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let ours = Server::start_at(
        "local-resolver",
        &[listen],
        &["--config", &config.display().to_string()],
    );
    let got: Vec<String> = QUESTIONS
        .iter()
        .map(|(src, name, qtype, flag)| ask(listen, src, name, qtype, flag))
        .collect();
    // What must hold whatever Unbound says.
    let at = |name: &str, qtype: &str, src: &str| {
        let i = QUESTIONS
            .iter()
            .position(|q| q.0 == src && q.1 == name && q.2 == qtype)
            .unwrap();
        got[i].clone()
    };
    assert!(at("www.static.lan", "A", "127.0.0.1").starts_with("NOERROR [qr aa rd ra]"));
    assert!(at("www.static.lan", "A", "127.0.0.1").contains("192.0.2.1"));
    assert!(at("nope.static.lan", "A", "127.0.0.1").starts_with("NXDOMAIN"));
    assert!(at("www.tt.lan", "AAAA", "127.0.0.1").contains("2001:db8::3"));
    assert_eq!(at("no.deny.lan", "A", "127.0.0.1"), "no answer");
    assert_eq!(at("www.static.lan", "A", "127.0.0.20"), "no answer");
    assert!(at("www.static.lan", "A", "127.0.0.21").starts_with("REFUSED"));
    assert!(at("www.static.lan", "A", "127.0.0.30").contains("10.0.0.1"));
    assert!(at("other.tt.lan", "A", "127.0.0.24").contains("192.0.2.30"));
    assert!(ours.stat("shardns_resolver_dropped_total") >= 3.0);
    assert!(ours.stat("shardns_resolver_local_total") >= 20.0);

    let Some(unbound) = find_program("unbound", "UNBOUND") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "unbound is not installed (scripts/test.sh installs it)"
        );
        println!("resolver_local: SKIPPED the comparison, unbound is not installed");
        return;
    };
    let udir = TempDir::new("local-unbound");
    let uport = free_port();
    let uconf = udir.write(
        "unbound.conf",
        &unbound_config(&udir, uport, &hints, upstream.addr),
    );
    let mut cmd = Command::new(unbound);
    cmd.arg("-d").arg("-c").arg(&uconf);
    let _unbound = Daemon::spawn("unbound", cmd, udir.path().join("unbound.log"));
    let theirs: SocketAddr = format!("127.0.0.1:{uport}").parse().unwrap();
    wait_until_answering(theirs);
    let mut differ = Vec::new();
    for (q, ours) in QUESTIONS.iter().zip(&got) {
        let (src, name, qtype, flag) = q;
        let want = ask(theirs, src, name, qtype, flag);
        if known_difference(q, ours, &want) {
            continue;
        }
        if *ours != want {
            differ.push(format!(
                "{src} {name} {qtype} {flag}\n  shardns: {ours}\n  unbound: {want}"
            ));
        }
    }
    println!("{} questions, {} differ", QUESTIONS.len(), differ.len());
    assert!(differ.is_empty(), "answers differ:\n{}", differ.join("\n"));
}

/// A PROXY protocol v2 header (PROXY command, UDP over IPv4) from `source` to `dest`.
fn proxy_v2(source: SocketAddr, dest: SocketAddr) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x12, 0, 12]);
    for a in [source, dest] {
        let SocketAddr::V4(a) = a else {
            panic!("IPv4 only")
        };
        h.extend_from_slice(&a.ip().octets());
    }
    h.extend_from_slice(&source.port().to_be_bytes());
    h.extend_from_slice(&dest.port().to_be_bytes());
    h
}

#[test]
fn views_and_access_follow_the_proxied_client() {
    let config = "[server]
proxy_protocol_from = [\"127.0.0.1/32\"]

[resolver]
recursion = true
validation = false
local_zone_defaults = false
local_zone = [\"inf.lan. inform\"]
local_data = [\"www.lan. 300 IN A 192.0.2.1\", \"www.inf.lan. 300 IN A 192.0.2.2\"]
access_control = [\"127.0.0.20/32 deny\", \"127.0.0.21/32 refuse\"]
access_control_view = [\"127.0.0.30/32 inside\"]

[[resolver.view]]
name = \"inside\"
local_data = [\"www.lan. 300 IN A 10.0.0.1\"]
";
    let server = Server::start_on("local-proxy", Ipv4Addr::LOCALHOST, Some(config), &[]);
    // The proxy is 127.0.0.1; the clients are only in the headers.
    let sock = udp_from(Ipv4Addr::LOCALHOST, server.addr);
    sock.set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let ask_name = |client: [u8; 4], name: &str| {
        let mut d = proxy_v2(SocketAddr::from((client, 40000)), server.addr);
        let mut q = query(0x4c4c, name, 1, Some(1232));
        q[2] |= 0x01; // RD
        d.extend_from_slice(&q);
        sock.send(&d).unwrap();
        let mut buf = [0u8; 1500];
        sock.recv(&mut buf).ok().map(|n| parse(&buf[..n]))
    };
    let ask = |client: [u8; 4]| ask_name(client, "www.lan");
    let m = ask([127, 0, 0, 30]).expect("the view's answer");
    assert_eq!(answers(&m), vec!["A 10.0.0.1"]);
    assert!(m.metadata.authoritative);
    let m = ask([127, 0, 0, 5]).expect("the global answer");
    assert_eq!(answers(&m), vec!["A 192.0.2.1"]);
    assert!(
        ask([127, 0, 0, 20]).is_none(),
        "a denied client is answered"
    );
    let m = ask([127, 0, 0, 21]).expect("REFUSED");
    assert_eq!(u16::from(m.metadata.response_code), 5);
    // An inform zone logs the proxied client.
    let m = ask_name([127, 0, 0, 6], "www.inf.lan").expect("the inform zone's data");
    assert_eq!(answers(&m), vec!["A 192.0.2.2"]);
    let mut server = server;
    server.wait_for_log(
        "local zone inf.lan. inform: 127.0.0.6 asked www.inf.lan. A",
        Duration::from_secs(5),
    );
    assert_eq!(server.stat("shardns_resolver_dropped_total"), 1.0);
    assert_eq!(server.stat("shardns_resolver_refused_total"), 1.0);
    assert_eq!(server.stat("shardns_resolver_local_total"), 3.0);
}

#[test]
fn check_reports_bad_local_configuration() {
    let dir = TempDir::new("local-check");
    for (text, want) in [
        (
            "local_data = [\"a.lan. CNAME b.lan.\", \"a.lan. A 192.0.2.1\"]",
            "CNAME beside other data",
        ),
        (
            "local_zone = [\"r.lan. redirect\"]\nlocal_data = [\"x.r.lan. A 192.0.2.1\"]",
            "below redirect zone",
        ),
        (
            "local_zone = [\"r.lan. stattic\"]",
            "unknown local zone type",
        ),
        (
            "access_control_view = [\"127.0.0.2 nope\"]",
            "no [[resolver.view]]",
        ),
    ] {
        let config = dir.write(
            "shardns.toml",
            &format!("[resolver]\nrecursion = true\n{text}\n"),
        );
        let out = Command::new(common::BIN)
            .args(["check", "-c", &config.display().to_string()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}: accepted");
        assert!(err.contains(want), "{text}: {err}");
    }
}
