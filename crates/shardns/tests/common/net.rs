//! Raw DNS exchanges over loopback: UDP and TCP clients (also from a chosen 127.0.0.x
//! address), length-prefixed TCP framing, and telling whether the server closed a connection.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::FromRawFd;
use std::time::Duration;

/// A UDP socket on `ip`, connected to `server`, with a receive timeout.
pub fn udp_from(ip: Ipv4Addr, server: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind((ip, 0)).unwrap();
    s.connect(server).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s
}

/// A TCP connection to `server` from address `ip` (std cannot bind before connecting),
/// with a read timeout.
pub fn tcp_from(ip: Ipv4Addr, server: SocketAddr) -> TcpStream {
    let SocketAddr::V4(server) = server else {
        panic!("IPv4 only")
    };
    let sin = |a: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(a).to_be(),
        },
        sin_zero: [0; 8],
    };
    let (local, remote) = (sin(ip, 0), sin(*server.ip(), server.port()));
    let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor we create; each address is a valid
    // sockaddr_in of the length passed; the descriptor is owned by the TcpStream at once,
    // so it is closed on every path.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let rc = libc::bind(fd, (&raw const local).cast(), len);
        assert_eq!(rc, 0, "bind {ip}: {}", std::io::Error::last_os_error());
        let rc = libc::connect(fd, (&raw const remote).cast(), len);
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
    }
}

/// A connected UDP client socket with a receive timeout.
pub fn udp_client(server: SocketAddr) -> UdpSocket {
    let local: SocketAddr = if server.is_ipv6() {
        "[::1]:0".parse().unwrap()
    } else {
        "127.0.0.1:0".parse().unwrap()
    };
    let s = UdpSocket::bind(local).unwrap();
    s.connect(server).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s
}

/// One UDP exchange; `None` on timeout.
pub fn udp_exchange(sock: &UdpSocket, msg: &[u8]) -> Option<Vec<u8>> {
    let id = &msg[..2];
    sock.send(msg).unwrap();
    let mut buf = vec![0u8; 65535];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) if n >= 2 && &buf[..2] == id => return Some(buf[..n].to_vec()),
            Ok(_) => continue, // a late answer to an earlier query
            Err(_) => return None,
        }
    }
}

/// Sends `msgs` framed in one write on a new TCP connection and reads as many responses.
pub fn tcp_exchange(server: SocketAddr, msgs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(3)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp_exchange_on(&mut s, msgs)
}

/// As [`tcp_exchange`], on an open connection.
pub fn tcp_exchange_on(s: &mut TcpStream, msgs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    s.write_all(&framed(msgs)).unwrap();
    (0..msgs.len())
        .map(|_| read_frame(s).expect("a TCP response"))
        .collect()
}

/// `m` with its 2-octet length prefix, as TCP carries it (RFC 1035 §4.2.2).
pub fn frame(m: &[u8]) -> Vec<u8> {
    let mut f = (m.len() as u16).to_be_bytes().to_vec();
    f.extend_from_slice(m);
    f
}

/// `msgs` framed ([`frame`]) back to back.
pub fn framed(msgs: &[Vec<u8>]) -> Vec<u8> {
    msgs.iter().flat_map(|m| frame(m)).collect()
}

/// Reads one length-prefixed message.
pub fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len)?;
    let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut msg)?;
    Ok(msg)
}

/// True if the server closed `s` (EOF or reset) within `limit`, sending nothing first.
pub fn closed_by_server(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}
