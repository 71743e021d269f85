//! Domain names: validated, uncompressed wire-format label sequences.
//!
//! Three forms share one representation (length-prefixed labels ending with the root label):
//! [`NameRef`] borrows, [`Name`] owns on the heap (zone data), [`NameBuf`] owns a fixed
//! 255-octet buffer on the stack (the query path, which must not allocate).
//!
//! Case-insensitive comparison and hashing are our own ASCII byte arithmetic (RFC 4343),
//! never locale-aware. Length bytes are at most 63, below `'A'` (65), so lower-casing the
//! whole wire form lower-cases exactly the label letters.
//!
//! This file holds [`NameRef`] and [`Name`]; `buf` holds [`NameBuf`] (text parsing and
//! decompression), `ci` the case-insensitive comparison and hash, `file` the file-name form
//! of a name ([`NameRef::file_stem`]).

mod buf;
mod ci;
mod file;

pub use crate::error::NameKind;
pub use buf::NameBuf;
pub use ci::{eq_ci, hash_ci, lower};

use crate::error::Error;

use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};

/// Longest name in wire form, including length octets and the root label (RFC 1035 §3.1).
pub const MAX_NAME_LEN: usize = 255;
/// Longest label (RFC 1035 §2.3.4).
pub const MAX_LABEL_LEN: usize = 63;

/// Checks that `wire` begins with a complete uncompressed name; returns its length.
fn check_wire(wire: &[u8]) -> Result<usize, NameKind> {
    let mut pos = 0;
    loop {
        let len = *wire.get(pos).ok_or(NameKind::ShortInput)? as usize;
        if len & 0xc0 != 0 {
            return Err(NameKind::BadLabelType);
        }
        pos += 1 + len;
        if pos > MAX_NAME_LEN {
            return Err(NameKind::NameTooLong);
        }
        if len == 0 {
            return Ok(pos);
        }
        if pos > wire.len() {
            return Err(NameKind::ShortInput);
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
    #[inline]
    pub fn from_wire(wire: &'a [u8]) -> Result<Self, Error> {
        let n = check_wire(wire).map_err(Error::Name)?;
        if n != wire.len() {
            return Err(Error::Name(NameKind::BadLabelType));
        }
        Ok(Self { wire })
    }

    /// The name whose exact wire form `wire` is, from a store that validated it when it
    /// took it in (a zone's names): the walk over its labels that [`NameRef::from_wire`]
    /// makes is skipped (it was ~5 % of the answer code of an NSEC3 name error, eight names
    /// read from the zone). Debug builds check anyway. Bytes that are not a name give wrong
    /// names or a panic on a bounds check later, never undefined behaviour.
    #[inline]
    pub fn from_validated(wire: &'a [u8]) -> Self {
        debug_assert_eq!(check_wire(wire), Ok(wire.len()), "not a name: {wire:02x?}");
        Self { wire }
    }

    /// Reads an uncompressed name at the start of `data`; returns it and its length.
    #[inline]
    pub fn from_wire_prefix(data: &'a [u8]) -> Result<(Self, usize), Error> {
        let n = check_wire(data).map_err(Error::Name)?;
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
    pub fn from_wire(wire: &[u8]) -> Result<Self, Error> {
        Ok(NameRef::from_wire(wire)?.to_name())
    }

    /// Parses presentation format. A name without a trailing dot is relative and gets
    /// `origin` appended; `@` is not handled here (it is zone-file syntax).
    pub fn from_text(text: &str, origin: Option<NameRef<'_>>) -> Result<Self, Error> {
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
    type Err = Error;
    /// Parses an absolute name; a missing trailing dot is taken as relative to the root.
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::from_text(s, Some(NameRef::ROOT))
    }
}

#[cfg(test)]
mod tests;
