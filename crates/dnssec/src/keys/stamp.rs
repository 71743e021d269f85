//! keys::stamp -- what a zone's key files are on disk right now (names, inodes, sizes,
//! change times), cheap to read, so that a caller holding keys it loaded can tell whether
//! loading them again would give anything else.

use super::{legacy_zone_part, zone_part, KeyStore, PRIVATE_EXTS};
use crate::error::Error;
use shardns_wire::Name;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::MetadataExt;

/// The state of a zone's key files: equal stamps, equal keys (a file added, removed,
/// renamed, rewritten or given other permissions changes it: its inode, size, mtime or
/// ctime moves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFilesStamp(Vec<(OsString, u64, u64, i64, i64, i64, i64)>);

impl KeyStore {
    /// The stamp of `zone`'s key files in the directory (those [`KeyStore::load`] reads, and
    /// those of earlier versions' names, which it takes over).
    pub fn stamp(&self, zone: &Name) -> Result<KeyFilesStamp, Error> {
        let prefixes = [
            format!("K{}+", zone_part(zone.as_ref())),
            format!("K{}+", legacy_zone_part(zone.as_ref())),
        ];
        let ours = |file: &str| {
            prefixes.iter().any(|p| {
                file.len() >= p.len()
                    && file.is_char_boundary(p.len())
                    && file[..p.len()].eq_ignore_ascii_case(p)
            })
        };
        let io = |e| Error::Io(self.dir.clone(), e);
        let mut files = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let Some(file) = name.to_str() else { continue };
            let key_file = file.ends_with(".key")
                || PRIVATE_EXTS
                    .iter()
                    .any(|ext| file.strip_suffix(ext).is_some_and(|f| f.ends_with('.')));
            if !key_file || !ours(file) {
                continue;
            }
            // Followed as `load` reads it (a link's target is what counts).
            let m = fs::metadata(entry.path()).map_err(|e| Error::Io(entry.path(), e))?;
            files.push((
                name,
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ));
        }
        files.sort();
        Ok(KeyFilesStamp(files))
    }
}
