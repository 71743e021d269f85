//! End-to-end: the journal of a zone that may be updated (`update_policy`, nobody may
//! transfer it) is kept on disk beside its zone file and replayed over the file at start,
//! as BIND rolls a `.jnl` forward: a restart with the file put back at an older serial
//! the journal's chain holds serves the latest version; a file at a serial the chain does
//! not hold wins, with a warning that names both serials (Knot's behaviour); an edit that
//! does not move the serial above the served one is refused on reload.

mod common;

use common::*;
use std::net::SocketAddr;
use std::time::Duration;

fn zone_version(v: u32) -> String {
    format!(
        "$TTL 60\n@ SOA ns hostmaster {v} 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n\
         www A 198.51.100.{v}\nv{v} TXT \"version {v}\"\n"
    )
}

fn soa_serial(server: SocketAddr) -> u32 {
    let soa = dig(server, &["+short", "dyn.test", "SOA"]);
    soa.split_whitespace()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no SOA from {server}: {soa:?}"))
}

fn www(server: SocketAddr) -> String {
    dig(server, &["+short", "www.dyn.test", "A"])
        .trim()
        .to_string()
}

fn txt(server: SocketAddr, name: &str) -> String {
    dig(server, &["+short", name, "TXT"]).trim().to_string()
}

/// Stops the server cleanly (SIGTERM), as an operator's restart does.
fn stop(mut server: Server) {
    assert!(server.terminate().success(), "{}", server.log());
}

#[test]
fn an_updatable_zones_journal_is_replayed_at_start() {
    let data = TempDir::new("journal-replay-data");
    let zone = data.write("dyn.test.zone", &zone_version(1));
    let journal = data.path().join("dyn.test.zone.journal");
    let config = data.write(
        "shardns.toml",
        "[server]\nworkers = 1\n\n[[zone]]\nname = \"dyn.test.\"\nfile = \"dyn.test.zone\"\n\
         update_policy = [\"grant acme.key. wildcard _acme-challenge.* TXT\"]\n",
    );
    let args = ["--config", config.to_str().unwrap()];

    // Serial 1 from the file; edited to 2 and reloaded: 1 -> 2 is in the journal, though
    // nobody may transfer the zone.
    let server = Server::start("journal-replay-1", &args);
    assert_eq!(soa_serial(server.addr4()), 1);
    std::fs::write(&zone, zone_version(2)).unwrap();
    let out = server.control("reload");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(soa_serial(server.addr4()), 2);
    assert!(journal.exists(), "no journal beside the zone file");
    stop(server);

    // The serial-1 file put back: the journal's 1 -> 2 is replayed, serial 2 served.
    std::fs::write(&zone, zone_version(1)).unwrap();
    let mut server = Server::start("journal-replay-2", &args);
    server.wait_for_log("replayed", Duration::from_secs(5));
    assert_eq!(soa_serial(server.addr4()), 2, "{}", server.log());
    assert_eq!(www(server.addr4()), "198.51.100.2");
    assert_eq!(txt(server.addr4(), "v2.dyn.test"), "\"version 2\"");
    assert_eq!(
        txt(server.addr4(), "v1.dyn.test"),
        "",
        "v1 was deleted by 1 -> 2"
    );
    assert!(journal.exists(), "the journal is kept");
    // An edit of the file that does not move its serial above the served 2 is refused:
    // serial 2 stays served (the updates are not lost to it).
    std::fs::write(
        &zone,
        zone_version(1).replace("198.51.100.1", "198.51.100.99"),
    )
    .unwrap();
    let out = server.control("reload");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{out:?}");
    assert!(said.contains("keeping its previous version"), "{said}");
    assert!(
        said.contains("serial 1 is not above the served version's 2"),
        "{said}"
    );
    assert_eq!(soa_serial(server.addr4()), 2);
    assert_eq!(www(server.addr4()), "198.51.100.2");
    std::fs::write(&zone, zone_version(1)).unwrap();
    stop(server);

    // A file at serial 5, which the journal's chain (1 -> 2) does not hold: the file wins,
    // a warning names the zone and both serials, and the journal starts anew.
    std::fs::write(&zone, zone_version(5)).unwrap();
    let mut server = Server::start("journal-replay-3", &args);
    server.wait_for_log("does not hold", Duration::from_secs(5));
    assert_eq!(soa_serial(server.addr4()), 5);
    assert_eq!(www(server.addr4()), "198.51.100.5");
    let log = server.log();
    let line = log
        .lines()
        .find(|l| l.contains("does not hold"))
        .unwrap()
        .to_string();
    for said in ["WARN", "dyn.test.", "serial 5", "to 2", "dropped"] {
        assert!(line.contains(said), "{said:?} not in {line:?}");
    }
    assert!(!journal.exists(), "the journal was not started anew");
    stop(server);
}
