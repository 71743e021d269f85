//! Loopback ports for the servers a test starts: free on every address asked for, never
//! handed out twice by one test process, and outside the kernel's ephemeral range, so that no
//! outgoing connection (of this test or another running beside it) can take a server's port
//! while a test restarts that server on it.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, UdpSocket};
use std::sync::Mutex;

/// The ports tried: just below the kernel's ephemeral range (Linux's default starts it at
/// 32768), or above it if it starts too low to leave room.
fn range() -> (u16, u16) {
    let (lo, hi) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|v| v.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32768, 60999));
    if lo >= 12_000 {
        (10_000, (lo - 1) as u16)
    } else {
        ((hi + 1).min(65_000) as u16, 65_535)
    }
}

/// A pseudo-random port of `range()` (std's per-process random hash keys, a counter mixed in).
fn candidate() -> u16 {
    static N: Mutex<u64> = Mutex::new(0);
    let n = {
        let mut n = N.lock().unwrap();
        *n += 1;
        *n
    };
    let (a, b) = range();
    let r = RandomState::new().hash_one(n);
    a + (r % u64::from(b - a + 1)) as u16
}

/// A port free for UDP and TCP on both 127.0.0.1 and ::1, never handed out twice by this
/// process.
pub fn free_port() -> u16 {
    static TAKEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    for _ in 0..1000 {
        let port = candidate();
        let ok = UdpSocket::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
            && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
            && UdpSocket::bind((Ipv6Addr::LOCALHOST, port)).is_ok()
            && TcpListener::bind((Ipv6Addr::LOCALHOST, port)).is_ok();
        let mut taken = TAKEN.lock().unwrap();
        if ok && taken.get_or_insert_with(HashSet::new).insert(port) {
            return port;
        }
    }
    panic!("no free port found");
}

/// A port free for UDP and TCP on `ip`, never handed out twice by this process.
pub fn free_port_on(ip: Ipv4Addr) -> u16 {
    static TAKEN: Mutex<Option<HashSet<(Ipv4Addr, u16)>>> = Mutex::new(None);
    for _ in 0..1000 {
        let port = candidate();
        let ok = UdpSocket::bind((ip, port)).is_ok() && TcpListener::bind((ip, port)).is_ok();
        if ok
            && TAKEN
                .lock()
                .unwrap()
                .get_or_insert_with(HashSet::new)
                .insert((ip, port))
        {
            return port;
        }
    }
    panic!("no free port on {ip}");
}
