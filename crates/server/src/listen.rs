//! listen -- the sockets every worker serves: one SO_REUSEPORT UDP socket and one TCP
//! listener per listen address per worker, bound before any worker starts so a busy
//! address is reported at once, with the receive buffer and options DNS service needs.

use crate::worker::WorkerSockets;
use crate::{io_error, Error};
use shardns_config::Config;
use shardns_sys as sys;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use tracing::warn;

/// Binds every worker's sockets. Binding happens here, before any worker starts, so a
/// busy address is reported at once; each socket then belongs to one worker. A default
/// IPv6 address the host does not have is skipped with a warning.
pub(crate) fn bind_all(config: &Config, workers: usize) -> Result<Vec<WorkerSockets>, Error> {
    let defaults = config.server.listen.is_empty();
    let mut per_worker: Vec<WorkerSockets> =
        (0..workers).map(|_| WorkerSockets::default()).collect();
    let mut bound_any = false;
    for mut addr in config.listen_addrs() {
        for (i, socks) in per_worker.iter_mut().enumerate() {
            let first = if i == 0 {
                ensure_unclaimed(addr, Type::DGRAM, Protocol::UDP)
            } else {
                Ok(())
            };
            let udp = match first.and_then(|()| bind_udp(addr, config.limits.udp_receive_buffer)) {
                Ok(s) => s,
                Err(e)
                    if i == 0
                        && defaults
                        && addr.is_ipv6()
                        && matches!(
                            e.raw_os_error(),
                            Some(libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT)
                        ) =>
                {
                    warn!("skipping {addr}: {e}");
                    break;
                }
                Err(source) => {
                    return Err(Error::Socket {
                        what: format!("UDP {addr}"),
                        source,
                    })
                }
            };
            if addr.port() == 0 {
                // Every worker (and TCP) must share the port the kernel picked.
                addr = udp
                    .local_addr()
                    .map_err(io_error("reading a socket address"))?;
            }
            let tcp = (if i == 0 {
                ensure_unclaimed(addr, Type::STREAM, Protocol::TCP)
            } else {
                Ok(())
            })
            .and_then(|()| bind_tcp(addr))
            .map_err(|source| Error::Socket {
                what: format!("TCP {addr}"),
                source,
            })?;
            socks.udp.push(udp);
            socks.tcp.push(tcp);
            bound_any = true;
        }
    }
    for mut addr in config.server.tls_listen.iter().copied() {
        ensure_unclaimed(addr, Type::STREAM, Protocol::TCP).map_err(|source| Error::Socket {
            what: format!("TLS {addr}"),
            source,
        })?;
        for socks in per_worker.iter_mut() {
            let tls = bind_tcp(addr).map_err(|source| Error::Socket {
                what: format!("TLS {addr}"),
                source,
            })?;
            if addr.port() == 0 {
                // Every worker shares the port the kernel picked.
                addr = tls
                    .local_addr()
                    .map_err(io_error("reading a socket address"))?;
            }
            socks.tls.push(tls);
        }
    }
    for mut addr in config.server.https_listen.iter().copied() {
        for socks in per_worker.iter_mut() {
            let https = bind_tcp(addr).map_err(|source| Error::Socket {
                what: format!("HTTPS {addr}"),
                source,
            })?;
            if addr.port() == 0 {
                // Every worker shares the port the kernel picked.
                addr = https
                    .local_addr()
                    .map_err(io_error("reading a socket address"))?;
            }
            socks.https.push(https);
        }
    }
    for mut addr in config.server.quic_listen.iter().copied() {
        ensure_unclaimed(addr, Type::DGRAM, Protocol::UDP).map_err(|source| Error::Socket {
            what: format!("QUIC {addr}"),
            source,
        })?;
        for socks in per_worker.iter_mut() {
            let quic = bind_udp(addr, config.limits.udp_receive_buffer).map_err(|source| {
                Error::Socket {
                    what: format!("QUIC {addr}"),
                    source,
                }
            })?;
            if addr.port() == 0 {
                // Every worker shares the port the kernel picked.
                addr = quic
                    .local_addr()
                    .map_err(io_error("reading a socket address"))?;
            }
            socks.quic.push(quic);
        }
    }
    if !bound_any {
        return Err(Error::Socket {
            what: "listen addresses".into(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "none could be bound"),
        });
    }
    Ok(per_worker)
}

/// Fails with EADDRINUSE when another socket already holds `addr`. Our own sockets set
/// SO_REUSEPORT, and the kernel lets any process of the same user join such a group: a
/// second shardns started by mistake on the same address would then take half the
/// queries without a word. A socket without SO_REUSEPORT cannot join, so binding one
/// first (and closing it) tells whether the address is free. Port 0 is always free.
fn ensure_unclaimed(addr: SocketAddr, ty: Type, protocol: Protocol) -> io::Result<()> {
    if addr.port() == 0 {
        return Ok(());
    }
    let s = Socket::new(Domain::for_address(addr), ty, Some(protocol))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    if ty == Type::STREAM {
        // As our listeners: connections of an earlier run in TIME_WAIT do not hold the port.
        s.set_reuse_address(true)?;
    }
    s.bind(&addr.into()).map_err(|e| {
        if e.raw_os_error() == Some(libc::EADDRINUSE) {
            io::Error::new(
                io::ErrorKind::AddrInUse,
                "address already in use (another server is listening there)",
            )
        } else {
            e
        }
    })
}

fn new_socket(addr: SocketAddr, ty: Type, protocol: Protocol) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), ty, Some(protocol))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

fn bind_udp(addr: SocketAddr, receive_buffer: usize) -> io::Result<UdpSocket> {
    let s = new_socket(addr, Type::DGRAM, Protocol::UDP)?;
    if receive_buffer > 0 {
        set_receive_buffer(&s, receive_buffer)?;
    }
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Sets SO_RCVBUF, past `net.core.rmem_max` when the process may (SO_RCVBUFFORCE needs
/// CAP_NET_ADMIN), as BIND and Unbound do: the buffer is what absorbs a burst or a pause of
/// the worker (a hypervisor stealing its core), and the sysctl's common default holds only
/// ~250 small queries. Unprivileged, the kernel caps it at the sysctl; said once in the log.
fn set_receive_buffer(s: &Socket, bytes: usize) -> io::Result<()> {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let forced = sys::force_receive_buffer(s, bytes);
    if forced {
        return Ok(());
    }
    s.set_recv_buffer_size(bytes)?;
    // The kernel reports twice the size it keeps for data (its bookkeeping overhead).
    let got = s.recv_buffer_size()? / 2;
    if got < bytes && !WARNED.swap(true, Relaxed) {
        warn!(
            "UDP receive buffer {got} bytes, not the {bytes} asked for \
             (limits.udp_receive_buffer): raise net.core.rmem_max or run with CAP_NET_ADMIN"
        );
    }
    Ok(())
}

fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = new_socket(addr, Type::STREAM, Protocol::TCP)?;
    s.set_reuse_address(true)?;
    // Accepted connections inherit this: responses leave without waiting for ACKs.
    s.set_nodelay(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rmem_max() -> usize {
        std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    #[test]
    fn receive_buffer_goes_past_rmem_max_when_permitted() {
        let want = rmem_max().max(1 << 20) * 2;
        let udp = bind_udp("127.0.0.1:0".parse().unwrap(), want).unwrap();
        let got = Socket::from(udp).recv_buffer_size().unwrap() / 2;
        // SO_RCVBUFFORCE works with CAP_NET_ADMIN (root in CI); without it the kernel
        // caps the size at the sysctl, and the server still binds.
        if sys::force_receive_buffer(&UdpSocket::bind("127.0.0.1:0").unwrap(), 4096) {
            assert_eq!(got, want);
        } else {
            assert_eq!(got, rmem_max());
        }
    }

    #[test]
    fn an_address_held_by_another_reuseport_group_is_claimed() {
        // A socket of "another server", with SO_REUSEPORT as ours have.
        let other = bind_udp("127.0.0.1:0".parse().unwrap(), 0).unwrap();
        let addr = other.local_addr().unwrap();
        // The kernel would let us join it...
        assert!(bind_udp(addr, 0).is_ok());
        // ...so the probe must refuse the address.
        let err = ensure_unclaimed(addr, Type::DGRAM, Protocol::UDP).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
        let tcp = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
        let err = ensure_unclaimed(tcp.local_addr().unwrap(), Type::STREAM, Protocol::TCP);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::AddrInUse);
        drop((other, tcp));
        assert!(ensure_unclaimed(addr, Type::DGRAM, Protocol::UDP).is_ok());
    }
}
