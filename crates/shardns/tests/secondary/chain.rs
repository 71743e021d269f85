//! shardns -> shardns -> shardns: a change at the top reaches the bottom by NOTIFY and
//! transfer at each step; a primary that goes away makes the zone expire below it
//! (SERVFAIL, logged, counted), and its return brings the zone back.

use super::*;

const APEX: &str = "chain.test.";

/// The chain's zone: REFRESH an hour (only NOTIFY moves it), RETRY 1 s, EXPIRE 5 s.
fn chain_zone(serial: u32) -> String {
    format!(
        "$TTL 60\n@ SOA ns hostmaster {serial} 3600 1 5 60\n@ NS ns\nns A 192.0.2.1\n\
         www A 192.0.2.{serial}\n"
    )
}

#[test]
fn a_change_at_the_top_reaches_the_bottom_and_expiry_comes_and_goes() {
    let (p, s1, s2) = (local(), local(), local());
    let dir = TempDir::new("chain");
    let file = dir.write("chain.test.zone", &chain_zone(1));
    let zone_flag = format!("{APEX}={}", file.display());
    let primary_args = |notify: &SocketAddr| {
        vec![
            "--workers".to_string(),
            "1".into(),
            "--zone".into(),
            zone_flag.clone(),
            "--allow-transfer".into(),
            "127.0.0.1".into(),
            "--notify".into(),
            notify.to_string(),
        ]
    };
    let start = |tag: &str, at: SocketAddr, v: Vec<String>| {
        let v: Vec<&str> = v.iter().map(String::as_str).collect();
        Server::start_at(tag, &[at], &v)
    };
    let top = start("chain-top", p, primary_args(&s1));
    let middle = start(
        "chain-middle",
        s1,
        vec![
            "--workers".into(),
            "1".into(),
            "--secondary".into(),
            format!("{APEX}={p}"),
            "--allow-transfer".into(),
            "127.0.0.1".into(),
            "--notify".into(),
            s2.to_string(),
        ],
    );
    let bottom = start(
        "chain-bottom",
        s2,
        vec![
            "--workers".into(),
            "1".into(),
            "--secondary".into(),
            format!("{APEX}={s1}"),
        ],
    );
    let logs = || format!("middle:\n{}\nbottom:\n{}", middle.log(), bottom.log());
    wait_serial(s2, APEX, 1, Duration::from_secs(20), logs);

    // A new version at the top: reload, NOTIFY to the middle, transfer, NOTIFY to the
    // bottom, transfer.
    std::fs::write(&file, chain_zone(2)).unwrap();
    let changed = Instant::now();
    top.sighup();
    wait_serial(s2, APEX, 2, Duration::from_secs(10), logs);
    let took = changed.elapsed();
    println!(
        "secondary: a change at the top reached the bottom of the chain in {:.3} s (reload included)",
        took.as_secs_f64()
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(
        dig(s2, &["+short", "www.chain.test", "A"]).trim(),
        "192.0.2.2"
    );

    // The top goes away: EXPIRE (5 s) later the middle answers SERVFAIL, then the bottom.
    let mut top = top;
    top.terminate();
    let end = Instant::now() + Duration::from_secs(15);
    while rcode_of(s1, "www.chain.test") != "ServFail" {
        assert!(Instant::now() < end, "the middle never expired\n{}", logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        middle.log().contains("zone chain.test. expired"),
        "{}",
        logs()
    );
    assert_eq!(middle.stat("shardns_secondary_expired_total"), 1.0);
    assert_eq!(middle.stat("shardns_secondary_zones_unavailable"), 1.0);
    let end = Instant::now() + Duration::from_secs(15);
    while rcode_of(s2, "www.chain.test") != "ServFail" {
        assert!(Instant::now() < end, "the bottom never expired\n{}", logs());
        std::thread::sleep(Duration::from_millis(100));
    }

    // The top is back: its NOTIFY at start, the middle confirms serial 2 and serves it again,
    // and tells the bottom.
    let _top = start("chain-top-again", p, primary_args(&s1));
    wait_serial(s1, APEX, 2, Duration::from_secs(10), logs);
    wait_serial(s2, APEX, 2, Duration::from_secs(10), logs);
    assert_eq!(middle.stat("shardns_secondary_zones_unavailable"), 0.0);
    assert!(middle.log().contains("serving it again"), "{}", logs());
}

/// shardns -> shardns with TSIG everywhere: the secondary's SOA queries are answered signed
/// (it rejects unsigned answers), the primary's NOTIFY is signed with the zone's
/// `transfer_key` (the secondary takes NOTIFY only with its `primary_key`), and a change
/// comes by IXFR from the primary's journal.
#[test]
fn a_signed_chain_soa_notify_and_ixfr_all_with_tsig() {
    let (p, s) = (local(), local());
    let dir = TempDir::new("chain-tsig");
    let file = dir.write("chain.test.zone", &chain_zone(1));
    let primary_toml = format!(
        "{}[server]\nallow_transfer = [\"127.0.0.1\"]\ntransfer_key = \"{TSIG_NAME}\"\n\
         notify = [\"{s}\"]\n[[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\n",
        tsig_toml(),
        file.display()
    );
    let mut top = start_secondary("chain-tsig-p", p, &dir, &primary_toml);
    let sec_dir = TempDir::new("chain-tsig-sd");
    let mut bottom = start_secondary(
        "chain-tsig-s",
        s,
        &sec_dir,
        &secondary_toml(APEX, &[p], None),
    );
    wait_serial(s, APEX, 1, Duration::from_secs(10), || bottom.log());
    std::fs::write(&file, chain_zone(2)).unwrap();
    assert!(top.control("reload").status.success());
    wait_serial(s, APEX, 2, Duration::from_secs(5), || {
        format!("{}\n--- primary:\n{}", bottom.log(), top.log())
    });
    bottom.wait_for_log("serial 1 -> 2 by IXFR", Duration::from_secs(2));
    assert!(top.log().contains("(IXFR incremental from 1, serial 2)"));
    // The primary reads the secondary's answer to its NOTIFY on its next turn (tens of ms).
    top.wait_for_log("answered NOERROR", Duration::from_secs(2));
    // kdig checks the signature of an ordinary answer too; another secret gets BADSIG.
    let key = tsig_kdig();
    let out = kdig_output(p, &["-y", &key, APEX, "SOA"]);
    let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(
        text.contains("NOERROR") && text.contains("TSIG") && !text.contains(";; ERROR"),
        "{text}"
    );
    let wrong = format!("hmac-sha256:{TSIG_NAME}:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
    let out = kdig_output(p, &["-y", &wrong, APEX, "SOA"]);
    let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(
        text.contains("NOTAUTH") || text.contains("BADSIG"),
        "{text}"
    );
}
