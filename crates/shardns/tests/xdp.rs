//! The XDP mode end to end: the real binary with `--xdp lo` answers UDP over AF_XDP (A,
//! NXDOMAIN, a truncated answer that dig then takes over TCP), counts those queries as
//! `transport="xdp"`, keeps serving with sockets when XDP cannot be had (here: the interface
//! already has a program), and leaves no program on lo once it stops.
//!
//! Needs root (CAP_NET_ADMIN, CAP_BPF); skipped with a printed reason otherwise, or when lo
//! already carries an XDP program that is not ours. Only one XDP program fits on lo, so
//! everything is one test function. Ports 5700-5799 on loopback.

mod common;

use common::{dig, query, stat_value, udp_client, udp_exchange, Server};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::process::Command;

const ZONE: &str = "\
$ORIGIN xdp.test.
$TTL 300
@    SOA ns hostmaster 1 3600 600 86400 300
@    NS  ns
ns   A   127.0.0.1
www  A   192.0.2.7
www  AAAA 2001:db8::7
";

/// The sysctls lo needs for replies to 127.0.0.0/8 that enter it from AF_XDP.
const SYSCTLS: [&str; 2] = [
    "/proc/sys/net/ipv4/conf/lo/route_localnet",
    "/proc/sys/net/ipv4/conf/lo/accept_local",
];

/// Sets the sysctls to `value`, and puts back the values it found when dropped.
struct Sysctls(Vec<(&'static str, String)>);

impl Sysctls {
    fn set(value: &str) -> Self {
        let saved = SYSCTLS
            .iter()
            .map(|p| (*p, std::fs::read_to_string(p).unwrap().trim().to_string()))
            .collect();
        for p in SYSCTLS {
            std::fs::write(p, value).unwrap();
        }
        Self(saved)
    }
}

impl Drop for Sysctls {
    fn drop(&mut self) {
        for (p, v) in &self.0 {
            let _ = std::fs::write(p, v);
        }
    }
}

fn lo_xdp() -> String {
    let out = Command::new("ip")
        .args(["link", "show", "lo"])
        .output()
        .expect("run ip");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter(|l| l.contains("xdp"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A port in 5700-5799 free for UDP and TCP on 127.0.0.1 and ::1.
fn port_in_range(skip: u16) -> u16 {
    (5700..5800)
        .filter(|&p| p != skip)
        .find(|&p| {
            UdpSocket::bind((Ipv4Addr::LOCALHOST, p)).is_ok()
                && TcpListener::bind((Ipv4Addr::LOCALHOST, p)).is_ok()
                && UdpSocket::bind((Ipv6Addr::LOCALHOST, p)).is_ok()
                && TcpListener::bind((Ipv6Addr::LOCALHOST, p)).is_ok()
        })
        .expect("a free port in 5700-5799")
}

fn start(tag: &str, port: u16, zone: &std::path::Path) -> Server {
    let listen = [
        SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
    ];
    let zone = format!("xdp.test={}", zone.display());
    Server::start_at(
        tag,
        &listen,
        &["--zone", &zone, "--workers", "2", "--xdp", "lo"],
    )
}

#[test]
fn xdp_mode_serves_falls_back_and_detaches() {
    let uid = Command::new("id").arg("-u").output().expect("run id");
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        eprintln!("skipped: XDP needs root (CAP_NET_ADMIN and CAP_BPF)");
        return;
    }
    if !lo_xdp().is_empty() {
        eprintln!("skipped: lo already has an XDP program:\n{}", lo_xdp());
        return;
    }
    let _sysctls = Sysctls::set("1");
    let dir = common::TempDir::new("xdp-zone");
    let zone_text = {
        // 40 TXT records of 40 octets: far over 512 octets, so truncated without EDNS.
        let mut z = ZONE.to_string();
        for i in 0..40 {
            z.push_str(&format!("big TXT \"record {i:02} {}\"\n", "x".repeat(28)));
        }
        z
    };
    let zone = dir.write("xdp.test.zone", &zone_text);

    let port = port_in_range(0);
    let mut a = start("xdp-a", port, &zone);
    let log = a.log();
    if !log.contains("XDP on lo: UDP queries") {
        eprintln!("skipped: XDP could not be attached:\n{log}");
        return;
    }
    let attached = lo_xdp();
    assert!(attached.contains("shardns_xdp"), "{attached}");

    // A, AAAA, over IPv4 and IPv6.
    let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, port));
    assert_eq!(
        dig(v4, &["www.xdp.test", "A", "+short"]).trim(),
        "192.0.2.7"
    );
    assert_eq!(
        dig(v6, &["www.xdp.test", "A", "+short"]).trim(),
        "192.0.2.7"
    );
    assert_eq!(
        dig(v4, &["www.xdp.test", "AAAA", "+short"]).trim(),
        "2001:db8::7"
    );
    // NXDOMAIN with the SOA.
    let nx = dig(v4, &["nope.xdp.test", "A"]);
    assert!(nx.contains("status: NXDOMAIN"), "{nx}");
    assert!(nx.contains("SOA"), "{nx}");
    // Raw: the id and the question come back, parsed by hickory.
    let sock = udp_client(v4);
    let resp =
        udp_exchange(&sock, &query(0x5a5a, "www.xdp.test.", 1, Some(1232))).expect("a UDP answer");
    let m = common::parse(&resp);
    assert_eq!(m.id, 0x5a5a);
    assert_eq!(common::answers(&m), vec!["A 192.0.2.7"]);
    // Truncated over UDP, then the whole answer over TCP.
    let big = dig(v4, &["big.xdp.test", "TXT", "+noedns"]);
    assert!(big.contains("Truncated, retrying in TCP mode"), "{big}");
    assert_eq!(big.matches("\"record ").count(), 40, "{big}");
    assert!(big.contains("ANSWER: 40"), "{big}");

    let out = a.control("stats");
    let stats = String::from_utf8_lossy(&out.stdout).into_owned();
    let xdp4 = stat_value(&stats, "shardns_queries_total{transport=\"xdp\",ip=\"4\"}");
    let xdp6 = stat_value(&stats, "shardns_queries_total{transport=\"xdp\",ip=\"6\"}");
    let udp = stat_value(&stats, "shardns_queries_total{transport=\"udp\",ip=\"4\"}")
        + stat_value(&stats, "shardns_queries_total{transport=\"udp\",ip=\"6\"}");
    let tcp4 = stat_value(&stats, "shardns_queries_total{transport=\"tcp\",ip=\"4\"}");
    assert_eq!(xdp4, 5.0, "{stats}");
    assert_eq!(xdp6, 1.0, "{stats}");
    assert_eq!(udp, 0.0, "every UDP query went through XDP:\n{stats}");
    assert_eq!(tcp4, 1.0, "{stats}");
    assert_eq!(
        stat_value(&stats, "shardns_truncated_total"),
        1.0,
        "{stats}"
    );
    // The kernel's counters of the AF_XDP socket are copied into the statistics: nothing was
    // lost at this rate.
    assert!(
        stats.contains("shardns_xdp_kernel_total{event=\"rx_ring_full\"} 0\n"),
        "{stats}"
    );

    // A second server cannot attach (lo has our program): it says so and serves by sockets.
    let port_b = port_in_range(port);
    let b = start("xdp-b", port_b, &zone);
    assert!(
        b.log()
            .contains("XDP on lo is off, UDP is served by sockets"),
        "{}",
        b.log()
    );
    let vb = SocketAddr::from((Ipv4Addr::LOCALHOST, port_b));
    assert_eq!(
        dig(vb, &["www.xdp.test", "A", "+short"]).trim(),
        "192.0.2.7"
    );
    assert_eq!(
        b.stat("shardns_queries_total{transport=\"udp\",ip=\"4\"}"),
        1.0
    );
    drop(b);
    assert!(
        lo_xdp().contains("shardns_xdp"),
        "the first server's program stays"
    );

    // Stopping the server detaches the program.
    assert!(a.terminate().success(), "{}", a.log());
    assert_eq!(lo_xdp(), "", "no XDP program left on lo");

    // Without the sysctls, XDP is refused with the reason and sockets serve.
    drop(_sysctls);
    let _off = Sysctls::set("0");
    let c = start("xdp-c", port_in_range(0), &zone);
    assert!(c.log().contains("route_localnet"), "{}", c.log());
    assert_eq!(lo_xdp(), "");
    let vc = SocketAddr::from((Ipv4Addr::LOCALHOST, c.port));
    assert_eq!(
        dig(vc, &["www.xdp.test", "A", "+short"]).trim(),
        "192.0.2.7"
    );
}
