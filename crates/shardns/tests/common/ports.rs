//! Loopback ports for the servers a test starts: free on every address asked for, and never
//! handed out twice by one test process.

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, UdpSocket};
use std::sync::Mutex;

/// A port free for UDP and TCP on both 127.0.0.1 and ::1, never handed out twice by this
/// process.
pub fn free_port() -> u16 {
    static TAKEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    for _ in 0..200 {
        let Ok(probe) = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)) else {
            continue;
        };
        let port = probe.local_addr().unwrap().port();
        let ok = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
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
    for _ in 0..200 {
        let Ok(probe) = UdpSocket::bind((ip, 0)) else {
            continue;
        };
        let port = probe.local_addr().unwrap().port();
        let ok = TcpListener::bind((ip, port)).is_ok();
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
