//! `shardns zone status|refresh|retransfer|notify` on a shardns primary and a shardns
//! secondary: the status of each role (serial, source, refresh times, expiry, journal
//! depth), a refresh that brings a change the primary did not announce, a retransfer by
//! AXFR, a NOTIFY sent on demand, and the errors for zones that are not secondary zones.

use super::*;

const APEX: &str = "ctl.test.";

fn zone(serial: u32) -> String {
    format!(
        "$TTL 60\n@ SOA ns hostmaster {serial} 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\n\
         www A 192.0.2.{serial}\n"
    )
}

/// `shardns zone ARGS... --control SOCKET` against `server`: success, and its output.
pub(crate) fn zone_cmd(server: &Server, args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .arg("zone")
        .args(args)
        .arg("--control")
        .arg(&server.control)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn zone_status_refresh_retransfer_and_notify_through_the_control_socket() {
    let (p, s) = (local(), local());
    let dir = TempDir::new("ctl");
    let file = dir.write("ctl.test.zone", &zone(1));
    let zone_flag = format!("{APEX}={}", file.display());
    // The primary does not NOTIFY on its own: the secondary moves only when told to.
    let primary = Server::start_at(
        "ctl-primary",
        &[p],
        &[
            "--workers",
            "1",
            "--zone",
            &zone_flag,
            "--allow-transfer",
            "127.0.0.1",
        ],
    );
    let secondary_flag = format!("{APEX}={p}");
    let mut secondary = Server::start_at(
        "ctl-secondary",
        &[s],
        &["--workers", "1", "--secondary", &secondary_flag],
    );
    wait_serial(s, APEX, 1, Duration::from_secs(10), || secondary.log());

    let (ok, text) = zone_cmd(&primary, &["status"]);
    assert!(ok, "{text}");
    for line in [
        "zone: ctl.test.",
        "role: primary",
        "serial: 1",
        "journal: empty",
    ] {
        assert!(text.contains(line), "{line:?} missing from\n{text}");
    }
    assert!(
        text.contains(&format!("source: {}", file.display())),
        "{text}"
    );
    let (ok, text) = zone_cmd(&secondary, &["status", APEX]);
    assert!(ok, "{text}");
    for line in [
        "role: secondary".to_string(),
        "serial: 1 (serving)".into(),
        format!("source: {p} (primaries {p})"),
        "last refresh: ".into(),
        "next refresh: in ".into(),
        "expires: in ".into(),
        // The secondary lets nobody transfer: no journal.
        "journal: none".into(),
    ] {
        assert!(text.contains(&line), "{line:?} missing from\n{text}");
    }

    // A new version on the primary, announced to nobody: `zone refresh` fetches it.
    std::fs::write(&file, zone(2)).unwrap();
    assert!(primary.control("reload").status.success());
    assert_eq!(serial_at(s, APEX), Some(1));
    let (ok, text) = zone_cmd(&secondary, &["refresh", APEX]);
    assert!(ok, "{text}");
    assert!(text.contains("refresh queued"), "{text}");
    wait_serial(s, APEX, 2, Duration::from_secs(10), || secondary.log());
    secondary.wait_for_log("serial 1 -> 2 by IXFR", Duration::from_secs(5));
    // The primary's journal now holds that change.
    let (_, text) = zone_cmd(&primary, &["status", APEX]);
    assert!(
        text.contains("journal: 1 versions, serial 1 to 2"),
        "{text}"
    );

    // `zone retransfer`: the whole zone again by AXFR, the serial unchanged.
    let (ok, text) = zone_cmd(&secondary, &["retransfer", APEX]);
    assert!(ok, "{text}");
    secondary.wait_for_log("retransfer asked for", Duration::from_secs(5));
    secondary.wait_for_log("-> 2 by AXFR", Duration::from_secs(10));

    // `zone notify` on the primary: no secondaries configured, an error that says so.
    let (ok, text) = zone_cmd(&primary, &["notify", APEX]);
    assert!(
        !ok && text.contains("has no secondaries to notify"),
        "{text}"
    );
    // Refresh of a zone that is not a secondary zone, or not ours at all.
    let (ok, text) = zone_cmd(&primary, &["refresh", APEX]);
    assert!(!ok && text.contains("is not a secondary zone"), "{text}");
    let (ok, text) = zone_cmd(&secondary, &["status", "other.test."]);
    assert!(!ok && text.contains("not configured"), "{text}");
    // The secondary still serves, and answers as the primary does.
    assert_eq!(dig(s, &["+short", "www.ctl.test", "A"]).trim(), "192.0.2.2");
}

/// `zone notify` sends the NOTIFY at once to a secondary that is configured.
#[test]
fn zone_notify_reaches_the_secondary() {
    let listener = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let target = listener.local_addr().unwrap().to_string();
    let dir = TempDir::new("ctl-notify");
    let file = dir.write("ctl.test.zone", &zone(7));
    let zone_flag = format!("{APEX}={}", file.display());
    let primary = Server::start_at(
        "ctl-notify-p",
        &[local()],
        &["--workers", "1", "--zone", &zone_flag, "--notify", &target],
    );
    let mut buf = [0u8; 512];
    // The one at startup, answered so that it is not retried.
    let (n, from) = listener.recv_from(&mut buf).expect("the startup NOTIFY");
    let mut answer = buf[..n].to_vec();
    answer[2] |= 0x80;
    listener.send_to(&answer, from).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (ok, text) = zone_cmd(&primary, &["notify", APEX]);
    assert!(ok, "{text}");
    assert!(text.contains("NOTIFY of serial 7 queued"), "{text}");
    let (n, _) = listener.recv_from(&mut buf).expect("the NOTIFY asked for");
    assert_eq!((buf[2] >> 3) & 0xf, 4, "opcode NOTIFY");
    assert!(n > 12);
}
