//! Entries to records: directives, owner, TTL, class, type and rdata of each entry (the
//! tokens are read by `fields`; the file `$INCLUDE` names is opened by `include` and
//! scanned here, into the same records).
//!
//! A [`Worker`] scans one region of one text into its own [`Records`], keeping going after
//! an error (every error is reported; the entry in error is skipped). Owners and rdata go
//! back to back into one buffer; a repeated owner reuses the stored one, and the token list
//! is reused from entry to entry, so a record costs no allocation of its own.

use super::fields::{class_of, parse_name, parse_name_into, parse_ttl, rtype_of};
use super::include::{Includes, Opened};
use super::lex::{show, Entry, Lexer};
use super::{Diag, Item, Records, ScanOptions};
use shardns_wire::name::NameBuf;
use shardns_wire::text::Token;
use shardns_wire::{rdata, Class, NameRef, RType};
use std::path::{Path, PathBuf};

/// The last explicit TTL seen, which an entry without a TTL falls back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LastTtl {
    /// Known: `None` when no record so far had one.
    Known(Option<u32>),
    /// Not known: this region starts in the middle of the file, and the region before it
    /// has not been read yet. Records that need it are resolved after all regions are read.
    Unknown,
}

/// The directive state that carries from one entry to the next.
#[derive(Debug, Clone)]
pub(super) struct State {
    /// The current `$ORIGIN`.
    pub(super) origin: NameBuf,
    /// Bumped when `origin` changes, so an owner token can be compared to the last one.
    pub(super) origin_gen: u32,
    /// The current `$TTL`.
    pub(super) dollar_ttl: Option<u32>,
    /// The last explicit TTL.
    pub(super) last_ttl: LastTtl,
}

impl State {
    /// The state at the top of a zone file.
    pub(super) fn start(opts: &ScanOptions) -> Self {
        let mut origin = NameBuf::new();
        origin.set(opts.origin.as_ref());
        Self {
            origin,
            origin_gen: 0,
            dollar_ttl: None,
            last_ttl: LastTtl::Known(None),
        }
    }
}

/// An error in an entry: line and message.
pub(super) type Error = (u32, String);

/// What a directive asks of the caller.
pub(super) enum Directive<'t> {
    /// Applied to the state.
    Done,
    /// `$INCLUDE file [origin]`.
    Include {
        file: &'t [u8],
        origin: Box<NameBuf>,
    },
}

/// Applies the directive in `toks` (the first token starts with `$`) to `state`.
pub(super) fn directive<'t>(
    lx: &Lexer<'t>,
    entry: &Entry,
    toks: &[Token<'t>],
    state: &mut State,
) -> Result<Directive<'t>, Error> {
    let name = toks[0].text;
    let args = &toks[1..];
    let at = |t: &Token<'_>| lx.line_of(entry, t);
    let arity = |min: usize, max: usize, usage: &str| -> Result<(), Error> {
        if args.len() < min {
            Err((entry.line, format!("{} needs {usage}", show(name))))
        } else if args.len() > max {
            let t = &args[max];
            Err((
                at(t),
                format!("unexpected \"{}\" after {}", show(t.text), show(name)),
            ))
        } else {
            Ok(())
        }
    };
    if name.eq_ignore_ascii_case(b"$ORIGIN") {
        arity(1, 1, "a domain name")?;
        let origin = parse_name(args[0].text, state.origin.as_ref())
            .map_err(|m| (at(&args[0]), format!("$ORIGIN: {m}")))?;
        state.origin = origin;
        state.origin_gen = state.origin_gen.wrapping_add(1);
        Ok(Directive::Done)
    } else if name.eq_ignore_ascii_case(b"$TTL") {
        arity(1, 1, "a TTL")?;
        let t = &args[0];
        state.dollar_ttl = Some(parse_ttl(t.text).map_err(|m| (at(t), format!("$TTL: {m}")))?);
        Ok(Directive::Done)
    } else if name.eq_ignore_ascii_case(b"$INCLUDE") {
        arity(1, 2, "a file name")?;
        let origin = Box::new(match args.get(1) {
            Some(t) => parse_name(t.text, state.origin.as_ref())
                .map_err(|m| (at(t), format!("$INCLUDE: origin: {m}")))?,
            None => state.origin.clone(),
        });
        Ok(Directive::Include {
            file: args[0].text,
            origin,
        })
    } else {
        Err((
            entry.line,
            format!("unknown or unsupported directive \"{}\"", show(name)),
        ))
    }
}

/// The owner of the entries being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OwnerStatus {
    /// No entry had an owner yet.
    None,
    /// In the zone; stored at `Owner::off`.
    Ok,
    /// Outside the zone: its records are skipped with a warning.
    Outside,
    /// Could not be read (already reported): its records are skipped silently.
    Bad,
}

/// The owner of the last entry, and the token it was read from.
struct Owner<'t> {
    status: OwnerStatus,
    /// Offset of the stored owner in the records' bytes.
    off: u32,
    len: u8,
    /// The token and origin it came from: the same token under the same origin is the same name.
    token: &'t [u8],
    origin_gen: u32,
}

/// Scans regions into one [`Records`].
pub(super) struct Worker<'o> {
    pub(super) opts: &'o ScanOptions,
    pub(super) records: Records,
    /// Errors in file order.
    pub(super) errors: Vec<Diag>,
    pub(super) warnings: Vec<Diag>,
    /// Records read while [`LastTtl::Unknown`] that needed the last explicit TTL: the item
    /// index (if the record was stored) and the line.
    pub(super) pending_ttl: Vec<(Option<u32>, u32)>,
    /// The files read; `Item::file` indexes this.
    pub(super) files: Vec<PathBuf>,
    pub(super) includes: Includes,
    /// Scratch space for owner names.
    name: NameBuf,
}

impl<'o> Worker<'o> {
    /// A worker for `file`, expecting about `size` bytes of text.
    pub(super) fn new(
        opts: &'o ScanOptions,
        file: &Path,
        size: usize,
        include_allowed: bool,
    ) -> Self {
        let mut records = Records::default();
        // Untouched capacity costs address space only, not resident memory; `finish`
        // gives back what was not used.
        records.bytes.reserve(size + 64);
        records.items.reserve(size / 24 + 16);
        let stack = if include_allowed {
            vec![std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf())]
        } else {
            Vec::new()
        };
        Self {
            opts,
            records,
            errors: Vec::new(),
            warnings: Vec::new(),
            pending_ttl: Vec::new(),
            files: vec![file.to_path_buf()],
            includes: Includes {
                stack,
                allowed: include_allowed,
                refused: false,
            },
            name: NameBuf::new(),
        }
    }

    fn error(&mut self, file: u16, (line, message): Error) {
        self.errors.push(Diag {
            file: self.files[file as usize].clone(),
            line,
            message,
        });
    }

    /// Gives back unused capacity, when there is much of it.
    pub(super) fn finish(&mut self) {
        // Only a big reserve is given back. A small zone's records live until its build
        // ends; shrinking them in place splits their chunks, and the halves freed later
        // leave a hole per zone that the zone's packed copy, allocated between, does not
        // fit: +26 MiB of heap at 100,000 zones (BENCHMARKS, "Small zones in one
        // allocation, on main").
        const WORTH: usize = 64 << 10;
        let r = &mut self.records;
        if r.bytes.capacity() - r.bytes.len() >= WORTH {
            r.bytes.shrink_to_fit();
        }
        if (r.items.capacity() - r.items.len()) * size_of::<Item>() >= WORTH {
            r.items.shrink_to_fit();
        }
    }

    /// Scans the entries of `text` that start in `start..end` (`start` a line start with
    /// line number `line`), from file `file` at include depth `depth`. Returns where it
    /// stopped and the line there.
    pub(super) fn scan(
        &mut self,
        text: &[u8],
        file: u16,
        (start, end, line): (usize, usize, u32),
        state: &mut State,
        depth: usize,
    ) -> (usize, u32) {
        let mut lx = Lexer::new(text, start, line);
        let mut toks: Vec<Token<'_>> = Vec::with_capacity(32);
        let mut owner = Owner {
            status: OwnerStatus::None,
            off: 0,
            len: 0,
            token: &[],
            origin_gen: 0,
        };
        while let Some(entry) = lx.next_entry(&mut toks, end) {
            if entry.bad {
                if let Some(e) = lx.error.take() {
                    self.error(file, e);
                }
                if !entry.owner_omitted {
                    owner.status = OwnerStatus::Bad;
                    owner.token = &[];
                }
                continue;
            }
            let first = toks[0];
            if !entry.owner_omitted && !first.quoted && first.text.first() == Some(&b'$') {
                match directive(&lx, &entry, &toks, state) {
                    Ok(Directive::Done) => {}
                    Ok(Directive::Include { file: name, origin }) => {
                        if !self.includes.allowed {
                            self.includes.refused = true;
                            return (lx.pos, lx.line);
                        }
                        if let Err(e) = self.include(file, entry.line, name, origin, state, depth) {
                            self.error(file, e);
                        }
                    }
                    Err(e) => self.error(file, e),
                }
                continue;
            }
            if let Err(e) = self.record(&lx, &entry, &toks, file, state, &mut owner) {
                self.error(file, e);
            }
        }
        (lx.pos, lx.line)
    }

    /// Follows `$INCLUDE`: the included file starts with `origin` and the current TTL state;
    /// whatever it changes ($ORIGIN, $TTL, the owner) ends with it.
    fn include(
        &mut self,
        from: u16,
        line: u32,
        name: &[u8],
        origin: Box<NameBuf>,
        state: &State,
        depth: usize,
    ) -> Result<(), Error> {
        let Opened {
            path,
            canonical,
            text,
        } = self
            .includes
            .open(&self.files[from as usize], line, name, depth)?;
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

    /// Reads one record entry: `[owner] [TTL] [CLASS] TYPE RDATA` (TTL and class in
    /// either order).
    fn record<'t>(
        &mut self,
        lx: &Lexer<'t>,
        entry: &Entry,
        toks: &[Token<'t>],
        file: u16,
        state: &mut State,
        owner: &mut Owner<'t>,
    ) -> Result<(), Error> {
        let mut i = 0;
        if entry.owner_omitted {
            match owner.status {
                OwnerStatus::None => {
                    return Err((
                        entry.line,
                        "no owner name: the first record must start with one".into(),
                    ))
                }
                OwnerStatus::Bad => return Ok(()),
                OwnerStatus::Ok | OwnerStatus::Outside => {}
            }
        } else {
            let t = &toks[0];
            i = 1;
            let same = !t.quoted
                && owner.token == t.text
                && owner.origin_gen == state.origin_gen
                && matches!(owner.status, OwnerStatus::Ok | OwnerStatus::Outside);
            if !same {
                self.owner(t, lx, entry, state, owner)?;
            }
        }

        let (ttl, rtype, i) = ttl_class_type(lx, entry, toks, i)?;

        // TTL: explicit, else $TTL, else the last explicit one, else the default.
        let (ttl, ttl_pending, ttl_error) = self.record_ttl(ttl, state, entry.line);

        let bytes = &mut self.records.bytes;
        let rstart = bytes.len();
        let parsed = rdata::from_text(rtype, &toks[i..], state.origin.as_ref(), bytes);
        let rdlen = bytes.len() - rstart;
        let result = match parsed {
            Err(e) => Err((entry.line, format!("{rtype}: {e}"))),
            Ok(()) if rdlen > usize::from(u16::MAX) => Err((
                entry.line,
                format!("{rtype}: rdata is {rdlen} octets long (at most 65535)"),
            )),
            Ok(()) if rstart + rdlen > u32::MAX as usize => {
                Err((entry.line, "zone data too large (over 4 GiB)".into()))
            }
            Ok(()) => Ok(()),
        };
        if let Some(e) = ttl_error {
            self.error(file, e);
        }
        let stored = result.is_ok() && owner.status == OwnerStatus::Ok;
        if !stored {
            self.records.bytes.truncate(rstart);
        }
        let index = self.records.items.len() as u32;
        if ttl_pending {
            self.pending_ttl.push((stored.then_some(index), entry.line));
        }
        result?;
        if owner.status == OwnerStatus::Outside {
            let zone = &self.opts.origin;
            let name =
                NameRef::from_wire(&self.records.bytes[owner.off as usize..][..owner.len as usize]);
            let msg = match name {
                Ok(n) => format!("{n} is outside the zone {zone}; record skipped"),
                Err(_) => format!("owner is outside the zone {zone}; record skipped"),
            };
            self.warnings.push(Diag {
                file: self.files[file as usize].clone(),
                line: entry.line,
                message: msg,
            });
            return Ok(());
        }
        self.records.items.push(Item {
            owner: owner.off,
            rdata: rstart as u32,
            rdlen: rdlen as u16,
            file,
            rtype,
            class: Class::IN,
            ttl,
            line: entry.line,
        });
        Ok(())
    }

    /// A record's TTL: explicit (then the last explicit one from now on), else `$TTL`, else
    /// the last explicit one, else the default. Also whether it waits for an explicit TTL
    /// further on (pending), and the error when there is no TTL at all.
    #[inline]
    fn record_ttl(
        &self,
        ttl: Option<u32>,
        state: &mut State,
        line: u32,
    ) -> (u32, bool, Option<Error>) {
        let mut ttl_pending = false;
        let mut ttl_error = None;
        let ttl = match ttl {
            Some(t) => {
                state.last_ttl = LastTtl::Known(Some(t));
                t
            }
            None => match (state.dollar_ttl, state.last_ttl) {
                (Some(t), _) | (None, LastTtl::Known(Some(t))) => t,
                (None, LastTtl::Unknown) => {
                    ttl_pending = true;
                    0
                }
                (None, LastTtl::Known(None)) => match self.opts.default_ttl {
                    Some(t) => t,
                    None => {
                        ttl_error = Some((line, NO_TTL.to_string()));
                        0
                    }
                },
            },
        };
        (ttl, ttl_pending, ttl_error)
    }

    /// Reads a new owner and stores it (unless it equals the stored one).
    fn owner<'t>(
        &mut self,
        t: &Token<'t>,
        lx: &Lexer<'t>,
        entry: &Entry,
        state: &State,
        owner: &mut Owner<'t>,
    ) -> Result<(), Error> {
        owner.token = t.text;
        owner.origin_gen = state.origin_gen;
        let name = &mut self.name;
        let parsed = if t.quoted {
            Err(format!(
                "bad owner name \"\\\"{}\\\"\": quoted",
                show(t.text)
            ))
        } else {
            parse_name_into(t.text, state.origin.as_ref(), name).map_err(|m| format!("owner: {m}"))
        };
        if let Err(m) = parsed {
            owner.status = OwnerStatus::Bad;
            owner.token = &[];
            return Err((lx.line_of(entry, t), m));
        }
        let wire = name.as_ref().as_wire();
        let bytes = &mut self.records.bytes;
        let prev = &bytes[owner.off as usize..][..owner.len as usize];
        // Out-of-zone owners are kept too (just after the data), only for the warning text.
        if owner.status == OwnerStatus::None || prev != wire {
            owner.off = bytes.len() as u32;
            owner.len = wire.len() as u8;
            bytes.extend_from_slice(wire);
        }
        owner.status = if name.as_ref().ends_with(&self.opts.origin.as_ref()) {
            OwnerStatus::Ok
        } else {
            OwnerStatus::Outside
        };
        Ok(())
    }
}

/// The TTL (if given), class and type of a record entry, in either order, from `toks[i..]`:
/// the TTL, the type, and the index of the first rdata token.
#[inline]
fn ttl_class_type<'t>(
    lx: &Lexer<'t>,
    entry: &Entry,
    toks: &[Token<'t>],
    mut i: usize,
) -> Result<(Option<u32>, RType, usize), Error> {
    let mut ttl = None;
    let mut class = false;
    let rtype = loop {
        let Some(t) = toks.get(i) else {
            let last = &toks[toks.len() - 1];
            return Err((
                lx.line_of(entry, last),
                format!("missing type after \"{}\"", show(last.text)),
            ));
        };
        i += 1;
        if t.quoted {
            return Err((
                lx.line_of(entry, t),
                format!("expected a type, found \"\\\"{}\\\"\"", show(t.text)),
            ));
        }
        if t.text[0].is_ascii_digit() {
            if ttl.is_some() {
                return Err((
                    lx.line_of(entry, t),
                    format!("unexpected \"{}\": TTL given twice", show(t.text)),
                ));
            }
            ttl = Some(parse_ttl(t.text).map_err(|m| (lx.line_of(entry, t), m))?);
            continue;
        }
        // After a class, `ANY` and the like can only be types.
        if let Some(c) = (!class).then(|| class_of(t.text)).flatten() {
            if let Err(c) = c {
                let line = lx.line_of(entry, t);
                return Err((line, format!("class {c} is not supported (only IN)")));
            }
            class = true;
            continue;
        }
        match rtype_of(t.text) {
            Some(r) if r.is_meta() => {
                return Err((
                    lx.line_of(entry, t),
                    format!("type {r} is not allowed in a zone file"),
                ))
            }
            Some(r) => break r,
            None => {
                return Err((
                    lx.line_of(entry, t),
                    format!("unknown type \"{}\"", show(t.text)),
                ))
            }
        }
    };
    Ok((ttl, rtype, i))
}

/// The message for a record with no TTL to use.
pub(super) const NO_TTL: &str = "no TTL for this record: give one, or a $TTL before it";
