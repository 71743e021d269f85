//! [`NameBuf`]: a name in a fixed stack buffer, built from text or decompressed from a
//! message without allocation.

use super::{NameKind, NameRef, MAX_LABEL_LEN, MAX_NAME_LEN};
use crate::error::Error;
use core::fmt;

/// Most pointers followed while reading one compressed name.
const MAX_POINTERS: usize = 64;

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
    #[inline]
    pub fn set_concat(&mut self, prefix: &[u8], suffix: NameRef<'_>) -> Result<(), Error> {
        let total = prefix.len() + suffix.len();
        if total > MAX_NAME_LEN {
            return Err(Error::Name(NameKind::NameTooLong));
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
    #[inline]
    pub fn read_compressed(&mut self, msg: &[u8], pos: usize) -> Result<usize, Error> {
        self.read(msg, pos).map_err(Error::Name)
    }

    /// [`NameBuf::read_compressed`] with the bare kind, for the message readers (which
    /// report [`Error::BadName`]); one octet, so the query path returns it in a register.
    pub(crate) fn read(&mut self, msg: &[u8], mut pos: usize) -> Result<usize, NameKind> {
        let mut out = 0usize;
        let mut end = None;
        let mut run_start = pos;
        let mut hops = 0;
        loop {
            let len = *msg.get(pos).ok_or(NameKind::ShortInput)? as usize;
            match len & 0xc0 {
                0x00 => {
                    if out + 1 + len > MAX_NAME_LEN {
                        return Err(NameKind::NameTooLong);
                    }
                    let label = msg.get(pos..pos + 1 + len).ok_or(NameKind::ShortInput)?;
                    self.buf[out..out + 1 + len].copy_from_slice(label);
                    out += 1 + len;
                    pos += 1 + len;
                    if len == 0 {
                        self.len = out as u8;
                        return Ok(end.unwrap_or(pos));
                    }
                }
                0xc0 => {
                    let lo = *msg.get(pos + 1).ok_or(NameKind::ShortInput)? as usize;
                    let target = ((len & 0x3f) << 8) | lo;
                    if end.is_none() {
                        end = Some(pos + 2);
                    }
                    hops += 1;
                    if target >= run_start || hops > MAX_POINTERS {
                        return Err(NameKind::BadPointer);
                    }
                    pos = target;
                    run_start = target;
                }
                _ => return Err(NameKind::BadLabelType),
            }
        }
    }

    /// Parses presentation format (see [`Name::from_text`](super::Name::from_text)).
    pub fn parse_text(&mut self, text: &[u8], origin: Option<NameRef<'_>>) -> Result<(), Error> {
        self.parse_text_kind(text, origin).map_err(Error::Name)
    }

    fn parse_text_kind(
        &mut self,
        text: &[u8],
        origin: Option<NameRef<'_>>,
    ) -> Result<(), NameKind> {
        if text == b"." {
            *self = Self::new();
            return Ok(());
        }
        if text.is_empty() {
            return Err(NameKind::EmptyLabel);
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
                    let e = *text.get(i).ok_or(NameKind::BadEscape)?;
                    if e.is_ascii_digit() {
                        let d = text.get(i..i + 3).ok_or(NameKind::BadEscape)?;
                        if !d.iter().all(u8::is_ascii_digit) {
                            return Err(NameKind::BadEscape);
                        }
                        let v = (d[0] - b'0') as u32 * 100
                            + (d[1] - b'0') as u32 * 10
                            + (d[2] - b'0') as u32;
                        if v > 255 {
                            return Err(NameKind::BadEscape);
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
                    return Err(NameKind::LabelTooLong);
                }
                if out >= MAX_NAME_LEN {
                    return Err(NameKind::NameTooLong);
                }
                self.buf[out] = c;
                out += 1;
            }
            if llen == 0 {
                return Err(NameKind::EmptyLabel);
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
                return Err(NameKind::NameTooLong);
            }
            self.buf[out] = 0;
            out += 1;
        } else {
            let origin = origin.ok_or(NameKind::Relative)?;
            if out + origin.len() > MAX_NAME_LEN {
                return Err(NameKind::NameTooLong);
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
