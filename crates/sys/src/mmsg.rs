//! sys::mmsg -- UDP in batches: recvmmsg/sendmmsg over preallocated buffers, for the
//! answers to a received batch ([`UdpBatch`]) and for datagrams that leave later, grouped
//! by socket ([`SendBatch`]).

use super::check;
use super::socket::socket_addr;
use std::io;
use std::mem;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::ptr;

/// Largest query read over UDP; a longer datagram arrives cut and is counted as malformed.
pub(crate) const UDP_QUERY_MAX: usize = 4096;
/// Room for one UDP response (`shardns_zone::respond` wants at least 4096 for UDP).
pub(crate) const UDP_RESPONSE_MAX: usize = 4096;

/// A batch's peer addresses, iovecs and message headers.
type BatchArrays = (
    Box<[libc::sockaddr_storage]>,
    Box<[libc::iovec]>,
    Box<[libc::mmsghdr]>,
);

/// `n` zeroed peer addresses, empty iovecs and zeroed message headers, for a batch.
fn batch_arrays(n: usize) -> BatchArrays {
    let empty_iov = libc::iovec {
        iov_base: ptr::null_mut(),
        iov_len: 0,
    };
    // SAFETY: sockaddr_storage and mmsghdr are plain old data (integers and raw
    // pointers); all zeroes is a valid value for each.
    let (peer, msg) = unsafe {
        (
            mem::zeroed::<libc::sockaddr_storage>(),
            mem::zeroed::<libc::mmsghdr>(),
        )
    };
    (
        vec![peer; n].into_boxed_slice(),
        vec![empty_iov; n].into_boxed_slice(),
        vec![msg; n].into_boxed_slice(),
    )
}

/// Points message header `h` at one peer address (of `namelen` bytes) and one iovec.
fn point_header(
    h: &mut libc::mmsghdr,
    peer: *mut libc::sockaddr_storage,
    namelen: libc::socklen_t,
    iov: *mut libc::iovec,
) {
    h.msg_len = 0;
    h.msg_hdr.msg_name = peer.cast();
    h.msg_hdr.msg_namelen = namelen;
    h.msg_hdr.msg_iov = iov;
    h.msg_hdr.msg_iovlen = 1;
    h.msg_hdr.msg_control = ptr::null_mut();
    h.msg_hdr.msg_controllen = 0;
    h.msg_hdr.msg_flags = 0;
}

/// Preallocated buffers and message headers for one worker's recvmmsg/sendmmsg batches.
///
/// Holds raw pointers into its own buffers while a call runs, so it is neither `Send` nor
/// `Sync`: each worker builds its own on its own thread.
pub struct UdpBatch {
    cap: usize,
    queries: Box<[u8]>,
    responses: Box<[u8]>,
    peers: Box<[libc::sockaddr_storage]>,
    recv_iov: Box<[libc::iovec]>,
    recv_msgs: Box<[libc::mmsghdr]>,
    send_iov: Box<[libc::iovec]>,
    send_msgs: Box<[libc::mmsghdr]>,
    /// For each queued response: (index of its query, length).
    queued: Box<[(u32, u32)]>,
    queued_len: usize,
    received: usize,
}

impl UdpBatch {
    /// Buffers for `cap` datagrams each way (at least 1).
    pub fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        let (peers, recv_iov, recv_msgs) = batch_arrays(cap);
        let (_, send_iov, send_msgs) = batch_arrays(cap);
        Self {
            cap,
            queries: vec![0; cap * UDP_QUERY_MAX].into_boxed_slice(),
            responses: vec![0; cap * UDP_RESPONSE_MAX].into_boxed_slice(),
            peers,
            recv_iov,
            recv_msgs,
            send_iov,
            send_msgs,
            queued: vec![(0, 0); cap].into_boxed_slice(),
            queued_len: 0,
            received: 0,
        }
    }

    /// How many datagrams one call can take.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Receives up to `capacity()` datagrams without blocking (one recvmmsg). Forgets
    /// queued responses. `WouldBlock` when nothing is waiting.
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.received = 0;
        self.queued_len = 0;
        let base = self.queries.as_mut_ptr();
        for i in 0..self.cap {
            self.recv_iov[i] = libc::iovec {
                iov_base: base.wrapping_add(i * UDP_QUERY_MAX).cast(),
                iov_len: UDP_QUERY_MAX,
            };
            point_header(
                &mut self.recv_msgs[i],
                ptr::addr_of_mut!(self.peers[i]),
                size_of::<libc::sockaddr_storage>() as libc::socklen_t,
                ptr::addr_of_mut!(self.recv_iov[i]),
            );
        }
        // SAFETY: each of the `cap` headers points at its own live iovec, its own
        // UDP_QUERY_MAX-byte slot of `queries` and its own sockaddr_storage, with lengths that
        // match; all of them stay borrowed (through `&mut self`) for the whole call.
        let n = check(unsafe {
            libc::recvmmsg(
                fd,
                self.recv_msgs.as_mut_ptr(),
                self.cap as libc::c_uint,
                libc::MSG_DONTWAIT,
                ptr::null_mut(),
            )
        })?;
        self.received = n as usize;
        Ok(self.received)
    }

    /// Datagram `i` of the last `recv` and the buffer for response slot `slot`; the query
    /// is `None` if the datagram was longer than `UDP_QUERY_MAX`.
    pub fn query_and_response(&mut self, i: usize, slot: usize) -> (Option<&[u8]>, &mut [u8]) {
        assert!(i < self.received && slot < self.cap);
        let h = &self.recv_msgs[i];
        let query = if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
            None
        } else {
            let len = (h.msg_len as usize).min(UDP_QUERY_MAX);
            Some(&self.queries[i * UDP_QUERY_MAX..i * UDP_QUERY_MAX + len])
        };
        let out = &mut self.responses[slot * UDP_RESPONSE_MAX..(slot + 1) * UDP_RESPONSE_MAX];
        (query, out)
    }

    /// Datagram `i` of the last `recv`, or `None` if it was longer than `UDP_QUERY_MAX` (or
    /// `i` is past the batch).
    pub fn query(&self, i: usize) -> Option<&[u8]> {
        let h = self.recv_msgs[..self.received].get(i)?;
        if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
            return None;
        }
        let len = (h.msg_len as usize).min(UDP_QUERY_MAX);
        Some(&self.queries[i * UDP_QUERY_MAX..i * UDP_QUERY_MAX + len])
    }

    /// True if datagram `i` of the last `recv` has an additional section (ARCOUNT not
    /// zero: an OPT record, which may carry a cookie).
    pub fn has_additional(&self, i: usize) -> bool {
        let len = self.recv_msgs.get(i).map_or(0, |h| h.msg_len as usize);
        let q = &self.queries[i * UDP_QUERY_MAX..];
        len >= 12 && (q[10] | q[11]) != 0
    }

    /// The sender of datagram `i` of the last `recv`.
    pub fn peer(&self, i: usize) -> Option<SocketAddr> {
        let len = self.recv_msgs.get(i)?.msg_hdr.msg_namelen;
        socket_addr(&self.peers[i], len)
    }

    /// Queues the response in the next slot (the one `query_and_response` was given) for the
    /// sender of datagram `i`.
    pub fn queue(&mut self, i: usize, len: usize) {
        assert!(i < self.received && self.queued_len < self.cap && len <= UDP_RESPONSE_MAX);
        self.queued[self.queued_len] = (i as u32, len as u32);
        self.queued_len += 1;
    }

    /// Responses queued since the last `recv`.
    pub fn queued(&self) -> usize {
        self.queued_len
    }

    /// Sends queued responses `from..` (one sendmmsg); returns how many the kernel took.
    pub fn send(&mut self, fd: RawFd, from: usize) -> io::Result<usize> {
        let count = self.queued_len.saturating_sub(from);
        if count == 0 {
            return Ok(0);
        }
        let base = self.responses.as_mut_ptr();
        for k in 0..count {
            let slot = from + k;
            let (i, len) = self.queued[slot];
            let i = i as usize;
            self.send_iov[k] = libc::iovec {
                iov_base: base.wrapping_add(slot * UDP_RESPONSE_MAX).cast(),
                iov_len: len as usize,
            };
            let namelen = self.recv_msgs[i].msg_hdr.msg_namelen;
            point_header(
                &mut self.send_msgs[k],
                ptr::addr_of_mut!(self.peers[i]),
                namelen,
                ptr::addr_of_mut!(self.send_iov[k]),
            );
        }
        // SAFETY: the first `count` headers each point at a live iovec covering `len` bytes
        // inside that slot's UDP_RESPONSE_MAX-byte region of `responses`, and at the peer
        // address recvmmsg filled in with its length; everything stays borrowed for the call.
        let n = check(unsafe {
            libc::sendmmsg(
                fd,
                self.send_msgs.as_mut_ptr(),
                count as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        })?;
        Ok(n as usize)
    }
}

/// What one [`SendBatch::flush`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    /// sendmmsg calls made.
    pub calls: u64,
    /// Datagrams the kernel took.
    pub sent: u64,
    /// Datagrams given up (socket buffer full, unknown socket, send error).
    pub dropped: u64,
}

/// Datagrams queued to go out later with one sendmmsg per socket: each has its own
/// destination and the index (in the caller's list) of the socket it leaves from. For
/// responses that are not answers to the batch just received, such as the resolver's
/// finished resolutions.
///
/// Preallocated like [`UdpBatch`], and for the same reason neither `Send` nor `Sync`.
pub struct SendBatch {
    slot_size: usize,
    data: Box<[u8]>,
    peers: Box<[libc::sockaddr_storage]>,
    /// For each queued datagram: (socket index, length, peer address length). The socket
    /// index becomes `SENT` once a flush has handed the datagram to the kernel.
    queued: Box<[(u32, u32, libc::socklen_t)]>,
    len: usize,
    iov: Box<[libc::iovec]>,
    msgs: Box<[libc::mmsghdr]>,
}

impl SendBatch {
    const SENT: u32 = u32::MAX;

    /// Room for `cap` datagrams (at least 1) of up to `slot_size` bytes each.
    pub fn new(cap: usize, slot_size: usize) -> Self {
        let cap = cap.max(1);
        let (peers, iov, msgs) = batch_arrays(cap);
        Self {
            slot_size,
            data: vec![0; cap * slot_size].into_boxed_slice(),
            peers,
            queued: vec![(0, 0, 0); cap].into_boxed_slice(),
            len: 0,
            iov,
            msgs,
        }
    }

    /// Datagrams queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no datagram is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether no datagram more fits before a flush.
    pub fn is_full(&self) -> bool {
        self.len == self.queued.len()
    }

    /// Copies `datagram` into the batch, to go to `peer` from socket `socket`; false (and
    /// nothing queued) if the batch is full or the datagram longer than a slot.
    pub fn push(&mut self, socket: usize, peer: SocketAddr, datagram: &[u8]) -> bool {
        let (Ok(socket), Ok(len)) = (u32::try_from(socket), u32::try_from(datagram.len())) else {
            return false;
        };
        if self.is_full() || datagram.len() > self.slot_size || socket == Self::SENT {
            return false;
        }
        let i = self.len;
        let at = i * self.slot_size;
        self.data[at..at + datagram.len()].copy_from_slice(datagram);
        let addr = socket2::SockAddr::from(peer);
        self.queued[i] = (socket, len, addr.len());
        self.peers[i] = addr.as_storage();
        self.len += 1;
        true
    }

    /// Sends everything queued, grouped by socket (one sendmmsg per socket unless the
    /// kernel takes only part), and empties the batch. `fd_of` gives socket `i`'s
    /// descriptor; a datagram for a socket it does not know is dropped.
    pub fn flush(&mut self, fd_of: impl Fn(usize) -> Option<RawFd>) -> Flushed {
        let mut done = Flushed::default();
        let base = self.data.as_mut_ptr();
        let mut first = 0;
        while first < self.len {
            // Gather the datagrams of the first unsent one's socket, in queue order.
            let socket = self.queued[first].0;
            let mut count = 0;
            for j in first..self.len {
                let (s, len, namelen) = self.queued[j];
                if s != socket {
                    continue;
                }
                self.iov[count] = libc::iovec {
                    iov_base: base.wrapping_add(j * self.slot_size).cast(),
                    iov_len: len as usize,
                };
                point_header(
                    &mut self.msgs[count],
                    ptr::addr_of_mut!(self.peers[j]),
                    namelen,
                    ptr::addr_of_mut!(self.iov[count]),
                );
                self.queued[j].0 = Self::SENT;
                count += 1;
            }
            while first < self.len && self.queued[first].0 == Self::SENT {
                first += 1;
            }
            let Some(fd) = fd_of(socket as usize) else {
                done.dropped += count as u64;
                continue;
            };
            let mut from = 0;
            while from < count {
                let rest = &mut self.msgs[from..count];
                done.calls += 1;
                // SAFETY: each of the `rest.len()` headers points at its own live iovec,
                // which covers `len` bytes inside that datagram's `slot_size`-byte slot of
                // `data`, and at the peer address `push` wrote with its length; all of
                // them stay borrowed (through `&mut self`) for the whole call.
                let rc = unsafe {
                    libc::sendmmsg(
                        fd,
                        rest.as_mut_ptr(),
                        rest.len() as libc::c_uint,
                        libc::MSG_DONTWAIT,
                    )
                };
                match check(rc) {
                    Ok(k) => {
                        done.sent += k as u64;
                        from += (k as usize).max(1);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        // The socket's send buffer is full: drop the rest for this socket.
                        done.dropped += (count - from) as u64;
                        break;
                    }
                    Err(_) => {
                        // This datagram cannot be sent (e.g. an unreachable address).
                        done.dropped += 1;
                        from += 1;
                    }
                }
            }
        }
        self.len = 0;
        done
    }
}
