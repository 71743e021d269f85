//! `$INCLUDE` (RFC 1035 §5.1): reading the included file into the same records, with a
//! depth limit and loop detection by canonical path. This reads files.

use super::lex::show;
use super::parse::{Error, State, Worker};
use shardns_wire::name::NameBuf;
use std::path::PathBuf;

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

impl Worker<'_> {
    /// Follows `$INCLUDE`: the included file starts with `origin` and the current TTL state;
    /// whatever it changes ($ORIGIN, $TTL, the owner) ends with it.
    pub(super) fn include(
        &mut self,
        from: u16,
        line: u32,
        name: &[u8],
        origin: Box<NameBuf>,
        state: &State,
        depth: usize,
    ) -> Result<(), Error> {
        let shown = show(name);
        if depth >= MAX_INCLUDE_DEPTH {
            return Err((
                line,
                format!("$INCLUDE \"{shown}\": nested more than {MAX_INCLUDE_DEPTH} deep"),
            ));
        }
        let rel = PathBuf::from(String::from_utf8_lossy(name).into_owned());
        let path = match self.files[from as usize].parent() {
            Some(dir) if rel.is_relative() => dir.join(&rel),
            _ => rel,
        };
        let canonical = std::fs::canonicalize(&path).map_err(|e| {
            (
                line,
                format!("$INCLUDE: cannot read \"{}\": {e}", path.display()),
            )
        })?;
        if self.includes.stack.contains(&canonical) {
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
        let index = u16::try_from(self.files.len()).map_err(|_| {
            (
                line,
                format!("$INCLUDE \"{}\": too many files", path.display()),
            )
        })?;
        self.files.push(path);
        self.includes.stack.push(canonical);
        let mut inner = State {
            origin: *origin,
            origin_gen: state.origin_gen.wrapping_add(1),
            dollar_ttl: state.dollar_ttl,
            last_ttl: state.last_ttl,
        };
        self.scan(&text, index, (0, text.len(), 1), &mut inner, depth + 1);
        self.includes.stack.pop();
        Ok(())
    }
}
