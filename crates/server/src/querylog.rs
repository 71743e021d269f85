//! querylog -- the query log's line (`log_queries`: one info line per answer, formatted
//! without allocating) and the names it shows: a question's name, parsed or kept by the
//! resolver ([`QName`]), and `-` for what is missing ([`OrDash`]).

use crate::origin::Origin;
use crate::stats::WorkerStats;
use shardns_wire::{Name, Query};
use shardns_zone::Written;
use std::fmt;
use tracing::info;

/// A question's name: of a parsed query, or kept by the resolver for a later answer.
#[derive(Clone, Copy)]
pub(crate) enum QName<'a> {
    Parsed(&'a Query<'a>),
    Kept(&'a Name),
}

impl<'a> QName<'a> {
    /// The name in wire form.
    pub(crate) fn wire(self) -> &'a [u8] {
        match self {
            Self::Parsed(q) => q.qname().as_wire(),
            Self::Kept(n) => n.as_wire(),
        }
    }
}

impl fmt::Display for QName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Parsed(q) => q.qname().fmt(f),
            Self::Kept(n) => n.fmt(f),
        }
    }
}

/// One info line per query (only when query logging is on), formatted without allocating.
/// Writing it takes stderr's lock, which is counted.
#[cold]
pub(crate) fn log_query(
    origin: Origin,
    qname: Option<QName<'_>>,
    w: &Written,
    stats: &WorkerStats,
) {
    if !tracing::enabled!(target: "shardns::query", tracing::Level::INFO) {
        return;
    }
    stats.request_locks.add(1);
    info!(
        target: "shardns::query",
        "{} {} {} {} {} len={}{}",
        OrDash(origin.peer),
        origin.name(),
        OrDash(qname),
        OrDash(w.qtype),
        w.rcode,
        w.len,
        if w.truncated { " TC" } else { "" }
    );
}

/// Shows a value, or `-` for none.
pub(crate) struct OrDash<T>(pub(crate) Option<T>);

impl<T: fmt::Display> fmt::Display for OrDash<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}
