//! The test world: root, `test.` and `org.` TLDs and the zones below them, on the fake
//! network.

use shardns_wire::Section;

use super::net::{records, zone, Net};

/// The test world: root, `test.` and `org.` TLDs and zones below them.
pub(crate) fn world() -> Net {
    let mut net = Net::default();
    net.add(
        "10.0.0.1",
        vec![zone(
            ".",
            ". 86400 NS a.root.test.
             test. 172800 NS ns1.nic.test.
             ns1.nic.test. 172800 A 10.0.1.1
             org. 172800 NS ns.org.
             ns.org. 172800 A 10.0.2.1",
        )],
    );
    net.add(
        "10.0.1.1",
        vec![zone(
            "test.",
            "test. 86400 NS ns1.nic.test.
             ns1.nic.test. 86400 A 10.0.1.1
             example.test. 86400 NS ns1.example.test.
             example.test. 86400 NS ns2.example.test.
             ns1.example.test. 86400 A 10.0.3.1
             ns2.example.test. 86400 A 10.0.3.2
             other.test. 86400 NS ns.hosting.org.
             ns.hosting.org. 86400 A 6.6.6.6
             sub.test. 86400 NS ns1.example.test.
             lame.test. 86400 NS ns.lame.test.
             ns.lame.test. 86400 A 10.0.9.9
             dead.test. 86400 NS ns.dead.test.
             ns.dead.test. 86400 A 10.0.9.8
             half.test. 86400 NS ns1.half.test.
             half.test. 86400 NS ns2.half.test.
             ns1.half.test. 86400 A 10.0.9.8
             ns2.half.test. 86400 A 10.0.5.1
             loopa.test. 86400 NS ns.loopb.test.
             loopb.test. 86400 NS ns.loopa.test.
             up.test. 86400 NS ns.up.test.
             ns.up.test. 86400 A 10.0.9.7
             evil.test. 86400 NS ns.evil.test.
             ns.evil.test. 86400 A 10.0.6.1
             spoof.test. 86400 NS ns.spoof.test.
             ns.spoof.test. 86400 A 10.0.6.2
             tc.test. 86400 NS ns.tc.test.
             ns.tc.test. 86400 A 10.0.6.3
             noedns.test. 86400 NS ns.noedns.test.
             ns.noedns.test. 86400 A 10.0.6.4
             ent.test. 86400 NS ns.ent.test.
             ns.ent.test. 86400 A 10.0.6.5",
        )],
    );
    net.add(
        "10.0.2.1",
        vec![zone(
            "org.",
            "org. 86400 NS ns.org.
             ns.org. 86400 A 10.0.2.1
             hosting.org. 86400 NS ns.hosting.org.
             ns.hosting.org. 86400 A 10.0.4.1",
        )],
    );
    let example = || {
        zone(
            "example.test.",
            "example.test. 86400 NS ns1.example.test.
             example.test. 86400 NS ns2.example.test.
             ns1.example.test. 86400 A 10.0.3.1
             ns1.example.test. 86400 A 10.0.3.11
             ns2.example.test. 86400 A 10.0.3.2
             www.example.test. 300 A 192.0.2.80
             a.b.c.example.test. 300 A 192.0.2.81
             alias.example.test. 300 CNAME www.other.test.
             old.example.test. 300 DNAME new.other.test.
             loop1.example.test. 300 CNAME loop2.example.test.
             loop2.example.test. 300 CNAME loop1.example.test.",
        )
    };
    let sub = || {
        zone(
            "sub.test.",
            "sub.test. 86400 NS ns1.example.test.\n www.sub.test. 300 A 192.0.2.90",
        )
    };
    for ip in ["10.0.3.1", "10.0.3.11", "10.0.3.2"] {
        net.add(ip, vec![example(), sub()]);
    }
    net.add(
        "10.0.4.1",
        vec![
            zone(
                "hosting.org.",
                "hosting.org. 86400 NS ns.hosting.org.
                 ns.hosting.org. 86400 A 10.0.4.1",
            ),
            zone(
                "other.test.",
                "other.test. 86400 NS ns.hosting.org.
                 www.other.test. 600 A 192.0.2.100
                 www.new.other.test. 600 A 192.0.2.101",
            ),
        ],
    );
    net.add("10.0.9.9", vec![]).behaviour.refused = true;
    net.add("10.0.9.8", vec![]).behaviour.silent = true;
    net.add(
        "10.0.5.1",
        vec![zone("half.test.", "www.half.test. 300 A 192.0.2.110")],
    );
    net.add("10.0.9.7", vec![zone("up.test.", "")])
        .behaviour
        .refer_up = Some(records("test. 86400 NS ns1.nic.test.").remove(0));
    net.add(
        "10.0.6.1",
        vec![zone("evil.test.", "www.evil.test. 300 A 192.0.2.120")],
    )
    .behaviour
    .inject = vec![
        (
            Section::Answer,
            records("www.bank.org. 300 A 6.6.6.6").remove(0),
        ),
        (
            Section::Authority,
            records("org. 86400 NS ns.evil.test.").remove(0),
        ),
        (
            Section::Additional,
            records("ns.org. 86400 A 6.6.6.6").remove(0),
        ),
    ];
    net.add(
        "10.0.6.2",
        vec![zone("spoof.test.", "www.spoof.test. 300 A 192.0.2.130")],
    )
    .behaviour
    .wrong_id = true;
    net.add(
        "10.0.6.3",
        vec![zone("tc.test.", "www.tc.test. 300 A 192.0.2.140")],
    )
    .behaviour
    .truncate_udp = true;
    net.add(
        "10.0.6.4",
        vec![zone("noedns.test.", "www.noedns.test. 300 A 192.0.2.150")],
    )
    .behaviour
    .no_edns = true;
    net.add(
        "10.0.6.5",
        vec![zone("ent.test.", "a.b.ent.test. 300 A 192.0.2.160")],
    )
    .behaviour
    .nxdomain_for_ent = true;
    net
}
