//! Entries to records: directives, owner, TTL, class, type and rdata of each entry.
//!
//! A [`Worker`] scans one region of one text into its own [`Records`], keeping going after
//! an error (every error is reported; the entry in error is skipped). Owners and rdata go
//! back to back into one buffer; a repeated owner reuses the stored one, and the token list
//! is reused from entry to entry, so a record costs no allocation of its own.

use super::lex::{show, Entry, Lexer};
use super::{Diag, Item, Records, ScanOptions};
use shardns_wire::name::NameBuf;
use shardns_wire::text::Token;
use shardns_wire::{rdata, Class, NameRef, RType};
use std::path::{Path, PathBuf};

/// Deepest `$INCLUDE` nesting.
pub(super) const MAX_INCLUDE_DEPTH: usize = 8;
/// Largest TTL (RFC 2181 §8).
const MAX_TTL: u64 = (1 << 31) - 1;

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

/// Parses a domain name token (`@` is the origin).
fn parse_name(t: &[u8], origin: NameRef<'_>) -> Result<NameBuf, String> {
    let mut n = NameBuf::new();
    parse_name_into(t, origin, &mut n)?;
    Ok(n)
}

/// [`parse_name`] into a caller's buffer.
fn parse_name_into(t: &[u8], origin: NameRef<'_>, n: &mut NameBuf) -> Result<(), String> {
    if t == b"@" {
        n.set(origin);
        return Ok(());
    }
    n.parse_text(t, Some(origin))
        .map_err(|e| format!("bad domain name \"{}\": {e}", show(t)))
}

/// Parses a TTL: seconds, or numbers with units `s m h d w` in any case (`1h30m`, `2W`).
pub(super) fn parse_ttl(t: &[u8]) -> Result<u32, String> {
    let bad = || format!("bad TTL \"{}\"", show(t));
    let range = || {
        format!(
            "TTL \"{}\" out of range (at most {MAX_TTL} seconds)",
            show(t)
        )
    };
    let mut total: u64 = 0;
    let mut num: u64 = 0;
    let mut digits = false;
    let mut units = false;
    if t.is_empty() {
        return Err(bad());
    }
    for &c in t {
        if c.is_ascii_digit() {
            num = num * 10 + u64::from(c - b'0');
            if num > MAX_TTL {
                return Err(range());
            }
            digits = true;
            continue;
        }
        let unit = match c | 0x20 {
            b's' => 1,
            b'm' => 60,
            b'h' => 3600,
            b'd' => 86400,
            b'w' => 604800,
            _ => return Err(bad()),
        };
        if !digits {
            return Err(bad());
        }
        total += num * unit;
        if total > MAX_TTL {
            return Err(range());
        }
        num = 0;
        digits = false;
        units = true;
    }
    if digits && units {
        // `1h30`: after a unit, every number needs one too.
        return Err(bad());
    }
    total += num;
    if total > MAX_TTL {
        return Err(range());
    }
    Ok(total as u32)
}

/// The type named by a token: a fast path for the common mnemonics, then the full table.
fn rtype_of(t: &[u8]) -> Option<RType> {
    let mut up = [0u8; 10];
    if t.len() <= up.len() {
        for (u, &c) in up.iter_mut().zip(t) {
            *u = c.to_ascii_uppercase();
        }
        let fast = match &up[..t.len()] {
            b"A" => Some(RType::A),
            b"AAAA" => Some(RType::AAAA),
            b"TXT" => Some(RType::TXT),
            b"NS" => Some(RType::NS),
            b"MX" => Some(RType::MX),
            b"CNAME" => Some(RType::CNAME),
            b"PTR" => Some(RType::PTR),
            b"SOA" => Some(RType::SOA),
            b"SRV" => Some(RType::SRV),
            b"DS" => Some(RType::DS),
            b"RRSIG" => Some(RType::RRSIG),
            b"NSEC" => Some(RType::NSEC),
            b"DNSKEY" => Some(RType::DNSKEY),
            _ => None,
        };
        if fast.is_some() {
            return fast;
        }
    }
    RType::from_text(core::str::from_utf8(t).ok()?)
}

/// Whether a token is a class: `Some(Ok)` for IN, `Some(Err)` for another class.
fn class_of(t: &[u8]) -> Option<Result<Class, Class>> {
    if t.eq_ignore_ascii_case(b"IN") {
        return Some(Ok(Class::IN));
    }
    let c = Class::from_text(core::str::from_utf8(t).ok()?)?;
    Some(if c == Class::IN { Ok(c) } else { Err(c) })
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

/// Where an include chain stands.
pub(super) struct Includes {
    /// Canonical paths of the files being read, outermost first.
    pub(super) stack: Vec<PathBuf>,
    /// Whether `$INCLUDE` may be followed (not in a parallel region).
    pub(super) allowed: bool,
    /// Set when a region met `$INCLUDE` while not allowed: the caller reads sequentially.
    pub(super) refused: bool,
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

    /// Gives back unused capacity.
    pub(super) fn finish(&mut self) {
        self.records.bytes.shrink_to_fit();
        self.records.items.shrink_to_fit();
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

        // TTL: explicit, else $TTL, else the last explicit one, else the default.
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
                        ttl_error = Some((entry.line, NO_TTL.to_string()));
                        0
                    }
                },
            },
        };

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

/// The message for a record with no TTL to use.
pub(super) const NO_TTL: &str = "no TTL for this record: give one, or a $TTL before it";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_units_and_range() {
        assert_eq!(parse_ttl(b"3600"), Ok(3600));
        assert_eq!(parse_ttl(b"1h30m"), Ok(5400));
        assert_eq!(parse_ttl(b"1H30M"), Ok(5400));
        assert_eq!(parse_ttl(b"2w"), Ok(1_209_600));
        assert_eq!(parse_ttl(b"1d"), Ok(86400));
        assert_eq!(parse_ttl(b"1d2h3m4s"), Ok(86400 + 7200 + 180 + 4));
        assert_eq!(parse_ttl(b"0"), Ok(0));
        assert_eq!(parse_ttl(b"2147483647"), Ok(2_147_483_647));
        assert!(parse_ttl(b"2147483648")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_ttl(b"99999999999999999999")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_ttl(b"4000w").unwrap_err().contains("out of range"));
        assert_eq!(parse_ttl(b"9x").unwrap_err(), "bad TTL \"9x\"");
        assert!(parse_ttl(b"h").is_err());
        assert!(parse_ttl(b"1hh").is_err());
        assert!(parse_ttl(b"1h30").is_err());
        assert!(parse_ttl(b"0h30").is_err());
        assert!(parse_ttl(b"").is_err());
    }

    #[test]
    fn type_and_class_tokens() {
        assert_eq!(rtype_of(b"aaaa"), Some(RType::AAAA));
        assert_eq!(rtype_of(b"TYPE65280"), Some(RType(65280)));
        assert_eq!(rtype_of(b"NSEC3PARAM"), Some(RType::NSEC3PARAM));
        assert_eq!(rtype_of(b"AAAAA"), None);
        assert_eq!(rtype_of(b"\xff"), None);
        assert_eq!(class_of(b"in"), Some(Ok(Class::IN)));
        assert_eq!(class_of(b"CLASS1"), Some(Ok(Class::IN)));
        assert_eq!(class_of(b"CH"), Some(Err(Class::CH)));
        assert_eq!(class_of(b"A"), None);
    }
}
