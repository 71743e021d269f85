//! shardns-sys: thin wrappers over the Linux calls that std and socket2 do not offer, for
//! the runtime (`shardns-server`) and the zone control plane (`shardns-control`). With the
//! server's `xdp`, the only crate with `unsafe`.
//!
//! Owns, by room: `epoll` (epoll, eventfd: a worker's event loop and its wake-up),
//! `mmsg` (recvmmsg/sendmmsg batches: [`UdpBatch`], [`SendBatch`]), `socket` (accept4,
//! SO_RCVBUFFORCE, kernel socket addresses, SO_PEERCRED), `memory` (huge pages for zone arrays,
//! handing freed heap back), `inotify` (watches on the directories of the zone files, and
//! whether a directory's file system lets inotify see every change), and here the
//! open-file limit, the effective user ID, the cache prefetch hint, and the `errno` check
//! they all use.
//!
//! Every `unsafe` block states why it is sound in a `// SAFETY:` comment. Nothing here knows
//! about DNS; callers get safe types (`Epoll`, `EventFd`, `UdpBatch`, `SendBatch`,
//! `Inotify`) and `io::Result`s.
#![warn(missing_docs)]

mod epoll;
mod inotify;
mod memory;
mod mmsg;
pub mod seed;
mod socket;
#[cfg(test)]
mod tests;

pub use epoll::{Epoll, EventFd, Events, BROKEN, READABLE, WRITABLE};
pub use inotify::{changes_seen_by_inotify, Inotify, EVENT_BUFFER};
pub use memory::{
    arc_from_bytes, back_with_huge_pages, release_free_memory, release_free_memory_if_worth_it,
};
pub use mmsg::{SendBatch, UdpBatch};
pub use socket::{accept_nonblocking, force_receive_buffer, peer_uid};

use std::io;

/// Asks the CPU to bring the cache line holding `p` into its caches, without waiting for
/// it (PREFETCHT0 on x86_64, nothing elsewhere): the hint a worker gives for a batch's zone
/// lookups (`ZoneSet::prefetch`). `p` need not point at anything.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache: it reads nothing the program sees, writes
    // nothing, and never faults, whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Turns a `-1` return into the thread's `errno`.
pub(crate) fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Raises the soft limit on open files to the hard limit; returns the new soft limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the kernel to fill.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `want` is a valid rlimit that the kernel only reads.
        if check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) }).is_ok() {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
    Ok(lim.rlim_cur as u64)
}

/// The process's effective user ID (whose files it makes, whose sockets it trusts).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// Milliseconds since the epoch, for the resolver's DNSSEC signature validity: read when a
/// validating resolution steps (a vDSO clock read), so that a stepped clock is seen at once.
pub fn unix_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Seconds since the epoch, for TSIG and signing (a clock read, on the rare paths of
/// transfers, NOTIFY, updates and signed queries only, never per plain query); moved by
/// [`TEST_CLOCK_SKEW`] when that is set.
pub fn unix_now() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    now.saturating_add_signed(test_skew())
}

/// **For tests only**: the environment variable naming a file whose content, a signed
/// number of seconds, is added to [`unix_now`] at every call, so that an end-to-end test can
/// step the server's wall clock forward and back while it runs (the tests of rollovers
/// under clock jumps). Unset, as in any real deployment, it costs one look-up per process.
pub const TEST_CLOCK_SKEW: &str = "SHARDNS_TEST_CLOCK_SKEW";

fn test_skew() -> i64 {
    static FILE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let Some(file) = FILE.get_or_init(|| std::env::var_os(TEST_CLOCK_SKEW).map(Into::into)) else {
        return 0;
    };
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}
