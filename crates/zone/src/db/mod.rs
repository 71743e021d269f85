//! The immutable zone snapshot and the set of zones a server answers for.
//!
//! A [`Zone`] is built once per load and then only read, by every worker, without a lock;
//! a reload builds a new one and the server swaps a pointer. Names are found through an
//! open-addressing hash table keyed by the case-insensitive hash of the name, so a lookup
//! costs O(1) per label whatever the zone's size; each node knows its parent, whether it is
//! a delegation point, lies below a zone cut, or has a wildcard child. Every ancestor of
//! every owner down to the apex exists as a node (empty non-terminals included), which is
//! what makes closest-encloser search and RFC 4592 wildcard matching exact.
//!
//! `store` holds the zone's arrays and the lookups on them, `build` turns scanned records
//! into a [`Zone`], `patch` makes a new version from an old one and an IXFR's changes
//! without building it again, `check` makes the checks a zone must pass (or warns), `zoneset` finds the
//! zone for a query name.
//!
//! Sans-I/O: no files, sockets, clocks or locks, and no allocation on the lookup path.
//! Building a zone of 50,000 records or more merges its RRsets on two threads and frees the
//! scanner's records on another (all scoped, joined before [`Zone::build`] returns); nothing
//! else here starts a thread.

mod build;
pub(crate) use build::set_key;
pub use build::SortedRecords;
mod check;
mod check_dnssec;
pub(crate) mod denial;
mod patch;
mod placeholder;
mod store;
mod zoneset;

pub use denial::{nsec3_hash, MAX_NSEC3_ITERATIONS, NSEC3_HASH_LEN};
pub use patch::PatchWork;
pub use store::{NodeRef, RRset, RdataIter, Zone};
pub use zoneset::{BuildWork, ZoneChange, ZoneSet, PREFETCH_MAX, SHARDS};

/// Index of a node in a zone.
pub type NodeId = u32;
const NONE: u32 = u32::MAX;

/// Node flags.
pub(crate) mod flags {
    /// Holds NS records and is not the apex: a zone cut.
    pub(crate) const DELEGATION: u8 = 1;
    /// Some proper ancestor (below the apex) is a zone cut: the data here is glue or occluded.
    pub(crate) const BELOW_CUT: u8 = 2;
    /// `*.<this node>` exists.
    pub(crate) const WILDCARD_CHILD: u8 = 4;
    /// Holds a DNAME record.
    pub(crate) const DNAME: u8 = 8;
    /// Some proper ancestor holds a DNAME: the name is occluded (RFC 6672 §2.4).
    pub(crate) const BELOW_DNAME: u8 = 16;
    /// Holds a CNAME record.
    pub(crate) const CNAME: u8 = 32;
    /// Holds only NSEC3 records (and RRSIGs) and has no descendants: the name does not exist
    /// for lookups (RFC 5155 §7.2.8, erratum 4622).
    pub(crate) const NSEC3_ONLY: u8 = 64;
}

#[cfg(test)]
mod tests;
