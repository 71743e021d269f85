//! A slow primary of our own making (issue 26 item 6): it answers the SOA query at once,
//! then sends its AXFR one message every two seconds (progress, but slowly), or trickles a
//! message an octet at a time (no whole message, ever). Its zones wait for it; the zones
//! of other primaries are transferred, served and expired on time all the same, and a
//! transfer that makes no progress is ended and tried again.

use super::*;
use shardns_wire::Transport;
use shardns_zone::xfr::{self, Transfer};
use shardns_zone::{load_zone_text, respond_to_message, ScanOptions, Zone, ZoneSet};
use std::io::Write;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// How the slow primary sends a transfer.
#[derive(Clone, Copy)]
enum Pace {
    /// One whole message, then a pause this long, and so on.
    Drip(Duration),
    /// The first message, then the next one an octet every 200 ms.
    Trickle,
}

fn make_zone(apex: &str, hosts: usize) -> Arc<Zone> {
    let text = zone_text(1, hosts, "");
    let opts = ScanOptions::new(apex.parse().unwrap());
    Arc::new(
        load_zone_text(text.as_bytes(), Path::new("t"), &opts)
            .unwrap()
            .0,
    )
}

/// The primary: its address, how many transfers it is serving now, the most it served at
/// once, and how many it was asked for.
struct SlowPrimary {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    now: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    asked: Arc<AtomicUsize>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl SlowPrimary {
    fn start(zones: Vec<Arc<Zone>>, pace: Pace) -> Self {
        let addr = local();
        let stop = Arc::new(AtomicBool::new(false));
        let (now, peak, asked) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let threads = Arc::new(Mutex::new(Vec::new()));
        let set = Arc::new(ZoneSet::from_shared(zones));
        let udp = UdpSocket::bind(addr).unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let tcp = TcpListener::bind(addr).unwrap();
        tcp.set_nonblocking(true).unwrap();
        let (z, s) = (Arc::clone(&set), Arc::clone(&stop));
        let soa = std::thread::spawn(move || {
            let (mut buf, mut out) = (vec![0u8; 4096], vec![0u8; 4096]);
            while !s.load(SeqCst) {
                let Ok((n, from)) = udp.recv_from(&mut buf) else {
                    continue;
                };
                if let Some(w) = respond_to_message(&z, &buf[..n], Transport::Udp, &mut out) {
                    let _ = udp.send_to(&out[..w.len], from);
                }
            }
        });
        let (z, s) = (Arc::clone(&set), Arc::clone(&stop));
        let (n, p, a, t) = (
            Arc::clone(&now),
            Arc::clone(&peak),
            Arc::clone(&asked),
            Arc::clone(&threads),
        );
        let accept = std::thread::spawn(move || {
            while !s.load(SeqCst) {
                let Ok((conn, _)) = tcp.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                a.fetch_add(1, SeqCst);
                let at_once = n.fetch_add(1, SeqCst) + 1;
                p.fetch_max(at_once, SeqCst);
                let (z, s, n) = (Arc::clone(&z), Arc::clone(&s), Arc::clone(&n));
                let serving = std::thread::spawn(move || {
                    let mut open = Open(Some(&n));
                    let _ = serve(conn, &z, pace, &s, &mut open);
                });
                t.lock().unwrap().push(serving);
            }
        });
        threads.lock().unwrap().extend([soa, accept]);
        Self {
            addr,
            stop,
            now,
            peak,
            asked,
            threads,
        }
    }
}

impl Drop for SlowPrimary {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        // The accepting thread pushes no more once it sees `stop`; join what is there,
        // then what it may have pushed meanwhile.
        for _ in 0..2 {
            let all: Vec<JoinHandle<()>> = self.threads.lock().unwrap().drain(..).collect();
            for t in all {
                let _ = t.join();
            }
        }
    }
}

/// A transfer counted as running until dropped or [`Open::end`]ed.
struct Open<'a>(Option<&'a AtomicUsize>);

impl Open<'_> {
    fn end(&mut self) {
        if let Some(n) = self.0.take() {
            n.fetch_sub(1, SeqCst);
        }
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.end();
    }
}

/// Pauses `d` in small steps; false if told to stop.
fn pause(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Answers one AXFR at `pace`; at most two minutes, whatever happens.
fn serve(
    mut conn: TcpStream,
    zones: &ZoneSet,
    pace: Pace,
    stop: &AtomicBool,
    open: &mut Open<'_>,
) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let query = read_frame(&mut conn)?;
    let Ok(q) = shardns_wire::Query::parse(&query) else {
        return Ok(());
    };
    let apex = q.qname().to_name();
    let Some(zone) = zones.zones().find(|z| z.apex().to_name() == apex) else {
        return Ok(());
    };
    let xfr::Read::Transfer(req) = xfr::request(&q) else {
        return Ok(());
    };
    let mut t = Transfer::new(Arc::clone(zone), req);
    let mut buf = vec![0u8; 1024];
    let mut messages = Vec::new();
    while let Some(n) = t.next_message(&mut buf) {
        messages.push([&(n as u16).to_be_bytes()[..], &buf[..n]].concat());
    }
    let end = Instant::now() + Duration::from_secs(120);
    let last = messages.len().saturating_sub(1);
    let mut first = true;
    for (i, framed) in messages.into_iter().enumerate() {
        if Instant::now() > end {
            break;
        }
        match pace {
            Pace::Drip(gap) => {
                if !first && !pause(gap, stop) {
                    break;
                }
                // No longer counted once the last message goes: the secondary's next
                // transfer can only start after it has read it.
                if i == last {
                    open.end();
                }
                conn.write_all(&framed)?;
            }
            Pace::Trickle if first => conn.write_all(&framed)?,
            Pace::Trickle => {
                for b in framed {
                    if Instant::now() > end || !pause(Duration::from_millis(200), stop) {
                        return Ok(());
                    }
                    conn.write_all(&[b])?;
                }
            }
        }
        first = false;
    }
    Ok(())
}

/// A secondary's config: `zones` (apex, primary) in this order, then `extra`.
fn config(zones: &[(&str, SocketAddr)], extra: &str) -> String {
    let mut toml = String::new();
    for (apex, primary) in zones {
        toml.push_str(&format!(
            "[[zone]]\nname = \"{apex}\"\nprimary = [\"{primary}\"]\n"
        ));
    }
    toml.push_str(extra);
    toml
}

/// A shardns primary of `apex` from `text`, on a new address.
fn healthy_primary(tag: &str, dir: &TempDir, apex: &str, text: &str) -> Server {
    let file = dir.write(&format!("{tag}.zone"), text);
    let zone = format!("{apex}={}", file.display());
    let args = [
        "--workers",
        "1",
        "--zone",
        &zone,
        "--allow-transfer",
        "127.0.0.1",
    ];
    Server::start_at(tag, &[local()], &args)
}

/// Four zones from a primary that sends a message every 2 s (each transfer ~12 s), listed
/// first, and one zone from a healthy primary: that one is served at once, and the slow
/// primary is asked for two transfers at a time (`transfers_in_per_primary`), no more.
/// With one transfer at a time the healthy zone waited for the slow ones (48 s).
#[test]
fn a_slow_primary_holds_back_only_its_own_zones() {
    let slow_zones: Vec<String> = (0..4).map(|i| format!("slow{i}.test.")).collect();
    let slow = SlowPrimary::start(
        slow_zones.iter().map(|a| make_zone(a, 150)).collect(),
        Pace::Drip(Duration::from_secs(2)),
    );
    let dir = TempDir::new("slow-primary");
    let healthy = healthy_primary("slow-healthy", &dir, "healthy.test.", &zone_text(7, 10, ""));
    let mut zones: Vec<(&str, SocketAddr)> =
        slow_zones.iter().map(|a| (a.as_str(), slow.addr)).collect();
    zones.push(("healthy.test.", healthy.addr4()));
    let s = local();
    let started = Instant::now();
    let secondary = start_secondary("slow-s", s, &dir, &config(&zones, ""));
    let end = started + Duration::from_secs(30);
    while dig(s, &["+short", "mail.healthy.test", "A"]).trim() != "192.0.2.25" {
        assert!(
            Instant::now() < end,
            "healthy.test. not served after 30 s\n{}",
            secondary.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = started.elapsed();
    println!(
        "secondary: the healthy zone served {:.3} s after start, 4 slow transfers running or waiting",
        took.as_secs_f64()
    );
    assert_eq!(rcode_of(s, "mail.healthy.test"), "NoError");
    assert!(
        took < Duration::from_secs(8),
        "healthy.test. waited {took:?} for the slow primary\n{}",
        secondary.log()
    );
    // The slow zones come, two at a time.
    wait_serial(s, "slow0.test.", 1, Duration::from_secs(40), || {
        secondary.log()
    });
    wait_serial(s, "slow1.test.", 1, Duration::from_secs(20), || {
        secondary.log()
    });
    assert_eq!(slow.peak.load(SeqCst), 2, "{}", secondary.log());
    assert!(slow.asked.load(SeqCst) >= 2);
}

/// A zone whose primary is gone expires EXPIRE (5 s) after its last refresh, SERVFAIL,
/// while a slow transfer of another zone (~30 s) is running. With one thread doing
/// transfers one at a time, EXPIRE was not looked at until that transfer ended.
#[test]
fn a_zone_expires_on_time_while_a_slow_transfer_runs() {
    let slow = SlowPrimary::start(
        vec![make_zone("crawl.test.", 150)],
        Pace::Drip(Duration::from_secs(2)),
    );
    let dir = TempDir::new("slow-expire");
    let text = "$TTL 60\n@ SOA ns hostmaster 3 3600 1 5 60\n@ NS ns\nns A 192.0.2.1\n\
                www A 192.0.2.3\n";
    let mut primary = healthy_primary("slow-expire-p", &dir, "expire.test.", text);
    let zones = [
        ("expire.test.", primary.addr4()),
        ("crawl.test.", slow.addr),
    ];
    let s = local();
    let secondary = start_secondary("slow-expire-s", s, &dir, &config(&zones, ""));
    wait_serial(s, "expire.test.", 3, Duration::from_secs(20), || {
        secondary.log()
    });
    let served = Instant::now();
    primary.terminate();
    // The slow transfer has started (its first message) and goes on.
    let end = Instant::now() + Duration::from_secs(10);
    while slow.now.load(SeqCst) == 0 {
        assert!(Instant::now() < end, "no transfer from the slow primary");
        std::thread::sleep(Duration::from_millis(20));
    }
    let end = served + Duration::from_secs(20);
    while rcode_of(s, "www.expire.test") != "ServFail" {
        assert!(
            Instant::now() < end,
            "expire.test. not expired\n{}",
            secondary.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = served.elapsed();
    println!(
        "secondary: expired {:.3} s after its last refresh (EXPIRE 5 s), a slow transfer running",
        took.as_secs_f64()
    );
    assert!(
        took < Duration::from_secs(8),
        "EXPIRE 5 s, SERVFAIL only after {took:?}\n{}",
        secondary.log()
    );
    assert_eq!(slow.now.load(SeqCst), 1, "the slow transfer still runs");
    assert!(secondary.log().contains("zone expire.test. expired"));
}

/// A primary that sends one message, then the next an octet every 200 ms (so no single
/// read ever waits long): with `transfer_in_idle_ms = 1500` the transfer is ended as making
/// no progress, logged, and tried again (the back-off of a zone never transferred, 5 s).
#[test]
fn a_transfer_that_makes_no_progress_is_ended_and_retried() {
    let stall = SlowPrimary::start(vec![make_zone("stall.test.", 60)], Pace::Trickle);
    let dir = TempDir::new("slow-stall");
    let zones = [("stall.test.", stall.addr)];
    let s = local();
    let started = Instant::now();
    let mut secondary = start_secondary(
        "slow-stall-s",
        s,
        &dir,
        &config(&zones, "[limits]\ntransfer_in_idle_ms = 1500\n"),
    );
    secondary.wait_for_log(
        "transfer from {} failed, still nothing to serve: no progress"
            .replace("{}", &stall.addr.to_string())
            .as_str(),
        Duration::from_secs(10),
    );
    let ended = started.elapsed();
    println!(
        "secondary: a trickling transfer ended {:.3} s after start (idle limit 1.5 s)",
        ended.as_secs_f64()
    );
    assert!(ended < Duration::from_secs(6), "{ended:?}");
    let end = Instant::now() + Duration::from_secs(20);
    while stall.asked.load(SeqCst) < 2 {
        assert!(Instant::now() < end, "not retried\n{}", secondary.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(rcode_of(s, "www.stall.test"), "ServFail");
}
