//! A zone file or text to a [`Zone`] in one call: [`scan`](crate::scan) reads the records,
//! [`db`](crate::db) builds and checks the zone. The one module that uses both, so that
//! `db` depends on `scan` (for its records and diagnostics) and never the other way.

use crate::db::Zone;
use crate::error::Error;
use crate::scan::{scan_file, scan_text, Diag, ScanOptions};
use std::path::Path;

/// Scans, checks and builds a zone from text; `label` names it in diagnostics.
pub fn load_zone_text(
    text: &[u8],
    label: &Path,
    opts: &ScanOptions,
) -> Result<(Zone, Vec<Diag>), Error> {
    let scanned = scan_text(text, label, opts)?;
    Zone::build(opts.origin.clone(), scanned)
}

/// Reads, scans, checks and builds a zone (the file is read as [`scan_file`] reads it).
pub fn load_zone_file(path: &Path, opts: &ScanOptions) -> Result<(Zone, Vec<Diag>), Error> {
    let scanned = scan_file(path, opts)?;
    Zone::build(opts.origin.clone(), scanned)
}
