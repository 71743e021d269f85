//! Reading zone files from disk.

use super::{scan_text, Diag, ScanOptions, Scanned};
use crate::error::Error;
use std::path::Path;

/// A FIFO would block the reader in open() until some writer appears, and a device such as
/// /dev/zero would be read until memory runs out: zone files and `$INCLUDE`d files must be
/// regular files.
fn check_regular(path: &Path) -> std::io::Result<()> {
    let m = std::fs::metadata(path)?;
    if m.is_file() {
        Ok(())
    } else if m.is_dir() {
        Err(std::io::Error::other("a directory, not a zone file"))
    } else {
        Err(std::io::Error::other(
            "not a regular file (a FIFO, socket or device)",
        ))
    }
}

/// Reads and scans a zone file.
pub fn scan_file(path: &Path, opts: &ScanOptions) -> Result<Scanned, Error> {
    let text = read_file(path, opts.threads).map_err(|e| Error::Invalid {
        errors: vec![Diag {
            file: path.into(),
            line: 0,
            message: format!("cannot read: {e}"),
        }],
    })?;
    let mut scanned = scan_text(&text, path, opts)?;
    scanned.text = text;
    Ok(scanned)
}

/// Reads a whole file; a big one in parts on `threads` threads, since copying the data
/// and mapping fresh pages for it is a good part of the time to load a big zone.
/// Only a regular file (or a symlink to one) is read: see [`check_regular`].
pub(crate) fn read_file(path: &Path, threads: usize) -> std::io::Result<Vec<u8>> {
    check_regular(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        const MIN_PART: u64 = 8 << 20;
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        let parts = (threads as u64).min(len / MIN_PART);
        if parts >= 2 {
            if let Ok(len) = usize::try_from(len) {
                // Zeroed pages are mapped on first write, by the thread that reads into them.
                let mut buf = vec![0u8; len];
                let part = len.div_ceil(parts as usize);
                let ok = std::thread::scope(|s| {
                    let handles: Vec<_> = buf
                        .chunks_mut(part)
                        .enumerate()
                        .map(|(i, piece)| {
                            let file = &file;
                            std::thread::Builder::new().spawn_scoped(s, move || {
                                file.read_exact_at(piece, (i * part) as u64).is_ok()
                            })
                        })
                        .collect();
                    // Every part must have been read (a failed spawn reads nothing).
                    handles
                        .into_iter()
                        .all(|h| h.is_ok_and(|h| h.join().unwrap_or(false)))
                });
                // The file must not have changed length meanwhile.
                if ok && file.read_at(&mut [0u8], len as u64)? == 0 {
                    return Ok(buf);
                }
            }
        }
    }
    let _ = threads;
    std::fs::read(path)
}
