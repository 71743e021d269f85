//! Trust anchors: the DS or DNSKEY records validation starts from, and negative trust
//! anchors (RFC 7646), names below which nothing is validated.
//!
//! Owns: [`TrustAnchors`] (the built-in root KSKs as DS, key tags 20326 and 38696, as IANA
//! publishes them in root-anchors.xml) and the parser of a trust-anchor file: DS or DNSKEY
//! records in zone-file format, one a line or split with parentheses, `;` comments,
//! `$TTL`/`$ORIGIN` lines ignored (owner names must be absolute).
//! Never: file I/O (the caller reads the file).

use super::{algorithm_supported, digest_supported};
use crate::error::Error;
use shardns_wire::text::Token;
use shardns_wire::{rdata, Name, NameRef, RType};

/// The root zone's KSKs (IANA, <https://data.iana.org/root-anchors/root-anchors.xml>):
/// KSK-2017 (20326) and KSK-2024 (38696), as SHA-256 DS records.
const ROOT_ANCHORS: &str = "\
. IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D
. IN DS 38696 8 2 683D2D0ACB8C9B712A1948B27F741219298D0A450D612C483AF444A4C0FB2B16
";

/// Where validation starts, and where it is switched off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustAnchors {
    /// (zone, DS rdata).
    pub ds: Vec<(Name, Vec<u8>)>,
    /// (zone, DNSKEY rdata).
    pub dnskey: Vec<(Name, Vec<u8>)>,
    /// Negative trust anchors: answers at or below these names are not validated.
    pub negative: Vec<Name>,
}

impl TrustAnchors {
    /// The root's KSKs (key tags 20326 and 38696) as DS records.
    pub fn root() -> Self {
        Self::parse(ROOT_ANCHORS).unwrap_or_default()
    }

    /// No anchors: nothing validates as secure (everything is insecure).
    pub fn none() -> Self {
        Self::default()
    }

    /// True if there is no positive anchor.
    pub fn is_empty(&self) -> bool {
        self.ds.is_empty() && self.dnskey.is_empty()
    }

    /// Parses DS and DNSKEY records in zone-file format:
    /// `owner [TTL] [IN] DS|DNSKEY rdata`, absolute owners, `;` comments, records split
    /// over lines with parentheses. At least one record is required.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut out = TrustAnchors::default();
        let mut record = String::new();
        let mut first_line = 0;
        let mut depth = 0usize;
        for (i, raw) in text.lines().enumerate() {
            let line = strip_comment(raw);
            if depth == 0 {
                if line.trim().is_empty() || line.trim_start().starts_with('$') {
                    continue;
                }
                first_line = i + 1;
                record.clear();
            }
            for c in line.chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    _ => record.push(c),
                }
            }
            record.push(' ');
            if depth == 0 {
                out.push_record(&record)
                    .map_err(|message| Error::TrustAnchor {
                        line: first_line,
                        message,
                    })?;
            }
        }
        if depth != 0 {
            return Err(Error::TrustAnchor {
                line: first_line,
                message: "unbalanced parentheses".into(),
            });
        }
        if out.is_empty() {
            return Err(Error::TrustAnchor {
                line: 0,
                message: "no DS or DNSKEY record".into(),
            });
        }
        Ok(out)
    }

    fn push_record(&mut self, record: &str) -> Result<(), String> {
        let fields: Vec<&str> = record.split_whitespace().collect();
        let Some((owner, mut rest)) = fields.split_first() else {
            return Ok(());
        };
        if !owner.ends_with('.') {
            return Err(format!("owner {owner:?} is not absolute"));
        }
        let owner: Name = owner
            .parse()
            .map_err(|e| format!("bad owner {owner:?}: {e}"))?;
        while let Some(f) = rest.first() {
            if f.bytes().all(|b| b.is_ascii_digit()) || f.eq_ignore_ascii_case("IN") {
                rest = &rest[1..];
            } else {
                break;
            }
        }
        let Some((rtype, data)) = rest.split_first() else {
            return Err("expected a type and rdata".into());
        };
        let rtype = RType::from_text(rtype).ok_or_else(|| format!("unknown type {rtype:?}"))?;
        let tokens: Vec<Token<'_>> = data.iter().map(|t| Token::plain(t.as_bytes())).collect();
        let mut rd = Vec::new();
        rdata::from_text(rtype, &tokens, NameRef::ROOT, &mut rd)
            .map_err(|e| format!("bad {rtype} rdata: {e}"))?;
        match rtype {
            RType::DS => self.ds.push((owner, rd)),
            RType::DNSKEY => self.dnskey.push((owner, rd)),
            _ => return Err(format!("{rtype} is not a trust anchor type (DS or DNSKEY)")),
        }
        Ok(())
    }

    /// The closest anchored zone at or above `name`, if any.
    pub(crate) fn closest<'s>(&'s self, name: NameRef<'_>) -> Option<NameRef<'s>> {
        self.ds
            .iter()
            .map(|(n, _)| n)
            .chain(self.dnskey.iter().map(|(n, _)| n))
            .map(Name::as_ref)
            .filter(|z| name.ends_with(z))
            .max_by_key(|z| z.len())
    }

    /// True if some anchor of `zone` can start validation: a DS of an algorithm and digest
    /// we validate, or a DNSKEY of such an algorithm. Without one the zone is insecure, not
    /// bogus (RFC 4035 §5.2, RFC 6840 §5.2).
    pub(crate) fn usable(&self, zone: NameRef<'_>) -> bool {
        self.ds_of(zone)
            .any(|d| d.len() > 4 && algorithm_supported(d[2]) && digest_supported(d[3]))
            || self
                .dnskey_of(zone)
                .any(|k| k.len() > 4 && algorithm_supported(k[3]))
    }

    /// True if `name` is at or below a negative trust anchor.
    pub(crate) fn is_negative(&self, name: NameRef<'_>) -> bool {
        self.negative.iter().any(|n| name.ends_with(&n.as_ref()))
    }

    /// The DS anchors of `zone`.
    pub(crate) fn ds_of<'s>(&'s self, zone: NameRef<'s>) -> impl Iterator<Item = &'s [u8]> + 's {
        self.ds
            .iter()
            .filter(move |(n, _)| n.as_ref().eq_ci(&zone))
            .map(|(_, rd)| &rd[..])
    }

    /// The DNSKEY anchors of `zone`.
    pub(crate) fn dnskey_of<'s>(
        &'s self,
        zone: NameRef<'s>,
    ) -> impl Iterator<Item = &'s [u8]> + 's {
        self.dnskey
            .iter()
            .filter(move |(n, _)| n.as_ref().eq_ci(&zone))
            .map(|(_, rd)| &rd[..])
    }
}

fn strip_comment(line: &str) -> &str {
    // No quoted strings in DS or DNSKEY presentation format: `;` always starts a comment.
    line.split(';').next().unwrap_or("")
}
