//! The query list: dnsperf's data-file format, pre-encoded once into wire form.
//!
//! Each line is `name [type]` (type defaults to A); `#` starts a comment, blank lines are
//! skipped. Every query is encoded once, with ID 0, into one contiguous buffer; a sender
//! copies the query next to its two ID bytes into its batch buffer, so sending never allocates.

use crate::Error;
use shardns_wire::{Class, Header, MessageWriter, Name, NameRef, RType};
use std::path::Path;

/// Options for encoding the queries.
#[derive(Clone, Copy, Debug)]
pub struct QueryOptions {
    /// Set the RD (recursion desired) bit, as dnsperf does by default.
    pub recursion_desired: bool,
    /// Add an OPT record advertising this UDP payload size (EDNS0).
    pub edns_udp_size: Option<u16>,
}

impl Default for QueryOptions {
    fn default() -> Self {
        Self {
            recursion_desired: true,
            edns_udp_size: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Span {
    start: u32,
    len: u16,
    /// Length of the question section (qname, qtype, qclass).
    question_len: u16,
}

/// Pre-encoded queries, in file order.
#[derive(Clone, Debug)]
pub struct QueryList {
    wire: Vec<u8>,
    spans: Vec<Span>,
}

impl QueryList {
    /// Reads and encodes a dnsperf-style query file.
    pub fn from_file(path: &Path, opts: QueryOptions) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            what: path.display().to_string(),
            error: e,
        })?;
        Self::parse(&text, opts).map_err(|e| match e {
            Error::QueryFile { line, msg, .. } => Error::QueryFile {
                path: path.display().to_string(),
                line,
                msg,
            },
            other => other,
        })
    }

    /// Parses and encodes query-file text (`name [type]` per line).
    pub fn parse(text: &str, opts: QueryOptions) -> Result<Self, Error> {
        let mut list = Self {
            wire: Vec::new(),
            spans: Vec::new(),
        };
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |msg: String| Error::QueryFile {
                path: "<queries>".into(),
                line: i + 1,
                msg,
            };
            let mut fields = line.split_whitespace();
            let name_text = fields.next().unwrap_or("");
            let type_text = fields.next().unwrap_or("A");
            if fields.next().is_some() {
                return Err(bad(format!("expected `name [type]`, got {line:?}")));
            }
            let name = Name::from_text(name_text, Some(NameRef::ROOT))
                .map_err(|e| bad(format!("bad name {name_text:?}: {e}")))?;
            let rtype = RType::from_text(type_text)
                .ok_or_else(|| bad(format!("unknown type {type_text:?}")))?;
            list.push(name.as_ref(), rtype, opts);
        }
        if list.spans.is_empty() {
            return Err(Error::Config("the query list is empty".into()));
        }
        Ok(list)
    }

    /// Builds a list from (name, type) pairs; names are absolute or relative to the root.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, RType)>,
        opts: QueryOptions,
    ) -> Result<Self, Error> {
        let mut text = String::new();
        for (name, rtype) in pairs {
            text.push_str(name);
            text.push(' ');
            text.push_str(&rtype.to_string());
            text.push('\n');
        }
        Self::parse(&text, opts)
    }

    fn push(&mut self, qname: NameRef<'_>, rtype: RType, opts: QueryOptions) {
        let mut buf = [0u8; 512];
        let mut w = MessageWriter::new(&mut buf, 512);
        // A name is at most 255 octets, so the question and an OPT always fit in 512.
        let _ = w.put_question(qname, rtype, Class::IN);
        let question_len = w.len() - 12;
        if let Some(size) = opts.edns_udp_size {
            let _ = w.put_opt(size, 0, 0, false, &[]);
        }
        let mut h = Header::default();
        h.set_rd(opts.recursion_desired);
        let msg = w.finish(&h);
        self.spans.push(Span {
            start: self.wire.len() as u32,
            len: msg.len() as u16,
            question_len: question_len as u16,
        });
        self.wire.extend_from_slice(msg);
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True if there are no queries (never, for a parsed list).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The whole query `i` in wire form, with ID 0.
    pub fn wire(&self, i: usize) -> &[u8] {
        let s = self.spans[i];
        &self.wire[s.start as usize..s.start as usize + s.len as usize]
    }

    /// Query `i` without its two ID bytes (what follows the ID on the wire).
    pub(crate) fn body(&self, i: usize) -> &[u8] {
        &self.wire(i)[2..]
    }

    /// The question section of query `i` (qname, qtype, qclass).
    pub(crate) fn question(&self, i: usize) -> &[u8] {
        let s = self.spans[i];
        let start = s.start as usize + 12;
        &self.wire[start..start + s.question_len as usize]
    }

    /// True if `response` carries query `i`'s question (names compared ignoring case), or
    /// carries no question at all (some servers drop it from error answers).
    pub(crate) fn matches(&self, i: usize, response: &[u8]) -> bool {
        if response.len() < 12 {
            return false;
        }
        let qdcount = u16::from_be_bytes([response[4], response[5]]);
        if qdcount == 0 {
            return true;
        }
        let q = self.question(i);
        match response.get(12..12 + q.len()) {
            Some(r) => shardns_wire::name::eq_ci(r, q),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardns_wire::Message;

    #[test]
    fn parses_dnsperf_format() {
        let text =
            "# comment\n\nhost0001.bench.test A\nwww.example.com. AAAA # trailing\n  example.org\n";
        let q = QueryList::parse(text, QueryOptions::default()).unwrap();
        assert_eq!(q.len(), 3);
        let m = Message::parse(q.wire(1)).unwrap();
        assert_eq!(m.questions[0].qname.to_string(), "www.example.com.");
        assert_eq!(m.questions[0].qtype, RType::AAAA);
        assert!(m.header.rd());
        assert_eq!(
            Message::parse(q.wire(2)).unwrap().questions[0].qtype,
            RType::A
        );
        assert_eq!(&q.wire(0)[2..], q.body(0));
        assert!(q.matches(0, q.wire(0)));
        assert!(!q.matches(0, q.wire(1)));
    }

    #[test]
    fn reports_line_of_bad_input() {
        let e = QueryList::parse("a.test A\nb.test BOGUS\n", QueryOptions::default()).unwrap_err();
        assert!(e.to_string().contains(":2:"), "{e}");
        assert!(QueryList::parse("# nothing\n", QueryOptions::default()).is_err());
    }

    #[test]
    fn edns_adds_opt() {
        let opts = QueryOptions {
            recursion_desired: false,
            edns_udp_size: Some(1232),
        };
        let q = QueryList::parse("a.test A", opts).unwrap();
        let m = Message::parse(q.wire(0)).unwrap();
        assert_eq!(m.opt().unwrap().class.0, 1232);
        assert!(!m.header.rd());
    }
}
