//! Name compression (RFC 1035 §4.1.4): a name is written as its labels up to the longest
//! suffix already in the message, then a pointer to it.

use super::{Full, MessageWriter, MAX_COMP};
use crate::name::{lower, NameRef};

impl<'a> MessageWriter<'a> {
    /// Either way its labels become targets for later names.
    pub fn put_name(&mut self, name: NameRef<'_>, compress: bool) -> Result<(), Full> {
        let wire = name.as_wire();
        let mut start = 0usize;
        let mut pointer = None;
        if compress
            && self.ncomp > 0
            && self.comp[0] == 12
            && wire.len() > 1
            && self.buf.get(12..12 + wire.len()) == Some(wire)
        {
            // Most owners repeat the question name as asked: one memcmp instead of a walk of
            // the table. The name at 12 is the question, written uncompressed, and its root
            // label ends both, so equal bytes mean the same whole name.
            pointer = Some(12);
        }
        if compress && pointer.is_none() {
            // Where the question's suffix would start in `wire`, if `wire` ends with it in
            // the same octets (a name of the zone, written in the zone's case).
            if self.suffix_at == 0 && !self.suffix.is_empty() {
                self.check_question_suffix();
            }
            let hinted = self.suffix.len() > 1
                && self.ncomp > self.suffix_entry
                && wire.ends_with(self.suffix);
            let suffix_start = wire.len().wrapping_sub(self.suffix.len());
            while wire[start] != 0 {
                if hinted && start == suffix_start {
                    // What the walk finds for it, checked when the hint was set.
                    pointer = Some(self.suffix_at);
                    break;
                }
                if let Some(off) = self.find(&wire[start..]) {
                    pointer = Some(off);
                    break;
                }
                start += 1 + wire[start] as usize;
            }
        }
        let (labels, tail) = match pointer {
            Some(_) => (&wire[..start], 2),
            None => (&wire[..wire.len() - 1], 1),
        };
        if self.len + labels.len() + tail > self.limit {
            return Err(Full);
        }
        // Remember where each newly written label starts (pointers reach 14 bits).
        let mut i = 0;
        while i < labels.len() {
            let off = self.len + i;
            if off < 0x4000 && self.ncomp < MAX_COMP {
                self.comp[self.ncomp] = off as u16;
                self.ncomp += 1;
                self.comp_keys |= label_key(&labels[i..]);
            }
            i += 1 + labels[i] as usize;
        }
        self.buf[self.len..self.len + labels.len()].copy_from_slice(labels);
        self.len += labels.len();
        match pointer {
            Some(off) => {
                let p = 0xc000 | off;
                self.buf[self.len..self.len + 2].copy_from_slice(&p.to_be_bytes());
                self.len += 2;
            }
            None => {
                self.buf[self.len] = 0;
                self.len += 1;
            }
        }
        Ok(())
    }

    /// Names that end in `suffix` (a zone's apex, as the zone writes it), which the
    /// question's name ends in, have their labels up to it compressed by the table walk as
    /// before and then point to the question's copy of it without a walk: where the walk
    /// finds it first, as checked here once (with the compression and case rules of the
    /// message: not in a transfer). Does nothing if the question's name does not end in
    /// `suffix` or the walk finds it elsewhere. Call it right after
    /// [`MessageWriter::put_question`]. Every name of an answer from a zone ends in the
    /// apex: found by a comparison of its last octets instead of a walk that compared it
    /// with the table's entries (the question's first label, then the apex's labels:
    /// seven times an NSEC3 name error). Checked when first needed, so that an answer
    /// whose only names are the question's (a plain A answer) does not pay for it.
    pub fn set_question_suffix(&mut self, suffix: NameRef<'a>) {
        self.suffix = suffix.as_wire();
        self.suffix_at = 0;
    }

    /// Checks the suffix [`MessageWriter::set_question_suffix`] gave: kept (with where the
    /// walk finds it) or dropped.
    fn check_question_suffix(&mut self) {
        let wire = std::mem::take(&mut self.suffix);
        if self.transfer || wire.len() < 2 || self.ncomp == 0 || self.comp[0] != 12 {
            return;
        }
        let Some(question_len) = self.labels_len_at(12) else {
            return;
        };
        let Some(at) = (12 + question_len).checked_sub(wire.len()) else {
            return;
        };
        if at < 12 || self.find(wire) != Some(at as u16) {
            return;
        }
        let Some(entry) = self.comp[..self.ncomp]
            .iter()
            .position(|&o| o as usize == at)
        else {
            return;
        };
        self.suffix = wire;
        self.suffix_at = at as u16;
        self.suffix_entry = entry;
    }

    /// The length of the uncompressed name at `off` (root included), if it has no pointer.
    fn labels_len_at(&self, off: usize) -> Option<usize> {
        let mut at = off;
        for _ in 0..128 {
            let len = *self.buf.get(at)? as usize;
            if len & 0xc0 != 0 {
                return None;
            }
            at += 1 + len;
            if len == 0 {
                return Some(at - off);
            }
        }
        None
    }

    /// Appends a record's owner. In a zone transfer, consecutive records mostly share their
    /// owner (a node's RRsets) or its parent (siblings): when the previous owner gives the
    /// whole name, or all of it but the first label, that is the pointer, found in
    /// O(labels) however full the compression table is (in a 16 KiB message of a big zone
    /// it is full after a few dozen names). Normal answers have few records and use the
    /// table ([`MessageWriter::put_name`]), except that the same owner as the previous
    /// record's (the next record of an RRset, an RRset's signatures: four of the eight
    /// owners of an NSEC3 name error) is one comparison with it rather than a walk.
    #[inline]
    pub(super) fn put_owner(&mut self, owner: NameRef<'_>) -> Result<(), Full> {
        if !self.transfer {
            return self.put_answer_owner(owner);
        }
        let wire = owner.as_wire();
        let start = self.len;
        let hit = if self.prev_owner != 0 && wire.len() > 1 {
            self.suffix_of_prev_owner(wire)
        } else {
            None
        };
        match hit {
            Some((prefix, target)) => {
                let labels = &wire[..prefix];
                if self.len + labels.len() + 2 > self.limit {
                    return Err(Full);
                }
                if !labels.is_empty() && self.len < 0x4000 && self.ncomp < MAX_COMP {
                    self.comp[self.ncomp] = self.len as u16;
                    self.ncomp += 1;
                    self.comp_keys |= label_key(labels);
                }
                self.buf[self.len..self.len + labels.len()].copy_from_slice(labels);
                self.len += labels.len();
                let p = 0xc000 | target;
                self.buf[self.len..self.len + 2].copy_from_slice(&p.to_be_bytes());
                self.len += 2;
            }
            None => self.put_name(owner, true)?,
        }
        if start < 0x4000 {
            self.prev_owner = start as u16;
        }
        Ok(())
    }

    /// [`MessageWriter::put_owner`] outside transfers: the pointer is the one the table
    /// walk of [`MessageWriter::put_name`] would find, so the octets are the same.
    fn put_answer_owner(&mut self, owner: NameRef<'_>) -> Result<(), Full> {
        let wire = owner.as_wire();
        if self.prev_owner != 0
            && wire.len() > 1
            && self.name_at_eq::<false>(self.prev_owner_target(), wire)
        {
            return self.put_previous_owner();
        }
        let (start, ncomp) = (self.len, self.ncomp);
        self.put_name(owner, true)?;
        let pointer = self.buf[start] & 0xc0 == 0xc0;
        self.prev_owner = if start < 0x4000 && (pointer || self.ncomp > ncomp) {
            start as u16
        } else {
            0
        };
        Ok(())
    }

    /// Where the walk of [`MessageWriter::put_name`] finds the previous owner (set): the
    /// previous owner is remembered only where the walk finds it first: a pointer (to the
    /// first name in the table that equals it), or labels whose first is in the table (the
    /// walk found no earlier name equal to it).
    #[inline]
    fn prev_owner_target(&self) -> usize {
        let prev = self.prev_owner as usize;
        if self.buf[prev] & 0xc0 == 0xc0 {
            ((self.buf[prev] as usize & 0x3f) << 8) | self.buf[prev + 1] as usize
        } else {
            prev
        }
    }

    /// Writes the previous record's owner (set, outside transfers) as a pointer to where
    /// the table walk finds it.
    #[inline]
    pub(super) fn put_previous_owner(&mut self) -> Result<(), Full> {
        if self.len + 2 > self.limit {
            return Err(Full);
        }
        let p = 0xc000 | self.prev_owner_target() as u16;
        self.buf[self.len..self.len + 2].copy_from_slice(&p.to_be_bytes());
        self.len += 2;
        Ok(())
    }

    /// True when the previous record's owner (set) is `wire`, case ignored.
    pub(super) fn is_previous_owner(&self, wire: &[u8]) -> bool {
        self.name_at_eq::<false>(self.prev_owner_target(), wire)
    }

    /// If the previous owner ends with all of `wire` or all of it but the first label:
    /// (octets of `wire` to write before the pointer, where the pointer goes).
    fn suffix_of_prev_owner(&self, wire: &[u8]) -> Option<(usize, u16)> {
        let prev = self.prev_owner as usize;
        let have = self.labels_at(prev);
        let labels = wire_labels(wire);
        let first = 1 + wire[0] as usize;
        // The previous owner's suffix of as many labels as `wire`, then as `wire` without
        // its first label.
        for (skip, want) in [(0, labels), (first, labels - 1)] {
            if want == 0 || want > have {
                continue;
            }
            let off = self.skip_labels(prev, have - want);
            // A pointer reaches 14 bits; a name that starts just below that may run past it.
            if off < 0x4000 && self.name_at_eq::<true>(off, &wire[skip..]) {
                return Some((skip, off as u16));
            }
        }
        None
    }

    /// Labels (the root not counted) of the name written at `off`, following pointers.
    fn labels_at(&self, mut off: usize) -> usize {
        let mut n = 0;
        for _ in 0..256 {
            let len = self.buf[off] as usize;
            if len & 0xc0 == 0xc0 {
                off = ((len & 0x3f) << 8) | self.buf[off + 1] as usize;
                continue;
            }
            if len == 0 {
                break;
            }
            n += 1;
            off += 1 + len;
        }
        n
    }

    /// Where the name at `off` continues after `n` labels (following pointers).
    fn skip_labels(&self, mut off: usize, mut n: usize) -> usize {
        for _ in 0..256 {
            let len = self.buf[off] as usize;
            if len & 0xc0 == 0xc0 {
                off = ((len & 0x3f) << 8) | self.buf[off + 1] as usize;
                continue;
            }
            if n == 0 || len == 0 {
                break;
            }
            n -= 1;
            off += 1 + len;
        }
        off
    }

    /// Finds a remembered offset whose name equals `suffix` (uncompressed wire form).
    fn find(&self, suffix: &[u8]) -> Option<u16> {
        // No name in the table starts with a label of this length and first octet: no walk
        // (a new NSEC3 owner's hash label, three times a name error: the walk compared it
        // with every entry to find none).
        if suffix.len() > 1 && self.comp_keys & label_key(suffix) == 0 {
            return None;
        }
        self.find_by_walk(suffix)
    }

    /// [`MessageWriter::find`] without the `comp_keys` filter: the walk of every entry.
    #[inline(always)]
    pub(super) fn find_by_walk(&self, suffix: &[u8]) -> Option<u16> {
        let mut table = self.comp[..self.ncomp].iter().copied();
        // One branch per search, none per label.
        if self.transfer {
            table.find(|&off| self.name_at_eq::<true>(off as usize, suffix))
        } else {
            table.find(|&off| self.name_at_eq::<false>(off as usize, suffix))
        }
    }

    /// [`MessageWriter::find`], for tests.
    #[cfg(test)]
    pub(super) fn find_filtered(&self, suffix: &[u8]) -> Option<u16> {
        self.find(suffix)
    }

    /// Compares the (possibly compressed) name at `off` with `suffix`, ignoring case unless
    /// `EXACT` (a transfer). Always inlined: called for each table entry of a walk, where a
    /// call per entry cost more than the comparison (2 % of the server on NSEC3 name errors
    /// once it had two callers and was no longer inlined).
    #[inline(always)]
    fn name_at_eq<const EXACT: bool>(&self, mut off: usize, suffix: &[u8]) -> bool {
        let mut i = 0;
        // Offsets in the table were written by us, so pointers go backwards; bound anyway.
        for _ in 0..256 {
            let len = self.buf[off] as usize;
            if len & 0xc0 == 0xc0 {
                off = ((len & 0x3f) << 8) | self.buf[off + 1] as usize;
                continue;
            }
            if suffix[i] as usize != len {
                return false;
            }
            if len == 0 {
                return true;
            }
            let a = &self.buf[off + 1..off + 1 + len];
            let b = &suffix[i + 1..i + 1 + len];
            if if EXACT {
                // Labels are short: a byte loop beats a call to memcmp.
                !a.iter().zip(b).all(|(x, y)| x == y)
            } else {
                !a.iter().zip(b).all(|(&x, &y)| lower(x) == lower(y))
            } {
                return false;
            }
            off += 1 + len;
            i += 1 + len;
        }
        false
    }
}

/// The bit of [`MessageWriter`]'s `comp_keys` for names starting with the label at the head
/// of `labels` (a length octet, at least one octet of label): its length and first octet,
/// case folded, so names equal by either comparison (exact or case-insensitive) share it.
#[inline]
fn label_key(labels: &[u8]) -> u64 {
    let (len, first) = (labels[0] as u32, lower(labels[1]) as u32);
    1 << ((len * 7 + first) & 63)
}

/// Labels of a name in uncompressed wire form, the root not counted.
fn wire_labels(wire: &[u8]) -> usize {
    let (mut n, mut at) = (0, 0);
    while wire[at] != 0 {
        n += 1;
        at += 1 + wire[at] as usize;
    }
    n
}
