//! The file-name form of a zone's name: what journals, signing state, key files and the
//! copies of catalog members are named after. Two zones must never share a file, and no
//! name may reach outside the directory, so the mapping is injective and its output has
//! no `/`, no `..` and no leading dot.

use super::NameRef;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Longest stem written out whole; longer ones are cut and end with a digest, so that with
/// a suffix (`K…+008+12345.private`) they stay within the 255 octets of a file name.
const MAX_STEM: usize = 200;
/// What is kept of a stem too long before its digest.
const KEPT: usize = 150;

impl NameRef<'_> {
    /// The name as a file-name stem, one-to-one with the name (case-insensitively):
    /// lower-cased labels joined by `.` with no final dot; every octet other than `a-z`,
    /// `0-9`, `-` and `_` as `%` and two hex digits (`%` itself, `.` and `/` inside a label,
    /// `\`, upper case never reaches it); the root `root`, and the one-label name `root.`
    /// `%72oot` so that the two differ. `_` stays as it is: names such as `_tcp.example.`
    /// keep the names they had. A stem over 200 characters is cut at 150 and ends with
    /// `~` and 32 hex digits of the SHA-256 of the lower-cased wire form (`~` appears in
    /// no other stem).
    pub fn file_stem(&self) -> String {
        if self.is_root() {
            return "root".into();
        }
        let mut out = String::with_capacity(self.len());
        let mut cut = None;
        for (i, label) in self.labels().enumerate() {
            if i > 0 {
                out.push('.');
            }
            for &c in label {
                let c = c.to_ascii_lowercase();
                if c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_' {
                    out.push(c as char);
                } else {
                    let _ = write!(out, "%{c:02x}");
                }
                if cut.is_none() && out.len() >= KEPT {
                    cut = Some(out.len());
                }
            }
        }
        if out == "root" {
            return "%72oot".into();
        }
        if out.len() > MAX_STEM {
            let mut wire = self.as_wire().to_vec();
            wire.make_ascii_lowercase();
            let digest = Sha256::digest(&wire);
            out.truncate(cut.unwrap_or(KEPT));
            out.push('~');
            for b in &digest[..16] {
                let _ = write!(out, "{b:02x}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::Name;
    use std::collections::HashMap;

    fn stem(text: &str) -> String {
        text.parse::<Name>().unwrap().as_ref().file_stem()
    }

    #[test]
    fn ordinary_names_keep_their_text() {
        assert_eq!(stem("example.com."), "example.com");
        assert_eq!(stem("Example.COM."), "example.com");
        assert_eq!(stem("_tcp.a-b.example."), "_tcp.a-b.example");
        assert_eq!(stem("a_b.example."), "a_b.example");
        assert_eq!(stem("."), "root");
    }

    #[test]
    fn no_two_zones_share_a_stem_and_none_leaves_the_directory() {
        let names = [
            ".",
            "root.",
            "%72oot.",
            "a/b.example.",
            "a_b.example.",
            "a%2fb.example.",
            "a\\\\b.example.",
            "a\\.b.example.",
            "a.b.example.",
            "A.B.example.",
            "a%2eb.example.",
            "\\..example.",
            "\\.\\..example.",
            "..example.",
            "a\\000b.example.",
            "a\\255b.example.",
            "a~b.example.",
            "a b.example.",
            "example.",
        ];
        let mut seen: HashMap<String, Name> = HashMap::new();
        for text in names {
            let Ok(name) = text.parse::<Name>() else {
                continue;
            };
            let s = name.as_ref().file_stem();
            assert!(
                !s.is_empty() && !s.contains('/') && !s.starts_with('.'),
                "{s}"
            );
            assert!(s.split('.').all(|part| !part.is_empty()), "{text}: {s}");
            if let Some(before) = seen.insert(s.clone(), name.clone()) {
                assert_eq!(before, name, "{before} and {name} share {s}");
            }
        }
        // Case-folded names are one zone: one stem.
        assert_eq!(stem("A/B.Example."), stem("a/b.example."));
        assert_ne!(stem("a/b.example."), stem("a_b.example."));
        assert_eq!(stem("a/b.example."), "a%2fb.example");
        assert_eq!(stem("a\\.b.example."), "a%2eb.example");
        assert_eq!(stem("a%2fb.example."), "a%252fb.example");
    }

    #[test]
    fn long_names_end_with_a_digest() {
        let label = "x".repeat(63);
        let long: Name = format!("{label}.{label}.{label}.{}.", &label[2..])
            .parse()
            .unwrap();
        let other: Name = format!("{label}.{label}.{label}.y{}.", &label[3..])
            .parse()
            .unwrap();
        let (a, b) = (long.as_ref().file_stem(), other.as_ref().file_stem());
        assert!(a.len() <= 200 && a.contains('~'), "{a}");
        assert_ne!(a, b);
        // Escapes make names long too; the cut never splits one.
        let odd: Name = format!("{}.{}.", "\\.".repeat(63), "\\/".repeat(63))
            .parse()
            .unwrap();
        let s = odd.as_ref().file_stem();
        let kept = s.split('~').next().unwrap();
        assert!(kept.len() >= 150 && kept.len().is_multiple_of(3), "{s}");
    }
}
