//! Zone-file scanning (RFC 1035 §5): text in, compact records out, every error with its
//! file and line. Semantic checks that need the whole zone live in `db`.
//!
//! `file` reads zone files from disk, `lex` splits text into entries and tokens, `parse`
//! turns entries into records and applies directives, `fields` reads a name, TTL, type or
//! class token, `include` follows `$INCLUDE`, `split` scans one big text on several threads.
//!
//! Supported: `$ORIGIN`, `$TTL`, `$INCLUDE file [origin]` (relative to the including file,
//! at most 8 deep, no loops), `@`, relative names, omitted owner, TTL and class (TTL and
//! class in either order), parentheses, comments, quoted strings, `\X` and `\DDD` escapes,
//! TTL units (`1h30m`), class IN only, RFC 3597 `TYPEn` and `\# len hex`. A zone with an
//! error is rejected and every error is reported; records outside the zone are skipped with
//! a warning.
//!
//! This module does I/O, which no other module of the crate does, and starts threads.
//! [`scan_file`] reads the file (a regular file only; a big one in
//! parts on `ScanOptions::threads` threads); `$INCLUDE` reads the included file, from
//! [`scan_text`] too, which also looks up the canonical path of its `file` argument to
//! catch include loops. A big text is scanned on `ScanOptions::threads` threads (see
//! `split`), with the same result as a sequential scan; `$INCLUDE` is followed only by the
//! sequential scan. Every thread is scoped and joined before the call returns. No sockets,
//! clocks or locks.
//!
//! Never: allocation per record (records go back to back into a few buffers, and the
//! tokens of an entry borrow the text).

mod fields;
mod file;
mod include;
mod lex;
mod parse;
mod split;

pub use crate::error::Diag;
use crate::error::Error;
use file::read_file;
pub use file::scan_file;
use parse::{State, Worker};
use shardns_wire::{Class, Name, NameRef, RType};
use std::path::{Path, PathBuf};

/// How to read a zone file.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// The initial `$ORIGIN` (the zone's apex).
    pub origin: Name,
    /// TTL for records before any `$TTL` or explicit TTL; `None` makes that an error.
    pub default_ttl: Option<u32>,
    /// Threads to parse with (1 = sequential).
    pub threads: usize,
}

impl ScanOptions {
    /// Defaults for a zone at `origin`.
    pub fn new(origin: Name) -> Self {
        Self {
            origin,
            default_ttl: Some(3600),
            threads: 1,
        }
    }
}

/// One record in a [`Records`] chunk; owner and rdata are offsets into its `bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// Offset of the owner's wire form in `bytes`.
    pub owner: u32,
    /// Offset of the rdata in `bytes`.
    pub rdata: u32,
    /// Rdata length.
    pub rdlen: u16,
    /// Index into [`Scanned::files`].
    pub file: u16,
    /// Type.
    pub rtype: RType,
    /// Class.
    pub class: Class,
    /// TTL.
    pub ttl: u32,
    /// Line where the record starts (1-based).
    pub line: u32,
}

/// Records in compact form: owner names and rdata back to back in one buffer, so a
/// million-record zone costs a few allocations, not millions.
#[derive(Debug, Default, Clone)]
pub struct Records {
    /// Owner names (wire form) and rdata.
    pub bytes: Vec<u8>,
    /// The records, in file order.
    pub items: Vec<Item>,
}

impl Records {
    /// The owner of `item`.
    pub fn owner(&self, item: &Item) -> NameRef<'_> {
        NameRef::from_wire_prefix(&self.bytes[item.owner as usize..])
            .expect("scanner stores valid names")
            .0
    }
    /// The rdata of `item`.
    pub fn rdata(&self, item: &Item) -> &[u8] {
        &self.bytes[item.rdata as usize..item.rdata as usize + item.rdlen as usize]
    }
}

/// What the scanner read.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Record chunks (one per parsing thread), in file order.
    pub chunks: Vec<Records>,
    /// The files read: the zone file first, then `$INCLUDE`d ones.
    pub files: Vec<PathBuf>,
    /// Warnings (records outside the zone, skipped).
    pub warnings: Vec<Diag>,
    /// The text [`scan_file`] read, nothing else reads it: held so that it is freed with
    /// the records (for a big zone on another thread, by [`crate::Zone::build`]), not
    /// between the scan and the build. Empty from any other scan.
    pub text: Vec<u8>,
}

/// Scans zone text; `file` names it in diagnostics and anchors relative `$INCLUDE` paths.
pub fn scan_text(text: &[u8], file: &Path, opts: &ScanOptions) -> Result<Scanned, Error> {
    scan_text_split(text, file, opts, MIN_REGION)
}

/// Smallest region worth a thread of its own.
const MIN_REGION: usize = 1 << 20;

/// [`scan_text`] with the smallest region size as a parameter (tests split small texts).
fn scan_text_split(
    text: &[u8],
    file: &Path,
    opts: &ScanOptions,
    min_region: usize,
) -> Result<Scanned, Error> {
    // A UTF-8 byte order mark is not part of the zone.
    let start = if text.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    if opts.threads > 1 {
        if let Some(m) = split::scan(text, start, file, opts, opts.threads, min_region) {
            return result(m.chunks, vec![file.to_path_buf()], m.errors, m.warnings);
        }
    }
    let mut w = Worker::new(opts, file, text.len(), true);
    let mut state = State::start(opts);
    w.scan(text, 0, (start, text.len(), 1), &mut state, 0);
    w.finish();
    result(vec![w.records], w.files, w.errors, w.warnings)
}

fn result(
    chunks: Vec<Records>,
    files: Vec<PathBuf>,
    errors: Vec<Diag>,
    warnings: Vec<Diag>,
) -> Result<Scanned, Error> {
    if errors.is_empty() {
        Ok(Scanned {
            chunks,
            files,
            warnings,
            text: Vec::new(),
        })
    } else {
        Err(Error::Invalid { errors })
    }
}

#[cfg(test)]
mod tests;
