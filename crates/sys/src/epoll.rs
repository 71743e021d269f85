//! sys::epoll -- a worker's event loop: an epoll instance, the events it returns, and the
//! eventfd that wakes it from another thread.

use super::check;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Readable interest/readiness.
pub const READABLE: u32 = libc::EPOLLIN as u32;
/// Writable interest/readiness.
pub const WRITABLE: u32 = libc::EPOLLOUT as u32;
/// Error or hang-up readiness (always reported, never requested).
pub const BROKEN: u32 = (libc::EPOLLERR | libc::EPOLLHUP) as u32;

/// An epoll instance (level-triggered).
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// A new epoll instance (close-on-exec).
    pub fn new() -> io::Result<Self> {
        // SAFETY: epoll_create1 takes no pointers; the result is checked before use.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `fd` is a descriptor the kernel just created for us and nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: interest,
            u64: token,
        };
        // SAFETY: `event` is a valid epoll_event that lives across the call; the kernel only
        // reads it. A bad `fd` is reported as an error, not undefined behaviour.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut event) })?;
        Ok(())
    }

    /// Watches `fd` for `interest`, reported with `token`.
    pub fn add(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, interest)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, interest)
    }

    /// Waits up to `timeout_ms` (-1: forever). An interrupted wait returns no events.
    pub fn wait(&self, events: &mut Events, timeout_ms: i32) -> io::Result<()> {
        let cap = events.buf.len().min(i32::MAX as usize) as libc::c_int;
        // SAFETY: `events.buf` holds `cap` initialised epoll_event structs and the kernel
        // writes at most `cap` of them.
        let rc = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                events.buf.as_mut_ptr(),
                cap,
                timeout_ms,
            )
        };
        match check(rc) {
            Ok(n) => events.len = n as usize,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => events.len = 0,
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// The events one `Epoll::wait` returned.
pub struct Events {
    buf: Vec<libc::epoll_event>,
    len: usize,
}

impl Events {
    /// Room for `n` events per wait.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            buf: vec![libc::epoll_event { events: 0, u64: 0 }; n.max(1)],
            len: 0,
        }
    }

    /// `(token, readiness)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        // Copy the fields out: epoll_event is packed on x86-64, so no references into it.
        self.buf[..self.len].iter().map(|e| {
            let e = *e;
            (e.u64, e.events)
        })
    }
}

/// An eventfd used to wake one worker's epoll loop from another thread.
#[derive(Debug)]
pub struct EventFd {
    file: File,
}

impl EventFd {
    /// A new non-blocking eventfd.
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd takes no pointers; the result is checked before use.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: `fd` is a descriptor the kernel just created for us and nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self {
            file: File::from(fd),
        })
    }

    /// Its descriptor, to add to an epoll set.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Makes the descriptor readable (a full counter only means it already is).
    pub fn wake(&self) {
        let _ = (&self.file).write(&1u64.to_ne_bytes());
    }

    /// Resets the descriptor to not readable.
    pub fn drain(&self) {
        let mut b = [0u8; 8];
        let _ = (&self.file).read(&mut b);
    }
}
