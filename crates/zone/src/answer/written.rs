//! answer::written -- what an answer says about the response it wrote: for statistics, rate
//! limiting, logs, and the steps after it (EDNS options appended at the OPT record).

use shardns_wire::{RType, Rcode};

/// What was written into the caller's buffer, for statistics, rate limiting and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Response length in `out`.
    pub len: usize,
    /// Response code (extended).
    pub rcode: Rcode,
    /// The question's type (`None` if there was no readable question).
    pub qtype: Option<RType>,
    /// TC was set.
    pub truncated: bool,
    /// The query name itself was answered from a wildcard (RFC 4592): the number of labels
    /// of the wildcard's closest encloser (`*.<encloser>` has one more). A rate limiter keys
    /// such answers by the wildcard, as BIND's RRL does, so that random names under it
    /// share one bucket. `None` otherwise, and for names reached through a CNAME.
    pub wildcard: Option<u8>,
    /// Where the response's OPT record starts, when it is the last record: where EDNS
    /// options are appended, without reading the response again.
    pub opt: OptAt,
}

/// Where a response's OPT record is, as its writer knows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OptAt {
    /// The writer does not say (a transfer's reply, say): [`OptAt::find`] reads the
    /// response.
    #[default]
    Unknown,
    /// No OPT record is the last record (none was written, or a TSIG follows it).
    Absent,
    /// The OPT record, the last record, starts at this offset.
    At(u16),
}

impl OptAt {
    /// The offset of the OPT record ending `response` (our OPT has the root name, so the
    /// offset is of its owner's one octet), read from `response` only if the writer did
    /// not say.
    #[inline]
    pub fn find(self, response: &[u8]) -> Option<usize> {
        match self {
            Self::At(at) => Some(usize::from(at)),
            Self::Absent => None,
            Self::Unknown => shardns_wire::edns::opt_at_end(response),
        }
    }
}
