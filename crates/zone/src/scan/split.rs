//! Scanning one zone file on several threads.
//!
//! A cheap pre-pass picks split points: line starts near equal fractions of the text whose
//! first byte begins an owner name. Finding the `$` that start lines gives the `$ORIGIN` and
//! `$TTL` in force at each split point (a `$INCLUDE` anywhere sends the whole file to the
//! sequential scanner). Each region is then scanned on its own thread into its own records.
//!
//! The pre-pass guesses; the scan checks. A split point is right only if the region before
//! it ended exactly there (so it was not inside parentheses) with the same origin and `$TTL`
//! the pre-pass gave the next region. If any check fails, the caller scans sequentially,
//! so the result never depends on the guess. What a region cannot know (its first line
//! number, and the last explicit TTL before it for records that fall back to it) is fixed
//! up in file order after all regions are read.

use super::lex::{find_byte, Entry, Lexer};
use super::parse::{directive, LastTtl, State, Worker, NO_TTL};
use super::{Diag, Records, ScanOptions};
use std::path::Path;

/// What the regions produced, merged.
pub(super) struct Merged {
    pub(super) chunks: Vec<Records>,
    pub(super) errors: Vec<Diag>,
    pub(super) warnings: Vec<Diag>,
}

/// One region's result.
struct Region<'o> {
    worker: Worker<'o>,
    state: State,
    /// Where the scan stopped.
    end: usize,
    /// Newlines read.
    lines: u32,
}

/// A line start where a region may begin: the line starts with an owner name.
fn owner_line_at(text: &[u8], p: usize) -> bool {
    !matches!(
        text[p],
        b' ' | b'\t' | b'\r' | b'\n' | b'$' | b';' | b'(' | b')' | b'"'
    )
}

/// Scans `text[start..]` on up to `threads` threads, each region at least `min_region`
/// bytes. `None` when the text cannot or should not be split; the caller then scans it
/// sequentially.
pub(super) fn scan(
    text: &[u8],
    start: usize,
    file: &Path,
    opts: &ScanOptions,
    threads: usize,
    min_region: usize,
) -> Option<Merged> {
    let len = text.len();
    let n = threads.min((len - start) / min_region.max(1));
    if n < 2 {
        return None;
    }

    // Split points.
    let starts = split_points(text, start, n)?;

    // The directive state at each split point (`None` for a `$INCLUDE`).
    let states = directive_states(text, start, &starts, opts)?;

    // Scan the regions: the first on this thread, the others on their own.
    let ends: Vec<usize> = starts[1..].iter().copied().chain([len]).collect();
    let run = |k: usize| -> Region<'_> {
        let (from, to) = (starts[k], ends[k]);
        let mut worker = Worker::new(opts, file, to - from, false);
        let mut state = states[k].clone();
        let (end, line) = worker.scan(text, 0, (from, to, 1), &mut state, 0);
        worker.finish();
        Region {
            worker,
            state,
            end,
            lines: line - 1,
        }
    };
    let regions: Vec<Region<'_>> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..starts.len())
            .map(|k| {
                (
                    k,
                    std::thread::Builder::new()
                        .name("scan".into())
                        .spawn_scoped(s, move || run(k)),
                )
            })
            .collect();
        let mut out = vec![run(0)];
        for (k, h) in handles {
            out.push(match h {
                Ok(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
                Err(_) => run(k),
            });
        }
        out
    });

    // Check the guesses.
    if !guesses_hold(&regions, &starts, &states) {
        return None;
    }

    // Merge in file order: line numbers, and the TTLs that depended on earlier regions.
    Some(merge(regions, file, opts))
}

/// Split points for `n` regions of `text[start..]`: line starts near equal fractions of
/// the text whose line begins an owner name, `start` first. `None` if fewer than two.
#[inline]
fn split_points(text: &[u8], start: usize, n: usize) -> Option<Vec<usize>> {
    let len = text.len();
    let mut starts = vec![start];
    for k in 1..n {
        let target = (start + (len - start) * k / n).max(starts[starts.len() - 1] + 1);
        let mut p = target;
        if text[p - 1] != b'\n' {
            p = find_byte(text, p, b'\n').map_or(len, |nl| nl + 1);
        }
        while p < len && !owner_line_at(text, p) {
            p = find_byte(text, p, b'\n').map_or(len, |nl| nl + 1);
        }
        if p >= len {
            break;
        }
        starts.push(p);
    }
    if starts.len() < 2 {
        return None;
    }
    Some(starts)
}

/// The directive state (`$ORIGIN`, `$TTL`) in force at each split point of `starts`, from
/// the directive lines before the last one; `None` if one of them is `$INCLUDE`.
#[inline]
fn directive_states(
    text: &[u8],
    start: usize,
    starts: &[usize],
    opts: &ScanOptions,
) -> Option<Vec<State>> {
    // Directive lines before the last split point, in order: they give each region's
    // starting state; the last region's own are read by its scan, so the text after that
    // point is not searched here (for a big zone, milliseconds of this thread's time
    // before any region starts). `$INCLUDE` needs the sequential scanner: one found here
    // says so before scanning, one in the last region by its scan (`includes.refused`).
    let limit = starts[starts.len() - 1];
    let mut directives = Vec::new();
    let mut i = start;
    while let Some(p) = find_byte(&text[..limit], i, b'$') {
        if p == start || text[p - 1] == b'\n' {
            if text
                .get(p + 1..p + 8)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"INCLUDE"))
            {
                return None;
            }
            directives.push(p);
        }
        i = p + 1;
    }

    // The directive state at each split point.
    let len = text.len();
    let mut state = State::start(opts);
    let mut states = vec![state.clone()];
    let mut toks = Vec::new();
    let mut d = directives.iter().peekable();
    for &s in &starts[1..] {
        while let Some(&p) = d.next_if(|&&p| p < s) {
            let mut lx = Lexer::new(text, p, 1);
            if let Some(entry @ Entry { bad: false, .. }) = lx.next_entry(&mut toks, len) {
                let _ = directive(&lx, &entry, &toks, &mut state);
            }
        }
        states.push(State {
            origin: state.origin.clone(),
            origin_gen: 0,
            dollar_ttl: state.dollar_ttl,
            last_ttl: LastTtl::Unknown,
        });
    }
    Some(states)
}

/// True if each region ended where the next one starts, with the origin and `$TTL` the
/// pre-pass gave the next one, and none met `$INCLUDE`.
#[inline]
fn guesses_hold(regions: &[Region<'_>], starts: &[usize], states: &[State]) -> bool {
    for (k, r) in regions.iter().enumerate() {
        if r.worker.includes.refused {
            return false;
        }
        if let Some(next) = states.get(k + 1) {
            let same = r.end == starts[k + 1]
                && r.state.origin.as_ref().as_wire() == next.origin.as_ref().as_wire()
                && r.state.dollar_ttl == next.dollar_ttl;
            if !same {
                return false;
            }
        }
    }
    true
}

/// The regions' results merged in file order: line numbers, and the TTLs that depended on
/// earlier regions.
#[inline]
fn merge(regions: Vec<Region<'_>>, file: &Path, opts: &ScanOptions) -> Merged {
    let mut merged = Merged {
        chunks: Vec::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let mut base = 0u32;
    let mut carry: Option<u32> = None;
    for r in regions {
        let Worker {
            mut records,
            errors,
            warnings,
            pending_ttl,
            ..
        } = r.worker;
        let mut ttl_errors = Vec::new();
        for (index, line) in pending_ttl {
            match carry.or(opts.default_ttl) {
                Some(t) => {
                    if let Some(i) = index {
                        records.items[i as usize].ttl = t;
                    }
                }
                None => ttl_errors.push(Diag {
                    file: file.to_path_buf(),
                    line,
                    message: NO_TTL.into(),
                }),
            }
        }
        if base > 0 {
            for item in &mut records.items {
                item.line += base;
            }
        }
        // Both lists are in line order; on the same line the TTL error comes first, as in
        // the sequential scan.
        let mut errors = errors.into_iter().peekable();
        for t in ttl_errors {
            while let Some(e) = errors.next_if(|e| e.line < t.line) {
                merged.errors.push(Diag {
                    line: e.line + base,
                    ..e
                });
            }
            merged.errors.push(Diag {
                line: t.line + base,
                ..t
            });
        }
        merged.errors.extend(errors.map(|e| Diag {
            line: e.line + base,
            ..e
        }));
        merged.warnings.extend(warnings.into_iter().map(|w| Diag {
            line: w.line + base,
            ..w
        }));
        merged.chunks.push(records);
        if let LastTtl::Known(Some(t)) = r.state.last_ttl {
            carry = Some(t);
        }
        base += r.lines;
    }
    merged
}
