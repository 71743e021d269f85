//! sys::socket -- socket calls std lacks: accept4 (nonblocking, close-on-exec in one call),
//! SO_RCVBUFFORCE, kernel socket addresses read back into std's form, and the user of a
//! Unix socket's peer (SO_PEERCRED).

use super::check;
use std::io;
use std::mem;
use std::net::{
    Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, TcpListener, TcpStream,
};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;

/// Accepts one connection, already nonblocking and close-on-exec (one system call).
pub fn accept_nonblocking(listener: &TcpListener) -> io::Result<(TcpStream, Option<SocketAddr>)> {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `storage` and `len` are valid for writes and `len` holds the storage's size,
    // so the kernel writes at most that many bytes.
    let fd = check(unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            ptr::addr_of_mut!(storage).cast(),
            &mut len,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` is a connected socket the kernel just created for us; we take ownership.
    let stream = TcpStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
    Ok((stream, socket_addr(&storage, len)))
}

/// Converts a kernel socket address to std's form (`None` for other families).
pub(crate) fn socket_addr(
    storage: &libc::sockaddr_storage,
    len: libc::socklen_t,
) -> Option<SocketAddr> {
    match storage.ss_family as libc::c_int {
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, the kernel wrote at
            // least that many bytes, and sockaddr_storage is aligned for every address type.
            let a =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Sets SO_RCVBUFFORCE (SO_RCVBUF past `net.core.rmem_max`); false when not permitted.
pub fn force_receive_buffer(socket: &impl AsRawFd, bytes: usize) -> bool {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: a valid socket fd, and a pointer to a c_int that outlives the call with its
    // exact size; the kernel only reads it.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// The user ID of the process at the other end of a connected Unix socket (SO_PEERCRED:
/// the process that called `listen` on it), as the kernel recorded it.
pub fn peer_uid(socket: &impl AsRawFd) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes, and `len` holds `cred`'s exact size, so
    // the kernel writes at most that much; a bad fd is an error, not undefined behaviour.
    check(unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            ptr::addr_of_mut!(cred).cast(),
            &mut len,
        )
    })?;
    if len as usize != size_of::<libc::ucred>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "SO_PEERCRED returned a short answer",
        ));
    }
    Ok(cred.uid)
}
