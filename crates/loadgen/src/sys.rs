//! The only `unsafe` code in shardns-bench: batched UDP I/O (sendmmsg/recvmmsg), ppoll,
//! socket buffer sizes, timer slack and the process's own CPU time.
//!
//! Never: allocation inside a send or receive call. The batches own their headers, I/O
//! vectors and buffers, and re-point them at each call, so nothing dangles between calls.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Datagrams per sendmmsg/recvmmsg call.
pub(crate) const BATCH: usize = 64;

/// Bytes kept of each received datagram. Only the header and question are read, so a longer
/// answer is truncated by the kernel (MSG_TRUNC), which costs nothing.
pub(crate) const RECV_BUF: usize = 1024;

fn zeroed_mmsghdrs(n: usize) -> Vec<libc::mmsghdr> {
    (0..n)
        .map(|_| {
            // SAFETY: mmsghdr is a plain C struct of integers and raw pointers (and, on some
            // libcs, private padding); the all-zero bit pattern is a valid value of each field.
            unsafe { std::mem::zeroed::<libc::mmsghdr>() }
        })
        .collect()
}

fn empty_iovec() -> libc::iovec {
    libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }
}

/// UDP_SEGMENT (linux/udp.h): send one buffer as equal-sized datagrams (UDP GSO).
const UDP_SEGMENT: libc::c_int = 103;
/// Control space per outgoing message, in u64 words: one UDP_SEGMENT cmsg (16 + 2 bytes).
const SEND_CTRL_WORDS: usize = 4;
/// Bytes one GSO message may carry (the kernel's limit is 64 KiB).
const MAX_GSO_BYTES: usize = 60_000;
/// Datagrams per sendmmsg call: the kernel's most segments per GSO message (UDP_MAX_SEGMENTS,
/// 128 since Linux 5.5; 64 before, see [`SendBatch::send`]): the larger the group, the less
/// kernel time per datagram (docs/bench-lab.md has the figures).
pub(crate) const SEND_BATCH: usize = 128;
/// Room for one query: a 255-octet name with the header, question and an OPT fits in 512.
const MAX_QUERY: usize = 512;

/// Up to [`SEND_BATCH`] outgoing datagrams on a connected socket: a two-byte query ID and the
/// rest of a pre-encoded query each.
///
/// At send time the datagrams are ordered by size (stable), copied back to back into one
/// buffer, and each run of equal size goes out as one UDP GSO message (UDP_SEGMENT): one trip
/// through the IP stack and loopback for the group, split into the same datagrams at the
/// receiving socket, which cannot tell the difference (tested below; the server's counters
/// agree). Grouping by size keeps GSO groups large with a list of names of mixed lengths, and
/// the order of queries inside one batch (sent within one system call) does not matter.
/// One I/O vector per message instead of two per datagram (ID, body): copying ~40 bytes per
/// query in user space is cheaper than the kernel importing and walking 256 I/O vectors.
/// If the kernel refuses GSO, the batch falls back
/// to one message per datagram for good.
pub(crate) struct SendBatch<'q> {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    ctrl: Vec<u64>,
    buf: Vec<u8>,
    /// Datagrams carried by each message of the last send.
    groups: Vec<usize>,
    ids: Vec<u16>,
    bodies: Vec<&'q [u8]>,
    /// Push positions in send order (by size).
    order: [u8; SEND_BATCH],
    /// Most datagrams in one GSO message.
    max_segments: usize,
    gso: bool,
}

impl<'q> SendBatch<'q> {
    pub(crate) fn new() -> Self {
        Self {
            hdrs: zeroed_mmsghdrs(SEND_BATCH),
            iovs: vec![empty_iovec(); SEND_BATCH],
            ctrl: vec![0; SEND_BATCH * SEND_CTRL_WORDS],
            buf: vec![0; SEND_BATCH * MAX_QUERY],
            groups: Vec::with_capacity(SEND_BATCH),
            ids: Vec::with_capacity(SEND_BATCH),
            bodies: Vec::with_capacity(SEND_BATCH),
            order: [0; SEND_BATCH],
            max_segments: SEND_BATCH,
            gso: true,
        }
    }

    /// Sends one message per datagram from now on (no UDP GSO).
    #[cfg(test)]
    pub(crate) fn without_gso(mut self) -> Self {
        self.gso = false;
        self
    }

    pub(crate) fn is_full(&self) -> bool {
        self.ids.len() == SEND_BATCH
    }

    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.bodies.clear();
    }

    /// Adds one datagram: `id` then `body` (the query without its first two bytes, at most
    /// 510 bytes).
    pub(crate) fn push(&mut self, id: u16, body: &'q [u8]) {
        debug_assert!(!self.is_full());
        debug_assert!(body.len() + 2 <= MAX_QUERY);
        self.ids.push(id);
        self.bodies.push(body);
    }

    /// The push positions of the datagrams in the order the last [`SendBatch::send`] sent
    /// them: if it sent `k`, `order()[..k]` left and the rest did not.
    pub(crate) fn order(&self) -> &[u8] {
        &self.order[..self.ids.len()]
    }

    /// Sends the batch without blocking; returns how many datagrams left (the first ones of
    /// [`SendBatch::order`]). `Ok(0)` means the socket buffer is full (EAGAIN/ENOBUFS).
    pub(crate) fn send(&mut self, fd: RawFd) -> io::Result<usize> {
        let n = self.ids.len();
        if n == 0 {
            return Ok(0);
        }
        for (i, o) in self.order[..n].iter_mut().enumerate() {
            *o = i as u8;
        }
        let bodies = &self.bodies;
        // Stable (ties by position), and sort_unstable does not allocate.
        self.order[..n].sort_unstable_by_key(|&i| (bodies[i as usize].len(), i));
        let mut at = 0;
        for &i in &self.order[..n] {
            let body = self.bodies[i as usize];
            self.buf[at..at + 2].copy_from_slice(&self.ids[i as usize].to_be_bytes());
            self.buf[at + 2..at + 2 + body.len()].copy_from_slice(body);
            at += 2 + body.len();
        }
        loop {
            let messages = self.build_messages(n);
            // SAFETY: `hdrs[..messages]` are initialised msghdrs, each with one iovec of
            // `self.iovs` pointing into `self.buf`, and control buffers in `self.ctrl`; all
            // outlive the call, and `messages <= SEND_BATCH` is within `hdrs`. The socket is
            // connected: no address.
            let r = unsafe {
                libc::sendmmsg(
                    fd,
                    self.hdrs.as_mut_ptr(),
                    messages as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r >= 0 {
                return Ok(self.groups[..r as usize].iter().sum());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => return Ok(0),
                // Kernels before 5.5 take at most 64 segments; older ones no GSO at all.
                Some(libc::EIO) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
                    if self.gso && messages < n =>
                {
                    if self.max_segments > 64 {
                        self.max_segments = 64;
                    } else {
                        self.gso = false;
                    }
                }
                _ => return Err(e),
            }
        }
    }

    /// Points one message header at each run of equal-sized datagrams in `self.buf` (each
    /// datagram alone without GSO); returns the number of messages.
    fn build_messages(&mut self, n: usize) -> usize {
        self.groups.clear();
        let ctrl = self.ctrl.as_mut_ptr();
        let base = self.buf.as_mut_ptr();
        let mut at = 0;
        let mut i = 0;
        while i < n {
            let size = 2 + self.bodies[self.order[i] as usize].len();
            let mut k = 1;
            if self.gso {
                while i + k < n
                    && k < self.max_segments
                    && 2 + self.bodies[self.order[i + k] as usize].len() == size
                    && (k + 1) * size <= MAX_GSO_BYTES
                {
                    k += 1;
                }
            }
            let m = self.groups.len();
            self.iovs[m] = libc::iovec {
                // In bounds: the datagrams were copied to buf[..sum of sizes].
                iov_base: base.wrapping_add(at).cast(),
                iov_len: k * size,
            };
            let h = &mut self.hdrs[m].msg_hdr;
            h.msg_name = std::ptr::null_mut();
            h.msg_namelen = 0;
            h.msg_iov = &mut self.iovs[m];
            h.msg_iovlen = 1;
            h.msg_flags = 0;
            if k > 1 {
                // In bounds: (m + 1) * SEND_CTRL_WORDS <= ctrl.len().
                h.msg_control = ctrl.wrapping_add(m * SEND_CTRL_WORDS).cast();
                // SAFETY: CMSG_SPACE is arithmetic on its argument.
                h.msg_controllen = unsafe { libc::CMSG_SPACE(2) } as _;
                // SAFETY: msg_control points at SEND_CTRL_WORDS * 8 = 32 writable, 8-byte
                // aligned bytes, and msg_controllen (24) covers one cmsghdr plus a u16, so
                // CMSG_FIRSTHDR is non-null and the header and data writes stay inside.
                unsafe {
                    let c = libc::CMSG_FIRSTHDR(h);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(2) as _;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size as u16);
                }
            } else {
                h.msg_control = std::ptr::null_mut();
                h.msg_controllen = 0;
            }
            self.groups.push(k);
            at += k * size;
            i += k;
        }
        self.groups.len()
    }
}

/// Control-message space per datagram, in u64 words (for alignment): one SCM_TIMESTAMPNS
/// (16-byte header + 16-byte timespec) with room to spare.
const CTRL_WORDS: usize = 8;

/// Up to [`BATCH`] incoming datagrams, each into its own [`RECV_BUF`]-byte buffer, each with
/// the kernel's arrival time when the socket has [`enable_rx_timestamps`].
pub(crate) struct RecvBatch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    bufs: Vec<u8>,
    ctrl: Vec<u64>,
    n: usize,
}

impl RecvBatch {
    pub(crate) fn new() -> Self {
        Self {
            hdrs: zeroed_mmsghdrs(BATCH),
            iovs: vec![empty_iovec(); BATCH],
            bufs: vec![0; BATCH * RECV_BUF],
            ctrl: vec![0; BATCH * CTRL_WORDS],
            n: 0,
        }
    }

    /// Receives what is queued, without blocking. `Ok(0)` means nothing was queued.
    pub(crate) fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.n = 0;
        let base = self.bufs.as_mut_ptr();
        let ctrl = self.ctrl.as_mut_ptr();
        for i in 0..BATCH {
            self.iovs[i] = libc::iovec {
                // In bounds: i * RECV_BUF + RECV_BUF <= bufs.len().
                iov_base: base.wrapping_add(i * RECV_BUF).cast(),
                iov_len: RECV_BUF,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = std::ptr::null_mut();
            h.msg_namelen = 0;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            // In bounds: i * CTRL_WORDS + CTRL_WORDS <= ctrl.len().
            h.msg_control = ctrl.wrapping_add(i * CTRL_WORDS).cast();
            h.msg_controllen = (CTRL_WORDS * 8) as _;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        // SAFETY: every header points at one iovec covering its own disjoint RECV_BUF-sized
        // part of `self.bufs`, and at its own disjoint, 8-byte aligned CTRL_WORDS part of
        // `self.ctrl`; both live (and are not moved) for the whole call; BATCH is the length
        // of `hdrs`. A null timeout means none.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r >= 0 {
            self.n = r as usize;
            return Ok(self.n);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
            _ => Err(e),
        }
    }

    /// The i-th datagram of the last call (truncated to [`RECV_BUF`]).
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        let len = (self.hdrs[i].msg_len as usize).min(RECV_BUF);
        &self.bufs[i * RECV_BUF..i * RECV_BUF + len]
    }

    /// When the kernel received the i-th datagram of the last call (CLOCK_REALTIME, ns since
    /// the epoch), if the socket records arrival times.
    pub(crate) fn arrival(&self, i: usize) -> Option<u64> {
        debug_assert!(i < self.n);
        let h = &self.hdrs[i].msg_hdr;
        // SAFETY: `h` is the header the kernel just filled: msg_control points into
        // `self.ctrl` and msg_controllen was set by the kernel to the bytes it wrote there, so
        // the CMSG_* walk stays inside that buffer; the timespec is read unaligned.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        None
    }
}

/// Makes the kernel record each datagram's arrival time (SO_TIMESTAMPNS), so latency is
/// measured to when the answer arrived, not to when this tool got round to reading it.
pub(crate) fn enable_rx_timestamps(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a c_int that lives across the call, and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// CLOCK_REALTIME in ns since the epoch, the clock of the kernel's arrival times (read
/// through the vDSO, no system call).
pub(crate) fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A poll entry for `fd`, waiting for input and, if `write`, for room to send.
pub(crate) fn pollfd(fd: RawFd, write: bool) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN | if write { libc::POLLOUT } else { 0 },
        revents: 0,
    }
}

/// True if the entry reported input (or an error, which the next read will report).
pub(crate) fn readable(p: &libc::pollfd) -> bool {
    p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0
}

/// Waits up to `timeout` (nanosecond resolution) for any of `fds`; returns how many are ready.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: Duration) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fds` is a valid, exclusively borrowed array of `fds.len()` pollfds; `ts` lives
    // across the call; a null signal mask leaves the mask unchanged.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r >= 0 {
        return Ok(r as usize);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINTR) {
        return Ok(0);
    }
    Err(e)
}

/// Asks for `bytes` of send and receive buffer on `fd`: the privileged *FORCE options first
/// (they pass net.core.[rw]mem_max), then the ordinary ones. Failures are ignored: the
/// defaults still work, only bursts may drop sooner.
pub(crate) fn set_buffer_sizes(fd: RawFd, bytes: usize) {
    let v: libc::c_int = bytes.min(i32::MAX as usize) as libc::c_int;
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        for opt in [force, plain] {
            // SAFETY: `v` is a c_int that lives across the call, and its size is passed.
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&v as *const libc::c_int).cast(),
                    size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r == 0 {
                break;
            }
        }
    }
}

/// Lets this thread's timers fire within 1 µs of their time (default slack is 50 µs), so a
/// paced sender wakes when it asked to.
pub(crate) fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long argument and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong);
    }
}

/// CPU time (user + system) used so far by this whole process, all threads.
pub(crate) fn self_cpu_time() -> Duration {
    // SAFETY: rusage is plain integers, so all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, exclusively borrowed rusage for the kernel to fill.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if r != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Clock ticks per second, the unit of /proc CPU times.
pub(crate) fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let r = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if r > 0 {
        r as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn batches_carry_ids_and_arrival_times() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(server.local_addr().unwrap()).unwrap();
        server.connect(client.local_addr().unwrap()).unwrap();
        enable_rx_timestamps(server.as_raw_fd()).unwrap();
        let bodies: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i; 10]).collect();
        let mut sb = SendBatch::new().without_gso();
        for (i, b) in bodies.iter().enumerate() {
            sb.push(0x1200 + i as u16, b);
        }
        let before = realtime_ns();
        assert_eq!(sb.send(client.as_raw_fd()).unwrap(), 3);
        let mut rb = RecvBatch::new();
        let mut fds = [pollfd(server.as_raw_fd(), false)];
        poll(&mut fds, Duration::from_secs(1)).unwrap();
        assert_eq!(rb.recv(server.as_raw_fd()).unwrap(), 3);
        for (i, body) in bodies.iter().enumerate() {
            let d = rb.get(i);
            assert_eq!(d.len(), 12);
            assert_eq!(&d[..2], &[0x12, i as u8]);
            assert_eq!(d[2..], body[..]);
            let at = rb.arrival(i).expect("kernel arrival time");
            assert!(at >= before && at <= realtime_ns(), "{before} {at}");
        }
        assert_eq!(rb.recv(server.as_raw_fd()).unwrap(), 0);
    }

    #[test]
    fn gso_groups_arrive_as_separate_datagrams() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(server.local_addr().unwrap()).unwrap();
        set_buffer_sizes(server.as_raw_fd(), 1 << 20);
        // Sizes 10,10,10,5,5,10 go out grouped by size, stable: 5,5 (positions 3, 4) as one
        // GSO message, then 10,10,10,10 (0, 1, 2, 5) as another.
        let lens = [10usize, 10, 10, 5, 5, 10];
        let bodies: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, &l)| vec![i as u8; l])
            .collect();
        let mut sb = SendBatch::new();
        for (i, b) in bodies.iter().enumerate() {
            sb.push(0x100 + i as u16, b);
        }
        assert_eq!(sb.send(client.as_raw_fd()).unwrap(), lens.len());
        assert_eq!(sb.order(), &[3, 4, 0, 1, 2, 5]);
        assert_eq!(sb.groups, vec![2, 4]);
        server
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let mut buf = [0u8; 512];
        for &i in &[3usize, 4, 0, 1, 2, 5] {
            let n = server.recv(&mut buf).unwrap();
            assert_eq!(n, 2 + lens[i], "datagram {i}");
            assert_eq!(&buf[..2], &(0x100 + i as u16).to_be_bytes());
            assert_eq!(&buf[2..n], &bodies[i][..]);
        }
        // A full batch of equal sizes: one message (two on kernels that allow 64 segments).
        let body = [7u8; 35];
        sb.clear();
        for i in 0..SEND_BATCH {
            sb.push(i as u16, &body);
        }
        assert_eq!(sb.send(client.as_raw_fd()).unwrap(), SEND_BATCH);
        assert!(sb.gso, "the kernel refused UDP GSO");
        assert_eq!(sb.groups.len(), SEND_BATCH / sb.max_segments);
        for i in 0..SEND_BATCH {
            assert_eq!(server.recv(&mut buf).unwrap(), 37);
            assert_eq!(&buf[..2], &(i as u16).to_be_bytes());
        }
    }
}
