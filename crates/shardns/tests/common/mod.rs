//! Helpers for the end-to-end tests: start the real `shardns` binary on loopback with ports
//! of its own, kill it on drop (also when a test fails), send raw queries over UDP and TCP
//! (also from a chosen 127.0.0.x address), and parse responses with hickory-proto, a parser
//! that is not ours.
//!
//! Never: any address outside loopback (127.0.0.0/8, ::1), unbounded waits, or processes
//! left running.
//!
//! Each concern has a module of its own, all re-exported here (tests use `common::*` or
//! `common::Server`): `server` (the `shardns` binary under test), `daemon` (peer servers such
//! as knotd, and finding their programs), `knot` (knotd as the reference server), `primaries` (knotd, nsd and named as primaries of a
//! shardns secondary, with TSIG), `rpz_peers` (Unbound and named as the RPZ tests' reference resolvers), `rpz_lab` (knotd serving a policy zone to a resolver shardns), `parent_lab` (knotd as a signed parent of a shardns child, or of a knotd child to compare with, for the rollover tests), `ports`
//! (free loopback ports), `certs` (self-signed test certificates), `temp_dir` (scratch directories), `net` (UDP and TCP exchanges),
//! `dns` (building queries, parsing responses), `dig` (running `dig` and `kdig`), and the
//! outside judges of signed zones: `judges` (the AXFR, ldns-verify-zone, dnssec-verify), `dnsviz`
//! and `unbound` (a validating Unbound).
#![allow(dead_code, unreachable_pub)]

mod certs;
mod daemon;
mod dig;
mod dns;
mod dnsviz;
mod judges;
mod knot;
mod net;
mod parent_lab;
mod ports;
mod primaries;
mod rpz_lab;
mod rpz_peers;
mod server;
mod temp_dir;
mod unbound;

// One item, so that one attribute covers it: a test binary need not use every module.
#[allow(unused_imports)]
pub use self::{
    certs::*, daemon::*, dig::*, dns::*, dnsviz::*, judges::*, knot::*, net::*, parent_lab::*,
    ports::*, primaries::*, rpz_lab::*, rpz_peers::*, server::*, temp_dir::*, unbound::*,
};
