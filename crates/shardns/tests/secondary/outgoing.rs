//! Knot DNS, NSD and BIND as secondaries of shardns, every SOA query, transfer and NOTIFY
//! signed with TSIG (the zone's `transfer_key`): the first transfer is an AXFR; then each reload of the primary's zone file is a version
//! change shardns keeps in its journal, and each secondary, told by NOTIFY, takes it as a
//! true IXFR (incremental form: the differences only), which their own logs say. An IXFR
//! from an older serial gets the condensed changes since (kdig).

use super::*;
use std::path::PathBuf;

const APEX: &str = "out.test.";
const HOSTS: usize = 2000;

/// Version `serial`: one record that moves, one that changes, a name more per version.
fn version(serial: u32) -> String {
    let mut extra = format!(
        "moved A 10.99.{}.{}\nlast TXT \"serial {serial}\"\n",
        serial >> 8,
        serial & 255
    );
    for k in 2..=serial {
        extra.push_str(&format!("n{k} AAAA 2001:db8::{k:x}\n"));
    }
    zone_text(serial, HOSTS, &extra)
}

fn knot_secondary(knotd: &Path, work: &Path, listen: SocketAddr, primary: SocketAddr) -> Daemon {
    std::fs::create_dir_all(work.join("knot-db")).unwrap();
    let conf = format!(
        "server:\n    rundir: \"{w}\"\n    pidfile: \"{w}/knot.pid\"\n    listen: {listen}\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         control:\n    listen: \"{w}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: info\n\
         database:\n    storage: \"{w}/knot-db\"\n\
         key:\n  - id: {TSIG_NAME}\n    algorithm: hmac-sha256\n    secret: {TSIG_SECRET}\n\
         remote:\n  - id: primary\n    address: {pip}@{pport}\n    key: {TSIG_NAME}\n\
         acl:\n  - id: notify\n    address: 127.0.0.1\n    key: {TSIG_NAME}\n    action: notify\n\
         \x20 - id: xfr\n    address: 127.0.0.0/8\n    key: {TSIG_NAME}\n    action: transfer\n\
         zone:\n  - domain: {APEX}\n    master: primary\n    acl: [notify, xfr]\n\
         \x20   storage: \"{w}\"\n    file: \"{w}/knot-copy.zone\"\n    zonefile-sync: -1\n",
        w = work.display(),
        listen = format_args!("{}@{}", listen.ip(), listen.port()),
        pip = primary.ip(),
        pport = primary.port(),
    );
    let path = work.join("knot.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new(knotd);
    cmd.arg("-c").arg(&path);
    Daemon::spawn("knotd", cmd, work.join("knotd.log"))
}

fn nsd_secondary(nsd: &Path, work: &Path, listen: SocketAddr, primary: SocketAddr) -> Daemon {
    let conf = format!(
        "server:\n    ip-address: {ip}\n    port: {port}\n    username: \"\"\n    chroot: \"\"\n\
         \x20   zonesdir: \"{w}\"\n    database: \"\"\n    pidfile: \"{w}/nsd.pid\"\n\
         \x20   xfrdfile: \"{w}/xfrd.state\"\n    zonelistfile: \"{w}/zone.list\"\n\
         \x20   server-count: 1\n    verbosity: 2\n    do-ip6: no\n\
         remote-control:\n    control-enable: no\n\
         key:\n    name: \"{TSIG_NAME}\"\n    algorithm: hmac-sha256\n    secret: \"{TSIG_SECRET}\"\n\
         zone:\n    name: \"{APEX}\"\n    zonefile: \"{w}/nsd-copy.zone\"\n\
         \x20   request-xfr: {pip}@{pport} {TSIG_NAME}\n    allow-notify: 127.0.0.1 {TSIG_NAME}\n\
         \x20   provide-xfr: 127.0.0.0/8 {TSIG_NAME}\n",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
        pip = primary.ip(),
        pport = primary.port(),
    );
    let path = work.join("nsd.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new(nsd);
    cmd.arg("-d").arg("-c").arg(&path);
    Daemon::spawn("nsd", cmd, work.join("nsd.log"))
}

fn named_secondary(named: &Path, work: &Path, listen: SocketAddr, primary: SocketAddr) -> Daemon {
    let conf = format!(
        "options {{\n  directory \"{w}\";\n  pid-file \"{w}/named.pid\";\n\
         \x20 session-keyfile \"{w}/session.key\";\n  managed-keys-directory \"{w}\";\n\
         \x20 listen-on port {port} {{ {ip}; }};\n  listen-on-v6 {{ none; }};\n\
         \x20 recursion no;\n  dnssec-validation no;\n  notify no;\n\
         \x20 allow-transfer {{ key \"{TSIG_NAME}\"; }};\n}};\n\
         controls {{ }};\n\
         key \"{TSIG_NAME}\" {{ algorithm hmac-sha256; secret \"{TSIG_SECRET}\"; }};\n\
         zone \"{APEX}\" {{ type secondary; file \"{w}/named-copy.zone\";\n\
         \x20 primaries {{ {pip} port {pport} key \"{TSIG_NAME}\"; }};\n\
         \x20 allow-notify {{ 127.0.0.1; }}; }};\n",
        w = work.display(),
        ip = listen.ip(),
        port = listen.port(),
        pip = primary.ip(),
        pport = primary.port(),
    );
    let path = work.join("named.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new(named);
    cmd.arg("-g").arg("-c").arg(&path);
    Daemon::spawn("named", cmd, work.join("named.log"))
}

#[test]
fn knotd_nsd_and_named_take_true_ixfr_from_our_journal() {
    let peers: Vec<(&str, PathBuf)> = [("knotd", "KNOTD"), ("nsd", "NSD"), ("named", "NAMED")]
        .into_iter()
        .filter_map(|(name, env)| {
            let p = find_program(name, env);
            if p.is_none() {
                println!("secondary: SKIPPED {name} as our secondary: not installed");
            }
            p.map(|p| (name, p))
        })
        .collect();
    if peers.is_empty() {
        return;
    }
    let work = TempDir::new("out-primary");
    let file = work.write("out.test.zone", &version(1));
    let ours = local();
    let addrs: Vec<SocketAddr> = peers.iter().map(|_| local()).collect();
    let notify: Vec<String> = addrs.iter().map(|a| format!("\"{a}\"")).collect();
    let toml = format!(
        "{}[server]\nallow_transfer = [\"127.0.0.0/8\"]\ntransfer_key = \"{TSIG_NAME}\"\n\
         notify = [{}]\n[[zone]]\nname = \"{APEX}\"\nfile = \"{}\"\n",
        tsig_toml(),
        notify.join(", "),
        file.display()
    );
    let server = start_secondary("out-primary-s", ours, &work, &toml);
    let mut daemons: Vec<(&str, SocketAddr, Daemon, TempDir)> = Vec::new();
    for ((name, program), addr) in peers.iter().zip(&addrs) {
        let dir = TempDir::new(&format!("out-{name}"));
        let d = match *name {
            "knotd" => knot_secondary(program, dir.path(), *addr, ours),
            "nsd" => nsd_secondary(program, dir.path(), *addr, ours),
            _ => named_secondary(program, dir.path(), *addr, ours),
        };
        daemons.push((name, *addr, d, dir));
    }
    let logs = |daemons: &mut Vec<(&str, SocketAddr, Daemon, TempDir)>| -> String {
        daemons
            .iter_mut()
            .map(|(n, _, d, _)| format!("--- {n}:\n{}", d.log()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // The first transfer: AXFR.
    for (name, addr, d, _) in &mut daemons {
        d.check_alive();
        wait_serial(*addr, APEX, 1, Duration::from_secs(30), || {
            format!("--- {name}:\n{}\n--- shardns:\n{}", d.log(), server.log())
        });
    }
    // Four new versions, each by a reload: NOTIFY, IXFR from the journal.
    for serial in 2..=5 {
        std::fs::write(&file, version(serial)).unwrap();
        let out = server.control("reload");
        assert!(out.status.success(), "{out:?}");
        for (name, addr, d, _) in &mut daemons {
            d.check_alive();
            let started = Instant::now();
            wait_serial(*addr, APEX, serial, Duration::from_secs(30), || {
                format!("--- {name}:\n{}\n--- shardns:\n{}", d.log(), server.log())
            });
            println!(
                "{name}: serial {serial} in {:.3} s",
                started.elapsed().as_secs_f64()
            );
        }
        let wanted = format!("IXFR incremental from {}", serial - 1);
        let count = server.log().matches(&wanted).count();
        assert!(
            count >= daemons.len(),
            "{count} transfers \"{wanted}\" in:\n{}\n{}",
            server.log(),
            logs(&mut daemons)
        );
    }
    // Each secondary's copy is the primary's, and its own log says it came incrementally.
    for (name, addr, d, _) in &mut daemons {
        let (theirs, mine) = (axfr(*addr, APEX, true), axfr(ours, APEX, true));
        assert!(mine.len() > HOSTS * 2, "{} records from us", mine.len());
        assert!(theirs == mine, "{name}'s copy differs from ours");
        assert_eq!(
            dig(*addr, &["+short", "n5.out.test", "AAAA"]).trim(),
            "2001:db8::5",
            "{name}"
        );
        let log = d.log();
        let said = match *name {
            // "[out.test.] IXFR, incoming, remote ..., finished, ..."
            "knotd" => log.contains("IXFR, incoming") && !log.contains("fallback to AXFR"),
            // NSD does not name the kind: "zone out.test. received update to serial 5 ...
            // of 312 bytes" (the AXFR of serial 1 was 86,255 bytes).
            "nsd" => log
                .lines()
                .filter(|l| l.contains("received update to serial 5") && l.contains(" of "))
                .filter_map(|l| {
                    l.split(" of ")
                        .last()?
                        .split(' ')
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .any(|bytes| bytes < 2000),
            // named 9.18 does not name it either: "Transfer completed: 1 messages, 9
            // records, 312 bytes, ... (serial 5)" (serial 1: 4013 records).
            _ => log
                .lines()
                .filter(|l| l.contains("Transfer completed") && l.contains("(serial 5)"))
                .any(|l| l.contains(" 9 records")),
        };
        assert!(
            said,
            "{name} does not say it took the differences only:\n{log}"
        );
        println!("{name}: its transfer lines:");
        let kind = |l: &&str| {
            let l = l.to_lowercase();
            l.contains("ixfr") || l.contains("received update") || l.contains("transfer")
        };
        for l in log.lines().filter(kind).take(12) {
            println!("  {l}");
        }
    }
    // An IXFR from serial 1: the changes of four versions condensed into one step (the
    // whole zone has 4,000 records more).
    let (out, records) = ixfr_records(ours, &tsig_kdig(), APEX, 1);
    // SOA 5, SOA 1, deleted: moved, last; SOA 5, added: moved, last, n2..n5; SOA 5.
    assert_eq!(records.len(), 4 + 2 + 6, "{out}");
    assert!(records[1].contains(" 1 3600 "), "{out}");
}

/// The journal survives a restart, and one cut short by a crash is found at start: a torn
/// record at its end is dropped with a warning and the versions before it still answer IXFR;
/// a journal that then no longer ends at the zone's serial is started anew (AXFR form).
#[test]
fn the_journal_survives_a_restart_and_a_torn_one_is_detected() {
    let dir = TempDir::new("journal-crash");
    let file = dir.write("out.test.zone", &version(1));
    let journal = dir.path().join("out.test.zone.journal");
    let zone_flag = format!("{APEX}={}", file.display());
    let args = [
        "--workers",
        "1",
        "--zone",
        &zone_flag,
        "--allow-transfer",
        "127.0.0.1",
    ];
    let ixfr_records = |server: &Server| -> usize {
        kdig(server.addr4(), &[APEX, "IXFR=1", "+nocomments"])
            .lines()
            .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
            .count()
    };
    let at = local();
    let mut server = Server::start_at("journal-crash-1", &[at], &args);
    for serial in 2..=3 {
        std::fs::write(&file, version(serial)).unwrap();
        assert!(server.control("reload").status.success());
    }
    assert_eq!(ixfr_records(&server), 4 + 2 + 4, "{}", server.log());
    server.terminate();
    let whole = std::fs::read(&journal).expect("the journal file");

    // A crash in the middle of an append: a record's head and no more.
    let mut torn = whole.clone();
    torn.extend_from_slice(b"SJR1\0\0\x01");
    std::fs::write(&journal, &torn).unwrap();
    let mut server = Server::start_at("journal-crash-2", &[local()], &args);
    server.wait_for_log("is damaged at octet", Duration::from_secs(5));
    server.wait_for_log("2 records kept, the rest dropped", Duration::from_secs(1));
    server.wait_for_log("2 versions, serial 1 to 3", Duration::from_secs(1));
    assert_eq!(std::fs::read(&journal).unwrap(), whole, "cut back");
    assert_eq!(ixfr_records(&server), 10, "{}", server.log());
    server.terminate();

    // The last record cut in its middle: dropped, and the journal (ending at 2 now) no
    // longer reaches the zone's serial 3: started anew, IXFR in AXFR form.
    std::fs::write(&journal, &whole[..whole.len() - 20]).unwrap();
    let mut server = Server::start_at("journal-crash-3", &[local()], &args);
    server.wait_for_log("is damaged at octet", Duration::from_secs(5));
    server.wait_for_log("ends at serial 2, the zone is at 3", Duration::from_secs(1));
    assert!(!journal.exists());
    assert_eq!(
        ixfr_records(&server),
        HOSTS * 2 + 10 + 4 + 1,
        "the whole zone, its SOA twice"
    );
}
