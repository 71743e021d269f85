//! Domain names: validated, uncompressed wire-format label sequences.
//!
//! Three forms share one representation (length-prefixed labels ending with the root label):
//! [`NameRef`] borrows, [`Name`] owns on the heap (zone data), [`NameBuf`] owns a fixed
//! 255-octet buffer on the stack (the query path, which must not allocate).
//!
//! Case-insensitive comparison and hashing are our own ASCII byte arithmetic (RFC 4343),
//! never locale-aware. Length bytes are at most 63, below `'A'` (65), so lower-casing the
//! whole wire form lower-cases exactly the label letters.

use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};

/// Longest name in wire form, including length octets and the root label (RFC 1035 §3.1).
pub const MAX_NAME_LEN: usize = 255;
/// Longest label (RFC 1035 §2.3.4).
pub const MAX_LABEL_LEN: usize = 63;
/// Most pointers followed while reading one compressed name.
const MAX_POINTERS: usize = 64;

/// Why a name could not be read or built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name ran past the end of its buffer.
    ShortInput,
    /// A label is longer than 63 octets.
    LabelTooLong,
    /// The name is longer than 255 octets.
    NameTooLong,
    /// A label type other than a plain label or a pointer (RFC 6891 §5 retired the others).
    BadLabelType,
    /// A compression pointer that points forward, at itself, or too many times.
    BadPointer,
    /// An empty label inside a name in presentation format (`a..b`).
    EmptyLabel,
    /// A bad `\` escape in presentation format.
    BadEscape,
    /// A relative name where no origin is known.
    Relative,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ShortInput => "name runs past the end of the data",
            Self::LabelTooLong => "label longer than 63 octets",
            Self::NameTooLong => "name longer than 255 octets",
            Self::BadLabelType => "unknown label type",
            Self::BadPointer => "bad compression pointer",
            Self::EmptyLabel => "empty label",
            Self::BadEscape => "bad escape",
            Self::Relative => "relative name with no origin",
        })
    }
}

impl std::error::Error for NameError {}

/// ASCII lower-case of one octet.
#[inline(always)]
pub const fn lower(b: u8) -> u8 {
    if b.wrapping_sub(b'A') < 26 {
        b | 0x20
    } else {
        b
    }
}

/// Lower-cases the eight ASCII letters packed in a word at once (SWAR).
#[inline(always)]
fn lower8(x: u64) -> u64 {
    const H: u64 = 0x8080_8080_8080_8080;
    let low7 = x & !H;
    // High bit set where the byte is >= 'A' (0x41) and where it is > 'Z' (0x5a).
    let ge_a = low7.wrapping_add(0x3f3f_3f3f_3f3f_3f3f);
    let gt_z = low7.wrapping_add(0x2525_2525_2525_2525);
    let upper = ge_a & !gt_z & !x & H;
    x | (upper >> 2)
}

/// Case-insensitive hash of a wire-format byte string (FxHash-style multiply-rotate).
#[inline]
pub fn hash_ci(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ lower8(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut tail = [0u8; 8];
        tail[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ lower8(u64::from_le_bytes(tail))).wrapping_mul(K);
    }
    // Final avalanche so the low bits (used to index tables) depend on every input bit.
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

/// Case-insensitive equality of two byte strings.
#[inline]
pub fn eq_ci(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        let x = u64::from_le_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]);
        let y = u64::from_le_bytes([y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]]);
        if x != y && lower8(x) != lower8(y) {
            return false;
        }
    }
    ca.remainder()
        .iter()
        .zip(cb.remainder())
        .all(|(&x, &y)| lower(x) == lower(y))
}

/// Checks that `wire` begins with a complete uncompressed name; returns its length.
fn check_wire(wire: &[u8]) -> Result<usize, NameError> {
    let mut pos = 0;
    loop {
        let len = *wire.get(pos).ok_or(NameError::ShortInput)? as usize;
        if len & 0xc0 != 0 {
            return Err(NameError::BadLabelType);
        }
        pos += 1 + len;
        if pos > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        if len == 0 {
            return Ok(pos);
        }
        if pos > wire.len() {
            return Err(NameError::ShortInput);
        }
    }
}

/// A borrowed, validated, uncompressed name.
#[derive(Clone, Copy)]
pub struct NameRef<'a> {
    wire: &'a [u8],
}

impl<'a> NameRef<'a> {
    /// The root name `.`.
    pub const ROOT: NameRef<'static> = NameRef { wire: &[0] };

    /// Validates the exact wire form of one name (no trailing bytes).
    pub fn from_wire(wire: &'a [u8]) -> Result<Self, NameError> {
        let n = check_wire(wire)?;
        if n != wire.len() {
            return Err(NameError::BadLabelType);
        }
        Ok(Self { wire })
    }

    /// Reads an uncompressed name at the start of `data`; returns it and its length.
    pub fn from_wire_prefix(data: &'a [u8]) -> Result<(Self, usize), NameError> {
        let n = check_wire(data)?;
        Ok((Self { wire: &data[..n] }, n))
    }

    /// The wire form, including the root label.
    #[inline]
    pub fn as_wire(&self) -> &'a [u8] {
        self.wire
    }

    /// Length of the wire form.
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.wire.len()
    }

    /// True for the root name.
    #[inline]
    pub fn is_root(&self) -> bool {
        self.wire.len() == 1
    }

    /// Number of labels, not counting the root label.
    pub fn label_count(&self) -> usize {
        self.labels().count()
    }

    /// The labels from the leftmost, without the root label.
    pub fn labels(&self) -> Labels<'a> {
        Labels { wire: self.wire }
    }

    /// The leftmost label (empty for the root).
    pub fn first_label(&self) -> &'a [u8] {
        let n = self.wire[0] as usize;
        &self.wire[1..1 + n]
    }

    /// The name with its leftmost label removed; `None` for the root.
    #[inline]
    pub fn parent(&self) -> Option<NameRef<'a>> {
        if self.is_root() {
            None
        } else {
            let n = self.wire[0] as usize;
            Some(NameRef {
                wire: &self.wire[1 + n..],
            })
        }
    }

    /// True if the leftmost label is `*` (RFC 4592).
    #[inline]
    pub fn is_wildcard(&self) -> bool {
        self.wire.len() >= 2 && self.wire[0] == 1 && self.wire[1] == b'*'
    }

    /// Case-insensitive equality.
    #[inline]
    pub fn eq_ci(&self, other: &NameRef<'_>) -> bool {
        eq_ci(self.wire, other.wire)
    }

    /// Case-insensitive hash of the whole name.
    #[inline]
    pub fn hash_ci(&self) -> u64 {
        hash_ci(self.wire)
    }

    /// True if `self` equals `ancestor` or lies below it.
    pub fn ends_with(&self, ancestor: &NameRef<'_>) -> bool {
        self.strip_suffix(ancestor).is_some()
    }

    /// Number of labels of `self` in front of `ancestor`, if `self` ends with it.
    pub fn strip_suffix(&self, ancestor: &NameRef<'_>) -> Option<usize> {
        if ancestor.len() > self.len() {
            return None;
        }
        let mut cur = *self;
        let mut n = 0;
        while cur.len() > ancestor.len() {
            cur = cur.parent()?;
            n += 1;
        }
        (cur.len() == ancestor.len() && cur.eq_ci(ancestor)).then_some(n)
    }

    /// The suffix of `self` that keeps its last `n` labels (the root is 0 labels).
    pub fn suffix(&self, keep: usize) -> NameRef<'a> {
        let total = self.label_count();
        let mut cur = *self;
        for _ in keep..total {
            cur = cur.parent().unwrap_or(cur);
        }
        cur
    }

    /// RFC 4034 §6.1 canonical order: label by label from the right, each label compared
    /// as lower-cased octets, a missing label sorting first.
    pub fn canonical_cmp(&self, other: &NameRef<'_>) -> Ordering {
        let mut a = [0u8; 128];
        let mut b = [0u8; 128];
        let na = label_starts(self.wire, &mut a);
        let nb = label_starts(other.wire, &mut b);
        let (mut i, mut j) = (na, nb);
        while i > 0 && j > 0 {
            i -= 1;
            j -= 1;
            let la = label_at(self.wire, a[i]);
            let lb = label_at(other.wire, b[j]);
            let ord = la
                .iter()
                .map(|&c| lower(c))
                .cmp(lb.iter().map(|&c| lower(c)));
            if ord != Ordering::Equal {
                return ord;
            }
        }
        na.cmp(&nb)
    }

    /// An owned copy.
    pub fn to_name(&self) -> Name {
        Name {
            wire: self.wire.into(),
        }
    }

    /// Writes the lower-cased wire form into `out`; returns its length.
    pub fn lowercase_into(&self, out: &mut [u8; MAX_NAME_LEN]) -> usize {
        for (o, &c) in out.iter_mut().zip(self.wire) {
            *o = lower(c);
        }
        self.wire.len()
    }
}

fn label_starts(wire: &[u8], out: &mut [u8; 128]) -> usize {
    let mut pos = 0usize;
    let mut n = 0;
    while wire[pos] != 0 {
        out[n] = pos as u8;
        n += 1;
        pos += 1 + wire[pos] as usize;
    }
    n
}

fn label_at(wire: &[u8], start: u8) -> &[u8] {
    let s = start as usize;
    &wire[s + 1..s + 1 + wire[s] as usize]
}

/// Iterator over the labels of a name, leftmost first, root excluded.
#[derive(Clone)]
pub struct Labels<'a> {
    wire: &'a [u8],
}

impl<'a> Iterator for Labels<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let n = *self.wire.first()? as usize;
        if n == 0 {
            return None;
        }
        let label = &self.wire[1..1 + n];
        self.wire = &self.wire[1 + n..];
        Some(label)
    }
}

impl PartialEq for NameRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.eq_ci(other)
    }
}
impl Eq for NameRef<'_> {}

impl Hash for NameRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash_ci());
    }
}

impl PartialOrd for NameRef<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for NameRef<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.canonical_cmp(other)
    }
}

/// Presentation format, fully qualified with the trailing dot (RFC 1035 §5.1 escapes).
impl fmt::Display for NameRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        for label in self.labels() {
            write_label(label, f)?;
            f.write_str(".")?;
        }
        Ok(())
    }
}

impl fmt::Debug for NameRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({self})")
    }
}

/// Writes one label in presentation format, escaping what the zone-file syntax needs.
pub fn write_label(label: &[u8], f: &mut impl fmt::Write) -> fmt::Result {
    for &c in label {
        match c {
            b'.' | b'\\' | b'"' | b'(' | b')' | b';' | b'@' | b'$' => {
                f.write_char('\\')?;
                f.write_char(c as char)?;
            }
            0x21..=0x7e => f.write_char(c as char)?,
            _ => write!(f, "\\{c:03}")?,
        }
    }
    Ok(())
}

/// An owned name on the heap, for long-lived data.
#[derive(Clone)]
pub struct Name {
    wire: Box<[u8]>,
}

impl Name {
    /// The root name.
    pub fn root() -> Self {
        Self {
            wire: Box::new([0]),
        }
    }

    /// Validates and copies the exact wire form of one name.
    pub fn from_wire(wire: &[u8]) -> Result<Self, NameError> {
        Ok(NameRef::from_wire(wire)?.to_name())
    }

    /// Parses presentation format. A name without a trailing dot is relative and gets
    /// `origin` appended; `@` is not handled here (it is zone-file syntax).
    pub fn from_text(text: &str, origin: Option<NameRef<'_>>) -> Result<Self, NameError> {
        let mut buf = NameBuf::new();
        buf.parse_text(text.as_bytes(), origin)?;
        Ok(buf.as_ref().to_name())
    }

    /// Borrows the name.
    #[inline]
    pub fn as_ref(&self) -> NameRef<'_> {
        NameRef { wire: &self.wire }
    }

    /// The wire form.
    #[inline]
    pub fn as_wire(&self) -> &[u8] {
        &self.wire
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.as_ref().eq_ci(&other.as_ref())
    }
}
impl Eq for Name {}
impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_ref().hash(state)
    }
}
impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Name {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_ref().canonical_cmp(&other.as_ref())
    }
}
impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}
impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}
impl core::str::FromStr for Name {
    type Err = NameError;
    /// Parses an absolute name; a missing trailing dot is taken as relative to the root.
    fn from_str(s: &str) -> Result<Self, NameError> {
        Self::from_text(s, Some(NameRef::ROOT))
    }
}

/// A name in a fixed stack buffer: building and decompressing names without allocation.
#[derive(Clone)]
pub struct NameBuf {
    len: u8,
    buf: [u8; MAX_NAME_LEN],
}

impl Default for NameBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl NameBuf {
    /// The root name.
    pub const fn new() -> Self {
        Self {
            len: 1,
            buf: [0; MAX_NAME_LEN],
        }
    }

    /// Borrows the name.
    #[inline]
    pub fn as_ref(&self) -> NameRef<'_> {
        NameRef {
            wire: &self.buf[..self.len as usize],
        }
    }

    /// Copies a name in.
    pub fn set(&mut self, name: NameRef<'_>) {
        self.buf[..name.len()].copy_from_slice(name.as_wire());
        self.len = name.len() as u8;
    }

    /// Mutable access to the wire bytes (for case changes of the same name).
    pub fn wire_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len as usize]
    }

    /// Sets this to `prefix_labels` (a wire label sequence without root) followed by `suffix`.
    pub fn set_concat(&mut self, prefix: &[u8], suffix: NameRef<'_>) -> Result<(), NameError> {
        let total = prefix.len() + suffix.len();
        if total > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        self.buf[..prefix.len()].copy_from_slice(prefix);
        self.buf[prefix.len()..total].copy_from_slice(suffix.as_wire());
        self.len = total as u8;
        Ok(())
    }

    /// Reads a possibly compressed name from a message at `pos`. Returns the position just
    /// after the name's bytes at `pos` (after the first pointer, if any).
    ///
    /// Every pointer must point strictly before the start of the run it ends, so the walk
    /// always terminates; the hop count is bounded too.
    pub fn read_compressed(&mut self, msg: &[u8], mut pos: usize) -> Result<usize, NameError> {
        let mut out = 0usize;
        let mut end = None;
        let mut run_start = pos;
        let mut hops = 0;
        loop {
            let len = *msg.get(pos).ok_or(NameError::ShortInput)? as usize;
            match len & 0xc0 {
                0x00 => {
                    if out + 1 + len > MAX_NAME_LEN {
                        return Err(NameError::NameTooLong);
                    }
                    let label = msg.get(pos..pos + 1 + len).ok_or(NameError::ShortInput)?;
                    self.buf[out..out + 1 + len].copy_from_slice(label);
                    out += 1 + len;
                    pos += 1 + len;
                    if len == 0 {
                        self.len = out as u8;
                        return Ok(end.unwrap_or(pos));
                    }
                }
                0xc0 => {
                    let lo = *msg.get(pos + 1).ok_or(NameError::ShortInput)? as usize;
                    let target = ((len & 0x3f) << 8) | lo;
                    if end.is_none() {
                        end = Some(pos + 2);
                    }
                    hops += 1;
                    if target >= run_start || hops > MAX_POINTERS {
                        return Err(NameError::BadPointer);
                    }
                    pos = target;
                    run_start = target;
                }
                _ => return Err(NameError::BadLabelType),
            }
        }
    }

    /// Parses presentation format (see [`Name::from_text`]).
    pub fn parse_text(
        &mut self,
        text: &[u8],
        origin: Option<NameRef<'_>>,
    ) -> Result<(), NameError> {
        if text == b"." {
            *self = Self::new();
            return Ok(());
        }
        if text.is_empty() {
            return Err(NameError::EmptyLabel);
        }
        let mut out = 0usize;
        let mut i = 0usize;
        let mut absolute = false;
        while i < text.len() {
            // One label.
            let len_at = out;
            out += 1;
            let mut llen = 0usize;
            while i < text.len() && text[i] != b'.' {
                let mut c = text[i];
                i += 1;
                if c == b'\\' {
                    let e = *text.get(i).ok_or(NameError::BadEscape)?;
                    if e.is_ascii_digit() {
                        let d = text.get(i..i + 3).ok_or(NameError::BadEscape)?;
                        if !d.iter().all(u8::is_ascii_digit) {
                            return Err(NameError::BadEscape);
                        }
                        let v = (d[0] - b'0') as u32 * 100
                            + (d[1] - b'0') as u32 * 10
                            + (d[2] - b'0') as u32;
                        if v > 255 {
                            return Err(NameError::BadEscape);
                        }
                        c = v as u8;
                        i += 3;
                    } else {
                        c = e;
                        i += 1;
                    }
                }
                llen += 1;
                if llen > MAX_LABEL_LEN {
                    return Err(NameError::LabelTooLong);
                }
                if out >= MAX_NAME_LEN {
                    return Err(NameError::NameTooLong);
                }
                self.buf[out] = c;
                out += 1;
            }
            if llen == 0 {
                return Err(NameError::EmptyLabel);
            }
            self.buf[len_at] = llen as u8;
            if i < text.len() {
                // Skip the dot; a dot at the very end makes the name absolute.
                i += 1;
                if i == text.len() {
                    absolute = true;
                }
            }
        }
        if absolute {
            if out >= MAX_NAME_LEN {
                return Err(NameError::NameTooLong);
            }
            self.buf[out] = 0;
            out += 1;
        } else {
            let origin = origin.ok_or(NameError::Relative)?;
            if out + origin.len() > MAX_NAME_LEN {
                return Err(NameError::NameTooLong);
            }
            self.buf[out..out + origin.len()].copy_from_slice(origin.as_wire());
            out += origin.len();
        }
        self.len = out as u8;
        Ok(())
    }
}

impl fmt::Debug for NameBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn text_round_trip_and_escapes() {
        assert_eq!(n("www.Example.COM.").to_string(), "www.Example.COM.");
        assert_eq!(n(".").as_wire(), &[0]);
        assert_eq!(n("a\\.b.c.").as_ref().label_count(), 2);
        assert_eq!(n("a\\.b.c.").to_string(), "a\\.b.c.");
        assert_eq!(n("\\065\\032x.").as_ref().first_label(), b"A x");
        assert_eq!(n("\\065\\032x.").to_string(), "A\\032x.");
        let origin = n("example.com.");
        let rel = Name::from_text("www", Some(origin.as_ref())).unwrap();
        assert_eq!(rel, n("www.example.com."));
        assert_eq!(Name::from_text("www", None), Err(NameError::Relative));
        assert_eq!(Name::from_text("a..b.", None), Err(NameError::EmptyLabel));
        assert_eq!(Name::from_text("a\\256.", None), Err(NameError::BadEscape));
    }

    #[test]
    fn length_limits() {
        let l63 = "a".repeat(63);
        let l64 = "a".repeat(64);
        assert!(Name::from_text(&format!("{l63}."), None).is_ok());
        assert_eq!(
            Name::from_text(&format!("{l64}."), None),
            Err(NameError::LabelTooLong)
        );
        // 4 labels of 63 = 256 octets with length bytes and root: too long.
        let too_long = format!("{l63}.{l63}.{l63}.{l63}.");
        assert_eq!(
            Name::from_text(&too_long, None),
            Err(NameError::NameTooLong)
        );
        let max = format!("{l63}.{l63}.{l63}.{}.", "a".repeat(61));
        assert_eq!(Name::from_text(&max, None).unwrap().as_wire().len(), 255);
    }

    #[test]
    fn case_insensitive_eq_and_hash() {
        let a = n("WwW.ExAmPlE.CoM.");
        let b = n("www.example.com.");
        assert_eq!(a, b);
        assert_eq!(a.as_ref().hash_ci(), b.as_ref().hash_ci());
        assert_ne!(
            n("www.example.com.").as_ref().hash_ci(),
            n("wwx.example.com.").as_ref().hash_ci()
        );
        // Bytes just outside A-Z must not fold.
        assert!(!eq_ci(b"@", b"`"));
        assert!(!eq_ci(b"[", b"{"));
        for b in 0u8..=255 {
            let x = u64::from_le_bytes([b; 8]);
            assert_eq!(lower8(x), u64::from_le_bytes([lower(b); 8]), "byte {b}");
        }
    }

    #[test]
    fn canonical_order_rfc4034() {
        // The example list of RFC 4034 §6.1, in order.
        let names = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        for w in names.windows(2) {
            assert_eq!(n(w[0]).cmp(&n(w[1])), Ordering::Less, "{} < {}", w[0], w[1]);
        }
    }

    #[test]
    fn ancestry() {
        let a = n("a.b.example.");
        assert!(a.as_ref().ends_with(&n("EXAMPLE.").as_ref()));
        assert_eq!(a.as_ref().strip_suffix(&n("example.").as_ref()), Some(2));
        assert!(!a.as_ref().ends_with(&n("b.example2.").as_ref()));
        assert!(!n("xample.").as_ref().ends_with(&n("example.").as_ref()));
        assert_eq!(a.as_ref().suffix(1).to_string(), "example.");
        assert!(n("*.example.").as_ref().is_wildcard());
    }

    #[test]
    fn decompression_and_loops() {
        // Header-less message: "example.com." at 0, then "www" + pointer to 0 at 13.
        let mut msg = vec![7];
        msg.extend_from_slice(b"example");
        msg.extend_from_slice(&[3, b'c', b'o', b'm', 0]);
        msg.extend_from_slice(&[3, b'w', b'w', b'w', 0xc0, 0]);
        let mut b = NameBuf::new();
        assert_eq!(b.read_compressed(&msg, 13).unwrap(), 19);
        assert_eq!(b.as_ref().to_string(), "www.example.com.");
        // Pointer to itself and forward pointers are rejected.
        assert_eq!(b.read_compressed(&[0xc0, 0], 0), Err(NameError::BadPointer));
        assert_eq!(
            b.read_compressed(&[0xc0, 2, 0], 0),
            Err(NameError::BadPointer)
        );
        // Two pointers pointing at each other.
        assert_eq!(
            b.read_compressed(&[0xc0, 2, 0xc0, 0], 2),
            Err(NameError::BadPointer)
        );
        assert_eq!(b.read_compressed(&[5, b'a'], 0), Err(NameError::ShortInput));
        assert_eq!(b.read_compressed(&[0x40], 0), Err(NameError::BadLabelType));
    }
}
