//! Authoritative data for shardns: zone-file scanning, immutable zone snapshots and answering.
//!
//! `scan` turns RFC 1035 text into records (all errors reported as `file:line: message`),
//! `db` builds an immutable [`Zone`] that every worker reads without a lock, and `answer`
//! turns a query into the response RFC 1034 §4.3.2, RFC 2308, RFC 4592 and RFC 6672 require.
//! Never: sockets, threads on the query path, locks, clocks, or allocation per query.
#![forbid(unsafe_code)]

pub mod answer;
pub mod db;
pub mod scan;
pub mod xfr;

pub use answer::{refuse, reject, respond, respond_to_message, Reply, Written};
pub use db::{Zone, ZoneSet};
pub use scan::{load_zone_file, load_zone_text, LoadError, ScanOptions};
pub use shardns_wire::Transport;
