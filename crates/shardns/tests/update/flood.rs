//! An update flood from one key is cut short by `limits.updates_per_second`: a burst over
//! `updates_burst` gets REFUSED for the excess, `shardns_updates_total{result="rate_limited"}`
//! says how many, and the operator's transactions are not limited.

use super::txn::zone_cmd;
use super::wire::{txt, Signer, Update, TXT};
use super::*;
use std::net::Ipv4Addr;

#[test]
fn a_burst_over_the_limit_is_refused_and_counted() {
    let dir = TempDir::new("upd-flood-zone");
    let file = dir.write("upd.test.zone", &zone_text(1));
    let zone = format!("{APEX}={}", file.display());
    let key = upd_key();
    let server = Server::start_on(
        "upd-flood",
        Ipv4Addr::LOCALHOST,
        Some("[limits]\nupdates_per_second = 1\nupdates_burst = 10\n"),
        &["--workers", "1", "--zone", &zone, "--update-key", &key],
    );
    // 30 signed updates in one TCP write: one batch on the main thread.
    let msgs: Vec<Vec<u8>> = (0..30u16)
        .map(|i| {
            Update::new(APEX)
                .add(&format!("flood{i}.{APEX}"), TXT, &txt("x"))
                .build(0x5000 + i, Signer::Key)
        })
        .collect();
    let answers = tcp_exchange(server.addr, &msgs);
    assert_eq!(answers.len(), 30);
    let read: Vec<wire::Answer> = answers
        .into_iter()
        .map(|a| wire::answer_of(Some(a)))
        .collect();
    // Every answer is signed, the refusals too (the key verified).
    assert!(read.iter().all(|a| a.signed), "{read:?}");
    let rcodes: Vec<String> = read.into_iter().map(|a| a.rcode).collect();
    let accepted = rcodes.iter().filter(|r| *r == "NOERROR").count();
    let refused = rcodes.iter().filter(|r| *r == "REFUSED").count();
    assert!(
        (10..=11).contains(&accepted) && accepted + refused == 30,
        "the burst of 10 (and at most one token more): {rcodes:?}"
    );
    assert_eq!(
        server.stat("shardns_updates_total{result=\"rate_limited\"}"),
        refused as f64
    );
    assert_eq!(
        server.stat("shardns_updates_total{result=\"accepted\"}"),
        accepted as f64
    );
    assert!(server.log().contains("over limits.updates_per_second"));
    // The accepted ones are served.
    assert_eq!(short(server.addr, "flood0.upd.test", "TXT"), ["\"x\""]);
    // The key's bucket is empty, the operator's path is not limited.
    let one = Update::new(APEX)
        .add(&format!("late.{APEX}"), TXT, &txt("y"))
        .build(0x6000, Signer::Key);
    let again = tcp_exchange(server.addr, &[one]);
    assert_eq!(wire::answer_of(again.into_iter().next()).rcode, "REFUSED");
    assert!(zone_cmd(&server, "begin", &[APEX]).ok);
    assert!(zone_cmd(&server, "set", &[APEX, "op", "60", "TXT", "\"z\""]).ok);
    let r = zone_cmd(&server, "commit", &[APEX]);
    assert!(r.ok, "{}", r.text);
    assert_eq!(short(server.addr, "op.upd.test", "TXT"), ["\"z\""]);
}
