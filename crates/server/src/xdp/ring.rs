//! An AF_XDP socket with its own UMEM (the frame memory shared with the kernel) and its four
//! rings, bound to one receive queue of one interface in copy mode.
//!
//! Frames are answered in place: a frame travels fill ring → RX ring (kernel wrote a query
//! into it) → our hands (the reply is written over the query) → TX ring → completion ring
//! (the kernel has sent it) → fill ring again. So every frame is always in exactly one of
//! those places, there is no free list, and the fill and completion rings are as large as
//! the UMEM so they can never overflow.
#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, Ordering};

/// Frame (chunk) size: a page, so that a reply can grow to a few kilobytes in place.
pub const FRAME: usize = 4096;
/// Frames in the UMEM (8 MiB).
const FRAMES: u32 = 2048;
/// RX and TX ring entries.
const RING: u32 = 1024;
/// How many frames one `sendto` kick hands to the kernel at most (its TX budget).
const KICK_BUDGET: u32 = 32;

/// An anonymous or socket mapping, unmapped on drop.
#[derive(Debug)]
struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mmap {
    fn new(len: usize, fd: RawFd, offset: libc::off_t) -> io::Result<Self> {
        let (flags, fd) = if fd < 0 {
            (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
            )
        } else {
            (libc::MAP_SHARED | libc::MAP_POPULATE, fd)
        };
        // SAFETY: a fresh mapping chosen by the kernel (address hint null); it overlaps no
        // Rust object. The result is checked before use.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            ptr: NonNull::new(p.cast()).expect("mmap never returns null on success"),
            len,
        })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: exactly the region mmap returned; nothing refers into it any more (the rings
        // and frame slices borrow from the owner of this value).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// One ring: producer and consumer indexes shared with the kernel, `size` entries of `T`.
/// We own one end (`local`, the index we advance) and cache the other.
#[derive(Debug)]
struct Ring<T> {
    _map: Mmap,
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    desc: NonNull<T>,
    mask: u32,
}

impl<T: Copy> Ring<T> {
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, entries: u32, pgoff: u64) -> io::Result<Self> {
        let len = off.desc as usize + entries as usize * size_of::<T>();
        let map = Mmap::new(len, fd, pgoff as libc::off_t)?;
        let at = |o: u64| {
            // SAFETY: the kernel's offsets lie inside the mapping it just sized for them.
            NonNull::new(unsafe { map.ptr.as_ptr().add(o as usize) }).expect("non-null")
        };
        Ok(Self {
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            desc: at(off.desc).cast(),
            mask: entries - 1,
            _map: map,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: an aligned u32 inside our live mapping, only ever accessed atomically.
        unsafe { self.producer.as_ref() }
    }
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.consumer.as_ref() }
    }
    fn needs_wakeup(&self) -> bool {
        // SAFETY: as for `producer`.
        unsafe { self.flags.as_ref() }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    fn read(&self, index: u32) -> T {
        // SAFETY: `index & mask` is within the ring's `mask + 1` entries; the entry was
        // published by the producer (we read it only between consumer and an Acquire-loaded
        // producer index).
        unsafe { ptr::read(self.desc.as_ptr().add((index & self.mask) as usize)) }
    }
    fn write(&self, index: u32, v: T) {
        // SAFETY: within the ring as above; the slot lies between our producer index and the
        // consumer's, so the kernel does not read it until we publish it with Release.
        unsafe { ptr::write(self.desc.as_ptr().add((index & self.mask) as usize), v) }
    }
}

/// What the XDP socket's kernel side counted (`XDP_STATISTICS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames dropped for reasons other than the two below.
    pub rx_dropped: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Frames dropped because the fill ring was empty.
    pub rx_fill_empty: u64,
    /// TX descriptors the kernel rejected.
    pub tx_invalid: u64,
}

/// An AF_XDP socket in copy mode with its UMEM and rings.
#[derive(Debug)]
pub struct Xsk {
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    fd: OwnedFd,
    umem: Mmap,
    /// Our ends: RX consumer, TX producer, fill producer, completion consumer.
    rx_cons: u32,
    tx_prod: u32,
    fill_prod: u32,
    comp_cons: u32,
}

fn setsockopt<T>(fd: RawFd, name: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a live value of the size passed, of the layout the option expects.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            name,
            (v as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Reads an XDP socket option of plain-old-data type `T` (an all-zero `T` is valid).
fn getsockopt<T: Copy>(fd: RawFd, name: libc::c_int) -> io::Result<T> {
    // SAFETY: only used with the kernel's plain C structs, for which all zeroes is a value.
    let mut v: T = unsafe { std::mem::zeroed() };
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `v` is a live, writable value of `len` octets.
    let rc =
        unsafe { libc::getsockopt(fd, libc::SOL_XDP, name, (&mut v as *mut T).cast(), &mut len) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(v)
    }
}

impl Xsk {
    /// Creates the socket and its UMEM, binds it in copy mode to receive queue `queue` of
    /// interface `ifindex`, and gives the kernel every frame to fill. Frames reach it only
    /// once an XDP program redirects to it (`XdpProgram::register`).
    pub fn bind(ifindex: u32, queue: u32) -> io::Result<Self> {
        // SAFETY: plain socket(2); the result is checked and owned at once.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        let umem = Mmap::new(FRAMES as usize * FRAME, -1, 0)?;
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr.as_ptr() as u64,
            len: umem.len as u64,
            chunk_size: FRAME as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(raw, libc::XDP_UMEM_REG, &reg)?;
        setsockopt(raw, libc::XDP_UMEM_FILL_RING, &FRAMES)?;
        setsockopt(raw, libc::XDP_UMEM_COMPLETION_RING, &FRAMES)?;
        setsockopt(raw, libc::XDP_RX_RING, &RING)?;
        setsockopt(raw, libc::XDP_TX_RING, &RING)?;
        let off: libc::xdp_mmap_offsets = getsockopt(raw, libc::XDP_MMAP_OFFSETS)?;
        let rx = Ring::map(raw, &off.rx, RING, libc::XDP_PGOFF_RX_RING as u64)?;
        let tx = Ring::map(raw, &off.tx, RING, libc::XDP_PGOFF_TX_RING as u64)?;
        let fill = Ring::map(raw, &off.fr, FRAMES, libc::XDP_UMEM_PGOFF_FILL_RING)?;
        let comp = Ring::map(raw, &off.cr, FRAMES, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?;
        let mut xsk = Self {
            rx,
            tx,
            fill,
            comp,
            fd,
            umem,
            rx_cons: 0,
            tx_prod: 0,
            fill_prod: 0,
            comp_cons: 0,
        };
        for i in 0..FRAMES {
            xsk.fill.write(i, u64::from(i) * FRAME as u64);
        }
        xsk.fill_prod = FRAMES;
        xsk.fill.producer().store(FRAMES, Ordering::Release);
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: libc::XDP_COPY | libc::XDP_USE_NEED_WAKEUP,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `addr` is a live sockaddr_xdp of the size passed.
        let rc = unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_xdp).cast(),
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(xsk)
    }

    /// Answers what the RX ring holds, at most `max` frames: `f(frame, len)` gets each
    /// query frame (its `len` octets, then room up to the end of its chunk) and returns the
    /// reply frame's length to send it back in place, or `None` to drop it. Then hands the
    /// replies to the kernel and recycles sent frames. Returns how many frames were read.
    pub fn serve(&mut self, max: u32, mut f: impl FnMut(&mut [u8], usize) -> Option<usize>) -> u32 {
        let avail = self
            .rx
            .producer()
            .load(Ordering::Acquire)
            .wrapping_sub(self.rx_cons);
        let n = avail.min(max);
        for _ in 0..n {
            let d = self.rx.read(self.rx_cons);
            self.rx_cons = self.rx_cons.wrapping_add(1);
            let start = d.addr as usize;
            let end = (start / FRAME + 1) * FRAME;
            let len = d.len as usize;
            if end > self.umem.len || start + len > end {
                continue; // never from a sane kernel; the frame is lost rather than misused
            }
            // SAFETY: `start..end` lies inside the UMEM (checked above) and inside one chunk
            // the kernel has handed to us through the RX ring: it writes into a chunk only
            // while the chunk sits in the fill ring, so nothing else touches these octets
            // until we give the chunk back. The slice lives only for this call of `f`.
            let frame = unsafe {
                std::slice::from_raw_parts_mut(self.umem.ptr.as_ptr().add(start), end - start)
            };
            let reply = f(frame, len);
            let room = RING
                - self
                    .tx_prod
                    .wrapping_sub(self.tx.consumer().load(Ordering::Acquire));
            match reply {
                Some(out) if out <= end - start && room > 0 => {
                    self.tx.write(
                        self.tx_prod,
                        libc::xdp_desc {
                            addr: d.addr,
                            len: out as u32,
                            options: 0,
                        },
                    );
                    self.tx_prod = self.tx_prod.wrapping_add(1);
                }
                _ => {
                    self.fill.write(self.fill_prod, d.addr);
                    self.fill_prod = self.fill_prod.wrapping_add(1);
                }
            }
        }
        if n > 0 {
            self.rx.consumer().store(self.rx_cons, Ordering::Release);
            self.tx.producer().store(self.tx_prod, Ordering::Release);
            self.kick();
        }
        self.recycle();
        n
    }

    /// Frames on the TX ring the kernel has not taken yet.
    pub fn tx_pending(&self) -> u32 {
        self.tx_prod
            .wrapping_sub(self.tx.consumer().load(Ordering::Acquire))
    }

    /// Asks the kernel to send what the TX ring holds. In copy mode the sending happens
    /// inside this call, at most `KICK_BUDGET` frames per call, so call again while frames
    /// remain and the kernel says "again".
    pub fn kick(&mut self) {
        let mut tries = self.tx_pending() / KICK_BUDGET + 2;
        while self.tx_pending() > 0 && self.tx.needs_wakeup() && tries > 0 {
            tries -= 1;
            // SAFETY: sendto with no data and no address: only a wakeup for the TX ring.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    ptr::null(),
                    0,
                )
            };
            if rc < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => {}
                    _ => break,
                }
            }
        }
        self.recycle();
    }

    /// Moves sent frames from the completion ring back to the fill ring.
    fn recycle(&mut self) {
        let done = self
            .comp
            .producer()
            .load(Ordering::Acquire)
            .wrapping_sub(self.comp_cons);
        for _ in 0..done {
            let addr = self.comp.read(self.comp_cons);
            self.comp_cons = self.comp_cons.wrapping_add(1);
            self.fill.write(self.fill_prod, addr);
            self.fill_prod = self.fill_prod.wrapping_add(1);
        }
        if done > 0 {
            self.comp
                .consumer()
                .store(self.comp_cons, Ordering::Release);
        }
        self.fill
            .producer()
            .store(self.fill_prod, Ordering::Release);
    }

    /// Whether the RX ring holds frames.
    pub fn rx_ready(&self) -> bool {
        self.rx.producer().load(Ordering::Acquire) != self.rx_cons
    }

    /// The kernel's drop counters for this socket.
    pub fn stats(&self) -> io::Result<XskStats> {
        let s: libc::xdp_statistics = getsockopt(self.fd.as_raw_fd(), libc::XDP_STATISTICS)?;
        Ok(XskStats {
            rx_dropped: s.rx_dropped,
            rx_ring_full: s.rx_ring_full,
            rx_fill_empty: s.rx_fill_ring_empty_descs,
            tx_invalid: s.tx_invalid_descs,
        })
    }
}

impl AsRawFd for Xsk {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

// SAFETY: the raw pointers point into mappings this value owns; no other Rust value refers
// into them, so moving the socket to another thread moves the only access path with it.
unsafe impl Send for Xsk {}
