//! Splits zone text into entries and tokens (RFC 1035 §5.1).
//!
//! An entry is one line, or several lines joined by parentheses. Tokens are separated by
//! blanks; `;` starts a comment that runs to the end of the line (also inside parentheses);
//! `"` quotes a token, in which `;`, `(` and blanks are data. Escapes (`\X`, `\DDD`) are
//! left in the tokens for the name and rdata parsers to decode. A quoted string never spans
//! lines, so the only state carried from one line to the next is the parenthesis depth.
//! Never: allocation per token (tokens borrow the text; the token list is the caller's).

use shardns_wire::text::Token;

/// Byte classes of the lexer.
const ORD: u8 = 0;
const BLANK: u8 = 1;
const NEWLINE: u8 = 2;
const COMMENT: u8 = 3;
const OPEN: u8 = 4;
const CLOSE: u8 = 5;
const QUOTE: u8 = 6;
const ESCAPE: u8 = 7;

const CLASS: [u8; 256] = {
    let mut t = [ORD; 256];
    t[b' ' as usize] = BLANK;
    t[b'\t' as usize] = BLANK;
    t[b'\r' as usize] = BLANK;
    t[b'\n' as usize] = NEWLINE;
    t[b';' as usize] = COMMENT;
    t[b'(' as usize] = OPEN;
    t[b')' as usize] = CLOSE;
    t[b'"' as usize] = QUOTE;
    t[b'\\' as usize] = ESCAPE;
    t
};

/// Position of the first `b` in `hay[from..]`, as an index into `hay`.
///
/// Compares 32 bytes per step without an early exit inside the step, which the compiler
/// turns into vector compares.
pub(super) fn find_byte(hay: &[u8], from: usize, b: u8) -> Option<usize> {
    let mut i = from;
    while i + 32 <= hay.len() {
        let block = &hay[i..i + 32];
        if block.iter().fold(false, |acc, &x| acc | (x == b)) {
            return block.iter().position(|&x| x == b).map(|p| i + p);
        }
        i += 32;
    }
    hay.get(i..)?.iter().position(|&x| x == b).map(|p| i + p)
}

/// Bytes of a word equal to `c`, as a mask of high bits; exact up to the first match.
#[inline(always)]
fn eq_mask(w: u64, c: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = w ^ (ONES * u64::from(c));
    x.wrapping_sub(ONES) & !x & (ONES << 7)
}

/// Possible ends of an unquoted token in a word: blanks, line ends and other bytes below
/// `#` (`"` among them), `;`, `(`, `)` and `\`. A control byte may be flagged though it
/// is not an end; the caller checks the flagged byte.
#[inline(always)]
fn plain_stop(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let below = w.wrapping_sub(ONES * 0x23) & !w & (ONES << 7);
    below | eq_mask(w, b';') | eq_mask(w, b'(') | eq_mask(w, b')') | eq_mask(w, b'\\')
}

/// Possible ends of a quoted string's run of plain bytes: `"`, `\` and the line end.
#[inline(always)]
fn quoted_stop(w: u64) -> u64 {
    eq_mask(w, b'"') | eq_mask(w, b'\\') | eq_mask(w, b'\n')
}

/// Skips eight bytes at a time while `stop` flags none of them; returns the position of
/// the first byte that may stop (or of the last few bytes, which the caller reads one by
/// one). Tokens are short, so this mostly saves the per-byte branches of a long token.
#[inline(always)]
fn skip_plain(text: &[u8], mut p: usize, stop: impl Fn(u64) -> u64) -> usize {
    while let Some(chunk) = text.get(p..p + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let m = stop(u64::from_le_bytes(word));
        if m != 0 {
            return p + (m.trailing_zeros() / 8) as usize;
        }
        p += 8;
    }
    p
}

/// One entry's place in the text; its tokens are in the caller's list.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    /// Line of the entry's first byte.
    pub(super) line: u32,
    /// Offset of the entry's first byte (a line start).
    pub(super) start: usize,
    /// The line starts with a blank: the owner is the previous record's.
    pub(super) owner_omitted: bool,
    /// The entry has a lexical error, in [`Lexer::error`].
    pub(super) bad: bool,
}

/// A lexical error: the line and the message.
pub(super) type LexError = (u32, String);

/// Reads entries from zone text.
pub(super) struct Lexer<'t> {
    text: &'t [u8],
    /// Offset of the next byte to read; always a line start between entries.
    pub(super) pos: usize,
    /// Line of `pos` (counted from the first line given to [`Lexer::new`]).
    pub(super) line: u32,
    /// The first lexical error of the last entry read.
    pub(super) error: Option<LexError>,
}

impl<'t> Lexer<'t> {
    /// A lexer at `pos`, which must be a line start, numbered `line`.
    pub(super) fn new(text: &'t [u8], pos: usize, line: u32) -> Self {
        Self {
            text,
            pos,
            line,
            error: None,
        }
    }

    /// Reads the next entry that starts before `limit` into `toks`, skipping blank and
    /// comment-only lines. `None` at the end of the text or when the next entry would start
    /// at or after `limit`. A lexical error still consumes the whole entry, so the caller
    /// resumes at the next one; the error is left in [`Lexer::error`].
    #[inline(always)]
    pub(super) fn next_entry(&mut self, toks: &mut Vec<Token<'t>>, limit: usize) -> Option<Entry> {
        let text = self.text;
        let len = text.len();
        loop {
            toks.clear();
            if self.pos >= limit || self.pos >= len {
                return None;
            }
            let start = self.pos;
            let mut entry = Entry {
                line: self.line,
                start,
                owner_omitted: matches!(text[start], b' ' | b'\t'),
                bad: false,
            };
            let mut error: Option<LexError> = None;
            let mut depth = 0u32;
            let mut open_line = 0u32;
            let mut p = start;
            loop {
                let Some(&c) = text.get(p) else {
                    if depth > 0 && error.is_none() {
                        error = Some((
                            open_line,
                            "unbalanced parenthesis: \"(\" is never closed".into(),
                        ));
                    }
                    break;
                };
                match CLASS[c as usize] {
                    BLANK => p += 1,
                    NEWLINE => {
                        p += 1;
                        self.line += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    COMMENT => p = find_byte(text, p, b'\n').unwrap_or(len),
                    OPEN => {
                        if depth == 0 {
                            open_line = self.line;
                        }
                        depth += 1;
                        p += 1;
                    }
                    CLOSE => {
                        if depth == 0 {
                            error.get_or_insert_with(|| {
                                (
                                    self.line,
                                    "unbalanced parenthesis: \")\" without \"(\"".into(),
                                )
                            });
                        } else {
                            depth -= 1;
                        }
                        p += 1;
                    }
                    QUOTE => {
                        p += 1;
                        let s = p;
                        let mut closed = false;
                        loop {
                            p = skip_plain(text, p, quoted_stop);
                            let Some(&c) = text.get(p) else { break };
                            match c {
                                b'"' => {
                                    closed = true;
                                    break;
                                }
                                b'\n' => break,
                                b'\\' if text.get(p + 1).is_some_and(|&n| n != b'\n') => p += 2,
                                _ => p += 1,
                            }
                        }
                        let p_end = p.min(len);
                        toks.push(Token {
                            text: &text[s..p_end],
                            quoted: true,
                        });
                        if closed {
                            p += 1;
                        } else {
                            error.get_or_insert_with(|| {
                                (
                                    self.line,
                                    format!(
                                        "unterminated quoted string \"{}: no closing quote on the line",
                                        show(&text[s..p_end])
                                    ),
                                )
                            });
                        }
                    }
                    _ => {
                        let s = p;
                        loop {
                            p = skip_plain(text, p, plain_stop);
                            let Some(&c) = text.get(p) else { break };
                            match CLASS[c as usize] {
                                ORD => p += 1,
                                ESCAPE => {
                                    p += 1;
                                    // An escape never swallows the line end.
                                    if text.get(p).is_some_and(|&n| n != b'\n') {
                                        p += 1;
                                    }
                                }
                                _ => break,
                            }
                        }
                        toks.push(Token::plain(&text[s..p]));
                    }
                }
            }
            self.pos = p;
            if toks.is_empty() && error.is_none() {
                continue;
            }
            entry.bad = error.is_some();
            self.error = error;
            return Some(entry);
        }
    }

    /// The line of a token of `entry` (tokens borrow the text, so their place is known).
    pub(super) fn line_of(&self, entry: &Entry, tok: &Token<'_>) -> u32 {
        let at = (tok.text.as_ptr() as usize).checked_sub(self.text.as_ptr() as usize);
        match at {
            Some(at) if at >= entry.start && at <= self.text.len() => {
                entry.line
                    + self.text[entry.start..at]
                        .iter()
                        .filter(|&&c| c == b'\n')
                        .count() as u32
            }
            _ => entry.line,
        }
    }
}

/// A token for a message: lossy UTF-8, control characters and long tails cut.
pub(super) fn show(t: &[u8]) -> String {
    const MAX: usize = 64;
    let cut = &t[..t.len().min(MAX)];
    let mut s: String = String::from_utf8_lossy(cut)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if t.len() > MAX {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(u32, bool, Vec<String>, Option<LexError>)> {
        let mut lx = Lexer::new(text.as_bytes(), 0, 1);
        let mut toks = Vec::new();
        let mut out = Vec::new();
        while let Some(e) = lx.next_entry(&mut toks, usize::MAX) {
            let err = lx.error.take();
            let t = toks
                .iter()
                .map(|t| {
                    let s = String::from_utf8_lossy(t.text).into_owned();
                    if t.quoted {
                        format!("\"{s}\"")
                    } else {
                        s
                    }
                })
                .collect();
            out.push((e.line, e.owner_omitted, t, err));
        }
        out
    }

    #[test]
    fn tokens_comments_parens_quotes() {
        let e = entries("a 1 IN A 1.2.3.4 ; c\n\n  ; only a comment\n\tB\n");
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].2, ["a", "1", "IN", "A", "1.2.3.4"]);
        assert_eq!((e[1].0, e[1].1), (4, true));
        let e =
            entries("@ SOA a b ( 1 ; serial ( not a paren\n 2 3\n 4 5 )\nx TXT \"a;b (c\" d\\;e\n");
        assert_eq!(e[0].2, ["@", "SOA", "a", "b", "1", "2", "3", "4", "5"]);
        assert_eq!(e[1].0, 4);
        assert_eq!(e[1].2, ["x", "TXT", "\"a;b (c\"", "d\\;e"]);
        let e = entries("x TXT \"q\\\"x\"\"\" y\r\nz A 1");
        assert_eq!(e[0].2, ["x", "TXT", "\"q\\\"x\"", "\"\"", "y"]);
        assert_eq!(e[1].2, ["z", "A", "1"]);
        assert_eq!(e[1].0, 2);
    }

    #[test]
    fn lexical_errors_resync() {
        let e = entries("a ) b\nc \"open\nd (\ne\n");
        assert!(e[0].3.as_ref().unwrap().1.contains("unbalanced"));
        assert_eq!(e[1].3.as_ref().unwrap().0, 2);
        assert!(e[1].3.as_ref().unwrap().1.contains("unterminated"));
        assert_eq!(e[2].3.as_ref().unwrap().0, 3);
        assert_eq!(e[2].2, ["d", "e"]);
    }

    #[test]
    fn limit_and_line_of() {
        let text = b"a A 1\n\nb ( A\n 2 )\nc A 3\n";
        let mut lx = Lexer::new(text, 0, 1);
        let mut toks = Vec::new();
        assert!(lx.next_entry(&mut toks, 7).is_some());
        assert!(lx.next_entry(&mut toks, 7).is_none());
        assert_eq!(lx.pos, 7);
        let e = lx.next_entry(&mut toks, usize::MAX).unwrap();
        assert_eq!(lx.line_of(&e, &toks[2]), 4);
        assert_eq!(lx.pos, 18);
    }

    #[test]
    fn find_byte_long_and_short() {
        let mut v = vec![b'x'; 100];
        assert_eq!(find_byte(&v, 0, b'$'), None);
        v[77] = b'$';
        assert_eq!(find_byte(&v, 0, b'$'), Some(77));
        assert_eq!(find_byte(&v, 78, b'$'), None);
        assert_eq!(find_byte(&v, 200, b'$'), None);
    }
}
