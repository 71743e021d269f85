//! Multi-signer DNSSEC, RFC 8901 model 2 (issue 29, item 6b), end to end on loopback: the
//! zone `ms.test.` is signed by two providers, each with its own KSK and ZSK: shardns
//! (`dnskey_management = "incremental"`) on 127.0.0.1 and knotd 3.2
//! (`dnskey-management: incremental`) on 127.0.0.13. Each provider's ZSK, CDS and CDNSKEY
//! are handed to the other by a TSIG-signed dynamic update (`nsupdate` to shardns,
//! `knsupdate` to knotd), the way providers exchange them. The parent `test.`,
//! signed by shardns and transferred to knotd, holds the DS of both KSKs, taken from the
//! CDS set (which must be the same at both providers, §8).
//!
//! Judges: `delv` asking each provider, the parent's key the only trust anchor; a
//! validating Unbound with the same anchor asking both providers (answers, a denial), and
//! dnsviz asking each, then shardns once knotd has left (`common::ValidatingUnbound`,
//! `common::dnsviz_judge`);
//! `ldns-verify-zone` and `dnssec-verify` on each provider's zone; dnspython
//! (tests/data/multi_signer_mix.py) validating an answer signed by one provider with the
//! DNSKEY RRset of the other, both ways. shardns restarted keeps the records the updates
//! brought; an update that deletes our own DNSKEY leaves it; then a provider is removed
//! (its ZSK, CDS and CDNSKEY deleted by update) and the zone validates at the other. A missing tool skips the test with a message (a failure under CI=1);
//! `scripts/test.sh` installs them.

mod common;

use common::*;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_TTL: u32 = 2;

/// The TSIG key the providers take each other's key records with.
const SECRET: &str = "bXVsdGktc2lnbmVyLWtleS1mb3ItdGVzdHMtb25seS0=";

struct Tools {
    knotd: PathBuf,
    unbound: PathBuf,
    delv: PathBuf,
    dnsviz: PathBuf,
    nsupdate: PathBuf,
    knsupdate: PathBuf,
    python: PathBuf,
}

/// The tools the test needs, or `None` (skip) with a message; under CI=1 a missing one
/// fails.
fn tools() -> Option<Tools> {
    let tool = |n: &str| find_program(n, &n.to_ascii_uppercase().replace('-', "_"));
    let python = PathBuf::from("/usr/bin/python3");
    let dnspython = Command::new(&python)
        .args(["-c", "import dns.dnssec"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let found = (
        find_knotd(),
        tool("unbound"),
        tool("delv"),
        find_dnsviz(),
        tool("nsupdate"),
        tool("knsupdate"),
        dnspython,
    );
    if let (
        Some(knotd),
        Some(unbound),
        Some(delv),
        Some(dnsviz),
        Some(nsupdate),
        Some(knsupdate),
        true,
    ) = found
    {
        for judge_tool in ["ldns-verify-zone", "dnssec-verify"] {
            judge(judge_tool);
        }
        return Some(Tools {
            knotd,
            unbound,
            delv,
            dnsviz,
            nsupdate,
            knsupdate,
            python,
        });
    }
    let why = format!(
        "needs knotd, unbound, delv, dnsviz, nsupdate, knsupdate and python3-dnspython: {found:?}"
    );
    assert!(std::env::var_os("CI").is_none(), "multi_signer: {why}");
    println!("multi_signer: SKIPPED: {why}");
    None
}

/// `dig +short` lines of `name`/`qtype` at `server`, spaces normalised, sorted.
fn rrset(server: SocketAddr, name: &str, qtype: &str) -> Vec<String> {
    let mut v: Vec<String> = dig(server, &["+short", "+nosplit", "+norec", name, qtype])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    v.sort();
    v
}

/// Waits (at most 15 s) until `check` holds of `name`/`qtype` at `server`.
fn wait_rrset(
    server: SocketAddr,
    name: &str,
    qtype: &str,
    what: &str,
    check: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let got = rrset(server, name, qtype);
        if check(&got) {
            return got;
        }
        assert!(
            Instant::now() < end,
            "{server} {name} {qtype}: not {what}: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The DNSKEY lines of `keys` with flags `flags` (256: ZSK, 257: KSK).
fn with_flags(keys: &[String], flags: &str) -> Vec<String> {
    keys.iter()
        .filter(|k| k.split(' ').next() == Some(flags))
        .cloned()
        .collect()
}

/// Runs `program` (nsupdate or knsupdate) with the TSIG key on `script`; panics on failure.
fn update(program: &Path, server: SocketAddr, body: &str) {
    let (ok, out) = try_update(program, server, body);
    assert!(ok, "{}: {out}", program.display());
}

/// Runs `program` with the TSIG key on `script`: whether it succeeded, its output and the
/// script.
fn try_update(program: &Path, server: SocketAddr, body: &str) -> (bool, String) {
    let script = format!(
        "server {} {}\nzone ms.test.\n{body}send\nquit\n",
        server.ip(),
        server.port()
    );
    let mut child = Command::new(program)
        .arg("-y")
        .arg(format!("hmac-sha256:ms-key:{SECRET}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}\n{script}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `update add|delete` lines for `records` (rdata lines) of type `rtype` at the apex.
fn lines(verb: &str, rtype: &str, records: &[String]) -> String {
    records
        .iter()
        .map(|r| format!("update {verb} ms.test. 2 {rtype} {r}\n"))
        .collect()
}

/// The config of shardns: the parent `test.` (signed, NOTIFY to knotd) and `ms.test.`
/// (multi-signer, updated with the TSIG key).
fn shardns_config(knot: SocketAddr) -> String {
    format!(
        "[server]\nkey_directory = \"keys\"\nallow_transfer = [\"127.0.0.0/8\"]\n\
         [[key]]\nname = \"ms-key\"\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\
         [[zone]]\nname = \"test\"\nfile = \"test.zone\"\ndnssec = true\nnotify = [\"{knot}\"]\n\
         [[zone]]\nname = \"ms.test\"\nfile = \"ms.test.zone\"\ndnssec = true\n\
         single_type_signing = false\ncds_cdnskey_publish = \"always\"\n\
         dnskey_management = \"incremental\"\n\
         update_policy = [\"grant ms-key. name ms.test. DNSKEY CDS CDNSKEY\"]\n"
    )
}

/// The parent's zone, with `ds` (DS rdata lines) for `ms.test.`.
fn parent_zone(serial: u32, ds: &[String]) -> String {
    let mut z = format!(
        "$TTL 2\n@ SOA ns admin {serial} 3600 600 86400 2\n@ NS ns\nns A 127.0.0.1\n\
         ms NS ns.ms\nns.ms A 127.0.0.1\n"
    );
    for d in ds {
        z.push_str(&format!("ms DS {d}\n"));
    }
    z
}

/// knotd's configuration: `ms.test.` signed by knotd (multi-signer policy, updates with
/// the TSIG key), `test.` a secondary of shardns.
fn knot_rest(work: &Path, zone_file: &Path, primary: SocketAddr) -> String {
    format!(
        "key:\n  - id: ms-key\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
         remote:\n  - id: a\n    address: {ip}@{port}\n\
         acl:\n  - id: upd\n    key: ms-key\n    action: update\n\
         \x20 - id: notify\n    address: 127.0.0.0/8\n    action: notify\n\
         \x20 - id: xfr\n    address: 127.0.0.0/8\n    action: transfer\n\
         policy:\n  - id: ms\n    single-type-signing: off\n    dnskey-ttl: 2\n\
         \x20   zone-max-ttl: 2\n    propagation-delay: 0\n    cds-cdnskey-publish: always\n\
         \x20   dnskey-management: incremental\n    delete-delay: 1d\n\
         zone:\n  - domain: ms.test.\n    file: \"{file}\"\n    storage: \"{w}\"\n\
         \x20   zonefile-sync: -1\n    zonefile-load: whole\n    dnssec-signing: on\n\
         \x20   dnssec-policy: ms\n    acl: [upd, xfr]\n\
         \x20 - domain: test.\n    master: a\n    acl: [notify, xfr]\n\
         \x20   storage: \"{w}\"\n    zonefile-sync: -1\n",
        ip = primary.ip(),
        port = primary.port(),
        file = zone_file.display(),
        w = work.display(),
    )
}

/// delv's verdict on `name`/`qtype` asked of `server` from `anchors`.
fn delv(delv: &Path, server: SocketAddr, anchors: &Path, name: &str, qtype: &str) -> String {
    let out = Command::new(delv)
        .arg(format!("@{}", server.ip()))
        .args(["-p", &server.port().to_string(), "-a"])
        .arg(anchors)
        .args(["+root=test", name, qtype])
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The zone `ms.test.` transferred from `server`, judged by ldns-verify-zone and
/// dnssec-verify.
fn verify(server: SocketAddr, dir: &TempDir, tag: &str) {
    let file = dir.write(&format!("{tag}.axfr"), &axfr_text(server, "ms.test", 10));
    if let Err(e) = verify_zone_file(&file, "ms.test") {
        panic!("{tag}: {e}");
    }
}

/// dnsviz from the parent's key (`anchor`, DNSKEY rdata): `test.` at `parent`, `ms.test.`
/// at `providers` (the delegation's one server name at each provider's address).
fn dnsviz(
    t: &Tools,
    dir: &Path,
    tag: &str,
    anchor: &str,
    parent: SocketAddr,
    providers: &[SocketAddr],
) {
    let servers: Vec<(&str, SocketAddr)> = providers.iter().map(|p| ("ns.ms.test", *p)).collect();
    let verdict = dnsviz_judge(
        &t.dnsviz,
        dir,
        tag,
        (&format!("test. 2 IN DNSKEY {anchor}\n"), &[]),
        "test",
        &[
            DnsvizZone {
                zone: "test",
                servers: &[("ns.test", parent)],
            },
            DnsvizZone {
                zone: "ms.test",
                servers: &servers,
            },
        ],
        &["ms.test", "www.ms.test"],
    );
    match verdict {
        Ok(warnings) => print!("{warnings}"),
        Err(e) => panic!("{tag}: {e}"),
    }
}

/// dnspython's check: `name` A from `answers` validated with `keys`'s DNSKEY RRset.
fn mix(t: &Tools, anchor: &str, keys: SocketAddr, answers: SocketAddr) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/multi_signer_mix.py");
    let at = |s: SocketAddr| format!("{}@{}", s.ip(), s.port());
    let (ok, out) = run_judge(
        Command::new(&t.python)
            .arg(script)
            .args([anchor, "test.", "ms.test.", "www.ms.test."])
            .args([at(keys), at(answers)]),
    );
    assert!(
        ok,
        "the DNSKEY RRset of {keys} with the answer of {answers}: {out}"
    );
    out
}

/// Copies the regular files under `from` to `to` (the control socket left behind).
fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (kind, target) = (e.file_type().unwrap(), to.join(e.file_name()));
        if kind.is_dir() {
            copy_files(&e.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn two_providers_sign_one_zone_and_validate_crosswise() {
    let Some(t) = tools() else { return };
    let data = TempDir::new("multi-signer-a");
    std::fs::create_dir_all(data.path().join("keys")).unwrap();
    data.write("ms.test.zone", &child_zone(CHILD_TTL));
    data.write("test.zone", &parent_zone(1, &[]));
    let knot_ip = Ipv4Addr::new(127, 0, 0, 13);
    let b = SocketAddr::from((knot_ip, free_port_on(knot_ip)));
    let config = data.write("shardns.toml", &shardns_config(b));
    let config = config.to_str().unwrap().to_string();
    let a_server = Server::start_in(data, &["--workers", "1", "--config", &config]);
    let a = a_server.addr4();

    let knot_dir = TempDir::new("multi-signer-b");
    let child_file = knot_dir.write("ms.test.zone", &child_zone(CHILD_TTL));
    let rest = knot_rest(knot_dir.path(), &child_file, a);
    let mut knot = spawn_knot(&t.knotd, knot_dir.path(), b, "info", &rest);
    wait_authoritative(b, "ms.test.", &mut knot);
    wait_authoritative(b, "test.", &mut knot);

    // Each provider's own keys: a KSK and a ZSK of algorithm 13.
    let two = |k: &[String]| k.len() == 2;
    let (a_keys, b_keys) = (
        wait_rrset(a, "ms.test", "DNSKEY", "two keys", two),
        wait_rrset(b, "ms.test", "DNSKEY", "two keys", two),
    );
    let (a_zsk, b_zsk) = (with_flags(&a_keys, "256"), with_flags(&b_keys, "256"));
    assert_eq!((a_zsk.len(), b_zsk.len()), (1, 1), "{a_keys:?} {b_keys:?}");
    let (a_cds, b_cds) = (rrset(a, "ms.test", "CDS"), rrset(b, "ms.test", "CDS"));
    let (a_cdnskey, b_cdnskey) = (
        rrset(a, "ms.test", "CDNSKEY"),
        rrset(b, "ms.test", "CDNSKEY"),
    );
    assert_eq!((a_cds.len(), b_cds.len()), (1, 1), "{a_cds:?} {b_cds:?}");

    // The exchange: each gets the other's ZSK, CDS and CDNSKEY.
    let give = |zsk: &[String], cds: &[String], cdnskey: &[String]| {
        lines("add", "DNSKEY", zsk) + &lines("add", "CDS", cds) + &lines("add", "CDNSKEY", cdnskey)
    };
    update(&t.nsupdate, a, &give(&b_zsk, &b_cds, &b_cdnskey));
    update(&t.knsupdate, b, &give(&a_zsk, &a_cds, &a_cdnskey));
    let three = |k: &[String]| k.len() == 3;
    let a_set = wait_rrset(a, "ms.test", "DNSKEY", "three keys", three);
    let b_set = wait_rrset(b, "ms.test", "DNSKEY", "three keys", three);
    assert!(
        a_set.contains(&b_zsk[0]) && b_set.contains(&a_zsk[0]),
        "{a_set:?} {b_set:?}"
    );
    // §8: the same CDS and CDNSKEY sets at both, every provider's KSK.
    let both = |k: &[String]| k.len() == 2;
    let cds = wait_rrset(a, "ms.test", "CDS", "both KSKs", both);
    assert_eq!(wait_rrset(b, "ms.test", "CDS", "both KSKs", both), cds);
    let cdnskey = wait_rrset(a, "ms.test", "CDNSKEY", "both KSKs", both);
    assert_eq!(
        wait_rrset(b, "ms.test", "CDNSKEY", "both KSKs", both),
        cdnskey
    );

    // The parent takes the CDS set as its DS set; knotd, its secondary, follows.
    let parent_file = a_server.dir.path().join("test.zone");
    std::fs::write(&parent_file, parent_zone(2, &cds)).unwrap();
    a_server.sighup();
    wait_rrset(b, "ms.test", "DS", "the DS of both KSKs", |d| d.len() == 2);
    let parent_keys = rrset(a, "test", "DNSKEY");
    assert_eq!(parent_keys.len(), 1, "the parent's CSK: {parent_keys:?}");
    let anchor = parent_keys[0].clone();
    let f: Vec<&str> = anchor.splitn(4, ' ').collect();
    let anchors = knot_dir.write(
        "anchors.conf",
        &format!(
            "trust-anchors {{\n  test. static-key {} {} {} \"{}\";\n}};\n",
            f[0],
            f[1],
            f[2],
            f[3].replace(' ', "")
        ),
    );

    // Each provider validates from the parent's key.
    for (who, server) in [("shardns", a), ("knotd", b)] {
        for (name, qtype) in [
            ("www.ms.test", "A"),
            ("ms.test", "DNSKEY"),
            ("ms.test", "CDS"),
        ] {
            let out = delv(&t.delv, server, &anchors, name, qtype);
            assert!(
                out.contains("fully validated"),
                "{who}: {name} {qtype}:\n{out}"
            );
        }
        verify(server, &a_server.dir, who);
    }
    // A validating Unbound asking both providers (it picks among them, so its answers and
    // keys come from either): secure answers, and a secure denial.
    let mut unbound = ValidatingUnbound::start(
        &t.unbound,
        knot_dir.path(),
        ("test.", &anchor),
        &[("test.", &[a]), ("ms.test.", &[a, b])],
    );
    for (name, qtype, rcode) in [
        ("www.ms.test", "A", "NOERROR"),
        ("ms.test", "DNSKEY", "NOERROR"),
        ("ms.test", "CDS", "NOERROR"),
        ("nx.ms.test", "A", "NXDOMAIN"),
        ("www.ms.test", "TXT", "NOERROR"),
    ] {
        unbound
            .secure(name, qtype, rcode)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // dnsviz from the parent's key, one provider at a time: each serves a DNSKEY RRset of
    // its own (its KSK, both ZSKs: RFC 8901 model 2), which dnsviz asking both at once
    // reports as an error (DNSKEY_MISSING_FROM_SERVERS) by design of the model; the mix is
    // judged by Unbound above and dnspython below.
    dnsviz(&t, knot_dir.path(), "shardns", &anchor, a, &[a]);
    dnsviz(&t, knot_dir.path(), "knotd", &anchor, a, &[b]);
    // The mix: one provider's DNSKEY RRset, the other's signed answer, both ways.
    for (keys, answers) in [(a, b), (b, a)] {
        println!("multi_signer: {}", mix(&t, &anchor, keys, answers).trim());
    }

    // A restart keeps what the updates brought (state/ms.test.updates), signed anew.
    let copy = TempDir::new("multi-signer-a2");
    copy_files(a_server.dir.path(), copy.path());
    drop(a_server);
    let config = copy.path().join("shardns.toml").display().to_string();
    let a_server = Server::start_in(copy, &["--workers", "1", "--config", &config]);
    let a = a_server.addr4();
    assert_eq!(rrset(a, "ms.test", "DNSKEY"), a_set, "after a restart");
    assert_eq!(rrset(a, "ms.test", "CDS"), cds, "after a restart");
    let out = delv(&t.delv, a, &anchors, "www.ms.test", "A");
    assert!(out.contains("fully validated"), "after a restart:\n{out}");

    // Ours stay whatever an update says: deleting our ZSK changes nothing.
    update(&t.nsupdate, a, &lines("delete", "DNSKEY", &a_zsk));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rrset(a, "ms.test", "DNSKEY"), a_set, "{}", a_server.log());
    // A key of an algorithm we do not sign with (Ed25519) would break validation: the
    // update fails (SERVFAIL), the zone stays as it was and is served.
    let ed25519 = vec!["256 3 15 BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=".to_string()];
    let (ok, out) = try_update(&t.nsupdate, a, &lines("add", "DNSKEY", &ed25519));
    assert!(!ok && out.contains("SERVFAIL"), "{out}");
    assert_eq!(rrset(a, "ms.test", "DNSKEY"), a_set);
    assert!(
        a_server.log().contains("algorithm 15"),
        "{}",
        a_server.log()
    );

    // knotd leaves the group: its ZSK, CDS and CDNSKEY go from shardns's zone, which
    // validates alone from the DS set.
    let b_only = |set: &[String], mine: &[String]| -> Vec<String> {
        set.iter().filter(|r| !mine.contains(r)).cloned().collect()
    };
    let b_ksk_cds = b_only(&cds, &a_cds);
    let b_ksk = b_only(&cdnskey, &a_cdnskey);
    let gone = lines("delete", "DNSKEY", &b_zsk)
        + &lines("delete", "CDS", &b_ksk_cds)
        + &lines("delete", "CDNSKEY", &b_ksk);
    update(&t.nsupdate, a, &gone);
    assert_eq!(
        wait_rrset(a, "ms.test", "DNSKEY", "our two keys", two),
        a_keys
    );
    assert_eq!(
        wait_rrset(a, "ms.test", "CDS", "our CDS", |c| c.len() == 1),
        a_cds
    );
    for (name, qtype) in [("www.ms.test", "A"), ("ms.test", "DNSKEY")] {
        let out = delv(&t.delv, a, &anchors, name, qtype);
        assert!(
            out.contains("fully validated"),
            "after the removal: {name} {qtype}:\n{out}"
        );
    }
    verify(a, &a_server.dir, "shardns-alone");
    dnsviz(&t, knot_dir.path(), "alone", &anchor, a, &[a]);
    knot.check_alive();
}
