//! Authoritative data for shardns: zone-file scanning, immutable zone snapshots, answering
//! and outgoing zone transfers.
//!
//! - [`scan`] turns zone files (RFC 1035 §5) into records, every error reported as
//!   `file:line: message`. It is the one module that does I/O: it reads the zone file and
//!   any `$INCLUDE`d file, and reads and scans a big file on several threads.
//! - [`db`] builds an immutable [`Zone`] from those records, with the checks a zone must pass
//!   (errors) or should (warnings); every worker then reads it without a lock. Sans-I/O;
//!   building a zone of 50,000 records or more merges its RRsets on two threads.
//! - [`load`] reads a zone file (or text) into a checked [`Zone`] in one call: `scan`,
//!   then `db`.
//! - [`answer`] turns a query into the response RFC 1034 §4.3.2, RFC 2308, RFC 4592 and
//!   RFC 6672 require. Sans-I/O, no threads, no allocation.
//! - [`xfr`] writes outgoing AXFR/IXFR responses and NOTIFY messages. Sans-I/O, no threads.
//! - [`update`] reads an RFC 2136 UPDATE against a zone into the change to make (or the
//!   rcode to answer), and signs a signed zone's change ([`update::sign`]: the changed
//!   RRsets' RRSIGs, the NSEC or NSEC3 chain patched). Sans-I/O, no threads, no clock.
//!
//! Never, anywhere in the crate: sockets, locks, clocks or `unsafe`. Every thread is scoped
//! and joined before the call that started it returns.
#![forbid(unsafe_code)]

pub mod answer;
pub mod catalog;
pub mod db;
pub mod load;
pub mod scan;
pub mod update;
pub mod xfr;

pub use answer::{
    not_implemented, notify_answer, refuse, reject, respond, respond_to_message, OptAt, Reply,
    Written,
};
pub use db::{Zone, ZoneChange, ZoneSet};
pub use load::{load_zone_file, load_zone_text};
pub use scan::{LoadError, ScanOptions};
pub use shardns_wire::Transport;
