//! sys::memory -- how memory is mapped and given back: huge pages for a big zone's arrays,
//! freed heap handed back to the system after a reload, a big array moved without being
//! held twice.

/// Asks the kernel to back the 2 MiB-aligned interior of `[addr, addr + len)` with
/// transparent huge pages, now (MADV_COLLAPSE, Linux 6.1) rather than whenever khugepaged
/// gets to it; a no-op below 2 MiB and on kernels without it. The data is unchanged: the
/// kernel copies it into the huge page. Used on a big zone's arrays after it is built.
pub fn back_with_huge_pages(addr: usize, len: usize) -> bool {
    const HUGE: usize = 2 << 20;
    #[cfg(target_os = "linux")]
    const MADV_COLLAPSE: libc::c_int = 25;
    let start = addr.next_multiple_of(HUGE);
    let end = (addr + len) & !(HUGE - 1);
    if end <= start {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        let (p, n) = (start as *mut libc::c_void, end - start);
        // SAFETY: [start, end) lies inside one live allocation the caller keeps (a zone's
        // array); MADV_HUGEPAGE and MADV_COLLAPSE change how it is mapped, never its
        // contents, and fail harmlessly (EINVAL/EAGAIN) where unsupported.
        unsafe {
            libc::madvise(p, n, libc::MADV_HUGEPAGE) == 0 && libc::madvise(p, n, MADV_COLLAPSE) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// The octets of `v` in an `Arc<[u8]>`, moved `piece` octets at a time from the end, the
/// vector cut back (its memory returned) after each piece, so that the two are never held
/// whole together: a big zone's rdata made shareable without twice its size at once.
pub fn arc_from_bytes(mut v: Vec<u8>, piece: usize) -> std::sync::Arc<[u8]> {
    let mut mem = std::sync::Arc::<[u8]>::new_uninit_slice(v.len());
    let copy = std::sync::Arc::get_mut(&mut mem).expect("not shared yet");
    while !v.is_empty() {
        let at = v.len().saturating_sub(piece.max(1));
        for (d, s) in copy[at..v.len()].iter_mut().zip(&v[at..]) {
            d.write(*s);
        }
        v.truncate(at);
        v.shrink_to_fit();
    }
    // SAFETY: the pieces, from the end down to 0, wrote every octet of `mem`.
    unsafe { mem.assume_init() }
}

/// [`release_free_memory`] when the free heap is worth it: over 4 MiB and over a
/// sixteenth of what is in use (glibc's `mallinfo2`, which walks the free lists without a
/// system call). For a caller that frees a little often and allocates it again soon, as
/// an update batch frees the pages its versions copied: trimming after each gave them back
/// only to fault them in again. Big frees (a compaction's old arrays, a replaced zone)
/// still go back at once, which bounds the resident size to the heap in use plus a
/// sixteenth.
pub fn release_free_memory_if_worth_it() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads glibc's own heap statistics under its own locks.
        let info = unsafe { libc::mallinfo2() };
        if info.fordblks < 4 << 20 || info.fordblks < info.uordblks / 16 {
            return;
        }
    }
    release_free_memory();
}

/// Returns free heap memory to the system (glibc's `malloc_trim`): called on the thread
/// that reloads, after a reload frees a zone set, never on a worker.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own heaps and takes its own locks; it touches
    // no memory of ours and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
