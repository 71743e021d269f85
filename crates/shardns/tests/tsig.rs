//! TSIG (RFC 8945) on ordinary queries, transfers and NOTIFY, as clients we did not write
//! see it (`dig -y`, `kdig -y`), and request by request against BIND 9 (`named`) on the same
//! zone and key:
//!
//! - a signed answer keeps room for its TSIG within the size limit: too big, it is TC with
//!   the question and the TSIG (RFC 8945 §5.3), over UDP without EDNS (512) and with it;
//! - BADTIME is answered signed, with the server's time in Other Data (§5.2.3), for queries,
//!   AXFR and NOTIFY; BADSIG/BADKEY unsigned (§5.3.2);
//! - a TSIG followed by another record, or two TSIGs: FORMERR (§5.1);
//! - MAC sizes (§5.2.2.1): a truncated MAC that verifies gets BADTRUNC, signed; one shorter
//!   than 10 octets or half the hash, or longer than the hash, FORMERR; a request's Other
//!   Data is covered by its MAC;
//! - refused NOTIFY are logged, once per zone and source.
//!
//! Requests that no client sends (an old time, a truncated MAC, misplaced records) are built
//! here with our own `tsig::sign_request`; the responses' MACs are checked with our client
//! verifier, which the BIND comparison checks in turn against `named`'s signatures.

mod common;

use common::*;
use shardns_wire::tsig::{self, Key, ResponseVerifier, BADKEY, BADSIG, BADTIME, BADTRUNC};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const APEX: &str = "tsig.test.";
/// RCODEs.
const NOERROR: u16 = 0;
const FORMERR: u16 = 1;
const NOTAUTH: u16 = 9;

fn key() -> Key {
    tsig_kdig().parse().unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A TXT string of 100 octets.
fn long(c: char) -> String {
    std::iter::repeat_n(c, 100).collect()
}

/// The zone: `four` has four TXT strings of 100 octets (about 480 octets of answer: fits
/// 512 alone, not with a TSIG), `ten` ten of them (about 1,170: fits an EDNS buffer of
/// 1,232 alone, not with a TSIG), `small` one short one.
fn zone_text() -> String {
    let mut z = format!(
        "$ORIGIN {APEX}\n$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 300\n@ NS ns\nns A 127.0.0.1\n\
         small TXT \"hello\"\n"
    );
    for (name, n) in [("four", 4), ("ten", 10)] {
        for i in 0..n {
            z.push_str(&format!(
                "{name} TXT \"{}\"\n",
                long(char::from(b'a' + i as u8))
            ));
        }
    }
    z
}

fn start_shardns(tag: &str) -> Server {
    let dir = TempDir::new(tag);
    let path = dir.write("tsig.test.zone", &zone_text());
    let zone = format!("{APEX}={}", path.display());
    let key = tsig_kdig();
    Server::start_in(
        dir,
        &[
            "--workers",
            "1",
            "--zone",
            &zone,
            "--allow-transfer",
            "127.0.0.1",
            "--transfer-key",
            &key,
        ],
    )
}

/// `named` authoritative for the zone with the key, or `None` (SKIPPED) if not installed.
fn start_named(work: &TempDir) -> Option<(Daemon, SocketAddr)> {
    let named = peer("named", "NAMED")?;
    let file = work.write("tsig.test.zone", &zone_text());
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    // Its NOTIFY go to a free loopback port nobody reads.
    let notify = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let mut d = start_named_primary(&named, work.path(), addr, &[(APEX, &file)], notify);
    wait_authoritative(addr, APEX, &mut d);
    Some((d, addr))
}

/// `msg` signed with the key at `at` with `other` as Other Data.
fn signed(msg: &[u8], at: u64, other: &[u8]) -> Vec<u8> {
    let mut b = msg.to_vec();
    let len = b.len();
    b.resize(len + 512, 0);
    let n = tsig::sign_request_with(&mut b, len, &key(), at, other);
    b.truncate(n);
    b
}

/// `msg` (signed) with its TSIG's MAC cut to, or zero-padded to, `mac_len` octets.
fn with_mac_len(msg: &[u8], mac_len: usize) -> Vec<u8> {
    let sig = tsig::read(msg).unwrap().unwrap();
    let mut mac = sig.mac.clone();
    mac.resize(mac_len, 0);
    let mut rdata = wire_name("hmac-sha256.");
    rdata.extend_from_slice(&sig.time.to_be_bytes()[2..]);
    rdata.extend_from_slice(&sig.fudge.to_be_bytes());
    rdata.extend_from_slice(&(mac.len() as u16).to_be_bytes());
    rdata.extend_from_slice(&mac);
    rdata.extend_from_slice(&sig.original_id.to_be_bytes());
    rdata.extend_from_slice(&sig.error.to_be_bytes());
    rdata.extend_from_slice(&(sig.other.len() as u16).to_be_bytes());
    rdata.extend_from_slice(&sig.other);
    let mut m = msg[..sig.start].to_vec();
    m.extend_from_slice(&tsig_record(&rdata));
    m
}

/// A TSIG record of the key with `rdata`.
fn tsig_record(rdata: &[u8]) -> Vec<u8> {
    let mut r = wire_name(TSIG_NAME);
    r.extend_from_slice(&250u16.to_be_bytes());
    r.extend_from_slice(&255u16.to_be_bytes());
    r.extend_from_slice(&0u32.to_be_bytes());
    r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    r.extend_from_slice(rdata);
    r
}

/// `msg` with `record` appended to its additional section.
fn append_record(msg: &[u8], record: &[u8]) -> Vec<u8> {
    let mut m = msg.to_vec();
    m.extend_from_slice(record);
    let ar = u16::from_be_bytes([m[10], m[11]]) + 1;
    m[10..12].copy_from_slice(&ar.to_be_bytes());
    m
}

/// An OPT record (1232 octets, no options).
const OPT: [u8; 11] = [0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0];

/// What a response says, for comparing servers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    rcode: u16,
    tc: bool,
    /// The TSIG's error, if the response has a TSIG.
    tsig_error: Option<u16>,
    /// The TSIG has a MAC, and it verifies (our client verifier, over the request's MAC).
    signed: bool,
}

fn outcome(request: &[u8], response: &[u8]) -> Outcome {
    let rcode = u16::from(response[3] & 0x0f);
    let tc = response[2] & 0x02 != 0;
    let sig = tsig::read(response).expect("a readable TSIG, if any");
    let signed = sig.as_ref().is_some_and(|s| !s.mac.is_empty()) && {
        let request_mac = tsig::read(request).unwrap().unwrap().mac;
        let mut v = ResponseVerifier::new(&key(), &request_mac);
        match v.verify(response, now()) {
            Ok(()) => true,
            Err(shardns_wire::Error::SignedError { .. }) => true,
            Err(e) => panic!("a signed response that does not verify: {e}"),
        }
    };
    Outcome {
        rcode,
        tc,
        tsig_error: sig.map(|s| s.error),
        signed,
    }
}

/// The Other Data of a BADTIME answer: the server's time, 48 bits, near ours.
fn assert_server_time(response: &[u8]) {
    let sig = tsig::read(response).unwrap().unwrap();
    assert_eq!(sig.other.len(), 6, "Other Data: {:02x?}", sig.other);
    let mut t = [0u8; 8];
    t[2..].copy_from_slice(&sig.other);
    let t = u64::from_be_bytes(t);
    assert!(t.abs_diff(now()) < 30, "server time {t}, ours {}", now());
}

/// The requests both servers get, by name: (name, request, UDP size limit).
fn cases() -> Vec<(&'static str, Vec<u8>, usize)> {
    let t = now();
    let small = query(0x5101, "small.tsig.test", 16, None);
    let small_edns = query(0x5102, "small.tsig.test", 16, Some(1232));
    let good = signed(&small, t, &[]);
    let good_edns = signed(&small_edns, t, &[]);
    let two = append_record(&good, &good[tsig::read(&good).unwrap().unwrap().start..]);
    vec![
        ("good", good.clone(), 512),
        (
            "four TXT, no EDNS (512)",
            signed(&query(0x5103, "four.tsig.test", 16, None), t, &[]),
            512,
        ),
        (
            "ten TXT, EDNS 1232",
            signed(&query(0x5104, "ten.tsig.test", 16, Some(1232)), t, &[]),
            1232,
        ),
        ("BADTIME (1000 s ago)", signed(&small, t - 1000, &[]), 512),
        ("TSIG then OPT", append_record(&good, &OPT), 512),
        ("two TSIG", two, 512),
        ("MAC 16 of 32", with_mac_len(&good, 16), 512),
        ("MAC 8", with_mac_len(&good, 8), 512),
        ("MAC 33", with_mac_len(&good, 33), 512),
        (
            "Other Data of 6 octets",
            signed(&small_edns, t, &[0, 0, 0, 0, 0, 1]),
            1232,
        ),
        ("good, EDNS", good_edns, 1232),
    ]
}

/// What RFC 8945 asks of each case (and what shardns answers).
fn expected(name: &str) -> Outcome {
    let o = |rcode, tc, tsig_error, signed| Outcome {
        rcode,
        tc,
        tsig_error,
        signed,
    };
    match name {
        "good" | "good, EDNS" | "Other Data of 6 octets" => o(NOERROR, false, Some(0), true),
        "four TXT, no EDNS (512)" | "ten TXT, EDNS 1232" => o(NOERROR, true, Some(0), true),
        "BADTIME (1000 s ago)" => o(NOTAUTH, false, Some(BADTIME), true),
        "TSIG then OPT" | "two TSIG" => o(FORMERR, false, None, false),
        // An unsigned TSIG with BADSIG, as BIND 9.18 answers (§5.3.2: the MAC is at fault).
        "MAC 8" | "MAC 33" => o(FORMERR, false, Some(BADSIG), false),
        "MAC 16 of 32" => o(NOTAUTH, false, Some(BADTRUNC), true),
        other => panic!("no expectation for {other}"),
    }
}

#[test]
fn signed_answers_to_hand_built_requests_follow_rfc_8945() {
    let server = start_shardns("tsig-rfc");
    let sock = udp_client(server.addr4());
    for (name, req, limit) in cases() {
        let resp = udp_exchange(&sock, &req).unwrap_or_else(|| panic!("{name}: no answer"));
        assert!(resp.len() <= limit, "{name}: {} octets", resp.len());
        assert_eq!(outcome(&req, &resp), expected(name), "{name}");
        if name.starts_with("BADTIME") {
            assert_server_time(&resp);
        }
    }
}

#[test]
fn signed_answers_match_bind() {
    let work = TempDir::new("tsig-named");
    let Some((mut named, named_addr)) = start_named(&work) else {
        println!("tsig: SKIPPED the comparison with BIND: named is not installed");
        return;
    };
    let server = start_shardns("tsig-bind");
    let ours = udp_client(server.addr4());
    let theirs = udp_client(named_addr);
    let mut differ = Vec::new();
    for (name, req, limit) in cases() {
        let a = udp_exchange(&ours, &req).unwrap_or_else(|| panic!("{name}: no answer"));
        let b = udp_exchange(&theirs, &req);
        named.check_alive();
        let b = b.unwrap_or_else(|| panic!("{name}: no answer from named"));
        assert!(b.len() <= limit, "{name}: named sent {} octets", b.len());
        let (a, b) = (outcome(&req, &a), outcome(&req, &b));
        println!("{name}: shardns {a:?}, named {b:?}");
        if a != b {
            differ.push(format!("{name}: shardns {a:?}, named {b:?}"));
        }
    }
    assert!(differ.is_empty(), "differences:\n{}", differ.join("\n"));
}

/// The header flags dig prints.
fn flags(out: &str) -> Vec<&str> {
    out.lines()
        .find_map(|l| l.strip_prefix(";; flags: "))
        .and_then(|l| l.split(';').next())
        .map_or_else(Vec::new, |f| f.split_whitespace().collect())
}

/// `dig -y` checks the TSIG of the answers it gets (";; Couldn't verify signature",
/// "expected a TSIG" otherwise).
#[test]
fn dig_verifies_truncated_signed_answers() {
    let server = start_shardns("tsig-dig");
    let y = tsig_kdig();
    for (args, limit) in [
        (&["+noedns", "four.tsig.test", "TXT"][..], 512),
        (&["+bufsize=1232", "ten.tsig.test", "TXT"][..], 1232),
    ] {
        let mut all = vec!["-y", &y, "+nocookie", "+ignore"];
        all.extend_from_slice(args);
        let out = dig(server.addr4(), &all);
        assert!(flags(&out).contains(&"tc"), "{args:?}: TC\n{out}");
        assert!(
            !out.contains("expected a TSIG") && !out.contains("Couldn't verify"),
            "{args:?}\n{out}"
        );
        assert!(
            out.contains("TSIG\thmac-sha256."),
            "{args:?}: signed\n{out}"
        );
        let size: usize = out
            .split("MSG SIZE  rcvd: ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no size in\n{out}"));
        assert!(size <= limit, "{args:?}: {size} octets");
        // Over TCP (dig follows the TC) the whole answer, signed.
        let mut tcp = all.clone();
        tcp.retain(|a| *a != "+ignore");
        let out = dig(server.addr4(), &tcp);
        assert!(
            out.contains("status: NOERROR") && !flags(&out).contains(&"tc"),
            "{out}"
        );
        assert!(!out.contains("Couldn't verify") && out.contains("TSIG\thmac-sha256."));
    }
    // kdig too, over UDP without EDNS.
    let out = kdig(
        server.addr4(),
        &["-y", &y, "+notcp", "+ignoretc", "four.tsig.test", "TXT"],
    );
    assert!(out.contains("TC") && out.contains("TSIG"), "{out}");
    assert!(!out.contains("failed") && !out.contains("BADSIG"), "{out}");
}

/// BADTIME over TCP for an AXFR: NOTAUTH, signed, our time in Other Data; a wrong key's
/// answer stays unsigned (BADKEY).
#[test]
fn badtime_for_a_transfer_is_signed_with_the_servers_time() {
    let server = start_shardns("tsig-axfr");
    let axfr = query(0x7001, APEX, 252, None);
    let req = signed(&axfr, now() - 1000, &[]);
    let resp = tcp_exchange(server.addr4(), std::slice::from_ref(&req));
    let o = outcome(&req, &resp[0]);
    assert_eq!(
        (o.rcode, o.tsig_error, o.signed),
        (NOTAUTH, Some(BADTIME), true)
    );
    assert_server_time(&resp[0]);
    // And a current one transfers, signed (kdig checks the first message).
    let out = kdig_output(server.addr4(), &["-y", &tsig_kdig(), APEX, "AXFR"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("ERROR"), "{err}");
    // Another key name: BADKEY, unsigned.
    let mut other = key();
    other.name = "other-key.".parse().unwrap();
    let mut b = axfr.clone();
    let len = b.len();
    b.resize(len + 200, 0);
    let n = tsig::sign_request(&mut b, len, &other, now());
    b.truncate(n);
    let resp = tcp_exchange(server.addr4(), std::slice::from_ref(&b));
    let sig = tsig::read(&resp[0]).unwrap().unwrap();
    assert_eq!((sig.error, sig.mac.len()), (BADKEY, 0));
}

/// A NOTIFY (opcode 4) for the apex, from `ip`.
fn notify(id: u16) -> Vec<u8> {
    let mut q = query(id, APEX, 6, None);
    q[2] = 4 << 3 | 0x04; // NOTIFY, AA
    q
}

/// shardns as a secondary of the apex with the key, its primary 127.0.0.1 at a port nobody
/// listens on: the zone stays unavailable, NOTIFY are still answered.
fn start_secondary_of_nobody(tag: &str) -> Server {
    let primary = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let toml = format!(
        "{}[[zone]]\nname = \"{APEX}\"\nprimary = [\"{primary}\"]\nprimary_key = \"{TSIG_NAME}\"\n",
        tsig_toml()
    );
    Server::start_on(tag, Ipv4Addr::LOCALHOST, Some(&toml), &["--workers", "1"])
}

/// A NOTIFY signed 1000 s ago to a secondary zone with a primary_key: NOTAUTH, BADTIME,
/// signed, our time in Other Data.
#[test]
fn notify_badtime_is_signed_with_the_servers_time() {
    let server = start_secondary_of_nobody("tsig-notify");
    let sock = udp_client(server.addr);
    let req = signed(&notify(0x6001), now() - 1000, &[]);
    let resp = udp_exchange(&sock, &req).expect("an answer");
    let o = outcome(&req, &resp);
    assert_eq!(
        (o.rcode, o.tsig_error, o.signed),
        (NOTAUTH, Some(BADTIME), true)
    );
    assert_server_time(&resp);
}

/// Refused NOTIFY (unsigned where the zone has a primary_key, a wrong key, not from a
/// primary) are logged at warn once per zone and source, however many come.
#[test]
fn refused_notify_are_logged_once_per_zone_and_source() {
    let server = start_secondary_of_nobody("tsig-notify-log");
    let sock = udp_client(server.addr);
    let lines = |from: &str| {
        server
            .log()
            .lines()
            .filter(|l| {
                l.contains("WARN")
                    && l.contains("refused NOTIFY for zone tsig.test.")
                    && l.contains(from)
            })
            .count()
    };
    // Bounded wait for the log reader thread to catch up.
    let wait = |from: &str| {
        let end = Instant::now() + Duration::from_secs(5);
        while lines(from) == 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        lines(from)
    };
    // Unsigned (REFUSED) and signed with another secret (NOTAUTH, BADSIG), from the primary.
    let mut wrong = key();
    wrong.secret[0] ^= 1;
    for i in 0..3 {
        let resp = udp_exchange(&sock, &notify(0x6010 + i)).expect("an answer");
        assert_eq!(resp[3] & 0x0f, 5, "REFUSED");
        let mut b = notify(0x6030 + i);
        let len = b.len();
        b.resize(len + 200, 0);
        let n = tsig::sign_request(&mut b, len, &wrong, now());
        b.truncate(n);
        let resp = udp_exchange(&sock, &b).expect("an answer");
        assert_eq!(resp[3] & 0x0f, 9, "NOTAUTH");
    }
    assert_eq!(wait("from 127.0.0.1:"), 1, "{}", server.log());
    // From another address (not a primary): its own line, once for five NOTIFY.
    let stray = udp_from(Ipv4Addr::new(127, 0, 0, 2), server.addr);
    for i in 0..5 {
        let resp = udp_exchange(&stray, &notify(0x6020 + i)).expect("an answer");
        assert_eq!(resp[3] & 0x0f, 5, "REFUSED");
    }
    assert_eq!(wait("from 127.0.0.2:"), 1, "{}", server.log());
    // Its line came after the answers to all the others: still one for 127.0.0.1.
    assert_eq!(lines("from 127.0.0.1:"), 1, "{}", server.log());
    assert_eq!(
        server.stat("shardns_notify_in_total{result=\"refused\"}"),
        11.0
    );
}

/// The largest room a signed answer can need over UDP: a key name of 255 octets with
/// HMAC-SHA512 (a TSIG of 358 octets), a 128-octet NSID and a cookie asked for, a 512-octet
/// buffer. The answer still comes, signed, within 512 octets (dig checks it), and the server
/// lives on.
#[test]
fn the_largest_signed_answer_room_still_fits_512_octets() {
    let label = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
    let name = format!(
        "{}.{}.{}.{}.",
        label('a', 63),
        label('b', 63),
        label('c', 63),
        label('d', 61)
    );
    assert_eq!(wire_name(&name).len(), 255);
    let y = format!("hmac-sha512:{name}:{TSIG_SECRET}");
    let dir = TempDir::new("tsig-room");
    let path = dir.write("tsig.test.zone", &zone_text());
    let zone = format!("{APEX}={}", path.display());
    let nsid = label('n', 128);
    let server = Server::start_in(
        dir,
        &[
            "--workers",
            "1",
            "--zone",
            &zone,
            "--transfer-key",
            &y,
            "--nsid",
            &nsid,
        ],
    );
    for qname in ["small.tsig.test", "four.tsig.test"] {
        let out = dig(
            server.addr4(),
            &[
                "-y",
                &y,
                "+nsid",
                "+cookie",
                "+bufsize=512",
                "+ignore",
                qname,
                "TXT",
            ],
        );
        assert!(out.contains("status: NOERROR"), "{qname}: no answer\n{out}");
        assert!(
            out.contains(";; TSIG PSEUDOSECTION:")
                && out.contains(" TSIG hmac-sha512. ")
                && !out.contains("Couldn't verify"),
            "{qname}: signed\n{out}"
        );
        let size: usize = out
            .split("MSG SIZE  rcvd: ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no size in\n{out}"));
        assert!(size <= 512, "{qname}: {size} octets");
    }
}
