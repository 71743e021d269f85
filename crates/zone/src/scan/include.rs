//! `$INCLUDE` (RFC 1035 §5.1): the chain of files being read ([`Includes`]) and opening the
//! next one ([`Includes::open`]: its path relative to the including file, the depth limit,
//! loop detection by canonical path, reading it). Scanning it into the same records is the
//! worker's (`parse`). This reads files.

use super::lex::show;
use std::path::{Path, PathBuf};

/// Deepest `$INCLUDE` nesting.
pub(super) const MAX_INCLUDE_DEPTH: usize = 8;

/// Where an include chain stands.
pub(super) struct Includes {
    /// Canonical paths of the files being read, outermost first.
    pub(super) stack: Vec<PathBuf>,
    /// Whether `$INCLUDE` may be followed (not in a parallel region).
    pub(super) allowed: bool,
    /// Set when a region met `$INCLUDE` while not allowed: the caller reads sequentially.
    pub(super) refused: bool,
}

/// A file `$INCLUDE` opened: its path as named, its canonical path and its text.
pub(super) struct Opened {
    pub(super) path: PathBuf,
    pub(super) canonical: PathBuf,
    pub(super) text: Vec<u8>,
}

impl Includes {
    /// Opens the file `$INCLUDE name` names at `line` of `including`, at include depth
    /// `depth`; errors are the scanner's (line, message).
    pub(super) fn open(
        &self,
        including: &Path,
        line: u32,
        name: &[u8],
        depth: usize,
    ) -> Result<Opened, (u32, String)> {
        let shown = show(name);
        if depth >= MAX_INCLUDE_DEPTH {
            return Err((
                line,
                format!("$INCLUDE \"{shown}\": nested more than {MAX_INCLUDE_DEPTH} deep"),
            ));
        }
        let rel = PathBuf::from(String::from_utf8_lossy(name).into_owned());
        let path = match including.parent() {
            Some(dir) if rel.is_relative() => dir.join(&rel),
            _ => rel,
        };
        let canonical = std::fs::canonicalize(&path).map_err(|e| {
            (
                line,
                format!("$INCLUDE: cannot read \"{}\": {e}", path.display()),
            )
        })?;
        if self.stack.contains(&canonical) {
            return Err((
                line,
                format!(
                    "$INCLUDE \"{}\": include loop (the file is already being read)",
                    path.display()
                ),
            ));
        }
        let text = super::read_file(&path, 1).map_err(|e| {
            (
                line,
                format!("$INCLUDE: cannot read \"{}\": {e}", path.display()),
            )
        })?;
        Ok(Opened {
            path,
            canonical,
            text,
        })
    }
}
