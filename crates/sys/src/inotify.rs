//! sys::inotify -- directory watches for the zone files: an inotify instance (nonblocking,
//! close-on-exec), its watches, the events read back, and the file system a directory is on
//! (whether every change to it goes through this kernel, so that inotify sees it).

use super::check;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a directory watch reports: a file in it written, closed after writing, its
/// attributes or times changed (`touch`, `chmod`, a new hard link), created, deleted, renamed
/// away or into it; the directory itself deleted or renamed. Not reads or opens.
const DIR_EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;

/// An inotify instance whose watches are directories.
#[derive(Debug)]
pub struct Inotify {
    file: File,
}

impl Inotify {
    /// A new non-blocking inotify instance.
    pub fn new() -> io::Result<Self> {
        // SAFETY: inotify_init1 takes no pointers; the result is checked before use.
        let fd = check(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) })?;
        // SAFETY: `fd` is a descriptor the kernel just created for us and nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self {
            file: File::from(fd),
        })
    }

    /// Watches the directory `dir` (following a symbolic link to it); returns the watch
    /// descriptor, the same one again for a directory watched already under another name.
    /// ENOSPC: the user's `fs.inotify.max_user_watches` is reached.
    pub fn watch_dir(&self, dir: &Path) -> io::Result<i32> {
        let path = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
        let mask = DIR_EVENTS | libc::IN_ONLYDIR | libc::IN_EXCL_UNLINK;
        // SAFETY: `path` is a NUL-terminated string that lives across the call; the kernel
        // only reads it.
        check(unsafe { libc::inotify_add_watch(self.file.as_raw_fd(), path.as_ptr(), mask) })
    }

    /// Stops a watch (an unknown one is an error the caller can ignore).
    pub fn unwatch(&self, wd: i32) -> io::Result<()> {
        // SAFETY: takes no pointers; a stale `wd` is reported as EINVAL.
        check(unsafe { libc::inotify_rm_watch(self.file.as_raw_fd(), wd) })?;
        Ok(())
    }

    /// Reads the events queued now into `buf` (at least [`EVENT_BUFFER`] bytes); an empty
    /// list when there are none (the descriptor never blocks).
    pub fn read<'b>(&self, buf: &'b mut [u8]) -> io::Result<InotifyEvents<'b>> {
        match (&self.file).read(buf) {
            Ok(n) => Ok(InotifyEvents { buf: &buf[..n] }),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(InotifyEvents { buf: &[] }),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(InotifyEvents { buf: &[] }),
            Err(e) => Err(e),
        }
    }
}

/// A read buffer that holds at least one event with the longest file name.
pub const EVENT_BUFFER: usize = 64 << 10;

const HEADER: usize = size_of::<libc::inotify_event>();

/// The events of one read.
pub struct InotifyEvents<'b> {
    buf: &'b [u8],
}

impl InotifyEvents<'_> {
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

impl<'b> Iterator for InotifyEvents<'b> {
    type Item = InotifyEvent<'b>;

    fn next(&mut self) -> Option<InotifyEvent<'b>> {
        // Parsed from the bytes (no pointer casts): wd, mask, cookie, len, then `len` bytes
        // of the name, NUL-padded.
        let field = |i: usize| -> Option<[u8; 4]> { self.buf.get(i..i + 4)?.try_into().ok() };
        let wd = i32::from_ne_bytes(field(0)?);
        let mask = u32::from_ne_bytes(field(4)?);
        let len = u32::from_ne_bytes(field(12)?) as usize;
        let name = self.buf.get(HEADER..HEADER + len)?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        self.buf = &self.buf[HEADER + len..];
        Some(InotifyEvent {
            wd,
            mask,
            name: &name[..end],
        })
    }
}

/// One event: the watch, what happened, and the name in the directory (empty for the
/// directory itself and for a queue overflow).
#[derive(Debug, Clone, Copy)]
pub struct InotifyEvent<'b> {
    pub wd: i32,
    mask: u32,
    pub name: &'b [u8],
}

impl InotifyEvent<'_> {
    /// The kernel's queue overflowed: events were lost.
    pub fn overflow(&self) -> bool {
        self.mask & libc::IN_Q_OVERFLOW != 0
    }

    /// The watched directory went away: deleted, renamed, its file system unmounted, or the
    /// watch removed.
    pub fn dir_gone(&self) -> bool {
        self.mask
            & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_UNMOUNT | libc::IN_IGNORED)
            != 0
    }
}

/// Whether every change to files under `dir` is made through this kernel, so that inotify
/// reports it: local disk and memory file systems. Network and cluster file systems (NFS,
/// CIFS, Ceph, FUSE...) change under us without events, and file systems not listed here
/// are not trusted either.
pub fn changes_seen_by_inotify(dir: &Path) -> io::Result<bool> {
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: statfs is plain old data; all zeroes is a valid value.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `fs` valid for writes; both live across the call.
    check(unsafe { libc::statfs(path.as_ptr(), &mut fs) })?;
    // f_type's width differs between targets.
    #[allow(clippy::unnecessary_cast)]
    let magic = fs.f_type as u64 & 0xffff_ffff;
    Ok(LOCAL_FILE_SYSTEMS.contains(&magic))
}

/// `statfs` magic numbers (linux/magic.h) of local file systems.
const LOCAL_FILE_SYSTEMS: [u64; 12] = [
    0xEF53,      // ext2, ext3, ext4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0x0102_1994, // tmpfs
    0x8584_58F6, // ramfs
    0xF2F5_2010, // f2fs
    0x2FC1_2FC1, // zfs
    0xCA45_1A4E, // bcachefs
    0x794C_7630, // overlayfs (containers)
    0x5265_4973, // reiserfs
    0x3153_464A, // jfs
    0x7371_7368, // squashfs (read-only)
];
